//! Prints the display-safety table the UI applies (`ui/src/display-table.ts`),
//! generated from the same Unicode data as `parley_custody_client::display`.
#![forbid(unsafe_code)]

fn main() {
    print!("{}", parley_custody_client::display::ui_table());
}

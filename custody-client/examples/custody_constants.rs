//! Prints the constants the UI shares with custody (`ui/src/custody-constants.ts`),
//! generated from `parley_custody_client::ui_constants`.
#![forbid(unsafe_code)]

fn main() {
    print!("{}", parley_custody_client::ui_constants::ui_constants());
}

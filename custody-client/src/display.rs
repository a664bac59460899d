//! Making untrusted text safe to show a human: the one rule for every path
//! (review window, terminal prompt, notifications, tray labels, window
//! titles, `parley inspect`/`audit`, logs).
//!
//! Services and agents write summaries, targets and details. Before any of it
//! reaches a screen, every character that can hide, reorder or redraw text is
//! replaced by a visible escape `\u{hex}`. Which characters those are comes
//! from Unicode's own data (ICU4X's compiled `icu_properties`), not from a
//! list kept by hand:
//!
//! - general category Cc (C0, DEL, C1 incl. U+009B CSI), Cf (format: bidi
//!   marks, zero-width, soft hyphen, U+FEFF, tags…), Zl and Zp (U+2028,
//!   U+2029), Co (private use: a font may draw anything there), Cn
//!   (unassigned and noncharacters: what a later Unicode or a font makes of
//!   them is unknown), Cs (surrogates; only reachable from JavaScript);
//! - Default_Ignorable_Code_Point (variation selectors, Hangul fillers,
//!   combining grapheme joiner, Mongolian selectors, the tag block…);
//! - Bidi_Control (U+061C, U+200E/F, U+202A–202E, U+2066–2069).
//!
//! Two exceptions keep emoji readable, because they hide nothing: an emoji
//! presentation selector (U+FE0E or U+FE0F) directly after a character with
//! the Emoji property (it switches that one visible character between text and
//! emoji style, one per character, so no payload can ride on it), and a zero
//! width joiner (U+200D) between two pictographic emoji (it joins visible
//! emoji into one glyph such as 👩‍💻, or leaves them side by side; every part
//! is a visible emoji either way). Any other selector or joiner is escaped;
//! tag characters (as in subdivision flags) are always escaped, because they
//! spell invisible ASCII. Beyond [`MAX_MARKS`] combining marks on one base
//! character, further marks are escaped too: a tall stack would paint over
//! neighbouring lines.
//!
//! `"pay \u{202e}ereh"` is shown as `pay \u{202e}ereh` literally, so the
//! human sees that something is off instead of a reversed word. A service that types such an escape
//! itself only makes its text look suspicious; it cannot hide anything.
//!
//! Very long fields are cut with a visible note ([`safe`]); log lines quote
//! untrusted text through [`for_log`], which cuts much shorter and says the
//! original size, so a 900 KB field is never printed whole anywhere.
//!
//! The UI (`ui/src/dom.ts`) applies the same rule from a table generated
//! here ([`ui_table`]); `conformance/display-safety.json` holds the vectors
//! both sides are tested against.

use icu_properties::props::{
    BidiControl, DefaultIgnorableCodePoint, Emoji, EmojiModifier, ExtendedPictographic,
    GeneralCategory,
};
use icu_properties::{CodePointMapData, CodePointSetData};
use std::fmt::Write as _;

/// The most characters of one field shown; the rest is summarized.
pub const MAX_FIELD_CHARS: usize = 4096;

/// The most combining marks (general category Mn or Me) kept on one base
/// character; the rest are escaped, so a tower of marks ("Zalgo") cannot be
/// drawn over the lines above and below it (a cost, a prompt). Four allows
/// every ordinary stack (Vietnamese has two, pointed Hebrew and Tibetan
/// stacks up to four).
pub const MAX_MARKS: usize = 4;

/// The most visible characters of one untrusted field quoted in a log line.
pub const LOG_FIELD_CHARS: usize = 160;

const ZWJ: char = '\u{200d}';

/// Whether `c` is hidden by itself: shown as an escape wherever it stands,
/// except for the two emoji cases in the module docs.
pub fn is_hidden(c: char) -> bool {
    let gc = CodePointMapData::<GeneralCategory>::new().get(c);
    matches!(
        gc,
        GeneralCategory::Control
            | GeneralCategory::Format
            | GeneralCategory::LineSeparator
            | GeneralCategory::ParagraphSeparator
            | GeneralCategory::PrivateUse
            | GeneralCategory::Unassigned
            | GeneralCategory::Surrogate
    ) || CodePointSetData::new::<DefaultIgnorableCodePoint>().contains(c)
        || CodePointSetData::new::<BidiControl>().contains(c)
}

fn is_mark(c: char) -> bool {
    matches!(
        CodePointMapData::<GeneralCategory>::new().get(c),
        GeneralCategory::NonspacingMark | GeneralCategory::EnclosingMark
    )
}

fn is_emoji(c: char) -> bool {
    CodePointSetData::new::<Emoji>().contains(c)
}

fn is_pictographic(c: char) -> bool {
    CodePointSetData::new::<ExtendedPictographic>().contains(c)
}

fn is_emoji_modifier(c: char) -> bool {
    CodePointSetData::new::<EmojiModifier>().contains(c)
}

/// One character of the input as shown: itself, or its escape.
enum Shown {
    Plain(char),
    Escaped(u32),
}

impl Shown {
    fn width(&self) -> usize {
        match self {
            Shown::Plain(_) => 1,
            // `\u{` + hex digits + `}`
            Shown::Escaped(v) => 4 + hex_digits(*v),
        }
    }
    fn push_to(&self, out: &mut String) {
        match self {
            Shown::Plain(c) => out.push(*c),
            Shown::Escaped(v) => {
                let _ = write!(out, "\\u{{{v:x}}}");
            }
        }
    }
}

fn hex_digits(v: u32) -> usize {
    (((32 - v.leading_zeros()) as usize).div_ceil(4)).max(1)
}

/// The rule, applied in order: calls `f` with each input character as shown
/// until `f` returns false.
fn each_shown(s: &str, mut f: impl FnMut(Shown) -> bool) {
    let mut chars = s.chars().peekable();
    // The last character kept as itself (None after an escape), and whether
    // it was a presentation selector kept after an emoji.
    let mut prev: Option<char> = None;
    // The pictographic emoji a kept selector or modifier belongs to.
    let mut prev_pictographic = false;
    // Combining marks kept on the current base character.
    let mut marks = 0usize;
    while let Some(c) = chars.next() {
        let mark = is_mark(c);
        let keep = if mark && marks >= MAX_MARKS {
            false
        } else if !is_hidden(c) {
            true
        } else if c == '\u{fe0e}' || c == '\u{fe0f}' {
            matches!(prev, Some(p) if is_emoji(p) && p != '\u{fe0e}' && p != '\u{fe0f}')
        } else if c == ZWJ {
            let after = prev.is_some_and(|p| {
                is_pictographic(p)
                    || ((p == '\u{fe0f}' || is_emoji_modifier(p)) && prev_pictographic)
            });
            after && chars.peek().is_some_and(|&n| is_pictographic(n))
        } else {
            false
        };
        if !mark {
            marks = 0;
        } else if keep {
            marks += 1;
        }
        let shown = if keep {
            if is_pictographic(c) {
                prev_pictographic = true;
            } else if c != '\u{fe0f}' && !is_emoji_modifier(c) {
                prev_pictographic = false;
            }
            prev = Some(c);
            Shown::Plain(c)
        } else {
            prev = None;
            prev_pictographic = false;
            Shown::Escaped(c as u32)
        };
        if !f(shown) {
            return;
        }
    }
}

/// Untrusted text made safe to display (see the module docs). At most
/// [`MAX_FIELD_CHARS`] input characters are shown; a note says how many more
/// there were.
pub fn safe(s: &str) -> String {
    let mut out = String::with_capacity(s.len().min(MAX_FIELD_CHARS * 4) + 16);
    let mut taken = 0usize;
    each_shown(s, |c| {
        if taken == MAX_FIELD_CHARS {
            return false;
        }
        taken += 1;
        c.push_to(&mut out);
        true
    });
    if taken == MAX_FIELD_CHARS {
        let rest = s.chars().count() - taken;
        if rest > 0 {
            let _ = write!(out, "… ({rest} more characters not shown)");
        }
    }
    out
}

/// Untrusted text made safe and cut to at most `max` visible characters
/// (escapes count at their shown length). When cut, `…(N bytes)` follows,
/// N being the original field's size in UTF-8 bytes, so a reader knows how
/// much was there without it being printed.
pub fn bounded(s: &str, max: usize) -> String {
    let mut out = String::new();
    let mut width = 0usize;
    let mut cut = false;
    each_shown(s, |c| {
        let w = c.width();
        if width + w > max {
            cut = true;
            return false;
        }
        width += w;
        c.push_to(&mut out);
        true
    });
    if cut {
        let _ = write!(out, "…({} bytes)", s.len());
    }
    out
}

/// Untrusted text as quoted in a log line: [`bounded`] to [`LOG_FIELD_CHARS`].
pub fn for_log(s: &str) -> String {
    bounded(s, LOG_FIELD_CHARS)
}

/// A tray or context-menu label: [`safe`], with `&` doubled because menus
/// (muda, GTK, Windows) read a single `&` as a mnemonic marker and hide it.
pub fn menu_label(s: &str) -> String {
    safe(s).replace('&', "&&")
}

/// Whether `s` shows no hidden character under this rule: true for every
/// output of [`safe`] and [`bounded`].
pub fn is_display_safe(s: &str) -> bool {
    let mut ok = true;
    each_shown(s, |c| {
        ok = matches!(c, Shown::Plain(_));
        ok
    });
    ok
}

/// Whether `s` has characters outside printable ASCII: worth a warning on
/// identifiers such as service ids, where look-alike letters deceive.
pub fn has_non_ascii(s: &str) -> bool {
    !s.bytes().all(|b| (0x20..0x7f).contains(&b))
}

/// Ranges `[start, end]` (inclusive) of the code points for which `pred` holds.
fn ranges(pred: impl Fn(u32) -> bool) -> Vec<(u32, u32)> {
    let mut out: Vec<(u32, u32)> = Vec::new();
    for v in 0..=0x10ffffu32 {
        let hit = match char::from_u32(v) {
            Some(c) => pred(c as u32),
            // Surrogates: not chars in Rust; hidden (category Cs).
            None => pred(v),
        };
        if hit {
            match out.last_mut() {
                Some((_, end)) if *end + 1 == v => *end = v,
                _ => out.push((v, v)),
            }
        }
    }
    out
}

fn is_hidden_u32(v: u32) -> bool {
    match char::from_u32(v) {
        Some(c) => is_hidden(c),
        None => true,
    }
}

fn with_char(v: u32, f: fn(char) -> bool) -> bool {
    char::from_u32(v).is_some_and(f)
}

/// The TypeScript table `ui/src/display-table.ts` that `ui/src/dom.ts`
/// applies the same rule from, generated from the same Unicode data (run
/// `cargo run -p parley-custody-client --example display_table > ui/src/display-table.ts`;
/// a unit test fails while the file in the tree differs).
pub fn ui_table() -> String {
    fn table(out: &mut String, name: &str, doc: &str, r: &[(u32, u32)]) {
        let _ = writeln!(out, "/** {doc} */");
        let _ = writeln!(out, "export const {name}: readonly number[] = [");
        for chunk in r.chunks(8) {
            let line: Vec<String> = chunk
                .iter()
                .map(|(a, b)| format!("0x{a:x}, 0x{b:x}"))
                .collect();
            let _ = writeln!(out, "  {},", line.join(", "));
        }
        let _ = writeln!(out, "]\n");
    }
    let mut out = String::new();
    out.push_str(
        "// Generated from Unicode's data by custody-client/src/display.rs (`ui_table`): do not edit.\n\
         // Regenerate: cargo run -p parley-custody-client --example display_table > ui/src/display-table.ts\n\
         // Each table is a sorted list of inclusive ranges: start, end, start, end, …\n\n",
    );
    let _ = writeln!(
        out,
        "/** The most combining marks kept on one base character. */\nexport const MAX_MARKS = {MAX_MARKS}\n"
    );
    table(
        &mut out,
        "HIDDEN",
        "Cc, Cf, Zl, Zp, Co, Cn, Cs, Default_Ignorable_Code_Point, Bidi_Control.",
        &ranges(is_hidden_u32),
    );
    table(
        &mut out,
        "MARK",
        "Mn and Me (combining marks; at most MAX_MARKS on one base are kept).",
        &ranges(|v| with_char(v, is_mark)),
    );
    table(
        &mut out,
        "EMOJI",
        "Emoji (a presentation selector may follow one).",
        &ranges(|v| with_char(v, is_emoji)),
    );
    table(
        &mut out,
        "PICTOGRAPHIC",
        "Extended_Pictographic (a zero width joiner may stand between two).",
        &ranges(|v| with_char(v, is_pictographic)),
    );
    table(
        &mut out,
        "EMOJI_MODIFIER",
        "Emoji_Modifier (skin tones; a joiner may follow one after a pictograph).",
        &ranges(|v| with_char(v, is_emoji_modifier)),
    );
    out.truncate(out.trim_end().len());
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn bidi_zero_width_and_controls_become_visible() {
        assert_eq!(safe("pay \u{202E}ereh"), "pay \\u{202e}ereh");
        assert_eq!(safe("a\u{200B}b\u{FEFF}c"), "a\\u{200b}b\\u{feff}c");
        assert_eq!(safe("x\u{0}y\u{1b}[31m"), "x\\u{0}y\\u{1b}[31m");
        assert_eq!(safe("line\nbreak\u{2028}"), "line\\u{a}break\\u{2028}");
        assert_eq!(safe("\u{2066}iso\u{2069}"), "\\u{2066}iso\\u{2069}");
        assert_eq!(safe("tag\u{E0041}"), "tag\\u{e0041}");
        assert_eq!(safe("csi\u{9b}2J"), "csi\\u{9b}2J");
    }

    #[test]
    fn lens_lines_pass_through_unchanged() {
        let line = parley_core::lens::effect_line(&serde_json::json!(
            {"op": "send", "target": "a\u{202e}b", "detail": "x\u{200b}y"}));
        assert_eq!(safe(&line), "> send a\\u{202e}b — x\\u{200b}y");
    }

    #[test]
    fn ordinary_text_and_html_are_unchanged() {
        assert_eq!(
            safe("café — 東京 <b>&amp;</b> 🎉"),
            "café — 東京 <b>&amp;</b> 🎉"
        );
    }

    #[test]
    fn emoji_selectors_and_joiners_stay_only_where_they_hide_nothing() {
        assert_eq!(safe("⚠\u{fe0f} ok"), "⚠\u{fe0f} ok");
        assert_eq!(safe("👩\u{200d}💻"), "👩\u{200d}💻");
        assert_eq!(safe("👩🏽\u{200d}💻"), "👩🏽\u{200d}💻");
        // A selector after a letter, a second selector, a joiner between letters: escaped.
        assert_eq!(safe("a\u{fe0f}"), "a\\u{fe0f}");
        assert_eq!(safe("⚠\u{fe0f}\u{fe0f}"), "⚠\u{fe0f}\\u{fe0f}");
        assert_eq!(safe("a\u{200d}b"), "a\\u{200d}b");
        assert_eq!(safe("👩\u{200d}"), "👩\\u{200d}");
        assert_eq!(safe("x\u{fe01}"), "x\\u{fe01}");
    }

    #[test]
    fn a_tower_of_combining_marks_is_cut_to_four() {
        assert_eq!(
            safe("a\u{301}\u{302}\u{303}\u{304}"),
            "a\u{301}\u{302}\u{303}\u{304}"
        );
        assert_eq!(
            safe("a\u{301}\u{302}\u{303}\u{304}\u{305}\u{306}b\u{301}"),
            "a\u{301}\u{302}\u{303}\u{304}\\u{305}\\u{306}b\u{301}"
        );
    }

    #[test]
    fn long_fields_are_cut_visibly() {
        let s = "x".repeat(10_000);
        let out = safe(&s);
        assert!(out.ends_with(&format!(
            "… ({} more characters not shown)",
            10_000 - MAX_FIELD_CHARS
        )));
        assert!(out.chars().count() < MAX_FIELD_CHARS + 50);
        assert_eq!(
            safe(&"y".repeat(MAX_FIELD_CHARS)),
            "y".repeat(MAX_FIELD_CHARS)
        );
    }

    #[test]
    fn a_900_kb_field_is_quoted_in_a_log_line_by_its_size() {
        let s = format!("\r\u{1b}[2K{}", "a".repeat(900_401));
        let out = for_log(&s);
        assert!(out.ends_with("…(900406 bytes)"), "{out}");
        assert!(out.chars().count() <= LOG_FIELD_CHARS + 20);
        assert!(out.starts_with("\\u{d}\\u{1b}[2K"));
        assert!(is_display_safe(&out));
    }

    #[test]
    fn menu_labels_keep_their_ampersands() {
        assert_eq!(menu_label("Tom & Jerry\u{202e}"), "Tom && Jerry\\u{202e}");
    }

    #[test]
    fn look_alikes_are_flagged() {
        assert!(has_non_ascii("shop.exаmple")); // Cyrillic а
        assert!(!has_non_ascii("shop.example"));
    }

    /// A vector's input: `input`, then `then_repeat: [text, n]` appended n times.
    fn input(case: &Value) -> String {
        let mut s = case["input"].as_str().expect("input").to_string();
        if let Some(r) = case.get("then_repeat") {
            let text = r[0].as_str().expect("then_repeat text");
            s.push_str(&text.repeat(r[1].as_u64().expect("then_repeat n") as usize));
        }
        s
    }

    fn vectors() -> Value {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../conformance/display-safety.json"
        );
        let text = std::fs::read_to_string(path).expect("conformance/display-safety.json");
        serde_json::from_str(&text).expect("display-safety.json is JSON")
    }

    #[test]
    fn conformance_vectors_pass() {
        let v = vectors();
        let mut n = 0;
        for case in v["safe"].as_array().expect("safe: a list") {
            let input = input(case);
            let want = case["expected"].as_str().expect("expected");
            assert_eq!(safe(&input), want, "vector {}", case["name"]);
            assert!(is_display_safe(want), "vector {}", case["name"]);
            n += 1;
        }
        for case in v["bounded"].as_array().expect("bounded: a list") {
            let input = input(case);
            let max = case["max"].as_u64().expect("max") as usize;
            let want = case["expected"].as_str().expect("expected");
            assert_eq!(bounded(&input, max), want, "vector {}", case["name"]);
            n += 1;
        }
        assert!(n >= 30, "only {n} vectors");
    }

    #[test]
    fn the_ui_table_is_generated_from_this_rule_and_current() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../ui/src/display-table.ts");
        let file = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            file == ui_table(),
            "ui/src/display-table.ts is stale or missing: regenerate it with \
             `cargo run -p parley-custody-client --example display_table > ui/src/display-table.ts`"
        );
    }

    #[test]
    fn the_rule_covers_the_whole_of_every_named_class() {
        for v in [
            0x0, 0x1f, 0x7f, 0x80, 0x9b, 0x9f, 0xad, 0x34f, 0x61c, 0x115f, 0x1160,
        ]
        .into_iter()
        .chain([
            0x180b, 0x180e, 0x200b, 0x200f, 0x2028, 0x2029, 0x202a, 0x202e,
        ])
        .chain([
            0x2060, 0x2066, 0x2069, 0x3164, 0xfe00, 0xfeff, 0xffa0, 0xfff9,
        ])
        .chain([
            0xe0000, 0xe0001, 0xe0020, 0xe007f, 0xe0100, 0xe01ef, 0xe0fff,
        ])
        .chain([0xe000, 0xf8ff, 0xf0000, 0x10fffd, 0xfffe, 0xffff, 0x10ffff])
        {
            let c = char::from_u32(v).unwrap();
            assert!(is_hidden(c), "U+{v:04X} must be hidden");
        }
        for c in ['a', ' ', 'é', '東', '🎉', '—', '•', '\u{301}', '₩'] {
            assert!(!is_hidden(c), "{c:?} is ordinary");
        }
    }
}

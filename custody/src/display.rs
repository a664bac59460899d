//! Making untrusted text safe to show a human.
//!
//! Services and agents write summaries, targets and details. Before any of it
//! reaches a screen, characters that can hide or reorder text are replaced
//! by visible escapes: control characters, bidi overrides and isolates,
//! zero-width and other invisible formatting characters, line separators.
//! `"pay \u{202e}ereh"` is shown as `pay \u{202e}ereh` literally, so the
//! human sees that something is off instead of a reversed word. The escape
//! form is the one Lens uses (`parley_core::lens::printable`), so a Lens line
//! passed through here reads the same. A service that types such an escape
//! itself only makes its text look suspicious; it cannot hide anything. Very
//! long fields are cut with a visible note of how much was cut.

use std::fmt::Write as _;

/// The most characters of one field shown; the rest is summarized.
pub const MAX_FIELD_CHARS: usize = 4096;

/// Whether `c` must be shown as an escape.
pub fn is_hidden(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        | '\u{ad}' | '\u{34f}' | '\u{61c}' | '\u{115f}' | '\u{1160}' | '\u{17b4}' | '\u{17b5}'
        | '\u{180b}'..='\u{180f}'
        | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{206f}'
        | '\u{3164}' | '\u{fe00}'..='\u{fe0f}' | '\u{feff}' | '\u{ffa0}' | '\u{fff9}'..='\u{fffb}'
        | '\u{1d173}'..='\u{1d17a}' | '\u{e0000}'..='\u{e0fff}')
}

/// Untrusted text made safe to display (see the module docs).
pub fn safe(s: &str) -> String {
    let mut out = String::with_capacity(s.len().min(MAX_FIELD_CHARS * 4) + 16);
    for (shown, c) in s.chars().enumerate() {
        if shown >= MAX_FIELD_CHARS {
            let rest = s.chars().count() - shown;
            let _ = write!(out, "… ({rest} more characters not shown)");
            return out;
        }
        if is_hidden(c) {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether `s` has characters outside printable ASCII: worth a warning on
/// identifiers such as service ids, where look-alike letters deceive.
pub fn has_non_ascii(s: &str) -> bool {
    !s.bytes().all(|b| (0x20..0x7f).contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bidi_zero_width_and_controls_become_visible() {
        assert_eq!(safe("pay \u{202E}ereh"), "pay \\u{202e}ereh");
        assert_eq!(safe("a\u{200B}b\u{FEFF}c"), "a\\u{200b}b\\u{feff}c");
        assert_eq!(safe("x\u{0}y\u{1b}[31m"), "x\\u{0}y\\u{1b}[31m");
        assert_eq!(safe("line\nbreak\u{2028}"), "line\\u{a}break\\u{2028}");
        assert_eq!(safe("\u{2066}iso\u{2069}"), "\\u{2066}iso\\u{2069}");
        assert_eq!(safe("tag\u{E0041}"), "tag\\u{e0041}");
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
    fn long_fields_are_cut_visibly() {
        let s = "x".repeat(10_000);
        let out = safe(&s);
        assert!(out.ends_with(&format!(
            "… ({} more characters not shown)",
            10_000 - MAX_FIELD_CHARS
        )));
        assert!(out.chars().count() < MAX_FIELD_CHARS + 50);
    }

    #[test]
    fn look_alikes_are_flagged() {
        assert!(has_non_ascii("shop.exаmple")); // Cyrillic а
        assert!(!has_non_ascii("shop.example"));
    }
}

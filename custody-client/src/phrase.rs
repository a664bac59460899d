//! The confirmation phrase of a YEA job approval (SPEC-approval §3): what a
//! person must type to approve a plan, which phrases can be typed at all,
//! and when what was typed matches.
//!
//! Why here and not in `parley-core`: "typeable" is the display-safety rule
//! ([`crate::display`]) and matching needs NFC, both Unicode data this crate
//! already carries; the CLI, custody and the playground's job server all
//! link this crate.
//!
//! The rules, as upstream's:
//! - **Typeable**: the phrase as the tool names it shows no hidden character
//!   (control, format, line/paragraph separator, invisible filler: the
//!   display rule), and once the edge set below is stripped, its only inner
//!   whitespace is plain spaces (a tab, U+00A0, U+2003 or any other `Zs`
//!   inside is refused). Anything else is refused, with no fallback.
//! - **Fallback**: a typeable phrase that is empty once stripped is `approve`.
//! - **Match**: both sides NFC-normalized, stripped of leading and trailing
//!   characters in exactly U+0009–U+000D, U+0020, U+00A0 and U+FEFF, then
//!   lowercased (Unicode default lowercasing, with the final-sigma rule, as
//!   JavaScript's `toLowerCase`). An empty phrase never matches.

use crate::display;
use icu_normalizer::ComposingNormalizerBorrowed;
use icu_properties::props::GeneralCategory;
use icu_properties::CodePointMapData;

/// The phrase when the tool names none, or one that is empty once stripped.
pub const DEFAULT_PHRASE: &str = "approve";

/// The longest phrase accepted, in characters: a person types it.
pub const MAX_PHRASE_CHARS: usize = 200;

/// Why a phrase cannot be asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PhraseError {
    /// It holds a character that would be shown escaped.
    #[error("the phrase holds a hidden or control character (shown as {shown}); no one could be sure of typing it")]
    Hidden {
        /// The phrase as the display rule shows it.
        shown: String,
    },
    /// Whitespace other than plain spaces inside it.
    #[error("the phrase holds a tab or a non-ASCII space inside it (shown as {shown}); only plain spaces can be typed for sure")]
    InnerSpace {
        /// The phrase, escaped.
        shown: String,
    },
    /// Longer than [`MAX_PHRASE_CHARS`].
    #[error("the phrase is {0} characters long; the limit is {MAX_PHRASE_CHARS}")]
    TooLong(usize),
}

/// Whether `c` is in the edge set stripped before matching.
pub fn is_edge(c: char) -> bool {
    matches!(c, '\u{9}'..='\u{d}' | ' ' | '\u{a0}' | '\u{feff}')
}

/// `s` without leading and trailing edge-set characters.
pub fn strip_edges(s: &str) -> &str {
    s.trim_matches(is_edge)
}

/// The phrase the person types for a plan whose tool named `named`:
/// `named` itself when typeable, `approve` when it is empty once stripped,
/// and an error when it cannot be typed (there is no fallback for that).
pub fn phrase_for(named: &str) -> Result<String, PhraseError> {
    let count = named.chars().count();
    if count > MAX_PHRASE_CHARS {
        return Err(PhraseError::TooLong(count));
    }
    // Tabs are whitespace, which the rule below judges: at the edges they
    // are stripped, inside they are refused.
    if !display::is_display_safe(&named.replace('\t', " ")) {
        return Err(PhraseError::Hidden {
            shown: display::safe(named),
        });
    }
    let inner = strip_edges(named);
    let gc = CodePointMapData::<GeneralCategory>::new();
    if inner
        .chars()
        .any(|c| c == '\t' || (c != ' ' && gc.get(c) == GeneralCategory::SpaceSeparator))
    {
        return Err(PhraseError::InnerSpace {
            shown: named.escape_default().to_string(),
        });
    }
    Ok(if inner.is_empty() {
        DEFAULT_PHRASE.to_string()
    } else {
        named.to_string()
    })
}

/// What both sides are compared as: NFC, edges stripped, lowercased.
pub fn normalize(s: &str) -> String {
    let nfc = ComposingNormalizerBorrowed::new_nfc().normalize(s);
    strip_edges(&nfc).to_lowercase()
}

/// Whether `typed` confirms `phrase` (the phrase as asked for, after
/// [`phrase_for`]). An empty phrase is never confirmed.
pub fn matches(typed: &str, phrase: &str) -> bool {
    let want = normalize(phrase);
    !want.is_empty() && normalize(typed) == want
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_phrase_with_a_bidi_override_is_refused_and_one_of_spaces_is_approve() {
        assert!(matches!(
            phrase_for("go\u{202e}"),
            Err(PhraseError::Hidden { .. })
        ));
        assert_eq!(phrase_for(" \t").unwrap(), "approve");
        assert_eq!(phrase_for("").unwrap(), "approve");
        assert!(matches!(
            phrase_for("old\u{a0}nav"),
            Err(PhraseError::InnerSpace { .. })
        ));
        assert!(matches!(
            phrase_for(&"a".repeat(201)),
            Err(PhraseError::TooLong(201))
        ));
    }

    #[test]
    fn matching_ignores_case_edges_and_composition() {
        assert!(matches(" Old-Nav\u{a0}", "old-nav"));
        assert!(matches("cafe\u{301}", "café"));
        assert!(!matches("", "approve"));
        assert!(!matches("oldnav", "old-nav"));
    }
}

//! A short phrase for an agent key: four words the human can recognise and
//! compare, the same on every path that shows the key (review window,
//! terminal prompt, Settings, audit view, notifications).
//!
//! Why: `ed25519:Q2hhbmdl…` is unreadable, and its first ten characters are
//! cheap to imitate (an attacker can grind keys until the short form
//! matches). Four words carry 44 bits from a hash of the whole key, so a key
//! that looks like a known one in both its short form and its phrase costs
//! about 2^44 tries, and a person notices "cactus orbit lemon frost" turning
//! into something else far more readily than a changed base64 letter
//! (the idea behind SSH's randomart and Signal's safety numbers).
//!
//! The words come from the BIP-39 English list (the `bip39` crate): 2048
//! common words chosen so that the first four letters identify each one and
//! no two are easily confused. The phrase is a fingerprint for people, not a
//! secret and not an identifier the engine compares: custody compares full
//! keys.

use parley_core::keys::PublicKey;
use sha2::{Digest, Sha256};

/// How many words a phrase has.
pub const WORDS: usize = 4;

/// Domain separation: the phrase hash is never the hash of anything else.
const DOMAIN: &[u8] = b"parley-custody agent phrase v1\0";

/// The phrase for `key`: four lowercase words separated by spaces.
pub fn phrase(key: &PublicKey) -> String {
    let digest = Sha256::new()
        .chain_update(DOMAIN)
        .chain_update(key.as_bytes())
        .finalize();
    let list = bip39::Language::English.word_list();
    // The first 44 bits of the digest, 11 bits per word.
    let bits = u64::from_be_bytes([
        digest[0], digest[1], digest[2], digest[3], digest[4], digest[5], digest[6], digest[7],
    ]);
    (0..WORDS)
        .map(|i| {
            let index = (bits >> (64 - 11 * (i + 1))) & 0x7ff;
            // `index` < 2048 = the list's length, by the mask.
            list[index as usize]
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The phrase for a key given as text (`ed25519:…`), or `None` when the text
/// is not a key (old audit rows, a malformed request).
pub fn phrase_of_text(key: &str) -> Option<String> {
    key.parse::<PublicKey>().ok().map(|k| phrase(&k))
}

/// The longest agent name shown, in characters (a label is the human's
/// own words, but a screen line must hold it).
pub const NAME_CHARS: usize = 60;

/// The one name custody gives an agent on every path to a human
/// (notifications, tray, home, audit view, review, CLI): the human's own
/// name for it when there is one (display-safe, cut to [`NAME_CHARS`]),
/// else its four words. The key itself is never the name: `ed25519:LB7F…`
/// means nothing to a person and its first characters are cheap to imitate;
/// views may still show it as a secondary detail.
pub fn agent_name(key: &PublicKey, label: Option<&str>) -> String {
    name_or(label, || phrase(key))
}

/// [`agent_name`] for a key given as text. Text that is not a key (an old
/// audit row, a malformed request) is named "an unknown agent" with its
/// text, display-safe and short, so it is never silently blank.
pub fn agent_name_of_text(key: &str, label: Option<&str>) -> String {
    name_or(label, || match phrase_of_text(key.trim()) {
        Some(p) => p,
        None if key.trim().is_empty() => "an unknown agent".to_owned(),
        None => format!(
            "an unknown agent ({})",
            crate::display::bounded(key.trim(), 24)
        ),
    })
}

/// The one name: `label` when the human gave one (display-safe, cut to
/// [`NAME_CHARS`]), else `otherwise` (the four words).
pub(crate) fn name_or(label: Option<&str>, otherwise: impl FnOnce() -> String) -> String {
    match label.map(str::trim).filter(|l| !l.is_empty()) {
        Some(l) => crate::display::bounded(l, NAME_CHARS),
        None => otherwise(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parley_core::keys::SecretKey;
    use zeroize::Zeroizing;

    fn key(n: u8) -> PublicKey {
        SecretKey::from_seed(&Zeroizing::new([n; 32])).public()
    }

    #[test]
    fn a_phrase_is_four_list_words_and_the_same_every_time() {
        let p = phrase(&key(1));
        let words: Vec<&str> = p.split(' ').collect();
        assert_eq!(words.len(), WORDS);
        let list = bip39::Language::English.word_list();
        assert!(words.iter().all(|w| list.contains(w)), "{p}");
        assert_eq!(phrase(&key(1)), p);
        assert_eq!(phrase_of_text(&key(1).to_string()), Some(p));
    }

    #[test]
    fn different_keys_get_different_phrases() {
        let phrases: std::collections::BTreeSet<String> =
            (0..=255).map(|n| phrase(&key(n))).collect();
        // 44 bits: among 256 keys a repeat would be a broken derivation.
        assert_eq!(phrases.len(), 256);
    }

    #[test]
    fn text_that_is_not_a_key_has_no_phrase() {
        assert_eq!(phrase_of_text("ed25519:nope"), None);
        assert_eq!(phrase_of_text(""), None);
    }

    #[test]
    fn the_name_is_the_label_else_the_four_words_never_the_key() {
        let k = key(7);
        assert_eq!(agent_name(&k, Some("  shopper ")), "shopper");
        assert_eq!(agent_name(&k, None), phrase(&k));
        assert_eq!(agent_name(&k, Some("   ")), phrase(&k));
        let by_text = agent_name_of_text(&k.to_string(), None);
        assert_eq!(by_text, phrase(&k));
        assert!(!by_text.contains("ed25519"), "{by_text}");
        // A hostile label is shown through the display rule, and bounded.
        let hostile = agent_name(&k, Some("shop\u{202e}per"));
        assert!(!hostile.contains('\u{202e}'), "{hostile}");
        let long = agent_name(&k, Some(&"x".repeat(500)));
        assert!(long.chars().count() < NAME_CHARS + 20, "{long}");
        assert_eq!(agent_name_of_text("", None), "an unknown agent");
        assert!(agent_name_of_text("ed25519:nope", None).starts_with("an unknown agent ("));
    }
}

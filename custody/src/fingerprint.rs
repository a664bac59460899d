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
}

//! Random identifiers: proposal (`p_…`), receipt (`r_…`) and handle (`h_…`)
//! ids, and the agent's frame ids. 72 random bits each, b64url (§6.1
//! alphabet), so a handle cannot be guessed and an auto INTENT's frame id is
//! unique per agent key as §4.3.1 asks (at least 64 random bits).

use parley_core::b64;
use parley_core::SecretKey;
use zeroize::Zeroizing;

/// `{prefix}_` followed by 12 characters of b64url (9 random bytes).
pub fn random_id(prefix: &str) -> String {
    let mut bytes = [0u8; 9];
    fill(&mut bytes);
    format!("{prefix}_{}", b64::encode(bytes))
}

/// A fresh Ed25519 key from the OS random source.
pub fn random_key() -> SecretKey {
    let mut seed = Zeroizing::new([0u8; 32]);
    fill(seed.as_mut());
    SecretKey::from_seed(&seed)
}

fn fill(bytes: &mut [u8]) {
    // The OS random source does not fail on the systems this runs on; if it
    // ever does, continuing with predictable ids or keys would be worse than
    // stopping.
    if let Err(e) = getrandom::getrandom(bytes) {
        panic!("the operating system's random source failed: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_prefixed_and_distinct() {
        let a = random_id("p");
        let b = random_id("p");
        assert!(a.starts_with("p_") && a.len() == 14, "{a}");
        assert_ne!(a, b);
        assert_ne!(random_key().public(), random_key().public());
    }
}

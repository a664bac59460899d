//! Object keys: whether any repeats, and comparing two of them quickly.

/// Whether no key of `entries` repeats.
///
/// Objects of up to 16 entries (every object of a real frame) are checked
/// with a 64-bit filter first: each key sets one bit picked from its length
/// and its first and last bytes, and only a key whose bit is already set is
/// compared with the keys before it. Equal keys always pick the same bit, so
/// the answer is exactly [`unique_keys_plain`]'s; the filter only skips
/// comparisons that could not match (`fuzz/fuzz_targets/json_fast_path.rs`
/// checks the two against each other).
pub fn unique_keys<V>(entries: &[(&str, V)]) -> bool {
    if entries.len() > 16 {
        return unique_keys_plain(entries);
    }
    let mut seen = 0u64;
    for (i, (k, _)) in entries.iter().enumerate() {
        let bit = 1u64 << key_bucket(k);
        if seen & bit != 0 && entries[..i].iter().any(|(prev, _)| same_key(prev, k)) {
            return false;
        }
        seen |= bit;
    }
    true
}

/// The filter bit of a key for [`unique_keys`], in `0..64`.
fn key_bucket(k: &str) -> u32 {
    let b = k.as_bytes();
    let (first, last) = match b {
        [] => (0, 0),
        [.., last] => (u32::from(b[0]), u32::from(*last)),
    };
    (b.len() as u32)
        .wrapping_mul(7)
        .wrapping_add(first.wrapping_mul(3))
        .wrapping_add(last)
        % 64
}

/// [`unique_keys`] without the filter: every pair of keys compared for
/// small objects, a sort for larger ones.
pub fn unique_keys_plain<V>(entries: &[(&str, V)]) -> bool {
    if entries.len() <= 16 {
        entries
            .iter()
            .enumerate()
            .all(|(i, (k, _))| entries[..i].iter().all(|(prev, _)| !same_key(prev, k)))
    } else {
        let mut keys: Vec<&str> = entries.iter().map(|(k, _)| *k).collect();
        keys.sort_unstable();
        keys.windows(2).all(|w| w[0] != w[1])
    }
}

/// `a == b` for object keys, without a `memcmp` call for short keys (the
/// duplicate check and the renderers' lookups compare many short keys). Two
/// overlapping loads cover all the bytes.
pub(crate) fn same_key(a: &str, b: &str) -> bool {
    fn word<const N: usize>(s: &[u8]) -> [u8; N] {
        let mut w = [0; N];
        w.copy_from_slice(&s[..N]);
        w
    }
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let n = a.len();
    if n != b.len() {
        return false;
    }
    match n {
        0 => true,
        1..=3 => a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1],
        4..=7 => word::<4>(a) == word::<4>(b) && word::<4>(&a[n - 4..]) == word::<4>(&b[n - 4..]),
        8..=16 => word::<8>(a) == word::<8>(b) && word::<8>(&a[n - 8..]) == word::<8>(&b[n - 8..]),
        _ => a == b,
    }
}

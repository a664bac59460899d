//! The shared token estimate (§8).
//!
//! `est(text)` is the number of leftmost non-overlapping matches of
//!
//! ```text
//! [A-Za-z]+|[0-9]{1,3}|\n {2,}|[^ \t\n\r\f\vA-Za-z0-9]
//! ```
//!
//! over the code points of `text`. Service and client must compute exactly
//! the same number (a reply "fits" or not by it), so this is a hand-written
//! scanner, not an approximation. The alternatives never compete for the same
//! characters, which turns the count into a sum over bytes:
//!
//! * a letter run counts 1: a letter not preceded by a letter;
//! * a digit run of length L counts ⌈L/3⌉: a digit at run offset 0, 3, 6, …;
//! * `\n` followed by at least two spaces counts 1 (the spaces it swallows
//!   would not count anyway); a lone `\n` or `\n ` counts 0;
//! * space, `\t`, `\r`, `\f`, `\v` count 0;
//! * any other character counts 1: other ASCII (punctuation, other control
//!   characters) and every non-ASCII code point, counted by its UTF-8 lead
//!   byte.
//!
//! The scanner works on 8-byte words (SWAR, safe code only): byte classes
//! come from word arithmetic, letter-run starts from a shifted mask, other
//! characters from per-byte-lane counters, digit runs from a 3 × 256 table indexed by
//! the run phase and the word's digit mask, and the rare newlines are checked
//! one by one. Linear in the input and allocation-free. The plain per-byte
//! scanner handles the last < 8 bytes and is the test oracle for the word
//! scanner.

const SKIP: u8 = 0;
const LETTER: u8 = 1;
const DIGIT: u8 = 2;
const NEWLINE: u8 = 3;
const ONE: u8 = 4;

/// Byte classes. UTF-8 continuation bytes are `SKIP`: the lead byte already
/// counted their code point.
const CLASS: [u8; 256] = {
    let mut t = [ONE; 256];
    let mut b = 0x80;
    while b < 0xC0 {
        t[b] = SKIP;
        b += 1;
    }
    let mut c = b'A';
    while c <= b'Z' {
        t[c as usize] = LETTER;
        t[(c + 32) as usize] = LETTER;
        c += 1;
    }
    c = b'0';
    while c <= b'9' {
        t[c as usize] = DIGIT;
        c += 1;
    }
    t[b' ' as usize] = SKIP;
    t[b'\t' as usize] = SKIP;
    t[b'\r' as usize] = SKIP;
    t[0x0B] = SKIP; // \v
    t[0x0C] = SKIP; // \f
    t[b'\n' as usize] = NEWLINE;
    t
};

/// Scanner state carried across bytes and words.
#[derive(Clone, Copy)]
struct State {
    count: usize,
    prev_letter: bool,
    /// Position of the next digit within its run, modulo 3.
    digit_phase: u8,
}

/// The reference per-byte scanner, also used for the tail of the input.
fn scan_bytes(bytes: &[u8], from: usize, mut st: State) -> State {
    for i in from..bytes.len() {
        let class = CLASS[bytes[i] as usize];
        let letter = class == LETTER;
        let digit = class == DIGIT;
        st.count += usize::from(letter & !st.prev_letter);
        st.count += usize::from(digit & (st.digit_phase == 0));
        st.count += usize::from(class == ONE);
        st.prev_letter = letter;
        st.digit_phase = if digit { (st.digit_phase + 1) % 3 } else { 0 };
        if class == NEWLINE {
            st.count += usize::from(two_spaces_after(bytes, i));
        }
    }
    st
}

fn two_spaces_after(bytes: &[u8], i: usize) -> bool {
    bytes.get(i + 1) == Some(&b' ') && bytes.get(i + 2) == Some(&b' ')
}

/// `est` by the per-byte scanner alone (the oracle for the word scanner).
#[cfg(test)]
fn est_bytewise(text: &str) -> usize {
    scan_bytes(
        text.as_bytes(),
        0,
        State {
            count: 0,
            prev_letter: false,
            digit_phase: 0,
        },
    )
    .count
}

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;
const LOW7: u64 = !HI;

const fn splat(b: u8) -> u64 {
    LO * b as u64
}

/// High bit set in each byte of `a` (all bytes < 0x80) that is ≥ `c` (1 ≤ c ≤ 0x80).
#[inline(always)]
fn ge(a: u64, c: u8) -> u64 {
    a.wrapping_add(splat(0x80 - c)) & HI
}

/// High bit set in each byte of `a` (all bytes < 0x80) equal to `c`.
#[inline(always)]
fn eq(a: u64, c: u8) -> u64 {
    let v = a ^ splat(c);
    !((v & LOW7).wrapping_add(LOW7) | v) & HI
}

/// Digit-run table: for a run phase (0..3) and a word's digit mask (bit k =
/// byte k is a digit), the digit tokens that start in the word and the phase
/// after it.
const DIGITS: [[(u8, u8); 256]; 3] = {
    let mut t = [[(0u8, 0u8); 256]; 3];
    let mut phase = 0;
    while phase < 3 {
        let mut m = 0;
        while m < 256 {
            let mut ph = phase as u8;
            let mut count = 0u8;
            let mut bit = 0;
            while bit < 8 {
                if (m >> bit) & 1 == 1 {
                    if ph == 0 {
                        count += 1;
                    }
                    ph = (ph + 1) % 3;
                } else {
                    ph = 0;
                }
                bit += 1;
            }
            t[phase][m] = (count, ph);
            m += 1;
        }
        phase += 1;
    }
    t
};

/// Sum of the eight byte lanes of `lanes` (each lane ≤ 255).
#[inline(always)]
fn lane_sum(lanes: u64) -> usize {
    const PAIRS: u64 = 0x00FF_00FF_00FF_00FF;
    let pairs = (lanes & PAIRS) + ((lanes >> 8) & PAIRS); // four 16-bit lanes ≤ 510
    (pairs.wrapping_mul(0x0001_0001_0001_0001) >> 48) as usize
}

/// §8 token estimate of `text` (see the module docs). Linear time, no
/// allocation, total for every string.
pub fn est(text: &str) -> usize {
    let bytes = text.as_bytes();
    let mut st = State {
        count: 0,
        prev_letter: false,
        digit_phase: 0,
    };
    let mut carry_letter = 0u64; // bit 7 set if the previous byte was a letter
                                 // Letter-run starts and other characters, counted per byte lane (each
                                 // word adds at most 1 per lane), folded into `count` before a lane
                                 // could overflow. A portable stand-in for a popcount instruction.
    let mut lanes = 0u64;
    let mut words_in_lanes = 0u32;
    let words = bytes.chunks_exact(8);
    let done = bytes.len() - words.remainder().len();
    for (w, chunk) in words.enumerate() {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let x = u64::from_le_bytes(word);
        let hi = x & HI;
        let ascii = !hi & HI;
        let a = x & LOW7;
        let lower = a | splat(0x20);
        let letter = ge(lower, b'a') & !ge(lower, b'z' + 1) & ascii;
        let digit = ge(a, b'0') & !ge(a, b'9' + 1) & ascii;
        let ws = ((ge(a, 0x09) & !ge(a, 0x0E)) | eq(a, b' ')) & ascii;
        let lead = hi & (x << 1);
        let one = (ascii & !letter & !digit & !ws) | lead;
        let starts = letter & !((letter << 8) | carry_letter);
        carry_letter = letter >> 56;
        // Disjoint: `starts` are letters, `one` never is.
        lanes += (one | starts) >> 7;
        words_in_lanes += 1;
        if words_in_lanes == 255 {
            st.count += lane_sum(lanes);
            lanes = 0;
            words_in_lanes = 0;
        }
        if digit == 0 {
            st.digit_phase = 0;
        } else {
            let mask = (digit.wrapping_mul(0x0002_0408_1020_4081) >> 56) as usize;
            let (tokens, phase) = DIGITS[st.digit_phase as usize][mask];
            st.count += tokens as usize;
            st.digit_phase = phase;
        }
        let mut newlines = eq(a, b'\n') & ascii;
        while newlines != 0 {
            let i = w * 8 + (newlines.trailing_zeros() / 8) as usize;
            st.count += usize::from(two_spaces_after(bytes, i));
            newlines &= newlines - 1;
        }
    }
    st.count += lane_sum(lanes);
    st.prev_letter = carry_letter != 0;
    scan_bytes(bytes, done, st).count
}

#[cfg(test)]
mod tests {
    use super::est;

    #[test]
    fn basics() {
        assert_eq!(est(""), 0);
        assert_eq!(est("a"), 1);
        assert_eq!(est("abcdefghij"), 1);
        assert_eq!(est("a1b"), 3);
        assert_eq!(est("1"), 1);
        assert_eq!(est("123"), 1);
        assert_eq!(est("1234"), 2);
        assert_eq!(est("123456"), 2);
        assert_eq!(est("1234567"), 3);
        assert_eq!(est("12a34"), 3);
        assert_eq!(est("1.5"), 3);
        assert_eq!(est("x: 12345\n  - y"), 7);
    }

    #[test]
    fn whitespace_and_newlines() {
        assert_eq!(est(" \t\r\u{b}\u{c}"), 0);
        assert_eq!(est("\n"), 0);
        assert_eq!(est("\n "), 0);
        assert_eq!(est("\n  "), 1);
        assert_eq!(est("\n      "), 1);
        assert_eq!(est("\n\n  "), 1);
        assert_eq!(est("a\n  b"), 3);
        assert_eq!(est("\n \n  x"), 2);
        assert_eq!(est("\r\n  x"), 2);
        assert_eq!(est("\n\t\tx"), 1);
        assert_eq!(est("  lead\n    deep\n z"), 4);
    }

    #[test]
    fn everything_else_counts_one_per_code_point() {
        assert_eq!(est("café"), 2);
        assert_eq!(est("東京🎉"), 3);
        assert_eq!(est("\u{0}\u{1f}\u{7f}"), 3);
        assert_eq!(
            est("\u{a0}\u{2028}\u{3000}"),
            3,
            "non-ASCII spaces are not in the excluded set"
        );
        assert_eq!(est("…"), 1);
        assert_eq!(est("--"), 2);
        assert_eq!(est("é1é"), 3);
        assert_eq!(est("Ωmega"), 2);
    }

    #[test]
    fn word_scanner_matches_the_byte_scanner() {
        use super::est_bytewise;
        let pieces = [
            "a", "Zz", "0", "12", "1234567", " ", "\n", "\n  ", "\t", "é", "東", "🎉", "-", "…",
            "\u{7f}", "\u{0}", "@", "[", "`", "{", "/", ":", "\u{b}", "\u{c}", "\r",
        ];
        let mut seed = 7u64;
        for len in 0..400 {
            let mut s = String::new();
            for _ in 0..len % 97 {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                s.push_str(pieces[(seed >> 33) as usize % pieces.len()]);
            }
            assert_eq!(est(&s), est_bytewise(&s), "{s:?}");
        }
        for b in 0u8..=127 {
            let s = format!("x{}9{}\n  {}", b as char, b as char, b as char).repeat(3);
            assert_eq!(est(&s), est_bytewise(&s), "{s:?}");
        }
    }

    #[test]
    fn long_inputs_are_linear() {
        let s = "ab12 é\n   ".repeat(30_000);
        assert_eq!(est(&s), 4 * 30_000);
        assert_eq!(est(&"9".repeat(300_000)), 100_000);
        assert_eq!(est(&"9".repeat(300_001)), 100_001);
    }
}

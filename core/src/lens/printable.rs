//! [`printable`]: one line of untrusted text made safe for a terminal.
//!
//! Not part of Lens: Lens (§9) writes a service's text exactly as it is.
//! This is for the command line's own messages that quote outside text (a
//! refused file name, a custody error). Screens that show Lens or reviews
//! to a human use `parley_custody_client::display::safe`.

/// Whether `c` must not appear verbatim on one line of a terminal: C0 and C1 controls
/// (line breaks included), DEL, the line/paragraph separators, bidi
/// embedding/override/isolate/mark characters and the invisible tag block.
fn needs_escape(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1f}'
        | '\u{7f}'..='\u{9f}'
        | '\u{61c}'
        | '\u{200e}'
        | '\u{200f}'
        | '\u{2028}'..='\u{202e}'
        | '\u{2066}'..='\u{2069}'
        | '\u{e0000}'..='\u{e007f}')
}

/// The bytes that can start a character [`needs_escape`] is true for: C0
/// controls, DEL, and the UTF-8 lead bytes of U+0080–U+009F (`C2`), U+061C
/// (`D8`), U+200E–U+2069 (`E2`) and U+E0000–U+E007F (`F3`). Every other byte
/// is skipped without decoding a character.
const MAY_NEED_ESCAPE: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = true;
        b += 1;
    }
    t[0x7f] = true;
    t[0xc2] = true;
    t[0xd8] = true;
    t[0xe2] = true;
    t[0xf3] = true;
    t
};

/// Whether all eight bytes are printable ASCII (U+0020–U+007E).
fn plain_ascii(chunk: &[u8]) -> bool {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let mut word = [0u8; 8];
    word.copy_from_slice(chunk);
    let x = u64::from_le_bytes(word);
    let control = x.wrapping_sub(LO * 0x20) & !x;
    let d = x ^ (LO * 0x7f);
    let del = d.wrapping_sub(LO) & !d;
    (control | del | x) & HI == 0
}

/// The byte index and the character of the first character of `s` at or
/// after byte `i` (a character boundary) that [`needs_escape`].
fn next_escape(s: &str, mut i: usize) -> Option<(usize, char)> {
    let bytes = s.as_bytes();
    loop {
        // Whole words of printable ASCII, then byte by byte to the end of
        // the word that was not.
        while bytes.get(i..i + 8).is_some_and(plain_ascii) {
            i += 8;
        }
        // Fewer than eight bytes left: the last eight (overlapping what was
        // checked) decide them at once when they are printable ASCII.
        if i + 8 > bytes.len() && bytes.len() >= 8 && plain_ascii(&bytes[bytes.len() - 8..]) {
            return None;
        }
        let end = bytes.len().min(i + 8);
        while i < end {
            if !MAY_NEED_ESCAPE[usize::from(bytes[i])] {
                i += 1;
                continue;
            }
            // A flagged byte is ASCII or a lead byte: a character boundary.
            let c = s.get(i..)?.chars().next()?;
            if needs_escape(c) {
                return Some((i, c));
            }
            i += c.len_utf8();
        }
        if i >= bytes.len() {
            return None;
        }
    }
}

/// Untrusted text made safe to show on one line: every character that could
/// break or visually reorder a line (controls incl. `\n`, DEL, C1, U+2028/9,
/// bidi controls, tag characters) is replaced by `\u{hex}`; everything else
/// is kept.
pub fn printable(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    write_printable(s, &mut out);
    out
}

fn write_printable(s: &str, out: &mut String) {
    let mut start = 0;
    while let Some((i, c)) = next_escape(s, start) {
        out.push_str(&s[start..i]);
        write_escape(c, out);
        start = i + c.len_utf8();
    }
    out.push_str(&s[start..]);
}

/// `\u{hex}` with lowercase digits and no padding.
fn write_escape(c: char, out: &mut String) {
    out.push_str("\\u{");
    let n = c as u32;
    let mut shift = (32 - n.leading_zeros()).div_ceil(4).max(1) * 4;
    while shift > 0 {
        shift -= 4;
        out.push(char::from(b"0123456789abcdef"[(n >> shift & 15) as usize]));
    }
    out.push('}');
}

#[cfg(test)]
mod tests {
    use super::printable;

    #[test]
    fn hidden_characters_become_visible() {
        assert_eq!(
            printable("a\u{85}b\u{7f}\u{e0041}\u{2066}\t"),
            "a\\u{85}b\\u{7f}\\u{e0041}\\u{2066}\\u{9}"
        );
        assert_eq!(printable("café — ok ••"), "café — ok ••");
    }

    #[test]
    fn escapes_are_lowercase_hex_without_padding() {
        assert_eq!(
            printable("\u{0}\u{a}\u{9f}\u{61c}\u{e007f}"),
            "\\u{0}\\u{a}\\u{9f}\\u{61c}\\u{e007f}"
        );
        assert_eq!(
            printable("plain ascii text, long enough"),
            "plain ascii text, long enough"
        );
        assert_eq!(printable("0123456\u{7f}"), "0123456\\u{7f}");
    }
}

//! The tray icon's badge: a red disc with the number of pending requests
//! ("9+" above nine), drawn into the icon's RGBA pixels. Pure, so it is
//! tested without a tray host.

/// 3×5 digit glyphs, one row per byte (bits 2..0 = left to right).
const DIGITS: [[u8; 5]; 10] = [
    [7, 5, 5, 5, 7],
    [2, 6, 2, 2, 7],
    [7, 1, 7, 4, 7],
    [7, 1, 7, 1, 7],
    [5, 5, 7, 1, 1],
    [7, 4, 7, 1, 7],
    [7, 4, 7, 5, 7],
    [7, 1, 2, 2, 2],
    [7, 5, 7, 5, 7],
    [7, 5, 7, 1, 7],
];
const PLUS: [u8; 5] = [0, 2, 7, 2, 0];

/// The icon with a red badge carrying `count` (nothing when 0; "9+" above 9).
pub fn badge(rgba: &[u8], w: u32, h: u32, count: usize) -> (Vec<u8>, u32, u32) {
    let mut out = rgba.to_vec();
    if count == 0 || w < 8 || h < 8 || out.len() != (w * h * 4) as usize {
        return (out, w, h);
    }
    let size = w.min(h) as i64;
    let r = size * 30 / 100;
    let (cx, cy) = (w as i64 - r - 1, r + 1);
    let mut put = |x: i64, y: i64, c: [u8; 4]| {
        if x >= 0 && y >= 0 && x < w as i64 && y < h as i64 {
            let i = ((y as u32 * w + x as u32) * 4) as usize;
            out[i..i + 4].copy_from_slice(&c);
        }
    };
    for y in cy - r - 1..=cy + r + 1 {
        for x in cx - r - 1..=cx + r + 1 {
            let d = (x - cx) * (x - cx) + (y - cy) * (y - cy);
            if d <= r * r {
                put(x, y, [0xd3, 0x2f, 0x2f, 0xff]);
            } else if d <= (r + 1) * (r + 1) {
                put(x, y, [0xff, 0xff, 0xff, 0xff]);
            }
        }
    }
    let glyphs: Vec<[u8; 5]> = if count > 9 {
        vec![DIGITS[9], PLUS]
    } else {
        vec![DIGITS[count]]
    };
    let cols = glyphs.len() as i64 * 4 - 1;
    let scale = ((2 * r * 7 / 10) / 5)
        .max(1)
        .min((2 * r * 8 / 10) / cols.max(1))
        .max(1);
    let (gw, gh) = (cols * scale, 5 * scale);
    let (x0, y0) = (cx - gw / 2, cy - gh / 2);
    for (g, glyph) in glyphs.iter().enumerate() {
        for (row, bits) in glyph.iter().enumerate() {
            for col in 0..3 {
                if bits & (4 >> col) != 0 {
                    for dy in 0..scale {
                        for dx in 0..scale {
                            put(
                                x0 + (g as i64 * 4 + col) * scale + dx,
                                y0 + row as i64 * scale + dy,
                                [0xff, 0xff, 0xff, 0xff],
                            );
                        }
                    }
                }
            }
        }
    }
    (out, w, h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn badge_only_when_pending() {
        let base = vec![0u8; 32 * 32 * 4];
        assert_eq!(badge(&base, 32, 32, 0).0, base);
        let one = badge(&base, 32, 32, 1).0;
        assert_ne!(one, base);
        // The badge is in the top-right corner; the bottom-left is untouched.
        let px = |img: &[u8], x: u32, y: u32| img[((y * 32 + x) * 4) as usize..][..4].to_vec();
        assert_eq!(px(&one, 0, 31), vec![0, 0, 0, 0]);
        assert_eq!(px(&one, 22, 2)[3], 0xff);
        assert_ne!(badge(&base, 32, 32, 2).0, one, "different counts differ");
        assert_eq!(badge(&base, 32, 32, 12).0, badge(&base, 32, 32, 99).0, "9+");
        // A malformed buffer is returned unchanged rather than indexed out of bounds.
        assert_eq!(badge(&[1, 2, 3], 32, 32, 3).0, vec![1, 2, 3]);
    }
}

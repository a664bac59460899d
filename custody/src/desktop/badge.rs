//! The tray icon's badge: a red disc with the number of pending requests
//! ("9+" above nine). The icon is drawn smaller in the bottom-left
//! ([`ICON_PERCENT`] of its size) so the badge sits in the freed top-right
//! corner and never covers the key. Pure, so it is tested without a tray
//! host.

/// How much of the pixmap the icon keeps while a badge shows, in percent.
pub const ICON_PERCENT: u32 = 72;

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
    if count == 0 || w < 8 || h < 8 || rgba.len() != (w * h * 4) as usize {
        return (rgba.to_vec(), w, h);
    }
    let mut out = shrunk(rgba, w, h);
    let size = w.min(h) as i64;
    let r = size * 22 / 100;
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

/// The icon at [`ICON_PERCENT`] of its size in the bottom-left corner of a
/// transparent pixmap of the same size (each pixel the average of the
/// source pixels it covers, weighted by alpha, so edges stay smooth).
pub(super) fn shrunk(rgba: &[u8], w: u32, h: u32) -> Vec<u8> {
    let mut out = vec![0u8; rgba.len()];
    let (sw, sh) = (
        (w * ICON_PERCENT / 100).max(1),
        (h * ICON_PERCENT / 100).max(1),
    );
    let y_off = h - sh;
    for y in 0..sh {
        for x in 0..sw {
            let (x0, x1) = (x * w / sw, ((x + 1) * w / sw).max(x * w / sw + 1));
            let (y0, y1) = (y * h / sh, ((y + 1) * h / sh).max(y * h / sh + 1));
            let (mut acc, mut alpha, mut n) = ([0u64; 3], 0u64, 0u64);
            for sy in y0..y1.min(h) {
                for sx in x0..x1.min(w) {
                    let i = ((sy * w + sx) * 4) as usize;
                    let a = rgba[i + 3] as u64;
                    for c in 0..3 {
                        acc[c] += rgba[i + c] as u64 * a;
                    }
                    alpha += a;
                    n += 1;
                }
            }
            let o = (((y + y_off) * w + x) * 4) as usize;
            if let Some(avg) = acc
                .map(|a| a.checked_div(alpha))
                .iter()
                .copied()
                .collect::<Option<Vec<u64>>>()
            {
                for (c, v) in avg.into_iter().enumerate() {
                    out[o + c] = v as u8;
                }
                out[o + 3] = (alpha / n.max(1)) as u8;
            }
        }
    }
    out
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
        assert_eq!(px(&one, 26, 4)[3], 0xff);
        assert_ne!(badge(&base, 32, 32, 2).0, one, "different counts differ");
        assert_eq!(badge(&base, 32, 32, 12).0, badge(&base, 32, 32, 99).0, "9+");
        // A malformed buffer is returned unchanged rather than indexed out of bounds.
        assert_eq!(badge(&[1, 2, 3], 32, 32, 3).0, vec![1, 2, 3]);
    }
}

//! b64url: base64url without padding (RFC 4648 §5), as §6.1 requires.
//!
//! Decoding is strict: padding, whitespace and non-zero trailing bits are
//! refused, so every byte string has exactly one textual form. That matters
//! because signatures and ids are compared as text.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

/// Why a b64url string could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not valid base64url (unpadded, RFC 4648 §5): {0}")]
pub struct B64Error(String);

/// Encodes bytes as unpadded base64url.
pub fn encode(bytes: impl AsRef<[u8]>) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Decodes unpadded base64url, refusing any non-canonical form.
pub fn decode(text: &str) -> Result<Vec<u8>, B64Error> {
    URL_SAFE_NO_PAD
        .decode(text)
        .map_err(|e| B64Error(e.to_string()))
}

/// Decodes into a fixed-size array, refusing any other length.
pub fn decode_array<const N: usize>(text: &str) -> Result<[u8; N], B64Error> {
    // The encoded length is known up front; refuse long inputs before decoding them.
    if text.len() != (N * 4).div_ceil(3) {
        return Err(B64Error(format!(
            "expected {N} bytes ({} characters), got {} characters",
            (N * 4).div_ceil(3),
            text.len()
        )));
    }
    let mut out = [0u8; N];
    let n = URL_SAFE_NO_PAD
        .decode_slice(text, &mut out)
        .map_err(|e| B64Error(e.to_string()))?;
    if n != N {
        return Err(B64Error(format!("expected {N} bytes, got {n}")));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        for len in 0..40 {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 37) as u8).collect();
            assert_eq!(decode(&encode(&bytes)).unwrap(), bytes);
        }
    }

    #[test]
    fn refuses_padding_standard_alphabet_and_trailing_bits() {
        assert!(decode("AA==").is_err());
        assert!(decode("a+b/").is_err());
        assert!(decode("AB").is_err(), "non-zero trailing bits");
        assert!(decode("AA").is_ok());
        assert!(decode("A").is_err());
    }

    #[test]
    fn fixed_length() {
        let seed = decode_array::<32>("AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE").unwrap();
        assert_eq!(seed, [1u8; 32]);
        assert!(decode_array::<32>("AQEB").is_err());
    }
}

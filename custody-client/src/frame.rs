//! NDJSON frames over any async byte stream (Parley §2.1, §2.3; custody
//! protocol v1): one JSON object per line, each at most [`MAX_FRAME`] bytes.
//!
//! The peer is untrusted, so the reader's memory is bounded by the limit, not
//! by what the peer sends: a line longer than the limit is never buffered
//! whole. Once it passes the limit the reader drops what it holds and skips
//! bytes until the next `\n`, then reports [`FrameError::TooLarge`] for that
//! line; the next line is read normally (§2.1: "a stream connection MUST stay
//! usable after the rejection"). The same holds for every other per-line
//! error: only [`FrameError::Io`] ends a connection.
//!
//! Decisions:
//! - Empty lines, and lines of JSON whitespace only (` `, `\t`, `\r`), are
//!   skipped: they carry nothing, and `\r\n` endings then just work.
//! - A last line without `\n` at end of stream is refused as
//!   [`FrameError::Truncated`]: a peer that died mid-write must not have half
//!   of what it meant acted on, and §2.3 terminates every frame with `\n`.
//! - Every frame is parsed by `parley_core::json::parse` (duplicate keys
//!   refused, depth ≤ 64, size ≤ the limit) and must be a JSON object.
//! - No timeouts here: how long a connection may idle or take to send a line
//!   is the caller's policy (wrap `next_frame` in `tokio::time::timeout`).
//!   Memory per connection stays bounded however slow the peer is.

use crate::protocol::{ErrorCode, Reply};
use parley_core::json::{self, JsonError, Limits};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

/// The largest frame, in bytes, not counting its `\n` (§2.1: 1 MiB).
pub const MAX_FRAME: usize = 1_048_576;

/// The maximum nesting depth of a frame (the top-level object is depth 1).
pub const MAX_DEPTH: usize = 64;

/// Size of the read buffer: large enough that a typical frame arrives in one
/// read, small enough to keep 64 idle connections cheap.
const READ_CHUNK: usize = 64 * 1024;

/// After a frame larger than this, the line buffer is shrunk back, so one big
/// frame does not pin a megabyte for the rest of a long-lived connection.
const KEEP_LINE_CAPACITY: usize = 64 * 1024;

/// One frame: a strictly parsed JSON object.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// The frame; always a `Value::Object`.
    pub value: Value,
    /// Its size on the wire in bytes, without the `\n`.
    pub len: usize,
}

/// Why a line (or the stream) could not be read as a frame.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The line is longer than the limit; it was skipped, not buffered.
    #[error(
        "frame of {size} bytes is over the {limit}-byte limit; split the request or send less data"
    )]
    TooLarge {
        /// The line's length in bytes, without `\n` (bytes seen so far if the
        /// stream ended inside it).
        size: u64,
        /// The limit in bytes.
        limit: usize,
    },
    /// The line is not valid UTF-8.
    #[error("frame is not valid UTF-8 (first bad byte at offset {offset}); send UTF-8 JSON")]
    NotUtf8 {
        /// Offset of the first invalid byte within the line.
        offset: usize,
    },
    /// The line is not one well-formed JSON object (syntax error, duplicate
    /// key, nesting deeper than [`MAX_DEPTH`], or not an object).
    #[error("frame is not a valid JSON object: {0}")]
    Invalid(String),
    /// The stream ended in the middle of a line (no final `\n`).
    #[error("connection closed in the middle of a {size}-byte frame; end every frame with \\n")]
    Truncated {
        /// Bytes of the unfinished line.
        size: usize,
    },
    /// Reading or writing the stream failed; the connection is unusable.
    #[error("connection I/O failed: {0}")]
    Io(#[from] std::io::Error),
}

impl FrameError {
    /// Whether the connection is unusable after this error. Every error but
    /// I/O concerns one line only; the next line can be read normally.
    pub fn is_fatal(&self) -> bool {
        matches!(self, FrameError::Io(_))
    }

    /// The `ERROR bad_frame` reply (with `re: null`, the line's id being
    /// unknown) to send for a per-line error; `None` for a fatal one.
    pub fn to_reply(&self) -> Option<Value> {
        if self.is_fatal() {
            return None;
        }
        Some(Reply::error(ErrorCode::BadFrame, self.to_string()).to_frame(None))
    }
}

/// Reads NDJSON frames with bounded memory (see the module docs).
#[derive(Debug)]
pub struct FrameReader<R> {
    inner: BufReader<R>,
    limits: Limits,
    /// The current line, never longer than `limits.max_bytes`.
    line: Vec<u8>,
    /// `Some(n)` while skipping an over-long line of which `n` bytes were seen.
    discarding: Option<u64>,
    /// Largest `buffered_capacity()` ever observed, for the memory tests.
    peak_capacity: usize,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    /// A reader with the default limits: [`MAX_FRAME`] bytes, [`MAX_DEPTH`].
    pub fn new(inner: R) -> Self {
        Self::with_max_frame(inner, MAX_FRAME)
    }

    /// A reader with another frame size limit (tests, or a stricter caller).
    pub fn with_max_frame(inner: R, max_frame: usize) -> Self {
        FrameReader {
            inner: BufReader::with_capacity(READ_CHUNK, inner),
            limits: Limits {
                max_depth: MAX_DEPTH,
                max_bytes: max_frame,
            },
            line: Vec::new(),
            discarding: None,
            peak_capacity: 0,
        }
    }

    /// The frame size limit in bytes.
    pub fn max_frame(&self) -> usize {
        self.limits.max_bytes
    }

    /// Bytes of memory the reader holds for buffering right now.
    #[doc(hidden)]
    pub fn buffered_capacity(&self) -> usize {
        READ_CHUNK + self.line.capacity()
    }

    /// The largest [`Self::buffered_capacity`] seen since creation.
    #[doc(hidden)]
    pub fn peak_buffered_capacity(&self) -> usize {
        self.peak_capacity.max(self.buffered_capacity())
    }

    /// Gives back the underlying stream (bytes already buffered are lost).
    pub fn into_inner(self) -> R {
        self.inner.into_inner()
    }

    /// The next frame; `Ok(None)` at a clean end of stream (after a `\n`).
    ///
    /// A per-line error (anything but [`FrameError::Io`]) leaves the reader
    /// positioned at the start of the next line, so calling again continues.
    /// Cancel-safe: all state lives in the reader and bytes are only consumed
    /// synchronously after a read completes, so dropping the future (in
    /// `tokio::select!` or `tokio::time::timeout`) loses nothing; the next
    /// call continues the same line.
    pub async fn next_frame(&mut self) -> Result<Option<Frame>, FrameError> {
        loop {
            if !self.next_line().await? {
                return Ok(None);
            }
            if self.line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
                self.recycle_line();
                continue;
            }
            let result = self.parse_line();
            self.recycle_line();
            return result.map(Some);
        }
    }

    /// Fills `self.line` with the next complete line (without `\n`).
    /// Returns `Ok(false)` at end of stream with nothing pending.
    async fn next_line(&mut self) -> Result<bool, FrameError> {
        let max = self.limits.max_bytes;
        loop {
            let buf = match self.inner.fill_buf().await {
                Ok(buf) => buf,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(FrameError::Io(e)),
            };
            if buf.is_empty() {
                // End of stream.
                if let Some(seen) = self.discarding.take() {
                    return Err(FrameError::TooLarge {
                        size: seen,
                        limit: max,
                    });
                }
                if self.line.is_empty() {
                    return Ok(false);
                }
                let size = self.line.len();
                self.recycle_line();
                return Err(FrameError::Truncated { size });
            }
            let newline = find_newline(buf);
            let take = newline.unwrap_or(buf.len());
            let used = newline.map_or(take, |i| i + 1);

            if let Some(seen) = self.discarding.as_mut() {
                *seen += take as u64;
                let size = *seen;
                self.inner.consume(used);
                if newline.is_some() {
                    self.discarding = None;
                    return Err(FrameError::TooLarge { size, limit: max });
                }
                continue;
            }

            let total = self.line.len() + take;
            if total > max {
                self.line.clear();
                self.shrink_line();
                self.inner.consume(used);
                if newline.is_some() {
                    return Err(FrameError::TooLarge {
                        size: total as u64,
                        limit: max,
                    });
                }
                self.discarding = Some(total as u64);
                continue;
            }

            reserve_within(&mut self.line, total, max);
            self.line.extend_from_slice(&buf[..take]);
            self.inner.consume(used);
            self.note_capacity();
            if newline.is_some() {
                return Ok(true);
            }
        }
    }

    fn parse_line(&self) -> Result<Frame, FrameError> {
        let line = &self.line;
        if let Err(e) = std::str::from_utf8(line) {
            return Err(FrameError::NotUtf8 {
                offset: e.valid_up_to(),
            });
        }
        let value = json::parse(line, self.limits).map_err(|e| match e {
            JsonError::TooLarge { size, limit } => FrameError::TooLarge {
                size: size as u64,
                limit,
            },
            JsonError::Invalid(msg) => FrameError::Invalid(msg),
        })?;
        if !value.is_object() {
            return Err(FrameError::Invalid(
                "a frame must be a JSON object".to_owned(),
            ));
        }
        Ok(Frame {
            value,
            len: line.len(),
        })
    }

    fn recycle_line(&mut self) {
        self.line.clear();
        self.shrink_line();
    }

    fn shrink_line(&mut self) {
        if self.line.capacity() > KEEP_LINE_CAPACITY {
            self.line.shrink_to(KEEP_LINE_CAPACITY);
        }
    }

    fn note_capacity(&mut self) {
        self.peak_capacity = self.peak_capacity.max(self.buffered_capacity());
    }
}

/// Grows `line` to hold `needed` (≤ `max`) bytes without its capacity ever
/// exceeding `max` (plain `Vec` growth could double past the frame limit).
fn reserve_within(line: &mut Vec<u8>, needed: usize, max: usize) {
    let cap = line.capacity();
    if needed <= cap {
        return;
    }
    let target = needed.max(cap.saturating_mul(2)).min(max);
    line.reserve_exact(target - line.len());
}

/// Finds the first `\n`, a machine word at a time: the reader scans every byte
/// a peer sends, including the megabytes of a line it will refuse.
fn find_newline(haystack: &[u8]) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    const NL: u64 = LO * b'\n' as u64;
    let mut chunks = haystack.chunks_exact(8);
    let mut offset = 0;
    for chunk in chunks.by_ref() {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let x = u64::from_ne_bytes(word) ^ NL;
        // Non-zero iff some byte of x is zero, i.e. some byte was '\n'.
        if x.wrapping_sub(LO) & !x & HI != 0 {
            return chunk.iter().position(|&b| b == b'\n').map(|i| offset + i);
        }
        offset += 8;
    }
    chunks
        .remainder()
        .iter()
        .position(|&b| b == b'\n')
        .map(|i| offset + i)
}

/// Writes NDJSON frames: compact JSON (which never contains a literal
/// newline: newlines inside strings are escaped), then `\n`, then a flush.
#[derive(Debug)]
pub struct FrameWriter<W> {
    inner: W,
    max_frame: usize,
}

impl<W: AsyncWrite + Unpin> FrameWriter<W> {
    /// A writer refusing frames over [`MAX_FRAME`] (the peer would refuse them).
    pub fn new(inner: W) -> Self {
        FrameWriter {
            inner,
            max_frame: MAX_FRAME,
        }
    }

    /// Serializes `value` as one line and flushes it.
    ///
    /// A frame over the limit is not sent ([`FrameError::TooLarge`]); the
    /// connection stays usable.
    pub async fn send(&mut self, value: &Value) -> Result<(), FrameError> {
        let mut bytes = serde_json::to_vec(value)
            .map_err(|e| FrameError::Invalid(format!("cannot serialize reply: {e}")))?;
        debug_assert!(!bytes.contains(&b'\n'), "compact JSON has no newline");
        if bytes.len() > self.max_frame {
            return Err(FrameError::TooLarge {
                size: bytes.len() as u64,
                limit: self.max_frame,
            });
        }
        bytes.push(b'\n');
        self.inner.write_all(&bytes).await?;
        self.inner.flush().await?;
        Ok(())
    }

    /// Gives back the underlying stream.
    pub fn into_inner(self) -> W {
        self.inner
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_newline_matches_naive_search() {
        let mut data = vec![b'a'; 40];
        for pos in 0..40 {
            data.fill(b'a');
            data[pos] = b'\n';
            for start in 0..pos.min(9) {
                assert_eq!(find_newline(&data[start..]), Some(pos - start));
            }
        }
        data.fill(b'\n' ^ 0x80);
        assert_eq!(find_newline(&data), None);
        data.fill(0x0b);
        assert_eq!(find_newline(&data), None);
        assert_eq!(find_newline(b""), None);
    }

    #[tokio::test]
    async fn reads_frames_and_skips_blank_lines() {
        let input: &[u8] = b"{\"a\":1}\n\n  \r\n{\"b\":2}\r\n";
        let mut r = FrameReader::new(input);
        assert_eq!(r.next_frame().await.unwrap().unwrap().value["a"], 1);
        assert_eq!(r.next_frame().await.unwrap().unwrap().value["b"], 2);
        assert!(r.next_frame().await.unwrap().is_none());
    }

    #[tokio::test]
    async fn exact_limit_is_accepted_one_more_is_not() {
        let max = 32;
        let fits = format!("{{\"k\":\"{}\"}}", "x".repeat(max - 8));
        assert_eq!(fits.len(), max);
        let over = format!("{{\"k\":\"{}\"}}", "x".repeat(max - 7));
        let input = format!("{fits}\n{over}\n{fits}\n");
        let mut r = FrameReader::with_max_frame(input.as_bytes(), max);
        assert!(r.next_frame().await.unwrap().is_some());
        assert!(matches!(
            r.next_frame().await,
            Err(FrameError::TooLarge { size, limit }) if size == max as u64 + 1 && limit == max
        ));
        assert!(r.next_frame().await.unwrap().is_some());
        assert!(r.next_frame().await.unwrap().is_none());
    }

    #[tokio::test]
    async fn missing_final_newline_is_truncated() {
        let mut r = FrameReader::new(&b"{\"a\":1}\n{\"b\":2}"[..]);
        assert!(r.next_frame().await.unwrap().is_some());
        assert!(matches!(
            r.next_frame().await,
            Err(FrameError::Truncated { size: 7 })
        ));
        assert!(r.next_frame().await.unwrap().is_none());
    }

    #[tokio::test]
    async fn non_object_is_invalid() {
        let mut r = FrameReader::new(&b"[1]\n\"s\"\n{}\n"[..]);
        assert!(matches!(r.next_frame().await, Err(FrameError::Invalid(_))));
        assert!(matches!(r.next_frame().await, Err(FrameError::Invalid(_))));
        assert!(r.next_frame().await.unwrap().is_some());
    }

    #[test]
    fn per_line_errors_become_bad_frame_replies() {
        let v = FrameError::TooLarge { size: 9, limit: 8 }
            .to_reply()
            .unwrap();
        assert_eq!(v["kind"], "ERROR");
        assert_eq!(v["code"], "bad_frame");
        assert_eq!(v["re"], Value::Null);
        let io = FrameError::Io(std::io::Error::other("gone"));
        assert!(io.is_fatal() && io.to_reply().is_none());
    }

    #[tokio::test]
    async fn writer_emits_one_line_per_frame() {
        let mut out = Vec::new();
        let mut w = FrameWriter::new(&mut out);
        w.send(&serde_json::json!({"m":"two\nlines"}))
            .await
            .unwrap();
        assert_eq!(out, b"{\"m\":\"two\\nlines\"}\n");
    }
}

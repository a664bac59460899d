//! The custody frame reader (NDJSON, §2.1) over an in-memory stream that
//! delivers the input in fuzz-chosen chunk sizes, with a small frame limit so
//! that over-long lines, partial lines and the skip-to-newline path are all
//! reached. Lines of 1 MiB + 1 against the real limit are reached by a flag.
//!
//! Input: byte 0 = frame limit (1..=256, or the real 1 MiB when 0), byte 1 =
//! flags (bit 0: first send a line of MAX_FRAME+1 bytes), bytes 2..10 = chunk
//! sizes cycled through, the rest = the stream.
//!
//! Asserts against an independent model (split on `\n`): the same sequence
//! of frames and per-line errors, the connection usable after every
//! per-line error, and the reader's buffer never above the limit.
#![no_main]

use libfuzzer_sys::fuzz_target;
use parley_core::json::{self, Limits};
use parley_custody::ipc::frame::{FrameError, FrameReader, MAX_DEPTH, MAX_FRAME};
use serde_json::Value;
use std::future::Future;
use std::pin::{pin, Pin};
use std::task::{Context, Poll, Waker};
use tokio::io::{AsyncRead, ReadBuf};

/// Delivers `data` in chunks of the given sizes (0 = one `Interrupted` error,
/// then at least a byte: EINTR is transient); the first `fast` bytes (the
/// 1 MiB line) as fast as the reader takes them.
struct Chunked<'a> {
    data: &'a [u8],
    sizes: &'a [u8],
    turn: usize,
    fast: usize,
    interrupted: bool,
}

impl AsyncRead for Chunked<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let size = if self.fast > 0 || self.sizes.is_empty() {
            usize::MAX
        } else {
            usize::from(self.sizes[self.turn % self.sizes.len()])
        };
        self.turn += 1;
        if size == 0 && !self.data.is_empty() && !self.interrupted {
            self.interrupted = true;
            return Poll::Ready(Err(std::io::ErrorKind::Interrupted.into()));
        }
        self.interrupted = false;
        let mut n = size.max(1).min(self.data.len()).min(buf.remaining());
        if self.fast > 0 {
            n = n.min(self.fast);
            self.fast -= n;
        }
        let (head, tail) = self.data.split_at(n);
        buf.put_slice(head);
        self.data = tail;
        Poll::Ready(Ok(()))
    }
}

/// The reader never waits on an in-memory stream: poll once to completion.
fn run<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

#[derive(Debug, PartialEq)]
enum Want {
    Frame(Value),
    TooLarge(u64),
    NotUtf8,
    Invalid,
    Truncated(usize),
}

fn model(stream: &[u8], max: usize) -> Vec<Want> {
    let mut out = Vec::new();
    let mut pieces: Vec<&[u8]> = stream.split(|&b| b == b'\n').collect();
    let last = pieces.pop().unwrap_or_default();
    for line in pieces {
        if line.len() > max {
            out.push(Want::TooLarge(line.len() as u64));
        } else if line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
            // skipped
        } else if std::str::from_utf8(line).is_err() {
            out.push(Want::NotUtf8);
        } else {
            let limits = Limits {
                max_depth: MAX_DEPTH,
                max_bytes: max,
            };
            match json::parse(line, limits) {
                Ok(v) if v.is_object() => out.push(Want::Frame(v)),
                _ => out.push(Want::Invalid),
            }
        }
    }
    if !last.is_empty() {
        if last.len() > max {
            out.push(Want::TooLarge(last.len() as u64));
        } else {
            out.push(Want::Truncated(last.len()));
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let max = match data[0] {
        0 => MAX_FRAME,
        n => usize::from(n),
    };
    let big = data[1] & 0x81 == 0x81;
    let split = data.len().min(10);
    let sizes = &data[2..split];
    let body = &data[split..];
    let mut stream = Vec::new();
    if big {
        stream.resize(MAX_FRAME + 1, b'x');
        stream.push(b'\n');
    }
    stream.extend_from_slice(body);

    let want = model(&stream, max);
    let mut got = Vec::new();
    let mut reader = FrameReader::with_max_frame(
        Chunked {
            data: &stream,
            sizes,
            turn: 0,
            fast: if big { MAX_FRAME + 2 } else { 0 },
            interrupted: false,
        },
        max,
    );
    loop {
        match run(reader.next_frame()) {
            Ok(None) => break,
            Ok(Some(f)) => {
                assert!(f.len <= max);
                got.push(Want::Frame(f.value));
            }
            Err(FrameError::TooLarge { size, limit }) => {
                assert_eq!(limit, max);
                got.push(Want::TooLarge(size));
            }
            Err(FrameError::NotUtf8 { .. }) => got.push(Want::NotUtf8),
            Err(FrameError::Invalid(_)) => got.push(Want::Invalid),
            Err(FrameError::Truncated { size }) => got.push(Want::Truncated(size)),
            Err(e @ FrameError::Io(_)) => panic!("in-memory stream failed: {e}"),
        }
        assert!(got.len() <= want.len() + 1, "more results than lines");
    }
    assert_eq!(got, want);
    // Memory is bounded by the limit, not by what the peer sent.
    assert!(
        reader.peak_buffered_capacity() <= 64 * 1024 + max.max(64 * 1024),
        "buffered {} for a {max}-byte limit",
        reader.peak_buffered_capacity()
    );
});

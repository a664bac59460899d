//! Where custody's log goes, and what a log line may contain.
//!
//! Log lines quote what agents and services sent (a rejected request's
//! reason, a bad frame). On the terminal where the headless daemon asks the
//! human, such a line could erase the prompt and draw a forged review under
//! a real one, or bury the review under thousands of lines. So:
//! - when the terminal approver runs and stderr is that same terminal, the log
//!   goes to a file in the data directory (mode 0600, at most
//!   [`LOG_FILE_BYTES`] before it is rotated to `custodyd.log.1`, so a flood
//!   fills at most twice that); stderr that is something else (a file, a pipe,
//!   the journal, another terminal) keeps the log;
//! - every line is cleaned before it is written, whatever its target: hidden
//!   characters become visible escapes ([`crate::display`]) and a line is cut
//!   to [`LOG_LINE_CHARS`] with its original size, even when a call site forgot
//!   to quote through [`crate::display::for_log`];
//! - no ANSI colours (the cleaner would show them as escapes anyway, and a log
//!   is read later, by tools as much as people).

use crate::display;
use parley_custody_client::private_fs;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tracing_subscriber::fmt::MakeWriter;

/// A log file grows to this many bytes, then becomes `custodyd.log.1`.
pub const LOG_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// The most characters of one log line; the rest is summarized by size.
pub const LOG_LINE_CHARS: usize = 2048;

/// Where the log went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogTarget {
    /// Standard error (not the terminal that asks the human).
    Stderr,
    /// This file (the terminal that asks the human is stderr too).
    File(PathBuf),
}

/// The log could not be set up.
#[derive(Debug, thiserror::Error)]
#[error("cannot open the log file {path}: {source}; check that the data directory is writable, or redirect stderr (2>FILE)")]
pub struct LogError {
    path: PathBuf,
    #[source]
    source: io::Error,
}

/// Whether stderr is the controlling terminal (`/dev/tty`), where the
/// terminal approver asks.
pub fn stderr_is_the_prompt_terminal() -> bool {
    #[cfg(unix)]
    {
        use std::io::IsTerminal;
        let err = io::stderr();
        if !err.is_terminal() {
            return false;
        }
        // The terminal's session is ours only when it is our controlling
        // terminal (Linux refuses the question for any other terminal).
        match (nix::sys::termios::tcgetsid(&err), nix::unistd::getsid(None)) {
            (Ok(tty_session), Ok(mine)) => tty_session == mine,
            (Err(_), _) => false,
            // Cannot tell: assume the worst.
            (Ok(_), Err(_)) => true,
        }
    }
    #[cfg(not(unix))]
    {
        use std::io::IsTerminal;
        io::stderr().is_terminal()
    }
}

/// The log file's path in `data_dir`.
pub fn log_path(data_dir: &Path) -> PathBuf {
    data_dir.join("custodyd.log")
}

/// Sets up the global log for the headless daemon: to stderr, unless
/// `terminal_asks` and stderr is the terminal that asks, then to the log file
/// in `data_dir`. `RUST_LOG` filters it (default `info`). Call once.
pub fn init_daemon(data_dir: &Path, terminal_asks: bool) -> Result<LogTarget, LogError> {
    let (sink, target) = if terminal_asks && stderr_is_the_prompt_terminal() {
        let path = log_path(data_dir);
        let file = BoundedFile::open(&path, LOG_FILE_BYTES).map_err(|source| LogError {
            path: path.clone(),
            source,
        })?;
        (Sink::file(file), LogTarget::File(path))
    } else {
        (Sink::stderr(), LogTarget::Stderr)
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_ansi(false)
        .with_writer(sink)
        .try_init();
    Ok(target)
}

/// A log file that is rotated once it holds `max` bytes (one old file kept).
pub struct BoundedFile {
    path: PathBuf,
    file: File,
    size: u64,
    max: u64,
}

impl BoundedFile {
    /// Opens (or creates, mode 0600) `path` for appending.
    pub fn open(path: &Path, max: u64) -> io::Result<BoundedFile> {
        let file = open_private(path)?;
        let size = file.metadata()?.len();
        Ok(BoundedFile {
            path: path.to_path_buf(),
            file,
            size,
            max,
        })
    }

    fn rotate(&mut self) -> io::Result<()> {
        let mut old = self.path.clone().into_os_string();
        old.push(".1");
        std::fs::rename(&self.path, &old)?;
        self.file = open_private(&self.path)?;
        self.size = 0;
        Ok(())
    }
}

impl Write for BoundedFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.size > 0 && self.size + buf.len() as u64 > self.max {
            self.rotate()?;
        }
        let n = self.file.write(buf)?;
        self.size += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// `path` for appending, created 0600 or made 0600 ([`private_fs::open_append`]).
fn open_private(path: &Path) -> io::Result<File> {
    private_fs::open_append(path).map(|(file, _)| file)
}

/// One log line as written: display-safe, at most [`LOG_LINE_CHARS`], one
/// line ending in `\n`.
pub fn clean_line(raw: &[u8]) -> String {
    let text = String::from_utf8_lossy(raw);
    let body = text.strip_suffix('\n').unwrap_or(&text);
    let mut out = display::bounded(body, LOG_LINE_CHARS);
    out.push('\n');
    out
}

enum Out {
    Stderr,
    File(BoundedFile),
}

/// The tracing writer: cleans each event's text ([`clean_line`]) and
/// writes it in one piece to its target.
#[derive(Clone)]
pub struct Sink(Arc<Mutex<Out>>);

impl Sink {
    /// Lines to standard error.
    pub fn stderr() -> Sink {
        Sink(Arc::new(Mutex::new(Out::Stderr)))
    }
    /// Lines to a bounded file.
    pub fn file(f: BoundedFile) -> Sink {
        Sink(Arc::new(Mutex::new(Out::File(f))))
    }
}

/// Collects one event's text; writes it cleaned when dropped.
pub struct Line {
    sink: Sink,
    buf: Vec<u8>,
}

impl Write for Line {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // Kept whole, so the size `clean_line` reports is the real one; an
        // event is as large as what it quotes, which the frame limit bounds.
        self.buf.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        let mut text = String::new();
        for l in self.buf.split_inclusive(|&b| b == b'\n') {
            text.push_str(&clean_line(l));
        }
        let Ok(mut out) = self.sink.0.lock() else {
            return;
        };
        let _ = match &mut *out {
            Out::Stderr => io::stderr().write_all(text.as_bytes()),
            Out::File(f) => f.write_all(text.as_bytes()),
        };
    }
}

impl<'a> MakeWriter<'a> for Sink {
    type Writer = Line;
    fn make_writer(&'a self) -> Line {
        Line {
            sink: self.clone(),
            buf: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_line_cannot_move_the_cursor_or_break_the_line() {
        let l = clean_line(b"WARN request rejected: \r\x1b[2K\xc2\x9b1A\xe2\x80\xaeCOST 1.00 USD\napprove? [y/N]\n");
        assert_eq!(
            l,
            "WARN request rejected: \\u{d}\\u{1b}[2K\\u{9b}1A\\u{202e}COST 1.00 USD\\u{a}approve? [y/N]\n"
        );
    }

    #[test]
    fn a_huge_line_is_cut_with_its_size() {
        let raw = format!("x {}\n", "f".repeat(900_000));
        let l = clean_line(raw.as_bytes());
        assert!(l.ends_with("…(900002 bytes)\n"), "{}", &l[l.len() - 40..]);
        assert!(l.chars().count() < LOG_LINE_CHARS + 30);
    }

    #[test]
    fn the_log_file_is_private_and_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let path = log_path(dir.path());
        let mut f = BoundedFile::open(&path, 1000).unwrap();
        for _ in 0..100 {
            f.write_all(&[b'a'; 99]).unwrap();
            f.write_all(b"\n").unwrap();
        }
        let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        let old = dir.path().join("custodyd.log.1");
        assert!(size(&path) <= 1000 && size(&old) <= 1000);
        assert!(size(&path) + size(&old) > 0);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            for p in [&path, &old] {
                let mode = std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
                assert_eq!(mode, 0o600, "{}", p.display());
            }
        }
    }
}

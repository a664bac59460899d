//! `parley lens`: render reply frames or values as Lens (§9).
//!
//! What goes to a program is the exact Lens, byte for byte: piped or
//! redirected output, `--json`, `--ndjson`, and `--exact`. Only text for a
//! terminal is made display-safe (`parley_custody_client::display::safe`,
//! line by line, so a service's own line break is escaped while Lens's lines
//! stay), and then a note on stderr says that what is shown is not the exact
//! Lens.

use super::Report;
use crate::cli::LensArgs;
use crate::dialect;
use crate::error::CliError;
use parley_core::canonical::write_json_string_bytes;
use parley_core::json::{self, Limits};
use parley_core::lens::{self, JsonObject as _};
use parley_core::Dialect;
use serde::Serialize;
use serde_json::Value;
use std::collections::VecDeque;
use std::fmt::{self, Write as _};
use std::io::{BufRead, BufReader, IsTerminal, Read, Write};
use std::sync::mpsc::{sync_channel, Receiver};

#[derive(Serialize)]
struct Rendered {
    /// The exact Lens: what `--json` carries.
    lens: String,
    /// The text to print, when it is not `lens` (the display-safe form).
    #[serde(skip)]
    shown: Option<String>,
}

impl fmt::Display for Rendered {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.shown.as_deref().unwrap_or(&self.lens))
    }
}

/// Printed once on stderr when the terminal got the display-safe form.
const NOT_EXACT_NOTE: &str =
    "parley: stdout is a terminal, so hidden characters are shown as \\u{…} \
     escapes (and very long lines are cut): this is not the exact Lens; pipe it, or pass --exact";

/// The dialect marker a reply frame carries (§2.1), if it is a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Marker {
    /// Not a reply frame (no string `kind`): lean notation, the same in both dialects.
    NotReply,
    /// `"parley"` only.
    Parley,
    /// `"yea": 1` only.
    Yea,
    /// Neither, or both, or a `"yea"` that is not 1.
    Unclear,
}

fn marker<J: lens::Json>(v: &J) -> Marker {
    let Some(f) = v.as_object() else {
        return Marker::NotReply;
    };
    let yea = f.get("yea").map(lens::Json::view);
    let parley = f.get("parley").is_some();
    match (yea, parley) {
        (None, true) => Marker::Parley,
        (Some(lens::View::Number(n)), false) if n.as_u64() == Some(1) => Marker::Yea,
        _ if f.get("kind").and_then(J::as_str).is_none() => Marker::NotReply,
        _ => Marker::Unclear,
    }
}

/// Whether a frame renders as it is, with [`lens::render_into`]: not a
/// reply, or a reply whose marker names the dialect `--dialect` asks for
/// (or any, without the flag). A YEA frame without a string `kind` is a
/// reply too (YEA renders its members, §9.2), which that function would
/// render as a value.
fn renders_as_is<J: lens::Json>(v: &J, flag: Option<Dialect>) -> bool {
    let kind = v
        .as_object()
        .and_then(|f| f.get("kind"))
        .and_then(J::as_str)
        .is_some();
    matches!(
        (marker(v), flag),
        (Marker::NotReply, _) | (Marker::Parley, None | Some(Dialect::ParleyV1))
    ) || (kind
        && matches!(
            (marker(v), flag),
            (Marker::Yea, None | Some(Dialect::YeaV1))
        ))
}

/// The Lens lines of a reply frame in the dialect it is in. A frame's marker
/// decides; one without a marker is read in `--dialect`, or by its
/// proposals (`uses` is YEA, `cost` Parley), or, failing those, rendered both
/// ways: if the two differ, it is refused rather than guessed.
fn frame_lines(v: &Value, flag: Option<Dialect>) -> Result<Vec<String>, CliError> {
    let m = marker(v);
    if renders_as_is(v, flag) {
        return Ok(lens::render_lines(v));
    }
    let yea = v.get("yea").is_some_and(|y| y == &Value::from(1));
    let signs: Vec<dialect::Sign> = match m {
        Marker::Parley => vec![(Dialect::ParleyV1, "the frame's \"parley\" marker".into())],
        Marker::Yea => vec![(Dialect::YeaV1, "the frame's \"yea\": 1".into())],
        _ if yea && v.get("parley").is_some() => {
            return Err(CliError::bad(
                "the frame has both a \"parley\" and a \"yea\" marker; a frame is in one dialect (§2.1)",
            ))
        }
        _ => v
            .get("proposals")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .flat_map(|p| dialect::proposal_signs(p, "a proposal"))
            .collect(),
    };
    let as_yea = || {
        let mut y = v.clone();
        if let Some(o) = y.as_object_mut() {
            if !o.contains_key("yea") {
                o.insert("yea".into(), Value::from(1));
            }
        }
        if y.get("kind").is_some_and(Value::is_string) {
            lens::render_lines(&y)
        } else {
            // Every YEA frame is a reply, with or without a string kind;
            // `render_lines` would take this one for a plain value.
            lens::render_reply(&y)
                .split('\n')
                .map(str::to_string)
                .collect::<Vec<_>>()
        }
    };
    match dialect::decide(flag, &signs)? {
        Some(Dialect::ParleyV1) => Ok(lens::render_lines(v)),
        Some(Dialect::YeaV1) => Ok(as_yea()),
        None => {
            let (parley, yea) = (lens::render_lines(v), as_yea());
            if parley.join("\n") == yea.join("\n") {
                Ok(parley)
            } else {
                Err(dialect::ambiguous(
                    "the Lens of this frame (it has no \"parley\" or \"yea\": 1 marker)",
                ))
            }
        }
    }
}

pub fn run(a: LensArgs, json: bool, flag: Option<Dialect>) -> Result<Report, CliError> {
    if a.ndjson {
        return ndjson(a.file.as_deref(), a.value, flag);
    }
    let v = crate::input::read_json(a.file.as_deref())?;
    let lines = if a.value {
        lens::lean_lines(&v)
    } else {
        frame_lines(&v, flag)?
    };
    let exact = lines.join("\n");
    let mut shown = None;
    if !json && !a.exact && std::io::stdout().is_terminal() {
        let safe: Vec<String> = lines
            .iter()
            .map(|l| parley_custody_client::display::safe(l))
            .collect();
        let safe = safe.join("\n");
        if safe != exact {
            eprintln!("{NOT_EXACT_NOTE}");
            shown = Some(safe);
        }
    }
    Ok(Report::new(&Rendered { lens: exact, shown }, 0))
}

/// One frame per line in, one JSON string per line out. A bad line prints
/// `null` in its place (so output lines stay aligned with input lines), is
/// reported on stderr with its line number, and makes the exit code 2; the
/// other lines are still rendered.
///
/// Parsing and rendering are nearly all the work, so they run on up to two
/// worker threads: this thread cuts the input into batches of whole lines
/// (each line still bounded by the 1 MiB frame limit, without buffering a
/// longer one), hands them out in turn, and writes the results back in the
/// same order, so the output is exactly that of rendering line by line.
fn ndjson(path: Option<&str>, as_value: bool, flag: Option<Dialect>) -> Result<Report, CliError> {
    let what = path.unwrap_or("stdin").to_string();
    let reader: Box<dyn Read> = match path {
        None | Some("-") => Box::new(std::io::stdin().lock()),
        Some(p) => Box::new(std::fs::File::open(p).map_err(|source| CliError::Io {
            context: format!("opening {p}"),
            source,
        })?),
    };
    let mut input = BufReader::with_capacity(1 << 20, reader);
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(2));
    let mut failed = 0usize;
    std::thread::scope(|scope| -> Result<(), CliError> {
        let what = what.as_str();
        let mut jobs = Vec::with_capacity(workers);
        let mut results = Vec::with_capacity(workers);
        for _ in 0..workers {
            let (job_tx, job_rx) = sync_channel::<Batch>(IN_FLIGHT_PER_WORKER);
            let (done_tx, done_rx) = sync_channel::<Done>(IN_FLIGHT_PER_WORKER);
            scope.spawn(move || {
                let mut text = String::new();
                let mut arena = json::Arena::new();
                for batch in job_rx {
                    if done_tx
                        .send(batch.render(what, as_value, flag, &mut text, &mut arena))
                        .is_err()
                    {
                        break;
                    }
                }
            });
            jobs.push(job_tx);
            results.push(done_rx);
        }
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        // Which worker has each batch in flight, oldest first.
        let mut in_flight = VecDeque::new();
        // Buffers of written batches, reused: fresh megabyte buffers would
        // cost a page fault per 4 KiB.
        let mut spare: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let mut line_no = 0usize;
        let mut next = 0;
        let mut more = true;
        while more {
            let (data, rendered) = spare.pop().unwrap_or_default();
            let mut batch = Batch {
                data,
                lines: Vec::new(),
                out: rendered,
            };
            batch.data.clear();
            more = batch
                .fill(&mut input, &mut line_no)
                .map_err(|source| CliError::Io {
                    context: format!("reading {what}"),
                    source,
                })?;
            if batch.lines.is_empty() {
                continue;
            }
            if in_flight.len() == workers * IN_FLIGHT_PER_WORKER {
                let w: usize = in_flight.pop_front().unwrap_or_default();
                failed += write_done(&results[w], &mut out, &mut spare)?;
            }
            if jobs[next].send(batch).is_err() {
                break; // Unreachable: workers only stop when we do.
            }
            in_flight.push_back(next);
            next = (next + 1) % workers;
        }
        drop(jobs);
        while let Some(w) = in_flight.pop_front() {
            failed += write_done(&results[w], &mut out, &mut spare)?;
        }
        out.flush().map_err(write_error)
    })?;
    Ok(Report::done(if failed > 0 { 2 } else { 0 }))
}

/// Batches a worker may hold (queued or being rendered) at once.
const IN_FLIGHT_PER_WORKER: usize = 2;

/// Input bytes per batch: large enough that handing batches between threads
/// costs nothing, small enough to keep both workers busy to the end.
const BATCH_BYTES: usize = 1 << 20;

/// Whole lines of input, in order, and a buffer for their output.
struct Batch {
    data: Vec<u8>,
    lines: Vec<Line>,
    out: Vec<u8>,
}

/// One non-blank input line of a batch, with its 1-based line number.
enum Line {
    /// The line (without `\n` and a final `\r`) is `data[start..end]`.
    Text { n: usize, start: usize, end: usize },
    /// The line is over the frame limit; its bytes were not kept.
    TooLarge { n: usize },
}

/// A rendered batch: output lines, stderr messages, how many lines failed,
/// and the batch's input buffer, to reuse with the output buffer.
struct Done {
    out: Vec<u8>,
    errors: String,
    failed: usize,
    data: Vec<u8>,
}

impl Batch {
    /// Appends input lines until the batch is full; false at end of input.
    /// Blank lines are skipped (only counted); over-long lines are kept as
    /// [`Line::TooLarge`] without their bytes.
    fn fill(&mut self, input: &mut impl BufRead, line_no: &mut usize) -> std::io::Result<bool> {
        let max = Limits::FRAME.max_bytes;
        while self.data.len() < BATCH_BYTES {
            let start = self.data.len();
            let Some(fits) = append_line_bounded(input, &mut self.data, max)? else {
                return Ok(false);
            };
            *line_no += 1;
            let n = *line_no;
            if !fits {
                self.data.truncate(start);
                self.lines.push(Line::TooLarge { n });
                continue;
            }
            let line = &self.data[start..];
            let body = line.strip_suffix(b"\r").unwrap_or(line);
            if body.iter().all(u8::is_ascii_whitespace) {
                self.data.truncate(start);
                continue;
            }
            let end = start + body.len();
            self.lines.push(Line::Text { n, start, end });
        }
        Ok(true)
    }

    /// Renders every line; `text` and `arena` are scratch space reused
    /// across lines (the arena holds one line's document at a time).
    fn render(
        self,
        what: &str,
        as_value: bool,
        flag: Option<Dialect>,
        text: &mut String,
        arena: &mut json::Arena,
    ) -> Done {
        let mut out = self.out;
        out.clear();
        let mut done = Done {
            out,
            errors: String::new(),
            failed: 0,
            data: Vec::new(),
        };
        for line in &self.lines {
            arena.reset();
            let arena = &*arena;
            let (n, parsed) = match *line {
                // A borrowed tree in the arena: the same checks and the same
                // Lens as a `Value`, without a heap allocation per container
                // (see `json::Node`).
                Line::Text { n, start, end } => (
                    n,
                    json::parse_node(&self.data[start..end], Limits::FRAME, arena),
                ),
                Line::TooLarge { n } => (
                    n,
                    Err(json::JsonError::TooLarge {
                        // What the line-by-line reader held: one byte over.
                        size: Limits::FRAME.max_bytes + 1,
                        limit: Limits::FRAME.max_bytes,
                    }),
                ),
            };
            // A frame whose dialect is not plain from its marker (rare) is
            // read again as a `Value` and decided as `parley lens` does.
            let parsed = parsed.map_err(|e| e.to_string()).and_then(|v| {
                if as_value {
                    lens::lean_into(&v, text);
                } else if renders_as_is(&v, flag) {
                    lens::render_into(&v, text);
                } else if let Line::Text { start, end, .. } = *line {
                    let value = json::parse(&self.data[start..end], Limits::FRAME)
                        .map_err(|e| e.to_string())?;
                    *text = frame_lines(&value, flag)
                        .map_err(|e| e.to_string())?
                        .join("\n");
                }
                Ok(())
            });
            match parsed {
                Ok(()) => {
                    // As a JSON string: the escapes `serde_json` writes.
                    write_json_string_bytes(text, &mut done.out);
                }
                Err(e) => {
                    done.failed += 1;
                    let _ = writeln!(done.errors, "parley: {what}:{n}: {e}");
                    done.out.extend_from_slice(b"null");
                }
            }
            done.out.push(b'\n');
        }
        done.data = self.data;
        done
    }
}

/// Waits for the next rendered batch from `results`, writes it, and returns
/// how many of its lines failed.
fn write_done(
    results: &Receiver<Done>,
    out: &mut impl Write,
    spare: &mut Vec<(Vec<u8>, Vec<u8>)>,
) -> Result<usize, CliError> {
    let Ok(done) = results.recv() else {
        return Ok(0); // Unreachable: a worker answers every batch it takes.
    };
    if !done.errors.is_empty() {
        eprint!("{}", done.errors);
    }
    out.write_all(&done.out).map_err(write_error)?;
    spare.push((done.data, done.out));
    Ok(done.failed)
}

fn write_error(source: std::io::Error) -> CliError {
    CliError::Io {
        context: "writing output".into(),
        source,
    }
}

/// Reads one line (without its `\n`) into `buf`. A line longer than `max`
/// bytes is skipped to its end without being buffered whole: `buf` then holds
/// at most `max + 1` bytes and the result is `Some(false)`. `None` at EOF.
#[cfg(test)]
fn read_line_bounded(
    input: &mut impl BufRead,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Option<bool>> {
    buf.clear();
    append_line_bounded(input, buf, max)
}

/// [`read_line_bounded`], appending the line to `buf` instead: at most
/// `max + 1` of its bytes are appended.
fn append_line_bounded(
    input: &mut impl BufRead,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Option<bool>> {
    let start = buf.len();
    let mut seen = 0usize;
    let mut any = false;
    loop {
        let chunk = input.fill_buf()?;
        if chunk.is_empty() {
            return Ok(any.then_some(seen <= max));
        }
        any = true;
        let (part, done) = match find_newline(chunk) {
            Some(i) => (&chunk[..i], Some(i + 1)),
            None => (chunk, None),
        };
        if seen <= max {
            let room = (max + 1).saturating_sub(buf.len() - start);
            buf.extend_from_slice(&part[..part.len().min(room)]);
        }
        seen = seen.saturating_add(part.len());
        let used = done.unwrap_or(chunk.len());
        input.consume(used);
        if done.is_some() {
            return Ok(Some(seen <= max));
        }
    }
}

/// The index of the first `\n` in `bytes`, eight bytes at a time (the
/// input is 100 MB and more; a byte loop would cost as much as copying it).
fn find_newline(bytes: &[u8]) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let mut chunks = bytes.chunks_exact(8);
    for (k, chunk) in (&mut chunks).enumerate() {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let x = u64::from_le_bytes(word) ^ (LO * u64::from(b'\n'));
        // High bit of each zero byte; exact for the lowest one.
        let zero = x.wrapping_sub(LO) & !x & HI;
        if zero != 0 {
            return Some(k * 8 + (zero.trailing_zeros() / 8) as usize);
        }
    }
    let tail = bytes.len() - chunks.remainder().len();
    chunks
        .remainder()
        .iter()
        .position(|&b| b == b'\n')
        .map(|i| tail + i)
}

#[cfg(test)]
mod tests {
    use super::read_line_bounded;

    #[test]
    fn long_lines_are_skipped_without_buffering() {
        let data = format!("{}\n{{\"a\":1}}\nlast", "x".repeat(5000));
        let mut r = std::io::BufReader::with_capacity(64, data.as_bytes());
        let mut buf = Vec::new();
        assert_eq!(
            read_line_bounded(&mut r, &mut buf, 100).unwrap(),
            Some(false)
        );
        assert!(buf.len() <= 101);
        assert_eq!(
            read_line_bounded(&mut r, &mut buf, 100).unwrap(),
            Some(true)
        );
        assert_eq!(buf, b"{\"a\":1}");
        assert_eq!(
            read_line_bounded(&mut r, &mut buf, 100).unwrap(),
            Some(true)
        );
        assert_eq!(buf, b"last");
        assert_eq!(read_line_bounded(&mut r, &mut buf, 100).unwrap(), None);
    }

    #[test]
    fn output_strings_are_escaped_as_serde_json_escapes_them() {
        let mut all: String = (0u32..0x800).filter_map(char::from_u32).collect();
        all.push_str("\u{2028}\u{202e}\u{e0041}\u{10ffff} \\ \" end");
        for s in [all.as_str(), "", "plain", "a\nb"] {
            let mut ours = Vec::new();
            super::write_json_string_bytes(s, &mut ours);
            assert_eq!(ours, serde_json::to_string(s).unwrap().as_bytes());
        }
    }

    #[test]
    fn newlines_are_found_in_any_position() {
        for len in 0..40 {
            for at in 0..=len {
                let mut bytes = vec![b'x'; len];
                if at < len {
                    bytes[at] = b'\n';
                }
                let want = bytes.iter().position(|&b| b == b'\n');
                assert_eq!(super::find_newline(&bytes), want);
            }
        }
    }
}

//! `parley lens`: render reply frames or values as Lens (§9).

use super::Report;
use crate::cli::LensArgs;
use crate::error::CliError;
use parley_core::json::{self, Limits};
use parley_core::lens;
use serde::Serialize;
use serde_json::Value;
use std::fmt;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};

#[derive(Serialize)]
struct Rendered {
    lens: String,
}

impl fmt::Display for Rendered {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.lens)
    }
}

fn render(v: &Value, as_value: bool) -> String {
    if as_value {
        lens::lean(v)
    } else {
        lens::render(v)
    }
}

pub fn run(a: LensArgs) -> Result<Report, CliError> {
    if a.ndjson {
        return ndjson(a.file.as_deref(), a.value);
    }
    let v = crate::input::read_json(a.file.as_deref())?;
    Ok(Report::new(
        &Rendered {
            lens: render(&v, a.value),
        },
        0,
    ))
}

/// One frame per line in, one JSON string per line out. A bad line prints
/// `null` in its place (so output lines stay aligned with input lines), is
/// reported on stderr with its line number, and makes the exit code 2; the
/// other lines are still rendered.
fn ndjson(path: Option<&str>, as_value: bool) -> Result<Report, CliError> {
    let what = path.unwrap_or("stdin").to_string();
    let reader: Box<dyn Read> = match path {
        None | Some("-") => Box::new(std::io::stdin().lock()),
        Some(p) => Box::new(std::fs::File::open(p).map_err(|source| CliError::Io {
            context: format!("opening {p}"),
            source,
        })?),
    };
    let mut input = BufReader::with_capacity(1 << 20, reader);
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 20, stdout.lock());
    let io = |source| CliError::Io {
        context: "writing output".into(),
        source,
    };
    let mut line = Vec::with_capacity(4096);
    let mut failed = 0usize;
    let mut n = 0usize;
    while let Some(fits) = read_line_bounded(&mut input, &mut line, Limits::FRAME.max_bytes)
        .map_err(|source| CliError::Io {
            context: format!("reading {what}"),
            source,
        })?
    {
        n += 1;
        let body = line.strip_suffix(b"\r").unwrap_or(&line);
        if fits && body.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let parsed = if fits {
            json::parse(body, Limits::FRAME)
        } else {
            Err(json::JsonError::TooLarge {
                size: line.len(),
                limit: Limits::FRAME.max_bytes,
            })
        };
        match parsed {
            Ok(v) => {
                let text = render(&v, as_value);
                serde_json::to_writer(&mut out, &text).map_err(|e| io(e.into()))?;
            }
            Err(e) => {
                failed += 1;
                eprintln!("parley: {what}:{n}: {e}");
                out.write_all(b"null").map_err(io)?;
            }
        }
        out.write_all(b"\n").map_err(io)?;
    }
    out.flush().map_err(io)?;
    Ok(Report::done(if failed > 0 { 2 } else { 0 }))
}

/// Reads one line (without its `\n`) into `buf`. A line longer than `max`
/// bytes is skipped to its end without being buffered whole: `buf` then holds
/// at most `max + 1` bytes and the result is `Some(false)`. `None` at EOF.
fn read_line_bounded(
    input: &mut impl BufRead,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Option<bool>> {
    buf.clear();
    let mut seen = 0usize;
    let mut any = false;
    loop {
        let chunk = input.fill_buf()?;
        if chunk.is_empty() {
            return Ok(any.then_some(seen <= max));
        }
        any = true;
        let (part, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (&chunk[..i], Some(i + 1)),
            None => (chunk, None),
        };
        if seen <= max {
            let room = (max + 1).saturating_sub(buf.len());
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
}

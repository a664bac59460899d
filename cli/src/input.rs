//! Reading command input from a file or standard input, bounded.

use crate::error::CliError;
use parley_core::json::{self, Limits};
use serde_json::Value;
use std::io::Read;

/// The largest single document a command reads (a frame is at most 1 MiB by
/// §2.1; values given to `lens --value` and `est` may be larger).
pub const MAX_INPUT: usize = 64 << 20;

/// Reads all of `path` (`-` or none = stdin), at most [`MAX_INPUT`] bytes.
pub fn read_all(path: Option<&str>) -> Result<Vec<u8>, CliError> {
    let what = path.unwrap_or("-");
    let io = |source| CliError::Io {
        context: format!("reading {what}"),
        source,
    };
    let mut buf = Vec::new();
    let reader: Box<dyn Read> = match path {
        None | Some("-") => Box::new(std::io::stdin().lock()),
        Some(p) => Box::new(std::fs::File::open(p).map_err(io)?),
    };
    reader
        .take(MAX_INPUT as u64 + 1)
        .read_to_end(&mut buf)
        .map_err(io)?;
    if buf.len() > MAX_INPUT {
        return Err(CliError::bad(format!(
            "{what} is larger than {} MiB",
            MAX_INPUT >> 20
        )));
    }
    Ok(buf)
}

/// Reads one JSON document strictly (duplicate keys and deep nesting refused).
pub fn read_json(path: Option<&str>) -> Result<Value, CliError> {
    let bytes = read_all(path)?;
    json::parse(
        &bytes,
        Limits {
            max_depth: 64,
            max_bytes: MAX_INPUT,
        },
    )
    .map_err(|e| CliError::bad(format!("{}: {e}", path.unwrap_or("stdin"))))
}

/// Reads text (UTF-8).
pub fn read_text(path: Option<&str>) -> Result<String, CliError> {
    String::from_utf8(read_all(path)?)
        .map_err(|_| CliError::bad(format!("{} is not UTF-8 text", path.unwrap_or("stdin"))))
}

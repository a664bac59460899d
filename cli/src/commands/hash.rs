//! `parley hash`: a proposal's §5.1 hash.

use super::Report;
use crate::cli::FileArg;
use crate::error::CliError;
use serde::Serialize;
use std::fmt;

#[derive(Serialize)]
struct HashResult {
    hash: String,
    /// The `hash` the proposal claims, if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    claimed: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    matches: Option<bool>,
}

impl fmt::Display for HashResult {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}", self.hash)?;
        if self.matches == Some(false) {
            write!(
                f,
                "\n(the proposal claims {:?}, which does not match)",
                self.claimed.as_deref().unwrap_or("")
            )?;
        }
        Ok(())
    }
}

pub fn run(a: FileArg) -> Result<Report, CliError> {
    let v = crate::input::read_json(a.file.as_deref())?;
    let hash = parley_core::proposal::proposal_hash(&v).map_err(CliError::bad)?;
    let claimed = v.get("hash").and_then(|h| h.as_str()).map(str::to_string);
    let matches = claimed.as_ref().map(|c| *c == hash);
    // A proposal whose claimed hash is wrong is refused: exit 1.
    let exit = if matches == Some(false) { 1 } else { 0 };
    Ok(Report::new(
        &HashResult {
            hash,
            claimed,
            matches,
        },
        exit,
    ))
}

//! `parley hash`: a proposal's §5.1 hash.

use super::Report;
use crate::cli::FileArg;
use crate::error::CliError;
use parley_core::quantity::Uses;
use parley_core::Dialect;
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

/// Checks the proposal's usage field under its dialect: a YEA proposal's
/// `uses` must be well formed (§5.1: a malformed one makes the proposal
/// invalid), and a field of the other dialect is refused rather than hashed
/// as if it were shown. The hash itself is the same in both dialects, so a
/// proposal with neither `uses` nor `cost` needs no dialect.
fn check_usage(v: &serde_json::Value, flag: Option<Dialect>) -> Result<(), CliError> {
    let signs = crate::dialect::proposal_signs(v, "the proposal");
    match crate::dialect::decide(flag, &signs)? {
        Some(Dialect::YeaV1) => match v.get("uses") {
            Some(u) => Uses::from_value(u).map(|_| ()).map_err(|e| {
                // The names in `e` are the service's: shown display-safe.
                CliError::bad(format!(
                    "the proposal is invalid: its `uses` is malformed ({}); a YEA v1 service must not send it (§5.1)",
                    super::visible(&e.to_string())
                ))
            }),
            None => Ok(()),
        },
        _ => Ok(()),
    }
}

pub fn run(a: FileArg, dialect: Option<Dialect>) -> Result<Report, CliError> {
    let v = crate::input::read_json(a.file.as_deref())?;
    check_usage(&v, dialect)?;
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

//! `parley est`: the §8 token estimate of a text.

use super::Report;
use crate::cli::FileArg;
use crate::error::CliError;
use serde::Serialize;
use std::fmt;

#[derive(Serialize)]
struct Estimate {
    est: usize,
    chars: usize,
}

impl fmt::Display for Estimate {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}", self.est)
    }
}

pub fn run(a: FileArg) -> Result<Report, CliError> {
    let text = crate::input::read_text(a.file.as_deref())?;
    let est = parley_core::estimate::est(&text);
    Ok(Report::new(
        &Estimate {
            est,
            chars: text.chars().count(),
        },
        0,
    ))
}

//! One module per command. Each builds a result that is both `Display`
//! (text) and `Serialize` (`--json`), wrapped in a [`Report`].

mod est;
mod hash;
mod inspect;
mod lens;
mod verify;

use crate::cli::{Cli, Command};
use crate::error::CliError;
use serde::Serialize;
use std::fmt::Display;
use std::io::Write;

/// What a command produced: its two renderings and its exit code.
pub struct Report {
    text: String,
    json: serde_json::Value,
    exit: u8,
}

impl Report {
    /// From a result value that renders both ways.
    pub fn new<T: Display + Serialize>(value: &T, exit: u8) -> Report {
        Report {
            text: value.to_string(),
            json: serde_json::to_value(value).unwrap_or(serde_json::Value::Null),
            exit,
        }
    }

    /// A command that already wrote its output (streaming).
    pub fn done(exit: u8) -> Report {
        Report {
            text: String::new(),
            json: serde_json::Value::Null,
            exit,
        }
    }

    pub fn print(&self, out: &mut impl Write, json: bool) -> std::io::Result<()> {
        if json && !self.json.is_null() {
            writeln!(out, "{}", self.json)
        } else if !self.text.is_empty() {
            writeln!(out, "{}", self.text)
        } else {
            Ok(())
        }
    }

    pub fn exit_code(&self) -> u8 {
        self.exit
    }
}

pub fn run(cli: Cli) -> Result<Report, CliError> {
    match cli.command {
        Command::Lens(a) => lens::run(a),
        Command::Inspect(a) => inspect::run(a),
        Command::Verify(a) => verify::run(a),
        Command::Hash(a) => hash::run(a),
        Command::Est(a) => est::run(a),
    }
}

/// Reads a token argument (`-` = standard input).
pub(crate) fn token_arg(arg: &str) -> Result<String, CliError> {
    if arg == "-" {
        Ok(crate::input::read_text(None)?.trim().to_string())
    } else {
        Ok(arg.trim().to_string())
    }
}

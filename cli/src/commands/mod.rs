//! One module per command. Each builds a result that is both `Display`
//! (text) and `Serialize` (`--json`), wrapped in a [`Report`].

mod approve;
mod audit;
mod custody_freeze;
mod custody_keys;
mod custody_revoke;
mod delegate;
mod est;
mod generated;
mod grant;
mod hash;
mod init;
mod inspect;
mod lens;
mod verify;
mod whoami;

// `$PARLEY_HOME` handling lives in `src/home.rs`; declared here rather than
// in `main.rs` so the commands that use it own its declaration.

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

    /// A command that wrote its output itself (a completion script).
    pub fn silent(exit: u8) -> Report {
        Report {
            text: String::new(),
            json: serde_json::Value::Null,
            exit,
        }
    }
}

pub fn run(cli: Cli) -> Result<Report, CliError> {
    let socket = cli.socket.as_deref();
    let dialect = cli.dialect;
    match cli.command {
        Command::Lens(a) => lens::run(a, cli.json, dialect),
        Command::Inspect(a) => inspect::run(a),
        Command::Verify(a) => verify::run(a, dialect),
        Command::Hash(a) => hash::run(a, dialect),
        Command::Est(a) => est::run(a),
        Command::Init(a) => init::run(a, dialect),
        Command::Whoami => whoami::run(socket),
        Command::Approve(a) => approve::run(a, socket, dialect),
        Command::Grant(a) => grant::run(a, socket, dialect),
        Command::Delegate(a) => delegate::run(a, dialect),
        Command::Audit(a) => audit::run(a, cli.json),
        Command::Custody(a) => custody_keys::run(a),
        Command::Completions { shell } => generated::completions(shell),
        Command::Manpages { dir } => generated::manpages(&dir),
    }
}

/// Runs the custody client on a single-threaded runtime: the CLI makes one
/// request at a time and needs no worker threads.
pub(crate) fn block_on<F: std::future::Future>(fut: F) -> Result<F::Output, CliError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|source| CliError::Io {
            context: "starting the async runtime".into(),
            source,
        })?;
    Ok(rt.block_on(fut))
}

/// Now, in unix seconds (the CLI's only clock read for caveats and audit).
pub(crate) fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Text from elsewhere (a service, custody's log), made safe for a terminal:
/// control, bidi and zero-width characters are shown as `\u{…}`.
pub(crate) fn visible(s: &str) -> String {
    parley_custody_client::display::safe(s)
}

/// Reads a token argument (`-` = standard input).
pub(crate) fn token_arg(arg: &str) -> Result<String, CliError> {
    if arg == "-" {
        Ok(crate::input::read_text(None)?.trim().to_string())
    } else {
        Ok(arg.trim().to_string())
    }
}

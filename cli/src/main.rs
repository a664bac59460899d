//! `parley`: the command-line face of Parley Custody.
//!
//! Every command builds one result value that prints as text or, with
//! `--json`, as JSON; exit codes are mapped from the error type in one place
//! (0 ok, 1 refused, 2 bad input).
#![forbid(unsafe_code)]

mod cli;
mod commands;
mod dialect;
mod error;
mod home;
mod input;

use clap::Parser;
use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    let json = args.json;
    let result = commands::run(args);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match result {
        Ok(report) => {
            let _ = report.print(&mut out, json);
            let _ = out.flush();
            ExitCode::from(report.exit_code())
        }
        Err(e) => {
            let _ = out.flush();
            eprintln!("parley: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

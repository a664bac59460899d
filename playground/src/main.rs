//! `parley-playground`: `serve`, `agent` and `demo` (see `docs/playground.md`).
#![forbid(unsafe_code)]

use clap::Parser;
use parley_playground::cli::Cli;
use parley_playground::commands;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("parley-playground: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(commands::run(cli.command)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("parley-playground: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

//! `parley-custody-setup`: the one privileged helper of Parley Custody. It
//! lets another OS user's agents reach your custody (a group, two
//! memberships, a socket directory) and does nothing else. The app and
//! `parley-custodyd agent-user` run it through polkit:
//! `pkexec parley-custody-setup agent-user --user NAME --yes`; it only acts
//! for the user who asked (see `parley_custody::agent_access`).
#![forbid(unsafe_code)]

use clap::{Parser, Subcommand};
use parley_custody::agent_access::{self, Request, DEFAULT_GROUP};
use std::path::PathBuf;
use std::process::ExitCode;

/// Parley Custody's privileged set-up helper (run it through pkexec).
#[derive(Debug, Parser)]
#[command(name = "parley-custody-setup", version)]
struct Args {
    #[command(subcommand)]
    what: What,
}

#[derive(Debug, Subcommand)]
enum What {
    /// Let USER's agents connect to your custody: create the agents group if
    /// needed, add USER and you to it, make a socket directory for you.
    AgentUser {
        /// The OS user the agents run as (it must exist).
        #[arg(long)]
        user: String,
        /// The OS user custody runs as (default: the user who ran pkexec).
        #[arg(long = "custody-user")]
        custody_user: Option<String>,
        /// The agents group.
        #[arg(long, default_value = DEFAULT_GROUP)]
        group: String,
        /// The socket directory (default: /srv/parley-custody/<custody user>).
        #[arg(long = "socket-dir")]
        socket_dir: Option<PathBuf>,
        /// Only print what would change.
        #[arg(long = "dry-run", conflicts_with = "yes")]
        dry_run: bool,
        /// Carry it out (the caller showed the plan and the human agreed).
        #[arg(long)]
        yes: bool,
    },
}

fn main() -> ExitCode {
    let Args { what } = Args::parse();
    let What::AgentUser {
        user,
        custody_user,
        group,
        socket_dir,
        dry_run,
        yes,
    } = what;
    let caller = std::env::var("PKEXEC_UID")
        .ok()
        .and_then(|v| v.parse::<u32>().ok());
    let custody_user = match custody_user.or_else(|| {
        let uid = caller.unwrap_or_else(|| nix::unistd::Uid::current().as_raw());
        nix::unistd::User::from_uid(uid.into())
            .ok()
            .flatten()
            .map(|u| u.name)
    }) {
        Some(u) => u,
        None => {
            eprintln!(
                "parley-custody-setup: cannot tell which user runs custody: pass --custody-user"
            );
            return ExitCode::from(2);
        }
    };
    let request = Request {
        agent_user: user,
        custody_user,
        group,
        socket_dir,
    };
    let plan = match agent_access::plan(request, caller) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("parley-custody-setup: {e}");
            return ExitCode::from(2);
        }
    };
    print!("{}", plan.describe());
    println!("socket: {}", plan.socket_path().display());
    if dry_run || plan.steps.is_empty() {
        return ExitCode::SUCCESS;
    }
    if !yes {
        eprintln!("parley-custody-setup: nothing changed; run again with --yes to carry this out");
        return ExitCode::from(1);
    }
    if !nix::unistd::Uid::effective().is_root() {
        eprintln!("parley-custody-setup: these steps need root: run it as `pkexec parley-custody-setup …`");
        return ExitCode::from(2);
    }
    match agent_access::apply(&plan) {
        Ok(()) => {
            println!("done");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("parley-custody-setup: {e}");
            ExitCode::from(2)
        }
    }
}

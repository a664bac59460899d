//! `parley-custody-setup`: the one privileged helper of Parley Custody. It
//! lets another OS user's agents reach your custody (a group, two
//! memberships, a socket directory), and names a user as an owner of
//! custody's polkit actions so that their OS prompt can name what is signed
//! (`prompt-owner`); nothing else. The app and `parley-custodyd` run it
//! through polkit (`pkexec parley-custody-setup agent-user --user NAME
//! --yes`, `pkexec parley-custody-setup prompt-owner`); it only acts for the
//! user who asked (see `parley_custody::agent_access`,
//! `parley_custody::prompt_owners`).
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
    /// Let your custody's OS prompt name what is signed: record you in
    /// /etc/parley-custody/prompt-owners and name every user listed there
    /// as an owner of custody's polkit actions (the installed policy file).
    PromptOwner {
        /// The user to add, when run as root directly (under pkexec: only
        /// the user who ran pkexec).
        #[arg(long)]
        user: Option<String>,
        /// Add nobody: apply the file again (the package does this after
        /// every install or upgrade, which puts the shipped policy back).
        #[arg(long, conflicts_with = "user")]
        reapply: bool,
        /// Read and write under this directory instead of / (tests; refused
        /// under pkexec).
        #[arg(long, hide = true)]
        root: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    let Args { what } = Args::parse();
    let caller = std::env::var("PKEXEC_UID")
        .ok()
        .and_then(|v| v.parse::<u32>().ok());
    match what {
        What::PromptOwner {
            user,
            reapply,
            root,
        } => prompt_owner(caller, user, reapply, root),
        What::AgentUser {
            user,
            custody_user,
            group,
            socket_dir,
            dry_run,
            yes,
        } => agent_user(caller, user, custody_user, group, socket_dir, dry_run, yes),
    }
}

/// `prompt-owner`: who is added, checked, then the file and the policy.
fn prompt_owner(
    caller: Option<u32>,
    user: Option<String>,
    reapply: bool,
    root: Option<PathBuf>,
) -> ExitCode {
    use parley_custody::prompt_owners::{self, Places};
    let fail = |e: &dyn std::fmt::Display| {
        eprintln!("parley-custody-setup: {e}");
        ExitCode::from(2)
    };
    if caller.is_some() && root.is_some() {
        return fail(&"--root is for tests run by root, never through pkexec");
    }
    let caller_name = caller.map(|uid| {
        nix::unistd::User::from_uid(uid.into())
            .ok()
            .flatten()
            .map(|u| u.name)
    });
    let who =
        match (caller_name, user, reapply) {
            (_, _, true) => None,
            (Some(None), _, _) => return fail(&"the user who ran pkexec has no name"),
            (Some(Some(name)), Some(asked), _) if asked != name => {
                return fail(&format!(
                    "through pkexec it adds only you ({name}), not {asked}"
                ))
            }
            (Some(Some(name)), _, _) => Some(name),
            (None, Some(asked), _) => Some(asked),
            (None, None, false) => return fail(
                &"name the user: prompt-owner --user NAME (or run it through pkexec as that user)",
            ),
        };
    if who.as_deref() == Some("root") {
        println!("root needs no entry: polkit takes root's details already");
        return ExitCode::SUCCESS;
    }
    if let Some(w) = &who {
        if nix::unistd::User::from_name(w).ok().flatten().is_none() && root.is_none() {
            return fail(&format!("no such user: {w}"));
        }
    }
    if !nix::unistd::Uid::effective().is_root() && root.is_none() {
        return fail(&"this needs root: run it as `pkexec parley-custody-setup prompt-owner`");
    }
    let mut places = Places::default();
    if let Some(r) = &root {
        places.owners_file = r.join(prompt_owners::OWNERS_FILE.trim_start_matches('/'));
        places.policy = r.join(prompt_owners::INSTALLED_POLICY.trim_start_matches('/'));
    }
    match prompt_owners::apply(&places, who.as_deref()) {
        Ok(owners) if owners.is_empty() => {
            println!("no prompt owners in {}", places.owners_file.display());
            ExitCode::SUCCESS
        }
        Ok(owners) => {
            println!(
                "custody's OS prompt names the decision for: {}",
                owners.join(" ")
            );
            ExitCode::SUCCESS
        }
        Err(e) => fail(&e),
    }
}

/// `agent-user`: plan, show, and (with --yes, as root) carry it out.
fn agent_user(
    caller: Option<u32>,
    user: String,
    custody_user: Option<String>,
    group: String,
    socket_dir: Option<PathBuf>,
    dry_run: bool,
    yes: bool,
) -> ExitCode {
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

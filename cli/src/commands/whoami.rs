//! `parley whoami`: this agent's public key (from `$PARLEY_HOME/agent.key`)
//! and, if custody answers, the principals it holds. Custody being down is
//! reported, not an error: the agent key alone is useful.

use super::Report;
use crate::error::CliError;
use crate::home;
use parley_custody_client::client::{Client, Timeouts};
use parley_custody_client::protocol::{Principal, Reply};
use serde::Serialize;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `whoami` is interactive: it should not hang for long on a stuck custody.
const WHOAMI_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Serialize)]
struct CustodyView {
    reachable: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    socket: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<u64>,
    principals: Vec<Principal>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

#[derive(Serialize)]
struct WhoAmI {
    home: PathBuf,
    agent: Option<String>,
    agent_key_file: PathBuf,
    custody: CustodyView,
}

impl fmt::Display for WhoAmI {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match &self.agent {
            Some(k) => writeln!(f, "agent: {k}")?,
            None => writeln!(
                f,
                "agent: no key at {} (run `parley init`)",
                self.agent_key_file.display()
            )?,
        }
        let c = &self.custody;
        if !c.reachable {
            return write!(
                f,
                "custody: not reachable: {}",
                c.error.as_deref().unwrap_or("unknown error")
            );
        }
        if let Some(s) = &c.socket {
            write!(f, "custody: {}", s.display())?;
        }
        if c.principals.is_empty() {
            return write!(f, "\nprincipals: none yet (create one in the Parley Custody app, or `parley custody keys create --label NAME` as custody's user)");
        }
        write!(f, "\nprincipals:")?;
        for p in &c.principals {
            write!(f, "\n  {}", super::visible(&p.key))?;
            if let Some(l) = &p.label {
                write!(f, "  {}", super::visible(l))?;
            }
        }
        Ok(())
    }
}

async fn ask_custody(socket: Option<&Path>) -> CustodyView {
    let timeouts = Timeouts {
        connect: WHOAMI_TIMEOUT,
        reply: WHOAMI_TIMEOUT,
        ..Timeouts::default()
    };
    let unreachable = |error: String, socket: Option<PathBuf>| CustodyView {
        reachable: false,
        socket,
        version: None,
        principals: Vec::new(),
        error: Some(error),
    };
    let mut client = match Client::connect_with(socket, timeouts).await {
        Ok(c) => c,
        Err(e) => return unreachable(e.to_string(), None),
    };
    let path = client.path().to_path_buf();
    match client.hello().await {
        Ok(Reply::Hello {
            version,
            principals,
        }) => CustodyView {
            reachable: true,
            socket: Some(path),
            version: Some(version),
            principals,
            error: None,
        },
        Ok(Reply::Error { code, message }) => unreachable(
            format!("custody refused: {code}: {}", super::visible(&message)),
            Some(path),
        ),
        Ok(other) => unreachable(
            format!("custody answered {} to hello", other.kind()),
            Some(path),
        ),
        Err(e) => unreachable(e.to_string(), Some(path)),
    }
}

pub fn run(socket: Option<&Path>) -> Result<Report, CliError> {
    let home = home::parley_home()?;
    let agent = home::load_agent_key(&home)?.map(|k| k.public.to_string());
    let custody = super::block_on(ask_custody(socket))?;
    Ok(Report::new(
        &WhoAmI {
            agent_key_file: home::agent_key_path(&home),
            home,
            agent,
            custody,
        },
        0,
    ))
}

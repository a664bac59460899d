//! `parley init`: makes the agent's key, `$PARLEY_HOME/agent.key`, in the
//! upstream format (b64url of a 32-byte seed from the OS random source, a
//! newline; mode 0600, directory 0700) if it is missing, and prints its
//! public key: the key a principal grants to.
//!
//! It never creates a principal key. That key is custody's alone, in its
//! keychain under another OS user (`parley custody keys create`); a principal
//! key in the agent's home would let the agent sign its own consents.

use super::Report;
use crate::error::CliError;
use crate::home;
use serde::Serialize;
use std::fmt;
use std::path::PathBuf;

#[derive(Serialize)]
struct Init {
    public_key: String,
    path: PathBuf,
    created: bool,
}

impl fmt::Display for Init {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        if self.created {
            writeln!(f, "agent key created: {}", self.path.display())?;
        } else {
            writeln!(
                f,
                "agent key already exists: {} (kept as it is)",
                self.path.display()
            )?;
        }
        write!(f, "public key: {}", self.public_key)
    }
}

pub fn run() -> Result<Report, CliError> {
    let home = home::parley_home()?;
    let (key, created) = home::init_agent_key(&home)?;
    Ok(Report::new(
        &Init {
            public_key: key.public.to_string(),
            path: key.path,
            created,
        },
        0,
    ))
}

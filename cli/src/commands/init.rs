//! `parley init`: makes the agent's key, `$PARLEY_HOME/agent.key`, in the
//! upstream format (b64url of a 32-byte seed from the OS random source, a
//! newline; mode 0600, directory 0700) if it is missing, and prints its
//! public key: the key a principal grants to.
//!
//! Under `--dialect yea1` the key is the YEA tooling's, `$YEA_HOME/agent.key`
//! (same format). `--import-yea` copies that key into `$PARLEY_HOME` so the
//! two toolings are one agent (one key to grant to), never replacing a
//! different key.
//!
//! It never creates a principal key. That key is custody's alone, in its
//! keychain under another OS user (`parley custody keys create`); a principal
//! key in the agent's home would let the agent sign its own consents.

use super::Report;
use crate::cli::InitArgs;
use crate::error::CliError;
use crate::home;
use parley_core::Dialect;
use serde::Serialize;
use std::fmt;
use std::path::PathBuf;

#[derive(Serialize)]
struct Init {
    public_key: String,
    path: PathBuf,
    created: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    imported_from: Option<PathBuf>,
}

impl fmt::Display for Init {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match (&self.imported_from, self.created) {
            (Some(from), true) => writeln!(
                f,
                "agent key imported: {} (from {})",
                self.path.display(),
                from.display()
            )?,
            (Some(_), false) => writeln!(
                f,
                "agent key already imported: {} (the same key)",
                self.path.display()
            )?,
            (None, true) => writeln!(f, "agent key created: {}", self.path.display())?,
            (None, false) => writeln!(
                f,
                "agent key already exists: {} (kept as it is)",
                self.path.display()
            )?,
        }
        write!(f, "public key: {}", self.public_key)
    }
}

pub fn run(a: InitArgs, dialect: Option<Dialect>) -> Result<Report, CliError> {
    let (key, created, imported_from) = if a.import_yea {
        if dialect == Some(Dialect::YeaV1) {
            return Err(CliError::bad(
                "--import-yea copies the YEA key into $PARLEY_HOME; with --dialect yea1 there is nothing to import into (drop one of them)",
            ));
        }
        let from = home::tooling_home(Dialect::YeaV1)?;
        let (key, created) = home::import_agent_key(&from, &home::parley_home()?)?;
        (key, created, Some(home::agent_key_path(&from)))
    } else {
        let home = home::tooling_home(dialect.unwrap_or_default())?;
        let (key, created) = home::init_agent_key(&home)?;
        (key, created, None)
    };
    Ok(Report::new(
        &Init {
            public_key: key.public.to_string(),
            path: key.path,
            created,
            imported_from,
        },
        0,
    ))
}

//! `parley delegate <token> --to KEY [caveat flags]`: passes a narrower
//! grant to another key (a sub-agent), offline. The agent signs the new block
//! with its own key (`$PARLEY_HOME/agent.key`), which must be the token's
//! holder; custody is not involved, because delegation can only restrict
//! (caveats accumulate, Parley §6.2).

use super::grant::{build_caveats, key_flag};
use super::Report;
use crate::cli::DelegateArgs;
use crate::error::CliError;
use crate::home;
use parley_core::grant::UnverifiedGrant;
use serde::Serialize;
use serde_json::Value;
use std::fmt;

#[derive(Serialize)]
struct Delegated {
    grant: String,
    id: String,
    from: String,
    to: String,
    caveats: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    expires: Option<i64>,
}

impl fmt::Display for Delegated {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.grant)
    }
}

pub fn run(a: DelegateArgs) -> Result<Report, CliError> {
    let token = super::token_arg(&a.token)?;
    let to = key_flag(&a.to, "--to")?;
    let now = super::unix_now();
    let built = build_caveats(&a.caveats, now)?;
    for w in &built.warnings {
        eprintln!("parley: warning: {w}");
    }
    let grant = UnverifiedGrant::decode(&token).map_err(CliError::bad)?;
    // A broken chain is refused by every service; do not extend it.
    grant.verify_chain().map_err(|e| {
        CliError::bad(format!(
            "the grant's signatures do not check out ({e}); it cannot be delegated"
        ))
    })?;
    let home = home::parley_home()?;
    let agent = home::require_agent_key(&home)?;
    if grant.holder() != agent.public.to_string() {
        return Err(CliError::bad(format!(
            "this grant is held by {}, but {} is {}: only the holder can delegate it",
            super::visible(grant.holder()),
            agent.path.display(),
            agent.public
        )));
    }
    if let Some(exp) = grant.expiry().filter(|e| *e <= now) {
        eprintln!(
            "parley: warning: the grant expired at {}; the delegation will be refused too",
            parley_core::lens::time(exp)
        );
    }
    let delegated = grant
        .delegate(&agent.secret, &to, &built.caveats, now)
        .map_err(CliError::bad)?;
    Ok(Report::new(
        &Delegated {
            grant: delegated.encode(),
            id: delegated.id(),
            from: agent.public.to_string(),
            to: to.to_string(),
            caveats: built.to_value(),
            expires: delegated.expiry(),
        },
        0,
    ))
}

//! `parley delegate <token> --to KEY [caveat flags]`: passes a narrower
//! grant to another key (a sub-agent), offline. The agent signs the new block
//! with its own key (`$PARLEY_HOME/agent.key`), which must be the token's
//! holder; custody is not involved, because delegation can only restrict
//! (caveats accumulate, Parley §6.2).

use super::grant::{build_caveats, flags_dialect, key_flag};
use super::Report;
use crate::cli::DelegateArgs;
use crate::error::CliError;
use crate::home;
use parley_core::caveat::Caveat;
use parley_core::grant::UnverifiedGrant;
use parley_core::Dialect;
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

pub fn run(a: DelegateArgs, flag: Option<Dialect>) -> Result<Report, CliError> {
    let token = super::token_arg(&a.token)?;
    let to = key_flag(&a.to, "--to")?;
    let now = super::unix_now();
    let grant = UnverifiedGrant::decode(&token).map_err(CliError::bad)?;
    // The new block must be in the dialect of the chain it extends: a grant
    // with both per/spend and each/total is refused under either.
    let names: Vec<&str> = grant
        .blocks()
        .iter()
        .flat_map(|b| b.caveats())
        .filter_map(Caveat::name)
        .collect();
    let mut signs = Vec::new();
    if names.iter().any(|n| ["each", "total"].contains(n)) {
        signs.push((Dialect::YeaV1, "the grant's each/total caveat".to_string()));
    }
    if names.iter().any(|n| ["per", "spend"].contains(n)) {
        signs.push((
            Dialect::ParleyV1,
            "the grant's per/spend caveat".to_string(),
        ));
    }
    let chain = crate::dialect::decide(flag, &signs)?;
    if let (Some(c), Some(own)) = (chain, flags_dialect(&a.caveats)) {
        if c != own {
            return Err(CliError::bad(format!(
                "the grant is {c}, but these caveat flags are {own}: a grant mixing per/spend with each/total is refused everywhere"
            )));
        }
    }
    let built = build_caveats(&a.caveats, now, chain)?;
    for w in &built.warnings {
        eprintln!("parley: warning: {w}");
    }
    // A broken chain is refused by every service; do not extend it.
    grant.verify_chain().map_err(|e| {
        CliError::bad(format!(
            "the grant's signatures do not check out ({e}); it cannot be delegated"
        ))
    })?;
    let home = home::tooling_home(built.dialect)?;
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

//! `parley custody freeze|unfreeze|frozen`: "Stop all agents" from the
//! human's own command line, as custody's OS user (never the agents'
//! socket). The freeze is written to custody's audit file; a running
//! service sees it within half a second, denies every pending request and
//! refuses every new one unseen (`custody_frozen`). Freezing asks nothing;
//! unfreezing loosens custody, so it asks the OS first (polkit's
//! `org.parley.custody.change`, through `pkttyagent` on this terminal), then
//! lists what was refused meanwhile.

use super::custody_keys::data_dir;
use super::Report;
use crate::cli::FreezeArgs;
use crate::error::CliError;
use parley_core::lens;
use parley_custody::audit::{Audit, Event, Freeze};
use parley_custody::engine::unix_now;
use parley_custody::paths;
use parley_custody::stepup::{confirm_change_on_terminal, PromptDetails};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;

fn open_audit(a: &FreezeArgs) -> Result<Audit, CliError> {
    let dir = data_dir(a.data_dir.as_ref())?;
    Audit::open(&paths::audit_path(&dir)).map_err(CliError::bad)
}

#[derive(Serialize)]
struct FreezeView {
    frozen: bool,
    since: Option<i64>,
    reason: Option<String>,
    refused: i64,
}

impl From<Option<Freeze>> for FreezeView {
    fn from(f: Option<Freeze>) -> FreezeView {
        FreezeView {
            frozen: f.is_some(),
            since: f.as_ref().map(|f| f.at),
            reason: f.as_ref().map(|f| parley_custody::display::safe(&f.reason)),
            refused: f.map_or(0, |f| f.refused),
        }
    }
}

impl fmt::Display for FreezeView {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self.since {
            None => f.write_str("custody is not frozen: agents may ask"),
            Some(at) => write!(
                f,
                "custody is FROZEN since {} ({}): every agent request is refused unseen; {} refused so far\n\
                 `parley custody unfreeze` ends it (asks for your password)",
                lens::time(at),
                self.reason.as_deref().unwrap_or(""),
                self.refused
            ),
        }
    }
}

/// Freezes custody. Asks nothing: stopping is never a risk.
pub fn freeze(a: &FreezeArgs) -> Result<Report, CliError> {
    let reason = a
        .reason
        .as_deref()
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .unwrap_or("all agents stopped by the human (parley custody freeze)");
    let f = open_audit(a)?
        .freeze(reason, unix_now())
        .map_err(CliError::bad)?;
    Ok(Report::new(&FreezeView::from(Some(f)), 0))
}

/// Whether custody is frozen.
pub fn status(a: &FreezeArgs) -> Result<Report, CliError> {
    let f = open_audit(a)?.frozen().map_err(CliError::bad)?;
    Ok(Report::new(&FreezeView::from(f), 0))
}

#[derive(Serialize)]
struct RefusedView {
    at: i64,
    peer_uid: Option<u32>,
    /// The agent's one name (the human's, else its four words), as every view names it.
    agent_name: Option<String>,
    agent: Option<String>,
    service: Option<String>,
}

#[derive(Serialize)]
struct UnfrozenView {
    unfrozen: bool,
    since: Option<i64>,
    refused: i64,
    refused_rows: Vec<RefusedView>,
    confirmed_by: Option<&'static str>,
}

impl fmt::Display for UnfrozenView {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let Some(since) = self.since else {
            return f.write_str("custody was not frozen: nothing changed");
        };
        writeln!(
            f,
            "custody is unfrozen (frozen since {}); {} request(s) were refused meanwhile{}",
            lens::time(since),
            self.refused,
            if self.refused_rows.is_empty() {
                ""
            } else {
                ":"
            }
        )?;
        for r in &self.refused_rows {
            writeln!(
                f,
                "  {}  uid {}  agent {}  service {}",
                lens::time(r.at),
                r.peer_uid.map_or("?".into(), |u| u.to_string()),
                match (&r.agent_name, &r.agent) {
                    (Some(n), Some(k)) => format!("\"{n}\" ({k})"),
                    _ => "?".into(),
                },
                r.service.as_deref().unwrap_or("-"),
            )?;
        }
        Ok(())
    }
}

fn refused_view(e: &Event, labels: &BTreeMap<String, String>) -> RefusedView {
    let safe = |s: &Option<String>| s.as_deref().map(parley_custody::display::safe);
    RefusedView {
        at: e.at,
        peer_uid: e.peer_uid,
        agent_name: e.agent.as_deref().map(|a| {
            parley_custody::fingerprint::agent_name_of_text(a, labels.get(a).map(String::as_str))
        }),
        agent: safe(&e.agent),
        service: safe(&e.service),
    }
}

/// Asks the OS to authenticate the human for the unfreeze (polkit's change
/// action, its text agent on this terminal).
fn authenticate() -> Result<&'static str, CliError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(CliError::bad)?;
    let details = PromptDetails::new().with("change", "unfreeze custody (let agents ask again)");
    rt.block_on(confirm_change_on_terminal(&details))
        .map_err(|e| {
            CliError::bad(format!(
                "OS authentication did not succeed ({e}): custody stays frozen"
            ))
        })
}

/// Unfreezes custody after OS authentication, listing what was refused.
pub fn unfreeze(a: &FreezeArgs) -> Result<Report, CliError> {
    let mut audit = open_audit(a)?;
    if audit.frozen().map_err(CliError::bad)?.is_none() {
        let v = UnfrozenView {
            unfrozen: false,
            since: None,
            refused: 0,
            refused_rows: Vec::new(),
            confirmed_by: None,
        };
        return Ok(Report::new(&v, 0));
    }
    let confirmed_by = authenticate()?;
    let labels: BTreeMap<String, String> = audit
        .agent_labels()
        .map_err(CliError::bad)?
        .into_iter()
        .collect();
    let done = audit
        .unfreeze(unix_now(), Some(confirmed_by))
        .map_err(CliError::bad)?;
    let v = match done {
        Some(u) => UnfrozenView {
            unfrozen: true,
            since: Some(u.freeze.at),
            refused: u.freeze.refused,
            refused_rows: u
                .refused_rows
                .iter()
                .map(|e| refused_view(e, &labels))
                .collect(),
            confirmed_by: Some(confirmed_by),
        },
        None => UnfrozenView {
            unfrozen: false,
            since: None,
            refused: 0,
            refused_rows: Vec::new(),
            confirmed_by: None,
        },
    };
    Ok(Report::new(&v, 0))
}

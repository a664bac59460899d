//! `parley verify`: would a service authorize this request with this grant?

use super::Report;
use crate::cli::VerifyArgs;
use crate::error::CliError;
use parley_core::caveat::{CommitFacts, RequestContext};
use parley_core::grant::{Decision, UnverifiedGrant};
use parley_core::money::Money;
use parley_core::PublicKey;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;

#[derive(Serialize)]
struct Outcome {
    #[serde(flatten)]
    decision: Decision,
    grant: Option<String>,
    now: i64,
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match &self.decision {
            Decision::Ok => write!(f, "ok"),
            Decision::ConsentRequired { reasons, .. } => {
                write!(f, "consent_required")?;
                reasons.iter().try_for_each(|r| write!(f, "\n  {r}"))
            }
            Decision::Forbidden { need, reasons } => {
                write!(f, "forbidden")?;
                reasons.iter().try_for_each(|r| write!(f, "\n  {r}"))?;
                write!(
                    f,
                    "\n  need: {}",
                    parley_core::lens::compact_json(&serde_json::Value::Array(need.clone()))
                )
            }
            Decision::Unauthorized { reason } => write!(f, "unauthorized\n  {reason}"),
        }
    }
}

fn key(text: &str, flag: &str) -> Result<PublicKey, CliError> {
    text.parse()
        .map_err(|e| CliError::bad(format!("{flag} {text:?}: {e}")))
}

pub fn run(a: VerifyArgs) -> Result<Report, CliError> {
    let token = super::token_arg(&a.token)?;
    let trusted = a
        .trust
        .iter()
        .map(|k| key(k, "--trust"))
        .collect::<Result<Vec<_>, _>>()?;
    let verb = a.verb.to_ascii_uppercase();
    if !["HELLO", "ASK", "INTENT", "COMMIT", "UNDO", "EXPAND"].contains(&verb.as_str()) {
        return Err(CliError::bad(format!(
            "--verb {:?}: use ASK, INTENT, COMMIT, UNDO or EXPAND",
            a.verb
        )));
    }
    let proposal = if verb == "COMMIT" {
        let hash = a.hash.clone().ok_or_else(|| {
            CliError::bad("a COMMIT needs --hash (and --cost if not free, --risk)")
        })?;
        let cost = a
            .cost
            .as_deref()
            .map(Money::parse_flag)
            .transpose()
            .map_err(CliError::bad)?;
        let risk = a.risk.clone().unwrap_or_else(|| "low".into());
        if parley_core::RiskLevel::parse(&risk).is_none() {
            return Err(CliError::bad(format!(
                "--risk {risk:?}: use low, medium or high"
            )));
        }
        Some(CommitFacts {
            hash,
            cost,
            risk,
            ..Default::default()
        })
    } else {
        None
    };
    let mut spent = BTreeMap::new();
    for s in &a.spent {
        let (id, cents) = s
            .split_once('=')
            .ok_or_else(|| CliError::bad(format!("--spent {s:?}: write BLOCKID=CENTS")))?;
        let cents: i64 = cents.parse().map_err(|_| {
            CliError::bad(format!(
                "--spent {s:?}: CENTS must be an integer (minor units)"
            ))
        })?;
        spent.insert(id.to_string(), cents);
    }
    let now = match a.now {
        Some(t) => t,
        None => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0),
    };
    let ctx = RequestContext {
        service: a.svc.clone(),
        verb,
        capability: a.cap.clone(),
        now,
        proposal,
        spent,
        ..Default::default()
    };
    let (decision, grant) = match UnverifiedGrant::decode(&token) {
        Err(e) => (
            Decision::Unauthorized {
                reason: e.to_string(),
            },
            None,
        ),
        Ok(g) => {
            let holder = match &a.proof_key {
                Some(k) => key(k, "--proof-key")?,
                None => match g.holder().parse() {
                    Ok(k) => k,
                    Err(e) => {
                        return Err(CliError::bad(format!(
                            "the grant's holder is not a key: {e}"
                        )))
                    }
                },
            };
            let d = match g.verify(&trusted, &holder) {
                Ok(v) => v.evaluate(&ctx),
                Err(e) => Decision::Unauthorized {
                    reason: e.to_string(),
                },
            };
            (d, Some(g.id()))
        }
    };
    let exit = if decision == Decision::Ok { 0 } else { 1 };
    Ok(Report::new(
        &Outcome {
            decision,
            grant,
            now,
        },
        exit,
    ))
}

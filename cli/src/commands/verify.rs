//! `parley verify`: would a service authorize this request with this grant?

use super::Report;
use crate::cli::VerifyArgs;
use crate::dialect;
use crate::error::CliError;
use parley_core::caveat::{Caveat, CommitFacts, RequestContext};
use parley_core::grant::{Decision, UnverifiedGrant};
use parley_core::json;
use parley_core::money::Money;
use parley_core::quantity::{Used, Uses};
use parley_core::Dialect;
use parley_core::PublicKey;
use serde::Serialize;
use serde_json::Value;
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
                reasons
                    .iter()
                    .try_for_each(|r| write!(f, "\n  {}", super::visible(r)))
            }
            Decision::Forbidden { need, reasons } => {
                write!(f, "forbidden")?;
                // A reason may quote a revocation reason: the issuer's words.
                reasons
                    .iter()
                    .try_for_each(|r| write!(f, "\n  {}", super::visible(r)))?;
                write!(
                    f,
                    "\n  need: {}",
                    parley_core::lens::compact_json(&serde_json::Value::Array(need.clone()))
                )
            }
            Decision::Unauthorized { reason } => {
                write!(f, "unauthorized\n  {}", super::visible(reason))
            }
        }
    }
}

fn key(text: &str, flag: &str) -> Result<PublicKey, CliError> {
    text.parse()
        .map_err(|e| CliError::bad(format!("{flag} {text:?}: {e}")))
}

/// Reads `--uses`/`--uses-json` into the proposal's `uses` as JSON.
fn uses_flags(a: &VerifyArgs) -> Result<Option<Value>, CliError> {
    if let Some(text) = &a.uses_json {
        let v = json::parse(text.as_bytes(), json::Limits::FRAME)
            .map_err(|e| CliError::bad(format!("--uses-json: not JSON: {e}")))?;
        return Ok(Some(v));
    }
    if a.uses.is_empty() {
        return Ok(None);
    }
    let mut uses = Uses::default();
    for u in &a.uses {
        let (name, q) = dialect::parse_measure(u, "--uses")?;
        if uses.0.insert(name.clone(), q).is_some() {
            return Err(CliError::bad(format!(
                "--uses names {name} twice: a proposal reports one quantity per measure"
            )));
        }
    }
    Ok(Some(uses.to_value()))
}

/// Reads `--used BLOCKID:NAME=AMOUNT` into exact running totals.
fn used_flags(a: &VerifyArgs) -> Result<Used, CliError> {
    let mut used = Used::new();
    for u in &a.used {
        let (block, rest) = u.split_once(':').ok_or_else(|| {
            CliError::bad(format!(
                "--used {:?}: write BLOCKID:NAME=AMOUNT, like <block id>:emails=2",
                u.chars().take(80).collect::<String>()
            ))
        })?;
        if block.is_empty() {
            return Err(CliError::bad("--used: the block id is empty"));
        }
        let (name, q) = dialect::parse_measure(rest, "--used")?;
        let row = used.entry(block.to_string()).or_default();
        if row.insert(name.clone(), q.exact()).is_some() {
            return Err(CliError::bad(format!(
                "--used names {name} of block {block} twice: give the block's total once"
            )));
        }
    }
    Ok(used)
}

/// The signs of a dialect among the flags.
fn flag_signs(a: &VerifyArgs) -> Vec<dialect::Sign> {
    let mut s: Vec<dialect::Sign> = Vec::new();
    let mut flag = |on: bool, d: Dialect, name: &str| {
        if on {
            s.push((d, name.to_string()));
        }
    };
    flag(a.cost.is_some(), Dialect::ParleyV1, "--cost");
    flag(!a.spent.is_empty(), Dialect::ParleyV1, "--spent");
    flag(!a.uses.is_empty(), Dialect::YeaV1, "--uses");
    flag(a.uses_json.is_some(), Dialect::YeaV1, "--uses-json");
    flag(!a.used.is_empty(), Dialect::YeaV1, "--used");
    s
}

/// The dialect a grant's limits are written in, when they are in one:
/// `per`/`spend` are Parley v1's, `each`/`total` YEA v1's. Only a hint, for
/// a request that says nothing itself: a caveat of the other dialect is
/// exactly what a grant can be refused for.
fn grant_hint(g: &UnverifiedGrant) -> Option<Dialect> {
    let names: Vec<&str> = g
        .blocks()
        .iter()
        .flat_map(|b| b.caveats())
        .filter_map(Caveat::name)
        .collect();
    let has = |n: &[&str]| names.iter().any(|c| n.contains(c));
    match (has(&["per", "spend"]), has(&["each", "total"])) {
        (true, false) => Some(Dialect::ParleyV1),
        (false, true) => Some(Dialect::YeaV1),
        _ => None,
    }
}

pub fn run(a: VerifyArgs, flag: Option<Dialect>) -> Result<Report, CliError> {
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
            CliError::bad(
                "a COMMIT needs --hash (and --risk; --cost if not free, or for YEA v1 --uses)",
            )
        })?;
        let cost = a
            .cost
            .as_deref()
            .map(Money::parse_flag)
            .transpose()
            .map_err(CliError::bad)?;
        let risk = a.risk.clone().unwrap_or_else(|| "low".into());
        // Kept as written, as a service keeps the proposal's: an unknown
        // level fails closed (forbidden), which is what this answers.
        if parley_core::RiskLevel::parse(&risk).is_none() {
            eprintln!(
                "parley: warning: --risk {:?} is not low, medium or high; a service fails such a proposal closed",
                crate::commands::visible(&risk)
            );
        }
        Some(CommitFacts {
            hash,
            cost,
            uses: uses_flags(&a)?,
            risk,
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
    let mut ctx = RequestContext {
        service: a.svc.clone(),
        verb,
        capability: a.cap.clone(),
        now,
        proposal,
        spent,
        used: used_flags(&a)?,
        dialect: Dialect::ParleyV1,
    };
    let mut revocations = Vec::new();
    for f in &a.revocations {
        let text = std::fs::read_to_string(f)
            .map_err(|e| CliError::bad(format!("--revocations {}: {e}", f.display())))?;
        let r = parley_core::revocation::Revocation::parse(&text)
            .map_err(|e| CliError::bad(format!("--revocations {}: {e}", f.display())))?;
        revocations.push(r);
    }
    let decoded = UnverifiedGrant::decode(&token);
    let chosen = dialect::decide(flag, &flag_signs(&a))?
        .or_else(|| decoded.as_ref().ok().and_then(grant_hint));
    let (decision, grant) = match decoded {
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
                Ok(v) => match chosen {
                    Some(d) => {
                        ctx.dialect = d;
                        v.evaluate(&ctx)
                    }
                    // Nothing says which: both readings must agree.
                    None => {
                        let parley = v.evaluate(&ctx);
                        ctx.dialect = Dialect::YeaV1;
                        if v.evaluate(&ctx) != parley {
                            return Err(dialect::ambiguous("this grant's decision"));
                        }
                        parley
                    }
                },
                Err(e) => Decision::Unauthorized {
                    reason: e.to_string(),
                },
            };
            // A revocation the verifier trusts forbids a grant that would
            // otherwise pass (or ask for consent).
            let d = match revocations
                .iter()
                .find(|r| r.revokes(&g.id(), g.issuer(), &trusted))
            {
                Some(r) if !matches!(d, Decision::Unauthorized { .. }) => r.forbidden(),
                _ => d,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_revocation_reason_is_printed_through_the_display_rule() {
        let hostile = "revoked: \u{1b}[2Jall clear \u{202e}";
        for decision in [
            Decision::Unauthorized {
                reason: hostile.into(),
            },
            Decision::Forbidden {
                need: vec![],
                reasons: vec![hostile.into()],
            },
            Decision::ConsentRequired {
                caveats: vec![],
                reasons: vec![hostile.into()],
            },
        ] {
            let text = Outcome {
                decision,
                grant: None,
                now: 0,
            }
            .to_string();
            assert!(
                !text.contains('\u{1b}') && !text.contains('\u{202e}'),
                "{text}"
            );
            assert!(text.contains("all clear"), "{text}");
        }
    }
}

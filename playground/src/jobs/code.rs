//! The approval code a job server hands out when a plan needs the person
//! (SPEC-approval §6): an unsigned `pc1.` consent request whose `detail`
//! carries the whole plan-hash preimage and the phrase to type.

use super::plan::Plan;
use parley_core::b64;
use parley_core::canonical::canonical;
use parley_core::PublicKey;
use serde_json::{json, Value};

/// How long a code (and so the consent it asks for) lives: 10 minutes.
pub const CODE_LIFETIME: i64 = 600;

/// The line the agent is told to say to the person.
pub fn ask_line(code: &str) -> String {
    format!(
        "Ask the user to run `yea approve {code}` in their terminal (with Parley Custody: `parley approve {code}`), then call again."
    )
}

/// Encodes the approval code for `plan` (hash `hash`) at this server.
pub fn encode(
    plan: &Plan,
    hash: &str,
    server: &PublicKey,
    principal: &PublicKey,
    phrase: &str,
    now: i64,
) -> Result<String, String> {
    let body: Value = json!({
        "capability": plan.tool,
        "detail": { "job": plan.preimage(), "phrase": phrase },
        "expires": now + CODE_LIFETIME,
        "hash": hash,
        "principal": principal.to_string(),
        "proposal": hash,
        "service": server.to_string(),
        "summary": plan.summary,
    });
    let text = canonical(&body).map_err(|e| e.to_string())?;
    Ok(format!("pc1.{}", b64::encode(text.as_bytes())))
}

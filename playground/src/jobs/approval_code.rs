//! The approval code a job server hands out when a plan needs the person
//! (SPEC-approval §6), on parley-core's job code: an unsigned `pc1.`
//! consent request whose `detail` carries the whole plan-hash preimage and
//! the phrase to type.

use parley_core::job::{consent_request, encode_code, JobPlan};
use parley_core::PublicKey;

/// The line the agent is told to say to the person.
pub fn ask_line(code: &str) -> String {
    format!(
        "Ask the user to run `yea approve {code}` in their terminal (with Parley Custody: `parley approve {code}`), then call again."
    )
}

/// Encodes the approval code for `plan` at this server, valid 10 minutes.
pub fn encode(
    plan: &JobPlan,
    server: &PublicKey,
    principal: &PublicKey,
    phrase: &str,
    now: i64,
) -> Result<String, String> {
    encode_code(&consent_request(plan, server, principal, now), plan, phrase)
        .map_err(|e| e.to_string())
}

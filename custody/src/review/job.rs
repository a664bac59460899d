//! The job review: an `approve_code` whose code is a YEA job approval code
//! (SPEC-approval §6). Every claim of the code is checked against the job
//! it carries ([`parley_core::job::check_code`]: plan hash, proposal,
//! capability = tool, expiry, a principal this custody holds), the phrase to
//! type must be typeable ([`crate::phrase`]), and only then is the plan shown:
//! the tool and its input (lean, display-safe, bounded), every effect, every
//! measure of `uses`, risk, undo window or irreversible, the server's key
//! (four words, the human's label), the code's summary as the server's words,
//! and the phrase. The consent is signed for the server's key.

use super::consent::{reviewed_from_checked, ReviewedConsent};
use super::view::fits;
use super::{Rejection, ReviewContext};
use crate::display::safe;
use parley_core::job::{self, JobError};
use parley_core::{lens, Dialect};
use serde::Serialize;

/// The longest job input shown, in characters of its lean rendering: an
/// input longer than that is refused, never cut.
pub const MAX_INPUT_CHARS: usize = 2000;

/// What a job review adds to a consent review.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JobView {
    /// The tool (the MCP tool's name), display-safe.
    pub tool: String,
    /// Its input in Lens's lean notation, one line per field, display-safe.
    pub input: Vec<String>,
    /// The phrase the human must type, display-safe (it is typeable, so
    /// shown as it is).
    pub phrase: String,
    /// The plan hash.
    pub plan_hash: String,
}

impl From<JobError> for Rejection {
    fn from(e: JobError) -> Rejection {
        Rejection::new(e.kind(), e.to_string())
    }
}

/// Whether `code_text` is a job code (its detail carries `job`); anything
/// that does not decode is not, and is judged as a consent code.
pub fn is_job_code(code_text: &str) -> bool {
    parley_core::code::decode(code_text).is_ok_and(|c| job::is_job_code(&c))
}

/// The server key a job code's consent would be issued to, if the code is a
/// job code naming one (labels, pauses and insight are the server's).
pub fn job_server(code_text: &str) -> Option<String> {
    let c = parley_core::code::decode(code_text).ok()?;
    job::is_job_code(&c).then(|| c.consent.service.clone())
}

/// Checklist for a job approval code.
pub fn review_job(code_text: &str, ctx: &ReviewContext) -> Result<ReviewedConsent, Rejection> {
    let code = job::decode_code(code_text)?;
    let principal = code.consent.principal.clone();
    if !ctx.principals.contains(&principal) {
        return Err(JobError::OtherPrincipal {
            code: principal.to_string(),
            held: ctx
                .principals
                .iter()
                .map(|p| p.short())
                .collect::<Vec<_>>()
                .join(", "),
        }
        .into());
    }
    let named = code.phrase.clone();
    let checked = job::check_code(code, &principal, ctx.now)?;
    let phrase = parley_custody_client::phrase::phrase_for(&named)
        .map_err(|e| Rejection::new("phrase_untypeable", e.to_string()))?;
    let plan = checked.plan();
    let input = lens::lean_lines(&plan.input);
    let mut shown_len = 0;
    for (i, line) in input.iter().enumerate() {
        fits(&format!("input line {}", i + 1), line)?;
        shown_len += line.chars().count();
    }
    if shown_len > MAX_INPUT_CHARS {
        return Err(Rejection::new(
            "too_large_to_review",
            format!(
                "the job's input is {shown_len} characters in Lens; custody shows at most \
                 {MAX_INPUT_CHARS} and does not ask a human to approve what it cannot show in full"
            ),
        ));
    }
    fits("tool", &plan.tool)?;
    let consent = checked.consent()?;
    let server = checked.server().clone();
    let view = JobView {
        tool: safe(&plan.tool),
        input: input.iter().map(|l| safe(l)).collect(),
        phrase: safe(&phrase),
        plan_hash: plan.hash.clone(),
    };
    let mut reviewed = reviewed_from_checked(consent, server, Dialect::YeaV1, ctx)?;
    reviewed.set_job(view, phrase);
    Ok(reviewed)
}

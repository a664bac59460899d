//! What an agent has done, from custody's own records (issue 15, part 5):
//! consents signed, what they add up to per currency over the last 24 hours
//! and 7 days, and the grants live now; shown in the review as one line
//! ("this agent: 3 consents signed, 184.20 USD this week …").
//!
//! Why: a request is easier to judge next to what the agent already got.
//! Only signed rows count ([`crate::audit`]'s history methods): what the
//! human refused is not something the agent has done.

use crate::audit::{Audit, AuditError, Total};
use crate::display::safe;
use parley_core::money::Money;
use serde::Serialize;

/// A day, in seconds.
pub const DAY: i64 = 86_400;
/// A week, in seconds.
pub const WEEK: i64 = 7 * DAY;

/// One agent's record, as shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentActivity {
    /// Consents signed for it, ever (as far as the log keeps them).
    pub consents: u64,
    /// Consents signed in the last 7 days.
    pub consents_week: u64,
    /// Their costs in the last 24 hours, per currency (`50.00 USD`).
    pub spent_day: Vec<String>,
    /// Their costs in the last 7 days, per currency.
    pub spent_week: Vec<String>,
    /// Grants to it that are live now.
    pub live_grants: u64,
    /// All of it in one line (display-safe).
    pub words: String,
}

fn shown(totals: &[Total]) -> Vec<String> {
    totals
        .iter()
        .map(|t| {
            safe(
                &Money {
                    amount: t.amount,
                    currency: t.currency.clone(),
                }
                .to_string(),
            )
        })
        .collect()
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

impl AgentActivity {
    /// Reads `agent`'s record as of `now`.
    pub fn of_agent(audit: &Audit, agent: &str, now: i64) -> Result<AgentActivity, AuditError> {
        let consents = audit.consents_of_agent(agent, i64::MIN)?;
        let consents_week = audit.consents_of_agent(agent, now - WEEK)?;
        let spent_day = shown(&audit.spent_by_agent(agent, now - DAY)?);
        let spent_week = shown(&audit.spent_by_agent(agent, now - WEEK)?);
        let live_grants = audit.live_grants_of_agent(agent, now)?;
        let mut parts = vec![plural(consents, "consent signed", "consents signed")];
        if consents_week > 0 {
            let money = if spent_week.is_empty() {
                "no cost".to_owned()
            } else {
                spent_week.join(" + ")
            };
            let day = if spent_day.is_empty() {
                String::new()
            } else {
                format!(" ({} in the last 24 h)", spent_day.join(" + "))
            };
            parts.push(format!(
                "{} this week, {money}{day}",
                plural(consents_week, "consent", "consents")
            ));
        }
        parts.push(format!(
            "{} live now",
            plural(live_grants, "grant", "grants")
        ));
        let words = format!("this agent: {}", parts.join(", "));
        Ok(AgentActivity {
            consents,
            consents_week,
            spent_day,
            spent_week,
            live_grants,
            words,
        })
    }
}

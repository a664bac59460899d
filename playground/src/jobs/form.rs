//! The approval form (SPEC-approval §3) and the check of its answer (§5).
//!
//! When the client can ask, the server shows the plans in Lens with why
//! approval is needed, and asks the person to type the chosen plan's
//! phrase. Every string from the service goes through the one display
//! rule (`display::safe`), so a summary can neither add a line to the
//! message nor hide characters in it. Matching the typed phrase is
//! custody-client's rule (`phrase::matches`), the same as `parley approve`.
//!
//! Plans at or above the policy's out-of-band risk are listed but not
//! offered (they need `parley approve`); denied tools are listed apart as
//! never allowed. With nothing left to offer there is no form: the call
//! fails closed with approval codes.

use super::policy::DenyList;
use super::request_state::RequestState;
use parley_core::job::JobPlan;
use parley_core::lens::{duration, effect_line};
use parley_core::RiskLevel;
use parley_custody_client::display::safe;
use parley_custody_client::phrase::{matches, strip_edges, DEFAULT_PHRASE};
use serde_json::{json, Map, Value};

/// Rounds of asking before the call is refused (§5 step 7).
pub const MAX_ROUNDS: u32 = 3;

/// One recomputed plan with the phrase its tool names for it (as named:
/// empty once the edges are stripped means `approve`).
#[derive(Debug, Clone)]
pub struct AskedPlan {
    /// The plan, its hash and its resolved risk.
    pub plan: JobPlan,
    /// The phrase the tool names (already checked typeable by the caller,
    /// with `phrase::phrase_for`).
    pub phrase: String,
}

impl AskedPlan {
    /// The phrase the person types: the named one, or `approve` when it is
    /// empty once its edges are stripped.
    pub fn phrase(&self) -> &str {
        if strip_edges(&self.phrase).is_empty() {
            DEFAULT_PHRASE
        } else {
            &self.phrase
        }
    }
}

/// What the policy says about asking in the chat.
#[derive(Debug, Clone)]
pub struct AskPolicy {
    /// Tools never allowed.
    pub deny: DenyList,
    /// Plans at or above this risk need approval outside the chat.
    pub out_of_band: RiskLevel,
}

impl AskPolicy {
    fn denies(&self, tool: &str) -> bool {
        self.deny.denies(tool)
    }
}

/// A form-mode elicitation: the message, the flat schema and the plan
/// hashes it offers (the request state carries these).
#[derive(Debug, Clone, PartialEq)]
pub struct Form {
    /// The plans in Lens and why approval is needed, made safe to show.
    pub message: String,
    /// The `requestedSchema`: `plan` (several offered) and `confirm`.
    pub requested_schema: Value,
    /// The offered plan hashes, in the plans' order.
    pub offered: Vec<String>,
}

/// Builds the form for `plans`, or `None` when no plan can be offered
/// (all denied or out of band: fail closed with approval codes instead).
pub fn approval_form(plans: &[AskedPlan], why: &str, policy: &AskPolicy) -> Option<Form> {
    let mut message = format!("Approval needed: {}.\n", safe(why));
    let mut offered = Vec::new();
    let mut out_of_band = Vec::new();
    let mut denied = Vec::new();
    for (i, p) in plans.iter().enumerate() {
        let n = i + 1;
        let plan = &p.plan;
        message.push_str(&format!("\n[{n}] {}", safe(&plan.summary)));
        for e in &plan.effects {
            message.push_str(&format!(
                "\n  {}",
                safe(&effect_line(&Value::Object(e.clone())))
            ));
        }
        let undo = plan.undo_window.map_or_else(|| "never".into(), duration);
        let uses = plan
            .uses
            .as_ref()
            .filter(|u| !u.is_empty())
            .map(|u| format!("uses: {} · ", safe(&u.lens())))
            .unwrap_or_default();
        message.push_str(&format!(
            "\n  {uses}risk: {} · undo: {undo}",
            plan.risk.as_str()
        ));
        if policy.denies(&plan.tool) {
            denied.push(n);
        } else if plan.risk >= policy.out_of_band {
            out_of_band.push(n);
        } else {
            message.push_str(&format!("\n  to approve, type: {}", safe(p.phrase())));
            offered.push(p);
        }
    }
    if offered.is_empty() {
        return None;
    }
    let list = |ns: &[usize]| {
        ns.iter()
            .map(|n| format!("[{n}]"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if !out_of_band.is_empty() {
        message.push_str(&format!(
            "\n\nNot offered here (approve outside the chat): {}",
            list(&out_of_band)
        ));
    }
    if !denied.is_empty() {
        message.push_str(&format!(
            "\n\nNever allowed by your policy: {}",
            list(&denied)
        ));
    }
    let mut properties = Map::new();
    let mut required = Vec::new();
    let confirm_description = if let [only] = offered.as_slice() {
        format!("Type \"{}\" to approve.", safe(only.phrase()))
    } else {
        let options: Vec<Value> = offered
            .iter()
            .map(|p| json!({"const": p.plan.hash, "title": safe(&p.plan.summary)}))
            .collect();
        properties.insert(
            "plan".into(),
            json!({"type": "string", "title": "Plan", "oneOf": options}),
        );
        required.push("plan");
        "Type the chosen plan's phrase, shown next to it above.".into()
    };
    properties.insert(
        "confirm".into(),
        json!({"type": "string", "title": "Confirm", "description": confirm_description}),
    );
    required.push("confirm");
    Some(Form {
        message,
        requested_schema: json!({"type": "object", "properties": properties, "required": required}),
        offered: offered.iter().map(|p| p.plan.hash.clone()).collect(),
    })
}

/// The person's answer to the form.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// Submitted, with the fields filled in (none for a bare accept).
    Accept(Map<String, Value>),
    /// Declined.
    Decline,
    /// Dismissed.
    Cancel,
}

impl Answer {
    /// Reads an elicitation result `{action, content?}`; anything else is
    /// a cancel (never an approval).
    pub fn from_value(v: &Value) -> Answer {
        match v.get("action").and_then(Value::as_str) {
            Some("accept") => Answer::Accept(
                v.get("content")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default(),
            ),
            Some("decline") => Answer::Decline,
            _ => Answer::Cancel,
        }
    }
}

/// What the server does with an answer (§5 steps 3 to 7).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Approved: apply the plan with this hash.
    Run {
        /// The chosen plan's hash.
        plan: String,
    },
    /// Declined or cancelled: nothing runs.
    NotApproved,
    /// Show a fresh form (fresh nonce) for round `round`, saying `why`.
    AskAgain {
        /// What to tell the person (made safe to show).
        why: String,
        /// The next round.
        round: u32,
    },
    /// The call is refused.
    Refuse {
        /// Why, for the caller.
        why: String,
    },
    /// The chosen plan's tool is denied by the policy.
    Denied {
        /// Why, for the caller.
        why: String,
    },
    /// The chosen plan now needs approval outside the chat (approval codes).
    OutOfBand {
        /// The chosen plan's hash.
        plan: String,
    },
}

/// Judges an answer to the form whose state is `state` (already verified
/// and its nonce consumed, §5 steps 1–2) against the plans recomputed now.
pub fn judge(
    state: &RequestState,
    answer: &Answer,
    recomputed: &[AskedPlan],
    policy: &AskPolicy,
) -> Verdict {
    let content = match answer {
        Answer::Accept(content) => content,
        Answer::Decline | Answer::Cancel => return Verdict::NotApproved,
    };
    let chosen = match content.get("plan") {
        Some(Value::String(h)) => Some(h.as_str()),
        Some(_) => None,
        None => match state.plans.as_slice() {
            [only] => Some(only.as_str()),
            _ => None,
        },
    };
    let Some(chosen) = chosen.filter(|h| state.plans.iter().any(|p| p == h)) else {
        return Verdict::Refuse {
            why: "that plan was not offered".into(),
        };
    };
    let Some(asked) = recomputed.iter().find(|p| p.plan.hash == chosen) else {
        return ask_again(state, "the plans changed; choose again".into());
    };
    if policy.denies(&asked.plan.tool) {
        return Verdict::Denied {
            why: format!("your policy never allows {}", safe(&asked.plan.tool)),
        };
    }
    if asked.plan.risk >= policy.out_of_band {
        return Verdict::OutOfBand {
            plan: asked.plan.hash.clone(),
        };
    }
    let typed = content.get("confirm").and_then(Value::as_str).unwrap_or("");
    if !matches(typed, asked.phrase()) {
        return ask_again(
            state,
            format!("type \"{}\" exactly to approve", safe(asked.phrase())),
        );
    }
    Verdict::Run {
        plan: asked.plan.hash.clone(),
    }
}

/// Asks again in the next round, or refuses past the last one.
fn ask_again(state: &RequestState, why: String) -> Verdict {
    if state.round >= MAX_ROUNDS {
        Verdict::Refuse {
            why: format!("not approved after {MAX_ROUNDS} tries"),
        }
    } else {
        Verdict::AskAgain {
            why,
            round: state.round + 1,
        }
    }
}

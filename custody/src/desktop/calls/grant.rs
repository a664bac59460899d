//! The grant form: what it needs, the preview of what it would sign, and
//! issuing (to a waiting agent, or for the human to copy).

use super::agents::known_agents;
use super::refused;
use super::review::may_sign;
use super::{blocking, pending, request_id, timed, Caller, R};
use crate::admin::KnownAgent;
use crate::approver::{Gesture, PendingView, Verdict, Yes};
use crate::desktop::events::UiEvent;
use crate::desktop::permissions::{is_grant_form, review_label};
use crate::desktop::service::Desktop;
use crate::desktop::views::{self, KeyView};
use crate::engine::{DecideError, IssueError};
use crate::queue::Outcome;
use crate::review::{self, FormGrant, ReviewKind};
use parley_core::PublicKey;
use serde::Serialize;
use serde_json::Value;

/// What the grant form needs.
#[derive(Debug, Serialize)]
pub struct GrantContext {
    /// Keys that can sign.
    pub principals: Vec<KeyView>,
    /// Agents to pick from.
    pub known_agents: Vec<KnownAgent>,
    /// The longest grant custody signs (seconds).
    pub max_grant_lifetime_secs: i64,
    /// The pending grant request the form answers, if any.
    pub request: Option<PendingView>,
}

/// The grant form's context (principals, known agents, limits, the request).
pub async fn grant_context(state: &Desktop, request: Option<String>) -> R<GrantContext> {
    let core = state.core()?;
    let request = match request {
        Some(id) => {
            request_id(&id)?;
            let p = pending(state, &id)?;
            if p.review.kind != ReviewKind::Grant {
                return Err("That request is a consent, not a grant request.".into());
            }
            Some(p)
        }
        None => None,
    };
    let e = core.engine.clone();
    let keys = blocking("reading keys", move || e.keystore().list().map_err(refused)).await?;
    let agents = known_agents(state).await?;
    Ok(GrantContext {
        principals: keys
            .into_iter()
            .filter(|k| k.status == crate::keystore::KeyStatus::Present)
            .map(KeyView::from)
            .collect(),
        known_agents: agents,
        max_grant_lifetime_secs: core.running.max_grant_lifetime_secs,
        request,
    })
}

/// A grant issued from the form.
#[derive(Debug, Serialize)]
pub struct IssuedView {
    /// Whether the token went to the waiting agent (then it is not returned).
    pub sent_to_agent: bool,
    /// The token, for the human to copy to the agent (no request pending).
    pub token: Option<String>,
    /// The caveats as signed.
    pub caveats: Value,
    /// In plain words.
    pub caveat_words: Vec<String>,
    /// In one sentence.
    pub preview: String,
    /// What custody noticed.
    pub warnings: Vec<String>,
}

/// What the grant form's caveats would sign, for the form to show before
/// Issue: the caveats exactly as signed, in words, and every way they widen
/// the request the form answers.
#[derive(Debug, Serialize)]
pub struct GrantPreviewView {
    /// The caveats as they would be signed (sent back as `shown` on Issue).
    pub caveats: Value,
    /// In plain words.
    pub caveat_words: Vec<String>,
    /// In one sentence.
    pub preview: String,
    /// What custody noticed.
    pub warnings: Vec<String>,
    /// How this widens the agent's request, in words (sent back, word for
    /// word, once the human confirmed them).
    pub widenings: Vec<String>,
    /// The principal key that would sign.
    pub principal: String,
    /// Its label.
    pub principal_label: Option<String>,
    /// Its short form.
    pub principal_short: String,
}

fn form_principal(principal: Option<&str>) -> R<Option<PublicKey>> {
    match principal.filter(|p| !p.is_empty()) {
        Some(p) => p
            .parse()
            .map(Some)
            .map_err(|e| refuse!("the principal key is not usable: {e}")),
        None => Ok(None),
    }
}

/// Previews the grant form's caveats (nothing is signed).
pub async fn grant_preview(
    window: &Caller,
    state: &Desktop,
    agent: String,
    caveats: Value,
    principal: Option<String>,
    request: Option<String>,
) -> R<GrantPreviewView> {
    if !is_grant_form(window.label()) {
        return Err("Grants are previewed in the grant form.".into());
    }
    if let Some(id) = &request {
        request_id(id)?;
    }
    let core = state.core()?;
    let principal = form_principal(principal.as_deref())?;
    let p = timed(
        "the preview",
        core.engine.preview_grant(
            agent.trim(),
            &caveats,
            principal.as_ref(),
            request.as_deref(),
        ),
    )
    .await?
    .map_err(|e| match e {
        IssueError::Rejected(r) => format!("The grant is not valid: {}", r.message),
        e => e.to_string(),
    })?;
    let (caveat_words, _) = views::caveat_words(&p.caveats);
    Ok(GrantPreviewView {
        caveats: p.caveats,
        caveat_words,
        preview: p.review.preview,
        warnings: p.review.warnings,
        widenings: p.widenings,
        principal: p.review.principal,
        principal_label: p.review.principal_label,
        principal_short: p.review.principal_short,
    })
}

/// Issues a grant from the form: to the waiting agent (`request`), or for
/// the human to copy. `shown` is the preview's caveats the form displayed
/// (what is signed must equal them); `widenings` the preview's widenings
/// the human confirmed on purpose (they must be exactly the edit's).
#[allow(clippy::too_many_arguments)]
pub async fn grant_issue(
    window: &Caller,
    state: &Desktop,
    agent: String,
    caveats: Value,
    shown: Value,
    widenings: Vec<String>,
    gesture: Option<Gesture>,
    principal: Option<String>,
    note: Option<String>,
    request: Option<String>,
) -> R<IssuedView> {
    if !is_grant_form(window.label()) {
        return Err("Grants are issued from the grant form.".into());
    }
    let gesture = may_sign(window, gesture, "Issue")?;
    let core = state.core()?;
    let principal = form_principal(principal.as_deref())?;
    let agent = agent.trim().to_string();
    // The one place this command builds what it signs.
    let form = FormGrant {
        caveats,
        shown: Some(shown),
        confirmed_widenings: widenings,
    };
    if let Some(id) = request {
        request_id(&id)?;
        let p = pending(state, &id)?;
        if p.review.kind != ReviewKind::Grant {
            return Err("That request is a consent, not a grant request.".into());
        }
        if p.review.agent.key != agent {
            return Err("This request came from another agent key; to grant a different key, issue a separate grant.".into());
        }
        if principal
            .as_ref()
            .is_some_and(|pk| pk.to_string() != p.review.principal)
        {
            return Err(refuse!(
                "This request is answered with the principal {}; issue a separate grant to use another key.",
                p.review.principal
            ));
        }
        let outcome = timed(
            "issuing the grant",
            core.engine.decide(
                &id,
                Verdict::ApproveWith(
                    form,
                    Yes {
                        gesture,
                        second_confirmation: false,
                    },
                ),
            ),
        )
        .await?
        .map_err(|e| match e {
            DecideError::Narrowed(r) => format!("The grant is not valid: {}", r.message),
            e => e.to_string(),
        })?;
        return match outcome {
            Outcome::Issued(_, signed) => {
                state.notifier.approved(state, &p);
                // Answered: its window (which showed this form) says so,
                // then closes by itself; any other review of it closes now.
                if window.label() != review_label(&id) {
                    state.hub.send(UiEvent::Close(review_label(&id)));
                }
                let (caveat_words, preview) = views::caveat_list_words(&signed);
                Ok(IssuedView {
                    sent_to_agent: true,
                    token: None,
                    caveats: review::caveats_value(&signed),
                    caveat_words,
                    preview,
                    warnings: Vec::new(),
                })
            }
            _ => Err("The request was not issued.".into()),
        };
    }
    let issued = timed(
        "issuing the grant",
        core.engine.issue_grant(
            &agent,
            form,
            principal.as_ref(),
            note.as_deref(),
            Yes {
                gesture,
                second_confirmation: false,
            },
        ),
    )
    .await?
    .map_err(|e| match e {
        // Another decision's OS prompt is open; nothing was asked or signed.
        IssueError::StepUp(crate::stepup::StepUpError::Busy) => {
            super::CallError::new(super::error::ErrorCode::Busy, e.to_string())
        }
        IssueError::Rejected(r) => format!("The grant is not valid: {}", r.message).into(),
        e => e.to_string().into(),
    })?;
    let (caveat_words, _) = views::caveat_list_words(&issued.caveats);
    state.hub.send(UiEvent::StatusChanged);
    Ok(IssuedView {
        sent_to_agent: false,
        token: Some(issued.token),
        caveats: review::caveats_value(&issued.caveats),
        caveat_words,
        preview: issued.review.preview,
        warnings: issued.review.warnings,
    })
}

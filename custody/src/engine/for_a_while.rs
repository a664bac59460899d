//! "Approve for a while" in the engine (issue 30, item 4): the offer a
//! consent review may show, the check of the human's choice (refusals are
//! logged `short_grant_refused`), the short grant reviewed by the same
//! checklist every grant passes and signed after the consent's own step-up,
//! and [`Engine::end_short_grants`], which revokes every live one (freeze,
//! the session's lock when the setting says so). The rule itself is
//! [`crate::for_a_while`].

use super::*;
use crate::display::safe;
use crate::for_a_while::{self as rule, ForAWhile, Offer, Refused, ShortGrant, REASON_PREFIX};
use crate::revoke;

/// The most `short_grant_refused` rows written per agent key and hour.
pub const REFUSALS_PER_AGENT_HOUR: u32 = 20;

/// A short grant signed, its row not yet written.
pub(super) struct SignedShort {
    plan: ShortPlan,
    signed: signer::Signed,
}

/// A short grant ready to sign once the consent's step-up succeeded.
pub(super) struct ShortPlan {
    pub(super) offer: Offer,
    pub(super) choice: ForAWhile,
    pub(super) grant: ReviewedGrant,
    /// "and let … without asking": the words the human read.
    pub(super) words: String,
}

/// What the windows and the terminal offer for a pending consent.
#[derive(Debug, Clone, serde::Serialize)]
pub struct OfferView {
    /// The bounds and choices.
    #[serde(flatten)]
    pub offer: Offer,
    /// The agent as the words name it (the human's name, else its four
    /// words), display-safe.
    pub agent_name: String,
    /// Every amount offered, in words (`20.00 USD`), in `offer.amounts` order.
    pub amount_words: Vec<String>,
    /// Whether approving for a while asks the OS for the password (the
    /// stricter of the consent's and the grant's step-up), which the
    /// review says before Approve.
    pub asks_password: bool,
}

impl Engine {
    /// The agent's name for the words: the human's label, else its four words.
    fn name_for_words(&self, r: &review::Review) -> String {
        let label = self
            .agent_label(&r.agent.key)
            .or_else(|| r.agent.label.clone());
        safe(&crate::fingerprint::name_or(label.as_deref(), || {
            r.agent.phrase.clone()
        }))
    }

    /// What pending request `id` may offer beside Approve, or why nothing:
    /// a consent with an amount of money, not a job code, custody not frozen.
    pub fn for_a_while_offer(&self, id: &str) -> Result<OfferView, Refused> {
        let c = {
            let st = lock(&self.inner.state);
            match st.queue.get(id).map(|e| &e.item.reviewed) {
                Some(Reviewed::Consent(c)) => c.clone(),
                Some(Reviewed::Grant(_)) => return Err(Refused::GrantRequest),
                None => return Err(Refused::NotPending),
            }
        };
        if self.signing_stopped() {
            return Err(Refused::Frozen);
        }
        let offer = rule::offer(&c, self.inner.config.review.max_grant_lifetime)?;
        // The short grant has no `verbs`: it allows COMMIT.
        let grant_need = root_caveat(
            self.inner
                .config
                .step_up
                .need(stepup::Subject::Grant { commits: true }),
        );
        let consent_need = self.step_up_need(&Reviewed::Consent(c.clone()));
        Ok(OfferView {
            asks_password: consent_need.required || grant_need.required,
            agent_name: self.name_for_words(c.review()),
            amount_words: offer
                .amounts
                .iter()
                .map(|a| offer.money(*a).to_string())
                .collect(),
            offer,
        })
    }

    /// Checks the human's choice for consent `c` and builds the short grant
    /// through the grant checklist. A refusal is logged (`ev`: the
    /// request's row) and nothing is signed.
    pub(super) fn plan_short_grant(
        &self,
        c: &ReviewedConsent,
        choice: &ForAWhile,
        ev: &NewEvent,
        peer: &PeerInfo,
        now: i64,
    ) -> Result<ShortPlan, DecideError> {
        let refuse = |r: Refused| {
            let mut row = ev.clone();
            row.kind = EventKind::ShortGrantRefused;
            row.at = unix_now();
            row.reason = Some(format!(
                "{REASON_PREFIX}{r} (asked: {} minor units for {} minutes)",
                choice.amount, choice.minutes
            ));
            self.log_refusal(row);
            DecideError::ForAWhile(r)
        };
        let offer = rule::offer(c, self.inner.config.review.max_grant_lifetime).map_err(refuse)?;
        offer.check(choice).map_err(refuse)?;
        let request = c.checked().request();
        let capability = &c.checked().proposal().capability;
        let caveats = offer.caveats(&request.service, capability, choice, now);
        let words = offer.words(&self.name_for_words(c.review()), choice);
        let principals = self.principals().map_err(DecideError::Internal)?;
        let labels = self.principal_labels();
        let ctx = ReviewContext {
            now,
            principals: &principals,
            principal_labels: &labels,
            limits: self.inner.config.review,
            requester: Requester::from(peer),
            agent_label: None,
            agent_known: false,
        };
        let grant = review::review_grant(
            &c.agent().to_string(),
            &caveats,
            Some(&words),
            Some(&request.principal),
            &ctx,
        )
        .map_err(DecideError::Narrowed)?;
        Ok(ShortPlan {
            offer,
            choice: *choice,
            grant,
            words,
        })
    }

    /// Logs that an approve-for-a-while was asked for a request that may
    /// not have one (a grant request), and refuses it.
    pub(super) fn refuse_short(&self, ev: &NewEvent, r: Refused) -> DecideError {
        let mut row = ev.clone();
        row.kind = EventKind::ShortGrantRefused;
        row.at = unix_now();
        row.reason = Some(format!("{REASON_PREFIX}{r}"));
        self.log_refusal(row);
        DecideError::ForAWhile(r)
    }

    /// Writes a `short_grant_refused` row, bounded: at most
    /// [`REFUSALS_PER_AGENT_HOUR`] per agent key and hour (a UI that sends
    /// bad choices in a loop cannot fill the log); beyond that the refusal
    /// stands and only the daemon's log says so.
    fn log_refusal(&self, row: NewEvent) {
        let logged = lock(&self.inner.audit)
            .query(&Query {
                kinds: vec![EventKind::ShortGrantRefused],
                agent: row.agent.clone(),
                since: Some(row.at - 3600),
                limit: Some(REFUSALS_PER_AGENT_HOUR),
                ..Default::default()
            })
            .map(|r| r.len() as u32)
            .unwrap_or(REFUSALS_PER_AGENT_HOUR);
        if logged < REFUSALS_PER_AGENT_HOUR {
            let _ = self.log(row);
        } else {
            tracing::warn!(
                "approve-for-a-while refused again for this agent (not logged: {} rows this hour already): {}",
                REFUSALS_PER_AGENT_HOUR,
                row.reason.as_deref().unwrap_or_default()
            );
        }
    }

    /// The step-up for a consent approved for a while: the stricter of the
    /// consent's and the short grant's needs (one OS prompt covers both).
    pub(super) fn step_up_with_short(&self, need: StepUpNeed, plan: &ShortPlan) -> StepUpNeed {
        if need.required {
            return need;
        }
        let g = root_caveat(
            self.inner
                .config
                .step_up
                .need(super::grant_subject(&plan.grant)),
        );
        if g.required {
            g
        } else {
            need
        }
    }

    /// Signs the short grant (after the consent's step-up, with the same
    /// yes); nothing is recorded yet ([`Engine::record_short`]).
    pub(super) async fn sign_short(
        &self,
        plan: ShortPlan,
        yes: Yes,
        os: bool,
        now: i64,
    ) -> Result<SignedShort, DecideError> {
        let g = plan.grant.clone();
        let subject = Approval::subject_of_grant(&g.agent().to_string(), g.caveats());
        let approval = Approval::confirmed(yes, os, subject);
        let me = self.clone();
        let signed = tokio::task::spawn_blocking(move || {
            signer::sign_grant(&me.inner.keystore, &g, &approval, now)
        })
        .await
        .map_err(|e| DecideError::Internal(e.to_string()))??;
        Ok(SignedShort { plan, signed })
    }

    /// Writes the short grant's `grant_issued` row (`ev` is the consent's
    /// row), marked by its `for_a_while` column (the minutes chosen): the
    /// only mark custody reads to know a short grant (never the reason,
    /// which for a grant request is the agent's). Returns what the agent is
    /// sent, or `None` (logged) when the row could not be written: then the
    /// grant is never handed out.
    pub(super) fn record_short(&self, s: SignedShort, mut ev: NewEvent) -> Option<ShortGrant> {
        let SignedShort { plan, signed } = s;
        let g = &plan.grant;
        ev.kind = EventKind::GrantIssued;
        ev.token_id = Some(signed.id.clone());
        ev.expires = Some(signed.exp);
        ev.caveats = Some(g.caveats_value().to_string());
        ev.hash = None;
        ev.cost_amount = Some(plan.choice.amount);
        ev.cost_currency = Some(plan.offer.order.currency.clone());
        ev.reason = Some(plan.words.clone());
        ev.for_a_while = Some(i64::from(plan.choice.minutes));
        if let Err(e) = self.log(ev) {
            tracing::error!("the approve-for-a-while grant was not handed out: {e}");
            return None;
        }
        Some(ShortGrant {
            token: signed.token,
            caveats: g.caveats().to_vec(),
            exp: signed.exp,
            words: plan.words,
        })
    }

    /// The OS prompt for a consent approved for a while: one sentence
    /// naming both (the consent, then "a grant for up to X … for N
    /// minutes"), and the grant on a key of its own.
    pub(super) fn prompt_with_short(
        &self,
        consent: PromptDetails,
        r: &review::Review,
        label: Option<&str>,
        plan: &ShortPlan,
    ) -> PromptDetails {
        let grant = plan.offer.prompt_words(&plan.choice);
        let decision = super::prompt::consent_and_grant(r, label, &grant);
        consent
            .with("decision", &decision)
            .with("for_a_while", &grant)
    }

    /// Ends every live approve-for-a-while grant: signs and publishes a
    /// revocation for each ([`crate::revoke::sign_unasked`], then [`crate::revoke::publish`]) and records it.
    /// Asks nothing: a revocation only restricts; the approval is custody's
    /// own, unasked, and the rows say why (`why`). Called on freeze, and by
    /// the session's lock when the human's setting says so. Which grants:
    /// exactly the live short grants the log marks as such
    /// ([`crate::audit::Audit::live_short_grants`]), however many. Returns
    /// the grant ids ended; one that cannot be ended is logged and the
    /// others still are. Blocking (SQLite, the keystore).
    pub fn end_short_grants(&self, why: Unasked) -> Vec<String> {
        let now = unix_now();
        let live = match lock(&self.inner.audit).live_short_grants(now) {
            Ok(live) => live,
            Err(e) => {
                tracing::error!("live approve-for-a-while grants could not be read: {e}");
                Vec::new()
            }
        };
        let mut ended = Vec::new();
        let data = lock(&self.inner.audit)
            .path()
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        for grant in live {
            let done = self.end_one_unasked(&data, &grant, why, now);
            match done {
                Ok(_) => ended.push(grant.token_id().to_owned()),
                Err(e) => tracing::error!(
                    "approve-for-a-while grant {} was not ended: {e}",
                    grant.token_id()
                ),
            }
        }
        ended
    }
}

impl Engine {
    /// Ends one short grant: the log held to check and to record it, not
    /// while the key signs (the keychain may ask to be unlocked; requests
    /// keep flowing meanwhile).
    fn end_one_unasked(
        &self,
        data: &Path,
        grant: &LiveShortGrant,
        why: Unasked,
        now: i64,
    ) -> Result<revoke::Revoked, revoke::RevokeError> {
        let principal = {
            let audit = lock(&self.inner.audit);
            revoke::check(&audit, data, grant.token_id())?
        };
        let signed = revoke::sign_unasked(&self.inner.keystore, &principal, grant, why, now)?;
        let mut audit = lock(&self.inner.audit);
        revoke::publish(&mut audit, data, signed)
    }
}

use crate::approval::Unasked;
use crate::audit::LiveShortGrant;
use std::path::Path;

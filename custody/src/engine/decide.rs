//! A decision carried out: the approver's yes checked against the review,
//! OS authentication where the policy asks, signing, the audit row, and only
//! then the token released; expiry and withdrawal close a request the same way.

use super::*;

impl Engine {
    /// Removes a pending request with a non-signing outcome, tells its
    /// waiters and the approver, and logs it.
    pub(super) fn close(&self, id: &str, outcome: Outcome, kind: EventKind, reason: Option<&str>) {
        let (entry, waiters) = {
            let mut st = lock(&self.inner.state);
            if st.deciding.iter().any(|d| d == id) {
                return;
            }
            let keep = Instant::now() + Duration::from_secs(600);
            let Some(entry) = st.queue.finish(id, outcome.clone(), Instant::now(), keep) else {
                return;
            };
            let waiters = st.waiters.remove(id).unwrap_or_default();
            (entry, waiters)
        };
        let mut ev = event(kind, &entry.item);
        ev.reason = reason.map(str::to_string).or_else(|| match &outcome {
            Outcome::Denied(r) => r.clone(),
            _ => None,
        });
        let _ = self.log(ev);
        // Off the screen first, then tell the agent: nobody can act on a
        // request whose answer is already out.
        self.inner.approver.withdrawn(id);
        for w in waiters {
            let _ = w.send(outcome.clone());
        }
    }

    /// The human's decision on a pending request. Approving checks the
    /// approver's yes against the review, asks for OS authentication where
    /// the policy says so, signs, writes the audit row, and only then
    /// releases the token to the waiting agent.
    ///
    /// The work runs in a task of its own: a caller that stops waiting (a
    /// window closed, a command timed out) can neither cut a decision in half
    /// nor leave the request stuck as "being decided".
    pub async fn decide(&self, id: &str, verdict: Verdict) -> Result<Outcome, DecideError> {
        let me = self.clone();
        let id = id.to_string();
        tokio::spawn(async move { me.decide_now(&id, verdict).await })
            .await
            .map_err(|e| DecideError::Internal(e.to_string()))?
    }

    pub(super) async fn decide_now(
        &self,
        id: &str,
        verdict: Verdict,
    ) -> Result<Outcome, DecideError> {
        let reviewed = {
            let mut st = lock(&self.inner.state);
            if st.deciding.iter().any(|d| d == id) {
                return Err(DecideError::NotPending);
            }
            let reviewed = st
                .queue
                .get(id)
                .map(|e| e.item.reviewed.clone())
                .ok_or(DecideError::NotPending)?;
            st.deciding.push(id.to_string());
            reviewed
        };
        let result = {
            let _deciding = Deciding { engine: self, id };
            self.carry_out(id, reviewed, verdict).await
        };
        let (outcome, kind, keep_until) = match result {
            Ok(r) => r,
            Err(e) => {
                // Still pending: its expiry may have passed meanwhile (the
                // expiry timer leaves requests being decided alone).
                self.expire_if_due(id);
                return Err(e);
            }
        };
        let (entry, waiters) = {
            let mut st = lock(&self.inner.state);
            let now = Instant::now();
            let keep =
                now + Duration::from_secs((keep_until - unix_now()).clamp(0, 7 * 86400) as u64);
            let entry = st.queue.finish(id, outcome.clone(), now, keep);
            (entry, st.waiters.remove(id).unwrap_or_default())
        };
        if let (Some(entry), EventKind::ConsentDenied | EventKind::GrantDenied) = (&entry, kind) {
            let mut ev = event(kind, &entry.item);
            if let Outcome::Denied(r) = &outcome {
                ev.reason = r.clone();
            }
            let _ = self.log(ev);
        }
        // Off the screen first, then tell the agent: nobody can act on a
        // request whose answer is already out.
        self.inner.approver.withdrawn(id);
        for w in waiters {
            let _ = w.send(outcome.clone());
        }
        Ok(outcome)
    }

    /// Closes a pending request whose deadline has passed.
    pub(super) fn expire_if_due(&self, id: &str) {
        let due = lock(&self.inner.state)
            .queue
            .get(id)
            .is_some_and(|e| e.deadline <= Instant::now());
        if due {
            self.close(
                id,
                Outcome::Expired,
                EventKind::RequestExpired,
                Some("expired while the decision was being made"),
            );
        }
    }

    pub(super) async fn carry_out(
        &self,
        id: &str,
        reviewed: Reviewed,
        verdict: Verdict,
    ) -> Result<(Outcome, EventKind, i64), DecideError> {
        let now = unix_now();
        let (item_event, peer) = {
            let st = lock(&self.inner.state);
            st.queue
                .get(id)
                .map(|e| {
                    (
                        event(EventKind::ConsentApproved, &e.item),
                        e.item.peer.clone(),
                    )
                })
                .ok_or(DecideError::NotPending)?
        };
        // Locked or going to sleep: no approval counts (a denial still does).
        if let (Some(h), false) = (
            self.inner.config.session.hold(),
            matches!(verdict, Verdict::Deny(_)),
        ) {
            return Err(DecideError::Session(h));
        }
        let mut short = None;
        let (yes, reviewed) = match (reviewed, verdict) {
            (Reviewed::Consent(_), Verdict::Deny(r)) => {
                return Ok((Outcome::Denied(r), EventKind::ConsentDenied, now + 600))
            }
            (Reviewed::Grant(_), Verdict::Deny(r)) => {
                return Ok((Outcome::Denied(r), EventKind::GrantDenied, now + 600))
            }
            // Frozen: nothing is signed, whatever the human clicked before.
            _ if self.signing_stopped() => return Err(DecideError::Frozen),
            (Reviewed::Consent(_), Verdict::ApproveWith(..)) => return Err(DecideError::NotAGrant),
            // A job is approved only with its phrase typed (SPEC-approval §3):
            // the engine checks it, whatever the approver showed.
            (Reviewed::Consent(c), Verdict::ApproveTyped(yes, typed)) => match c.job_phrase() {
                Some(p) if parley_custody_client::phrase::matches(&typed, p) => {
                    (yes, Reviewed::Consent(c))
                }
                Some(p) => return Err(DecideError::Phrase(p.to_string())),
                None => return Err(DecideError::NoPhrase),
            },
            (Reviewed::Grant(_), Verdict::ApproveTyped(..)) => return Err(DecideError::NoPhrase),
            (Reviewed::Consent(c), Verdict::Approve(_)) if c.job_phrase().is_some() => {
                return Err(DecideError::Phrase(
                    c.job_phrase().unwrap_or_default().to_string(),
                ))
            }
            // Approve for a while: the engine checks the choice against its
            // own offer (a job code, a bad amount or minutes: refused, logged).
            (Reviewed::Consent(c), Verdict::ApproveForAWhile(yes, w)) => {
                short = Some(self.plan_short_grant(&c, &w, &item_event, &peer, now)?);
                (yes, Reviewed::Consent(c))
            }
            (Reviewed::Grant(_), Verdict::ApproveForAWhile(..)) => {
                return Err(
                    self.refuse_short(&item_event, crate::for_a_while::Refused::GrantRequest)
                )
            }
            (reviewed, Verdict::Approve(yes)) => (yes, reviewed),
            (Reviewed::Grant(g), Verdict::ApproveWith(form, yes)) => {
                let principals = self.principals().map_err(DecideError::Internal)?;
                let labels = self.principal_labels();
                let ctx = ReviewContext {
                    now,
                    principals: &principals,
                    principal_labels: &labels,
                    limits: self.inner.config.review,
                    requester: Requester::from(&peer),
                    agent_label: None,
                    agent_known: false,
                };
                let narrowed = g.narrowed(&form, &ctx).map_err(DecideError::Narrowed)?;
                (yes, Reviewed::Grant(Box::new(narrowed)))
            }
        };
        // The engine, not the approver, enforces what the review promises.
        if reviewed.review().needs_second_confirmation && !yes.second_confirmation {
            return Err(DecideError::SecondConfirmation);
        }
        let mut item_event = item_event;
        if let Reviewed::Grant(g) = &reviewed {
            item_event.caveats = Some(g.caveats_value().to_string());
        }
        let mut need = self.step_up_need(&reviewed);
        if let Some(plan) = &short {
            need = self.step_up_with_short(need, plan);
        }
        // No password asked for a signature the log has no room to record.
        if need.required {
            self.ready_to_record().map_err(DecideError::Audit)?;
        }
        // The OS prompt names what this password signs.
        let label = self
            .agent_label(&reviewed.review().agent.key)
            .or_else(|| reviewed.review().agent.label.clone());
        let details = match &reviewed {
            Reviewed::Consent(c) => super::prompt::consent(c.review(), label.as_deref()),
            Reviewed::Grant(g) => super::prompt::grant(g.review(), label.as_deref(), g.caveats()),
        };
        let details = match &short {
            Some(plan) => {
                self.prompt_with_short(details, reviewed.review(), label.as_deref(), plan)
            }
            None => details,
        };
        let os = self
            .step_up(&need, &details, Some(item_event.clone()))
            .await
            .map_err(|e| match e {
                StepUpError::Held(h) => DecideError::Session(h),
                e => DecideError::StepUp(e),
            })?;
        let subject = match &reviewed {
            Reviewed::Consent(c) => {
                Approval::subject_of_consent(&c.checked().proposal().hash, &c.agent().to_string())
            }
            Reviewed::Grant(g) => Approval::subject_of_grant(&g.agent().to_string(), g.caveats()),
        };
        // Custody may have been frozen while the OS asked.
        if self.signing_stopped() {
            return Err(DecideError::Frozen);
        }
        // Or the session locked, or sleep came, just as the OS answered.
        if let Some(h) = self.inner.config.session.hold() {
            return Err(DecideError::Session(h));
        }
        let approval = Approval::confirmed(yes, os, subject);
        // Authentication may have taken a while: the clock is read again.
        let now = unix_now();
        let mut ev = item_event;
        ev.at = now;
        ev.peer_chain = peer.chain.rechecked().to_audit_text();
        ev.confirmed_by = Some(approval.confirmed_by());
        match reviewed {
            Reviewed::Consent(c) => {
                if c.checked().exp() <= now {
                    self.close_expired_after_decision(id);
                    return Err(DecideError::NotPending);
                }
                // Nothing is signed that the log has no room to record.
                self.ready_to_record().map_err(DecideError::Audit)?;
                let me = self.clone();
                let cc = c.clone();
                let a = approval.clone();
                let signed = tokio::task::spawn_blocking(move || {
                    signer::sign_consent(&me.inner.keystore, &cc, &a, now)
                })
                .await
                .map_err(|e| DecideError::Internal(e.to_string()))??;
                ev.kind = EventKind::ConsentApproved;
                ev.token_id = Some(signed.id.clone());
                ev.expires = Some(signed.exp);
                let grant_ev = ev.clone();
                // The short grant, after the same step-up and the same yes,
                // signed before either row is written: a failure to sign it
                // leaves nothing recorded and the request waiting.
                let short = match short {
                    Some(plan) => Some(self.sign_short(plan, yes, os, now).await?),
                    None => None,
                };
                self.log(ev).map_err(DecideError::Audit)?;
                // A short grant whose row cannot be written is not handed
                // out; the consent, recorded, still is.
                let short = short.and_then(|s| self.record_short(s, grant_ev).map(Box::new));
                Ok((
                    Outcome::Approved(signed.token, short),
                    EventKind::ConsentApproved,
                    signed.exp,
                ))
            }
            Reviewed::Grant(g) => {
                // Nothing is signed that the log has no room to record.
                self.ready_to_record().map_err(DecideError::Audit)?;
                let me = self.clone();
                let gg = g.clone();
                let a = approval.clone();
                let signed = tokio::task::spawn_blocking(move || {
                    signer::sign_grant(&me.inner.keystore, &gg, &a, now)
                })
                .await
                .map_err(|e| DecideError::Internal(e.to_string()))??;
                ev.kind = EventKind::GrantIssued;
                ev.token_id = Some(signed.id.clone());
                ev.expires = Some(signed.exp);
                ev.caveats = Some(g.caveats_value().to_string());
                self.log(ev).map_err(DecideError::Audit)?;
                Ok((
                    Outcome::Issued(signed.token, g.caveats().to_vec()),
                    EventKind::GrantIssued,
                    signed.exp,
                ))
            }
        }
    }

    /// A consent approved after its expiry: closed as expired. Runs while
    /// the request is still marked as being decided, so the mark is lifted
    /// first.
    pub(super) fn close_expired_after_decision(&self, id: &str) {
        lock(&self.inner.state).deciding.retain(|d| d != id);
        self.close(
            id,
            Outcome::Expired,
            EventKind::RequestExpired,
            Some("approved after expiry"),
        );
    }
}

/// Marks a request as being decided for as long as it lives, so the mark is
/// lifted however the decision ends (error, panic, cancellation).
pub(super) struct Deciding<'a> {
    engine: &'a Engine,
    id: &'a str,
}

impl Drop for Deciding<'_> {
    fn drop(&mut self) {
        lock(&self.engine.inner.state)
            .deciding
            .retain(|d| d != self.id);
    }
}

/// polkit authorizes root without asking anything, so for custody running
/// as root a "step-up" would be a promise nobody keeps: none is asked, and
/// the review says plainly that only the click protects the approval.
pub(super) fn root_caveat(mut need: StepUpNeed) -> StepUpNeed {
    if need.required && crate::ipc::peer::PeerPolicy::own_user_only().own_uid == 0 {
        need.required = false;
        need.words = "Custody runs as root, which the system authorizes without asking: \
                      no OS authentication protects this approval, only your click."
            .into();
    }
    need
}

/// The audit event describing a queued item (kind set by the caller).
pub(super) fn event(kind: EventKind, item: &Item) -> NewEvent {
    let r = item.reviewed.review();
    let mut ev = NewEvent::new(kind, unix_now());
    ev.peer_uid = Some(item.peer.uid);
    ev.peer_pid = item.peer.pid.map(i64::from);
    ev.peer_exe = item
        .peer
        .exe
        .as_ref()
        .map(|e| e.to_string_lossy().into_owned());
    // Checked again as it is recorded: the row says which of the processes
    // were still the ones that asked.
    ev.peer_chain = item.peer.chain.rechecked().to_audit_text();
    ev.agent = Some(r.agent.key.clone());
    ev.principal = Some(r.principal.clone());
    ev.expires = Some(r.expires);
    match &item.reviewed {
        Reviewed::Consent(c) => {
            let p = c.checked().proposal();
            ev.service = Some(c.checked().request().service.clone());
            ev.capability = Some(p.capability.clone());
            ev.hash = Some(p.hash.clone());
            let money = c.review().cost_money.as_ref();
            ev.cost_amount = money.map(|m| m.amount);
            ev.cost_currency = money.map(|m| m.currency.clone());
            ev.risk = Some(p.risk.to_string());
            ev.undo = p.undo;
        }
        Reviewed::Grant(g) => {
            ev.caveats = Some(g.caveats_value().to_string());
            ev.service = g.caveats().iter().find_map(|c| match c {
                parley_core::Caveat::Svc(l) => Some(l.join(",")),
                _ => None,
            });
        }
    }
    ev
}

pub(super) fn outcome_reply(o: Outcome) -> Reply {
    match o {
        Outcome::Approved(grant, short) => Reply::Approved {
            grant,
            for_a_while: short.map(|s| crate::protocol::ForAWhileGrant {
                grant: s.token,
                caveats: review::caveats_value(&s.caveats),
            }),
        },
        Outcome::Issued(grant, caveats) => Reply::Issued {
            grant,
            caveats: review::caveats_value(&caveats),
        },
        Outcome::Denied(reason) => Reply::Denied { reason },
        Outcome::Expired => Reply::Expired,
        Outcome::Cancelled => Reply::Cancelled,
    }
}

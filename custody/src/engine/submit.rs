//! A request from an agent: rate limit, re-verification, insight, the queue,
//! and the agent told `PENDING` while the human decides.

use super::*;

impl Engine {
    pub(super) async fn submit(
        &self,
        peer: &PeerInfo,
        request_id: &str,
        op: Op,
        out: &mpsc::Sender<Value>,
    ) -> Reply {
        if let Err(refused) = lock(&self.inner.state)
            .queue
            .admit(peer.uid, Instant::now())
        {
            tracing::warn!(uid = peer.uid, "request refused: {refused}");
            // Refused before review, still a request the log accounts for.
            let _ = self.log(refused_event(peer, &refused));
            return refusal(refused);
        }
        let me = self.clone();
        let p = peer.clone();
        let reviewed = match tokio::task::spawn_blocking(move || me.review(&p, op)).await {
            Ok(r) => r,
            Err(e) => return Reply::error(ErrorCode::Internal, e.to_string()),
        };
        let (reviewed, agent) = match reviewed {
            Ok(r) => r,
            Err(rejected) => {
                let (rej, ev) = *rejected;
                tracing::warn!(uid = peer.uid, pid = ?peer.pid, code = rej.code, "request rejected: {}", crate::display::for_log(&rej.message));
                let _ = self.log(ev);
                return Reply::Rejected {
                    code: rej.code.to_string(),
                    message: rej.message,
                };
            }
        };
        let now = unix_now();
        let (dedupe, valid_for) = match &reviewed {
            // Joins only a request the human would see as the same one:
            // every field the review shows is in the key, JSON-quoted so no
            // two requests share one (a look-alike service, another principal,
            // summary, capability, expiry or dialect is a request of its own).
            Reviewed::Consent(c) => {
                let r = c.checked().request();
                let shown = serde_json::json!([
                    r.service,
                    r.capability,
                    r.principal.to_string(),
                    r.summary,
                    r.expires,
                    c.review().dialect.name(),
                ]);
                (
                    format!("c|{}|{}|{}|{shown}", peer.uid, agent, c.review().hash),
                    (c.checked().exp() - now).max(0),
                )
            }
            Reviewed::Grant(g) => (
                format!(
                    "g|{}|{}|{}",
                    peer.uid,
                    agent,
                    serde_json::to_string(&g.review().caveats).unwrap_or_default()
                ),
                i64::MAX,
            ),
        };
        let t = Instant::now();
        let valid_until = t + Duration::from_secs(valid_for.min(10 * 365 * 86400) as u64);
        let item = Item {
            reviewed,
            peer: peer.clone(),
            received_at: now,
        };
        let (tx, rx) = oneshot::channel();
        let offered = {
            let mut st = lock(&self.inner.state);
            let o = st
                .queue
                .offer(peer.uid, request_id, dedupe, item, t, valid_until);
            if let Ok(Offer::New(id) | Offer::Joined(id)) = &o {
                st.waiters.entry(id.clone()).or_default().push(tx);
            }
            o
        };
        let id = match offered {
            Err(refused) => {
                tracing::warn!(uid = peer.uid, "request refused: {refused}");
                let _ = self.log(refused_event(peer, &refused));
                return refusal(refused);
            }
            Ok(Offer::Done(outcome)) => return outcome_reply(outcome),
            Ok(Offer::New(id)) => {
                let (pv, deadline) = {
                    let st = lock(&self.inner.state);
                    match st.queue.get(&id) {
                        Some(e) => (self.view(&e.id, &e.item, e.deadline), e.deadline),
                        None => return Reply::Expired,
                    }
                };
                self.inner.approver.notify(&pv);
                let me = self.clone();
                let expire_id = id.clone();
                tokio::spawn(async move {
                    tokio::time::sleep_until(deadline.into()).await;
                    me.close(
                        &expire_id,
                        Outcome::Expired,
                        EventKind::RequestExpired,
                        None,
                    );
                });
                id
            }
            Ok(Offer::Joined(id)) => id,
        };
        let position = lock(&self.inner.state)
            .queue
            .position(&id)
            .map(|p| p as u64);
        let pending = Reply::Pending {
            request: request_id.to_string(),
            position,
        };
        let _ = out.send(pending.to_frame(Some(request_id))).await;
        tokio::select! {
            outcome = rx => match outcome {
                Ok(o) => outcome_reply(o),
                Err(_) => Reply::Expired,
            },
            _ = out.closed() => {
                // The agent went away: if nobody else waits, withdraw the prompt.
                let last = lock(&self.inner.state).queue.drop_waiter(&id, request_id);
                if last {
                    self.close(&id, Outcome::Cancelled, EventKind::RequestCancelled, Some("the agent disconnected"));
                }
                Reply::Cancelled
            }
        }
    }

    /// Reviews a request (blocking: reads the keystore and the audit log).
    pub(super) fn review(
        &self,
        peer: &PeerInfo,
        op: Op,
    ) -> Result<(Reviewed, String), Box<(Rejection, NewEvent)>> {
        let now = unix_now();
        let mut ev = NewEvent::new(EventKind::RequestRejected, now);
        ev.peer_uid = Some(peer.uid);
        ev.peer_pid = peer.pid.map(i64::from);
        ev.peer_exe = peer.exe.as_ref().map(|e| e.to_string_lossy().into_owned());
        ev.peer_chain = peer.chain.rechecked().to_audit_text();
        let principals = match self.principals() {
            Ok(p) => p,
            Err(e) => {
                ev.reason = Some(format!("keystore unavailable: {e}"));
                return Err(Box::new((
                    Rejection {
                        code: "keystore",
                        message: format!("the keystore is unavailable: {e}"),
                    },
                    ev,
                )));
            }
        };
        let agent_text = match &op {
            // A job code's consent is for the job server's key: its label,
            // pause and history are the server's, not the asking agent's.
            Op::ApproveCode { code, .. } if review::is_job_code(code) => {
                review::job_server(code).unwrap_or_default()
            }
            Op::Consent { agent, .. } | Op::ApproveCode { agent, .. } | Op::Grant { agent, .. } => {
                agent.clone()
            }
            _ => String::new(),
        };
        if let Some(rej) = self.frozen_rejection() {
            ev.agent = Some(agent_text);
            ev.reason = Some(format!("{}: {}", rej.code, rej.message));
            return Err(Box::new((rej, ev)));
        }
        // A paused agent is refused whoever the consent is for: the asking
        // agent of a job code too (it may not route asks through a server).
        let asking = match &op {
            Op::ApproveCode { agent, .. } if *agent != agent_text => Some(agent.as_str()),
            _ => None,
        };
        for who in std::iter::once(agent_text.as_str()).chain(asking) {
            if let Some(rej) = self.paused_rejection(who, now) {
                ev.agent = Some(who.to_string());
                ev.reason = Some(format!("{}: {}", rej.code, rej.message));
                return Err(Box::new((rej, ev)));
            }
        }
        let labels = self.principal_labels();
        let ctx = ReviewContext {
            now,
            principals: &principals,
            principal_labels: &labels,
            limits: self.inner.config.review,
            requester: Requester::from(peer),
            agent_label: self.agent_label(&agent_text),
            agent_known: self.agent_known(&agent_text),
        };
        let result = match &op {
            Op::Consent {
                consent,
                proposal,
                service,
                agent,
                dialect,
            } => {
                ev.service = Some(service.clone());
                review::review_consent_in(consent, proposal, service, agent, *dialect, &ctx)
                    .map(|c| Reviewed::Consent(Box::new(c)))
            }
            Op::ApproveCode {
                code,
                agent,
                dialect,
            } => review::review_code_in(code, agent, *dialect, &ctx)
                .map(|c| Reviewed::Consent(Box::new(c))),
            Op::Grant {
                agent,
                caveats,
                reason,
                ..
            } => {
                // Stored whole: the audit writer cuts what is too long and
                // records its original size.
                ev.caveats = serde_json::to_string(caveats).ok();
                review::review_grant(agent, caveats, reason.as_deref(), None, &ctx)
                    .map(|g| Reviewed::Grant(Box::new(g)))
            }
            _ => unreachable_op(),
        };
        match result {
            Ok(mut r) => {
                self.add_insight(&mut r, peer, now);
                Ok((r, agent_text))
            }
            Err(rej) => {
                // Whole: the audit writer cuts oversized fields (a visible
                // mark, the original size in the row's `cut`), so a hostile
                // 900 KB field can neither stop the row nor fill the disk.
                ev.agent = Some(agent_text);
                ev.reason = Some(format!("{}: {}", rej.code, rej.message));
                if let Op::ApproveCode { code, .. } = &op {
                    if let Ok(c) = parley_core::code::decode(code) {
                        ev.hash = Some(c.consent.hash.clone());
                        ev.capability = Some(c.consent.capability.clone());
                        ev.service = Some(c.consent.service.clone());
                    }
                }
                if let Op::Consent { consent, .. } = &op {
                    ev.hash = consent
                        .get("hash")
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                    ev.capability = consent
                        .get("capability")
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                }
                Err(Box::new((rej, ev)))
            }
        }
    }

    /// Adds to a review what custody's own log says: what is unusual about
    /// the request ([`crate::unusual`]) and what the agent has done
    /// ([`crate::activity`]). A log that cannot be read leaves the review as
    /// it is (and says so in the daemon's log): insight informs, it never
    /// blocks.
    pub(super) fn add_insight(&self, reviewed: &mut Reviewed, peer: &PeerInfo, now: i64) {
        let audit = lock(&self.inner.audit);
        let exe = peer.exe.as_ref().map(|e| e.to_string_lossy().into_owned());
        let gathered = {
            let subject = match &*reviewed {
                Reviewed::Consent(c) => crate::unusual::Subject::of_consent(c),
                Reviewed::Grant(g) => crate::unusual::Subject::of_grant(g),
            }
            .asked_by(peer.uid, exe.as_deref());
            crate::unusual::Facts::gather(&audit, &subject, now).and_then(|facts| {
                let unusual = crate::unusual::assess(&subject, &facts);
                let activity =
                    crate::activity::AgentActivity::of_agent(&audit, &subject.agent, now)?;
                let why = match &*reviewed {
                    Reviewed::Consent(c) => Some(why_asked(&audit, c, now)?),
                    Reviewed::Grant(_) => None,
                };
                Ok((unusual, activity, why))
            })
        };
        drop(audit);
        match gathered {
            Ok((unusual, activity, why)) => match reviewed {
                Reviewed::Consent(c) => {
                    c.add_insight(unusual, Some(activity));
                    c.set_why(why);
                }
                Reviewed::Grant(g) => g.add_insight(unusual, Some(activity)),
            },
            Err(e) => tracing::error!("the audit log could not be read for the review: {e}"),
        }
    }

    /// Whether the audit log can record one more row (disk space, not
    /// read-only); checked right before every signature.
    pub(super) fn ready_to_record(&self) -> Result<(), String> {
        let r = lock(&self.inner.audit)
            .ready_to_record()
            .map_err(|e| e.to_string());
        if let Err(e) = &r {
            tracing::error!("refusing to sign: {e}");
        }
        r
    }
}

/// Why custody asks about consent `c`: the grants it issued to the agent,
/// read from the log, compared with the proposal ([`review::why_asked()`]).
fn why_asked(
    audit: &crate::audit::Audit,
    c: &review::ReviewedConsent,
    now: i64,
) -> Result<review::WhyAsked, crate::audit::AuditError> {
    let agent = c.agent().to_string();
    let mut grants = Vec::new();
    for row in audit.grants_issued_to(&agent)? {
        let (issued_at, expires) = (row.issued_at, row.expires);
        let Ok(Value::Array(list)) = serde_json::from_str::<Value>(&row.caveats) else {
            continue;
        };
        let counted = audit
            .spent_by_agent(&agent, issued_at)?
            .into_iter()
            .map(|t| parley_core::money::Money {
                amount: t.amount,
                currency: t.currency,
            })
            .collect();
        grants.push(review::IssuedGrant {
            caveats: list
                .iter()
                .map(parley_core::caveat::Caveat::parse)
                .collect(),
            issued_at,
            expires,
            revoked: row.revoked,
            counted,
        });
    }
    let p = c.checked().proposal();
    let asked = review::Proposed {
        service: &c.checked().request().service,
        capability: &c.checked().request().capability,
        cost: c.review().cost_money.as_ref(),
        risk: p.risk,
    };
    Ok(review::why_asked(&asked, &grants, now))
}

pub(super) fn unreachable_op() -> Result<Reviewed, Rejection> {
    Err(Rejection {
        code: "internal",
        message: "not a reviewable op".into(),
    })
}

/// The audit row of a request refused before review (rate limit, full
/// queue): a rejection like any other, under the retention policy.
pub(super) fn refused_event(peer: &PeerInfo, refused: &Refused) -> NewEvent {
    let mut ev = NewEvent::new(EventKind::RequestRejected, unix_now());
    ev.peer_uid = Some(peer.uid);
    ev.peer_pid = peer.pid.map(i64::from);
    ev.peer_exe = peer.exe.as_ref().map(|e| e.to_string_lossy().into_owned());
    ev.peer_chain = peer.chain.rechecked().to_audit_text();
    let code = match refused {
        Refused::RateLimited => "rate_limited",
        Refused::Busy => "busy",
    };
    ev.reason = Some(format!("{code}: {refused}"));
    ev
}

pub(super) fn refusal(r: Refused) -> Reply {
    match r {
        Refused::RateLimited => Reply::error(ErrorCode::RateLimited, r.to_string()),
        Refused::Busy => Reply::error(ErrorCode::Busy, r.to_string()),
    }
}

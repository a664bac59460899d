//! Grants from the human's own form (no agent request waiting): previewed
//! with the same review as an agent's request, then issued.

use super::*;

/// A grant the human issued from the form, with no agent request pending.
#[derive(Debug, Clone)]
pub struct IssuedGrant {
    /// The `pg1.` token (for the agent; not key material).
    pub token: String,
    /// The grant id, as in the audit log.
    pub id: String,
    /// Its expiry (unix seconds).
    pub exp: i64,
    /// The caveats exactly as signed.
    pub caveats: Vec<parley_core::Caveat>,
    /// The review of what was signed (preview, caveats in words, warnings).
    pub review: review::Review,
}

/// The grant form's preview: what its caveats would sign.
#[derive(Debug, Clone)]
pub struct GrantPreview {
    /// The caveats exactly as they would be signed (the form sends them back as `shown`).
    pub caveats: Value,
    /// How they widen the request the form answers, in words (empty: they do not).
    pub widenings: Vec<String>,
    /// The review of that grant (in words, warnings, principal).
    pub review: review::Review,
}

impl Engine {
    /// A grant the human issues from the form, with no agent request pending
    /// (the requester is the local human, this process). The caveats pass the
    /// same review as an agent's request (every caveat well formed, `exp`
    /// present and within the configured lifetime: a missing or later one is
    /// clamped, and the review says so); the grant is signed, the
    /// `grant_issued` row written, and only then is the token returned.
    /// `form` is the caveats (a `&Value` converts) or the form's whole
    /// [`FormGrant`], whose `shown` caveats must be what is signed.
    pub async fn issue_grant(
        &self,
        agent: &str,
        form: impl Into<FormGrant>,
        principal: Option<&PublicKey>,
        note: Option<&str>,
        yes: Yes,
    ) -> Result<IssuedGrant, IssueError> {
        // Frozen: nothing is signed, the human's own form included.
        if self.signing_stopped() {
            tracing::warn!("the human's grant was refused: custody is frozen");
            return Err(IssueError::Frozen);
        }
        // Locked or going to sleep: the form signs nothing either.
        if let Some(h) = self.inner.config.session.hold() {
            return Err(IssueError::Session(h));
        }
        let me = self.clone();
        let (agent, form, principal) = (agent.to_string(), form.into(), principal.cloned());
        let now = unix_now();
        let (reviewed, requester) = tokio::task::spawn_blocking(move || {
            let principals = me.principals().map_err(IssueError::Internal)?;
            let own = crate::ipc::peer::PeerPolicy::own_user_only().own_uid;
            let human =
                PeerInfo::from_creds(own, crate::ipc::peer::UNKNOWN_ID, Some(std::process::id()));
            let labels = me.principal_labels();
            let ctx = ReviewContext {
                now,
                principals: &principals,
                principal_labels: &labels,
                limits: me.inner.config.review,
                requester: Requester::from(&human),
                agent_label: me.agent_label(&agent),
                agent_known: me.agent_known(&agent),
            };
            let g = review::review_grant(&agent, &form.caveats, None, principal.as_ref(), &ctx)
                .map_err(IssueError::Rejected)?;
            review::check_form(&g, None, &form).map_err(IssueError::Rejected)?;
            Ok::<_, IssueError>((g, human))
        })
        .await
        .map_err(|e| IssueError::Internal(e.to_string()))??;
        let mut ev = NewEvent::new(EventKind::GrantIssued, now);
        ev.peer_uid = Some(requester.uid);
        ev.peer_pid = requester.pid.map(i64::from);
        ev.peer_exe = requester
            .exe
            .as_ref()
            .map(|e| e.to_string_lossy().into_owned());
        ev.peer_chain = requester.chain.rechecked().to_audit_text();
        ev.agent = Some(reviewed.agent().to_string());
        ev.principal = Some(reviewed.principal().to_string());
        ev.service = reviewed.caveats().iter().find_map(|c| match c {
            parley_core::Caveat::Svc(l) => Some(l.join(",")),
            _ => None,
        });
        ev.caveats = Some(reviewed.caveats_value().to_string());
        let need = root_caveat(self.inner.config.step_up.need(grant_subject(&reviewed)));
        // No password asked for a signature the log has no room to record.
        if need.required {
            self.ready_to_record().map_err(IssueError::Audit)?;
        }
        // The OS prompt names what this password signs.
        let details = super::prompt::grant(
            reviewed.review(),
            reviewed.review().agent.label.as_deref(),
            reviewed.caveats(),
        );
        let os = self
            .step_up(&need, &details, Some(ev.clone()))
            .await
            .map_err(|e| match e {
                StepUpError::Held(h) => IssueError::Session(h),
                e => IssueError::StepUp(e),
            })?;
        let subject = Approval::subject_of_grant(&reviewed.agent().to_string(), reviewed.caveats());
        let approval = Approval::confirmed(yes, os, subject);
        // Custody may have been frozen while the OS asked.
        if self.signing_stopped() {
            return Err(IssueError::Frozen);
        }
        if let Some(h) = self.inner.config.session.hold() {
            return Err(IssueError::Session(h));
        }
        // Nothing is signed that the log has no room to record.
        self.ready_to_record().map_err(IssueError::Audit)?;
        let me = self.clone();
        let g = reviewed.clone();
        let now = unix_now();
        let a = approval.clone();
        let signed = tokio::task::spawn_blocking(move || {
            signer::sign_grant(&me.inner.keystore, &g, &a, now)
        })
        .await
        .map_err(|e| IssueError::Internal(e.to_string()))??;
        ev.at = now;
        ev.token_id = Some(signed.id.clone());
        ev.expires = Some(signed.exp);
        ev.confirmed_by = Some(approval.confirmed_by());
        ev.reason = Some(match note.map(str::trim).filter(|n| !n.is_empty()) {
            Some(n) => format!(
                "issued from the grant form: {}",
                n.chars().take(256).collect::<String>()
            ),
            None => "issued from the grant form".to_string(),
        });
        self.log(ev).map_err(IssueError::Audit)?;
        Ok(IssuedGrant {
            token: signed.token,
            id: signed.id,
            exp: signed.exp,
            caveats: reviewed.caveats().to_vec(),
            review: reviewed.review().clone(),
        })
    }

    /// What the grant form's caveats would sign, before anything is signed:
    /// the review (caveats exactly as signed, in words, warnings) and, when
    /// the form answers pending request `request`, every way it widens that
    /// request. The form shows both and sends them back with its decision.
    pub async fn preview_grant(
        &self,
        agent: &str,
        caveats: &Value,
        principal: Option<&PublicKey>,
        request: Option<&str>,
    ) -> Result<GrantPreview, IssueError> {
        let requested = match request {
            None => None,
            Some(id) => match lock(&self.inner.state)
                .queue
                .get(id)
                .map(|e| e.item.reviewed.clone())
            {
                Some(Reviewed::Grant(g)) => Some(g),
                _ => {
                    return Err(IssueError::Rejected(Rejection {
                        code: "not_pending",
                        message: "that grant request is no longer waiting".into(),
                    }))
                }
            },
        };
        let me = self.clone();
        let (agent, caveats) = (agent.to_string(), caveats.clone());
        let principal = requested
            .as_ref()
            .map(|g| g.principal().clone())
            .or_else(|| principal.cloned());
        tokio::task::spawn_blocking(move || {
            let principals = me.principals().map_err(IssueError::Internal)?;
            let labels = me.principal_labels();
            let own = crate::ipc::peer::PeerPolicy::own_user_only().own_uid;
            let human =
                PeerInfo::from_creds(own, crate::ipc::peer::UNKNOWN_ID, Some(std::process::id()));
            let ctx = ReviewContext {
                now: unix_now(),
                principals: &principals,
                principal_labels: &labels,
                limits: me.inner.config.review,
                requester: Requester::from(&human),
                agent_label: None,
                agent_known: false,
            };
            let g = review::review_grant(&agent, &caveats, None, principal.as_ref(), &ctx)
                .map_err(IssueError::Rejected)?;
            Ok(GrantPreview {
                caveats: g.caveats_value(),
                widenings: requested.map(|r| r.widenings(&g)).unwrap_or_default(),
                review: g.review().clone(),
            })
        })
        .await
        .map_err(|e| IssueError::Internal(e.to_string()))?
    }
}

//! Agents as the human manages them: pauses (deny and pause, resume), the
//! requests alike to one waiting, and the human's labels for agent keys.

use super::*;

/// How long the review's "deny and pause" pauses the agent (1 hour).
pub const DENY_AND_PAUSE_SECS: i64 = 3600;

impl Engine {
    /// The refusal for a request from a paused agent, if `agent` is paused
    /// at `now` (a key that does not parse is left to the review to refuse;
    /// a log that cannot be read pauses nobody, and says so in the daemon's
    /// log).
    pub(super) fn paused_rejection(&self, agent: &str, now: i64) -> Option<Rejection> {
        let key: PublicKey = agent.parse().ok()?;
        let pause = match lock(&self.inner.audit).pause_of(&key.to_string(), now) {
            Ok(p) => p?,
            Err(e) => {
                tracing::error!("the paused agents could not be read: {e}");
                return None;
            }
        };
        let until = match pause.until {
            Some(t) => format!(" until {}", parley_core::lens::time(t)),
            None => " until they resume it".to_owned(),
        };
        Some(Rejection {
            code: "agent_paused",
            message: format!(
                "the human paused this agent{until} ({}); its requests are refused without \
                 being shown until then",
                pause.reason
            ),
        })
    }

    /// Pauses an agent: its requests are refused without a prompt, told
    /// why, until `for_secs` have passed (`None`: until
    /// [`Engine::resume_agent`]), or until the pause in force ends if that
    /// is later; its requests pending now are denied with that reason.
    /// Returns the ids of the requests it denied.
    pub fn pause_agent(
        &self,
        agent: &str,
        for_secs: Option<i64>,
        reason: &str,
    ) -> Result<Vec<String>, PauseError> {
        let key: PublicKey = agent
            .parse()
            .map_err(|e| PauseError::NotAKey(format!("{e}")))?;
        let key = key.to_string();
        let now = unix_now();
        let until = for_secs.map(|s| now.saturating_add(s.max(0)));
        // A new pause never ends the one in force sooner: that would loosen
        // custody, which only a resume does (asked of the OS in the app).
        let in_force = lock(&self.inner.audit)
            .pause_of(&key, now)
            .map_err(|e| PauseError::Audit(e.to_string()))?;
        let until = match (in_force.map(|p| p.until), until) {
            (Some(None), _) => None,
            (Some(Some(old)), Some(new)) => Some(old.max(new)),
            (_, new) => new,
        };
        let reason = reason.trim();
        let reason = if reason.is_empty() {
            "paused by the human"
        } else {
            reason
        };
        lock(&self.inner.audit)
            .pause_agent(&key, until, reason, now)
            .map_err(|e| PauseError::Audit(e.to_string()))?;
        let told = format!("the human paused this agent: {reason}");
        Ok(self.deny_pending(|r| r.agent.key == key, &told))
    }

    /// Denies every pending request whose review `which` picks and that is
    /// not being decided (a decision under way is left to finish: it checks
    /// again before it signs), telling each agent `told`; returns their ids.
    pub(super) fn deny_pending(
        &self,
        which: impl Fn(&crate::review::Review) -> bool,
        told: &str,
    ) -> Vec<String> {
        let pending: Vec<(String, EventKind)> = {
            let st = lock(&self.inner.state);
            st.queue
                .pending()
                .iter()
                .filter(|e| which(e.item.reviewed.review()))
                .filter(|e| !st.deciding.contains(&e.id))
                .map(|e| {
                    let kind = match e.item.reviewed {
                        Reviewed::Consent(_) => EventKind::ConsentDenied,
                        Reviewed::Grant(_) => EventKind::GrantDenied,
                    };
                    (e.id.clone(), kind)
                })
                .collect()
        };
        for (id, kind) in &pending {
            self.close(id, Outcome::Denied(Some(told.to_string())), *kind, None);
        }
        pending.into_iter().map(|(id, _)| id).collect()
    }

    /// "Deny and pause": denies pending request `id` and pauses its agent
    /// for `for_secs` ([`DENY_AND_PAUSE_SECS`] from the review's button);
    /// the agent's other pending requests are denied too.
    pub fn deny_and_pause(&self, id: &str, for_secs: i64) -> Result<Vec<String>, PauseError> {
        let agent = {
            let st = lock(&self.inner.state);
            if st.deciding.iter().any(|d| d == id) {
                return Err(PauseError::NotPending);
            }
            st.queue
                .get(id)
                .map(|e| e.item.reviewed.review().agent.key.clone())
                .ok_or(PauseError::NotPending)?
        };
        let reason = format!(
            "denied and paused for {}",
            parley_core::lens::duration(for_secs)
        );
        self.pause_agent(&agent, Some(for_secs), &reason)
    }

    /// The other requests waiting now that are alike to pending request
    /// `id` (the same agent key from the same OS user asking
    /// for the same thing at the same service), oldest first. The review
    /// lists them, so a flood of look-alike requests is seen as one and can
    /// be denied at once ([`Engine::deny_alike`]); each is still approved
    /// only in its own review.
    pub fn alike(&self, id: &str) -> Vec<PendingView> {
        let st = lock(&self.inner.state);
        let Some(key) = st.queue.get(id).map(|e| alike_key(&e.item)) else {
            return Vec::new();
        };
        st.queue
            .pending()
            .iter()
            .filter(|e| e.id != id && !st.deciding.contains(&e.id))
            .filter(|e| alike_key(&e.item) == key)
            .map(|e| self.view(e.id.as_str(), &e.item, e.deadline))
            .collect()
    }

    /// Denies pending request `id` and every request alike to it that is
    /// waiting now (those [`Engine::alike`] lists), telling each agent
    /// `reason`. Returns the ids denied, `id` first.
    pub fn deny_alike(&self, id: &str, reason: Option<&str>) -> Result<Vec<String>, DecideError> {
        let targets: Vec<(String, EventKind)> = {
            let st = lock(&self.inner.state);
            if st.deciding.iter().any(|d| d == id) {
                return Err(DecideError::NotPending);
            }
            let key = st
                .queue
                .get(id)
                .map(|e| alike_key(&e.item))
                .ok_or(DecideError::NotPending)?;
            let mut v: Vec<(String, EventKind)> = st
                .queue
                .pending()
                .iter()
                .filter(|e| !st.deciding.contains(&e.id) && alike_key(&e.item) == key)
                .map(|e| {
                    let kind = match e.item.reviewed {
                        Reviewed::Consent(_) => EventKind::ConsentDenied,
                        Reviewed::Grant(_) => EventKind::GrantDenied,
                    };
                    (e.id.clone(), kind)
                })
                .collect();
            // The one reviewed first, then the rest in arrival order.
            v.sort_by_key(|(i, _)| i != id);
            v
        };
        let n = targets.len();
        let told = reason
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .map(str::to_owned)
            .unwrap_or_else(|| format!("denied by the human, with {} alike requests", n - 1));
        for (i, kind) in &targets {
            self.close(i, Outcome::Denied(Some(told.clone())), *kind, None);
        }
        Ok(targets.into_iter().map(|(i, _)| i).collect())
    }

    /// Ends an agent's pause. Returns whether it was paused.
    pub fn resume_agent(&self, agent: &str) -> Result<bool, PauseError> {
        self.resume_agent_confirmed(agent, None)
    }

    /// Ends an agent's pause, its `agent_resumed` row saying how the
    /// human confirmed it (`confirmed_by`, e.g. `os-auth`). Returns whether
    /// it was paused.
    pub fn resume_agent_confirmed(
        &self,
        agent: &str,
        confirmed_by: Option<&str>,
    ) -> Result<bool, PauseError> {
        let key: PublicKey = agent
            .parse()
            .map_err(|e| PauseError::NotAKey(format!("{e}")))?;
        lock(&self.inner.audit)
            .resume_agent(&key.to_string(), unix_now(), confirmed_by)
            .map_err(|e| PauseError::Audit(e.to_string()))
    }

    /// `agent`'s pause in force now, if any.
    pub fn pause_of(&self, agent: &str) -> Result<Option<crate::audit::Pause>, PauseError> {
        lock(&self.inner.audit)
            .pause_of(agent, unix_now())
            .map_err(|e| PauseError::Audit(e.to_string()))
    }

    /// The pauses in force now.
    pub fn pauses(&self) -> Result<Vec<crate::audit::Pause>, PauseError> {
        lock(&self.inner.audit)
            .pauses(unix_now())
            .map_err(|e| PauseError::Audit(e.to_string()))
    }

    /// The human's label for `agent` (display-safe), if any.
    pub(super) fn agent_label(&self, agent: &str) -> Option<String> {
        if agent.is_empty() {
            return None;
        }
        lock(&self.inner.audit)
            .agent_label(agent)
            .ok()
            .flatten()
            .map(|l| crate::display::safe(&l))
    }

    /// Names an agent key (or, with `None`, removes its name): the name
    /// every review, the tray and the audit view show next to its phrase.
    pub fn set_agent_label(
        &self,
        agent: &str,
        label: Option<&str>,
    ) -> Result<(), crate::audit::LabelError> {
        let key: PublicKey = agent
            .trim()
            .parse()
            .map_err(|e| crate::audit::LabelError::Audit(format!("not an agent key: {e}")))?;
        lock(&self.inner.audit)
            .set_agent_label(&key.to_string(), label, unix_now())
            .map(|_| ())
    }

    /// Every agent the human named, `(key, label)`; labels display-safe.
    pub fn agent_labels(&self) -> Result<Vec<(String, String)>, String> {
        lock(&self.inner.audit)
            .agent_labels()
            .map(|v| {
                v.into_iter()
                    .map(|(k, l)| (k, crate::display::safe(&l)))
                    .collect()
            })
            .map_err(|e| e.to_string())
    }

    pub(super) fn agent_known(&self, agent: &str) -> bool {
        if agent.is_empty() {
            return false;
        }
        let q = Query {
            agent: Some(agent.to_string()),
            kinds: vec![EventKind::GrantIssued, EventKind::ConsentApproved],
            limit: Some(1),
            ..Default::default()
        };
        lock(&self.inner.audit)
            .query(&q)
            .map(|r| !r.is_empty())
            .unwrap_or(false)
    }
}

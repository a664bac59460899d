//! The engine: where a request from an agent becomes a prompt for the human,
//! and a decision becomes a signed token and an audit row.
//!
//! Flow for `consent` / `approve_code` / `grant`:
//! rate limit → re-verification ([`crate::review`]; failures are `REJECTED`,
//! logged, never shown) → queue (dedupe, bounds) → the approver is told →
//! the agent gets `PENDING` and waits with a deadline → [`Engine::decide`]
//! checks the approver's yes against the review (second confirmation), asks
//! the OS to authenticate the human where the step-up policy says so
//! ([`crate::stepup`]), signs ([`crate::signer`], which takes only the
//! resulting [`Approval`]), writes the audit row, and only then releases
//! the token. A token whose audit row could not be written is never handed out.

use crate::approval::Approval;
use crate::approver::{Approver, PendingView, Verdict, Yes};
use crate::audit::{Audit, EventKind, NewEvent, Query, RetentionPolicy};
use crate::ipc::peer::PeerInfo;
use crate::keystore::Keystore;
use crate::protocol::{ErrorCode, Op, Principal, Reply, Request, RequestState, VERSION};
use crate::queue::{Offer, Outcome, Queue, QueueLimits, Refused};
use crate::review::{
    self, FormGrant, Rejection, Requester, ReviewContext, ReviewLimits, ReviewedConsent,
    ReviewedGrant,
};
use crate::signer;
pub use crate::signer::SignError;
use crate::stepup::{self, Polkit, StepUpError, StepUpNeed, StepUpPolicy};
use parley_core::PublicKey;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::{mpsc, oneshot};

/// Engine settings.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Review limits (consent horizon, grant lifetime).
    pub review: ReviewLimits,
    /// Queue limits (pending bounds, rate, wait).
    pub queue: QueueLimits,
    /// What the audit log keeps of rejected requests (stored in the log, so
    /// `parley audit` and the app show the one in effect).
    pub retention: RetentionPolicy,
    /// Which approvals need OS authentication (default: every consent and
    /// every grant that allows COMMIT or UNDO).
    pub step_up: StepUpPolicy,
    /// How OS authentication is asked (the desktop's agent, or a text agent
    /// on the daemon's terminal).
    pub polkit: Polkit,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            review: ReviewLimits::default(),
            queue: QueueLimits::default(),
            step_up: StepUpPolicy::default(),
            polkit: Polkit::desktop(),
            retention: RetentionPolicy::default(),
        }
    }
}

/// A reviewed request waiting in the queue.
#[derive(Debug, Clone)]
pub enum Reviewed {
    /// A consent for one proposal.
    Consent(Box<ReviewedConsent>),
    /// A time-boxed grant.
    Grant(Box<ReviewedGrant>),
}

impl Reviewed {
    fn review(&self) -> &review::Review {
        match self {
            Reviewed::Consent(c) => c.review(),
            Reviewed::Grant(g) => g.review(),
        }
    }
}

/// What the step-up policy looks at in a consent.
fn consent_subject(c: &ReviewedConsent) -> stepup::Subject<'_> {
    // Parley's cost, or YEA's `spend` when it is money (the review decides).
    stepup::Subject::Consent {
        cost: c.review().cost_money.as_ref(),
        charges: c.review().effects.iter().any(|e| e.op == "charge"),
    }
}

/// What the step-up policy looks at in a grant: whether it allows COMMIT or UNDO.
fn grant_subject(g: &ReviewedGrant) -> stepup::Subject<'_> {
    let verbs = g.caveats().iter().find_map(|c| match c {
        parley_core::Caveat::Verbs(l) => Some(l),
        _ => None,
    });
    stepup::Subject::Grant {
        commits: verbs.is_none_or(|l| l.iter().any(|v| v == "COMMIT" || v == "UNDO")),
    }
}

/// What makes two pending requests alike: the OS user, the agent key, the
/// kind, and for a consent the service, capability, signing principal and
/// dialect (the proposal may differ: a flood of orders is alike), for a
/// grant the services it names.
fn alike_key(item: &Item) -> String {
    let agent = &item.reviewed.review().agent.key;
    let shape = match &item.reviewed {
        Reviewed::Consent(c) => {
            let r = c.checked().request();
            serde_json::json!([
                "consent",
                r.service,
                r.capability,
                r.principal.to_string(),
                c.review().dialect.name(),
            ])
        }
        Reviewed::Grant(g) => {
            let services: Vec<&str> = g
                .caveats()
                .iter()
                .filter_map(|c| match c {
                    parley_core::Caveat::Svc(l) => Some(l.iter().map(String::as_str)),
                    _ => None,
                })
                .flatten()
                .collect();
            serde_json::json!(["grant", services])
        }
    };
    format!("{}|{agent}|{shape}", item.peer.uid)
}

struct Item {
    reviewed: Reviewed,
    peer: PeerInfo,
    received_at: i64,
}

struct State {
    queue: Queue<Item>,
    waiters: HashMap<String, Vec<oneshot::Sender<Outcome>>>,
    deciding: Vec<String>,
}

struct Inner {
    keystore: Keystore,
    audit: Mutex<Audit>,
    state: Mutex<State>,
    approver: Arc<dyn Approver>,
    config: EngineConfig,
}

/// Why a decision could not be carried out.
#[derive(Debug, thiserror::Error)]
pub enum DecideError {
    /// No such pending request (already decided, expired or withdrawn).
    #[error("that request is no longer waiting (decided, expired or withdrawn)")]
    NotPending,
    /// Narrowed caveats did not pass review.
    #[error("the narrowed grant is not valid: {0}")]
    Narrowed(Rejection),
    /// Narrowing applies to grants only.
    #[error("a consent is approved or denied as it is; it cannot be changed")]
    NotAGrant,
    /// High risk or irreversible, and the approver did not report the second confirmation.
    #[error("this request is high risk, cannot be undone or does not state its cost: it needs a second confirmation before it is signed")]
    SecondConfirmation,
    /// OS authentication did not succeed; the request is still pending.
    #[error("{0}")]
    StepUp(StepUpError),
    /// Signing failed; nothing was handed out.
    #[error("signing failed: {0}")]
    Sign(#[from] signer::SignError),
    /// The audit row could not be written; nothing was handed out.
    #[error("the audit log could not record this, so nothing was handed out: {0}")]
    Audit(String),
    /// A worker thread failed.
    #[error("internal error: {0}")]
    Internal(String),
}

/// How long the review's "deny and pause" pauses the agent (1 hour).
pub const DENY_AND_PAUSE_SECS: i64 = 3600;

/// Why an agent could not be paused or resumed.
#[derive(Debug, thiserror::Error)]
pub enum PauseError {
    /// The text is not an agent key.
    #[error("that is not an agent key ({0}); copy the key from the review or the audit view")]
    NotAKey(String),
    /// No such pending request.
    #[error("that request is no longer waiting (decided, expired or withdrawn)")]
    NotPending,
    /// The pause could not be recorded, so it is not in force.
    #[error("the audit log could not record the pause, so it is not in force: {0}")]
    Audit(String),
}

/// Why a grant from the human's own form was not issued.
#[derive(Debug, thiserror::Error)]
pub enum IssueError {
    /// The caveats did not pass review (the same checks as an agent's request).
    #[error("the grant is not valid: {0}")]
    Rejected(Rejection),
    /// OS authentication did not succeed; nothing was signed.
    #[error("{0}")]
    StepUp(StepUpError),
    /// Signing failed; nothing was handed out.
    #[error("signing failed: {0}")]
    Sign(#[from] signer::SignError),
    /// The audit row could not be written; nothing was handed out.
    #[error("the audit log could not record this, so nothing was handed out: {0}")]
    Audit(String),
    /// A worker thread failed.
    #[error("internal error: {0}")]
    Internal(String),
}

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

/// The custody engine. Cheap to clone (shared state).
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

/// Wall-clock unix seconds.
pub fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding the lock must not take custody down with it.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Engine {
    /// Builds an engine over a keystore, an audit log and an approver.
    pub fn new(
        keystore: Keystore,
        audit: Audit,
        approver: Arc<dyn Approver>,
        config: EngineConfig,
    ) -> Engine {
        let mut audit = audit;
        if let Err(e) = audit.set_retention(config.retention, unix_now()) {
            tracing::error!("the audit retention policy could not be stored: {e}");
        }
        Engine {
            inner: Arc::new(Inner {
                keystore,
                audit: Mutex::new(audit),
                state: Mutex::new(State {
                    queue: Queue::new(config.queue),
                    waiters: HashMap::new(),
                    deciding: Vec::new(),
                }),
                approver,
                config,
            }),
        }
    }

    /// The keystore (for key management by the human's own tools).
    pub fn keystore(&self) -> &Keystore {
        &self.inner.keystore
    }

    /// Runs `f` on the audit log.
    pub fn with_audit<R>(&self, f: impl FnOnce(&mut Audit) -> R) -> R {
        f(&mut lock(&self.inner.audit))
    }

    /// Requests waiting for the human, oldest first.
    pub fn pending(&self) -> Vec<PendingView> {
        let st = lock(&self.inner.state);
        st.queue
            .pending()
            .iter()
            .map(|e| self.view(e.id.as_str(), &e.item, e.deadline))
            .collect()
    }

    /// Whether approving `reviewed` needs OS authentication, in words.
    fn step_up_need(&self, reviewed: &Reviewed) -> StepUpNeed {
        let subject = match reviewed {
            Reviewed::Consent(c) => consent_subject(c),
            Reviewed::Grant(g) => grant_subject(g),
        };
        root_caveat(self.inner.config.step_up.need(subject))
    }

    /// The step-up policy in force.
    pub fn step_up_policy(&self) -> &StepUpPolicy {
        &self.inner.config.step_up
    }

    fn view(&self, id: &str, item: &Item, deadline: Instant) -> PendingView {
        let left = deadline.saturating_duration_since(Instant::now()).as_secs() as i64;
        let mut review = item.reviewed.review().clone();
        // Each time it is shown, the chain says which of its processes are
        // still the ones that asked.
        review.requester.set_chain(&item.peer.chain.rechecked());
        PendingView {
            id: id.to_string(),
            review,
            step_up: self.step_up_need(&item.reviewed),
            received_at: item.received_at,
            closes_at: unix_now() + left,
        }
    }

    /// Asks the OS to authenticate the human when `need` says so. A failure
    /// is written to the audit log with its reason and leaves nothing signed.
    async fn step_up(&self, need: &StepUpNeed, ev: Option<NewEvent>) -> Result<bool, StepUpError> {
        if !need.required {
            return Ok(false);
        }
        match self.inner.config.polkit.authenticate().await {
            Ok(()) => Ok(true),
            Err(e) => {
                tracing::warn!("OS authentication did not succeed: {}", e.tag());
                if let Some(mut ev) = ev {
                    ev.kind = EventKind::StepUpFailed;
                    ev.reason = Some(format!("step-up {}: {e}", e.tag()));
                    let _ = self.log(ev);
                }
                Err(e)
            }
        }
    }

    fn principals(&self) -> Result<Vec<PublicKey>, String> {
        self.inner.keystore.public_keys().map_err(|e| e.to_string())
    }

    /// The human's labels for the principal keys, for the review (a key the
    /// list cannot name is shown by its short form alone).
    fn principal_labels(&self) -> Vec<(PublicKey, String)> {
        self.inner
            .keystore
            .list()
            .map(|l| l.into_iter().map(|k| (k.public, k.label)).collect())
            .unwrap_or_default()
    }

    /// Appends an audit row. The append is an fsync'd SQLite transaction
    /// (milliseconds): on a multi-threaded runtime the worker hands its other
    /// tasks away first, so a flood of logged rejections cannot stall the
    /// answers to well-behaved clients.
    ///
    /// Rejections go through the retention policy ([`Audit::record`]):
    /// beyond its rows per peer and hour they are counted, not written.
    fn log(&self, ev: NewEvent) -> Result<(), String> {
        let append = || {
            lock(&self.inner.audit)
                .record(&ev)
                .map(|_| ())
                .map_err(|e| e.to_string())
        };
        let r = match tokio::runtime::Handle::try_current() {
            Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(append)
            }
            _ => append(),
        };
        if let Err(e) = &r {
            tracing::error!("audit log write failed: {e}");
        }
        r
    }

    /// Handles one request from a peer, sending `PENDING` events and exactly
    /// one final reply (as frames) on `out`.
    pub async fn handle(&self, peer: &PeerInfo, req: Request, out: mpsc::Sender<Value>) {
        let id = req.id.clone();
        let reply = match req.op {
            Op::Hello => self.hello().await,
            Op::Status { request } => self.status(peer.uid, &request),
            Op::Cancel { request } => self.cancel(peer.uid, &request),
            op => self.submit(peer, &id, op, &out).await,
        };
        let _ = out.send(reply.to_frame(Some(&id))).await;
    }

    async fn hello(&self) -> Reply {
        let ks = self.clone();
        match tokio::task::spawn_blocking(move || ks.inner.keystore.list()).await {
            Ok(Ok(keys)) => Reply::Hello {
                version: VERSION,
                principals: keys
                    .into_iter()
                    .map(|k| Principal {
                        key: k.public.to_string(),
                        label: Some(k.label).filter(|l| !l.is_empty()),
                    })
                    .collect(),
            },
            Ok(Err(e)) => Reply::error(
                ErrorCode::Internal,
                format!("the keystore is unavailable: {e}"),
            ),
            Err(e) => Reply::error(ErrorCode::Internal, e.to_string()),
        }
    }

    fn status(&self, uid: u32, request: &str) -> Reply {
        let st = lock(&self.inner.state);
        let state = match st.queue.lookup(uid, request) {
            None => RequestState::Unknown,
            Some(id) if st.queue.get(id).is_some() => RequestState::Pending,
            Some(id) => match st.queue.outcome(id) {
                Some(Outcome::Approved(_)) => RequestState::Approved,
                Some(Outcome::Issued(..)) => RequestState::Issued,
                Some(Outcome::Denied(_)) => RequestState::Denied,
                Some(Outcome::Expired) => RequestState::Expired,
                Some(Outcome::Cancelled) => RequestState::Cancelled,
                None => RequestState::Unknown,
            },
        };
        Reply::Status {
            request: request.to_string(),
            state,
        }
    }

    fn cancel(&self, uid: u32, request: &str) -> Reply {
        let id = {
            let st = lock(&self.inner.state);
            match st.queue.lookup(uid, request) {
                Some(id) if st.queue.get(id).is_some() && !st.deciding.contains(id) => id.clone(),
                _ => {
                    drop(st);
                    return self.status(uid, request);
                }
            }
        };
        self.close(&id, Outcome::Cancelled, EventKind::RequestCancelled, None);
        Reply::Cancelled
    }

    async fn submit(
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
    fn review(
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
            Op::Consent { agent, .. } | Op::ApproveCode { agent, .. } | Op::Grant { agent, .. } => {
                agent.clone()
            }
            _ => String::new(),
        };
        if let Some(rej) = self.paused_rejection(&agent_text, now) {
            ev.agent = Some(agent_text);
            ev.reason = Some(format!("{}: {}", rej.code, rej.message));
            return Err(Box::new((rej, ev)));
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

    /// The refusal for a request from a paused agent, if `agent` is paused
    /// at `now` (a key that does not parse is left to the review to refuse;
    /// a log that cannot be read pauses nobody, and says so in the daemon's
    /// log).
    fn paused_rejection(&self, agent: &str, now: i64) -> Option<Rejection> {
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
    /// [`Engine::resume_agent`]); its requests pending now are denied with
    /// that reason. Returns the ids of the requests it denied.
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
        let reason = reason.trim();
        let reason = if reason.is_empty() {
            "paused by the human"
        } else {
            reason
        };
        lock(&self.inner.audit)
            .pause_agent(&key, until, reason, now)
            .map_err(|e| PauseError::Audit(e.to_string()))?;
        let pending: Vec<(String, EventKind)> = {
            let st = lock(&self.inner.state);
            st.queue
                .pending()
                .iter()
                .filter(|e| e.item.reviewed.review().agent.key == key)
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
        let told = format!("the human paused this agent: {reason}");
        for (id, kind) in &pending {
            self.close(id, Outcome::Denied(Some(told.clone())), *kind, None);
        }
        Ok(pending.into_iter().map(|(id, _)| id).collect())
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
        let key: PublicKey = agent
            .parse()
            .map_err(|e| PauseError::NotAKey(format!("{e}")))?;
        lock(&self.inner.audit)
            .resume_agent(&key.to_string(), unix_now())
            .map_err(|e| PauseError::Audit(e.to_string()))
    }

    /// The pauses in force now.
    pub fn pauses(&self) -> Result<Vec<crate::audit::Pause>, PauseError> {
        lock(&self.inner.audit)
            .pauses(unix_now())
            .map_err(|e| PauseError::Audit(e.to_string()))
    }

    /// Adds to a review what custody's own log says: what is unusual about
    /// the request ([`crate::unusual`]) and what the agent has done
    /// ([`crate::activity`]). A log that cannot be read leaves the review as
    /// it is (and says so in the daemon's log): insight informs, it never
    /// blocks.
    fn add_insight(&self, reviewed: &mut Reviewed, peer: &PeerInfo, now: i64) {
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
                Ok((unusual, activity))
            })
        };
        drop(audit);
        match gathered {
            Ok((unusual, activity)) => match reviewed {
                Reviewed::Consent(c) => c.add_insight(unusual, Some(activity)),
                Reviewed::Grant(g) => g.add_insight(unusual, Some(activity)),
            },
            Err(e) => tracing::error!("the audit log could not be read for the review: {e}"),
        }
    }

    /// Whether the audit log can record one more row (disk space, not
    /// read-only); checked right before every signature.
    fn ready_to_record(&self) -> Result<(), String> {
        let r = lock(&self.inner.audit)
            .ready_to_record()
            .map_err(|e| e.to_string());
        if let Err(e) = &r {
            tracing::error!("refusing to sign: {e}");
        }
        r
    }

    /// Sets the audit retention policy in effect (the app's settings).
    pub fn set_retention(&self, policy: RetentionPolicy) -> Result<bool, String> {
        lock(&self.inner.audit)
            .set_retention(policy, unix_now())
            .map_err(|e| e.to_string())
    }

    /// The human's label for `agent` (display-safe), if any.
    fn agent_label(&self, agent: &str) -> Option<String> {
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

    fn agent_known(&self, agent: &str) -> bool {
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

    /// Removes a pending request with a non-signing outcome, tells its
    /// waiters and the approver, and logs it.
    fn close(&self, id: &str, outcome: Outcome, kind: EventKind, reason: Option<&str>) {
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

    async fn decide_now(&self, id: &str, verdict: Verdict) -> Result<Outcome, DecideError> {
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
    fn expire_if_due(&self, id: &str) {
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
        let os = self
            .step_up(&need, Some(ev.clone()))
            .await
            .map_err(IssueError::StepUp)?;
        let subject = Approval::subject_of_grant(&reviewed.agent().to_string(), reviewed.caveats());
        let approval = Approval::confirmed(yes, os, subject);
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

    async fn carry_out(
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
        let (yes, reviewed) = match (reviewed, verdict) {
            (Reviewed::Consent(_), Verdict::Deny(r)) => {
                return Ok((Outcome::Denied(r), EventKind::ConsentDenied, now + 600))
            }
            (Reviewed::Grant(_), Verdict::Deny(r)) => {
                return Ok((Outcome::Denied(r), EventKind::GrantDenied, now + 600))
            }
            (Reviewed::Consent(_), Verdict::ApproveWith(..)) => return Err(DecideError::NotAGrant),
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
        let need = self.step_up_need(&reviewed);
        // No password asked for a signature the log has no room to record.
        if need.required {
            self.ready_to_record().map_err(DecideError::Audit)?;
        }
        let os = self
            .step_up(&need, Some(item_event.clone()))
            .await
            .map_err(DecideError::StepUp)?;
        let subject = match &reviewed {
            Reviewed::Consent(c) => {
                Approval::subject_of_consent(&c.checked().proposal().hash, &c.agent().to_string())
            }
            Reviewed::Grant(g) => Approval::subject_of_grant(&g.agent().to_string(), g.caveats()),
        };
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
                self.log(ev).map_err(DecideError::Audit)?;
                Ok((
                    Outcome::Approved(signed.token),
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
    fn close_expired_after_decision(&self, id: &str) {
        lock(&self.inner.state).deciding.retain(|d| d != id);
        self.close(
            id,
            Outcome::Expired,
            EventKind::RequestExpired,
            Some("approved after expiry"),
        );
    }
}

fn unreachable_op() -> Result<Reviewed, Rejection> {
    Err(Rejection {
        code: "internal",
        message: "not a reviewable op".into(),
    })
}

/// Marks a request as being decided for as long as it lives, so the mark is
/// lifted however the decision ends (error, panic, cancellation).
struct Deciding<'a> {
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
fn root_caveat(mut need: StepUpNeed) -> StepUpNeed {
    if need.required && crate::ipc::peer::PeerPolicy::own_user_only().own_uid == 0 {
        need.required = false;
        need.words = "Custody runs as root, which the system authorizes without asking: \
                      no OS authentication protects this approval, only your click."
            .into();
    }
    need
}

/// The audit event describing a queued item (kind set by the caller).
fn event(kind: EventKind, item: &Item) -> NewEvent {
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

/// The audit row of a request refused before review (rate limit, full
/// queue): a rejection like any other, under the retention policy.
fn refused_event(peer: &PeerInfo, refused: &Refused) -> NewEvent {
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

fn refusal(r: Refused) -> Reply {
    match r {
        Refused::RateLimited => Reply::error(ErrorCode::RateLimited, r.to_string()),
        Refused::Busy => Reply::error(ErrorCode::Busy, r.to_string()),
    }
}

fn outcome_reply(o: Outcome) -> Reply {
    match o {
        Outcome::Approved(grant) => Reply::Approved { grant },
        Outcome::Issued(grant, caveats) => Reply::Issued {
            grant,
            caveats: review::caveats_value(&caveats),
        },
        Outcome::Denied(reason) => Reply::Denied { reason },
        Outcome::Expired => Reply::Expired,
        Outcome::Cancelled => Reply::Cancelled,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parley_core::Caveat;

    #[test]
    fn an_issued_reply_carries_the_caveats_the_audit_row_stores() {
        let caveats = vec![
            Caveat::Svc(vec!["shop.example".into()]),
            Caveat::Verbs(vec!["ASK".into()]),
            Caveat::Exp(1_800_000_000),
        ];
        // The audit row's text, written where the row is made.
        let row = review::caveats_value(&caveats).to_string();
        assert_eq!(
            row,
            r#"[{"svc":["shop.example"]},{"verbs":["ASK"]},{"exp":1800000000}]"#
        );
        match outcome_reply(Outcome::Issued("pg1.x".into(), caveats)) {
            Reply::Issued { grant, caveats } => {
                assert_eq!(grant, "pg1.x");
                assert_eq!(caveats, serde_json::from_str::<Value>(&row).unwrap());
            }
            other => panic!("{other:?}"),
        }
    }
}

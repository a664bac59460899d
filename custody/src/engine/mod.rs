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
//!
//! The files: this one (the engine's state, configuration and the requests
//! that need no human: hello, status, cancel), `submit` (a request on its
//! way to the human), `decide` (a decision carried out), `form` (grants
//! from the human's own form), `prompt` (what the OS password prompt says
//! is signed), `agents` (pauses, alike requests, labels) and `error`.

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
use crate::session::SessionGate;
use crate::signer;
pub use crate::signer::SignError;
use crate::stepup::{self, Action, Polkit, PromptDetails, StepUpError, StepUpNeed, StepUpPolicy};
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
    /// The session's lock and sleep ([`crate::session`]): while it is
    /// closed nothing is signed and no OS prompt starts.
    pub session: SessionGate,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            review: ReviewLimits::default(),
            queue: QueueLimits::default(),
            step_up: StepUpPolicy::default(),
            polkit: Polkit::desktop(),
            retention: RetentionPolicy::default(),
            session: SessionGate::new(),
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

/// Whether approving consent `c` needs OS authentication under `policy`:
/// it weighs every amount of money the consent spends (Parley's cost; every
/// YEA measure that is money), whether some of it may be money custody
/// cannot weigh, and whether an effect charges.
fn consent_need(policy: &StepUpPolicy, c: &ReviewedConsent) -> StepUpNeed {
    let money = c.money_spent();
    policy.need(stepup::Subject::Consent {
        money: &money.amounts,
        unclear: money.unclear,
        charges: c.review().effects.iter().any(|e| e.op == "charge"),
    })
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
    /// An OS prompt is open ([`Engine::os_check`]): one at a time.
    prompting: std::sync::atomic::AtomicBool,
    keystore: Keystore,
    audit: Mutex<Audit>,
    state: Mutex<State>,
    approver: Arc<dyn Approver>,
    config: EngineConfig,
}

mod agents;
mod decide;
mod error;
mod for_a_while;
mod form;
mod freeze;
mod prompt;
mod submit;

pub use agents::DENY_AND_PAUSE_SECS;
use decide::{outcome_reply, root_caveat};
pub use error::{DecideError, IssueError, PauseError};
pub use for_a_while::{OfferView, REFUSALS_PER_AGENT_HOUR};
pub use form::{GrantPreview, IssuedGrant};
pub use freeze::FREEZE_WATCH_EVERY;

/// The custody engine. Cheap to clone (shared state).
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

/// The one open OS prompt, released however the check ends (answer, error,
/// time limit, or the decision's task cancelled).
struct OnePrompt<'a>(&'a std::sync::atomic::AtomicBool);

impl<'a> OnePrompt<'a> {
    fn take(flag: &'a std::sync::atomic::AtomicBool) -> Option<OnePrompt<'a>> {
        use std::sync::atomic::Ordering;
        flag.compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .ok()
            .map(|_| OnePrompt(flag))
    }
}

impl Drop for OnePrompt<'_> {
    fn drop(&mut self) {
        self.0.store(false, std::sync::atomic::Ordering::Release);
    }
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
                prompting: std::sync::atomic::AtomicBool::new(false),
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

    /// Gives back memory kept only for speed, at a quiet moment (a UI
    /// session has ended): the audit log's page cache, then what the C
    /// library kept of freed memory. Nothing the engine needs is dropped;
    /// without it the service's idle memory rose with every UI session.
    pub fn give_back_memory(&self) {
        if let Err(e) = self.with_audit(|a| a.release_cache()) {
            tracing::warn!("the audit log's page cache could not be emptied: {e}");
        }
        crate::allocator::give_back_freed();
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
        let policy = &self.inner.config.step_up;
        root_caveat(match reviewed {
            Reviewed::Consent(c) => consent_need(policy, c),
            Reviewed::Grant(g) => policy.need(grant_subject(g)),
        })
    }

    /// The session's lock and sleep, as the engine follows it.
    pub fn session(&self) -> &SessionGate {
        &self.inner.config.session
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

    /// Asks the OS to authenticate the human when `need` says so, the
    /// prompt naming the decision (`details`). A failure is written to the
    /// audit log with its reason and leaves nothing signed.
    async fn step_up(
        &self,
        need: &StepUpNeed,
        details: &PromptDetails,
        ev: Option<NewEvent>,
    ) -> Result<bool, StepUpError> {
        if !need.required {
            return Ok(false);
        }
        match self.os_check(Action::Sign, details).await {
            Ok(()) => Ok(true),
            // Nothing was asked: the other prompt is still open.
            Err(StepUpError::Busy) => Err(StepUpError::Busy),
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

    /// Asks the OS to authenticate the human for a change that loosens
    /// custody (polkit's change action), the prompt saying which change
    /// (`details`). `Ok` only when the human authenticated; every failure
    /// leaves the change undone.
    pub async fn authenticate_change(&self, details: &PromptDetails) -> Result<(), StepUpError> {
        self.os_check(Action::Change, details).await
    }

    /// The one place custody asks polkit, one check at a time: while one
    /// OS prompt is open, a second decision (a signature or a change) is
    /// refused at once with [`StepUpError::Busy`] and asks nothing, so the
    /// password the human types is only ever for the prompt they see, and
    /// a request injected meanwhile cannot queue its own prompt behind it.
    ///
    /// No prompt starts while the session is locked or going to sleep, and
    /// one in flight is cancelled when it locks or sleep comes
    /// ([`crate::session`]).
    async fn os_check(&self, action: Action, details: &PromptDetails) -> Result<(), StepUpError> {
        let _open = OnePrompt::take(&self.inner.prompting).ok_or(StepUpError::Busy)?;
        let gate = &self.inner.config.session;
        if let Some(h) = gate.hold() {
            return Err(StepUpError::Held(h));
        }
        let _counted = gate.check_in_flight();
        let stop = async { StepUpError::Held(gate.closed().await) };
        self.inner
            .config
            .polkit
            .authenticate_unless(action, details, stop)
            .await
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
                Some(Outcome::Approved(..)) => RequestState::Approved,
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

    /// Sets the audit retention policy in effect (the app's settings).
    pub fn set_retention(&self, policy: RetentionPolicy) -> Result<bool, String> {
        lock(&self.inner.audit)
            .set_retention(policy, unix_now())
            .map_err(|e| e.to_string())
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

//! The pending-request queue: bounded, deduplicated, rate limited.
//!
//! Pure bookkeeping (no I/O, no async): the engine holds it under a mutex.
//! Deadlines are on the monotonic clock, so moving the wall clock changes no
//! wait. Every map here is bounded: pending requests by [`QueueLimits`],
//! finished outcomes by their expiry and a hard cap, rate buckets by the
//! number of peers that can be connected at once.

use parley_core::Caveat;
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

/// Bounds on what agents can make custody hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueLimits {
    /// Pending requests from one uid.
    pub per_peer: usize,
    /// Pending requests in total.
    pub total: usize,
    /// New requests one uid may make per minute.
    pub per_minute: u32,
    /// The longest a request waits for the human.
    pub max_wait: Duration,
    /// Finished outcomes remembered (for idempotent re-approval and status).
    pub finished: usize,
}

impl Default for QueueLimits {
    fn default() -> Self {
        QueueLimits {
            per_peer: 8,
            total: 64,
            per_minute: 30,
            max_wait: Duration::from_secs(600),
            finished: 1024,
        }
    }
}

/// Why a request was not queued.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// Too many requests per minute from this uid.
    #[error("too many requests from this user; wait a minute")]
    RateLimited,
    /// Too many pending requests from this uid, or in total.
    #[error("too many requests are waiting for the human; try again later")]
    Busy,
}

/// A finished request's outcome, kept so that asking again is idempotent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A consent was approved: the token, and the short grant issued
    /// beside it when the human approved for a while
    /// ([`crate::for_a_while`]).
    Approved(String, Option<Box<crate::for_a_while::ShortGrant>>),
    /// A grant was issued: the token and the caveats signed, typed, so that
    /// no reader parses them back from text. (The audit row stores them as
    /// JSON text, written once where the row is made.)
    Issued(String, Vec<Caveat>),
    /// The human said no.
    Denied(Option<String>),
    /// Nobody decided in time.
    Expired,
    /// The agent withdrew it.
    Cancelled,
}

/// One pending request's bookkeeping. `T` is the reviewed payload.
#[derive(Debug)]
pub struct Entry<T> {
    /// Custody's id.
    pub id: String,
    /// The requesting uid.
    pub uid: u32,
    /// Requests from the agent waiting on this entry: (connection-scoped request id).
    pub waiters: Vec<String>,
    /// Dedupe key: same uid + agent + hash (or caveats) = one prompt.
    pub dedupe: String,
    /// When it closes by itself.
    pub deadline: Instant,
    /// The reviewed request.
    pub item: T,
}

/// What happened when a request was offered to the queue.
#[derive(Debug, PartialEq, Eq)]
pub enum Offer {
    /// A new prompt: show it.
    New(String),
    /// The same request is already waiting: wait on it (no new prompt).
    Joined(String),
    /// The same request was already decided: this is its outcome.
    Done(Outcome),
}

/// The queue itself.
#[derive(Debug)]
pub struct Queue<T> {
    limits: QueueLimits,
    pending: Vec<Entry<T>>,
    finished: HashMap<String, (Outcome, Instant)>,
    finished_order: VecDeque<String>,
    by_request: HashMap<(u32, String), String>,
    rate: HashMap<u32, VecDeque<Instant>>,
    next: u64,
}

impl<T> Queue<T> {
    /// An empty queue.
    pub fn new(limits: QueueLimits) -> Queue<T> {
        Queue {
            limits,
            pending: Vec::new(),
            finished: HashMap::new(),
            finished_order: VecDeque::new(),
            by_request: HashMap::new(),
            rate: HashMap::new(),
            next: 0,
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> QueueLimits {
        self.limits
    }

    /// Counts a new request from `uid` against its rate; call before review
    /// so that floods of invalid requests are limited too.
    pub fn admit(&mut self, uid: u32, now: Instant) -> Result<(), Refused> {
        let window = Duration::from_secs(60);
        // Bound the map: forget peers with no request in the last minute.
        if self.rate.len() > 256 {
            self.rate
                .retain(|_, q| q.back().is_some_and(|t| now.duration_since(*t) < window));
        }
        let q = self.rate.entry(uid).or_default();
        while q.front().is_some_and(|t| now.duration_since(*t) >= window) {
            q.pop_front();
        }
        if q.len() >= self.limits.per_minute as usize {
            return Err(Refused::RateLimited);
        }
        q.push_back(now);
        Ok(())
    }

    /// Offers a reviewed request. `valid_until` is when its content expires.
    pub fn offer(
        &mut self,
        uid: u32,
        request_id: &str,
        dedupe: String,
        item: T,
        now: Instant,
        valid_until: Instant,
    ) -> Result<Offer, Refused> {
        self.forget_finished(now);
        if let Some((outcome, _)) = self.finished.get(&dedupe) {
            if matches!(outcome, Outcome::Approved(..) | Outcome::Issued(..)) {
                return Ok(Offer::Done(outcome.clone()));
            }
        }
        if let Some(e) = self.pending.iter_mut().find(|e| e.dedupe == dedupe) {
            e.waiters.push(request_id.to_string());
            let id = e.id.clone();
            self.by_request
                .insert((uid, request_id.to_string()), id.clone());
            return Ok(Offer::Joined(id));
        }
        let mine = self.pending.iter().filter(|e| e.uid == uid).count();
        if mine >= self.limits.per_peer || self.pending.len() >= self.limits.total {
            return Err(Refused::Busy);
        }
        self.next += 1;
        let id = format!("q{}", self.next);
        let deadline = valid_until.min(now + self.limits.max_wait);
        self.by_request
            .insert((uid, request_id.to_string()), id.clone());
        self.pending.push(Entry {
            id: id.clone(),
            uid,
            waiters: vec![request_id.to_string()],
            dedupe,
            deadline,
            item,
        });
        Ok(Offer::New(id))
    }

    /// The pending entries, oldest first.
    pub fn pending(&self) -> &[Entry<T>] {
        &self.pending
    }

    /// A pending entry by id.
    pub fn get(&self, id: &str) -> Option<&Entry<T>> {
        self.pending.iter().find(|e| e.id == id)
    }

    /// 1-based place of `id` in the queue.
    pub fn position(&self, id: &str) -> Option<usize> {
        self.pending.iter().position(|e| e.id == id).map(|p| p + 1)
    }

    /// Removes a pending entry and records its outcome.
    pub fn finish(
        &mut self,
        id: &str,
        outcome: Outcome,
        now: Instant,
        keep_until: Instant,
    ) -> Option<Entry<T>> {
        let idx = self.pending.iter().position(|e| e.id == id)?;
        let entry = self.pending.remove(idx);
        self.forget_finished(now);
        // Two keys per outcome (dedupe and id); stay within the cap.
        while self.finished_order.len() + 2 > self.limits.finished.max(2) {
            match self.finished_order.pop_front() {
                Some(old) => {
                    self.finished.remove(&old);
                }
                None => break,
            }
        }
        self.finished
            .insert(entry.dedupe.clone(), (outcome.clone(), keep_until));
        self.finished_order.push_back(entry.dedupe.clone());
        self.finished
            .insert(format!("id:{}", entry.id), (outcome, keep_until));
        self.finished_order.push_back(format!("id:{}", entry.id));
        Some(entry)
    }

    /// Entries whose deadline has passed.
    pub fn overdue(&self, now: Instant) -> Vec<String> {
        self.pending
            .iter()
            .filter(|e| e.deadline <= now)
            .map(|e| e.id.clone())
            .collect()
    }

    /// Custody's id for a request an agent sent (scoped by uid).
    pub fn lookup(&self, uid: u32, request_id: &str) -> Option<&String> {
        self.by_request.get(&(uid, request_id.to_string()))
    }

    /// The outcome of a finished request by custody id.
    pub fn outcome(&self, id: &str) -> Option<&Outcome> {
        self.finished.get(&format!("id:{id}")).map(|(o, _)| o)
    }

    /// Removes a waiter (its connection went away or it cancelled). Returns
    /// true when the entry has no waiters left.
    pub fn drop_waiter(&mut self, id: &str, request_id: &str) -> bool {
        match self.pending.iter_mut().find(|e| e.id == id) {
            Some(e) => {
                e.waiters.retain(|w| w != request_id);
                e.waiters.is_empty()
            }
            None => false,
        }
    }

    fn forget_finished(&mut self, now: Instant) {
        self.finished.retain(|_, (_, until)| *until > now);
        let finished = &self.finished;
        self.finished_order.retain(|k| finished.contains_key(k));
        // by_request only names ids that are pending or remembered.
        if self.by_request.len() > 4 * (self.limits.total + self.limits.finished) {
            let pending: Vec<String> = self.pending.iter().map(|e| e.id.clone()).collect();
            self.by_request
                .retain(|_, id| pending.contains(id) || finished.contains_key(&format!("id:{id}")));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q() -> Queue<()> {
        Queue::new(QueueLimits {
            per_peer: 2,
            total: 3,
            per_minute: 5,
            max_wait: Duration::from_secs(60),
            finished: 4,
        })
    }

    #[test]
    fn dedupe_joins_and_finished_approvals_are_returned() {
        let mut q = q();
        let t = Instant::now();
        let later = t + Duration::from_secs(30);
        assert_eq!(
            q.offer(1, "a", "k".into(), (), t, later),
            Ok(Offer::New("q1".into()))
        );
        assert_eq!(
            q.offer(1, "b", "k".into(), (), t, later),
            Ok(Offer::Joined("q1".into()))
        );
        let e = q
            .finish("q1", Outcome::Approved("pg1.x".into(), None), t, later)
            .unwrap();
        assert_eq!(e.waiters, vec!["a", "b"]);
        assert_eq!(
            q.offer(1, "c", "k".into(), (), t, later),
            Ok(Offer::Done(Outcome::Approved("pg1.x".into(), None)))
        );
        // After it expires, it is a new request again.
        assert_eq!(
            q.offer(
                1,
                "d",
                "k".into(),
                (),
                later,
                later + Duration::from_secs(9)
            ),
            Ok(Offer::New("q2".into()))
        );
    }

    #[test]
    fn a_denial_is_not_replayed() {
        let mut q = q();
        let t = Instant::now();
        q.offer(1, "a", "k".into(), (), t, t + Duration::from_secs(30))
            .unwrap();
        q.finish("q1", Outcome::Denied(None), t, t + Duration::from_secs(30));
        assert!(matches!(
            q.offer(1, "b", "k".into(), (), t, t + Duration::from_secs(30)),
            Ok(Offer::New(_))
        ));
    }

    #[test]
    fn bounded_per_peer_and_in_total() {
        let mut q = q();
        let t = Instant::now();
        let l = t + Duration::from_secs(30);
        q.offer(1, "a", "1".into(), (), t, l).unwrap();
        q.offer(1, "b", "2".into(), (), t, l).unwrap();
        assert_eq!(q.offer(1, "c", "3".into(), (), t, l), Err(Refused::Busy));
        q.offer(2, "a", "4".into(), (), t, l).unwrap();
        assert_eq!(q.offer(3, "a", "5".into(), (), t, l), Err(Refused::Busy));
    }

    #[test]
    fn rate_limit_per_uid_slides() {
        let mut q = q();
        let t = Instant::now();
        for _ in 0..5 {
            q.admit(7, t).unwrap();
        }
        assert_eq!(q.admit(7, t), Err(Refused::RateLimited));
        assert!(q.admit(8, t).is_ok());
        assert!(q.admit(7, t + Duration::from_secs(61)).is_ok());
    }

    #[test]
    fn deadline_is_the_earlier_of_content_expiry_and_max_wait() {
        let mut q = q();
        let t = Instant::now();
        q.offer(1, "a", "k".into(), (), t, t + Duration::from_secs(5))
            .unwrap();
        q.offer(1, "b", "j".into(), (), t, t + Duration::from_secs(500))
            .unwrap();
        assert_eq!(q.overdue(t + Duration::from_secs(5)), vec!["q1"]);
        assert_eq!(q.overdue(t + Duration::from_secs(60)), vec!["q1", "q2"]);
    }

    #[test]
    fn finished_memory_is_bounded() {
        let mut q: Queue<()> = q();
        let t = Instant::now();
        let l = t + Duration::from_secs(3600);
        for i in 0..50 {
            q.offer(1, &format!("r{i}"), format!("k{i}"), (), t, l)
                .unwrap();
            let id = format!("q{}", i + 1);
            q.finish(&id, Outcome::Expired, t, l);
        }
        assert!(q.finished.len() <= 4);
    }
}

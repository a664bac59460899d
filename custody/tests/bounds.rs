//! Bounds on what agents can make custody hold or wait for, each test named
//! for what it stops (docs/SECURITY.md, "Bounds"). The engine runs in
//! process over a passphrase file store (cheap KDF) and a real SQLite audit
//! file; the socket tests use a real Unix socket. Bounds tested elsewhere
//! (frame size, per-uid connections, idle timeout, audit query limit, …)
//! are listed in docs/SECURITY.md with their test names.

mod support;

use parley_core::PublicKey;
use parley_custody::audit::EventKind;
use parley_custody::engine::{unix_now, EngineConfig};
use parley_custody::ipc::peer::PeerInfo;
use parley_custody::ipc::socket::ConnLimits;
use parley_custody::protocol::Request;
use parley_custody::queue::{Offer, Outcome, Queue, QueueLimits};
use parley_custody::server::ServerLimits;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use support::agent::Agent;
use support::custody::{next_reply, no_step_up, Keys, Options, TestCustody};
use support::requests::{consent_req, kind_code, rehash};
use support::rt;
use tokio::sync::mpsc;

/// Nobody decides: requests stay pending until their deadline (what the
/// approver was asked to show is never read).
fn config(queue: QueueLimits) -> EngineConfig {
    EngineConfig {
        queue,
        ..no_step_up()
    }
}

async fn custody(queue: QueueLimits) -> TestCustody {
    TestCustody::start(Keys::File, config(queue)).await
}

fn limits(per_peer: usize, total: usize, per_minute: u32, max_wait: Duration) -> QueueLimits {
    QueueLimits {
        per_peer,
        total,
        per_minute,
        max_wait,
        finished: 64,
    }
}

fn peer(uid: u32) -> PeerInfo {
    PeerInfo {
        uid,
        gid: uid,
        pid: Some(4242),
        exe: None,
        user: Some(format!("agent{uid}")),
        chain: Default::default(),
    }
}

/// A consent request for a fresh, well-formed proposal `n`.
fn consent(id: &str, n: u32, principal: &PublicKey) -> Value {
    let mut p = json!({
        "id": format!("p_{n}"), "capability": "shop.order", "summary": "Order",
        "effects": [{"op": "create", "target": format!("order {n}")}],
        "cost": {"amount": 100 + i64::from(n), "currency": "USD"}, "risk": "low",
        "undo": {"window": 60}, "expires": unix_now() + 3600
    });
    rehash(&mut p);
    consent_req(id, principal, &p)
}

/// Starts a request on the engine; returns the channel its replies arrive on.
fn submit(c: &TestCustody, uid: u32, frame: Value) -> mpsc::Receiver<Value> {
    c.submit(&peer(uid), Request::from_value(&frame).unwrap())
}

#[test]
fn pending_requests_are_capped_per_peer_and_in_total() {
    rt().block_on(async {
        let c = custody(limits(2, 3, 100, Duration::from_secs(60))).await;
        let mut keep = Vec::new();
        let mut got = Vec::new();
        for (i, uid) in [1001, 1001, 1001, 1002, 1003].into_iter().enumerate() {
            let mut rx = submit(&c, uid, consent(&format!("r{i}"), i as u32, &c.principal));
            got.push(kind_code(&next_reply(&mut rx).await));
            keep.push(rx);
        }
        assert_eq!(
            got,
            ["PENDING", "PENDING", "ERROR:busy", "PENDING", "ERROR:busy"],
            "2 per peer, 3 in total"
        );
        assert_eq!(c.engine.pending().len(), 3);
    });
}

#[test]
fn requests_per_minute_per_peer_are_rate_limited_even_invalid_ones() {
    rt().block_on(async {
        let c = custody(limits(8, 64, 3, Duration::from_secs(60))).await;
        let mut got = Vec::new();
        for i in 0..4 {
            let mut bad = consent(&format!("r{i}"), i, &c.principal);
            bad["proposal"]["summary"] = json!("tampered after hashing");
            let mut rx = submit(&c, 1001, bad);
            got.push(kind_code(&next_reply(&mut rx).await));
        }
        assert_eq!(got[..3], ["REJECTED:proposal_hash"; 3]);
        assert_eq!(got[3], "ERROR:rate_limited");
        // Another uid has its own budget.
        let mut rx = submit(&c, 1002, consent("o", 9, &c.principal));
        assert_eq!(kind_code(&next_reply(&mut rx).await), "PENDING");
    });
}

#[test]
fn a_request_nobody_decides_expires_at_the_approver_deadline() {
    rt().block_on(async {
        let c = custody(limits(8, 64, 100, Duration::from_secs(1))).await;
        let started = Instant::now();
        let mut rx = submit(&c, 1001, consent("r", 1, &c.principal));
        assert_eq!(kind_code(&next_reply(&mut rx).await), "PENDING");
        assert_eq!(kind_code(&next_reply(&mut rx).await), "EXPIRED");
        assert!(started.elapsed() >= Duration::from_secs(1));
        assert!(c.engine.pending().is_empty(), "the prompt is withdrawn");
        let rows = c.rows(EventKind::RequestExpired);
        assert_eq!(rows.len(), 1);
    });
}

/// Replies in these tests come at once or not at all.
const WAIT: Duration = Duration::from_secs(20);

/// A custody with `queue` limits, serving with these connection and
/// server limits (until it is dropped); returns it and its socket.
async fn start_server(
    queue: QueueLimits,
    conn: ConnLimits,
    server: ServerLimits,
) -> (TestCustody, PathBuf) {
    let options = Options {
        conn,
        server,
        ..Options::new(config(queue))
    };
    let mut c = TestCustody::start_with(Keys::File, options).await;
    let path = c.serve();
    (c, path)
}

#[test]
fn requests_in_flight_per_connection_are_capped() {
    rt().block_on(async {
        let server = ServerLimits {
            in_flight: 2,
            ..Default::default()
        };
        let queue = limits(8, 64, 100, Duration::from_secs(60));
        let (c, path) = start_server(queue, ConnLimits::default(), server).await;
        let mut a = Agent::connect(&path).await;
        for i in 0..3 {
            a.w.send(&consent(&format!("r{i}"), i, &c.principal))
                .await
                .unwrap();
        }
        let mut finals = Vec::new();
        while finals.is_empty() {
            let v = a.next(WAIT).await.expect("a reply");
            if v["kind"] != "PENDING" {
                finals.push(v);
            }
        }
        let busy = &finals[0];
        assert_eq!(kind_code(busy), "ERROR:busy", "{busy}");
        assert_eq!(busy["re"], "r2");
        assert!(busy["message"].as_str().unwrap().contains("in flight"));
        // The connection is still read and answered (busy while two wait),
        // and a second connection of the same peer is served.
        a.w.send(&json!({"custody": 1, "id": "h", "op": "hello"}))
            .await
            .unwrap();
        loop {
            let v = a.next(WAIT).await.expect("a reply");
            if v["re"] == "h" {
                assert_eq!(kind_code(&v), "ERROR:busy");
                break;
            }
        }
        let mut b = Agent::connect(&path).await;
        b.w.send(&json!({"custody": 1, "id": "h2", "op": "hello"}))
            .await
            .unwrap();
        assert_eq!(b.next(WAIT).await.expect("a reply")["kind"], "HELLO");
    });
}

#[test]
fn connections_beyond_the_total_cap_get_busy_before_any_byte_is_read() {
    rt().block_on(async {
        let conn = ConnLimits {
            per_uid: 100,
            total: 2,
        };
        let queue = limits(8, 64, 100, Duration::from_secs(60));
        let (_c, path) = start_server(queue, conn, ServerLimits::default()).await;
        let _a = Agent::connect(&path).await;
        let _b = Agent::connect(&path).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        let mut third = Agent::connect(&path).await;
        let v = third.next(WAIT).await.expect("an ERROR line");
        assert_eq!(kind_code(&v), "ERROR:busy", "{v}");
        assert!(third.next(WAIT).await.is_none(), "then closed");
    });
}

#[test]
fn a_silent_connection_is_closed_after_the_idle_timeout() {
    rt().block_on(async {
        let server = ServerLimits {
            idle: Duration::from_millis(300),
            ..Default::default()
        };
        let queue = limits(8, 64, 100, Duration::from_secs(60));
        let (_c, path) = start_server(queue, ConnLimits::default(), server).await;
        let started = Instant::now();
        let mut a = Agent::connect(&path).await;
        // Half a line, then silence: the line never completes.
        use tokio::io::AsyncWriteExt;
        let mut raw = a.w.into_inner();
        raw.write_all(b"{\"custody\":1,").await.unwrap();
        assert!(a.r.next_frame().await.map(|f| f.is_none()).unwrap_or(true));
        assert!(started.elapsed() < Duration::from_secs(10));
    });
}

/// L14: the queue's memory of finished requests (for idempotent re-approval
/// and `status`) and of agents' request ids is capped, however many
/// requests arrive.
#[test]
fn finished_outcomes_and_request_ids_are_forgotten_beyond_the_cap() {
    let mut q: Queue<()> = Queue::new(QueueLimits {
        per_peer: 4,
        total: 4,
        per_minute: u32::MAX,
        max_wait: Duration::from_secs(60),
        finished: 8,
    });
    let t = Instant::now();
    let keep = t + Duration::from_secs(3600);
    let mut ids = Vec::new();
    for i in 0..10_000u32 {
        let uid = i % 97;
        q.admit(uid, t).unwrap();
        let Ok(Offer::New(id)) = q.offer(uid, &format!("r{i}"), format!("k{i}"), (), t, keep)
        else {
            panic!("not queued")
        };
        q.finish(&id, Outcome::Approved(format!("pg1.{i}"), None), t, keep);
        ids.push((uid, format!("r{i}"), id));
    }
    // Only the newest few outcomes are remembered.
    let remembered = ids
        .iter()
        .filter(|(_, _, id)| q.outcome(id).is_some())
        .count();
    assert!(remembered <= 8, "{remembered} outcomes remembered");
    let (uid, rid, id) = &ids[9_999];
    assert!(q.outcome(id).is_some(), "the newest is remembered");
    assert_eq!(q.lookup(*uid, rid), Some(id));
    // Request ids of long-forgotten outcomes are dropped too.
    let known = ids
        .iter()
        .filter(|(uid, rid, _)| q.lookup(*uid, rid).is_some())
        .count();
    assert!(known <= 4 * (4 + 8) + 1, "{known} request ids kept");
    assert!(q.pending().is_empty());
}

//! The audit log under attack: oversized fields, floods of rejected
//! requests, tampering around the verified checkpoint, a full disk, and a
//! log written by the previous format. Real SQLite files; where an agent is
//! the attacker, the real engine and `server::serve` on a real Unix socket.
//!
//! `a_full_disk_refuses_to_sign` mounts a small tmpfs and so needs root (as
//! CI runs); without root it prints why it is skipped.
#![cfg(target_os = "linux")]

mod support;

use nix::unistd::Uid;
use parley_custody::approver::{Gesture, Verdict, Yes};
use parley_custody::audit::{
    Audit, AuditError, Event, EventKind, NewEvent, Query, Recorded, RetentionPolicy,
    CUT_FIELD_BYTES, CUT_MARK, GENESIS, MAX_FIELD_BYTES, MAX_LIMIT,
};
use parley_custody::engine::{unix_now, DecideError, EngineConfig};
use rusqlite::Connection;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use support::agent::Agent;
use support::custody::{no_step_up, Keys, Options, TestCustody};
use support::requests::{agent_key, consent_req, proposal, SERVICE};
use support::rt;

/// A click with the second confirmation (no OS authentication: these tests
/// attack the audit log, not the step-up; `StepUpPolicy::Never`).
const YES: Yes = Yes {
    gesture: Gesture::Click,
    second_confirmation: true,
};

// ---------------------------------------------------------------- the daemon

/// The engine and server on a real socket; the audit log in `audit_dir`
/// (default: the temporary directory).
async fn start(config: EngineConfig, audit_dir: Option<&Path>) -> TestCustody {
    let options = Options {
        audit_dir: audit_dir.map(Path::to_path_buf),
        ..Options::new(config)
    };
    let mut c = TestCustody::start_with(Keys::File, options).await;
    c.serve();
    c
}

fn rejections(audit: &Audit) -> Vec<Event> {
    audit
        .query(&Query {
            kinds: vec![EventKind::RequestRejected],
            limit: Some(MAX_LIMIT),
            ..Default::default()
        })
        .unwrap()
}

fn cut_sizes(e: &Event) -> serde_json::Map<String, Value> {
    let text = e.cut.as_deref().expect("the row records what was cut");
    serde_json::from_str::<Value>(text)
        .unwrap()
        .as_object()
        .unwrap()
        .clone()
}

/// Every text field of a row, to bound its size.
fn text_bytes(e: &Event) -> usize {
    [
        &e.peer_exe,
        &e.agent,
        &e.service,
        &e.capability,
        &e.hash,
        &e.cost_currency,
        &e.risk,
        &e.token_id,
        &e.caveats,
        &e.reason,
        &e.principal,
        &e.confirmed_by,
    ]
    .iter()
    .map(|f| f.as_ref().map_or(0, String::len))
    .sum()
}

// ---------------------------------------------------------------- oversized fields

#[test]
fn a_70_kib_field_is_logged_cut_with_its_size() {
    rt().block_on(async {
        let d = start(no_step_up(), None).await;
        let p = proposal("p_big", 4200);
        let mut req = consent_req("big-service", &d.principal, &p);
        // 70 KiB: above the writer's old 64 KiB cap, which refused the row.
        let service = format!("shop.example{}", "\u{202e}x".repeat(70 * 1024 / 4));
        let service_len = service.len();
        assert!(service_len > 70 * 1024);
        req["service"] = json!(service);
        let mut c = Agent::connect(&d.socket).await;
        c.send(&req).await;
        let reply = c.final_for("big-service").await;
        assert_eq!(reply["kind"], "REJECTED", "{reply}");

        d.engine.with_audit(|a| {
            let rows = rejections(a);
            assert_eq!(rows.len(), 1, "the rejection is logged");
            let e = &rows[0];
            let stored = e.service.as_deref().unwrap();
            assert!(stored.ends_with(CUT_MARK), "the cut is visible");
            assert!(stored.len() <= CUT_FIELD_BYTES);
            assert!(service.starts_with(stored.trim_end_matches(CUT_MARK)));
            let cut = cut_sizes(e);
            assert_eq!(cut["service"], json!(service_len), "{cut:?}");
            assert!(text_bytes(e) <= 12 * CUT_FIELD_BYTES);
            assert!(a.verify().unwrap().ok);
        });
    });
}

#[test]
fn a_900_kb_hash_rejection_is_logged() {
    rt().block_on(async {
        let d = start(no_step_up(), None).await;
        let p = proposal("p_hash", 99_900);
        let mut req = consent_req("big-hash", &d.principal, &p);
        let hash = "A".repeat(900_000);
        req["consent"]["hash"] = json!(hash);
        let mut c = Agent::connect(&d.socket).await;
        c.send(&req).await;
        let reply = c.final_for("big-hash").await;
        assert_eq!(reply["kind"], "REJECTED", "{reply}");

        let audit = Audit::open(&d.audit_path).unwrap();
        let rows = rejections(&audit);
        assert_eq!(rows.len(), 1, "the rejection is logged");
        let e = &rows[0];
        assert!(e.hash.as_deref().unwrap().ends_with(CUT_MARK));
        let cut = cut_sizes(e);
        assert_eq!(cut["hash"], json!(900_000), "{cut:?}");
        assert!(
            text_bytes(e) <= 12 * CUT_FIELD_BYTES,
            "{} bytes",
            text_bytes(e)
        );
        assert!(audit.verify().unwrap().ok);
    });
}

#[test]
fn a_signed_row_is_never_cut_but_refused_whole() {
    let dir = tempfile::tempdir().unwrap();
    let mut audit = Audit::open(&dir.path().join("audit.sqlite3")).unwrap();
    let err = audit
        .record(&NewEvent {
            caveats: Some("a".repeat(MAX_FIELD_BYTES + 1)),
            ..NewEvent::new(EventKind::GrantIssued, 1)
        })
        .unwrap_err();
    assert!(matches!(err, AuditError::FieldTooLong { .. }), "{err}");
    // Just inside the signed bound: stored exactly, nothing cut.
    let exact = "b".repeat(MAX_FIELD_BYTES);
    let Recorded::Logged(e) = audit
        .record(&NewEvent {
            caveats: Some(exact.clone()),
            ..NewEvent::new(EventKind::GrantIssued, 2)
        })
        .unwrap()
    else {
        panic!("a signed event is always a row")
    };
    assert_eq!(e.caveats.as_deref(), Some(exact.as_str()));
    assert_eq!(e.cut, None);
}

// ---------------------------------------------------------------- floods and retention

#[test]
fn a_flood_of_rejected_requests_keeps_the_audit_bounded_and_counts_every_request() {
    const FLOOD: usize = 2_000;
    rt().block_on(async {
        let mut config = no_step_up();
        // Half of the flood passes the rate limit and is rejected by review,
        // half is refused by the rate limiter: both are rejections.
        config.queue.per_minute = (FLOOD / 2) as u32;
        let d = start(config, None).await;
        let policy = RetentionPolicy::default();
        let me = Uid::effective().as_raw();
        let mut c = Agent::connect(&d.socket).await;
        let mut answers = std::collections::BTreeMap::<String, u64>::new();
        const WINDOW: usize = 8;
        let mut sent = 0;
        let mut done = 0;
        while done < FLOOD {
            while sent < FLOOD && sent - done < WINDOW {
                let mut p = proposal(&format!("p{sent}"), 100);
                // Tampered after hashing: review rejects it. Its fields
                // are large, as an attacker's would be.
                p["cost"]["amount"] = json!(1);
                p["summary"] = json!("x".repeat(40_000));
                let mut req = consent_req(&format!("f{sent}"), &d.principal, &p);
                req["consent"]["summary"] = json!("y".repeat(40_000));
                c.send(&req).await;
                sent += 1;
            }
            let v = c.recv().await;
            if v["kind"] == "PENDING" {
                continue;
            }
            done += 1;
            let key = format!(
                "{}:{}",
                v["kind"].as_str().unwrap_or("?"),
                v["code"].as_str().unwrap_or("")
            );
            *answers.entry(key).or_default() += 1;
        }
        let refused: u64 = answers
            .iter()
            .filter(|(k, _)| k.starts_with("REJECTED") || k.starts_with("ERROR:rate_limited"))
            .map(|(_, n)| n)
            .sum();
        assert_eq!(refused, FLOOD as u64, "{answers:?}");
        assert!(
            answers.keys().any(|k| k.starts_with("REJECTED")),
            "{answers:?}"
        );
        assert!(answers.contains_key("ERROR:rate_limited"), "{answers:?}");

        d.engine.with_audit(|a| {
            // The flood may straddle one hour boundary: at most two hours of rows.
            let bound = 2 * policy.rejections_per_hour as usize;
            let rows = rejections(a);
            assert!(
                rows.len() <= bound,
                "{} rejection rows for one peer",
                rows.len()
            );
            // Every request is accounted for, summarized or not yet.
            assert_eq!(a.rejections_accounted(Some(me)).unwrap(), FLOOD as u64);
            let open = a.open_tallies().unwrap();
            assert!(!open.is_empty(), "the excess is counted");
            // Summarizing the running hour (as at shutdown) puts every
            // request in a row.
            let written = a.flush_tallies(unix_now(), true).unwrap();
            assert!(!written.is_empty());
            assert!(a.open_tallies().unwrap().is_empty());
            let all = a
                .query(&Query {
                    limit: Some(MAX_LIMIT),
                    ..Default::default()
                })
                .unwrap();
            let summaries: Vec<&Event> = all
                .iter()
                .filter(|e| e.kind == EventKind::RejectionsSummarized)
                .collect();
            assert!(summaries.len() <= 3, "{} summary rows", summaries.len());
            let in_rows: i64 = all
                .iter()
                .filter(|e| e.peer_uid == Some(me))
                .map(|e| match e.kind {
                    EventKind::RequestRejected => 1,
                    EventKind::RejectionsSummarized => e.count.unwrap(),
                    _ => 0,
                })
                .sum();
            assert_eq!(in_rows, FLOOD as i64, "every request is in a row");
            let s = summaries[0];
            let reason = s.reason.as_deref().unwrap();
            assert!(
                reason.contains(&format!("more rejected requests from uid {me}")),
                "{reason}"
            );
            assert!(reason.contains("most common reasons: "), "{reason}");
            assert!(s.span_start.unwrap() < s.span_end.unwrap());
            // Bounded: the whole log is a few dozen rows, each small.
            assert!(all.len() <= bound + 3, "{} rows", all.len());
            assert!(all.iter().all(|e| text_bytes(e) <= 12 * CUT_FIELD_BYTES));
            assert!(a.verify().unwrap().ok);
        });
        let size = std::fs::metadata(&d.audit_path).unwrap().len();
        assert!(size < 4 * 1024 * 1024, "the log is {size} bytes");
    });
}

/// Valid requests each withdrawn by a disconnect once they are pending: each
/// one used to be a `request_cancelled` row, unbounded, until the disk was
/// full and every signature refused. Now they are bounded per peer and hour
/// like rejections, every one still counted, and custody still signs.
#[test]
fn a_flood_of_requests_cancelled_by_disconnect_keeps_the_audit_bounded_and_counts_every_request() {
    const FLOOD: usize = 150;
    rt().block_on(async {
        let mut config = no_step_up();
        config.queue.per_minute = FLOOD as u32 + 10;
        let mut d = start(config, None).await;
        let policy = RetentionPolicy::default();
        let me = Uid::effective().as_raw();
        for i in 0..FLOOD {
            let mut c = Agent::connect(&d.socket).await;
            let p = proposal(&format!("pc{i}"), 100);
            c.send(&consent_req(&format!("c{i}"), &d.principal, &p))
                .await;
            let pending = c.recv().await;
            assert_eq!(pending["kind"], "PENDING", "{pending}");
            let shown = tokio::time::timeout(Duration::from_secs(30), d.shown.recv())
                .await
                .expect("shown in time")
                .expect("shown");
            drop(c);
            // The engine writes its row once it sees the connection closed.
            let start = std::time::Instant::now();
            while !d.approver.withdrawn_ids().contains(&shown.id) {
                assert!(
                    start.elapsed() < Duration::from_secs(30),
                    "request {i} was never withdrawn"
                );
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        // Every withdrawal is written or counted before the next one starts.
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while d
            .engine
            .with_audit(|a| a.cancellations_accounted(Some(me)).unwrap())
            < FLOOD as u64
        {
            assert!(std::time::Instant::now() < deadline, "not all accounted");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        d.engine.with_audit(|a| {
            // The flood may straddle one hour boundary: at most two hours of rows.
            let bound = 2 * policy.rejections_per_hour as usize;
            let rows = a
                .query(&Query {
                    kinds: vec![EventKind::RequestCancelled],
                    limit: Some(MAX_LIMIT),
                    ..Default::default()
                })
                .unwrap();
            assert!(
                rows.len() <= bound,
                "{} cancel rows for one peer",
                rows.len()
            );
            assert_eq!(a.cancellations_accounted(Some(me)).unwrap(), FLOOD as u64);
            // Summarizing the running hour (as at shutdown) puts every
            // request in a row.
            let written = a.flush_tallies(unix_now(), true).unwrap();
            assert!(!written.is_empty(), "the excess was counted");
            let all = a
                .query(&Query {
                    limit: Some(MAX_LIMIT),
                    ..Default::default()
                })
                .unwrap();
            let summaries: Vec<&Event> = all
                .iter()
                .filter(|e| e.kind == EventKind::CancellationsSummarized)
                .collect();
            assert!(
                (1..=3).contains(&summaries.len()),
                "{} summary rows",
                summaries.len()
            );
            let in_rows: i64 = all
                .iter()
                .filter(|e| e.peer_uid == Some(me))
                .map(|e| match e.kind {
                    EventKind::RequestCancelled => 1,
                    EventKind::CancellationsSummarized => e.count.unwrap(),
                    _ => 0,
                })
                .sum();
            assert_eq!(in_rows, FLOOD as i64, "every request is in a row");
            let reason = summaries[0].reason.as_deref().unwrap();
            assert!(
                reason.contains(&format!(
                    "more cancelled (withdrawn by the agent) requests from uid {me}"
                )) && reason.contains("how they ended: disconnected ("),
                "{reason}"
            );
            assert!(all.len() <= bound + 3, "{} rows", all.len());
            assert!(a.verify().unwrap().ok);
        });
        // And custody still signs.
        let p = proposal("p_after", 100);
        let mut c = Agent::connect(&d.socket).await;
        c.send(&consent_req("after", &d.principal, &p)).await;
        assert_eq!(c.recv().await["kind"], "PENDING");
        let pv = d.shown.recv().await.unwrap();
        d.engine
            .decide(&pv.id, Verdict::Approve(YES))
            .await
            .unwrap();
        let reply = c.final_for("after").await;
        assert_eq!(reply["kind"], "APPROVED", "{reply}");
    });
}

/// A log with signed events between many rejections of two peers, in the
/// hour starting at `t0`; then one event in the next hour, which closes it.
fn mixed_log(audit: &mut Audit, t0: i64) -> Vec<Event> {
    let mut signed = Vec::new();
    for i in 0..300 {
        let uid = if i % 3 == 0 { 2002 } else { 1001 };
        let mut ev = NewEvent::new(EventKind::RequestRejected, t0 + i);
        ev.peer_uid = Some(uid);
        ev.reason = Some(if i % 2 == 0 {
            "proposal_hash: the hash does not match".into()
        } else {
            "rate_limited: too many requests".into()
        });
        audit.record(&ev).unwrap();
        if i % 50 == 7 {
            for kind in [
                EventKind::GrantIssued,
                EventKind::ConsentApproved,
                EventKind::KeyCreated,
            ] {
                let mut ev = NewEvent::new(kind, t0 + i);
                ev.peer_uid = Some(1001);
                ev.token_id = Some(format!("token-{i}-{kind}"));
                ev.confirmed_by = Some("click+os-auth".into());
                match audit.record(&ev).unwrap() {
                    Recorded::Logged(e) => signed.push(*e),
                    Recorded::Counted { .. } => panic!("a signed event was only counted"),
                }
            }
        }
    }
    let mut next = NewEvent::new(EventKind::RequestExpired, t0 + 3600);
    next.peer_uid = Some(1001);
    audit.record(&next).unwrap();
    signed
}

/// The signed rows as they are stored now, by seq.
fn stored(audit: &Audit, signed: &[Event]) -> Vec<Event> {
    let all = audit
        .query(&Query {
            limit: Some(MAX_LIMIT),
            ..Default::default()
        })
        .unwrap();
    signed
        .iter()
        .map(|s| {
            all.iter()
                .find(|e| e.seq == s.seq)
                .cloned()
                .expect("every signed row is still there")
        })
        .collect()
}

#[test]
fn compaction_never_touches_signed_events() {
    let dir = tempfile::tempdir().unwrap();
    let mut audit = Audit::open(&dir.path().join("audit.sqlite3")).unwrap();
    let t0 = 1_790_000_000 - 1_790_000_000 % 3600;
    let signed = mixed_log(&mut audit, t0);
    assert_eq!(signed.len(), 18);
    assert_eq!(stored(&audit, &signed), signed);
    // Summarizing: the rejections beyond the policy are one row per peer.
    assert_eq!(rejections(&audit).len(), 40);
    let summaries = audit
        .query(&Query {
            kinds: vec![EventKind::RejectionsSummarized],
            ..Default::default()
        })
        .unwrap();
    assert_eq!(summaries.len(), 2);
    assert_eq!(audit.rejections_accounted(Some(1001)).unwrap(), 200);
    assert_eq!(audit.rejections_accounted(Some(2002)).unwrap(), 100);
    assert_eq!(audit.rejections_accounted(None).unwrap(), 300);
    for s in &summaries {
        assert_eq!(s.span_start, Some(t0));
        assert_eq!(s.span_end, Some(t0 + 3600));
        let r = s.reason.as_deref().unwrap();
        assert!(
            r.contains("proposal_hash") && r.contains("rate_limited"),
            "{r}"
        );
    }

    // Compacting what is older than a day, two days later.
    let policy = RetentionPolicy {
        compact_after_days: Some(1),
        ..RetentionPolicy::default()
    };
    audit.set_retention(policy, t0 + 2 * 86_400).unwrap();
    let c = audit
        .compact(t0 + 2 * 86_400)
        .unwrap()
        .expect("old rows to compact");
    assert_eq!(c.kind, EventKind::AuditCompacted);
    // 40 rejection rows, 2 summaries, 1 expiry.
    assert_eq!(c.count, Some(43), "{c:?}");
    let reason = c.reason.as_deref().unwrap();
    assert!(reason.contains("standing for 301 requests"), "{reason}");
    assert_eq!(stored(&audit, &signed), signed, "signed rows untouched");
    let all = audit
        .query(&Query {
            limit: Some(MAX_LIMIT),
            ..Default::default()
        })
        .unwrap();
    for e in &all {
        if e.kind.is_compactable() {
            assert_eq!(e.compacted_by, Some(c.seq), "{e:?}");
            assert_eq!(e.reason, None);
        } else {
            assert_eq!(e.compacted_by, None, "{e:?}");
        }
    }
    // Every request is still counted, and nothing more to do.
    assert_eq!(audit.rejections_accounted(None).unwrap(), 300);
    assert!(audit.compact(t0 + 2 * 86_400).unwrap().is_none());
    // A signed event is never compacted, however old.
    assert!(signed.iter().all(|s| !s.kind.is_compactable()));
}

#[test]
fn the_chain_verifies_after_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.sqlite3");
    let mut audit = Audit::open(&path).unwrap();
    let t0 = 1_790_003_600 - 1_790_003_600 % 3600;
    let signed = mixed_log(&mut audit, t0);
    assert!(audit.verify().unwrap().ok);
    let now = t0 + 3 * 86_400;
    audit
        .set_retention(
            RetentionPolicy {
                compact_after_days: Some(1),
                ..RetentionPolicy::default()
            },
            now,
        )
        .unwrap();
    let c = audit.compact(now).unwrap().unwrap();
    // The checkpoint is before the compaction row: incremental, then full.
    let inc = audit.verify_incremental().unwrap();
    assert!(inc.ok && !inc.full, "{inc:?}");
    let full = audit.verify().unwrap();
    assert!(full.ok && full.full, "{full:?}");
    // Later rows chain on as usual.
    let mut later = NewEvent::new(EventKind::ConsentDenied, now + 5);
    later.reason = Some("no".into());
    audit.record(&later).unwrap();
    assert!(audit.verify().unwrap().ok);
    drop(audit);

    let other = Connection::open(&path).unwrap();
    let verify = || Audit::open(&path).unwrap().verify().unwrap();
    // A signed row marked compacted (its contents then cleared) is found.
    let grant = signed[0].seq;
    other
        .execute(
            "UPDATE events SET compacted_by = ?1, token_id = NULL WHERE seq = ?2",
            [c.seq, grant],
        )
        .unwrap();
    let r = verify();
    assert!(!r.ok && r.first_bad_seq == Some(grant), "{r:?}");
    other
        .execute(
            "UPDATE events SET compacted_by = NULL, token_id = ?1 WHERE seq = ?2",
            rusqlite::params![signed[0].token_id, grant],
        )
        .unwrap();
    assert!(verify().ok, "restored");
    // A compacted row unmarked (to slip in new contents) is found too.
    let tomb: i64 = other
        .query_row(
            "SELECT MIN(seq) FROM events WHERE compacted_by IS NOT NULL",
            [],
            |r| r.get(0),
        )
        .unwrap();
    other
        .execute(
            "UPDATE events SET compacted_by = NULL, reason = 'forged' WHERE seq = ?1",
            [tomb],
        )
        .unwrap();
    let r = verify();
    assert!(!r.ok && r.first_bad_seq == Some(tomb), "{r:?}");
    other
        .execute(
            "UPDATE events SET compacted_by = ?1, reason = NULL WHERE seq = ?2",
            [c.seq, tomb],
        )
        .unwrap();
    assert!(verify().ok, "restored");
    // A lowered count in a summary row is tampering like any other.
    let summary: i64 = other
        .query_row(
            "SELECT seq FROM events WHERE kind = 'rejections_summarized' LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    other
        .execute("UPDATE events SET count = 1 WHERE seq = ?1", [summary])
        .unwrap();
    let r = verify();
    assert!(!r.ok, "{r:?}");
}

#[test]
fn the_retention_policy_is_stored_shown_and_a_change_is_logged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.sqlite3");
    let mut audit = Audit::open(&path).unwrap();
    assert_eq!(audit.retention(), RetentionPolicy::default());
    assert!(!audit.set_retention(RetentionPolicy::default(), 1).unwrap());
    let strict = RetentionPolicy {
        rejections_per_hour: 2,
        ..RetentionPolicy::default()
    };
    assert!(audit.set_retention(strict, 2).unwrap());
    let changed = audit
        .query(&Query {
            kinds: vec![EventKind::RetentionChanged],
            ..Default::default()
        })
        .unwrap();
    assert_eq!(changed.len(), 1);
    assert!(changed[0].reason.as_deref().unwrap().contains("at most 2 "));
    drop(audit);
    // Another reader (parley audit, the app) sees the policy in effect.
    let mut audit = Audit::open(&path).unwrap();
    assert_eq!(audit.retention(), strict);
    for i in 0..5 {
        let mut ev = NewEvent::new(EventKind::RequestRejected, 10 + i);
        ev.peer_uid = Some(7);
        ev.reason = Some("invalid: no".into());
        let r = audit.record(&ev).unwrap();
        assert_eq!(matches!(r, Recorded::Logged(_)), i < 2, "{r:?}");
    }
    assert_eq!(audit.rejections_accounted(Some(7)).unwrap(), 5);
    // The settings value the app shows and edits.
    assert_eq!(
        serde_json::to_value(strict).unwrap(),
        json!({"rejections_per_hour": 2, "compact_after_days": null})
    );
}

// ---------------------------------------------------------------- checkpoint

#[test]
fn tampering_before_the_checkpoint_is_found_by_a_full_verify() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.sqlite3");
    let mut audit = Audit::open(&path).unwrap();
    for i in 0..100 {
        let mut ev = NewEvent::new(EventKind::ConsentDenied, 1_000 + i);
        ev.reason = Some(format!("no {i}"));
        audit.append(&ev).unwrap();
    }
    let first = audit.verify_incremental().unwrap();
    assert!(first.ok && first.full, "no checkpoint yet: a full verify");
    assert_eq!(audit.checkpoint().unwrap(), Some(100));
    for i in 0..5 {
        audit
            .append(&NewEvent::new(EventKind::RequestExpired, 2_000 + i))
            .unwrap();
    }
    let inc = audit.verify_incremental().unwrap();
    assert!(inc.ok && !inc.full && inc.checked_from == 101, "{inc:?}");
    assert_eq!(audit.checkpoint().unwrap(), Some(105));

    // Row 10 edited behind custody's back, its stored hash left alone.
    let other = Connection::open(&path).unwrap();
    other
        .execute("UPDATE events SET reason = 'yes' WHERE seq = 10", [])
        .unwrap();
    let inc = audit.verify_incremental().unwrap();
    assert!(inc.ok && inc.checked_from == 106, "{inc:?}");
    let full = audit.verify().unwrap();
    assert!(!full.ok, "{full:?}");
    assert_eq!(full.first_bad_seq, Some(10));
    assert_eq!(
        audit.checkpoint().unwrap(),
        Some(105),
        "not moved by a failure"
    );

    // The checkpoint row itself replaced: the incremental verify says so.
    other
        .execute("UPDATE events SET row_hash = 'forged' WHERE seq = 105", [])
        .unwrap();
    let inc = audit.verify_incremental().unwrap();
    assert!(!inc.ok, "{inc:?}");
    assert_eq!(inc.first_bad_seq, Some(105));
    assert!(inc.problem.unwrap().contains("run a full verify"));
}

// ---------------------------------------------------------------- full disk

struct Tmpfs(PathBuf);

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_refuses_to_sign() {
    if !Uid::effective().is_root() {
        println!("SKIPPED a_full_disk_refuses_to_sign: mounting a tmpfs needs root");
        return;
    }
    let mnt = tempfile::tempdir().unwrap();
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=12m,mode=0700", "tmpfs"])
        .arg(mnt.path())
        .status()
        .unwrap()
        .success();
    assert!(ok, "mount -t tmpfs failed");
    let _mounted = Tmpfs(mnt.path().to_path_buf());
    rt().block_on(async {
        let mut d = start(no_step_up(), Some(mnt.path())).await;
        // Fill the disk that holds the log.
        let filler = mnt.path().join("filler");
        {
            use std::io::Write;
            let mut f = std::fs::File::create(&filler).unwrap();
            let chunk = vec![0u8; 64 * 1024];
            while f.write_all(&chunk).is_ok() {}
            let _ = f.sync_all();
        }
        let p = proposal("p_full", 6_480);
        let mut c = Agent::connect(&d.socket).await;
        c.send(&consent_req("full", &d.principal, &p)).await;
        let pending = c.recv().await;
        assert_eq!(pending["kind"], "PENDING", "{pending}");
        let pv = d.shown.recv().await.unwrap();
        let err = d
            .engine
            .decide(&pv.id, Verdict::Approve(YES))
            .await
            .unwrap_err();
        assert!(matches!(err, DecideError::Audit(_)), "{err:?}");
        let msg = err.to_string();
        assert!(
            msg.contains("the disk holding the audit log is full")
                && msg.contains("nothing is signed until there is room"),
            "{msg}"
        );
        println!("refused: {msg}");
        // The grant form's path refuses the same way.
        let err = d
            .engine
            .issue_grant(
                &agent_key().to_string(),
                &json!([{"svc": [SERVICE]}]),
                None,
                None,
                YES,
            )
            .await
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("the disk holding the audit log is full"),
            "{err}"
        );
        d.engine.with_audit(|a| {
            let signed = a
                .query(&Query {
                    kinds: vec![EventKind::ConsentApproved],
                    ..Default::default()
                })
                .unwrap();
            assert!(signed.is_empty(), "nothing was signed or recorded");
        });
        // No token reached the agent: its request still waits.
        let nothing = tokio::time::timeout(Duration::from_millis(300), c.recv()).await;
        assert!(nothing.is_err(), "the agent got {:?}", nothing.ok());
        // Room again: the same decision now signs, and the row is written.
        std::fs::remove_file(&filler).unwrap();
        d.engine
            .decide(&pv.id, Verdict::Approve(YES))
            .await
            .unwrap();
        let reply = c.final_for("full").await;
        assert_eq!(reply["kind"], "APPROVED", "{reply}");
        d.engine.with_audit(|a| assert!(a.verify().unwrap().ok));
    });
}

// ---------------------------------------------------------------- migration

/// The format 1 schema, as the previous code created it.
const SCHEMA_V1: &str = "
CREATE TABLE events (
    seq INTEGER PRIMARY KEY, at INTEGER NOT NULL, kind TEXT NOT NULL,
    peer_uid INTEGER, peer_pid INTEGER, peer_exe TEXT, agent TEXT, service TEXT,
    capability TEXT, hash TEXT, cost_amount INTEGER, cost_currency TEXT, risk TEXT,
    undo INTEGER, expires INTEGER, token_id TEXT, caveats TEXT, reason TEXT,
    principal TEXT, prev TEXT NOT NULL, row_hash TEXT NOT NULL
) STRICT;
CREATE INDEX events_at ON events(at);
CREATE INDEX events_agent ON events(agent);
CREATE INDEX events_kind_expires ON events(kind, expires);
CREATE TABLE chain_head (
    id INTEGER PRIMARY KEY CHECK (id = 1), count INTEGER NOT NULL,
    last_seq INTEGER NOT NULL, head TEXT NOT NULL
) STRICT;
";

/// The format 1 row hash, computed here independently of the crate: the
/// canonical JSON of the 20 columns (sorted keys) after `prev`.
fn v1_row_hash(seq: i64, at: i64, kind: &str, reason: &str, prev: &str) -> String {
    let c = format!(
        "{{\"agent\":null,\"at\":{at},\"capability\":null,\"caveats\":null,\"cost_amount\":null,\
         \"cost_currency\":null,\"expires\":null,\"hash\":null,\"kind\":\"{kind}\",\
         \"peer_exe\":null,\"peer_pid\":null,\"peer_uid\":null,\"prev\":\"{prev}\",\
         \"principal\":null,\"reason\":\"{reason}\",\"risk\":null,\"seq\":{seq},\
         \"service\":null,\"token_id\":null,\"undo\":null}}"
    );
    let mut h = Sha256::new();
    h.update(prev.as_bytes());
    h.update(c.as_bytes());
    parley_core::b64::encode(h.finalize())
}

#[test]
fn a_format_1_log_is_migrated_and_still_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.sqlite3");
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(SCHEMA_V1).unwrap();
        let mut prev = GENESIS.to_owned();
        for seq in 1..=3i64 {
            let (kind, reason) = ("grant_denied", format!("no {seq}"));
            let h = v1_row_hash(seq, 100 + seq, kind, &reason, &prev);
            conn.execute(
                "INSERT INTO events (seq, at, kind, reason, prev, row_hash) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                rusqlite::params![seq, 100 + seq, kind, reason, prev, h],
            )
            .unwrap();
            prev = h;
        }
        conn.execute(
            "INSERT INTO chain_head (id, count, last_seq, head) VALUES (1, 3, 3, ?1)",
            [&prev],
        )
        .unwrap();
        conn.pragma_update(None, "user_version", 1).unwrap();
    }
    let mut audit = Audit::open(&path).unwrap();
    let report = audit.verify().unwrap();
    assert!(report.ok && report.rows == 3, "{report:?}");
    let mut ev = NewEvent::new(EventKind::ConsentApproved, 200);
    ev.confirmed_by = Some("terminal+os-auth".into());
    audit.append(&ev).unwrap();
    drop(audit);
    let audit = Audit::open(&path).unwrap();
    assert!(audit.verify().unwrap().ok);
    let rows = audit.query(&Query::default()).unwrap();
    assert_eq!(rows[0].confirmed_by.as_deref(), Some("terminal+os-auth"));
    assert_eq!(rows[3].confirmed_by, None);
    let version: i64 = Connection::open(&path)
        .unwrap()
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(version, 4);
    // Exports carry the new column.
    let mut csv = Vec::new();
    parley_custody::audit::export_csv(&rows, &mut csv).unwrap();
    let csv = String::from_utf8(csv).unwrap();
    assert!(csv.lines().next().unwrap().ends_with(
        ",confirmed_by,cut,count,span_start,span_end,compacted_by,peer_chain,for_a_while"
    ));
    assert!(csv.contains("\"terminal+os-auth\""));
    let mut jsonl = Vec::new();
    parley_custody::audit::export_jsonl(&rows, &mut jsonl).unwrap();
    assert!(String::from_utf8(jsonl)
        .unwrap()
        .contains("\"confirmed_by\":\"terminal+os-auth\""));
}

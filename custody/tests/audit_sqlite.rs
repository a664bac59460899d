//! The audit log against real SQLite files: filters, limits, durability
//! settings, hostile text, and each way of tampering with the file that
//! `verify` must catch (an attacker with a second connection).

use parley_custody::audit::{
    export_csv, export_jsonl, Audit, AuditError, Event, EventKind, NewEvent, Query, GENESIS,
    MAX_FIELD_BYTES, MAX_LIMIT,
};
use rusqlite::Connection;
use std::path::{Path, PathBuf};

fn temp_log() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.sqlite3");
    (dir, path)
}

fn grant(at: i64, agent: &str, service: &str, expires: i64) -> NewEvent {
    NewEvent {
        agent: Some(agent.into()),
        service: Some(service.into()),
        capability: Some("order.place".into()),
        expires: Some(expires),
        token_id: Some(format!("tok-{at}")),
        caveats: Some(r#"[{"svc":["shop"]}]"#.into()),
        principal: Some("ed25519:principal".into()),
        peer_uid: Some(1001),
        peer_pid: Some(4242),
        peer_exe: Some("/usr/bin/agent".into()),
        ..NewEvent::new(EventKind::GrantIssued, at)
    }
}

/// Ten events: grants, consents, denials, rejections, key events.
fn sample(audit: &mut Audit) -> Vec<Event> {
    let evs = vec![
        NewEvent {
            reason: Some("main key".into()),
            ..NewEvent::new(EventKind::KeyCreated, 100)
        },
        grant(200, "ed25519:agentA", "shop", 1_000),
        grant(300, "ed25519:agentB", "calendar", 250),
        NewEvent {
            agent: Some("ed25519:agentA".into()),
            service: Some("shop".into()),
            hash: Some("h1".into()),
            cost_amount: Some(4_000),
            cost_currency: Some("USD".into()),
            risk: Some("medium".into()),
            undo: Some(3_600),
            expires: Some(900),
            ..NewEvent::new(EventKind::ConsentApproved, 400)
        },
        NewEvent {
            agent: Some("ed25519:agentA".into()),
            service: Some("shop".into()),
            reason: Some("too expensive".into()),
            ..NewEvent::new(EventKind::ConsentDenied, 500)
        },
        NewEvent {
            agent: Some("ed25519:agentB".into()),
            service: Some("shop".into()),
            reason: Some("hash mismatch".into()),
            ..NewEvent::new(EventKind::RequestRejected, 600)
        },
        NewEvent {
            agent: Some("ed25519:agentB".into()),
            ..NewEvent::new(EventKind::RequestExpired, 700)
        },
        NewEvent {
            agent: Some("ed25519:agentA".into()),
            ..NewEvent::new(EventKind::RequestCancelled, 800)
        },
        NewEvent {
            agent: Some("ed25519:agentB".into()),
            service: Some("calendar".into()),
            ..NewEvent::new(EventKind::GrantDenied, 900)
        },
        NewEvent {
            reason: Some("old key".into()),
            ..NewEvent::new(EventKind::KeyDeleted, 1_000)
        },
    ];
    evs.iter().map(|e| audit.append(e).unwrap()).collect()
}

fn seqs(events: &[Event]) -> Vec<i64> {
    events.iter().map(|e| e.seq).collect()
}

fn second_connection(path: &Path) -> Connection {
    Connection::open(path).unwrap()
}

#[test]
fn append_assigns_seq_and_chains_from_genesis() {
    let (_d, path) = temp_log();
    let mut audit = Audit::open(&path).unwrap();
    let evs = sample(&mut audit);
    assert_eq!(seqs(&evs), (1..=10).collect::<Vec<_>>());
    assert_eq!(evs[0].prev, GENESIS);
    for pair in evs.windows(2) {
        assert_eq!(pair[1].prev, pair[0].row_hash);
    }
    for e in &evs {
        assert_eq!(e.compute_row_hash().unwrap(), e.row_hash);
    }
    // Reading back gives exactly what append returned.
    let mut back = audit.query(&Query::default()).unwrap();
    back.reverse();
    assert_eq!(back, evs);
}

#[test]
fn query_by_each_filter_newest_first() {
    let (_d, path) = temp_log();
    let mut audit = Audit::open(&path).unwrap();
    sample(&mut audit);
    let q = |q: Query| seqs(&audit.query(&q).unwrap());

    assert_eq!(q(Query::default()), (1..=10).rev().collect::<Vec<_>>());
    assert_eq!(
        q(Query {
            since: Some(400),
            ..Query::default()
        }),
        vec![10, 9, 8, 7, 6, 5, 4]
    );
    assert_eq!(
        q(Query {
            until: Some(300),
            ..Query::default()
        }),
        vec![3, 2, 1]
    );
    assert_eq!(
        q(Query {
            since: Some(300),
            until: Some(500),
            ..Query::default()
        }),
        vec![5, 4, 3]
    );
    assert_eq!(
        q(Query {
            agent: Some("ed25519:agentA".into()),
            ..Query::default()
        }),
        vec![8, 5, 4, 2]
    );
    assert_eq!(
        q(Query {
            service: Some("calendar".into()),
            ..Query::default()
        }),
        vec![9, 3]
    );
    assert_eq!(
        q(Query {
            kinds: vec![EventKind::KeyCreated, EventKind::KeyDeleted],
            ..Query::default()
        }),
        vec![10, 1]
    );
    assert_eq!(
        q(Query {
            agent: Some("ed25519:agentB".into()),
            service: Some("shop".into()),
            ..Query::default()
        }),
        vec![6]
    );
    // A filter value is data, never SQL.
    assert_eq!(
        q(Query {
            agent: Some("' OR 1=1 --".into()),
            ..Query::default()
        }),
        Vec::<i64>::new()
    );
}

#[test]
fn live_grants_and_consents() {
    let (_d, path) = temp_log();
    let mut audit = Audit::open(&path).unwrap();
    sample(&mut audit);
    let live = |t: i64| {
        seqs(
            &audit
                .query(&Query {
                    live_at: Some(t),
                    ..Query::default()
                })
                .unwrap(),
        )
    };
    // grant 2 expires 1000, grant 3 expires 250, consent 4 expires 900.
    assert_eq!(live(100), vec![4, 3, 2]);
    assert_eq!(live(250), vec![4, 2], "expires is exclusive");
    assert_eq!(live(900), vec![2]);
    assert_eq!(live(1_000), Vec::<i64>::new());
    // Combines with other filters.
    let only_shop = audit
        .query(&Query {
            live_at: Some(100),
            service: Some("shop".into()),
            kinds: vec![EventKind::GrantIssued],
            ..Query::default()
        })
        .unwrap();
    assert_eq!(seqs(&only_shop), vec![2]);
}

#[test]
fn limit_defaults_to_500_and_is_capped() {
    let (_d, path) = temp_log();
    let mut audit = Audit::open(&path).unwrap();
    for i in 0..510 {
        audit
            .append(&NewEvent::new(EventKind::RequestExpired, i))
            .unwrap();
    }
    let all = audit.query(&Query::default()).unwrap();
    assert_eq!(all.len(), 500);
    assert_eq!(all[0].seq, 510, "newest first");
    let three = audit
        .query(&Query {
            limit: Some(3),
            ..Query::default()
        })
        .unwrap();
    assert_eq!(seqs(&three), vec![510, 509, 508]);
    assert_eq!(
        audit
            .query(&Query {
                limit: Some(MAX_LIMIT),
                ..Query::default()
            })
            .unwrap()
            .len(),
        510
    );
    for bad in [MAX_LIMIT + 1, 0, u32::MAX] {
        let err = audit
            .query(&Query {
                limit: Some(bad),
                ..Query::default()
            })
            .unwrap_err();
        assert!(matches!(err, AuditError::Limit(n) if n == bad), "{err}");
    }
    assert!(audit.verify().unwrap().ok);
}

#[test]
fn wal_and_synchronous_full_are_in_effect() {
    let (_d, path) = temp_log();
    let mut audit = Audit::open(&path).unwrap();
    let s = audit.settings().unwrap();
    assert_eq!(s.journal_mode, "wal");
    assert_eq!(s.synchronous, 2, "2 = FULL");
    audit
        .append(&NewEvent::new(EventKind::KeyCreated, 1))
        .unwrap();
    // journal_mode=WAL is persistent: another connection sees it in the file.
    let other = second_connection(&path);
    let mode: String = other
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    assert!(path.with_extension("sqlite3-wal").exists());
}

#[cfg(unix)]
#[test]
fn database_files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let (_d, path) = temp_log();
    let mut audit = Audit::open(&path).unwrap();
    audit
        .append(&NewEvent::new(EventKind::KeyCreated, 1))
        .unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(&path.with_extension("sqlite3-wal")), 0o600);
    drop(audit);
    // An existing world-readable log is tightened on open.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let _audit = Audit::open(&path).unwrap();
    assert_eq!(mode(&path), 0o600);
}

#[test]
fn reopening_continues_the_chain() {
    let (_d, path) = temp_log();
    let first = {
        let mut audit = Audit::open(&path).unwrap();
        sample(&mut audit)
    };
    let mut audit = Audit::open(&path).unwrap();
    let next = audit
        .append(&NewEvent::new(EventKind::KeyCreated, 2_000))
        .unwrap();
    assert_eq!(next.seq, 11);
    assert_eq!(next.prev, first[9].row_hash);
    let report = audit.verify().unwrap();
    assert!(report.ok, "{report:?}");
    assert_eq!(report.rows, 11);
}

#[test]
fn verify_ok_on_an_untouched_log_and_an_empty_one() {
    let (_d, path) = temp_log();
    let mut audit = Audit::open(&path).unwrap();
    let empty = audit.verify().unwrap();
    assert!(empty.ok && empty.rows == 0, "{empty:?}");
    sample(&mut audit);
    let report = audit.verify().unwrap();
    assert!(report.ok, "{report:?}");
    assert_eq!(report.rows, 10);
    assert_eq!(report.first_bad_seq, None);
}

fn tampered(edit: impl FnOnce(&Connection, &[Event])) -> parley_custody::audit::VerifyReport {
    let (_d, path) = temp_log();
    let mut audit = Audit::open(&path).unwrap();
    let evs = sample(&mut audit);
    let attacker = second_connection(&path);
    edit(&attacker, &evs);
    drop(attacker);
    audit.verify().unwrap()
}

#[test]
fn tamper_edited_field_is_detected_at_its_row() {
    let report = tampered(|db, _| {
        db.execute("UPDATE events SET cost_amount = 40 WHERE seq = 4", [])
            .unwrap();
    });
    assert!(!report.ok);
    assert_eq!(report.first_bad_seq, Some(4), "{report:?}");
    assert!(report.problem.unwrap().contains("edited"));
}

#[test]
fn tamper_edited_row_with_recomputed_hash_breaks_the_next_link() {
    let report = tampered(|db, evs| {
        let mut forged = evs[3].clone();
        forged.cost_amount = Some(40);
        forged.row_hash = forged.compute_row_hash().unwrap();
        db.execute(
            "UPDATE events SET cost_amount = 40, row_hash = ?1 WHERE seq = 4",
            [&forged.row_hash],
        )
        .unwrap();
    });
    assert_eq!(report.first_bad_seq, Some(5), "{report:?}");
}

#[test]
fn tamper_deleted_middle_row_is_detected() {
    let report = tampered(|db, _| {
        db.execute("DELETE FROM events WHERE seq = 5", []).unwrap();
    });
    assert!(!report.ok);
    assert_eq!(report.rows, 9);
    assert_eq!(report.first_bad_seq, Some(5), "{report:?}");
    assert!(report.problem.unwrap().contains("missing"));
}

#[test]
fn tamper_deleted_last_rows_are_detected() {
    let report = tampered(|db, _| {
        db.execute("DELETE FROM events WHERE seq = 10", []).unwrap();
    });
    assert!(!report.ok);
    assert_eq!(report.first_bad_seq, Some(10), "{report:?}");
    assert!(report.problem.unwrap().contains("deleted from the end"));

    let report = tampered(|db, _| {
        db.execute("DELETE FROM events WHERE seq >= 8", []).unwrap();
    });
    assert_eq!(report.first_bad_seq, Some(8), "{report:?}");
}

#[test]
fn tamper_forged_row_is_detected() {
    // A forged row appended after the head, even one that chains correctly
    // (the attacker knows the hash rule), is caught by the head record.
    let report = tampered(|db, evs| {
        let mut forged = evs[9].clone();
        forged.seq = 11;
        forged.kind = EventKind::ConsentApproved;
        forged.prev = evs[9].row_hash.clone();
        forged.row_hash = forged.compute_row_hash().unwrap();
        // evs[9] has only `reason` set besides kind and at.
        db.execute(
            "INSERT INTO events (seq, at, kind, reason, prev, row_hash) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            rusqlite::params![
                forged.seq,
                forged.at,
                "consent_approved",
                forged.reason,
                forged.prev,
                forged.row_hash
            ],
        )
        .unwrap();
    });
    assert!(!report.ok);
    assert_eq!(report.first_bad_seq, Some(11), "{report:?}");
    assert!(report.problem.unwrap().contains("forged"));

    // A row forged into a gap (after deleting the original) breaks the chain there.
    let report = tampered(|db, evs| {
        db.execute("DELETE FROM events WHERE seq = 6", []).unwrap();
        db.execute(
            "INSERT INTO events (seq, at, kind, prev, row_hash) VALUES (6, 600, 'grant_issued', ?1, 'x')",
            [&evs[4].row_hash],
        )
        .unwrap();
    });
    assert_eq!(report.first_bad_seq, Some(6), "{report:?}");
}

#[test]
fn tamper_unknown_kind_or_missing_head_is_detected() {
    let report = tampered(|db, _| {
        db.execute("UPDATE events SET kind = 'nothing' WHERE seq = 3", [])
            .unwrap();
    });
    assert_eq!(report.first_bad_seq, Some(3), "{report:?}");

    let report = tampered(|db, _| {
        db.execute("DELETE FROM chain_head", []).unwrap();
    });
    assert!(!report.ok, "{report:?}");
}

#[test]
fn append_refuses_to_write_on_a_tampered_tail() {
    let tamperings: [&str; 4] = [
        "INSERT INTO events (seq, at, kind, prev, row_hash) VALUES (11, 1, 'key_created', 'p', 'h')",
        "INSERT INTO events (seq, at, kind, prev, row_hash) VALUES (15, 1, 'key_created', 'p', 'h')",
        "DELETE FROM events WHERE seq = 10",
        "UPDATE events SET row_hash = 'x' WHERE seq = 10",
    ];
    for sql in tamperings {
        let (_d, path) = temp_log();
        let mut audit = Audit::open(&path).unwrap();
        sample(&mut audit);
        second_connection(&path).execute(sql, []).unwrap();
        let err = audit
            .append(&NewEvent::new(EventKind::KeyCreated, 5))
            .unwrap_err();
        assert!(
            matches!(err, AuditError::HeadMismatch { last_seq: 10 }),
            "{sql}: {err}"
        );
        assert!(err.to_string().contains("nothing was written"));
    }
    // Without a head record nothing is appended, and reopening does not
    // quietly create a new one.
    let (_d, path) = temp_log();
    let mut audit = Audit::open(&path).unwrap();
    sample(&mut audit);
    second_connection(&path)
        .execute("DELETE FROM chain_head", [])
        .unwrap();
    let err = audit
        .append(&NewEvent::new(EventKind::KeyCreated, 5))
        .unwrap_err();
    assert!(matches!(err, AuditError::HeadMissing), "{err}");
    drop(audit);
    let mut audit = Audit::open(&path).unwrap();
    assert!(matches!(
        audit.append(&NewEvent::new(EventKind::KeyCreated, 5)),
        Err(AuditError::HeadMissing)
    ));
}

#[test]
fn hostile_unicode_round_trips_byte_exactly() {
    let (_d, path) = temp_log();
    let mut audit = Audit::open(&path).unwrap();
    let bidi = "pay \u{202E}dsu 0001\u{202C} \u{2066}x\u{2069} \u{200B}\u{FEFF}";
    let nul = "before\0after\u{1}\u{7f}\r\n\t\"'\\";
    let long: String = "ü\u{0301}𝔘".chars().cycle().take(10_000).collect();
    let ev = NewEvent {
        service: Some(bidi.into()),
        reason: Some(nul.into()),
        caveats: Some(long.clone()),
        peer_exe: Some("/tmp/\u{1b}[2Jevil".into()),
        // A signed event's fields are stored whole (a rejection's would be
        // cut at audit::CUT_FIELD_BYTES: audit_under_attack.rs).
        ..NewEvent::new(EventKind::GrantIssued, 1)
    };
    let stored = audit.append(&ev).unwrap();
    let back = audit.query(&Query::default()).unwrap().remove(0);
    assert_eq!(back, stored);
    assert_eq!(back.service.as_deref().unwrap().as_bytes(), bidi.as_bytes());
    assert_eq!(back.reason.as_deref().unwrap().as_bytes(), nul.as_bytes());
    assert_eq!(back.caveats.as_deref().unwrap(), long);
    assert_eq!(back.caveats.as_deref().unwrap().chars().count(), 10_000);
    // Querying by a hostile value matches it exactly.
    let by_service = audit
        .query(&Query {
            service: Some(bidi.into()),
            ..Query::default()
        })
        .unwrap();
    assert_eq!(by_service.len(), 1);
    // The raw bytes in the file are the given bytes (no NUL truncation).
    let other = second_connection(&path);
    let raw: Vec<u8> = other
        .query_row("SELECT CAST(reason AS BLOB) FROM events", [], |r| r.get(0))
        .unwrap();
    assert_eq!(raw, nul.as_bytes());
    assert!(audit.verify().unwrap().ok);
}

#[test]
fn oversize_field_is_refused_and_nothing_is_written() {
    let (_d, path) = temp_log();
    let mut audit = Audit::open(&path).unwrap();
    let exactly = "a".repeat(MAX_FIELD_BYTES);
    audit
        .append(&NewEvent {
            reason: Some(exactly),
            ..NewEvent::new(EventKind::ConsentDenied, 1)
        })
        .unwrap();
    let err = audit
        .append(&NewEvent {
            caveats: Some("a".repeat(MAX_FIELD_BYTES + 1)),
            ..NewEvent::new(EventKind::GrantIssued, 2)
        })
        .unwrap_err();
    assert!(
        matches!(err, AuditError::FieldTooLong { field: "caveats", len } if len == MAX_FIELD_BYTES + 1),
        "{err}"
    );
    assert!(err.to_string().contains("nothing was written"));
    // Multi-byte text is measured in bytes.
    assert!(audit
        .append(&NewEvent {
            service: Some("é".repeat(MAX_FIELD_BYTES / 2 + 1)),
            ..NewEvent::new(EventKind::GrantIssued, 2)
        })
        .is_err());
    // Integers canonical JSON cannot hash are refused too.
    assert!(matches!(
        audit.append(&NewEvent {
            cost_amount: Some(i64::MAX),
            ..NewEvent::new(EventKind::GrantIssued, 2)
        }),
        Err(AuditError::OutOfRange { .. })
    ));
    let report = audit.verify().unwrap();
    assert!(report.ok && report.rows == 1, "{report:?}");
}

#[test]
fn exports_csv_neutralized_and_jsonl() {
    let (_d, path) = temp_log();
    let mut audit = Audit::open(&path).unwrap();
    audit
        .append(&NewEvent {
            service: Some("=HYPERLINK(\"http://evil\",\"x\")".into()),
            reason: Some("line1\nline2, \"quoted\"".into()),
            capability: Some("@cmd".into()),
            cost_amount: Some(-5),
            ..NewEvent::new(EventKind::RequestRejected, 7)
        })
        .unwrap();
    let events = audit.query(&Query::default()).unwrap();

    let mut csv = Vec::new();
    export_csv(&events, &mut csv).unwrap();
    let csv = String::from_utf8(csv).unwrap();
    let mut lines = csv.splitn(2, "\r\n");
    assert!(lines.next().unwrap().starts_with("seq,at,kind,peer_uid"));
    let row = lines.next().unwrap();
    assert!(row.starts_with("1,7,\"request_rejected\",,,"), "{row}");
    assert!(row.contains("\"'=HYPERLINK(\"\"http://evil\"\",\"\"x\"\")\""));
    assert!(row.contains("\"'@cmd\""));
    assert!(row.contains("\"line1\nline2, \"\"quoted\"\"\""));
    assert!(row.contains(",-5,"), "numbers are ours, written bare");
    assert!(row.ends_with("\r\n"));

    let mut jsonl = Vec::new();
    export_jsonl(&events, &mut jsonl).unwrap();
    let text = String::from_utf8(jsonl).unwrap();
    assert_eq!(text.lines().count(), 1);
    let v: serde_json::Value = serde_json::from_str(text.trim_end()).unwrap();
    assert_eq!(v["kind"], "request_rejected");
    assert_eq!(v["service"], "=HYPERLINK(\"http://evil\",\"x\")");
    assert_eq!(v["seq"], 1);
    assert_eq!(v["undo"], serde_json::Value::Null);
}

//! The audit log survives `kill -9` in the middle of writes: a row that
//! `Audit::append` acknowledged is never lost, the hash chain and its head
//! still verify, and the next process can append again.
//!
//! A child process (this test binary, re-run with `AUDIT_CHILD_DB` set)
//! appends rows as fast as it can and prints each acknowledged `seq` and
//! `row_hash` on stdout, flushed, only after `append` returned. The parent
//! reads some, sends SIGKILL (the child is almost always inside an append,
//! most often in its fsync), reopens the SQLite file and checks every
//! acknowledged row; then it appends a row itself. Eight rounds, killed at
//! different points, on the same file.
//!
//! What this proves and does not: SIGKILL keeps the OS page cache, so this is
//! the process-crash case (SQLite's WAL commit is atomic with respect to the
//! process dying). A power cut is what `synchronous=FULL` is for; that
//! cannot be simulated here.
#![cfg(unix)]

use parley_custody::audit::{Audit, EventKind, NewEvent, Query, MAX_LIMIT};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CHILD_DB: &str = "AUDIT_CHILD_DB";
const CHILD_ROUND: &str = "AUDIT_CHILD_ROUND";
const TEST: &str = "acknowledged_audit_rows_survive_kill_9_during_writes";
const ROUNDS: u32 = 8;

/// The child: append until killed, acknowledging each row on stdout.
fn child(db: &Path, round: u32) -> ! {
    let mut audit = Audit::open(db).unwrap();
    let mut out = std::io::stdout().lock();
    // Rows of a few kilobytes, so that one append spans several pages.
    let caveats = format!(r#"[{{"svc":["{}"]}}]"#, "s".repeat(3000));
    for n in 0u64.. {
        let mut ev = NewEvent::new(EventKind::ConsentApproved, 1_790_000_000 + n as i64);
        ev.agent = Some("ed25519:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA".into());
        ev.reason = Some(format!("round {round} row {n}"));
        ev.caveats = Some(caveats.clone());
        ev.cost_amount = Some(n as i64);
        let row = audit.append(&ev).unwrap();
        writeln!(out, "ACK {} {} {round} {n}", row.seq, row.row_hash).unwrap();
        out.flush().unwrap();
    }
    unreachable!()
}

/// An acknowledged row, as the child reported it.
struct Ack {
    seq: i64,
    row_hash: String,
    reason: String,
}

fn parse_ack(line: &str) -> Option<Ack> {
    let mut f = line.strip_prefix("ACK ")?.split(' ');
    let seq = f.next()?.parse().ok()?;
    let row_hash = f.next()?.to_string();
    let (round, n) = (f.next()?, f.next()?);
    Some(Ack {
        seq,
        row_hash,
        reason: format!("round {round} row {n}"),
    })
}

fn all_rows(audit: &Audit) -> BTreeMap<i64, parley_custody::audit::Event> {
    audit
        .query(&Query {
            limit: Some(MAX_LIMIT),
            ..Default::default()
        })
        .unwrap()
        .into_iter()
        .map(|e| (e.seq, e))
        .collect()
}

#[test]
fn acknowledged_audit_rows_survive_kill_9_during_writes() {
    if let Some(db) = std::env::var_os(CHILD_DB) {
        let round = std::env::var(CHILD_ROUND).unwrap().parse().unwrap();
        child(Path::new(&db), round);
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("audit.sqlite3");
    let exe = std::env::current_exe().unwrap();
    let mut acked: Vec<Ack> = Vec::new();
    let mut parent_rows = 0;
    for round in 0..ROUNDS {
        let mut child = Command::new(&exe)
            .args([TEST, "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD_DB, &db)
            .env(CHILD_ROUND, round.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        // Kill after a different number of acknowledgements each round.
        let kill_after = 10 + 30 * round as usize;
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut seen = 0;
        while seen < kill_after {
            assert!(Instant::now() < deadline, "the child stopped acknowledging");
            let line = match lines.next() {
                Some(l) => l.unwrap(),
                None => {
                    let out = child.wait_with_output().unwrap();
                    panic!(
                        "round {round}: the child ended after {seen} rows: {}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                }
            };
            if let Some(a) = parse_ack(&line) {
                acked.push(a);
                seen += 1;
            }
        }
        // Mid-write, not right after an acknowledgement.
        std::thread::sleep(Duration::from_micros(300 * round as u64));
        // `Child::kill` is SIGKILL on Unix: no destructor, no SQLite close.
        child.kill().unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.signal(), Some(9), "round {round}: {status:?}");
        // Acknowledgements still in the pipe were made before the kill.
        for line in lines {
            if let Some(a) = parse_ack(&line.unwrap()) {
                acked.push(a);
                seen += 1;
            }
        }

        let mut audit = Audit::open(&db).unwrap();
        let report = audit.verify().unwrap();
        assert!(report.ok, "round {round}: {report:?}");
        let rows = all_rows(&audit);
        let mut lost = Vec::new();
        for a in &acked {
            match rows.get(&a.seq) {
                Some(r) if r.row_hash == a.row_hash && r.reason.as_deref() == Some(&a.reason) => {}
                Some(r) => lost.push(format!(
                    "seq {} changed: {:?} / {:?}",
                    a.seq, r.reason, r.row_hash
                )),
                None => lost.push(format!("seq {} missing", a.seq)),
            }
        }
        assert!(
            lost.is_empty(),
            "round {round}: acknowledged rows lost after kill -9: {lost:?}"
        );
        // At most the one unacknowledged row in flight may also be there.
        let max_acked = acked.iter().map(|a| a.seq).max().unwrap();
        assert!(
            report.rows as i64 <= max_acked + 1,
            "round {round}: {} rows, last acknowledged {max_acked}",
            report.rows
        );

        // The log takes new rows after the crash.
        let mut ev = NewEvent::new(EventKind::RequestCancelled, 1_790_000_000);
        ev.reason = Some(format!("parent after round {round}"));
        let row = audit.append(&ev).unwrap();
        assert_eq!(row.seq, report.rows as i64 + 1);
        parent_rows += 1;
        assert!(audit.verify().unwrap().ok);
        println!(
            "round {round}: killed after {seen} acknowledged rows; {} rows on reopen, all \
             acknowledged present, chain verifies, append works",
            report.rows
        );
    }
    let audit = Audit::open(&db).unwrap();
    let report = audit.verify().unwrap();
    assert!(report.ok);
    assert!(report.rows as usize >= acked.len() + parent_rows);
}

//! "Stop all agents" (issue 30, item 1) with real parts: custody serving
//! its real socket over a real SQLite audit file, and the human's own
//! `parley custody freeze` (the real binary, another process, writing the
//! same file). What it stops: requests still waiting after a freeze, a new
//! request reaching the human (or anything being signed) while frozen, and
//! a freeze that a restart quietly ends.

mod support;

use parley_custody::approver::{Gesture, Verdict, Yes};
use parley_custody::audit::{Audit, EventKind, Query};
use parley_custody::engine::{unix_now, DecideError, IssueError};
use parley_custody::ipc::peer::PeerInfo;
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;
use support::custody::{next_reply, no_step_up, Keys, Options, TestCustody};
use support::requests::{order_request, seeded_agent as agent};
use support::{parley_cli, rt};
use tokio::sync::mpsc;

fn submit(c: &TestCustody, id: &str, n: i64, agent: &str) -> mpsc::Receiver<Value> {
    c.submit(
        &PeerInfo::from_creds(4242, 4242, None),
        order_request(id, n, agent, &c.principal, "shop.example"),
    )
}

fn human(args: &[&str], dir: &Path) -> Value {
    let out = Command::new(parley_cli())
        .arg("--json")
        .args(["custody"])
        .args(args)
        .arg("--data-dir")
        .arg(dir)
        .output()
        .expect("parley runs");
    assert!(
        out.status.success(),
        "parley custody {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("parley's JSON")
}

fn kinds(path: &Path) -> Vec<EventKind> {
    let mut rows = Audit::open(path).unwrap().query(&Query::default()).unwrap();
    rows.reverse();
    rows.into_iter().map(|e| e.kind).collect()
}

#[test]
fn freezing_from_the_cli_denies_three_waiting_requests_and_refuses_new_ones_unseen() {
    rt().block_on(async {
        let mut c = TestCustody::start(Keys::File, no_step_up()).await;
        c.serve();
        let mut waiting = Vec::new();
        for n in 0..3u8 {
            let mut rx = submit(&c, &format!("w{n}"), i64::from(n), &agent(10 + n));
            assert_eq!(next_reply(&mut rx).await["kind"], "PENDING");
            c.shown.recv().await.expect("shown to the human");
            waiting.push(rx);
        }
        assert_eq!(c.engine.pending().len(), 3);
        assert!(c.engine.frozen().is_none());

        // The human's own command, another process, the same audit file.
        let dir = c.audit_path.parent().unwrap().to_path_buf();
        let frozen = human(&["freeze", "--reason", "the agents misbehave"], &dir);
        assert_eq!(frozen["frozen"], true, "{frozen}");

        // All three are denied, each agent told custody is frozen.
        for rx in &mut waiting {
            let r = next_reply(rx).await;
            assert_eq!(r["kind"], "DENIED", "{r}");
            assert!(
                r["reason"].as_str().unwrap().contains("custody_frozen"),
                "{r}"
            );
        }
        assert!(c.engine.pending().is_empty());
        assert_eq!(c.approver.withdrawn_ids().len(), 3, "off the screen");

        // A new request is refused unseen, with the distinct code.
        let mut next = submit(&c, "n", 7, &agent(20));
        let r = next_reply(&mut next).await;
        assert_eq!(r["kind"], "REJECTED", "{r}");
        assert_eq!(r["code"], "custody_frozen", "{r}");
        assert!(r["message"].as_str().unwrap().contains("frozen"), "{r}");
        assert!(c.shown.try_recv().is_err(), "nothing was shown");

        // The state says so, to the service and to the human's command.
        let f = c.engine.frozen().expect("the service sees the freeze");
        assert_eq!((f.reason.as_str(), f.refused), ("the agents misbehave", 1));
        let status = human(&["frozen"], &dir);
        assert_eq!(
            (status["frozen"].clone(), status["refused"].clone()),
            (json!(true), json!(1))
        );

        // Unfreezing (as root polkit asks nothing: the row says so) lists
        // what was refused meanwhile; then agents may ask again.
        let un = human(&["unfreeze"], &dir);
        assert_eq!(un["unfrozen"], true, "{un}");
        assert_eq!(un["refused"], 1, "{un}");
        assert_eq!(un["refused_rows"].as_array().unwrap().len(), 1, "{un}");
        // The agent by its one name (no name given: its four words), its key beside it.
        let name = un["refused_rows"][0]["agent_name"]
            .as_str()
            .unwrap_or_default();
        assert_eq!(name.split(' ').count(), 4, "{un}");
        assert!(!name.starts_with("ed25519:"), "{un}");
        tokio::time::sleep(parley_custody::engine::FREEZE_WATCH_EVERY * 2).await;
        let mut again = submit(&c, "a", 8, &agent(20));
        assert_eq!(next_reply(&mut again).await["kind"], "PENDING");

        let k = kinds(&c.audit_path);
        let at = k
            .iter()
            .position(|k| *k == EventKind::CustodyFrozen)
            .unwrap();
        assert_eq!(
            k[at + 1..at + 4],
            [EventKind::ConsentDenied; 3],
            "the three denials follow the freeze"
        );
        assert!(k[at..].contains(&EventKind::RequestRejected));
        assert!(k[at..].contains(&EventKind::CustodyUnfrozen));
        assert!(Audit::open(&c.audit_path).unwrap().verify().unwrap().ok);
    });
}

#[test]
fn nothing_is_signed_while_frozen_even_a_decision_already_clicked() {
    rt().block_on(async {
        let mut c = TestCustody::start(Keys::File, no_step_up()).await;
        let mut rx = submit(&c, "w", 1, &agent(30));
        assert_eq!(next_reply(&mut rx).await["kind"], "PENDING");
        let shown = c.shown.recv().await.unwrap();
        // Frozen in the audit file only (as the command does), before the
        // service's watcher has looked: the approval is still refused.
        Audit::open(&c.audit_path)
            .unwrap()
            .freeze("stop", unix_now())
            .unwrap();
        let yes = Yes {
            gesture: Gesture::Click,
            second_confirmation: true,
        };
        let r = c.engine.decide(&shown.id, Verdict::Approve(yes)).await;
        assert!(matches!(r, Err(DecideError::Frozen)), "{r:?}");
        assert!(c.rows(EventKind::ConsentApproved).is_empty());
    });
}

#[test]
fn a_freeze_survives_a_restart() {
    rt().block_on(async {
        let keep = tempfile::tempdir().unwrap();
        let opts = || Options {
            audit_dir: Some(keep.path().to_path_buf()),
            ..Options::new(no_step_up())
        };
        {
            let c = TestCustody::start_with(Keys::File, opts()).await;
            let (_, denied) = c.engine.freeze("stop everything").unwrap();
            assert!(denied.is_empty());
        }
        // A new custody over the same audit file: still frozen.
        let mut c = TestCustody::start_with(Keys::File, opts()).await;
        assert_eq!(
            c.engine.frozen().map(|f| f.reason),
            Some("stop everything".into())
        );
        let mut rx = submit(&c, "n", 1, &agent(40));
        let r = next_reply(&mut rx).await;
        assert_eq!(
            (r["kind"].clone(), r["code"].clone()),
            (json!("REJECTED"), json!("custody_frozen"))
        );
        assert!(c.shown.try_recv().is_err(), "nothing was shown");
    });
}

#[test]
fn a_freeze_that_cannot_be_read_counts_as_frozen_for_signing_and_new_requests() {
    rt().block_on(async {
        let mut c = TestCustody::start(Keys::File, no_step_up()).await;
        let mut rx = submit(&c, "w", 1, &agent(50));
        assert_eq!(next_reply(&mut rx).await["kind"], "PENDING");
        let shown = c.shown.recv().await.unwrap();
        // The freeze's table made unreadable from another connection.
        rusqlite::Connection::open(&c.audit_path)
            .unwrap()
            .execute_batch("ALTER TABLE custody_frozen RENAME TO custody_frozen_gone")
            .unwrap();
        let yes = Yes {
            gesture: Gesture::Click,
            second_confirmation: true,
        };
        let r = c.engine.decide(&shown.id, Verdict::Approve(yes)).await;
        assert!(matches!(r, Err(DecideError::Frozen)), "{r:?}");
        let mut next = submit(&c, "n", 2, &agent(51));
        let r = next_reply(&mut next).await;
        assert_eq!(
            (r["kind"].clone(), r["code"].clone()),
            (json!("REJECTED"), json!("custody_frozen")),
            "{r}"
        );
        assert!(c.shown.try_recv().is_err(), "nothing new was shown");
        assert!(c.rows(EventKind::ConsentApproved).is_empty());
    });
}

#[test]
fn the_humans_own_grant_form_signs_nothing_while_frozen() {
    rt().block_on(async {
        let c = TestCustody::start(Keys::File, no_step_up()).await;
        c.engine.freeze("stop").unwrap();
        let yes = Yes {
            gesture: Gesture::Click,
            second_confirmation: true,
        };
        let caveats = json!([{"svc": ["shop.example"]}, {"exp": unix_now() + 60}]);
        let r = c
            .engine
            .issue_grant(&agent(60), &caveats, Some(&c.principal), None, yes)
            .await;
        assert!(matches!(r, Err(IssueError::Frozen)), "{r:?}");
        assert!(c.rows(EventKind::GrantIssued).is_empty());
    });
}

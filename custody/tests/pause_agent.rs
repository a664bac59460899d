//! Stopping an agent (issue 15, part 4), through the engine over a real
//! SQLite audit file: a paused agent's requests are refused without a
//! prompt and told why, its pending requests are denied with that reason,
//! "deny and pause" does both for an hour, resuming lets it ask again, and
//! every pause and resume is a row of the chain; alike pending requests are
//! listed together and denied at once, and nothing else with them.

mod support;

use parley_custody::audit::{Audit, EventKind, Query};
use parley_custody::engine::{unix_now, PauseError, DENY_AND_PAUSE_SECS};
use parley_custody::ipc::peer::PeerInfo;
use serde_json::Value;
use support::custody::{next_reply, no_step_up, Keys, TestCustody};
use support::requests::{order_request, seeded_agent as agent};
use support::rt;
use tokio::sync::mpsc;

async fn custody() -> TestCustody {
    TestCustody::start(Keys::File, no_step_up()).await
}

fn submit(c: &TestCustody, id: &str, n: i64, agent: &str) -> mpsc::Receiver<Value> {
    submit_at(c, id, n, agent, "shop.example")
}

fn submit_at(
    c: &TestCustody,
    id: &str,
    n: i64,
    agent: &str,
    service: &str,
) -> mpsc::Receiver<Value> {
    let req = order_request(id, n, agent, &c.principal, service);
    c.submit(&PeerInfo::from_creds(4242, 4242, None), req)
}

fn kinds(c: &TestCustody) -> Vec<EventKind> {
    let mut rows = Audit::open(&c.audit_path)
        .unwrap()
        .query(&Query::default())
        .unwrap();
    rows.reverse();
    rows.into_iter().map(|e| e.kind).collect()
}

#[test]
fn a_paused_agent_is_refused_unseen_and_told_why_until_resumed() {
    rt().block_on(async {
        let mut c = custody().await;
        let (a, b) = (agent(2), agent(3));
        // A request already waiting is denied by the pause, with its reason.
        let mut waiting = submit(&c, "w", 1, &a);
        assert_eq!(next_reply(&mut waiting).await["kind"], "PENDING");
        let shown = c.shown.recv().await.unwrap();
        let denied = c
            .engine
            .pause_agent(&a, None, "it keeps ordering things")
            .unwrap();
        assert_eq!(denied, vec![shown.id.clone()]);
        let r = next_reply(&mut waiting).await;
        assert_eq!(r["kind"], "DENIED");
        assert!(
            r["reason"]
                .as_str()
                .unwrap()
                .contains("it keeps ordering things"),
            "{r}"
        );
        assert!(c.engine.pending().is_empty());

        // Its next request is refused without being shown.
        let mut next = submit(&c, "n", 2, &a);
        let r = next_reply(&mut next).await;
        assert_eq!(r["kind"], "REJECTED");
        assert_eq!(r["code"], "agent_paused");
        assert!(
            r["message"]
                .as_str()
                .unwrap()
                .contains("until they resume it")
                && r["message"]
                    .as_str()
                    .unwrap()
                    .contains("it keeps ordering things"),
            "{r}"
        );
        assert!(c.shown.try_recv().is_err(), "nothing was shown");

        // Another agent is not paused.
        let mut other = submit(&c, "o", 3, &b);
        assert_eq!(next_reply(&mut other).await["kind"], "PENDING");
        assert_eq!(c.shown.recv().await.unwrap().review.agent.key, b);

        assert_eq!(c.engine.pauses().unwrap().len(), 1);
        // A shorter pause (deny and pause's hour) never ends it sooner:
        // only a resume does, which the app asks the OS for.
        c.engine.pause_agent(&a, Some(3600), "for an hour").unwrap();
        assert_eq!(
            c.engine.pauses().unwrap()[0].until,
            None,
            "still until resumed"
        );
        assert!(c.engine.resume_agent(&a).unwrap());
        assert!(!c.engine.resume_agent(&a).unwrap(), "resumed once");
        let mut again = submit(&c, "a", 4, &a);
        assert_eq!(next_reply(&mut again).await["kind"], "PENDING");
        assert_eq!(c.shown.recv().await.unwrap().review.agent.key, a);

        let k = kinds(&c);
        let paused = k.iter().position(|k| *k == EventKind::AgentPaused).unwrap();
        assert_eq!(k[paused + 1], EventKind::ConsentDenied);
        assert!(k[paused..].contains(&EventKind::RequestRejected));
        assert!(k[paused..].contains(&EventKind::AgentResumed));
        assert!(Audit::open(&c.audit_path).unwrap().verify().unwrap().ok);
    });
}

#[test]
fn deny_and_pause_denies_this_request_and_refuses_the_agent_for_an_hour() {
    rt().block_on(async {
        let mut c = custody().await;
        let a = agent(2);
        let mut first = submit(&c, "f", 1, &a);
        assert_eq!(next_reply(&mut first).await["kind"], "PENDING");
        let shown = c.shown.recv().await.unwrap();
        let denied = c
            .engine
            .deny_and_pause(&shown.id, DENY_AND_PAUSE_SECS)
            .unwrap();
        assert_eq!(denied, vec![shown.id.clone()]);
        let r = next_reply(&mut first).await;
        assert_eq!(r["kind"], "DENIED");
        assert!(
            r["reason"].as_str().unwrap().contains("paused for 1h"),
            "{r}"
        );
        let pause = &c.engine.pauses().unwrap()[0];
        let until = pause.until.expect("a pause with an end");
        assert!((until - unix_now() - DENY_AND_PAUSE_SECS).abs() <= 5);

        let mut next = submit(&c, "n", 2, &a);
        assert_eq!(next_reply(&mut next).await["code"], "agent_paused");
        assert!(c.shown.try_recv().is_err(), "nothing was shown");

        assert!(matches!(
            c.engine.deny_and_pause(&shown.id, DENY_AND_PAUSE_SECS),
            Err(PauseError::NotPending)
        ));
        assert!(matches!(
            c.engine.pause_agent("not a key", None, ""),
            Err(PauseError::NotAKey(_))
        ));
    });
}

#[test]
fn a_pause_ends_by_itself_at_its_time() {
    let dir = tempfile::tempdir().unwrap();
    let mut audit = Audit::open(&dir.path().join("audit.sqlite3")).unwrap();
    let a = agent(2);
    let now = unix_now();
    audit
        .pause_agent(&a, Some(now + 3600), "denied and paused for 1h", now)
        .unwrap();
    assert!(audit.pause_of(&a, now + 3599).unwrap().is_some());
    assert!(audit.pause_of(&a, now + 3600).unwrap().is_none());
    assert!(audit.pauses(now + 3600).unwrap().is_empty());
    assert!(audit.pause_of(&agent(3), now).unwrap().is_none());
    // A new pause replaces the old one.
    audit.pause_agent(&a, None, "for good", now + 1).unwrap();
    let p = audit.pause_of(&a, now + 10_000).unwrap().unwrap();
    assert_eq!((p.until, p.reason.as_str()), (None, "for good"));
    assert!(audit.verify().unwrap().ok);
}

#[test]
fn alike_requests_are_listed_together_and_denied_at_once_and_nothing_else() {
    rt().block_on(async {
        let mut c = custody().await;
        let (a, b) = (agent(2), agent(3));
        // Three orders from one agent at one service (different proposals),
        // one from it elsewhere, one from another agent.
        let mut alike: Vec<_> = (1..=3)
            .map(|n| submit(&c, &format!("a{n}"), n, &a))
            .collect();
        let mut shown = Vec::new();
        for rx in &mut alike {
            assert_eq!(next_reply(rx).await["kind"], "PENDING");
            shown.push(c.shown.recv().await.unwrap().id);
        }
        let mut elsewhere = submit_at(&c, "e", 10, &a, "calendar.example");
        assert_eq!(next_reply(&mut elsewhere).await["kind"], "PENDING");
        let elsewhere_id = c.shown.recv().await.unwrap().id;
        let mut stranger = submit(&c, "s", 11, &b);
        assert_eq!(next_reply(&mut stranger).await["kind"], "PENDING");
        let stranger_id = c.shown.recv().await.unwrap().id;

        let listed: Vec<String> = c
            .engine
            .alike(&shown[1])
            .into_iter()
            .map(|p| p.id)
            .collect();
        assert_eq!(
            listed,
            vec![shown[0].clone(), shown[2].clone()],
            "the others, oldest first"
        );
        assert!(c.engine.alike(&elsewhere_id).is_empty());
        assert!(c.engine.alike(&stranger_id).is_empty());

        let denied = c.engine.deny_alike(&shown[1], None).unwrap();
        assert_eq!(
            denied,
            vec![shown[1].clone(), shown[0].clone(), shown[2].clone()]
        );
        for rx in &mut alike {
            let r = next_reply(rx).await;
            assert_eq!(r["kind"], "DENIED", "{r}");
            assert!(
                r["reason"]
                    .as_str()
                    .unwrap()
                    .contains("with 2 alike requests"),
                "{r}"
            );
        }
        let left: Vec<String> = c.engine.pending().into_iter().map(|p| p.id).collect();
        assert_eq!(
            left,
            vec![elsewhere_id, stranger_id],
            "nothing else was denied"
        );
        assert!(matches!(
            c.engine.deny_alike(&shown[0], None),
            Err(parley_custody::engine::DecideError::NotPending)
        ));
        let k = kinds(&c);
        assert_eq!(
            k.iter().filter(|k| **k == EventKind::ConsentDenied).count(),
            3
        );
        assert!(!k.contains(&EventKind::ConsentApproved));
        assert!(Audit::open(&c.audit_path).unwrap().verify().unwrap().ok);
    });
}

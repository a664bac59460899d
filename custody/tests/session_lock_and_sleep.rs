//! The session's lock and sleep (issue 30, item 2) with real parts: the
//! real `parley-custodyd --approver desktop` in a private D-Bus session
//! (its own `dbus-daemon`, gnome-keyring unlocked on it), where a login1 of
//! the test's own (`support::login1`: `LockedHint` with its
//! `PropertiesChanged`, `PrepareForSleep`, `Inhibit` handing out a real
//! pipe) and a notification service that keeps what it is asked to show
//! answer on the bus; custody finds login1 there through
//! `$PARLEY_CUSTODY_LOGIN1_BUS`. The UI is the test, on the channel the
//! service hands the UI it starts (`support::ui_relay`); the agent is a
//! real client of the custody socket.
//!
//! What these stop: an approval from a review window while the session is
//! locked (or right after unlock, before the arming delay ran again); a
//! notification showing what is asked, how much and where on a locked
//! screen; and a signature across sleep.

mod support;

use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use support::desktop::{Service, Ui, STEP_UP_NEVER, WAIT};
use support::line_agent::Agent;
use support::lines::{final_within, json_lines};
use support::login1::{FakeLogin1, FakeScreenSaver, Note, SESSION_ID};
use support::os_user::{ready_for_os_prompt, UserDirs};
use support::requests::{meal_order, seeded_agent};
use support::user_terminal::{wait_in, Tmux};
use support::{in_session, scratch, Session};

/// The service's arming delay, plus the UI's slack.
const ARMED: Duration = Duration::from_millis(1600);

/// The desktop service, its login1 on the test's bus.
fn start(login1_bus: &str) -> Service {
    Service::start(
        &scratch(),
        Some(STEP_UP_NEVER),
        &[
            ("PARLEY_CUSTODY_LOGIN1_BUS", login1_bus),
            ("XDG_SESSION_ID", SESSION_ID),
            ("RUST_LOG", "info"),
        ],
    )
}

/// What the home and review windows read: `session` is `locked`,
/// `asleep` or null.
fn session(ui: &mut Ui, window: &str) -> Value {
    ui.call(window, "status", json!({})).unwrap()["session"].clone()
}

/// Waits until the service reports the session as `want`.
fn wait_session(ui: &mut Ui, window: &str, want: Value) {
    let end = Instant::now() + WAIT;
    while session(ui, window) != want {
        assert!(Instant::now() < end, "the session never became {want}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// An approval from q1's window is refused, saying the screen is locked.
fn refused_while_locked(ui: &mut Ui, yes: &Value) {
    let e = ui
        .call("review-q1", "review_decide", yes.clone())
        .unwrap_err();
    assert!(
        e.contains("Approve is off while the screen is locked"),
        "{e}"
    );
}

/// Agent 7's meal order `id` of `cents` USD at `service`, waiting on its
/// own connection.
fn ask(svc: &Service, principal: &str, id: &str, service: &str, cents: i64) -> Agent {
    Agent::ask(&svc.sock, &meal_order(7, id, service, cents, principal))
}

/// The notifications shown, once there are `n`.
fn notes(fake: &FakeLogin1, n: usize) -> Vec<Note> {
    let end = Instant::now() + WAIT;
    loop {
        let now = fake.notes();
        if now.len() >= n {
            return now;
        }
        assert!(
            Instant::now() < end,
            "{n} notifications never came: {now:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn session_bus() -> String {
    std::env::var("DBUS_SESSION_BUS_ADDRESS").expect("the private session's bus")
}

#[test]
fn a_locked_session_disarms_an_open_review_and_hides_the_notifications_details() {
    let test = "a_locked_session_disarms_an_open_review_and_hides_the_notifications_details";
    if !in_session(test, Session::Keyring) {
        return;
    }
    let rt = support::rt();
    let bus = session_bus();
    let fake = rt.block_on(FakeLogin1::serve(&bus, true));
    let svc = start(&bus);
    let mut ui = svc.ui();
    // Custody holds a sleep delay inhibitor from the start.
    rt.block_on(fake.wait_inhibitors(WAIT, |i| {
        i.len() == 1 && i[0] == ("sleep|Parley Custody|delay".to_string(), true)
    }));
    let key = ui
        .call("main", "key_create", json!({"label": "Ana"}))
        .unwrap();
    let principal = key["public"].as_str().unwrap().to_string();

    // Unlocked: the notification says what is asked, and where.
    let agent = ask(&svc, &principal, "c1", "shop.example", 5830);
    let shown = notes(&fake, 1);
    assert!(
        shown[0].body.contains("58.30 USD") && shown[0].body.contains("shop.example"),
        "{shown:?}"
    );
    ui.note("review-q1", "shown");
    std::thread::sleep(ARMED);

    // Locked while the review is open and armed: it is not any more, and
    // the notification on screen is replaced by one without details.
    rt.block_on(fake.set_locked(true));
    wait_session(&mut ui, "review-q1", json!("locked"));
    let yes = json!({"id": "q1", "approve": true, "confirmed": false, "gesture": "click"});
    refused_while_locked(&mut ui, &yes);
    assert_eq!(
        agent.final_within(Duration::from_millis(300)),
        None,
        "nothing decided"
    );
    let hidden = "An agent asks for your decision. Open Parley Custody to see what it asks.";
    let shown = notes(&fake, 2);
    assert_eq!(
        (shown[1].replaces, shown[1].body.as_str()),
        (1, hidden),
        "{shown:?}"
    );

    // A request that comes while locked: its notification says only that an agent asks.
    let second = ask(&svc, &principal, "c2", "books.example", 1999);
    let shown = notes(&fake, 3);
    assert_eq!(
        (shown[2].replaces, shown[2].body.as_str()),
        (0, hidden),
        "{shown:?}"
    );
    for n in &shown[1..] {
        for secret in [
            "books.example",
            "shop.example",
            "19.99",
            "58.30",
            "USD",
            "Ana",
            "shop.order",
            "“",
        ] {
            assert!(
                !n.body.contains(secret) && !n.summary.contains(secret),
                "{secret}: {n:?}"
            );
        }
    }

    // Unlocked: the window arms from the start, the whole delay again.
    rt.block_on(fake.set_locked(false));
    wait_session(&mut ui, "review-q1", Value::Null);
    let e = ui
        .call("review-q1", "review_decide", yes.clone())
        .unwrap_err();
    assert!(e.contains("too soon"), "{e}");
    std::thread::sleep(ARMED);
    // Approved for a while: a short grant beside the consent…
    let mut for_a_while = yes;
    for_a_while["for_a_while"] = json!({"amount": 10000, "minutes": 15});
    let done = ui.call("review-q1", "review_decide", for_a_while).unwrap();
    assert_eq!(done["outcome"], "approved", "{done}");
    let fin = agent.final_within(WAIT).unwrap();
    assert_eq!(fin["kind"], "APPROVED", "{fin}");
    let short = parley_core::grant::UnverifiedGrant::decode(
        fin["for_a_while"]["grant"].as_str().expect("a short grant"),
    )
    .unwrap()
    .id();
    drop(second);

    // …which the next lock ends (the setting is on by default): custody
    // publishes its signed revocation, naming the lock.
    rt.block_on(fake.set_locked(true));
    let statement = svc.data.join("revocations").join(format!("{short}.json"));
    let end = Instant::now() + WAIT;
    while !statement.exists() {
        assert!(
            Instant::now() < end,
            "the lock did not revoke {short}:\n{}",
            svc.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let text = std::fs::read_to_string(&statement).unwrap();
    assert!(text.contains("the session was locked"), "{text}");
    rt.block_on(fake.set_locked(false));
    wait_session(&mut ui, "main", Value::Null);

    // "Hide details in notifications: always", saved in Settings: unlocked,
    // a new request's notification says only that an agent asks.
    let mut settings = ui.call("main", "settings_get", json!({})).unwrap()["settings"].clone();
    assert_eq!(settings["hide_notification_details"], "when_locked");
    settings["hide_notification_details"] = json!("always");
    ui.call("main", "settings_save", json!({ "settings": settings }))
        .expect("hiding details asks nothing");
    let before = fake.notes().len();
    let third = ask(&svc, &principal, "c3", "tea.example", 450);
    // (The "Approved" notification of the approval above may come in between.)
    let end = Instant::now() + WAIT;
    let request = loop {
        let now = fake.notes();
        if let Some(n) = now[before..]
            .iter()
            .find(|n| n.summary == "A request needs your decision")
        {
            break n.clone();
        }
        assert!(Instant::now() < end, "no notification for c3: {now:?}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!((request.replaces, request.body.as_str()), (0, hidden));
    drop(third);
    let log = svc.log();
    assert!(
        log.contains("following the session's lock and sleep"),
        "{log}"
    );
}

#[test]
fn without_login1_the_desktops_screensaver_locks_the_review() {
    let test = "without_login1_the_desktops_screensaver_locks_the_review";
    if !in_session(test, Session::Keyring) {
        return;
    }
    let rt = support::rt();
    let bus = session_bus();
    // No login1 on this bus at all: custody reads the lock from the screensaver.
    let saver = rt.block_on(FakeScreenSaver::serve(&bus));
    let svc = start(&bus);
    let mut ui = svc.ui();
    let key = ui
        .call("main", "key_create", json!({"label": "Ana"}))
        .unwrap();
    let principal = key["public"].as_str().unwrap().to_string();
    let agent = ask(&svc, &principal, "s1", "shop.example", 5830);
    ui.note("review-q1", "shown");
    std::thread::sleep(ARMED);
    rt.block_on(saver.set_active(true));
    wait_session(&mut ui, "review-q1", json!("locked"));
    let yes = json!({"id": "q1", "approve": true, "confirmed": false, "gesture": "click"});
    refused_while_locked(&mut ui, &yes);
    rt.block_on(saver.set_active(false));
    wait_session(&mut ui, "review-q1", Value::Null);
    std::thread::sleep(ARMED);
    let done = ui.call("review-q1", "review_decide", yes).unwrap();
    assert_eq!(done["outcome"], "approved", "{done}");
    assert_eq!(agent.final_within(WAIT).unwrap()["kind"], "APPROVED");
    let log = svc.log();
    assert!(log.contains("following the screensaver"), "{log}");
}

// ---------------------------------------------------------------------------
// Sleep during a step-up, and a locked session, at the headless daemon's
// terminal: the real daemon as an ordinary user with a password (polkit asks
// root nothing), on a tmux pty, next to the real polkitd (scripts/
// start-polkit.sh), its OS prompt from `pkttyagent` on the same terminal.

/// The test's own OS user (the worktree's prefix).
const USER: &str = "parley-t-lock";
const PASSWORD: &str = "lock-sleep-Passw0rd";
/// A private `dbus-daemon` every user may connect to (the login1 of the
/// test answers there; the daemon runs as another user than the test).
struct PrivateBus {
    child: Child,
    address: String,
}

impl PrivateBus {
    fn start(dir: &Path) -> PrivateBus {
        let path = dir.join("login1-bus");
        let config = dir.join("login1-bus.conf");
        std::fs::write(
            &config,
            format!(
                r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path={}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"#,
                path.display()
            ),
        )
        .unwrap();
        let mut child = Command::new("dbus-daemon")
            .arg(format!("--config-file={}", config.display()))
            .args(["--nofork", "--print-address=1"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("dbus-daemon");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .expect("dbus-daemon's address");
        PrivateBus {
            child,
            address: line.trim().to_string(),
        }
    }
}

impl Drop for PrivateBus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An agent as the test user (python3 on the custody socket, which only
/// the user's own processes may use): prints every reply as one line.
fn agent_as_user(sock: &Path, request: &Value) -> (Child, mpsc::Receiver<Value>) {
    let code = "import socket,sys\ns=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])\n\
                s.sendall((sys.argv[2]+'\\n').encode())\nfor l in s.makefile():\n    print(l.strip(), flush=True)\n";
    let mut child = Command::new("runuser")
        .args(["-u", USER, "--", "python3", "-c", code])
        .arg(sock)
        .arg(request.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 as the test user");
    let rx = json_lines(child.stdout.take().unwrap(), None);
    (child, rx)
}

#[test]
fn prepare_for_sleep_during_a_step_up_signs_nothing_and_the_terminal_refuses_while_locked() {
    let test =
        "prepare_for_sleep_during_a_step_up_signs_nothing_and_the_terminal_refuses_while_locked";
    if !ready_for_os_prompt(test, USER, PASSWORD, true, &["dbus-daemon"]) {
        return;
    }
    let dirs = UserDirs::new(USER, "parley-lock");
    let bus = PrivateBus::start(dirs.tmp.path());
    let rt = support::rt();
    let fake = rt.block_on(FakeLogin1::serve(&bus.address, false));
    let sock = dirs.run.join("custody.sock");
    let screen = dirs.tmp.path().join("terminal.log");
    let tmux = Tmux::new(USER);
    tmux.terminal_daemon(
        &dirs,
        ("lock-keyring-pw", "lock-sleep"),
        &[
            ("XDG_SESSION_ID", SESSION_ID),
            ("PARLEY_CUSTODY_LOGIN1_BUS", &bus.address),
        ],
        &screen,
    );
    let at = wait_in(&screen, "Create one now? [y/N]", 0);
    tmux.keys("daemon", &["y", "Enter"]);
    let at = wait_in(&screen, "listening on", at);
    let text = std::fs::read_to_string(&screen).unwrap();
    let principal = text
        .split_whitespace()
        .find(|w| w.starts_with("ed25519:"))
        .expect("the daemon prints the principal key")
        .to_string();
    // Custody holds a sleep delay inhibitor while idle.
    rt.block_on(fake.wait_inhibitors(WAIT, |i| {
        i == [("sleep|Parley Custody|delay".to_string(), true)]
    }));
    let (_agent, replies) =
        agent_as_user(&sock, &meal_order(9, "a", "shop.example", 5830, &principal));
    let yes = |at: usize| {
        let at = wait_in(&screen, "approve? [y/N] ", at);
        std::thread::sleep(parley_custody::terminal::ANSWER_DELAY + Duration::from_millis(300));
        tmux.keys("daemon", &["y", "Enter"]);
        at
    };

    // The OS prompt is open (a step-up in flight) when sleep comes: it is
    // cancelled, nothing is signed, and custody lets sleep go ahead.
    let at = yes(at);
    let at = wait_in(&screen, "Password: ", at);
    rt.block_on(fake.prepare_for_sleep(true));
    let at = wait_in(
        &screen,
        "not signed: Approve is off while the computer goes to sleep",
        at,
    );
    rt.block_on(fake.wait_inhibitors(WAIT, |i| i.len() == 1 && !i[0].1));
    assert_eq!(
        final_within(&replies, Duration::from_millis(500)),
        None,
        "nothing signed"
    );
    // Asleep, a yes starts no OS prompt.
    let asked = yes(at);
    let at = wait_in(
        &screen,
        "not signed: Approve is off while the computer goes to sleep",
        asked,
    );
    let shown = std::fs::read_to_string(&screen).unwrap();
    assert!(
        !shown[asked..at].contains("Password"),
        "no OS prompt while asleep:\n{}",
        &shown[asked..at]
    );
    // Awake: a new inhibitor.
    rt.block_on(fake.prepare_for_sleep(false));
    rt.block_on(fake.wait_inhibitors(WAIT, |i| i.len() == 2 && !i[0].1 && i[1].1));

    // Locked: the terminal refuses an approval too, with a clear sentence.
    rt.block_on(fake.set_locked(true));
    std::thread::sleep(Duration::from_millis(300));
    let asked = yes(at);
    let at = wait_in(
        &screen,
        "not signed: Approve is off while the screen is locked",
        asked,
    );
    let shown = std::fs::read_to_string(&screen).unwrap();
    assert!(
        !shown[asked..at].contains("Password"),
        "no OS prompt while locked:\n{}",
        &shown[asked..at]
    );
    assert_eq!(
        final_within(&replies, Duration::from_millis(300)),
        None,
        "nothing signed"
    );
    // Unlocked: the password signs, once.
    rt.block_on(fake.set_locked(false));
    std::thread::sleep(Duration::from_millis(300));
    let at = yes(at);
    wait_in(&screen, "Password: ", at);
    tmux.keys("daemon", &[PASSWORD, "Enter"]);
    let a = final_within(&replies, WAIT).expect("a final reply");
    assert_eq!(a["kind"], "APPROVED", "{a}");
    drop(tmux);
    let rows = support::custody::rows_at(
        &parley_custody::paths::audit_path(&dirs.data),
        &[
            parley_custody::audit::EventKind::ConsentApproved,
            parley_custody::audit::EventKind::StepUpFailed,
        ],
    );
    let kinds: Vec<_> = rows.iter().map(|r| (r.kind, r.reason.clone())).collect();
    assert_eq!(
        kinds
            .iter()
            .filter(|k| k.0 == parley_custody::audit::EventKind::ConsentApproved)
            .count(),
        1,
        "{kinds:?}"
    );
    assert!(
        kinds
            .iter()
            .any(|k| k.1.as_deref().is_some_and(|r| r.contains("going-to-sleep"))),
        "the cancelled step-up is in the log: {kinds:?}"
    );
}

// ---------------------------------------------------------------------------
// The engine itself, with the scripted approver: whatever the UI or the
// terminal shows, nothing is signed while the session is locked or going
// to sleep, the human's own grant form included; a denial still counts.

#[test]
fn the_engine_signs_nothing_while_locked_or_asleep_the_own_form_included() {
    use parley_custody::approver::{Gesture, Verdict, Yes};
    use parley_custody::audit::EventKind;
    use parley_custody::engine::{unix_now, DecideError, EngineConfig, IssueError};
    use parley_custody::ipc::peer::PeerInfo;
    use parley_custody::session::{Hold, SessionGate};
    use support::custody::{next_reply, no_step_up, Keys, TestCustody};
    use support::requests::{order_request, seeded_agent};

    support::rt().block_on(async {
        let gate = SessionGate::new();
        let config = EngineConfig {
            session: gate.clone(),
            ..no_step_up()
        };
        let mut c = TestCustody::start(Keys::File, config).await;
        let peer = PeerInfo::from_creds(4242, 4242, None);
        let mut rx = c.submit(
            &peer,
            order_request("w", 1, &seeded_agent(70), &c.principal, "shop.example"),
        );
        assert_eq!(next_reply(&mut rx).await["kind"], "PENDING");
        let shown = c.shown.recv().await.unwrap();
        let yes = Yes {
            gesture: Gesture::Click,
            second_confirmation: true,
        };
        let caveats = json!([{"svc": ["shop.example"]}, {"exp": unix_now() + 60}]);
        let set = |hold: Hold, on: bool| match hold {
            Hold::Locked => gate.set_locked(on),
            Hold::Asleep => gate.set_asleep(on),
        };
        for hold in [Hold::Locked, Hold::Asleep] {
            set(hold, true);
            let r = c.engine.decide(&shown.id, Verdict::Approve(yes)).await;
            assert!(
                matches!(r, Err(DecideError::Session(h)) if h == hold),
                "{r:?}"
            );
            let r = c
                .engine
                .issue_grant(&seeded_agent(71), &caveats, Some(&c.principal), None, yes)
                .await;
            assert!(
                matches!(r, Err(IssueError::Session(h)) if h == hold),
                "{r:?}"
            );
            set(hold, false);
        }
        assert!(c.rows(EventKind::ConsentApproved).is_empty());
        assert!(c.rows(EventKind::GrantIssued).is_empty());
        assert_eq!(c.engine.pending().len(), 1, "the request still waits");
        // A denial counts while locked (it signs nothing).
        gate.set_locked(true);
        let r = c.engine.decide(&shown.id, Verdict::Deny(None)).await;
        assert!(r.is_ok(), "{r:?}");
        assert_eq!(next_reply(&mut rx).await["kind"], "DENIED");
    });
}

#[test]
fn after_unlock_a_waiting_requests_notification_says_again_what_it_asks() {
    let test = "after_unlock_a_waiting_requests_notification_says_again_what_it_asks";
    if !in_session(test, Session::Keyring) {
        return;
    }
    let rt = support::rt();
    let bus = session_bus();
    let fake = rt.block_on(FakeLogin1::serve(&bus, true));
    let svc = start(&bus);
    let mut ui = svc.ui();
    let key = ui
        .call("main", "key_create", json!({"label": "Ana"}))
        .unwrap();
    let principal = key["public"].as_str().unwrap().to_string();
    let hidden = "An agent asks for your decision. Open Parley Custody to see what it asks.";

    // Notification 1, with its details; locked: replaced without them.
    let first = ask(&svc, &principal, "c1", "shop.example", 5830);
    let shown = notes(&fake, 1);
    assert!(shown[0].body.contains("58.30 USD"), "{shown:?}");
    rt.block_on(fake.set_locked(true));
    wait_session(&mut ui, "main", json!("locked"));
    let shown = notes(&fake, 2);
    assert_eq!(
        (shown[1].replaces, shown[1].body.as_str()),
        (1, hidden),
        "{shown:?}"
    );
    // Notification 2 comes while locked, without details; its request is
    // denied before the unlock (a denial counts while locked).
    let second = ask(&svc, &principal, "c2", "books.example", 1999);
    let shown = notes(&fake, 3);
    assert_eq!(
        (shown[2].replaces, shown[2].body.as_str()),
        (0, hidden),
        "{shown:?}"
    );
    let no = json!({"id": "q2", "approve": false, "confirmed": false, "reason": null});
    ui.call("review-q2", "review_decide", no)
        .expect("a denial while locked");
    assert_eq!(second.final_within(WAIT).unwrap()["kind"], "DENIED");
    // The human names the agent meanwhile.
    let agent = seeded_agent(7);
    ui.call(
        "main",
        "agent_label_set",
        json!({"agent": agent, "label": "shopper"}),
    )
    .unwrap();

    // Unlocked: the request still waiting has its notification (same id)
    // say again what it asks, naming the agent as it is named now; the
    // denied one is not shown again.
    rt.block_on(fake.set_locked(false));
    wait_session(&mut ui, "main", Value::Null);
    let shown = notes(&fake, 4);
    let again = &shown[3];
    assert_eq!(again.replaces, 1, "{shown:?}");
    assert_eq!(again.summary, shown[0].summary);
    for said in ["“shopper” asks you to approve", "58.30 USD", "shop.example"] {
        assert!(again.body.contains(said), "{said}: {again:?}");
    }
    std::thread::sleep(Duration::from_millis(500));
    let all = fake.notes();
    assert!(
        !all.iter()
            .any(|n| n.replaces == 2 || n.body.contains("books.example")),
        "the denied request's notification is not shown again: {all:?}"
    );
    drop(first);
}

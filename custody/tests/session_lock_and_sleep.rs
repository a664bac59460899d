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

use parley_core::proposal::proposal_hash;
use parley_core::SecretKey;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use support::login1::{FakeLogin1, SESSION_ID};
use support::ui_relay::Relay;
use support::{in_session, scratch, Session};
use zeroize::Zeroizing;

const WAIT: Duration = Duration::from_secs(60);
/// The service's arming delay, plus the UI's slack.
const ARMED: Duration = Duration::from_millis(1600);

/// The desktop service, its login1 on the test's bus.
struct Service {
    child: Child,
    sock: PathBuf,
    ui: PathBuf,
    log: PathBuf,
    relay: Relay,
}

impl Service {
    fn start(login1_bus: &str) -> Service {
        let dir = scratch();
        let data = dir.join("custody");
        std::fs::create_dir_all(&data).unwrap();
        std::fs::write(
            data.join("settings.json"),
            r#"{"step_up": {"rule": "never"}}"#,
        )
        .unwrap();
        let relay = Relay::install(&dir);
        let sock = dir.join("custody.sock");
        let ui = dir.join("ui").join("ui.sock");
        let log = dir.join("service.log");
        let child = Command::new(env!("CARGO_BIN_EXE_parley-custodyd"))
            .args(["--approver", "desktop", "--hidden"])
            .arg("--socket")
            .arg(&sock)
            .arg("--ui-socket")
            .arg(&ui)
            .arg("--data-dir")
            .arg(&data)
            .env("PARLEY_CUSTODY_UI", &relay.program)
            .env("PARLEY_TEST_UI_RELAY", &relay.socket)
            .env("PARLEY_CUSTODY_LOGIN1_BUS", login1_bus)
            .env("XDG_SESSION_ID", SESSION_ID)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("start parley-custodyd");
        let s = Service {
            child,
            sock,
            ui,
            log,
            relay,
        };
        let start = Instant::now();
        while !(s.ui.exists() && s.sock.exists()) {
            assert!(
                start.elapsed() < WAIT,
                "the service did not start:\n{}",
                s.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        s
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Knocks at the door for the main window; the UI the service starts.
    fn ui(&self) -> Ui {
        let mut door = UnixStream::connect(&self.ui).expect("the door");
        let hello = json!({"hello": {"ui": "parley-custody-ui", "version": "0.1.0", "pid": std::process::id()}});
        let ask =
            json!({"id": 1, "window": "main", "call": "open_window", "args": {"kind": "main"}});
        door.write_all(format!("{hello}\n{ask}\n").as_bytes())
            .unwrap();
        let (stream, _started) = self.relay.next(WAIT, || self.log());
        Ui::over(stream)
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The UI connection the service started: calls answered by id.
struct Ui {
    out: UnixStream,
    rx: mpsc::Receiver<Value>,
    next: u64,
}

impl Ui {
    fn over(s: UnixStream) -> Ui {
        let out = s.try_clone().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(s).lines() {
                let Ok(line) = line else { break };
                let v: Value = serde_json::from_str(&line).unwrap_or(json!({"garbled": line}));
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        let mut ui = Ui { out, rx, next: 1 };
        ui.send(json!({"hello": {"ui": "parley-custody-ui", "version": "0.1.0", "pid": std::process::id()}}));
        let hello = ui.rx.recv_timeout(WAIT).expect("the service's hello");
        assert_eq!(hello["hello"]["service"], "parley-custodyd", "{hello}");
        ui
    }

    fn send(&mut self, v: Value) {
        self.out.write_all(format!("{v}\n").as_bytes()).unwrap();
    }

    fn note(&mut self, window: &str, note: &str) {
        self.send(json!({"window": window, "note": note}));
    }

    fn call(&mut self, window: &str, call: &str, args: Value) -> Result<Value, String> {
        let id = self.next;
        self.next += 1;
        self.send(json!({"id": id, "window": window, "call": call, "args": args}));
        loop {
            let v = self.rx.recv_timeout(WAIT).expect("an answer");
            if v["id"] == id {
                return match v.get("ok") {
                    Some(ok) => Ok(ok.clone()),
                    None => Err(format!("{}: {}", v["err"]["code"], v["err"]["message"])),
                };
            }
        }
    }

    /// What the home and review windows read: `session` is `locked`,
    /// `asleep` or null.
    fn session(&mut self, window: &str) -> Value {
        self.call(window, "status", json!({})).unwrap()["session"].clone()
    }

    /// Waits until the service reports the session as `want`.
    fn wait_session(&mut self, window: &str, want: Value) {
        let end = Instant::now() + WAIT;
        while self.session(window) != want {
            assert!(Instant::now() < end, "the session never became {want}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// An agent's consent request on its own connection, kept open.
struct Agent {
    rx: mpsc::Receiver<Value>,
    _conn: UnixStream,
}

impl Agent {
    fn ask(sock: &Path, principal: &str, id: &str, service: &str, cents: i64) -> Agent {
        let expires = parley_custody::engine::unix_now() + 1800;
        let mut p = json!({
            "id": format!("p_{id}"), "capability": "shop.order", "summary": "Order 3 meals",
            "effects": [{"op": "charge", "target": "card ••42", "detail": "paid"}],
            "cost": {"amount": cents, "currency": "USD"}, "risk": "low",
            "undo": {"window": 1800}, "expires": expires
        });
        p["hash"] = json!(proposal_hash(&p).unwrap());
        let agent = SecretKey::from_seed(&Zeroizing::new([7u8; 32]))
            .public()
            .to_string();
        let req = json!({"custody": 1, "id": id, "op": "consent", "service": service,
            "agent": agent, "proposal": p,
            "consent": {"proposal": p["id"], "hash": p["hash"], "service": service,
                        "capability": "shop.order", "principal": principal,
                        "summary": "Order 3 meals", "expires": expires}});
        let mut conn = UnixStream::connect(sock).expect("connect as an agent");
        conn.write_all(format!("{req}\n").as_bytes()).unwrap();
        let read = conn.try_clone().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(read).lines() {
                let Ok(line) = line else { break };
                if tx
                    .send(serde_json::from_str(&line).unwrap_or(json!({})))
                    .is_err()
                {
                    break;
                }
            }
        });
        let a = Agent { rx, _conn: conn };
        let first = a.rx.recv_timeout(WAIT).expect("a first reply");
        assert_eq!(first["kind"], "PENDING", "{first}");
        a
    }

    fn final_within(&self, wait: Duration) -> Option<Value> {
        let end = Instant::now() + wait;
        while let Some(left) = end.checked_duration_since(Instant::now()) {
            match self.rx.recv_timeout(left) {
                Ok(v) if v["kind"] == "PENDING" => continue,
                Ok(v) => return Some(v),
                Err(_) => return None,
            }
        }
        None
    }
}

/// The notifications shown, once there are `n`.
fn notes(fake: &FakeLogin1, n: usize) -> Vec<(String, String)> {
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
    let svc = Service::start(&bus);
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
    let agent = Agent::ask(&svc.sock, &principal, "c1", "shop.example", 5830);
    let shown = notes(&fake, 1);
    assert!(
        shown[0].1.contains("58.30 USD") && shown[0].1.contains("shop.example"),
        "{shown:?}"
    );
    ui.note("review-q1", "shown");
    std::thread::sleep(ARMED);

    // Locked while the review is open and armed: it is not any more.
    rt.block_on(fake.set_locked(true));
    ui.wait_session("review-q1", json!("locked"));
    let yes = json!({"id": "q1", "approve": true, "confirmed": false, "gesture": "click"});
    let e = ui
        .call("review-q1", "review_decide", yes.clone())
        .unwrap_err();
    assert!(
        e.contains("Approve is off while the screen is locked"),
        "{e}"
    );
    assert_eq!(
        agent.final_within(Duration::from_millis(300)),
        None,
        "nothing decided"
    );

    // A request that comes while locked: its notification says only that an agent asks.
    let second = Agent::ask(&svc.sock, &principal, "c2", "books.example", 1999);
    let shown = notes(&fake, 2);
    let (summary, body) = &shown[1];
    assert_eq!(
        body,
        "An agent asks for your decision. Open Parley Custody to see what it asks."
    );
    for secret in ["books.example", "19.99", "USD", "Ana", "shop.order", "“"] {
        assert!(
            !body.contains(secret) && !summary.contains(secret),
            "{secret}: {shown:?}"
        );
    }

    // Unlocked: the window arms from the start, the whole delay again.
    rt.block_on(fake.set_locked(false));
    ui.wait_session("review-q1", Value::Null);
    let e = ui
        .call("review-q1", "review_decide", yes.clone())
        .unwrap_err();
    assert!(e.contains("too soon"), "{e}");
    std::thread::sleep(ARMED);
    let done = ui.call("review-q1", "review_decide", yes).unwrap();
    assert_eq!(done["outcome"], "approved", "{done}");
    assert_eq!(agent.final_within(WAIT).unwrap()["kind"], "APPROVED");
    drop(second);
    let log = svc.log();
    assert!(
        log.contains("following the session's lock and sleep"),
        "{log}"
    );
}

//! The desktop service's UI channel, driven as the keyless UI process
//! drives it: the real `parley-custodyd --approver desktop` inside a private
//! D-Bus session with a real, unlocked gnome-keyring, a real agent on the
//! custody socket, and UIs that are real clients of the UI socket (one of
//! them a separate process killed with SIGKILL mid-review).
//!
//! What these stop: a UI that dies mid-review getting anything signed or
//! losing the request; a window deciding what is not its own; an approval
//! that came too soon, from a window in the back, or without a pointer
//! gesture; a line that is not a message of the channel keeping its
//! connection.

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
use support::{in_session, scratch, Session};
use zeroize::Zeroizing;

const WAIT: Duration = Duration::from_secs(60);

/// The service, as the desktop starts it (no UI of its own: the tests are the UI).
struct Service {
    child: Child,
    sock: PathBuf,
    ui: PathBuf,
    log: PathBuf,
}

impl Service {
    fn start() -> Service {
        let dir = scratch();
        let data = dir.join("custody");
        std::fs::create_dir_all(&data).unwrap();
        // OS authentication is tested with a real polkitd elsewhere
        // (stepup e2e); here the channel's own rules are what is tested.
        std::fs::write(
            data.join("settings.json"),
            r#"{"step_up": {"rule": "never"}}"#,
        )
        .unwrap();
        let sock = dir.join("custody.sock");
        let ui = dir.join("ui").join("ui.sock");
        let log = dir.join("service.log");
        let child = Command::new(env!("CARGO_BIN_EXE_parley-custodyd"))
            .args(["--approver", "desktop", "--hidden", "--no-ui-spawn"])
            .arg("--socket")
            .arg(&sock)
            .arg("--ui-socket")
            .arg(&ui)
            .arg("--data-dir")
            .arg(&data)
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
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A UI connection: calls answered by id, events kept apart.
struct Ui {
    out: UnixStream,
    rx: mpsc::Receiver<Value>,
    events: Vec<Value>,
    next: u64,
}

impl Ui {
    fn connect(path: &Path) -> Ui {
        let s = UnixStream::connect(path).expect("connect to the UI channel");
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
            let _ = tx.send(json!({"closed": true}));
        });
        let mut ui = Ui {
            out,
            rx,
            events: Vec::new(),
            next: 1,
        };
        ui.send(json!({"hello": {"ui": "parley-custody-ui", "version": "0.1.0", "pid": std::process::id()}}));
        let hello = ui.recv();
        assert_eq!(hello["hello"]["service"], "parley-custodyd", "{hello}");
        ui
    }

    fn send(&mut self, v: Value) {
        self.out.write_all(format!("{v}\n").as_bytes()).unwrap();
    }

    fn recv(&mut self) -> Value {
        self.rx.recv_timeout(WAIT).expect("a line from the service")
    }

    fn note(&mut self, window: &str, note: &str) {
        self.send(json!({"window": window, "note": note}));
    }

    fn call(&mut self, window: &str, call: &str, args: Value) -> Result<Value, String> {
        let id = self.next;
        self.next += 1;
        self.send(json!({"id": id, "window": window, "call": call, "args": args}));
        loop {
            let v = self.recv();
            if v["id"] == id {
                return match v.get("ok") {
                    Some(ok) => Ok(ok.clone()),
                    // A refusal is `{code, message}`: given back as "code: message".
                    None => Err(format!(
                        "{}: {}",
                        v["err"]["code"].as_str().expect("err.code is a string"),
                        v["err"]["message"]
                            .as_str()
                            .expect("err.message is a string")
                    )),
                };
            }
            assert!(v.get("closed").is_none(), "the service closed the channel");
            self.events.push(v);
        }
    }

    /// Waits for an event matching `f` (kept or new).
    fn event(&mut self, f: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.events.iter().position(&f) {
            return self.events.remove(i);
        }
        loop {
            let v = self.recv();
            if f(&v) {
                return v;
            }
            assert!(v.get("closed").is_none(), "the service closed the channel");
        }
    }
}

/// An agent's consent request on its own connection, kept open.
struct Agent {
    rx: mpsc::Receiver<Value>,
    _conn: UnixStream,
}

impl Agent {
    fn ask(sock: &Path, principal: &str, id: &str) -> Agent {
        let expires = parley_custody::engine::unix_now() + 1800;
        let mut p = json!({
            "id": format!("p_{id}"), "capability": "shop.order", "summary": "Order 3 meals",
            "effects": [{"op": "charge", "target": "card ••42", "detail": "paid"}],
            "cost": {"amount": 5830, "currency": "USD"}, "risk": "low",
            "undo": {"window": 1800}, "expires": expires
        });
        p["hash"] = json!(proposal_hash(&p).unwrap());
        let agent = SecretKey::from_seed(&Zeroizing::new([7u8; 32]))
            .public()
            .to_string();
        let req = json!({"custody": 1, "id": id, "op": "consent", "service": "shop.example",
            "agent": agent, "proposal": p,
            "consent": {"proposal": p["id"], "hash": p["hash"], "service": "shop.example",
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

    /// The final reply, if one came within `wait`.
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

/// A UI in its own process (python3, which scripts/setup.sh installs): it
/// connects, opens the review of `id` and reads it, says "ready", then waits.
fn ui_process(path: &Path, id: &str) -> Child {
    let script = r#"
import json, os, socket, sys, time
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); f = s.makefile('rwb')
def send(o): f.write((json.dumps(o) + '\n').encode()); f.flush()
send({"hello": {"ui": "parley-custody-ui", "version": "0.1.0", "pid": os.getpid()}})
json.loads(f.readline())
w = "review-" + sys.argv[2]
send({"window": w, "note": "shown"})
send({"id": 1, "window": w, "call": "review_get", "args": {"id": sys.argv[2]}})
while True:
    m = json.loads(f.readline())
    if m.get("id") == 1: break
print("ready" if m.get("ok") else "no review: %r" % m, flush=True)
time.sleep(600)
"#;
    Command::new("python3")
        .args(["-c", script])
        .arg(path)
        .arg(id)
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3")
}

fn principal(ui: &mut Ui) -> String {
    let key = ui
        .call("main", "key_create", json!({"label": "Ana"}))
        .expect("create a key from the home window");
    key["public"].as_str().unwrap().to_string()
}

fn first_pending(ui: &mut Ui) -> String {
    let list = ui.call("main", "pending_list", json!({})).unwrap();
    list[0]["id"]
        .as_str()
        .expect("a pending request")
        .to_string()
}

#[test]
fn a_ui_killed_mid_review_signs_nothing_and_the_next_ui_picks_the_request_up() {
    if !in_session(
        "a_ui_killed_mid_review_signs_nothing_and_the_next_ui_picks_the_request_up",
        Session::Keyring,
    ) {
        return;
    }
    let svc = Service::start();
    let mut home = Ui::connect(&svc.ui);
    let principal = principal(&mut home);
    drop(home);
    let agent = Agent::ask(&svc.sock, &principal, "c1");

    let mut dying = ui_process(&svc.ui, "q1");
    let mut line = String::new();
    BufReader::new(dying.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready", "{}", svc.log());
    dying.kill().unwrap();
    dying.wait().unwrap();

    assert_eq!(
        agent.final_within(Duration::from_secs(3)),
        None,
        "nothing was decided"
    );
    let mut next = Ui::connect(&svc.ui);
    assert_eq!(first_pending(&mut next), "q1", "the request still waits");
    let review = next
        .call("review-q1", "review_get", json!({"id": "q1"}))
        .unwrap();
    assert_eq!(review["review"]["service"], "shop.example");
    // The new UI's window starts its own arming: the dead UI's window counts for nothing.
    next.note("review-q1", "shown");
    let early = next.call(
        "review-q1",
        "review_decide",
        json!({"id": "q1", "approve": true, "confirmed": false, "gesture": "click"}),
    );
    assert!(
        early.unwrap_err().contains("too soon"),
        "an approval right away is refused"
    );
    std::thread::sleep(Duration::from_millis(1600));
    let done = next
        .call(
            "review-q1",
            "review_decide",
            json!({"id": "q1", "approve": true, "confirmed": false, "gesture": "click"}),
        )
        .expect("approved after the delay");
    assert_eq!(done["outcome"], "approved");
    let fin = agent.final_within(WAIT).expect("the agent's answer");
    assert_eq!(fin["kind"], "APPROVED", "{fin}");
}

#[test]
fn a_window_decides_only_its_own_request_in_front_after_the_delay_with_the_pointer() {
    if !in_session(
        "a_window_decides_only_its_own_request_in_front_after_the_delay_with_the_pointer",
        Session::Keyring,
    ) {
        return;
    }
    let svc = Service::start();
    let mut ui = Ui::connect(&svc.ui);
    let principal = principal(&mut ui);
    let agent = Agent::ask(&svc.sock, &principal, "c1");
    let id = first_pending(&mut ui);
    assert_eq!(id, "q1");
    ui.note("review-q1", "shown");
    ui.note("review-q2", "shown");
    std::thread::sleep(Duration::from_millis(1600));
    let yes = |gesture: Value| json!({"id": "q1", "approve": true, "confirmed": false, "gesture": gesture});
    for (window, args, why) in [
        ("main", yes(json!("click")), "may not do that"),
        ("grant-q1", yes(json!("click")), "may not do that"),
        ("settings", yes(json!("click")), "not one of"),
        ("review-q2", yes(json!("click")), "its own request"),
        ("review-q1", yes(Value::Null), "keyboard alone"),
        ("review-q1", yes(json!("terminal")), "with the pointer"),
        ("review-q1x", yes(json!("click")), "not one of"),
    ] {
        let e = ui.call(window, "review_decide", args).unwrap_err();
        assert!(e.contains(why), "{window}: {e}");
        // The window table refuses as `not_permitted`; the gesture rules as `refused`.
        let by_the_table = ["may not do that", "not one of", "its own request"].contains(&why);
        assert_eq!(
            e.starts_with("not_permitted: "),
            by_the_table,
            "{window}: {e}"
        );
    }
    // The main window's own grant form answers no waiting agent.
    let e = ui
        .call("main", "grant_issue", json!({"request": "q1"}))
        .unwrap_err();
    assert!(e.contains("its own grant form"), "{e}");
    // In the back, it cannot approve; back in front, it waits the delay again.
    ui.note("review-q1", "blurred");
    let e = ui
        .call("review-q1", "review_decide", yes(json!("click")))
        .unwrap_err();
    assert!(e.contains("in front and focused"), "{e}");
    ui.note("review-q1", "focused");
    let e = ui
        .call("review-q1", "review_decide", yes(json!("click")))
        .unwrap_err();
    assert!(e.contains("too soon"), "{e}");
    assert_eq!(
        agent.final_within(Duration::from_millis(500)),
        None,
        "nothing was decided"
    );
    // Its own window denies at once (denying signs nothing).
    let denied = ui
        .call(
            "review-q1",
            "review_decide",
            json!({"id": "q1", "approve": false, "confirmed": false}),
        )
        .unwrap();
    assert_eq!(denied["outcome"], "denied");
    assert_eq!(agent.final_within(WAIT).unwrap()["kind"], "DENIED");
    ui.event(|v| v["event"] == "pending-withdrawn" && v["id"] == "q1");
}

#[test]
fn a_line_that_is_not_a_message_of_the_channel_closes_only_its_connection() {
    if !in_session(
        "a_line_that_is_not_a_message_of_the_channel_closes_only_its_connection",
        Session::Keyring,
    ) {
        return;
    }
    let svc = Service::start();
    // No hello: refused with a reason.
    let mut raw = UnixStream::connect(&svc.ui).unwrap();
    raw.write_all(b"{\"custody\":1,\"op\":\"hello\"}\n")
        .unwrap();
    let mut answer = String::new();
    BufReader::new(raw.try_clone().unwrap())
        .read_line(&mut answer)
        .unwrap();
    assert!(answer.contains("refused"), "{answer}");
    // Too long a line after the hello: that connection is closed.
    let mut big = Ui::connect(&svc.ui);
    let huge = format!(
        "{{\"window\":\"main\",\"note\":\"{}\"}}\n",
        "x".repeat(5 * 1024 * 1024)
    );
    let _ = big.out.write_all(huge.as_bytes());
    let closed = big.event(|v| v.get("closed").is_some());
    assert_eq!(closed["closed"], true);
    // An unknown message: closed too.
    let mut odd = Ui::connect(&svc.ui);
    odd.send(json!({"window": "main", "please": "sign"}));
    odd.event(|v| v.get("closed").is_some());
    // The service still serves a well-behaved UI.
    let mut ok = Ui::connect(&svc.ui);
    assert_eq!(
        ok.call("main", "status", json!({})).unwrap()["running"],
        true
    );
    let log = svc.log();
    assert!(
        log.contains("closed a connection"),
        "every rejection is logged:\n{log}"
    );
}

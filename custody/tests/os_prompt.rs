//! The OS password prompt, for real: it names the request it signs, and
//! only one is open at a time. Custody runs as an ordinary user with a
//! password (polkit asks root nothing), in a private D-Bus session with an
//! unlocked gnome-keyring, next to the real polkitd (scripts/start-polkit.sh,
//! which names the user an owner of custody's actions so polkit accepts the
//! prompt's details), on a tmux pty the test reads and types into:
//!
//! - the headless daemon (`parley-custodyd --approver terminal`), which
//!   registers polkit's text agent `pkttyagent` on its own terminal;
//! - the desktop service (`--approver desktop`), with `pkttyagent`
//!   registered for its process on a pty of its own, standing in for the
//!   desktop's agent.
//!
//! The UI and the agents are real clients of custody's sockets, as that
//! user (python3, which scripts/setup.sh installs).
//!
//! What it stops: a prompt that does not say which request the password is
//! for, and two decisions made at once each raising a prompt (a password
//! typed for one request signing another).
//!
//! Needs root (it creates the user and starts polkitd); without root it
//! fails with a clear message, unless PARLEY_SKIP_ROOT_TESTS=1.

mod support;

use parley_core::SecretKey;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use support::lines::json_lines;
use support::os_user::{must, ready_for_os_prompt, run, uid, UserDirs};
use support::requests::meal_order;
use support::terminal::sh_quote;
use support::user_terminal::{pane_log, wait_in, Tmux};
use support::UNLOCK;
use zeroize::Zeroizing;

/// Each test's own OS user (names start with the worktree's, `stepup`):
/// tests run at once, and each kills what its user left when it ends.
const BUSY_USER: &str = "stepup-t-busy";
const TTY_USER: &str = "stepup-t-tty";
/// A user polkit's actions never name as an owner.
const NOT_OWNER: &str = "stepup-t-notowner";
/// Both users' password, which polkit asks for.
const PASSWORD: &str = "osprompt-Passw0rd";
const WAIT: Duration = Duration::from_secs(60);

fn wait_until(what: &str, mut ok: impl FnMut() -> bool, log: impl Fn() -> String) {
    let start = Instant::now();
    while !ok() {
        assert!(
            start.elapsed() < WAIT,
            "timed out waiting for {what}\n{}",
            log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The UI and the two agents, as the user: a python3 process that reads
/// commands on stdin and prints every answer as one JSON line.
const CLIENT: &str = r#"
import json, os, socket, sys, threading
ui_path, agent_path, relay_path = sys.argv[1], sys.argv[2], sys.argv[3]
out_lock = threading.Lock()
def say(o):
    with out_lock:
        print(json.dumps(o), flush=True)
hello = {"hello": {"ui": "parley-custody-ui", "version": "0.1.0", "pid": os.getpid()}}
if ui_path != "-":
    # Knock at the door for the main window; the service starts its UI (the
    # relay), which hands this client the channel it inherited.
    lst = socket.socket(socket.AF_UNIX); lst.bind(relay_path); lst.listen(1)
    d = socket.socket(socket.AF_UNIX); d.connect(ui_path); df = d.makefile('rwb')
    for m in (hello, {"id": 1, "window": "main", "call": "open_window", "args": {"kind": "main"}}):
        df.write((json.dumps(m) + '\n').encode()); df.flush(); json.loads(df.readline())
    s, _ = lst.accept(); f = s.makefile('rwb')
    json.loads(f.readline())
    def send(o): f.write((json.dumps(o) + '\n').encode()); f.flush()
    send(hello)
    json.loads(f.readline())
    def reader():
        for line in f:
            m = json.loads(line)
            if "id" in m: say({"ui": m})
    threading.Thread(target=reader, daemon=True).start()
def agent(name, req):
    a = socket.socket(socket.AF_UNIX); a.connect(agent_path); af = a.makefile('rwb')
    af.write((json.dumps(req) + '\n').encode()); af.flush()
    for line in af:
        say({"agent": name, "reply": json.loads(line)})
for line in sys.stdin:
    cmd = json.loads(line)
    if "ui" in cmd: send(cmd["ui"])
    if "agent" in cmd: threading.Thread(target=agent, args=(cmd["agent"], cmd["request"]), daemon=True).start()
"#;

/// The client process and its answers.
struct Client {
    child: Child,
    stdin: ChildStdin,
    rx: mpsc::Receiver<Value>,
    kept: Vec<Value>,
}

impl Client {
    /// The client as the test user: the UI the service starts (if `ui`
    /// names the door and the relay's socket) and agents on `sock`.
    fn start(user: &str, ui: Option<(&Path, &Path)>, sock: &Path) -> Client {
        let (door, relay) = match ui {
            Some((d, r)) => (d.display().to_string(), r.display().to_string()),
            None => ("-".into(), "-".into()),
        };
        let mut child = Command::new("runuser")
            .args(["-u", user, "--", "python3", "-c", CLIENT])
            .arg(door)
            .arg(sock)
            .arg(relay)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 as the test user");
        let stdin = child.stdin.take().unwrap();
        let rx = json_lines(child.stdout.take().unwrap(), None);
        Client {
            child,
            stdin,
            rx,
            kept: Vec::new(),
        }
    }

    fn send(&mut self, v: Value) {
        writeln!(self.stdin, "{v}").unwrap();
        self.stdin.flush().unwrap();
    }
    fn ui(&mut self, id: u64, window: &str, call: &str, args: Value) {
        self.send(json!({"ui": {"id": id, "window": window, "call": call, "args": args}}));
    }
    fn note(&mut self, window: &str, note: &str) {
        self.send(json!({"ui": {"window": window, "note": note}}));
    }
    /// Waits (bounded) for an answer matching `f`, keeping the others.
    fn answer(&mut self, what: &str, f: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.kept.iter().position(&f) {
            return self.kept.remove(i);
        }
        let end = Instant::now() + WAIT;
        loop {
            let left = end
                .checked_duration_since(Instant::now())
                .unwrap_or_else(|| panic!("no {what}; so far: {:?}", self.kept));
            let v = self
                .rx
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no {what}; so far: {:?}", self.kept));
            if f(&v) {
                return v;
            }
            self.kept.push(v);
        }
    }
    fn reply_to(&mut self, id: u64) -> Value {
        self.answer(&format!("reply to call {id}"), |v| v["ui"]["id"] == id)["ui"].clone()
    }
    fn final_of(&mut self, agent: &str) -> Value {
        self.answer(&format!("final reply to agent {agent}"), |v| {
            v["agent"] == agent && v["reply"]["kind"] != "PENDING"
        })["reply"]
            .clone()
    }
    /// Whatever arrived within `wait` (nothing is taken away).
    fn drain(&mut self, wait: Duration) -> &[Value] {
        let end = Instant::now() + wait;
        while let Some(left) = end.checked_duration_since(Instant::now()) {
            match self.rx.recv_timeout(left) {
                Ok(v) => self.kept.push(v),
                Err(_) => break,
            }
        }
        &self.kept
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn agent_key() -> SecretKey {
    SecretKey::from_seed(&Zeroizing::new([9u8; 32]))
}

/// An agent's consent request for `amount` (minor units, USD) at `service`.
fn consent(id: &str, service: &str, amount: i64, principal: &str) -> Value {
    meal_order(9, id, service, amount, principal)
}

/// Whether the test may run, with what it needs checked.
fn ready(test: &str, user: &str, owner: bool) -> bool {
    ready_for_os_prompt(test, user, PASSWORD, owner, &[])
}

#[test]
fn the_terminal_daemons_os_prompt_names_the_request_and_only_the_password_signs() {
    let test = "the_terminal_daemons_os_prompt_names_the_request_and_only_the_password_signs";
    if ready(test, TTY_USER, true) {
        at_the_terminal(TTY_USER, true);
    }
}

#[test]
fn without_polkits_leave_to_name_the_request_the_password_is_still_asked_and_the_log_says_why() {
    let test =
        "without_polkits_leave_to_name_the_request_the_password_is_still_asked_and_the_log_says_why";
    if ready(test, NOT_OWNER, false) {
        at_the_terminal(NOT_OWNER, false);
    }
}

/// The headless daemon as `user` on a tmux pty: a consent is asked at its
/// terminal, then the OS asks for the password through `pkttyagent` on the
/// same terminal. A wrong password and a closed prompt sign nothing; the
/// password signs once. With `owner`, polkit takes the prompt's details and
/// the prompt names the request; without, polkit refuses them, custody
/// asks without them (the placeholder shows), its start and its log say why.
fn at_the_terminal(user: &'static str, owner: bool) {
    let dirs = UserDirs::new(user, "parley-osprompt");
    let (sock, data) = (dirs.run.join("custody.sock"), &dirs.data);
    let screen = dirs.tmp.path().join("terminal.log");
    // The daemon as the user, on a terminal of the user's own (script), in
    // a tmux pane the test reads and types into.
    let tmux = Tmux::new(user);
    tmux.terminal_daemon(
        &dirs,
        ("osprompt-keyring-pw", "stepup-osprompt"),
        &[],
        &screen,
    );
    let keys = |k: &[&str]| tmux.keys("daemon", k);
    let at = wait_in(&screen, "Create one now? [y/N]", 0);
    keys(&["y", "Enter"]);
    let at = wait_in(&screen, "listening on", at);
    let text = pane_log(&screen);
    // At start the daemon says whether its prompt can name the decision,
    // and if not, what root runs (here, a source tree: start-polkit.sh).
    assert_eq!(
        text[..at].contains("cannot say what it signs"),
        !owner,
        "the daemon's start says the prompt cannot name the decision only when it cannot:\n{text}"
    );
    if !owner {
        let fix = format!("scripts/start-polkit.sh {user}");
        assert!(
            text[..at].contains(&fix),
            "the start names {fix:?}:\n{text}"
        );
    }
    let principal = text
        .split_whitespace()
        .find(|w| w.starts_with("ed25519:"))
        .expect("the daemon prints the principal key")
        .to_string();

    let mut c = Client::start(user, None, &sock);
    c.send(json!({"agent": "a", "request": consent("a", "shop.example", 5830, &principal)}));
    let phrase = parley_custody::fingerprint::phrase(&agent_key().public());
    let mut at = at;
    // A wrong password, then no answer at all (Ctrl-D): nothing is signed.
    for wrong in [Some("not-the-password"), None] {
        at = wait_in(&screen, "approve? [y/N] ", at);
        // A yes counts once the prompt has been on screen for the delay.
        std::thread::sleep(parley_custody::terminal::ANSWER_DELAY + Duration::from_millis(300));
        keys(&["y", "Enter"]);
        let asked = wait_in(&screen, "Password: ", at);
        let prompt = &pane_log(&screen)[at..asked];
        let named = format!(
            "Parley Custody will sign a consent for 58.30 USD at shop.example (shop.order) \
             asked by agent \"{phrase}\""
        );
        if owner {
            assert!(
                prompt.contains(&named),
                "the OS prompt names {named:?}:\n{prompt}"
            );
        } else {
            assert!(
                prompt.contains("Parley Custody will sign $(decision)."),
                "polkit shows its placeholder:\n{prompt}"
            );
        }
        match wrong {
            Some(p) => keys(&[p, "Enter"]),
            None => keys(&["C-d"]),
        }
        at = wait_in(&screen, "not signed: OS authentication failed", asked);
        let early: Vec<Value> = c
            .drain(Duration::from_millis(200))
            .iter()
            .filter(|v| v["agent"] == "a" && v["reply"]["kind"] != "PENDING")
            .cloned()
            .collect();
        assert!(early.is_empty(), "nothing signed: {early:?}");
    }
    // The right password signs exactly that request.
    at = wait_in(&screen, "approve? [y/N] ", at);
    std::thread::sleep(parley_custody::terminal::ANSWER_DELAY + Duration::from_millis(300));
    keys(&["y", "Enter"]);
    wait_in(&screen, "Password: ", at);
    keys(&[PASSWORD, "Enter"]);
    let a = c.final_of("a");
    assert_eq!(a["kind"], "APPROVED", "{a}");
    if owner {
        // Approve for a while (issue 30, item 4): one password covers the
        // consent and the short grant, and the prompt says both.
        c.send(json!({"agent": "b", "request": consent("b", "shop.example", 5830, &principal)}));
        at = wait_in(&screen, "approve? [y/N] ", at);
        std::thread::sleep(parley_custody::terminal::ANSWER_DELAY + Duration::from_millis(300));
        keys(&["w", "Enter"]);
        at = wait_in(&screen, "(Enter: none, this order only): ", at);
        keys(&["2", "Enter"]);
        at = wait_in(&screen, "minutes (Enter: no): ", at);
        keys(&["2", "Enter"]);
        let asked = wait_in(&screen, "Password: ", at);
        let prompt = &pane_log(&screen)[at..asked];
        assert!(
            prompt.contains("Parley Custody will sign a consent for 58.30 USD at shop.example")
                && prompt.contains("and a grant for up to 100.00 USD for 15 minutes"),
            "the OS prompt names both:\n{prompt}"
        );
        keys(&[PASSWORD, "Enter"]);
        let b = c.final_of("b");
        assert_eq!(b["kind"], "APPROVED", "{b}");
        assert!(b["for_a_while"]["grant"].is_string(), "{b}");
    }
    drop(c);
    drop(tmux);
    let rows = support::custody::rows_at(
        &parley_custody::paths::audit_path(data),
        &[
            parley_custody::audit::EventKind::ConsentApproved,
            parley_custody::audit::EventKind::StepUpFailed,
        ],
    );
    let kinds: Vec<_> = rows.iter().map(|r| r.kind).collect();
    // (With the prompt naming the request, a second consent was approved
    // for a while.)
    let signed = if owner { 2 } else { 1 };
    assert_eq!(
        kinds
            .iter()
            .filter(|k| **k == parley_custody::audit::EventKind::ConsentApproved)
            .count(),
        signed,
        "{kinds:?}"
    );
    assert_eq!(
        kinds.len(),
        2 + signed,
        "two failed step-ups and the signatures: {kinds:?}"
    );
    let log = std::fs::read_to_string(data.join("custodyd.log")).unwrap_or_default();
    assert_eq!(
        log.contains("polkit refused the OS prompt's details"),
        !owner,
        "the log says why the prompt could not name the request only when it could not:\n{log}"
    );
}

#[test]
fn two_decisions_at_once_raise_one_os_prompt_naming_its_request_and_sign_nothing_twice() {
    const USER: &str = BUSY_USER;
    if !ready(
        "two_decisions_at_once_raise_one_os_prompt_naming_its_request_and_sign_nothing_twice",
        USER,
        true,
    ) {
        return;
    }
    let dirs = UserDirs::new(USER, "parley-busy");
    let (home, run_dir, data) = (&dirs.home, &dirs.run, &dirs.data);
    let (sock, ui_sock) = (run_dir.join("custody.sock"), run_dir.join("ui/ui.sock"));
    let log = home.join("service.log");
    let service_log = || std::fs::read_to_string(&log).unwrap_or_default();
    // The UI the service starts: the relay, handing its channel to the client.
    let relay_bin = home.join("ui-relay");
    std::fs::write(&relay_bin, support::ui_relay::RELAY).unwrap();
    std::fs::set_permissions(&relay_bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let relay_sock = home.join("relay.sock");

    // The service, as the user, in its own session with its keyring.
    let tmux = Tmux::new(USER);
    let service = format!(
        "exec runuser -u {USER} -- env -i HOME={home} PATH=/usr/local/bin:/usr/bin:/bin \
         XDG_RUNTIME_DIR={run} XDG_DATA_HOME={data} KEYRING_PW=busy-keyring-pw RUST_LOG=info \
         PARLEY_CUSTODY_NAMESPACE=stepup-busy PARLEY_CUSTODY_UI={relay_bin} \
         PARLEY_TEST_UI_RELAY={relay_sock} \
         dbus-run-session -- sh -c {unlock} sh {bin} --approver desktop --hidden \
         --socket {sock} --ui-socket {ui} --data-dir {data} 2>{log}",
        home = sh_quote(&home.display().to_string()),
        run = sh_quote(&run_dir.display().to_string()),
        data = sh_quote(&data.display().to_string()),
        unlock = sh_quote(UNLOCK),
        bin = sh_quote(env!("CARGO_BIN_EXE_parley-custodyd")),
        sock = sh_quote(&sock.display().to_string()),
        ui = sh_quote(&ui_sock.display().to_string()),
        log = sh_quote(&log.display().to_string()),
        relay_bin = sh_quote(&relay_bin.display().to_string()),
        relay_sock = sh_quote(&relay_sock.display().to_string()),
    );
    tmux.session("service", &service, None);
    wait_until(
        "the service's sockets",
        || sock.exists() && ui_sock.exists(),
        service_log,
    );
    let pid = {
        let out = run(Command::new("pgrep").args(["-u", USER, "-x", "parley-custodyd"]));
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .next()
            .unwrap_or_else(|| panic!("the service's pid\n{}", service_log()))
            .to_string()
    };

    // polkit's text agent for the service's process, on its own pty.
    let registered = home.join("registered");
    must(Command::new("mkfifo").arg(&registered));
    nix::unistd::chown(&registered, Some(uid(USER)), None).unwrap();
    let screen = dirs.tmp.path().join("pkttyagent.log");
    tmux.session(
        "agent",
        &format!(
            "exec runuser -u {USER} -- sh -c {}",
            sh_quote(&format!(
                "exec pkttyagent --process {pid} --notify-fd 3 3>{}",
                sh_quote(&registered.display().to_string())
            ))
        ),
        Some(&screen),
    );
    // EOF on the fifo: pkttyagent is registered with polkitd.
    let (done, registered_rx) = mpsc::channel();
    let fifo = registered.clone();
    std::thread::spawn(move || {
        let mut sink = Vec::new();
        let _ = std::fs::File::open(&fifo).and_then(|mut f| f.read_to_end(&mut sink));
        let _ = done.send(());
    });
    registered_rx
        .recv_timeout(WAIT)
        .expect("pkttyagent registered within the wait");
    let agent_screen = || std::fs::read_to_string(&screen).unwrap_or_default();

    // The UI and the agents, as the user.
    let mut c = Client::start(USER, Some((&ui_sock, &relay_sock)), &sock);
    c.ui(1, "main", "key_create", json!({"label": "Ana"}));
    let key = c.reply_to(1);
    let principal = key["ok"]["public"]
        .as_str()
        .unwrap_or_else(|| panic!("a key: {key}"))
        .to_string();
    c.send(json!({"agent": "a", "request": consent("a", "shop.example", 5830, &principal)}));
    c.answer("agent a pending", |v| {
        v["agent"] == "a" && v["reply"]["kind"] == "PENDING"
    });
    c.send(json!({"agent": "b", "request": consent("b", "books.example", 1200, &principal)}));
    c.answer("agent b pending", |v| {
        v["agent"] == "b" && v["reply"]["kind"] == "PENDING"
    });

    // Both review windows in front past the arming delay; both approved at once.
    c.note("review-q1", "shown");
    c.note("review-q2", "shown");
    std::thread::sleep(Duration::from_millis(1700));
    let yes = |id: &str| json!({"id": id, "approve": true, "confirmed": false, "gesture": "click"});
    c.ui(10, "review-q1", "review_decide", yes("q1"));
    wait_until(
        "the first OS prompt",
        || agent_screen().contains("Password: "),
        || format!("{}\n{}", agent_screen(), service_log()),
    );
    c.ui(11, "review-q2", "review_decide", yes("q2"));
    // The second is refused at once, says why, and its request still waits.
    let second = c.reply_to(11);
    assert_eq!(second["err"]["code"], "busy", "{second}");
    assert_eq!(
        second["err"]["message"],
        "Another approval is waiting for your password; finish or cancel it first. This request still waits.",
        "{second}"
    );
    // One prompt only, and it names the first request: amount, service, agent's words.
    let phrase = parley_custody::fingerprint::phrase(&agent_key().public());
    let shown = agent_screen();
    assert_eq!(
        shown.matches("AUTHENTICATING FOR").count(),
        1,
        "one prompt:\n{shown}"
    );
    for needed in [
        "Parley Custody will sign a consent for 58.30 USD at shop.example",
        &format!("asked by agent \"{phrase}\""),
    ] {
        assert!(
            shown.contains(needed),
            "the prompt names {needed:?}:\n{shown}"
        );
    }
    assert!(!shown.contains("books.example"), "{shown}");
    let early: Vec<Value> = c
        .drain(Duration::from_millis(300))
        .iter()
        .filter(|v| v.get("agent").is_some() && v["reply"]["kind"] != "PENDING")
        .cloned()
        .collect();
    assert!(early.is_empty(), "nothing decided yet: {early:?}");

    // A wrong password signs nothing; the right one signs the first, once.
    tmux.keys("agent", &["not-the-password", "Enter"]);
    let refused = c.reply_to(10);
    assert!(
        refused["err"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("nothing was signed")),
        "{refused}"
    );
    c.ui(12, "review-q1", "review_decide", yes("q1"));
    wait_until(
        "the first request's prompt again",
        || agent_screen().matches("Password: ").count() >= 2,
        || format!("{}\n{}", agent_screen(), service_log()),
    );
    tmux.keys("agent", &[PASSWORD, "Enter"]);
    assert_eq!(c.reply_to(12)["ok"]["outcome"], "approved");
    let a = c.final_of("a");
    assert_eq!(a["kind"], "APPROVED", "{a}");

    // The second request still waited: now it has its own prompt, naming it.
    c.ui(13, "review-q2", "review_decide", yes("q2"));
    wait_until(
        "the second request's prompt",
        || agent_screen().matches("Password: ").count() >= 3,
        || format!("{}\n{}", agent_screen(), service_log()),
    );
    let shown = agent_screen();
    let last = &shown[shown.rfind("AUTHENTICATING FOR").unwrap()..];
    assert!(
        last.contains("a consent for 12.00 USD at books.example"),
        "{last}"
    );
    tmux.keys("agent", &[PASSWORD, "Enter"]);
    assert_eq!(c.reply_to(13)["ok"]["outcome"], "approved");
    let b = c.final_of("b");
    assert_eq!(b["kind"], "APPROVED", "{b}");
    assert_ne!(a["grant"], b["grant"]);
    // Nothing was signed twice: one answer per agent, three prompts in all.
    let extra: Vec<Value> = c
        .drain(Duration::from_millis(500))
        .iter()
        .filter(|v| v.get("agent").is_some() && v["reply"]["kind"] != "PENDING")
        .cloned()
        .collect();
    assert!(extra.is_empty(), "one answer per request: {extra:?}");
    assert_eq!(agent_screen().matches("AUTHENTICATING FOR").count(), 3);
    drop(c);
    drop(tmux);
    let signed = support::custody::rows_at(
        &parley_custody::paths::audit_path(data),
        &[parley_custody::audit::EventKind::ConsentApproved],
    );
    assert_eq!(
        signed.len(),
        2,
        "two signatures, one per request: {signed:?}"
    );
    assert_ne!(signed[0].hash, signed[1].hash);
}

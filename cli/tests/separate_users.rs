//! The recommended deployment, for real: the daemon runs as a custody user
//! with its own gnome-keyring and answers at its terminal; the agent runs as
//! another user in the agents group and asks with `parley approve`; a third
//! user outside the group is refused before anything is parsed. The agent
//! can request, but cannot read the key: not the keychain, not the files,
//! not the daemon's memory. Before signing, the daemon asks the OS to
//! authenticate the custody user (polkit, with its text agent `pkttyagent`
//! on the daemon's terminal): the right password signs; a wrong one, a
//! cancelled prompt, a prompt nobody answers and a missing agent sign
//! nothing, say why, and leave an audit row.
//!
//! Needs root (it creates the users and starts polkitd through
//! scripts/start-polkit.sh). Without root it fails with a clear message,
//! unless PARLEY_SKIP_ROOT_TESTS=1.

use serde_json::{json, Value};
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const CUSTODY: &str = "parley-t-custody";
/// The custody user of the step-up failure test (its own, so the two tests'
/// daemons never meet).
const CUSTODY2: &str = "parley-t-custody2";
/// The custody users' password, which polkit asks for before signing.
const PASSWORD: &str = "custody-Passw0rd";
const AGENT: &str = "parley-t-agent";
const OTHER: &str = "parley-t-other";
const GROUP: &str = "parley-t-agents";

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    out
}

fn ensure_users() {
    let _ = run(Command::new("groupadd").args(["--system", GROUP]));
    for u in [CUSTODY, CUSTODY2, AGENT, OTHER] {
        let _ = run(Command::new("useradd").args([
            "--system",
            "--no-create-home",
            "--shell",
            "/bin/sh",
            u,
        ]));
    }
    // The agent may reach the socket; the custody user must be in the group
    // too, to give the socket to it.
    for u in [AGENT, CUSTODY, CUSTODY2] {
        let out = run(Command::new("gpasswd").args(["-a", u, GROUP]));
        assert!(
            out.status.success(),
            "gpasswd: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// polkit up (system bus, polkitd, our action) and the custody users'
/// passwords set: what OS authentication needs on a machine with no init.
fn ensure_polkit() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/start-polkit.sh");
    let out = run(Command::new("bash").arg(&script));
    assert!(
        out.status.success(),
        "{}: {}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut chpasswd = Command::new("chpasswd")
        .stdin(Stdio::piped())
        .spawn()
        .expect("chpasswd");
    let mut stdin = chpasswd.stdin.take().unwrap();
    writeln!(stdin, "{CUSTODY}:{PASSWORD}\n{CUSTODY2}:{PASSWORD}").unwrap();
    drop(stdin);
    assert!(chpasswd.wait().unwrap().success(), "chpasswd");
}

fn uid_of(user: &str) -> u32 {
    nix::unistd::User::from_name(user)
        .unwrap()
        .unwrap()
        .uid
        .as_raw()
}

fn gid_of(group: &str) -> u32 {
    nix::unistd::Group::from_name(group)
        .unwrap()
        .unwrap()
        .gid
        .as_raw()
}

fn mkdir(path: &Path, owner: &str, group: Option<&str>, mode: u32) -> PathBuf {
    std::fs::create_dir_all(path).unwrap();
    let gid = group.map(gid_of).map(nix::unistd::Gid::from_raw);
    nix::unistd::chown(path, Some(nix::unistd::Uid::from_raw(uid_of(owner))), gid).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    path.to_path_buf()
}

/// Collects a child's output as it comes.
#[derive(Clone, Default)]
struct Screen(Arc<Mutex<String>>);

impl Screen {
    fn attach(&self, mut r: impl Read + Send + 'static) {
        let buf = self.0.clone();
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n) = r.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                buf.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&chunk[..n]));
            }
        });
    }
    fn text(&self) -> String {
        self.0.lock().unwrap().clone()
    }
    /// Waits until `needle` appears after byte `from`; returns the position after it.
    fn wait_for(&self, needle: &str, from: usize, timeout: Duration) -> usize {
        let start = Instant::now();
        loop {
            let t = self.text();
            if let Some(i) = t.get(from..).and_then(|s| s.find(needle)) {
                return from + i + needle.len();
            }
            assert!(
                start.elapsed() < timeout,
                "timed out waiting for {needle:?}; screen so far:\n{t}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

struct Daemon {
    child: Child,
    stdin: std::process::ChildStdin,
    screen: Screen,
    user: &'static str,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = Command::new("pkill")
            .args(["-KILL", "-u", self.user])
            .status();
    }
}

/// Unlocks the keyring of a fresh D-Bus session with `$KEYRING_PW`, waits
/// for it on the bus, then runs its arguments: `sh -c UNLOCK sh CMD…`.
/// One script for every test that runs the real daemon on a real keyring.
const UNLOCK: &str = include_str!("../../scripts/unlock-keyring.sh");

fn as_user(user: &str, home: &Path) -> Command {
    let mut c = Command::new("runuser");
    c.args(["-u", user, "--", "env", "-i"])
        .arg(format!("HOME={}", home.display()))
        .arg("PATH=/usr/local/bin:/usr/bin:/bin");
    c
}

fn require_root() -> bool {
    if is_root() {
        return true;
    }
    if std::env::var_os("PARLEY_SKIP_ROOT_TESTS").is_some() {
        eprintln!("SKIPPED: needs root (PARLEY_SKIP_ROOT_TESTS=1)");
        return false;
    }
    panic!(
        "this test creates OS users and must run as root (set PARLEY_SKIP_ROOT_TESTS=1 to skip it)"
    );
}

/// One run's folders and binaries, each where its user may reach it.
struct World {
    _tmp: tempfile::TempDir,
    parley: PathBuf,
    custodyd: PathBuf,
    chome: PathBuf,
    cdata: PathBuf,
    crun: PathBuf,
    sock: PathBuf,
    ahome: PathBuf,
    ohome: PathBuf,
}

fn world(custody: &str) -> World {
    ensure_users();
    ensure_polkit();
    let tmp = tempfile::Builder::new()
        .prefix("parley-users")
        .tempdir()
        .unwrap();
    let root = tmp.path().to_path_buf();
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();

    // Binaries copied where every user may run them.
    let bin = mkdir(&root.join("bin"), "root", None, 0o755);
    let parley = PathBuf::from(env!("CARGO_BIN_EXE_parley"));
    let custodyd = parley.with_file_name("parley-custodyd");
    assert!(
        custodyd.exists(),
        "build the daemon first: cargo build -p parley-custody ({})",
        custodyd.display()
    );
    for b in [&parley, &custodyd] {
        std::fs::copy(b, bin.join(b.file_name().unwrap())).unwrap();
    }
    let chome = mkdir(&root.join("custody-home"), custody, None, 0o700);
    let sockdir = mkdir(&root.join("sock"), custody, Some(GROUP), 0o750);
    World {
        parley: bin.join("parley"),
        custodyd: bin.join("parley-custodyd"),
        cdata: mkdir(&chome.join("data"), custody, None, 0o700),
        crun: mkdir(&chome.join("run"), custody, None, 0o700),
        sock: sockdir.join("custody.sock"),
        ahome: mkdir(&root.join("agent-home"), AGENT, None, 0o700),
        ohome: mkdir(&root.join("other-home"), OTHER, None, 0o700),
        chome,
        _tmp: tmp,
    }
}

/// Starts the daemon as `custody` on a terminal (script gives it a pty),
/// creates its key, and returns it with the principal key and the screen
/// position after it listens. `launch` goes before the daemon's path
/// (e.g. `env PATH=/nowhere`), `extra` after its flags.
fn start_daemon(
    w: &World,
    custody: &'static str,
    launch: &str,
    extra: &str,
) -> (Daemon, String, usize) {
    let inner = format!(
        "exec dbus-run-session -- sh -c '{}' sh {launch} {} --socket {} --agents-group {GROUP} --data-dir {} {extra}",
        UNLOCK.replace('\'', "'\\''"),
        w.custodyd.display(),
        w.sock.display(),
        w.cdata.display()
    );
    let mut cmd = as_user(custody, &w.chome);
    cmd.arg(format!("XDG_RUNTIME_DIR={}", w.crun.display()))
        .arg(format!("XDG_DATA_HOME={}", w.cdata.display()))
        .arg("KEYRING_PW=custody-test-pw")
        .arg("RUST_LOG=info")
        .args(["script", "-qfec", &inner, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("start the daemon");
    let screen = Screen::default();
    screen.attach(child.stdout.take().unwrap());
    screen.attach(child.stderr.take().unwrap());
    let stdin = child.stdin.take().unwrap();
    let mut d = Daemon {
        child,
        stdin,
        screen,
        user: custody,
    };
    let long = Duration::from_secs(60);
    let at = d.screen.wait_for("Create one now? [y/N]", 0, long);
    d.stdin.write_all(b"y\n").unwrap();
    let at = d.screen.wait_for("listening on", at, long);
    let text = d.screen.text();
    let principal = text
        .split_whitespace()
        .find(|w| w.starts_with("ed25519:"))
        .expect("the daemon prints the principal key")
        .to_string();
    (d, principal, at)
}

/// The agent user's key (made once per world).
fn agent_key(w: &World) -> String {
    let out = run(as_user(AGENT, &w.ahome)
        .arg(format!("PARLEY_HOME={}/.parley", w.ahome.display()))
        .arg(&w.parley)
        .args(["init", "--json"]));
    assert!(
        out.status.success(),
        "init: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .split(|c: char| c == '"' || c.is_whitespace())
        .find(|w| w.starts_with("ed25519:"))
        .expect("init prints the agent key")
        .to_string()
}

/// A consent request for a 71.36 USD order, as the agent user's file; its hash.
fn consent_request(w: &World, principal: &str) -> (PathBuf, String) {
    let mut proposal = json!({
        "id": "p_ord1", "capability": "shop.order", "summary": "Order 3 meals",
        "effects": [{"op": "create", "target": "order"}, {"op": "charge", "target": "card ••42", "detail": "71.36 USD"}],
        "cost": {"amount": 7136, "currency": "USD"}, "risk": "low", "undo": {"window": 1800},
        "expires": parley_custody::engine::unix_now() + 600
    });
    let hash = parley_core::proposal::proposal_hash(&proposal).unwrap();
    proposal["hash"] = json!(hash);
    let request = json!({"service": "shop.example", "proposal": proposal, "consent": {
        "proposal": "p_ord1", "hash": hash, "service": "shop.example", "capability": "shop.order",
        "principal": principal, "summary": "Order 3 meals", "expires": proposal["expires"]}});
    let file = w.ahome.join("consent.json");
    std::fs::write(&file, request.to_string()).unwrap();
    nix::unistd::chown(&file, Some(nix::unistd::Uid::from_raw(uid_of(AGENT))), None).unwrap();
    (file, hash)
}

/// `parley approve` as the agent user, in the background.
fn spawn_approve(w: &World, file: &Path) -> Child {
    as_user(AGENT, &w.ahome)
        .arg(format!("PARLEY_HOME={}/.parley", w.ahome.display()))
        .arg(&w.parley)
        .args(["approve", "--socket"])
        .arg(&w.sock)
        .arg(file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The daemon's audit log, newest first, read as root.
fn audit_rows(w: &World) -> Vec<Value> {
    let out = run(Command::new(&w.parley)
        .args(["audit", "--jsonl", "--data-dir"])
        .arg(&w.cdata));
    assert!(
        out.status.success(),
        "audit: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Answers `y` at the review's prompt, once the prompt has been on screen
/// long enough for a yes to count (custody ignores a sooner one as
/// typed-ahead: `parley_custody::terminal::ANSWER_DELAY`).
fn say_yes(d: &mut Daemon) {
    std::thread::sleep(parley_custody::terminal::ANSWER_DELAY + Duration::from_millis(200));
    d.stdin.write_all(b"y\n").unwrap();
    d.stdin.flush().unwrap();
}

/// Answers polkit's text agent on the daemon's terminal with `password`
/// (or, with `None`, closes the prompt with Ctrl-D); returns the position
/// after the prompt.
fn answer_password(d: &mut Daemon, at: usize, password: Option<&str>) -> usize {
    let at = d.screen.wait_for("Password: ", at, Duration::from_secs(30));
    match password {
        Some(p) => writeln!(d.stdin, "{p}").unwrap(),
        None => d.stdin.write_all(b"\x04").unwrap(),
    }
    d.stdin.flush().unwrap();
    at
}

#[test]
fn agent_user_asks_human_approves_at_the_terminal_and_nobody_else_gets_in() {
    if !require_root() {
        return;
    }
    let w = world(CUSTODY);
    let (parley, cdata, sock, ahome, ohome) = (
        w.parley.clone(),
        w.cdata.clone(),
        w.sock.clone(),
        w.ahome.clone(),
        w.ohome.clone(),
    );
    let (mut d, principal, at) = start_daemon(&w, CUSTODY, "", "");
    let long = Duration::from_secs(60);
    let agent_key = agent_key(&w);
    let (file, hash) = consent_request(&w, &principal);
    let approve = spawn_approve(&w, &file);

    // The human sees the real proposal, with the agent user named, and says yes.
    let at = d.screen.wait_for("approve? [y/N]", at, long);
    let review = d.screen.text()[..at].to_string();
    for needed in [
        "71.36 USD",
        "$ charge card ••42 — 71.36 USD",
        "+ create order",
        "shop.example",
        "shop.order",
        &format!("user {AGENT}"),
    ] {
        assert!(
            review.contains(needed),
            "the review shows {needed:?}:\n{review}"
        );
    }
    say_yes(&mut d);
    // Then the OS asks for the custody user's password, on the same terminal.
    let at = d.screen.wait_for("Now authenticate", at, long);
    answer_password(&mut d, at, Some(PASSWORD));
    let approve = approve.wait_with_output().unwrap();
    assert!(
        approve.status.success(),
        "approve: {}",
        String::from_utf8_lossy(&approve.stderr)
    );
    let token = String::from_utf8_lossy(&approve.stdout).trim().to_string();
    assert!(token.starts_with("pg1."), "{token}");
    let saved = ahome.join(".parley/consents").join(format!("{hash}.pg"));
    assert_eq!(std::fs::read_to_string(&saved).unwrap().trim(), token);
    assert_eq!(
        std::fs::metadata(&saved).unwrap().permissions().mode() & 0o777,
        0o600
    );

    // `parley verify` accepts it for exactly that COMMIT.
    let verify = |svc: &str, cap: &str| {
        run(Command::new(&parley).args([
            "verify",
            &token,
            "--trust",
            &principal,
            "--svc",
            svc,
            "--verb",
            "COMMIT",
            "--cap",
            cap,
            "--hash",
            &hash,
            "--cost",
            "71.36USD",
            "--risk",
            "low",
            "--proof-key",
            &agent_key,
        ]))
        .status
        .code()
    };
    assert_eq!(verify("shop.example", "shop.order"), Some(0));
    assert_eq!(verify("evil.example", "shop.order"), Some(1));
    assert_eq!(verify("shop.example", "bank.transfer"), Some(1));

    // The audit log says how the human confirmed: at the terminal, then the OS.
    let rows = audit_rows(&w);
    let signed = rows
        .iter()
        .find(|r| r["kind"] == "consent_approved")
        .expect("a consent_approved row");
    assert!(
        signed.to_string().contains("terminal+os-auth"),
        "how it was confirmed is recorded: {signed}"
    );

    // The agent cannot read the key: not the files, not the keychain, not the memory.
    let daemon_pid = {
        let out = run(Command::new("pgrep").args(["-u", CUSTODY, "-x", "parley-custodyd"]));
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .next()
            .expect("daemon pid")
            .to_string()
    };
    let environ = std::fs::read(format!("/proc/{daemon_pid}/environ")).unwrap();
    let bus = String::from_utf8_lossy(&environ)
        .split('\0')
        .find_map(|kv| {
            kv.strip_prefix("DBUS_SESSION_BUS_ADDRESS=")
                .map(str::to_string)
        })
        .expect("the daemon's session bus");
    let attempts: Vec<(&str, Command)> = vec![
        ("list the custody data dir", {
            let mut c = as_user(AGENT, &ahome);
            c.args(["ls"]).arg(&cdata);
            c
        }),
        ("read the keyring files", {
            let mut c = as_user(AGENT, &ahome);
            c.args(["ls"]).arg(cdata.join("keyrings"));
            c
        }),
        ("read the daemon's memory", {
            let mut c = as_user(AGENT, &ahome);
            c.args(["head", "-c", "16"])
                .arg(format!("/proc/{daemon_pid}/mem"));
            c
        }),
        ("read the daemon's environment", {
            let mut c = as_user(AGENT, &ahome);
            c.args(["cat"]).arg(format!("/proc/{daemon_pid}/environ"));
            c
        }),
        ("talk to the custody user's keychain bus", {
            let mut c = as_user(AGENT, &ahome);
            c.args([
                "dbus-send",
                &format!("--bus={bus}"),
                "--print-reply",
                "--dest=org.freedesktop.secrets",
                "/org/freedesktop/secrets",
                "org.freedesktop.Secret.Service.SearchItems",
                "dict:string:string:",
            ]);
            c
        }),
    ];
    for (what, mut c) in attempts {
        let out = run(&mut c);
        assert!(
            !out.status.success(),
            "the agent could {what}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }

    // A user outside the agents group is refused before anything it sends is parsed.
    let probe = format!(
        "import socket,sys\ns=socket.socket(socket.AF_UNIX)\ns.connect({:?})\ns.sendall(b'{{not json\\n')\nprint(s.makefile().readline())",
        sock.display().to_string()
    );
    let out = run(as_user(OTHER, &ohome).args(["/usr/bin/python3", "-c", &probe]));
    let reply: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    if reply.is_null() {
        // The socket directory is 0750 custody:agents: not even a connect.
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("ermission denied"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    } else {
        assert_eq!(reply["code"], "forbidden_peer", "{reply}");
    }
    let _ = d.stdin.flush();
}

#[test]
fn a_wrong_password_a_cancelled_prompt_an_unanswered_one_and_no_agent_sign_nothing() {
    if !require_root() {
        return;
    }
    let w = world(CUSTODY2);
    let long = Duration::from_secs(60);
    let (mut d, principal, at) = start_daemon(&w, CUSTODY2, "", "--step-up-timeout 4");
    agent_key(&w);
    let (file, _hash) = consent_request(&w, &principal);
    let approve = spawn_approve(&w, &file);

    // A wrong password: refused by the OS, nothing signed, asked again.
    let at = d.screen.wait_for("approve? [y/N]", at, long);
    say_yes(&mut d);
    let at = answer_password(&mut d, at, Some("not-the-password"));
    let at = d
        .screen
        .wait_for("not signed: OS authentication failed", at, long);
    // Cancelled at the prompt (Ctrl-D).
    let at = d.screen.wait_for("approve? [y/N]", at, long);
    say_yes(&mut d);
    let at = answer_password(&mut d, at, None);
    let at = d
        .screen
        .wait_for("not signed: OS authentication failed", at, long);
    // Nobody answers: the check is cancelled after the daemon's time limit.
    let at = d.screen.wait_for("approve? [y/N]", at, long);
    say_yes(&mut d);
    let at = d.screen.wait_for("Password: ", at, long);
    let at = d.screen.wait_for("was not completed within 4 s", at, long);
    // The request was never dropped: it is still asked, and now denied.
    let at = d.screen.wait_for("approve? [y/N]", at, long);
    d.stdin.write_all(b"n\n").unwrap();
    d.screen.wait_for("denied", at, long);
    let approve = approve.wait_with_output().unwrap();
    assert!(!approve.status.success(), "nothing was signed");
    assert!(
        !String::from_utf8_lossy(&approve.stdout).contains("pg1."),
        "no token: {}",
        String::from_utf8_lossy(&approve.stdout)
    );
    let rows = audit_rows(&w);
    let kinds: Vec<&str> = rows.iter().filter_map(|r| r["kind"].as_str()).collect();
    assert!(!kinds.contains(&"consent_approved"), "{kinds:?}");
    let failed: Vec<String> = rows
        .iter()
        .filter(|r| r["kind"] == "step_up_failed")
        .map(|r| r["reason"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        failed.len(),
        3,
        "one audit row per failed step-up: {failed:?}"
    );
    assert!(
        failed.iter().any(|r| r.contains("step-up timeout")),
        "{failed:?}"
    );
    assert_eq!(
        failed
            .iter()
            .filter(|r| r.contains("step-up refused"))
            .count(),
        2,
        "{failed:?}"
    );
    drop(d);

    // No authentication agent at all (pkttyagent not on the daemon's PATH).
    let w = world(CUSTODY2);
    let (mut d, principal, at) = start_daemon(&w, CUSTODY2, "env PATH=/nonexistent", "");
    agent_key(&w);
    let (file, _hash) = consent_request(&w, &principal);
    let approve = spawn_approve(&w, &file);
    let at = d.screen.wait_for("approve? [y/N]", at, long);
    say_yes(&mut d);
    let at = d
        .screen
        .wait_for("OS authentication is not available", at, long);
    let at = d.screen.wait_for("approve? [y/N]", at, long);
    d.stdin.write_all(b"n\n").unwrap();
    d.screen.wait_for("denied", at, long);
    let approve = approve.wait_with_output().unwrap();
    assert!(!approve.status.success());
    let rows = audit_rows(&w);
    assert!(
        rows.iter().any(|r| r["kind"] == "step_up_failed"
            && r["reason"]
                .as_str()
                .unwrap_or_default()
                .contains("unavailable")),
        "{rows:?}"
    );
}

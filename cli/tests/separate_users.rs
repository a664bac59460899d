//! The recommended deployment, for real: the daemon runs as a custody user
//! with its own gnome-keyring and answers at its terminal; the agent runs as
//! another user in the agents group and asks with `parley approve`; a third
//! user outside the group is refused before anything is parsed. The agent
//! can request, but cannot read the key: not the keychain, not the files,
//! not the daemon's memory.
//!
//! Needs root (it creates the users). Without root it fails with a clear
//! message, unless PARLEY_SKIP_ROOT_TESTS=1.

use serde_json::{json, Value};
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const CUSTODY: &str = "parley-t-custody";
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
    for u in [CUSTODY, AGENT, OTHER] {
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
    for u in [AGENT, CUSTODY] {
        let out = run(Command::new("gpasswd").args(["-a", u, GROUP]));
        assert!(
            out.status.success(),
            "gpasswd: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
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
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = Command::new("pkill")
            .args(["-KILL", "-u", CUSTODY])
            .status();
    }
}

const UNLOCK: &str = r#"printf '%s' "$KEYRING_PW" | gnome-keyring-daemon --unlock --components=secrets >/dev/null
i=0
until dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
      org.freedesktop.DBus.NameHasOwner string:org.freedesktop.secrets 2>/dev/null | grep -q 'boolean true'; do
  i=$((i+1)); [ "$i" -gt 100 ] && exit 97; sleep 0.1
done
exec "$@""#;

fn as_user(user: &str, home: &Path) -> Command {
    let mut c = Command::new("runuser");
    c.args(["-u", user, "--", "env", "-i"])
        .arg(format!("HOME={}", home.display()))
        .arg("PATH=/usr/local/bin:/usr/bin:/bin");
    c
}

#[test]
fn agent_user_asks_human_approves_at_the_terminal_and_nobody_else_gets_in() {
    if !is_root() {
        if std::env::var_os("PARLEY_SKIP_ROOT_TESTS").is_some() {
            eprintln!("SKIPPED: needs root (PARLEY_SKIP_ROOT_TESTS=1)");
            return;
        }
        panic!("this test creates OS users and must run as root (set PARLEY_SKIP_ROOT_TESTS=1 to skip it)");
    }
    ensure_users();
    let tmp = tempfile::Builder::new()
        .prefix("parley-users")
        .tempdir()
        .unwrap();
    let root = tmp.path();
    std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o755)).unwrap();

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
    let (parley, custodyd) = (bin.join("parley"), bin.join("parley-custodyd"));

    let chome = mkdir(&root.join("custody-home"), CUSTODY, None, 0o700);
    let cdata = mkdir(&chome.join("data"), CUSTODY, None, 0o700);
    let crun = mkdir(&chome.join("run"), CUSTODY, None, 0o700);
    let sockdir = mkdir(&root.join("sock"), CUSTODY, Some(GROUP), 0o750);
    let sock = sockdir.join("custody.sock");
    let ahome = mkdir(&root.join("agent-home"), AGENT, None, 0o700);
    let ohome = mkdir(&root.join("other-home"), OTHER, None, 0o700);

    // The daemon, as the custody user, on a terminal (script gives it a pty).
    let inner = format!(
        "exec dbus-run-session -- sh -c '{}' sh {} --socket {} --agents-group {GROUP} --data-dir {}",
        UNLOCK.replace('\'', "'\\''"),
        custodyd.display(),
        sock.display(),
        cdata.display()
    );
    let mut cmd = as_user(CUSTODY, &chome);
    cmd.arg(format!("XDG_RUNTIME_DIR={}", crun.display()))
        .arg(format!("XDG_DATA_HOME={}", cdata.display()))
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

    // The agent user makes its key and asks for a consent.
    let out = run(as_user(AGENT, &ahome)
        .arg(format!("PARLEY_HOME={}/.parley", ahome.display()))
        .arg(&parley)
        .args(["init", "--json"]));
    assert!(
        out.status.success(),
        "init: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let agent_key = String::from_utf8_lossy(&out.stdout)
        .split(|c: char| c == '"' || c.is_whitespace())
        .find(|w| w.starts_with("ed25519:"))
        .expect("init prints the agent key")
        .to_string();
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
    let file = ahome.join("consent.json");
    std::fs::write(&file, request.to_string()).unwrap();
    nix::unistd::chown(&file, Some(nix::unistd::Uid::from_raw(uid_of(AGENT))), None).unwrap();
    let approve = as_user(AGENT, &ahome)
        .arg(format!("PARLEY_HOME={}/.parley", ahome.display()))
        .arg(&parley)
        .args(["approve", "--socket"])
        .arg(&sock)
        .arg(&file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();

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
    d.stdin.write_all(b"y\n").unwrap();
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

//! The service's memory is its own (issue 27 item 6): a process of the same
//! OS user cannot read the running `parley-custodyd`'s memory.
//!
//! The real daemon runs as a non-root test user (root may read anyone's
//! memory, and CI runs as root), on a real pty (tmux) since the headless
//! daemon asks on its terminal, with the file store so no keyring is needed.
//! Then, as that same user, a Python process tries what malware of the
//! user's would: open `/proc/PID/mem` and read at an address the harness
//! (root) found mapped in `/proc/PID/maps`, and `ptrace` attach
//! (PTRACE_SEIZE). Both must fail. The same probe against a plain `sleep`
//! of that user must succeed, so the probe is known to work on this kernel
//! (no Yama restriction hiding what the daemon does). Needs root, tmux,
//! runuser and /usr/bin/python3.

mod support;

use support::terminal::sh_quote;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const USER: &str = "memory-svc";
const PYTHON: &str = "/usr/bin/python3";
const WAIT: Duration = Duration::from_secs(90);

/// Run as the test user with a pid and an address: tries to read the
/// process's memory and to attach to it, prints one JSON line.
const PROBE: &str = r#"
import ctypes, json, os, sys
pid, addr = int(sys.argv[1]), int(sys.argv[2], 16)
out = {}
try:
    with open(f"/proc/{pid}/mem", "rb") as f:
        f.seek(addr)
        out["mem"] = "read %d bytes" % len(f.read(16))
except OSError as e:
    out["mem"] = "refused: " + os.strerror(e.errno)
try:
    open(f"/proc/{pid}/maps").read()
    out["maps"] = "read"
except OSError as e:
    out["maps"] = "refused: " + os.strerror(e.errno)
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
PTRACE_SEIZE = 0x4206
if libc.ptrace(PTRACE_SEIZE, pid, None, None) == 0:
    out["ptrace"] = "attached"
else:
    out["ptrace"] = "refused: " + os.strerror(ctypes.get_errno())
print(json.dumps(out))
"#;

fn test_user() -> (u32, u32) {
    let u = support::os_user::system_user(USER, "/usr/sbin/nologin");
    (u.uid.as_raw(), u.gid.as_raw())
}

/// The daemon on a tmux pty, as the test user.
struct Daemon {
    server: String,
    dir: tempfile::TempDir,
}

impl Daemon {
    fn start(uid: u32, gid: u32) -> Daemon {
        let dir = tempfile::Builder::new()
            .prefix("memory-svc")
            .tempdir()
            .unwrap();
        let d = dir.path();
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
        for sub in ["home", "run", "data"] {
            let p = d.join(sub);
            std::fs::create_dir_all(&p).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o700)).unwrap();
            nix::unistd::chown(
                &p,
                Some(nix::unistd::Uid::from_raw(uid)),
                Some(nix::unistd::Gid::from_raw(gid)),
            )
            .unwrap();
        }
        let q = |p: PathBuf| sh_quote(&p.display().to_string());
        let script = format!(
            "exec runuser -u {USER} -- env -i HOME={home} PATH=/usr/bin:/bin XDG_RUNTIME_DIR={run} \
             PARLEY_CUSTODY_PASSPHRASE=memory-test-passphrase RUST_LOG=info \
             {bin} --approver terminal --file-store --socket {sock} --data-dir {data}\n",
            home = q(d.join("home")),
            run = q(d.join("run")),
            data = q(d.join("data")),
            sock = q(d.join("run/custody.sock")),
            bin = sh_quote(env!("CARGO_BIN_EXE_parley-custodyd")),
        );
        std::fs::write(d.join("run.sh"), script).unwrap();
        let t = Daemon {
            server: format!("memory-svc-{}", std::process::id()),
            dir,
        };
        t.tmux(&[
            "new-session",
            "-d",
            "-s",
            "main",
            "-x",
            "200",
            "-y",
            "50",
            &format!("sh {}", q(t.path("run.sh"))),
        ]);
        t.tmux(&[
            "pipe-pane",
            "-o",
            "-t",
            "main",
            &format!("cat >> {}", q(t.path("raw.log"))),
        ]);
        t
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// This daemon's pid (its data directory is unique to it).
    fn pid(&self, uid: u32) -> u32 {
        pid_of(uid, &self.path("data").display().to_string())
    }

    fn tmux(&self, args: &[&str]) -> String {
        support::terminal::tmux(&self.server, args)
    }

    /// Waits until the terminal shows `needle`.
    fn wait_for(&self, needle: &str) {
        let start = Instant::now();
        loop {
            let raw = std::fs::read(self.path("raw.log")).unwrap_or_default();
            if String::from_utf8_lossy(&raw).contains(needle) {
                return;
            }
            if start.elapsed() > WAIT {
                let screen = self.tmux(&["capture-pane", "-p", "-J", "-t", "main"]);
                panic!("timed out waiting for {needle:?}; the terminal shows:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        // runuser does not pass tmux's hangup on: stop the daemon itself,
        // found by its own data directory.
        if let Ok(out) = Command::new("pgrep")
            .args(["-u", USER, "-f"])
            .arg(self.path("data").display().to_string())
            .output()
        {
            for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                let _ = Command::new("kill").args(["-TERM", pid]).status();
            }
        }
        support::terminal::kill_server(&self.server);
    }
}

/// The pid of the user's one process whose command line contains `pattern`.
fn pid_of(uid: u32, pattern: &str) -> u32 {
    let start = Instant::now();
    loop {
        let out = Command::new("pgrep")
            .args(["-n", "-u", &uid.to_string(), "-f", pattern])
            .output()
            .expect("pgrep");
        if let Some(pid) = String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .next()
            .and_then(|p| p.parse().ok())
        {
            return pid;
        }
        assert!(start.elapsed() < WAIT, "no {pattern} of uid {uid} runs");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The start of the first readable mapping of `pid` (read as root).
fn mapped_address(pid: u32) -> String {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    maps.lines()
        .find(|l| {
            l.split_whitespace()
                .nth(1)
                .is_some_and(|p| p.starts_with('r'))
        })
        .and_then(|l| l.split('-').next())
        .expect("a readable mapping")
        .to_string()
}

/// Runs [`PROBE`] as the test user against `pid`.
fn probe(pid: u32) -> serde_json::Value {
    let out = Command::new("runuser")
        .args(["-u", USER, "--", PYTHON, "-c", PROBE])
        .arg(pid.to_string())
        .arg(mapped_address(pid))
        .stdin(Stdio::null())
        .output()
        .expect("runuser python3");
    assert!(
        out.status.success(),
        "the probe failed to run: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the probe's JSON line")
}

/// `Max core file size` soft and hard, from `/proc/PID/limits`.
fn core_limit(pid: u32) -> (String, String) {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max core file size"))
        .expect("a core limit line")
        .to_string();
    let f: Vec<&str> = line.split_whitespace().collect();
    (f[4].to_string(), f[5].to_string())
}

#[test]
fn a_same_user_process_cannot_read_the_service_memory() {
    if !support::require_root(
        "a_same_user_process_cannot_read_the_service_memory",
        "it creates an OS user and runs the daemon as that user",
    ) {
        return;
    }
    let missing = support::not_on_path(&["tmux", "runuser", "pgrep"]);
    assert!(
        missing.is_empty() && Path::new(PYTHON).exists(),
        "this test needs tmux, runuser, pgrep and {PYTHON} (missing: {missing:?})"
    );
    let (uid, gid) = test_user();

    // The probe works here: the same user reads a plain process's memory.
    let mut control = Command::new("runuser")
        .args(["-u", USER, "--", "sleep", "120.5"])
        .spawn()
        .expect("a control process");
    let control_pid = pid_of(uid, "^sleep 120.5$");
    let seen = probe(control_pid);
    let _ = Command::new("kill")
        .args(["-KILL", &control_pid.to_string()])
        .status();
    let _ = control.wait();
    assert!(
        seen["mem"].as_str().unwrap().starts_with("read 16"),
        "the probe cannot read even a plain process of the same user ({seen}); \
         this kernel restricts ptrace (Yama?), so this test shows nothing here"
    );
    assert_eq!(seen["ptrace"], "attached", "{seen}");

    let daemon = Daemon::start(uid, gid);
    daemon.wait_for("Create one now? [y/N]");
    daemon.tmux(&["send-keys", "-t", "main", "y", "Enter"]);
    daemon.wait_for("listening on");
    daemon.wait_for("not dumpable: yes");
    let pid = daemon.pid(uid);

    let seen = probe(pid);
    assert!(
        seen["mem"].as_str().unwrap().starts_with("refused"),
        "a same-user process read the service's memory: {seen}"
    );
    assert!(
        seen["maps"].as_str().unwrap().starts_with("refused"),
        "{seen}"
    );
    assert!(
        seen["ptrace"].as_str().unwrap().starts_with("refused"),
        "a same-user process attached to the service: {seen}"
    );
    // Non-dumpable: the kernel hands its /proc entries to root.
    let meta = std::fs::metadata(format!("/proc/{pid}/mem")).unwrap();
    assert_eq!(
        meta.uid(),
        0,
        "/proc/{pid}/mem belongs to uid {}",
        meta.uid()
    );
    // And no core dump, soft or hard limit.
    assert_eq!(core_limit(pid), ("0".into(), "0".into()));
    // The log said what took effect.
    let log = std::fs::read_to_string(daemon.path("data/custodyd.log")).unwrap_or_default();
    assert!(
        log.contains("process hardening: not dumpable: yes") && log.contains("core dumps: off"),
        "the log does not say what hardening took effect:\n{log}"
    );
}

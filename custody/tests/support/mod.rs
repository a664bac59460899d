//! What custody's test binaries share, written once: a private D-Bus
//! session with a real, unlocked gnome-keyring (here; see
//! `keystore_keyring.rs` for how it works), the runtime the tests block on,
//! the root check of the tests that create OS users, a started custody
//! ([`custody`]), a raw agent on its socket ([`agent`]) and the requests it
//! sends ([`requests`]); the real desktop service and its UI channel's
//! clients ([`desktop`]), a line-protocol agent ([`line_agent`]), the
//! tests' own OS users ([`os_user`]) and their terminals
//! ([`user_terminal`]).
#![allow(dead_code)]

pub mod agent;
pub mod custody;
pub mod desktop;
pub mod line_agent;
pub mod lines;
pub mod login1;
pub mod os_user;
pub mod requests;
pub mod terminal;
pub mod ui_relay;
pub mod user_terminal;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub const INSIDE: &str = "PARLEY_TEST_IN_KEYRING";
pub const SCRATCH: &str = "PARLEY_TEST_SCRATCH";
pub const NAMESPACE: &str = "test";
pub const CHILD_TIMEOUT: Duration = Duration::from_secs(180);
pub const APT_HINT: &str = "install them with: apt-get install -y --no-install-recommends gnome-keyring dbus-x11 (dbus-run-session and dbus-send come with dbus-daemon / dbus-bin)";

/// Unlocks the keyring of a fresh D-Bus session with `$KEYRING_PW`, waits
/// for it on the bus, then runs its arguments: `sh -c UNLOCK sh CMD…`.
/// One script for every test that runs the real daemon on a real keyring.
pub const UNLOCK: &str = include_str!("../../../scripts/unlock-keyring.sh");

#[derive(Clone, Copy)]
pub enum Session {
    /// A private bus with gnome-keyring running and its login keyring unlocked.
    Keyring,
    /// No bus at all: `DBUS_SESSION_BUS_ADDRESS` points at a socket that does not exist.
    NoBus,
}

/// Script run inside `dbus-run-session`: start and unlock gnome-keyring,
/// wait until it owns `org.freedesktop.secrets`, then exec the test.
pub const SESSION_SCRIPT: &str = r#"set -e
printf '%s' "$PARLEY_TEST_KEYRING_PW" | gnome-keyring-daemon --unlock --components=secrets >/dev/null
i=0
until dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
      org.freedesktop.DBus.NameHasOwner string:org.freedesktop.secrets 2>/dev/null | grep -q 'boolean true'; do
  i=$((i+1))
  if [ "$i" -gt 100 ]; then echo "gnome-keyring-daemon did not appear on the session bus" >&2; exit 97; fi
  sleep 0.1
done
exec "$@"
"#;

pub fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|d| d.join(tool).is_file()))
        .unwrap_or(false)
}

/// The tools of `tools` that are not on PATH, in order.
pub fn not_on_path<'a>(tools: &[&'a str]) -> Vec<&'a str> {
    tools.iter().copied().filter(|t| !on_path(t)).collect()
}

/// `true`: we are inside the private session, run the body. `false`: we are
/// the parent, the child already ran the body and passed.
pub fn in_session(test: &str, session: Session) -> bool {
    if std::env::var_os(INSIDE).is_some() {
        return true;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let dir = |name: &str| {
        let p = root.join(name);
        std::fs::create_dir_all(&p).unwrap();
        p
    };
    let runtime = dir("run");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let exe = std::env::current_exe().unwrap();
    let test_args = [test, "--exact", "--nocapture", "--test-threads=1"];
    let mut cmd = match session {
        Session::Keyring => {
            let missing = not_on_path(&["dbus-run-session", "dbus-send", "gnome-keyring-daemon"]);
            assert!(
                missing.is_empty(),
                "the keyring tests need {missing:?} on PATH; {APT_HINT}"
            );
            let mut c = Command::new("dbus-run-session");
            c.arg("--")
                .arg("sh")
                .arg("-c")
                .arg(SESSION_SCRIPT)
                .arg("sh")
                .arg(&exe)
                .args(test_args);
            c
        }
        Session::NoBus => {
            let mut c = Command::new(&exe);
            c.args(test_args).env(
                "DBUS_SESSION_BUS_ADDRESS",
                format!("unix:path={}", root.join("no-such-bus").display()),
            );
            c
        }
    };
    let stdout_path = root.join("stdout");
    let stderr_path = root.join("stderr");
    cmd.env(INSIDE, "1")
        .env(SCRATCH, dir("scratch"))
        .env("HOME", dir("home"))
        .env("XDG_DATA_HOME", dir("data"))
        .env("XDG_CONFIG_HOME", dir("config"))
        .env("XDG_CACHE_HOME", dir("cache"))
        .env("XDG_RUNTIME_DIR", &runtime)
        .env("PARLEY_CUSTODY_DATA", root.join("custody"))
        .env("PARLEY_CUSTODY_NAMESPACE", NAMESPACE)
        .env("PARLEY_TEST_KEYRING_PW", "test-login-password")
        // No display: a locked keyring must fail, not pop up a prompt.
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout_path).unwrap())
        .stderr(std::fs::File::create(&stderr_path).unwrap());
    if matches!(session, Session::Keyring) {
        cmd.env_remove("DBUS_SESSION_BUS_ADDRESS");
    }
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start the keyring session for {test}: {e}; {APT_HINT}"));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > CHILD_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{test}: the keyring session did not finish in {CHILD_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = std::fs::read_to_string(&stdout_path).unwrap_or_default();
    let err = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    println!("--- child stdout ({test}) ---\n{out}\n--- child stderr ---\n{err}");
    assert!(
        status.success(),
        "{test} failed inside the private keyring session ({status})"
    );
    // `--exact` with a name that matches nothing also exits 0: make sure the
    // body really ran.
    assert!(
        out.contains("test result: ok. 1 passed"),
        "{test}: the child did not run exactly one test"
    );
    false
}

/// The human's `parley`, built next to this test binary (`cargo build -p
/// parley-cli`; `cargo test --workspace` builds it).
pub fn parley_cli() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let bin = exe
        .parent()
        .and_then(std::path::Path::parent)
        .expect("target/<profile>/deps")
        .join("parley");
    assert!(
        bin.exists(),
        "{} is missing: run `cargo build -p parley-cli` first",
        bin.display()
    );
    bin
}

pub fn scratch() -> PathBuf {
    PathBuf::from(std::env::var_os(SCRATCH).expect("set by in_session"))
}

/// A multi-threaded runtime with time and I/O: `workers` threads, or
/// tokio's default (one per core) for `None`.
pub fn runtime(workers: Option<usize>) -> tokio::runtime::Runtime {
    let mut b = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = workers {
        b.worker_threads(n);
    }
    b.enable_all().build().unwrap()
}

/// The runtime most tests block on: two workers, so that custody and the
/// test's agent run at once even on a one-core CI machine.
pub fn rt() -> tokio::runtime::Runtime {
    runtime(Some(2))
}

/// A runtime with tokio's default number of workers (one per core), for
/// the tests that have always run on it.
pub fn rt_per_core() -> tokio::runtime::Runtime {
    runtime(None)
}

/// Whether a test that needs root may run: `true` as root; `false` (and
/// says so) when `PARLEY_SKIP_ROOT_TESTS=1` skips it knowingly; otherwise it
/// fails, saying `why` it needs root.
pub fn require_root(test: &str, why: &str) -> bool {
    if nix::unistd::Uid::effective().is_root() {
        return true;
    }
    if std::env::var("PARLEY_SKIP_ROOT_TESTS").as_deref() == Ok("1") {
        eprintln!("SKIPPED {test}: needs root (PARLEY_SKIP_ROOT_TESTS=1)");
        return false;
    }
    panic!(
        "{test} needs root: {why}. Run the tests as root (as CI does), or set \
         PARLEY_SKIP_ROOT_TESTS=1 to skip it knowingly."
    );
}

//! Nothing loosens custody without the OS (issue 27, item 3), with real
//! parts: the real `parley-custodyd --approver desktop` runs as an ordinary
//! user with a password (`loosen-desk`, created here; polkit asks root
//! nothing), next to a real polkitd on the real system bus
//! (scripts/start-polkit.sh), inside a private D-Bus session with an
//! unlocked gnome-keyring. The client is the UI the service starts (the
//! test plays it through a relay that hands over the inherited channel):
//! raw `{"id","window","call","args"}` lines, as a compromised page or
//! synthetic input in the real UI could make it send.
//!
//! What it stops: such a client turning step-up off, letting another OS
//! user's agents in, resuming a paused agent or deleting the principal key
//! with no authentication agent to ask, or with a wrong password. The same
//! changes go through once polkit's text agent (`pkttyagent`, on a pty this
//! test reads, standing in for the desktop's agent) is given the user's
//! password; its prompt names each change; the audit rows say the OS
//! authenticated them. Tightening never asks.

mod support;

use parley_core::SecretKey;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};
use support::desktop::{Service, Ui};
use support::os_user::{ensure_user, start_polkit};
use zeroize::Zeroizing;

const TEST: &str = "a_raw_ui_client_cannot_loosen_custody_without_the_users_password";
const USER: &str = "loosen-desk";
const PASSWORD: &str = "PARLEY_TEST_LOOSEN_PASSWORD";
/// Every wait for the service or for polkit (a wrong password costs PAM's
/// delay, a few seconds).
const WAIT: Duration = Duration::from_secs(60);

#[test]
fn a_raw_ui_client_cannot_loosen_custody_without_the_users_password() {
    if std::env::var_os(support::INSIDE).is_some() {
        return as_the_user();
    }
    if !support::require_root(
        TEST,
        "it creates the OS user `loosen-desk` with a password, starts polkitd, and runs custody as \
         that user (polkit authorizes root without asking)",
    ) {
        return;
    }
    let missing = support::not_on_path(&[
        "runuser",
        "useradd",
        "chpasswd",
        "script",
        "pkttyagent",
        "dbus-run-session",
        "dbus-send",
        "gnome-keyring-daemon",
    ]);
    assert!(
        missing.is_empty(),
        "missing {missing:?}: run scripts/setup.sh"
    );
    let password = format!("loosen-Passw0rd-{}", std::process::id());
    ensure_user(USER, &password);
    // The user owns custody's actions, so polkit takes the details that name
    // the change in its prompt from that user's custody.
    start_polkit(Some(USER));

    let tmp = tempfile::Builder::new()
        .prefix("parley-loosen-")
        .tempdir()
        .unwrap();
    let root = tmp.path();
    for d in ["home", "data", "config", "cache", "run", "scratch"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(root.join("run"), std::fs::Permissions::from_mode(0o700)).unwrap();
    let chown = Command::new("chown")
        .arg("-R")
        .arg(USER)
        .arg(root)
        .status()
        .unwrap();
    assert!(chown.success());

    let (out, err) = (root.join("stdout"), root.join("stderr"));
    let mut child = Command::new("runuser")
        .args(["-p", "-u", USER, "--", "dbus-run-session", "--", "sh", "-c"])
        .arg(support::SESSION_SCRIPT)
        .arg("sh")
        .arg(std::env::current_exe().unwrap())
        .args([TEST, "--exact", "--nocapture", "--test-threads=1"])
        .env(support::INSIDE, "1")
        .env(support::SCRATCH, root.join("scratch"))
        .env("HOME", root.join("home"))
        .env("XDG_DATA_HOME", root.join("data"))
        .env("XDG_CONFIG_HOME", root.join("config"))
        .env("XDG_CACHE_HOME", root.join("cache"))
        .env("XDG_RUNTIME_DIR", root.join("run"))
        .env(
            "PARLEY_CUSTODY_NAMESPACE",
            format!("loosen-{}", std::process::id()),
        )
        .env("PARLEY_TEST_KEYRING_PW", "loosen-keyring-password")
        .env(PASSWORD, &password)
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .env_remove("PARLEY_CUSTODY_SOCKET")
        .env_remove("PARLEY_CUSTODY_DATA")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .current_dir(root)
        .spawn()
        .expect("runuser");
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if started.elapsed() > support::CHILD_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let said = format!(
        "--- stdout\n{}\n--- stderr\n{}",
        std::fs::read_to_string(&out).unwrap_or_default(),
        std::fs::read_to_string(&err).unwrap_or_default()
    );
    println!("{said}");
    assert!(
        status.is_some_and(|s| s.success()),
        "the test as {USER} failed (or took over {:?}):\n{said}",
        support::CHILD_TIMEOUT
    );
}

/// polkit authorizes root without asking: custody running as root makes a
/// loosening change with no prompt (polkit running or not), and its audit
/// row says that no OS authentication protected it (the human is not led to
/// think otherwise).
#[test]
fn as_root_a_loosening_goes_through_and_its_row_says_nothing_protected_it() {
    const NAME: &str = "as_root_a_loosening_goes_through_and_its_row_says_nothing_protected_it";
    if std::env::var_os(support::INSIDE).is_none()
        && !support::require_root(NAME, "it runs custody as root")
    {
        return;
    }
    if !support::in_session(NAME, support::Session::Keyring) {
        return;
    }
    let (_service, mut ui) = service_and_ui(&support::scratch());
    let never = with(settings(&mut ui), |s| {
        s["step_up"] = json!({"rule": "never"})
    });
    ui.call("main", "settings_save", json!({"settings": never}))
        .expect("polkit asks root nothing: the change goes through");
    assert_eq!(settings(&mut ui)["step_up"]["rule"], "never");
    let rows = ui
        .call(
            "main",
            "audit_query",
            json!({"filter": {"kinds": ["settings_loosened"]}}),
        )
        .unwrap()["events"]
        .clone();
    assert_eq!(rows.as_array().map(Vec::len), Some(1), "{rows}");
    assert_eq!(
        rows[0]["reason"],
        "turn OS authentication off for approvals"
    );
    let by = rows[0]["confirmed_by"].as_str().unwrap_or("");
    assert!(by.starts_with("root: no OS authentication"), "{by:?}");
}

// ------------------------------------------------------------ as the user

/// The service as the desktop starts it, with its default settings (no UI
/// of its own: this test is the UI, through the relay); the UI it starts,
/// whose answers may wait on polkit (a wrong password costs PAM's delay).
fn service_and_ui(dir: &Path) -> (Service, Ui) {
    let service = Service::start(dir, None, &[]);
    let mut ui = service.ui();
    ui.wait = WAIT + Duration::from_secs(120);
    (service, ui)
}

/// polkit's text agent for the service's process, on a pty (`script`),
/// with what it printed so far.
struct TextAgent {
    child: Child,
    screen: Arc<Mutex<String>>,
}

impl TextAgent {
    fn start(pid: u32, dir: &Path) -> TextAgent {
        let fifo = dir.join("registered");
        assert!(Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let mut child = Command::new("script")
            .arg("-qfec")
            .arg(format!(
                "exec pkttyagent --process {pid} --notify-fd 3 3>{}",
                fifo.display()
            ))
            .arg("/dev/null")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("script pkttyagent");
        let screen = Arc::new(Mutex::new(String::new()));
        let mut out = child.stdout.take().unwrap();
        let s = screen.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 1024];
            while let Ok(n) = out.read(&mut buf) {
                if n == 0 {
                    break;
                }
                s.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        // EOF on the fifo: pkttyagent is registered with polkitd.
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut f = std::fs::File::open(&fifo).expect("the notify fifo");
            let mut sink = Vec::new();
            let _ = f.read_to_end(&mut sink);
            let _ = tx.send(());
        });
        rx.recv_timeout(WAIT)
            .expect("pkttyagent registered in time");
        TextAgent { child, screen }
    }

    fn len(&self) -> usize {
        self.screen.lock().unwrap().len()
    }

    /// Waits for a password prompt printed after `from`; returns what was
    /// printed since `from`, or `Err` with it when no prompt came in time.
    fn prompt_after(&self, from: usize) -> Result<String, String> {
        let end = Instant::now() + WAIT;
        loop {
            let since = self.screen.lock().unwrap()[from..].to_string();
            if since.contains("Password:") {
                return Ok(since);
            }
            if Instant::now() > end {
                return Err(since);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn type_line(&mut self, line: &str) {
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(format!("{line}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    }
}

impl Drop for TextAgent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn settings(ui: &mut Ui) -> Value {
    ui.call("main", "settings_get", json!({}))
        .expect("settings_get")["settings"]
        .clone()
}

fn with(mut s: Value, f: impl FnOnce(&mut Value)) -> Value {
    f(&mut s);
    s
}

/// One loosening change as a raw client makes it.
struct Change {
    name: &'static str,
    call: &'static str,
    args: Value,
    /// What the OS prompt must say.
    prompt: String,
}

fn refused_as_not_authenticated(r: Result<Value, String>, what: &str, why: &str) {
    match r {
        Ok(v) => panic!("{what} went through without OS authentication: {v}"),
        Err(e) => {
            assert!(e.starts_with("not_authenticated: "), "{what}: {e}");
            assert!(e.contains(why), "{what}: {e:?} does not say {why:?}");
        }
    }
}

fn as_the_user() {
    assert_ne!(
        nix::unistd::Uid::effective().as_raw(),
        0,
        "this half runs as {USER}"
    );
    let password = std::env::var(PASSWORD).expect("the user's password");
    let dir = support::scratch();
    let (service, mut ui) = service_and_ui(&dir);

    // The first key is made without asking (there is nothing to loosen yet);
    // pausing an agent and lowering a limit tighten: none of them asks, and
    // no authentication agent is registered, so an ask would be refused.
    let key = ui
        .call("main", "key_create", json!({"label": "principal"}))
        .expect("the first key needs no OS authentication")["public"]
        .as_str()
        .unwrap()
        .to_string();
    let agent = SecretKey::from_seed(&Zeroizing::new([9u8; 32]))
        .public()
        .to_string();
    ui.call("main", "agent_pause", json!({"agent": agent}))
        .expect("pausing tightens: no OS authentication");
    let start = settings(&mut ui);
    assert_eq!(start["step_up"]["rule"], "committing", "{start}");
    let tighter = with(start.clone(), |s| s["queue_size"] = json!(32));
    ui.call("main", "settings_save", json!({"settings": tighter}))
        .expect("a smaller queue tightens: no OS authentication");
    let start = settings(&mut ui);

    let phrase = parley_custody::fingerprint::phrase(&agent.parse().unwrap());
    let short = key.parse::<parley_core::PublicKey>().unwrap().short();
    let changes = [
        Change {
            name: "step-up off",
            call: "settings_save",
            args: json!({"settings": with(start.clone(), |s| s["step_up"] = json!({"rule": "never"}))}),
            prompt: "turn OS authentication off for approvals".into(),
        },
        Change {
            name: "another user's agents",
            call: "settings_save",
            args: json!({"settings": with(start.clone(), |s| s["extra_users"] = json!(["loosen-bob"]))}),
            prompt: "let OS user \"loosen-bob\"'s agents connect".into(),
        },
        Change {
            name: "resume the paused agent",
            call: "agent_resume",
            args: json!({"agent": agent}),
            prompt: format!("resume agent \"{phrase}\""),
        },
        Change {
            name: "delete the key",
            call: "key_delete",
            args: json!({"public": key, "confirm": key}),
            prompt: format!("delete the principal key {short} (\"principal\")"),
        },
    ];

    // What the Settings page shows before Save: custody's own list.
    let shown = ui
        .call("main", "settings_loosenings", changes[0].args.clone())
        .expect("settings_loosenings");
    assert_eq!(
        shown,
        json!([{"field": "step_up", "words": "turn OS authentication off for approvals"}])
    );

    // No authentication agent answers: each is refused, saying how to make
    // it otherwise, and nothing changed.
    for c in &changes {
        refused_as_not_authenticated(
            ui.call("main", c.call, c.args.clone()),
            c.name,
            "not available here",
        );
    }
    let r = ui.call("main", "settings_save", changes[0].args.clone());
    refused_as_not_authenticated(r, "step-up off", "settings.json as yourself");
    let unchanged = |ui: &mut Ui| {
        let s = settings(ui);
        assert_eq!(s["step_up"]["rule"], "committing", "{s}");
        assert_eq!(s["extra_users"], json!([]), "{s}");
        let paused = ui.call("main", "agent_pauses", json!({})).unwrap()["paused"].clone();
        assert_eq!(paused.as_array().map(Vec::len), Some(1), "{paused}");
        let keys = ui.call("main", "keys_list", json!({})).unwrap()["keys"].clone();
        assert_eq!(keys.as_array().map(Vec::len), Some(1), "{keys}");
    };
    unchanged(&mut ui);

    // The text agent asks; a wrong password changes nothing.
    let mut pk = TextAgent::start(service.pid(), &dir);
    for c in &changes {
        let from = pk.len();
        let id = ui.start("main", c.call, c.args.clone());
        let said = pk.prompt_after(from).unwrap_or_else(|said| {
            panic!(
                "{}: no password prompt (the agent printed {said:?}); the call: {:?}\n{}",
                c.name,
                ui.answer(id),
                service.log()
            )
        });
        assert!(
            said.contains(&c.prompt),
            "{}: the prompt {said:?} does not name {:?}",
            c.name,
            c.prompt
        );
        assert!(said.contains("org.parley.custody.change"), "{said:?}");
        pk.type_line("not-the-password");
        refused_as_not_authenticated(ui.answer(id), c.name, "failed or was cancelled");
    }
    unchanged(&mut ui);

    // The user's own password: each change goes through.
    for c in &changes {
        let from = pk.len();
        let id = ui.start("main", c.call, c.args.clone());
        let said = pk.prompt_after(from).expect("a password prompt");
        assert!(said.contains(&c.prompt), "{}: {said:?}", c.name);
        println!("the OS prompt for {}: {:?}", c.name, said.trim());
        pk.type_line(&password);
        if let Err(e) = ui.answer(id) {
            panic!("{} with the right password: {e}\n{}", c.name, service.log());
        }
    }
    let s = settings(&mut ui);
    assert_eq!(
        s["step_up"]["rule"], "committing",
        "the second save was made from the first form: {s}"
    );
    assert_eq!(s["extra_users"], json!(["loosen-bob"]), "{s}");
    let paused = ui.call("main", "agent_pauses", json!({})).unwrap()["paused"].clone();
    assert_eq!(paused, json!([]));
    let keys = ui.call("main", "keys_list", json!({})).unwrap()["keys"].clone();
    assert_eq!(keys, json!([]));

    // Each authenticated change is in the audit log, saying so.
    let rows = ui
        .call(
            "main",
            "audit_query",
            json!({"filter": {"kinds": ["settings_loosened", "agent_resumed", "key_deleted"]}}),
        )
        .unwrap()["events"]
        .clone();
    let rows: Vec<(String, String, String)> = rows
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .map(|r| {
            let t = |k: &str| r[k].as_str().unwrap_or("").to_string();
            (t("kind"), t("reason"), t("confirmed_by"))
        })
        .collect();
    let expected = [
        (
            "settings_loosened",
            "turn OS authentication off for approvals",
        ),
        (
            "settings_loosened",
            "let OS user \"loosen-bob\"'s agents connect",
        ),
        ("agent_resumed", ""),
        ("key_deleted", "deleted in the app"),
    ];
    assert_eq!(rows.len(), expected.len(), "{rows:?}");
    for ((kind, reason, by), (k, r)) in rows.iter().zip(expected) {
        assert_eq!(
            (kind.as_str(), reason.as_str(), by.as_str()),
            (k, r, "os-auth")
        );
    }

    // Tightening never asks, even with an agent there to ask.
    let from = pk.len();
    let back = with(settings(&mut ui), |s| s["extra_users"] = json!([]));
    ui.call("main", "settings_save", json!({"settings": back}))
        .expect("removing a user tightens");
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        !pk.screen.lock().unwrap()[from..].contains("Password:"),
        "tightening asked"
    );
}

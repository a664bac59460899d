//! A YEA MCP job server's approvals through the real headless daemon on a
//! real pty: the whole loop issue 29 asks for.
//!
//! The real `parley-custodyd` runs in its own tmux server (as in
//! `terminal_prompt.rs`), inside a private D-Bus session with a real,
//! unlocked gnome-keyring. The human types on that terminal. The
//! playground's job server (the real MCP SDK, in this process over an
//! in-memory pipe) and its scripted MCP client do the agent's part:
//!
//! 1. custody issues the server its signed policy grant (the human says yes
//!    on the terminal): store credit up to 25.00 USD each runs unasked;
//! 2. store credit of 10.00 USD → RAN, with a receipt;
//! 3. a refund of 30.00 USD → NOT RUN, with an approval code;
//! 4. the code goes to custody (`approve_code`, what `parley approve CODE`
//!    sends): the terminal shows the plan and asks for the phrase; the human
//!    types it; custody signs the consent, and it is written into the store
//!    where the server looks (what `parley approve` does with the reply);
//! 5. the refund again → RAN; 6. the same call again → refused (consumed).

mod support;

use parley_core::SecretKey;
use parley_custody::terminal::ANSWER_DELAY;
use parley_playground::clock::SystemClock;
use parley_playground::jobs::mcp::{run_client, ClientScript, ServerAt};
use parley_playground::jobs::policy::read_tightening;
use parley_playground::jobs::server::{JobServer, Setup};
use parley_playground::jobs::store::FileStore;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};
use support::not_on_path;
use zeroize::Zeroizing;

const WAIT: Duration = Duration::from_secs(90);
const UNLOCK: &str = include_str!("../../scripts/unlock-keyring.sh");
const PROMPT: &str = "approve? [y/N] ";

fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The daemon on its own terminal (the harness of `terminal_prompt.rs`, cut
/// to what this story needs).
struct Term {
    server: String,
    dir: tempfile::TempDir,
    principal: String,
}

impl Term {
    fn start() -> Term {
        let missing = not_on_path(&[
            "tmux",
            "dbus-run-session",
            "dbus-send",
            "gnome-keyring-daemon",
        ]);
        assert!(
            missing.is_empty(),
            "this test needs {missing:?}: apt-get install -y --no-install-recommends tmux gnome-keyring dbus-x11"
        );
        let dir = tempfile::Builder::new()
            .prefix("parley-mcp")
            .tempdir()
            .unwrap();
        let d = dir.path();
        for sub in ["home", "run", "data", "xdg", "store"] {
            std::fs::create_dir_all(d.join(sub)).unwrap();
        }
        for private in ["run", "data", "store"] {
            std::fs::set_permissions(d.join(private), std::fs::Permissions::from_mode(0o700))
                .unwrap();
        }
        let server = format!("parley-mcp-{}", std::process::id());
        let script = format!(
            "while [ ! -e {go} ]; do sleep 0.05; done\n\
             exec env -i HOME={home} PATH=/usr/local/bin:/usr/bin:/bin XDG_RUNTIME_DIR={run} \
             XDG_DATA_HOME={xdg} KEYRING_PW=mcp-test-pw RUST_LOG=info \
             dbus-run-session -- sh -c {unlock} sh {bin} --socket {sock} --data-dir {data} --namespace mcp-test\n",
            go = sh_quote(&d.join("go").display().to_string()),
            home = sh_quote(&d.join("home").display().to_string()),
            run = sh_quote(&d.join("run").display().to_string()),
            xdg = sh_quote(&d.join("xdg").display().to_string()),
            unlock = sh_quote(UNLOCK),
            bin = sh_quote(env!("CARGO_BIN_EXE_parley-custodyd")),
            sock = sh_quote(&d.join("run/custody.sock").display().to_string()),
            data = sh_quote(&d.join("data").display().to_string()),
        );
        std::fs::write(d.join("run.sh"), script).unwrap();
        std::fs::write(d.join("tmux.conf"), "set -g history-limit 50000\n").unwrap();
        let mut t = Term {
            server,
            dir,
            principal: String::new(),
        };
        t.tmux(&[
            "-f",
            &t.path("tmux.conf").display().to_string(),
            "new-session",
            "-d",
            "-s",
            "main",
            "-x",
            "200",
            "-y",
            "50",
            &format!("sh {}", sh_quote(&t.path("run.sh").display().to_string())),
        ]);
        t.tmux(&[
            "pipe-pane",
            "-o",
            "-t",
            "main",
            &format!(
                "cat >> {}",
                sh_quote(&t.path("raw.log").display().to_string())
            ),
        ]);
        std::fs::write(t.path("go"), "").unwrap();
        t.wait_raw("Create one now? [y/N]", 0);
        t.keys(&["y", "Enter"]);
        t.wait_raw("listening on", 0);
        let hello = request(&t.sock(), json!({"custody": 1, "id": "h", "op": "hello"})).wait();
        t.principal = hello["principals"][0]["key"]
            .as_str()
            .expect("HELLO names the principal")
            .to_string();
        t
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn sock(&self) -> PathBuf {
        self.path("run/custody.sock")
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&self.server)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run tmux");
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "main"];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }

    fn raw(&self) -> Vec<u8> {
        std::fs::read(self.path("raw.log")).unwrap_or_default()
    }

    /// Waits until `needle` was written after byte `from`; returns the byte after it.
    fn wait_raw(&self, needle: &str, from: usize) -> usize {
        let start = Instant::now();
        loop {
            let raw = self.raw();
            let hay = &raw[from.min(raw.len())..];
            if let Some(i) = hay
                .windows(needle.len())
                .position(|w| w == needle.as_bytes())
            {
                return from + i + needle.len();
            }
            if start.elapsed() > WAIT {
                panic!(
                    "timed out waiting for {needle:?} on the terminal; it shows:\n{}\n--- log ---\n{}",
                    self.tmux(&["capture-pane", "-p", "-J", "-t", "main"]),
                    std::fs::read_to_string(self.path("data/custodyd.log")).unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Term {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-L")
            .arg(&self.server)
            .arg("kill-server")
            .stderr(Stdio::null())
            .status();
    }
}

/// A request in flight on its own connection (closing it would withdraw it).
struct Asked {
    rx: mpsc::Receiver<Value>,
}

impl Asked {
    fn pending(&self) {
        let v = self.rx.recv_timeout(WAIT).expect("a reply");
        assert_eq!(v["kind"], "PENDING", "{v}");
    }
    fn wait(self) -> Value {
        loop {
            let v = self.rx.recv_timeout(WAIT).expect("a final reply");
            if v["kind"] != "PENDING" {
                return v;
            }
        }
    }
}

fn request(sock: &Path, req: Value) -> Asked {
    let start = Instant::now();
    let mut stream = loop {
        match UnixStream::connect(sock) {
            Ok(s) => break s,
            Err(e) if start.elapsed() > WAIT => panic!("connect {}: {e}", sock.display()),
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    };
    stream.write_all(format!("{req}\n").as_bytes()).unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stream);
        loop {
            let mut line = String::new();
            if lines.read_line(&mut line).unwrap_or(0) == 0 {
                let _ = tx.send(json!({"kind": "CLOSED"}));
                return;
            }
            let v: Value = serde_json::from_str(&line).unwrap_or(json!({"kind": "GARBLED"}));
            let pending = v["kind"] == "PENDING";
            let _ = tx.send(v);
            if !pending {
                return;
            }
        }
    });
    Asked { rx }
}

/// The human says yes on the terminal, once the prompt has been up long enough.
fn say_yes(t: &Term, from: usize) -> usize {
    let at = t.wait_raw(PROMPT, from);
    std::thread::sleep(ANSWER_DELAY + Duration::from_millis(100));
    t.keys(&["y", "Enter"]);
    at
}

#[test]
fn a_refund_outside_the_policy_runs_once_after_the_human_types_its_phrase_on_the_terminal() {
    let t = Term::start();
    let started = Instant::now();
    let server_key = SecretKey::from_seed(&Zeroizing::new([9u8; 32]));
    let server_id = server_key.public().to_string();

    // 1. The policy: a grant from the principal to the server's key.
    let exp = parley_custody::engine::unix_now() + 3600;
    let g = request(
        &t.sock(),
        json!({"custody": 1, "id": "policy", "op": "grant", "agent": server_id,
               "label": "refund desk policy",
               "reason": "let small store credit run without asking",
               "caveats": [{"can": ["store_credit", "refund"]}, {"verbs": ["COMMIT"]},
                           {"risk": "low"},
                           {"each": {"of": "spend", "max": 2500, "scale": 2, "unit": "USD"}},
                           {"total": {"of": "spend", "max": 10000, "scale": 2, "unit": "USD"}},
                           {"exp": exp}]}),
    );
    g.pending();
    let at = say_yes(&t, 0);
    let granted = g.wait();
    assert_eq!(granted["kind"], "ISSUED", "{granted}");
    let policy = granted["grant"]
        .as_str()
        .expect("the policy grant")
        .to_string();

    // 2–6. The server and the scripted MCP client.
    let store = t.path("store");
    let server = JobServer::new(Setup {
        key: server_key,
        principal: t.principal.parse().unwrap(),
        policy_grant: Some(policy),
        tightening: read_tightening(&json!({})),
        store: FileStore::new(&store),
        clock: Arc::new(SystemClock),
    });
    let term = Arc::new(Mutex::new((t, at)));
    let human = Arc::clone(&term);
    let sock = term.lock().unwrap().0.sock();
    let store_for_human = store.clone();
    let done: Arc<Mutex<Option<std::thread::JoinHandle<Value>>>> = Arc::new(Mutex::new(None));
    let done_in = Arc::clone(&done);
    let on_code = move |code: &str| {
        let code = code.to_string();
        let human = Arc::clone(&human);
        let sock = sock.clone();
        let store = store_for_human.clone();
        let handle = std::thread::spawn(move || {
            // What `parley approve CODE` sends; custody reviews the plan.
            let agent = SecretKey::from_seed(&Zeroizing::new([7u8; 32])).public();
            let asked = request(
                &sock,
                json!({"custody": 1, "id": "job", "op": "approve_code", "code": code,
                       "agent": agent.to_string(), "dialect": "yea1"}),
            );
            let job = parley_core::job::decode_code(&code).expect("a job code");
            let hash = parley_core::job::JobPlan::from_job(&job.job)
                .expect("the code's plan")
                .hash;
            asked.pending();
            let (t, from) = &mut *human.lock().unwrap();
            // The review: the plan and the phrase, then the prompt.
            let shown = t.wait_raw("JOB         refund", *from);
            let at = say_yes(t, shown);
            // A refund cannot be undone: custody asks for "approve" first,
            // then for the plan's own phrase.
            let at = t.wait_raw("cannot be undone. Type \"approve\" to confirm: ", at);
            t.keys(&["-l", "approve"]);
            t.keys(&["Enter"]);
            let at = t.wait_raw("Type \"A-1001\" to approve this plan: ", at);
            t.keys(&["-l", "A-1001"]);
            t.keys(&["Enter"]);
            *from = t.wait_raw("approved: the consent was signed", at);
            let fin = asked.wait();
            if let Some(token) = fin["grant"].as_str() {
                // What `parley approve` does with the reply.
                parley_custody_client::yea_store::write_consent(&store, &hash, token).unwrap();
            }
            fin
        });
        *done_in.lock().unwrap() = Some(handle);
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let transcript = rt.block_on(run_client(ClientScript {
        server: ServerAt::InProcess(Box::new(server)),
        order: "A-1001".into(),
        store: store.clone(),
        wait: WAIT,
        on_code: Box::new(on_code),
        within_policy: true,
    }));
    let fin = done
        .lock()
        .unwrap()
        .take()
        .map(|h| h.join().unwrap())
        .unwrap_or(Value::Null);
    let transcript = transcript.unwrap_or_else(|e| panic!("{e}\ncustody answered: {fin}"));
    let text = transcript.join("\n");
    assert_eq!(fin["kind"], "APPROVED", "{fin}");
    let ran: Vec<&String> = transcript
        .iter()
        .filter(|l| l.starts_with("server: RAN: "))
        .collect();
    assert_eq!(ran.len(), 2, "{text}");
    assert!(ran[0].contains("store credit"), "{text}");
    assert!(ran[1].contains("Refund 30.00 USD to Chen"), "{text}");
    assert!(text.contains("already used once; nothing ran"), "{text}");
    // The terminal showed the plan before the human typed: the tool, the
    // server's summary, what it uses, and the phrase to type.
    let (t, _) = &*term.lock().unwrap();
    let raw = String::from_utf8_lossy(&t.raw()[at..]).into_owned();
    for needle in [
        "JOB         refund",
        "Refund 30.00 USD to Chen for order A-1001",
        "30.00 USD",
        "to approve  type \"A-1001\"",
    ] {
        assert!(raw.contains(needle), "{needle:?} on the terminal:\n{raw}");
    }
    eprintln!(
        "the MCP loop through the daemon took {:?}",
        started.elapsed()
    );
}

//! The headless daemon on a real terminal, as the pty tests drive it
//! (`terminal_prompt.rs`, `mcp_jobs_pty.rs`): the real `parley-custodyd` in
//! its own tmux server (200×50), inside a private D-Bus session with a real,
//! unlocked gnome-keyring; what it writes read as raw bytes (`tmux
//! pipe-pane`) and as the screen (`tmux capture-pane`); keys typed with
//! `tmux send-keys`; requests sent by a real client on its socket.

use super::{not_on_path, UNLOCK};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long any one thing may take before the test says what it waited for.
pub const WAIT: Duration = Duration::from_secs(90);

/// The real prompt's last line.
pub const PROMPT: &str = "approve? [y/N] ";

static SERVERS: AtomicUsize = AtomicUsize::new(0);

/// The daemon on its own terminal.
pub struct Term {
    server: String,
    dir: tempfile::TempDir,
    /// The principal key the daemon created at its first start.
    pub principal: String,
}

/// `s` quoted for `sh`.
pub fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

impl Term {
    pub fn start() -> Term {
        let missing = not_on_path(&[
            "tmux",
            "dbus-run-session",
            "dbus-send",
            "gnome-keyring-daemon",
        ]);
        assert!(
            missing.is_empty(),
            "the terminal tests need {missing:?}: apt-get install -y --no-install-recommends tmux gnome-keyring dbus-x11"
        );
        let dir = tempfile::Builder::new()
            .prefix("parley-tty")
            .tempdir()
            .unwrap();
        let d = dir.path();
        for sub in ["home", "run", "data", "xdg"] {
            std::fs::create_dir_all(d.join(sub)).unwrap();
        }
        std::fs::set_permissions(d.join("run"), std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::set_permissions(d.join("data"), std::fs::Permissions::from_mode(0o700)).unwrap();
        let server = format!(
            "parley-tty-{}-{}",
            std::process::id(),
            SERVERS.fetch_add(1, Ordering::SeqCst)
        );
        let bin = env!("CARGO_BIN_EXE_parley-custodyd");
        let script = format!(
            "while [ ! -e {go} ]; do sleep 0.05; done\n\
             exec env -i HOME={home} PATH=/usr/local/bin:/usr/bin:/bin XDG_RUNTIME_DIR={run} \
             XDG_DATA_HOME={xdg} KEYRING_PW=tty-test-pw RUST_LOG=info \
             dbus-run-session -- sh -c {unlock} sh {bin} --socket {sock} --data-dir {data} --namespace tty-test\n",
            go = sh_quote(&d.join("go").display().to_string()),
            home = sh_quote(&d.join("home").display().to_string()),
            run = sh_quote(&d.join("run").display().to_string()),
            xdg = sh_quote(&d.join("xdg").display().to_string()),
            unlock = sh_quote(UNLOCK),
            bin = sh_quote(bin),
            sock = sh_quote(&d.join("run/custody.sock").display().to_string()),
            data = sh_quote(&d.join("data").display().to_string()),
        );
        std::fs::write(d.join("run.sh"), script).unwrap();
        std::fs::write(d.join("tmux.conf"), "set -g history-limit 50000\n").unwrap();
        let t = Term {
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
        let mut t = t;
        t.wait_raw("Create one now? [y/N]", 0);
        t.keys(&["y", "Enter"]);
        t.wait_raw("listening on", 0);
        let hello = t.request(json!({"custody": 1, "id": "h", "op": "hello"}));
        t.principal = hello["principals"][0]["key"]
            .as_str()
            .expect("HELLO names the principal")
            .to_string();
        t
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn sock(&self) -> PathBuf {
        self.path("run/custody.sock")
    }

    pub fn tmux(&self, args: &[&str]) -> String {
        tmux(&self.server, args)
    }

    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "main"];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }

    /// Everything the daemon wrote to its terminal so far.
    pub fn raw(&self) -> Vec<u8> {
        std::fs::read(self.path("raw.log")).unwrap_or_default()
    }

    pub fn raw_text(&self) -> String {
        String::from_utf8_lossy(&self.raw()).into_owned()
    }

    /// The visible screen (50 lines).
    pub fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-J", "-t", "main"])
    }

    /// Waits until `needle` was written after byte `from`; returns the byte after it.
    pub fn wait_raw(&self, needle: &str, from: usize) -> usize {
        let start = Instant::now();
        loop {
            let raw = self.raw();
            if let Some(i) = find(&raw[from.min(raw.len())..], needle.as_bytes()) {
                return from + i + needle.len();
            }
            if start.elapsed() > WAIT {
                panic!(
                    "timed out waiting for {needle:?} on the terminal; it shows:\n{}\n--- log ---\n{}",
                    self.screen(),
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The daemon's log file.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.path("data/custodyd.log")).unwrap_or_default()
    }

    /// Sends one request on its own connection and waits for its final reply.
    pub fn request(&self, req: Value) -> Value {
        self.submit(req).wait()
    }

    /// Sends one request on its own connection; the connection stays open
    /// (closing it would withdraw the request) until the final reply.
    pub fn submit(&self, req: Value) -> Asked {
        submit(&self.sock(), req)
    }
}

impl Drop for Term {
    fn drop(&mut self) {
        kill_server(&self.server);
    }
}

/// Connects to `path`, waiting (up to [`WAIT`]) for the daemon to listen.
pub fn connect(path: &Path) -> UnixStream {
    let start = Instant::now();
    loop {
        match UnixStream::connect(path) {
            Ok(s) => return s,
            Err(e) if start.elapsed() > WAIT => panic!("connect {}: {e}", path.display()),
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// A request in flight.
pub struct Asked {
    pub rx: mpsc::Receiver<Value>,
}

impl Asked {
    /// Waits for the first `PENDING` (the request is queued for the human).
    pub fn pending(&self) {
        let v = self.rx.recv_timeout(WAIT).expect("a reply");
        assert_eq!(v["kind"], "PENDING", "{v}");
    }
    /// Waits for the final reply.
    pub fn wait(self) -> Value {
        loop {
            let v = self.rx.recv_timeout(WAIT).expect("a final reply");
            if v["kind"] != "PENDING" {
                return v;
            }
        }
    }
}

/// Where `needle` first stands in `hay`.
pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Runs `tmux -L server ARGS…` and returns what it printed (a failure
/// fails the test with tmux's own words).
pub fn tmux(server: &str, args: &[&str]) -> String {
    let out = Command::new("tmux")
        .arg("-L")
        .arg(server)
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

/// Ends tmux server `server` and what runs in it (quietly: it may be gone).
pub fn kill_server(server: &str) {
    let _ = Command::new("tmux")
        .args(["-L", server, "kill-server"])
        .stderr(Stdio::null())
        .status();
}

/// Sends one request to the socket at `sock` on its own connection; the
/// connection stays open (closing it would withdraw the request) until the
/// final reply.
pub fn submit(sock: &Path, req: Value) -> Asked {
    let (tx, rx) = mpsc::channel();
    let mut stream = connect(sock);
    stream
        .write_all(format!("{req}\n").as_bytes())
        .expect("send the request");
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stream);
        loop {
            let mut line = String::new();
            match lines.read_line(&mut line) {
                Ok(0) | Err(_) => {
                    let _ = tx.send(json!({"kind": "CLOSED"}));
                    return;
                }
                Ok(_) => {}
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

//! The desktop service as the desktop starts it, and the clients of its UI
//! channel: the real `parley-custodyd --approver desktop --hidden`, its UI
//! the relay of [`super::ui_relay`] (so the test is the UI the service
//! starts, on the channel it inherits), and raw connections on the UI
//! socket's path (the door) as any other process could make them. One
//! start-up and one client for every test of the channel, so that a change
//! in how the service starts or how the UI speaks is made once.

use super::lines::json_lines;
use super::ui_relay::Relay;
use serde_json::{json, Value};
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long the service, one answer or one line may take.
pub const WAIT: Duration = Duration::from_secs(60);

/// `settings.json` with OS authentication off: for tests of the channel's
/// own rules (OS authentication is tested with a real polkitd elsewhere).
pub const STEP_UP_NEVER: &str = r#"{"step_up": {"rule": "never"}}"#;

/// What the UI says first on any connection.
fn hello() -> Value {
    json!({"hello": {"ui": "parley-custody-ui", "version": "0.1.0", "pid": std::process::id()}})
}

/// The service, killed when dropped.
pub struct Service {
    child: Child,
    /// Its data directory (`--data-dir`).
    pub data: PathBuf,
    /// The agents' socket.
    pub sock: PathBuf,
    /// The UI socket's path: the door.
    pub ui: PathBuf,
    log: PathBuf,
    relay: Relay,
}

impl Service {
    /// Starts the service with everything in `dir`, `settings` (if any)
    /// written as its `settings.json` first and `env` added to its
    /// environment; returns once both sockets are there.
    pub fn start(dir: &Path, settings: Option<&str>, env: &[(&str, &str)]) -> Service {
        let data = dir.join("custody");
        std::fs::create_dir_all(&data).unwrap();
        if let Some(settings) = settings {
            std::fs::write(data.join("settings.json"), settings).unwrap();
        }
        let relay = Relay::install(dir);
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
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("start parley-custodyd");
        let s = Service {
            child,
            data,
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

    /// The service's process id (for polkit's text agent).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What the service logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Asks at the door (the socket path) for the main window, as the app
    /// started from the menu does; the answer.
    pub fn knock(&self) -> Value {
        let mut door = Door::connect(&self.ui);
        door.send(
            json!({"id": 1, "window": "main", "call": "open_window", "args": {"kind": "main"}}),
        );
        door.recv()
    }

    /// The next UI the service starts, once it is connected and said hello.
    pub fn next_ui(&self) -> Ui {
        let (stream, started) = self.relay.next(WAIT, || self.log());
        Ui::over(stream, started)
    }

    /// Knocks, and the UI the service starts for it.
    pub fn ui(&self) -> Ui {
        let answer = self.knock();
        assert!(answer.get("ok").is_some(), "the door opens main: {answer}");
        self.next_ui()
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A raw connection on the socket path: lines as they come, then
/// `{"closed": true}`.
pub struct Door {
    out: UnixStream,
    rx: mpsc::Receiver<Value>,
}

impl Door {
    /// Connects without saying anything.
    pub fn raw(path: &Path) -> Door {
        let s = UnixStream::connect(path).expect("connect to the channel's path");
        let out = s.try_clone().unwrap();
        let rx = json_lines(s, Some(json!({"closed": true})));
        Door { out, rx }
    }

    /// Connects and says hello as the UI does; the service's answer.
    pub fn connect(path: &Path) -> Door {
        let mut d = Door::raw(path);
        d.send(hello());
        let hello = d.recv();
        assert_eq!(hello["hello"]["service"], "parley-custodyd", "{hello}");
        assert_eq!(hello["hello"]["door"], true, "{hello}");
        d
    }

    pub fn send(&mut self, v: Value) {
        let _ = self.out.write_all(format!("{v}\n").as_bytes());
    }

    pub fn recv(&mut self) -> Value {
        self.rx.recv_timeout(WAIT).expect("a line from the service")
    }

    /// The lines until the service closes the connection (within `wait`).
    pub fn until_closed(&mut self, wait: Duration) -> Vec<Value> {
        let end = Instant::now() + wait;
        let mut seen = Vec::new();
        loop {
            let left = end
                .checked_duration_since(Instant::now())
                .unwrap_or_else(|| panic!("still open after {wait:?}; it sent {seen:?}"));
            match self.rx.recv_timeout(left) {
                Ok(v) if v.get("closed").is_some() => return seen,
                Ok(v) => seen.push(v),
                Err(_) => panic!("still open after {wait:?}; it sent {seen:?}"),
            }
        }
    }
}

/// The UI connection the service started: calls answered by id, events
/// kept apart.
pub struct Ui {
    pub out: UnixStream,
    rx: mpsc::Receiver<Value>,
    events: Vec<Value>,
    next: u64,
    /// How the relay was started (`argv`, `fd`, `pid`).
    pub started: Value,
    /// How long one call's answer may take ([`WAIT`] unless a test waits
    /// on something slower, such as polkit after a wrong password).
    pub wait: Duration,
}

impl Ui {
    /// The channel `s` the service handed the relay it started as
    /// `started`: checks it was inherited, then says hello.
    pub fn over(s: UnixStream, started: Value) -> Ui {
        let out = s.try_clone().unwrap();
        let rx = json_lines(s, Some(json!({"closed": true})));
        let mut ui = Ui {
            out,
            rx,
            events: Vec::new(),
            next: 1,
            started,
            wait: WAIT,
        };
        assert_eq!(
            ui.started["fd"], "0",
            "the channel is standard input: {}",
            ui.started
        );
        assert_eq!(ui.started["socket_env"], Value::Null, "{}", ui.started);
        ui.send(hello());
        let hello = ui.recv();
        assert_eq!(hello["hello"]["service"], "parley-custodyd", "{hello}");
        assert_eq!(hello["hello"].get("door"), None, "{hello}");
        ui
    }

    /// What the service started this UI to show (`--open …`).
    pub fn opened_with(&self) -> String {
        let argv = self.started["argv"].as_array().expect("argv");
        assert_eq!(argv[0], "--open", "{argv:?}");
        argv[1].as_str().unwrap().to_string()
    }

    /// Kills the UI process (the relay) with SIGKILL.
    pub fn kill(self) {
        let pid = self.started["pid"].as_i64().expect("the relay's pid");
        Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status()
            .expect("kill");
    }

    pub fn send(&mut self, v: Value) {
        self.out.write_all(format!("{v}\n").as_bytes()).unwrap();
    }

    pub fn recv(&mut self) -> Value {
        self.rx.recv_timeout(WAIT).expect("a line from the service")
    }

    pub fn note(&mut self, window: &str, note: &str) {
        self.send(json!({"window": window, "note": note}));
    }

    /// Sends a call from `window`; its answer comes from [`Ui::answer`].
    pub fn start(&mut self, window: &str, call: &str, args: Value) -> u64 {
        let id = self.next;
        self.next += 1;
        self.send(json!({"id": id, "window": window, "call": call, "args": args}));
        id
    }

    /// The answer to call `id` within [`Ui::wait`]: `Ok(value)`, or a
    /// refusal (`{code, message}`) given back as `Err("code: message")`.
    /// Events that come first are kept for [`Ui::event`].
    pub fn answer(&mut self, id: u64) -> Result<Value, String> {
        let end = Instant::now() + self.wait;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            let v = self
                .rx
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no answer to call {id} in {:?}", self.wait));
            if v["id"] == id {
                return match v.get("ok") {
                    Some(ok) => Ok(ok.clone()),
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

    /// A call from `window`, and its answer.
    pub fn call(&mut self, window: &str, call: &str, args: Value) -> Result<Value, String> {
        let id = self.start(window, call, args);
        self.answer(id)
    }

    /// Waits for an event matching `f` (kept or new).
    pub fn event(&mut self, f: impl Fn(&Value) -> bool) -> Value {
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

//! Finding the custody service, and starting it when it is not running.
//!
//! This process holds no key: everything it shows comes from
//! `parley-custodyd` over the UI socket. When nothing listens there, it
//! starts the service (desktop approver, no window of its own, the
//! pass-through flags) detached in its own process group, so that closing
//! the last window, or this process dying, never stops custody.

use std::ffi::OsString;
use std::io;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Where the UI socket is, when `--ui-socket` does not say.
pub const SOCKET_ENV: &str = "PARLEY_CUSTODY_UI_SOCKET";
/// Which service binary to start, when set.
pub const BINARY_ENV: &str = "PARLEY_CUSTODYD";
/// The service binary's name.
pub const BINARY: &str = "parley-custodyd";
/// How long a service this process started has to open the UI socket.
const START_TIMEOUT: Duration = Duration::from_secs(5);
/// How often to try connecting meanwhile.
const RETRY_EVERY: Duration = Duration::from_millis(100);

/// Why this process could not reach the service.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// No `--ui-socket`, no `PARLEY_CUSTODY_UI_SOCKET` and no `XDG_RUNTIME_DIR`.
    #[error(
        "no UI socket: pass --ui-socket PATH or set PARLEY_CUSTODY_UI_SOCKET or XDG_RUNTIME_DIR"
    )]
    NoRuntimeDir,
    /// Connecting failed for another reason than nothing listening.
    #[error("cannot connect to custody at {path}: {source}")]
    Connect {
        /// The socket.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The service binary would not start.
    #[error("cannot start {binary}: {source}")]
    Spawn {
        /// The binary.
        binary: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The service this process started exited with a failure.
    #[error(
        "{binary} exited ({status}) without opening the UI socket {path}; its messages are above"
    )]
    Exited {
        /// The binary.
        binary: PathBuf,
        /// Its exit status.
        status: ExitStatus,
        /// The socket.
        path: PathBuf,
    },
    /// The service did not open the socket in time.
    #[error("{binary} was started but nothing listens on {path} after {secs} s")]
    Timeout {
        /// The binary.
        binary: PathBuf,
        /// The socket.
        path: PathBuf,
        /// How long this process waited.
        secs: u64,
    },
}

/// The UI socket: `flag`, else `PARLEY_CUSTODY_UI_SOCKET`, else
/// `$XDG_RUNTIME_DIR/parley-custody-ui/ui.sock` (`env` looks variables up;
/// empty counts as unset).
pub fn socket_path(
    flag: Option<&Path>,
    env: impl Fn(&str) -> Option<OsString>,
) -> Result<PathBuf, ServiceError> {
    if let Some(p) = flag {
        return Ok(p.to_path_buf());
    }
    let set = |name: &str| env(name).filter(|v| !v.is_empty());
    if let Some(p) = set(SOCKET_ENV) {
        return Ok(PathBuf::from(p));
    }
    match set("XDG_RUNTIME_DIR") {
        Some(dir) => Ok(PathBuf::from(dir).join("parley-custody-ui").join("ui.sock")),
        None => Err(ServiceError::NoRuntimeDir),
    }
}

/// The service binary: `PARLEY_CUSTODYD`, else the `parley-custodyd` next to
/// `exe` (this binary, so an installed or built pair goes together), else
/// `parley-custodyd` on `PATH`.
pub fn binary(env: impl Fn(&str) -> Option<OsString>, exe: Option<&Path>) -> PathBuf {
    if let Some(b) = env(BINARY_ENV).filter(|v| !v.is_empty()) {
        return PathBuf::from(b);
    }
    if let Some(sibling) = exe.and_then(Path::parent).map(|d| d.join(BINARY)) {
        if sibling.is_file() {
            return sibling;
        }
    }
    PathBuf::from(BINARY)
}

/// The service's own flags, passed through unchanged to a service this
/// process starts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Passthrough {
    /// `--socket`.
    pub socket: Option<PathBuf>,
    /// `--data-dir`.
    pub data_dir: Option<PathBuf>,
    /// `--agents-group`.
    pub agents_group: Option<String>,
    /// `--allow-uid`, each.
    pub allow_uid: Vec<u32>,
    /// `--namespace`.
    pub namespace: Option<String>,
}

impl Passthrough {
    /// The service's command line: the desktop approver, no window of its
    /// own (this process opens it), then the pass-through flags.
    pub fn service_args(&self) -> Vec<OsString> {
        let mut a: Vec<OsString> = vec!["--approver".into(), "desktop".into(), "--hidden".into()];
        let mut flag = |name: &str, value: OsString| {
            a.push(name.into());
            a.push(value);
        };
        if let Some(s) = &self.socket {
            flag("--socket", s.into());
        }
        if let Some(d) = &self.data_dir {
            flag("--data-dir", d.into());
        }
        if let Some(g) = &self.agents_group {
            flag("--agents-group", g.into());
        }
        for uid in &self.allow_uid {
            flag("--allow-uid", uid.to_string().into());
        }
        if let Some(n) = &self.namespace {
            flag("--namespace", n.into());
        }
        a
    }
}

/// Whether a connect error means nothing listens (so start the service).
fn nobody_listens(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused
    )
}

/// Connects to the service at `path`, starting it first if nothing listens.
pub fn connect_or_start(path: &Path, pass: &Passthrough) -> Result<UnixStream, ServiceError> {
    match UnixStream::connect(path) {
        Ok(s) => return Ok(s),
        Err(e) if nobody_listens(&e) => {}
        Err(source) => {
            return Err(ServiceError::Connect {
                path: path.to_path_buf(),
                source,
            })
        }
    }
    let exe = std::env::current_exe().ok();
    let bin = binary(|k| std::env::var_os(k), exe.as_deref());
    tracing::info!(binary = %bin.display(), socket = %path.display(), "custody is not running: starting it");
    let exited = start(&bin, path, pass)?;
    wait_for(path, &bin, &exited, START_TIMEOUT)
}

/// Starts the service detached (own process group, stdin closed, our
/// stdout and stderr) and reaps it on a thread, which reports its exit.
fn start(
    bin: &Path,
    path: &Path,
    pass: &Passthrough,
) -> Result<mpsc::Receiver<ExitStatus>, ServiceError> {
    let mut child = Command::new(bin)
        .args(pass.service_args())
        .env(SOCKET_ENV, path)
        .stdin(Stdio::null())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .process_group(0)
        .spawn()
        .map_err(|source| ServiceError::Spawn {
            binary: bin.to_path_buf(),
            source,
        })?;
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("reap-custodyd".into())
        .spawn(move || {
            if let Ok(status) = child.wait() {
                let _ = tx.send(status);
            }
        })
        .map_err(|source| ServiceError::Spawn {
            binary: bin.to_path_buf(),
            source,
        })?;
    Ok(rx)
}

/// Retries connecting to `path` every [`RETRY_EVERY`] for `timeout`. A
/// service that exits with a failure ends the wait at once; one that exits
/// cleanly (it found another service starting) does not.
fn wait_for(
    path: &Path,
    bin: &Path,
    exited: &mpsc::Receiver<ExitStatus>,
    timeout: Duration,
) -> Result<UnixStream, ServiceError> {
    let deadline = Instant::now() + timeout;
    loop {
        match UnixStream::connect(path) {
            Ok(s) => return Ok(s),
            Err(e) if nobody_listens(&e) => {}
            Err(source) => {
                return Err(ServiceError::Connect {
                    path: path.to_path_buf(),
                    source,
                })
            }
        }
        if let Ok(status) = exited.try_recv() {
            if !status.success() {
                return Err(ServiceError::Exited {
                    binary: bin.to_path_buf(),
                    status,
                    path: path.to_path_buf(),
                });
            }
        }
        if Instant::now() >= deadline {
            return Err(ServiceError::Timeout {
                binary: bin.to_path_buf(),
                path: path.to_path_buf(),
                secs: timeout.as_secs(),
            });
        }
        std::thread::sleep(RETRY_EVERY);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::os::unix::net::UnixListener;

    fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let m: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn socket_path_resolution() {
        let flag = Path::new("/tmp/flag.sock");
        let all = env_of(&[
            (SOCKET_ENV, "/tmp/env.sock"),
            ("XDG_RUNTIME_DIR", "/run/user/1000"),
        ]);
        assert_eq!(socket_path(Some(flag), &all).unwrap(), flag);
        assert_eq!(socket_path(None, &all).unwrap(), Path::new("/tmp/env.sock"));
        let runtime = env_of(&[(SOCKET_ENV, ""), ("XDG_RUNTIME_DIR", "/run/user/1000")]);
        assert_eq!(
            socket_path(None, &runtime).unwrap(),
            Path::new("/run/user/1000/parley-custody-ui/ui.sock")
        );
        assert!(matches!(
            socket_path(None, env_of(&[("XDG_RUNTIME_DIR", "")])),
            Err(ServiceError::NoRuntimeDir)
        ));
    }

    #[test]
    fn binary_resolution() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("parley-custody");
        assert_eq!(
            binary(env_of(&[(BINARY_ENV, "/opt/custodyd")]), Some(&exe)),
            Path::new("/opt/custodyd")
        );
        assert_eq!(
            binary(env_of(&[]), Some(&exe)),
            Path::new(BINARY),
            "no sibling: PATH"
        );
        std::fs::write(dir.path().join(BINARY), b"").unwrap();
        assert_eq!(
            binary(env_of(&[(BINARY_ENV, "")]), Some(&exe)),
            dir.path().join(BINARY)
        );
        assert_eq!(binary(env_of(&[]), None), Path::new(BINARY));
    }

    #[test]
    fn service_command_line() {
        assert_eq!(
            Passthrough::default().service_args(),
            ["--approver", "desktop", "--hidden"].map(OsString::from)
        );
        let p = Passthrough {
            socket: Some("/s.sock".into()),
            data_dir: Some("/data".into()),
            agents_group: Some("agents".into()),
            allow_uid: vec![1001, 1002],
            namespace: Some("test".into()),
        };
        assert_eq!(
            p.service_args(),
            [
                "--approver",
                "desktop",
                "--hidden",
                "--socket",
                "/s.sock",
                "--data-dir",
                "/data",
                "--agents-group",
                "agents",
                "--allow-uid",
                "1001",
                "--allow-uid",
                "1002",
                "--namespace",
                "test"
            ]
            .map(OsString::from)
        );
    }

    #[test]
    fn connects_to_a_running_service_without_starting_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ui.sock");
        let _listener = UnixListener::bind(&path).unwrap();
        assert!(connect_or_start(&path, &Passthrough::default()).is_ok());
    }

    #[test]
    fn a_started_service_that_fails_ends_the_wait() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ui.sock");
        let rx = start(Path::new("false"), &path, &Passthrough::default()).unwrap();
        let t = Instant::now();
        let e = wait_for(&path, Path::new("false"), &rx, Duration::from_secs(5)).unwrap_err();
        assert!(matches!(e, ServiceError::Exited { .. }), "{e}");
        assert!(t.elapsed() < Duration::from_secs(4));
    }

    #[test]
    fn a_started_service_that_listens_late_is_reached() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ui.sock");
        // `true` exits cleanly at once (as a second service does when another
        // is starting); the socket appears later.
        let rx = start(Path::new("true"), &path, &Passthrough::default()).unwrap();
        let p = path.clone();
        let binder = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            UnixListener::bind(p).unwrap()
        });
        let s = wait_for(&path, Path::new("true"), &rx, Duration::from_secs(5));
        assert!(s.is_ok(), "a clean exit does not end the wait");
        drop(binder.join().unwrap());
    }

    #[test]
    fn nothing_listening_times_out() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ui.sock");
        let (_tx, rx) = mpsc::channel();
        let e = wait_for(&path, Path::new("x"), &rx, Duration::from_millis(250)).unwrap_err();
        assert!(matches!(e, ServiceError::Timeout { .. }), "{e}");
    }

    #[test]
    fn spawn_failure_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let e = start(
            &dir.path().join("missing"),
            &dir.path().join("s"),
            &Passthrough::default(),
        )
        .unwrap_err();
        assert!(matches!(e, ServiceError::Spawn { .. }), "{e}");
    }
}

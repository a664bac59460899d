//! A test OS user's terminal: a tmux server of the test's own, its panes
//! running as that user, what they show read as raw bytes (`tmux
//! pipe-pane`) and keys typed with `tmux send-keys`; and the headless
//! daemon started there as the user, in its own D-Bus session with its
//! keyring unlocked, so that polkit's text agent asks on the same terminal.
//! (`super::terminal` is the same for the daemon as the test's own user.)

use super::os_user::{run, UserDirs};
use super::terminal::{kill_server, sh_quote};
use super::UNLOCK;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long the terminal may take to show what the test waits for.
pub const WAIT: Duration = Duration::from_secs(60);

/// A tmux server of the test's, killed when dropped with what the test
/// user left running (the service, its bus, the keyring).
pub struct Tmux {
    name: String,
    user: &'static str,
}

impl Tmux {
    pub fn new(user: &'static str) -> Tmux {
        Tmux {
            name: format!("{user}-{}", std::process::id()),
            user,
        }
    }

    /// Runs `tmux -L <ours> ARGS…`, which must succeed; what it printed.
    pub fn cmd(&self, args: &[&str]) -> String {
        let out = run(Command::new("tmux")
            .arg("-L")
            .arg(&self.name)
            .args(args)
            .stdin(Stdio::null()));
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A new 200×50 session `name` running `command`, everything it shows
    /// appended to `screen`.
    pub fn session(&self, name: &str, command: &str, screen: Option<&Path>) {
        self.cmd(&[
            "new-session",
            "-d",
            "-s",
            name,
            "-x",
            "200",
            "-y",
            "50",
            command,
        ]);
        if let Some(screen) = screen {
            self.cmd(&[
                "pipe-pane",
                "-o",
                "-t",
                name,
                &format!("cat >> {}", sh_quote(&screen.display().to_string())),
            ]);
        }
    }

    /// Types `keys` into session `target`.
    pub fn keys(&self, target: &str, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", target];
        args.extend_from_slice(keys);
        self.cmd(&args);
    }

    /// The headless daemon (`--approver terminal`) as the user, on a
    /// terminal of the user's own (`script`) in session `daemon`, with
    /// `dirs`, its keyring's password, its key namespace and `env` added;
    /// everything it shows appended to `screen`.
    pub fn terminal_daemon(
        &self,
        dirs: &UserDirs,
        keyring: (&str, &str),
        env: &[(&str, &str)],
        screen: &Path,
    ) {
        let (keyring_pw, namespace) = keyring;
        let sock = dirs.run.join("custody.sock");
        let daemon = format!(
            "exec dbus-run-session -- sh -c {unlock} sh {bin} --approver terminal --socket {sock} --data-dir {data}",
            unlock = sh_quote(UNLOCK),
            bin = sh_quote(env!("CARGO_BIN_EXE_parley-custodyd")),
            sock = sh_quote(&sock.display().to_string()),
            data = sh_quote(&dirs.data.display().to_string()),
        );
        let extra: String = env
            .iter()
            .map(|(k, v)| format!("{k}={} ", sh_quote(v)))
            .collect();
        let pane = format!(
            "exec runuser -u {user} -- env -i HOME={home} PATH=/usr/local/bin:/usr/bin:/bin \
             XDG_RUNTIME_DIR={run} XDG_DATA_HOME={data} KEYRING_PW={keyring_pw} RUST_LOG=info \
             PARLEY_CUSTODY_NAMESPACE={namespace} {extra}script -qfec {daemon} /dev/null",
            user = self.user,
            home = sh_quote(&dirs.home.display().to_string()),
            run = sh_quote(&dirs.run.display().to_string()),
            data = sh_quote(&dirs.data.display().to_string()),
            daemon = sh_quote(&daemon),
        );
        self.session("daemon", &format!("sleep 0.5; {pane}"), Some(screen));
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        kill_server(&self.name);
        let _ = Command::new("pkill")
            .args(["-KILL", "-u", self.user])
            .status();
    }
}

/// The pane's text so far (raw, as the terminal received it).
pub fn pane_log(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Waits until `needle` appears in `log` after byte `from`; the byte after it.
pub fn wait_in(log: &Path, needle: &str, from: usize) -> usize {
    let start = Instant::now();
    loop {
        let text = pane_log(log);
        if let Some(i) = text.get(from..).and_then(|t| t.find(needle)) {
            return from + i + needle.len();
        }
        assert!(
            start.elapsed() < WAIT,
            "timed out waiting for {needle:?}; the terminal shows:\n{}",
            text.get(from..).unwrap_or(&text)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

//! Unfreezing custody needs the human's password (issue 30, item 1), with
//! real parts: an ordinary OS user with a password (`parley-t-freeze`,
//! created here; polkit asks root nothing), the real polkitd on the real
//! system bus (scripts/start-polkit.sh), and the real `parley custody
//! freeze|unfreeze` on a pty (`script`), where polkit's text agent asks.
//!
//! What it stops: anyone at the user's terminal (or a script running as the
//! user) ending a freeze without the password: freezing asks nothing, a
//! wrong password leaves custody frozen, the right one unfreezes it and the
//! audit row says the OS authenticated it.

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const USER: &str = "parley-t-freeze";

fn run(cmd: &mut Command) -> Output {
    cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"))
}

fn require_root() -> bool {
    if nix::unistd::geteuid().is_root() {
        return true;
    }
    if std::env::var_os("PARLEY_SKIP_ROOT_TESTS").is_some() {
        eprintln!("SKIPPED: needs root (PARLEY_SKIP_ROOT_TESTS=1)");
        return false;
    }
    panic!("this test creates an OS user and must run as root (set PARLEY_SKIP_ROOT_TESTS=1 to skip it)");
}

fn as_user(home: &Path) -> Command {
    let mut c = Command::new("runuser");
    c.args(["-u", USER, "--", "env", "-i"])
        .arg(format!("HOME={}", home.display()))
        .arg("PATH=/usr/local/bin:/usr/bin:/bin");
    c
}

/// `parley custody <args> --data-dir <data>` as the user, on a pty; types
/// `password` at polkit's prompt if one comes. Returns the exit status and
/// everything the terminal showed.
fn on_terminal(
    parley: &Path,
    home: &Path,
    data: &Path,
    args: &str,
    password: Option<&str>,
) -> (bool, String) {
    let inner = format!(
        "{} --json custody {args} --data-dir {}",
        parley.display(),
        data.display()
    );
    let mut child = as_user(home)
        .args(["script", "-qfec", &inner, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("script");
    let screen = Arc::new(Mutex::new(String::new()));
    let mut readers = Vec::new();
    for mut pipe in [
        Box::new(child.stdout.take().unwrap()) as Box<dyn Read + Send>,
        Box::new(child.stderr.take().unwrap()),
    ] {
        let s = screen.clone();
        readers.push(std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                s.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        }));
    }
    let mut stdin = child.stdin.take().unwrap();
    if let Some(p) = password {
        let start = Instant::now();
        while !screen.lock().unwrap().contains("Password:") {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "no password prompt: {}",
                screen.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        writeln!(stdin, "{p}").unwrap();
        stdin.flush().unwrap();
    }
    let status = child.wait().unwrap();
    drop(stdin);
    for r in readers {
        let _ = r.join();
    }
    let text = screen.lock().unwrap().clone();
    (status.success(), text)
}

#[test]
fn unfreezing_needs_the_users_password_and_freezing_asks_nothing() {
    if !require_root() {
        return;
    }
    let _ = run(Command::new("useradd").args([
        "--system",
        "--create-home",
        "--shell",
        "/bin/sh",
        USER,
    ]));
    let password = format!("freeze-Passw0rd-{}", std::process::id());
    let mut chpasswd = Command::new("chpasswd")
        .stdin(Stdio::piped())
        .spawn()
        .expect("chpasswd");
    writeln!(chpasswd.stdin.take().unwrap(), "{USER}:{password}").unwrap();
    assert!(chpasswd.wait().unwrap().success(), "chpasswd");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let polkit = run(Command::new(repo.join("scripts/start-polkit.sh")).arg(USER));
    assert!(
        polkit.status.success(),
        "start-polkit: {}",
        String::from_utf8_lossy(&polkit.stderr)
    );

    // Everything the user needs, where the user may reach it.
    let tmp = tempfile::Builder::new()
        .prefix("parley-freeze-")
        .tempdir()
        .unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let parley: PathBuf = tmp.path().join("parley");
    std::fs::copy(env!("CARGO_BIN_EXE_parley"), &parley).unwrap();
    std::fs::set_permissions(&parley, std::fs::Permissions::from_mode(0o755)).unwrap();
    let home = tmp.path().join("home");
    let data = tmp.path().join("data");
    let user = nix::unistd::User::from_name(USER).unwrap().unwrap();
    for d in [&home, &data] {
        std::fs::create_dir(d).unwrap();
        nix::unistd::chown(d, Some(user.uid), Some(user.gid)).unwrap();
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let status = |home: &Path| -> serde_json::Value {
        let out = run(as_user(home)
            .arg(&parley)
            .args(["--json", "custody", "frozen", "--data-dir"])
            .arg(&data));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };

    // Freezing asks nothing (no terminal, no agent).
    let out = run(as_user(&home)
        .arg(&parley)
        .args(["--json", "custody", "freeze", "--data-dir"])
        .arg(&data)
        .stdin(Stdio::null()));
    assert!(
        out.status.success(),
        "freeze: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(status(&home)["frozen"], true);

    // No terminal to ask on: refused, still frozen.
    let out = run(as_user(&home)
        .arg(&parley)
        .args(["custody", "unfreeze", "--data-dir"])
        .arg(&data)
        .stdin(Stdio::null()));
    assert!(!out.status.success(), "unfrozen with nobody asked");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("custody stays frozen"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(status(&home)["frozen"], true);

    // A wrong password: refused, still frozen.
    let (ok, screen) = on_terminal(&parley, &home, &data, "unfreeze", Some("not-the-password"));
    assert!(!ok, "a wrong password unfroze custody: {screen}");
    assert!(screen.contains("custody stays frozen"), "{screen}");
    assert_eq!(status(&home)["frozen"], true);

    // The user's password: unfrozen, and the row says the OS vouched for it.
    let (ok, screen) = on_terminal(&parley, &home, &data, "unfreeze", Some(&password));
    assert!(ok, "the right password did not unfreeze: {screen}");
    assert!(screen.contains("\"unfrozen\":true"), "{screen}");
    assert_eq!(status(&home)["frozen"], false);
    let rows = run(as_user(&home)
        .arg(&parley)
        .args(["audit", "--jsonl", "--data-dir"])
        .arg(&data));
    let rows = String::from_utf8_lossy(&rows.stdout).to_string();
    let unfrozen = rows
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|r| r["kind"] == "custody_unfrozen")
        .unwrap_or_else(|| panic!("no custody_unfrozen row: {rows}"));
    assert_eq!(unfrozen["confirmed_by"], "os-auth", "{unfrozen}");
}

//! The privileged set-up helper, for real (as root, with real OS users, a
//! real group, a real directory, a real `parley-custodyd` and real
//! connections): it shows what it will do, does exactly that, refuses names
//! and callers it must refuse, and afterwards the agent user reaches
//! custody's socket while another user does not. Custody itself runs with
//! no supplementary groups at all (as a session from before the set-up
//! would), which the set-group-ID socket directory makes enough.
#![cfg(target_os = "linux")]

mod support;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const SETUP: &str = env!("CARGO_BIN_EXE_parley-custody-setup");
const DAEMON: &str = env!("CARGO_BIN_EXE_parley-custodyd");
const AGENT: &str = "parley-t-sa";
const CUSTODY: &str = "parley-t-sc";
const OTHER: &str = "parley-t-so";

fn is_root() -> bool {
    nix::unistd::Uid::effective().is_root()
}

fn uid(name: &str) -> u32 {
    nix::unistd::User::from_name(name)
        .unwrap()
        .unwrap_or_else(|| panic!("no user {name}"))
        .uid
        .as_raw()
}

fn gid(name: &str) -> u32 {
    nix::unistd::User::from_name(name)
        .unwrap()
        .unwrap()
        .gid
        .as_raw()
}

/// Creates `name` once (`support::os_user::system_user` serializes the
/// file's parallel tests' creations).
fn ensure_user(name: &str) {
    support::os_user::system_user(name, "/bin/sh");
}

/// Runs the helper as root, as polkit would for `caller`.
fn setup(caller: Option<&str>, args: &[&str]) -> Output {
    let mut cmd = Command::new(SETUP);
    cmd.arg("agent-user").args(args).env_remove("PKEXEC_UID");
    if let Some(c) = caller {
        cmd.env("PKEXEC_UID", uid(c).to_string());
    }
    cmd.output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A unique group and directory per run, so runs never see each other's state.
struct Names {
    group: String,
    dir: PathBuf,
}

impl Drop for Names {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        let _ = Command::new("groupdel").arg(&self.group).status();
    }
}

fn names() -> Names {
    let n = std::process::id() % 100_000;
    Names {
        group: format!("parley-t-g{n}"),
        dir: PathBuf::from(format!("/srv/parley-custody/t{n}")),
    }
}

fn members(group: &str) -> Vec<String> {
    nix::unistd::Group::from_name(group)
        .unwrap()
        .map(|g| g.mem)
        .unwrap_or_default()
}

/// Connects to `sock` as `user` and says hello in custody protocol v1; the
/// reply line, or the connect error.
fn hello_as(user: &str, sock: &Path) -> Result<String, String> {
    let py = r#"
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
try:
    s.connect(sys.argv[1])
except OSError as e:
    print("connect:", e.strerror); sys.exit(3)
s.sendall(b'{"custody":1,"id":"a1","op":"hello"}\n')
try:
    print(s.makefile().readline().strip())
except OSError as e:
    print("no reply:", e); sys.exit(4)
"#;
    let out = Command::new("runuser")
        .args(["-u", user, "--", "python3", "-c", py])
        .arg(sock)
        .output()
        .unwrap();
    let s = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if out.status.success() {
        Ok(s)
    } else {
        Err(s)
    }
}

/// `parley-custodyd` as the custody user with no supplementary groups, on a
/// pty (`script`), keys in a file store, no step-up.
fn start_custody(dir: &Path, group: &str, data: &Path) -> Child {
    let cmd = format!(
        "{DAEMON} --file-store --data-dir {}/custody --socket {}/custody.sock --agents-group {group} --step-up never",
        data.display(),
        dir.display()
    );
    Command::new("setpriv")
        .arg(format!("--reuid={}", uid(CUSTODY)))
        .arg(format!("--regid={}", gid(CUSTODY)))
        .args(["--clear-groups", "--", "script", "-qec", &cmd, "/dev/null"])
        .env("PARLEY_CUSTODY_PASSPHRASE", "a-long-test-passphrase")
        .env("HOME", data)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn another_users_agents_reach_custody_only_after_the_setup_the_human_saw() {
    if !is_root() {
        eprintln!("skipped: needs root (CI runs as root) to create users and groups");
        return;
    }
    for u in [AGENT, CUSTODY, OTHER] {
        ensure_user(u);
    }
    let n = names();
    let dir = n.dir.display().to_string();
    let args = ["--user", AGENT, "--group", &n.group, "--socket-dir", &dir];

    // What it will do, before it does anything.
    let dry = setup(Some(CUSTODY), &[&args[..], &["--dry-run"]].concat());
    assert!(dry.status.success(), "{}", text(&dry));
    let shown = text(&dry);
    assert_eq!(
        shown,
        format!(
            "1. create the group {g}\n2. add the user {AGENT} to the group {g}\n3. add the user {CUSTODY} to the group {g}\n\
             4. make the socket directory {dir} (owner {CUSTODY}, group {g}, mode 2750)\nsocket: {dir}/custody.sock\n",
            g = n.group
        )
    );
    assert!(nix::unistd::Group::from_name(&n.group).unwrap().is_none());
    assert!(!n.dir.exists());
    // Without --yes nothing happens either.
    let no = setup(Some(CUSTODY), &args);
    assert_eq!(no.status.code(), Some(1), "{}", text(&no));
    assert!(nix::unistd::Group::from_name(&n.group).unwrap().is_none());

    // Only for the user who asked, and only plain names.
    let theirs = setup(
        Some(AGENT),
        &[&args[..], &["--custody-user", CUSTODY, "--yes"]].concat(),
    );
    assert_eq!(theirs.status.code(), Some(2));
    assert!(text(&theirs).contains("only set up access to your own custody"));
    for bad in ["root", "../etc", "Agent", "-rf", "a b"] {
        let o = setup(
            Some(CUSTODY),
            &[&format!("--user={bad}"), "--group", &n.group, "--yes"],
        );
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", text(&o));
        assert!(
            text(&o).contains("not an allowed name"),
            "{bad}: {}",
            text(&o)
        );
    }
    let etc = setup(
        Some(CUSTODY),
        &["--user", AGENT, "--socket-dir", "/etc/parley", "--yes"],
    );
    assert_eq!(etc.status.code(), Some(2));
    assert!(text(&etc).contains("is not allowed"));
    let ghost = setup(Some(CUSTODY), &["--user", "parley-t-nobody-here", "--yes"]);
    assert!(text(&ghost).contains("there is no user"));

    let data = tempfile::Builder::new()
        .prefix("parley-setup")
        .tempdir()
        .unwrap();
    std::fs::set_permissions(
        data.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();

    // Carried out: exactly the steps shown.
    let done = setup(Some(CUSTODY), &[&args[..], &["--yes"]].concat());
    assert!(done.status.success(), "{}", text(&done));
    assert!(text(&done).ends_with("done\n"));
    let mut m = members(&n.group);
    m.sort();
    assert_eq!(m, vec![AGENT.to_string(), CUSTODY.to_string()]);
    let meta = std::fs::metadata(&n.dir).unwrap();
    assert_eq!(meta.uid(), uid(CUSTODY));
    assert_eq!(
        meta.gid(),
        nix::unistd::Group::from_name(&n.group)
            .unwrap()
            .unwrap()
            .gid
            .as_raw()
    );
    assert_eq!(meta.mode() & 0o7777, 0o2750);
    // Twice is harmless.
    let again = setup(Some(CUSTODY), &[&args[..], &["--yes"]].concat());
    assert!(
        text(&again).starts_with("Nothing to change"),
        "{}",
        text(&again)
    );

    // Custody (no supplementary groups) listens there; the agent user reaches
    // it, another user does not.
    let sock = n.dir.join("custody.sock");
    let mut custody = start_custody(&n.dir, &n.group, data.path());
    let deadline = Instant::now() + Duration::from_secs(20);
    while !sock.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let agent = hello_as(AGENT, &sock);
    let other = hello_as(OTHER, &sock);
    let _ = custody.kill();
    let _ = custody.wait();
    let agent = agent.unwrap_or_else(|e| panic!("the agent user cannot reach custody: {e}"));
    assert!(agent.contains("\"HELLO\""), "{agent}");
    let other = other.expect_err("a user outside the group reached custody");
    assert!(other.contains("Permission denied"), "{other}");
}

/// `parley-custodyd agent-user` (for servers): as the custody user it shows
/// the plan and changes nothing; with --yes it goes through polkit, and
/// without anyone to type an administrator's password nothing changes.
#[test]
fn the_daemons_agent_user_command_changes_nothing_without_yes_and_polkit() {
    if !is_root() {
        eprintln!("skipped: needs root (CI runs as root) to create users and groups");
        return;
    }
    for u in [AGENT, CUSTODY] {
        ensure_user(u);
    }
    // Names of its own (a Names for the other test's would delete its group when dropped).
    let id = std::process::id() % 100_000;
    let n = Names {
        group: format!("parley-t-d{id}"),
        dir: PathBuf::from(format!("/srv/parley-custody/d{id}")),
    };
    let dir = n.dir.display().to_string();
    let as_custody = |extra: &[&str]| {
        Command::new("runuser")
            .args(["-u", CUSTODY, "--", DAEMON, "agent-user", "--user", AGENT])
            .args(["--group", &n.group, "--socket-dir", &dir])
            .args(extra)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    let shown = as_custody(&[]);
    assert!(shown.status.success(), "{}", text(&shown));
    let t = text(&shown);
    assert!(
        t.starts_with(&format!("1. create the group {}\n", n.group)),
        "{t}"
    );
    assert!(
        t.contains(&format!(
            "4. make the socket directory {dir} (owner {CUSTODY}"
        )),
        "{t}"
    );
    assert!(t.contains("Nothing changed. Run again with --yes"), "{t}");
    assert!(nix::unistd::Group::from_name(&n.group).unwrap().is_none());

    let refused = as_custody(&["--yes"]);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    assert!(
        text(&refused).contains("did not finish") || text(&refused).contains("could not run"),
        "{}",
        text(&refused)
    );
    assert!(nix::unistd::Group::from_name(&n.group).unwrap().is_none());
    assert!(!n.dir.exists());
}

//! The tests' own OS users, for real: custody runs as an ordinary user with
//! a password because polkit asks root nothing, so the tests that need the
//! OS prompt create that user, set its password, start the real polkitd
//! (`scripts/start-polkit.sh`) and give the user directories of its own.
//! Root only; each test names its own user so that tests run at once.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;

/// Runs `cmd` to the end; failing to start it fails the test.
pub fn run(cmd: &mut Command) -> Output {
    cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"))
}

/// Runs `cmd`, which must succeed (else the test fails with its stderr).
pub fn must(cmd: &mut Command) {
    let out = run(cmd);
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The system user `name` (no home; `shell` its login shell, such as
/// `/bin/sh` for a user that runs commands, `/usr/sbin/nologin` for one that
/// only owns processes), created if missing. Creations are serialized
/// within the test binary (its tests run in parallel threads, and
/// `useradd` refuses a concurrent lock of /etc/passwd); a user another
/// binary created meanwhile is fine.
pub fn system_user(name: &str, shell: &str) -> nix::unistd::User {
    static CREATING: Mutex<()> = Mutex::new(());
    let _one_at_a_time = CREATING.lock().unwrap_or_else(|e| e.into_inner());
    let existing = || nix::unistd::User::from_name(name).ok().flatten();
    if existing().is_none() {
        let out = run(Command::new("useradd").args([
            "--system",
            "--no-create-home",
            "--shell",
            shell,
            name,
        ]));
        assert!(
            out.status.success() || existing().is_some(),
            "useradd {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    existing().unwrap_or_else(|| panic!("the OS user {name} exists"))
}

/// `user` exists (a system user with a shell, no home) and its password is
/// `password`.
pub fn ensure_user(user: &str, password: &str) {
    system_user(user, "/bin/sh");
    let mut chpasswd = Command::new("chpasswd")
        .stdin(Stdio::piped())
        .spawn()
        .expect("chpasswd");
    writeln!(chpasswd.stdin.take().unwrap(), "{user}:{password}").unwrap();
    assert!(chpasswd.wait().unwrap().success(), "chpasswd");
}

/// polkitd up on the system bus (`scripts/start-polkit.sh`, idempotent);
/// with `owner`, that user an owner of custody's actions, so that polkit
/// takes the details that make its prompt name what is signed.
pub fn start_polkit(owner: Option<&str>) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/start-polkit.sh");
    must(Command::new("bash").arg(&script).args(owner));
}

pub fn uid(user: &str) -> nix::unistd::Uid {
    nix::unistd::User::from_name(user)
        .unwrap()
        .unwrap_or_else(|| panic!("no OS user {user}"))
        .uid
}

/// `path` created as a directory of `user`'s, mode 0700.
pub fn own_dir(user: &str, path: &Path) -> PathBuf {
    std::fs::create_dir_all(path).unwrap();
    nix::unistd::chown(path, Some(uid(user)), None).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700)).unwrap();
    path.to_path_buf()
}

/// A temporary place the user can reach (0755), with its home, runtime and
/// data directories (0700, the user's), removed when dropped.
pub struct UserDirs {
    pub tmp: tempfile::TempDir,
    pub home: PathBuf,
    pub run: PathBuf,
    pub data: PathBuf,
}

impl UserDirs {
    pub fn new(user: &str, prefix: &str) -> UserDirs {
        let tmp = tempfile::Builder::new().prefix(prefix).tempdir().unwrap();
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let home = own_dir(user, &tmp.path().join("home"));
        let run = own_dir(user, &home.join("run"));
        let data = own_dir(user, &home.join("data"));
        UserDirs {
            tmp,
            home,
            run,
            data,
        }
    }
}

/// Whether a test of the real OS prompt may run: as root (else it fails
/// saying why, or is skipped knowingly, see [`super::require_root`]), with
/// the tools every such test needs and `more_tools` on PATH, `user` made
/// with `password`, and polkitd up (`user` an owner of custody's actions
/// when `owner`, so that the prompt can name what is signed).
pub fn ready_for_os_prompt(
    test: &str,
    user: &str,
    password: &str,
    owner: bool,
    more_tools: &[&str],
) -> bool {
    if !super::require_root(
        test,
        "it creates an OS user with a password and starts polkitd",
    ) {
        return false;
    }
    let mut tools = vec![
        "tmux",
        "runuser",
        "script",
        "pkttyagent",
        "python3",
        "dbus-run-session",
        "gnome-keyring-daemon",
    ];
    tools.extend_from_slice(more_tools);
    let missing = super::not_on_path(&tools);
    assert!(
        missing.is_empty(),
        "this test needs {missing:?}: run scripts/setup.sh"
    );
    ensure_user(user, password);
    start_polkit(owner.then_some(user));
    true
}

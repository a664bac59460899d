//! The tests' own OS users, for real: custody runs as an ordinary user with
//! a password because polkit asks root nothing, so the tests that need the
//! OS prompt create that user, set its password, start the real polkitd
//! (`scripts/start-polkit.sh`) and give the user directories of its own.
//! Root only; each test names its own user so that tests run at once.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

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

/// `user` exists (a system user with a shell, no home) and its password is
/// `password`. A user another test created meanwhile is fine.
pub fn ensure_user(user: &str, password: &str) {
    if nix::unistd::User::from_name(user).ok().flatten().is_none() {
        let out = run(Command::new("useradd").args([
            "--system",
            "--no-create-home",
            "--shell",
            "/bin/sh",
            user,
        ]));
        assert!(
            out.status.success() || nix::unistd::User::from_name(user).ok().flatten().is_some(),
            "useradd {user}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
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

//! Letting another OS user's agents reach custody: the steps an administrator
//! would type (`groupadd`, `gpasswd -a`, `install -d`), planned, shown, then
//! carried out by the small privileged helper `parley-custody-setup`, which
//! the app and `parley-custodyd` run through polkit (`pkexec`, its own
//! `auth_admin` action).
//!
//! The helper runs as root, so it does exactly this and nothing else: it
//! takes only user and group names of the shape Debian's `adduser` accepts
//! (never `root`), only a socket directory under [`SOCKET_DIR_ROOTS`], and
//! when polkit started it (`PKEXEC_UID` is set) only for the user who asked:
//! nobody can make their agents reach someone else's custody.

use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

/// The group agents join by default.
pub const DEFAULT_GROUP: &str = "parley-agents";

/// Where socket directories may be made (the default is `/srv/parley-custody/<custody user>`).
pub const SOCKET_DIR_ROOTS: &[&str] = &["/srv/parley-custody", "/run/parley-custody"];

/// Why a setup was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    /// A user or group name outside the accepted pattern.
    #[error("{what} {name:?} is not an allowed name: use lower-case letters, digits, '-' and '_', starting with a letter (at most 32 characters), and never root")]
    BadName {
        /// `user`, `custody user` or `group`.
        what: &'static str,
        /// The name given.
        name: String,
    },
    /// The user does not exist (the helper never creates users).
    #[error("there is no user {0:?} on this system: create it first (e.g. `adduser {0}`), then run this again")]
    NoSuchUser(String),
    /// The agent user and the custody user are the same.
    #[error("{0:?} is custody's own user: agents of that user reach custody already; name the agents' user instead")]
    SameUser(String),
    /// Started through polkit for a custody user other than the caller.
    #[error("you (uid {caller}) may only set up access to your own custody, not {custody:?}'s")]
    NotYourCustody {
        /// The caller's uid (`PKEXEC_UID`).
        caller: u32,
        /// The custody user named.
        custody: String,
    },
    /// A socket directory outside the allowed roots, relative, or with `..`.
    #[error("the socket directory {} is not allowed: it must be a plain path (letters, digits, '.', '_', '-') under {roots}", crate::display::safe(&.0.display().to_string()), roots = SOCKET_DIR_ROOTS.join(" or "))]
    BadDir(PathBuf),
    /// A path on the way to the socket directory is a symlink.
    #[error("{0} is a symbolic link: remove it, or choose another socket directory")]
    Symlink(PathBuf),
    /// Looking up users or groups failed.
    #[error("cannot read the user database: {0}")]
    Lookup(String),
    /// A step's command failed.
    #[error("{step} failed: {detail}")]
    Step {
        /// The step in words.
        step: String,
        /// What the command said.
        detail: String,
    },
}

/// What the human asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The OS user the agents run as.
    pub agent_user: String,
    /// The OS user custody runs as (the human).
    pub custody_user: String,
    /// The group whose members may connect.
    pub group: String,
    /// Where the socket goes; `None`: `/srv/parley-custody/<custody user>`.
    pub socket_dir: Option<PathBuf>,
}

/// One change to the system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// `groupadd --system <group>`.
    CreateGroup(String),
    /// `gpasswd -a <user> <group>`.
    AddToGroup {
        /// The user.
        user: String,
        /// The group.
        group: String,
    },
    /// `install -d -o <owner> -g <group> -m 2750 <dir>` (parents 0755 root).
    /// Set-group-ID, so the socket custody makes in it belongs to the group
    /// at once: custody's running session needs no new login to hand it over.
    MakeDir {
        /// The directory.
        dir: PathBuf,
        /// Its owner (the custody user).
        owner: String,
        /// Its group.
        group: String,
    },
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::CreateGroup(g) => write!(f, "create the group {g}"),
            Step::AddToGroup { user, group } => {
                write!(f, "add the user {user} to the group {group}")
            }
            Step::MakeDir { dir, owner, group } => write!(
                f,
                "make the socket directory {} (owner {owner}, group {group}, mode 2750)",
                dir.display()
            ),
        }
    }
}

/// The steps a request needs on this system, after every check. Empty when
/// everything is in place already.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The checked request.
    pub request: Request,
    /// The socket directory (resolved).
    pub socket_dir: PathBuf,
    /// What will change, in order.
    pub steps: Vec<Step>,
}

impl Plan {
    /// The socket path custody should then listen on.
    pub fn socket_path(&self) -> PathBuf {
        self.socket_dir.join("custody.sock")
    }

    /// Every step in words, one per line, for the human to read before
    /// saying yes; says so when nothing needs to change.
    pub fn describe(&self) -> String {
        if self.steps.is_empty() {
            return format!(
                "Nothing to change: {} is in {}, and {} exists.\n",
                self.request.agent_user,
                self.request.group,
                self.socket_dir.display()
            );
        }
        self.steps
            .iter()
            .enumerate()
            .map(|(i, s)| format!("{}. {s}\n", i + 1))
            .collect()
    }
}

/// Debian's default `NAME_REGEX` (`^[a-z][-a-z0-9_]*$`), at most 32 bytes, not root.
pub fn valid_name(name: &str) -> bool {
    let mut b = name.bytes();
    name.len() <= 32
        && name != "root"
        && b.next().is_some_and(|c| c.is_ascii_lowercase())
        && b.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-' || c == b'_')
}

fn check_name(what: &'static str, name: &str) -> Result<(), AccessError> {
    if valid_name(name) {
        Ok(())
    } else {
        Err(AccessError::BadName {
            what,
            name: name.to_string(),
        })
    }
}

fn check_dir(dir: &Path) -> Result<(), AccessError> {
    // Plain: absolute, no `..`, and spelled as its components (no `.`, `//`, trailing `/`).
    let rebuilt: PathBuf = dir.components().collect();
    let plain = dir.is_absolute()
        && rebuilt.as_os_str() == dir.as_os_str()
        && dir.components().all(|c| match c {
            Component::RootDir => true,
            // Names a person can read back in the plan: nothing that could
            // rewrite the terminal or the window showing it.
            Component::Normal(n) => n.to_str().is_some_and(|n| {
                n.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
            }),
            _ => false,
        });
    let under = SOCKET_DIR_ROOTS
        .iter()
        .any(|root| dir.starts_with(root) && dir != Path::new(root));
    if !(plain && under) {
        return Err(AccessError::BadDir(dir.to_path_buf()));
    }
    let mut at = PathBuf::new();
    for c in dir.components() {
        at.push(c);
        if std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(AccessError::Symlink(at));
        }
    }
    Ok(())
}

/// Checks a request against the system and lists what must change.
/// `caller` is the uid that asked through polkit (`PKEXEC_UID`), if any.
pub fn plan(request: Request, caller: Option<u32>) -> Result<Plan, AccessError> {
    use nix::unistd::{Group, User};
    check_name("user", &request.agent_user)?;
    check_name("custody user", &request.custody_user)?;
    check_name("group", &request.group)?;
    if request.agent_user == request.custody_user {
        return Err(AccessError::SameUser(request.agent_user));
    }
    let lookup = |name: &str| {
        User::from_name(name)
            .map_err(|e| AccessError::Lookup(e.to_string()))?
            .ok_or_else(|| AccessError::NoSuchUser(name.to_string()))
    };
    lookup(&request.agent_user)?;
    let custody = lookup(&request.custody_user)?;
    if let Some(caller) = caller {
        if custody.uid.as_raw() != caller {
            return Err(AccessError::NotYourCustody {
                caller,
                custody: request.custody_user,
            });
        }
    }
    let socket_dir = request
        .socket_dir
        .clone()
        .unwrap_or_else(|| Path::new(SOCKET_DIR_ROOTS[0]).join(&request.custody_user));
    check_dir(&socket_dir)?;

    let group = Group::from_name(&request.group).map_err(|e| AccessError::Lookup(e.to_string()))?;
    let mut steps = Vec::new();
    let member = |user: &str| {
        group.as_ref().is_some_and(|g| {
            g.mem.iter().any(|m| m == user) || lookup(user).is_ok_and(|u| u.gid == g.gid)
        })
    };
    if group.is_none() {
        steps.push(Step::CreateGroup(request.group.clone()));
    }
    for user in [&request.agent_user, &request.custody_user] {
        if !member(user) {
            steps.push(Step::AddToGroup {
                user: user.clone(),
                group: request.group.clone(),
            });
        }
    }
    if !dir_in_place(
        &socket_dir,
        custody.uid.as_raw(),
        group.as_ref().map(|g| g.gid.as_raw()),
    ) {
        steps.push(Step::MakeDir {
            dir: socket_dir.clone(),
            owner: request.custody_user.clone(),
            group: request.group.clone(),
        });
    }
    Ok(Plan {
        request,
        socket_dir,
        steps,
    })
}

fn dir_in_place(dir: &Path, uid: u32, gid: Option<u32>) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::symlink_metadata(dir), gid) {
        (Ok(m), Some(gid)) => {
            m.is_dir() && m.uid() == uid && m.gid() == gid && m.mode() & 0o7777 == 0o2750
        }
        _ => false,
    }
}

fn run(step: &Step, cmd: &mut Command) -> Result<(), AccessError> {
    let out = cmd.output().map_err(|e| AccessError::Step {
        step: step.to_string(),
        detail: e.to_string(),
    })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(AccessError::Step {
            step: step.to_string(),
            detail: crate::display::safe(String::from_utf8_lossy(&out.stderr).trim()),
        })
    }
}

/// The installed helper: beside the running binary (`/usr/bin` for the
/// package, whose polkit action names `/usr/bin/parley-custody-setup`).
pub fn helper_path() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|d| d.join(HELPER)))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| Path::new("/usr/bin").join(HELPER))
}

/// The helper's file name.
pub const HELPER: &str = "parley-custody-setup";

/// How the app and `parley-custodyd agent-user` carry out a plan the human
/// read: the helper through `pkexec` (polkit asks for an administrator's
/// password), or directly when already root. Every value is passed again,
/// explicitly, so the helper re-plans and re-checks exactly what was shown.
pub fn helper_command(plan: &Plan, helper: &Path, as_root: bool) -> Command {
    let mut cmd = if as_root {
        Command::new(helper)
    } else {
        let mut c = Command::new("pkexec");
        c.arg(helper);
        c
    };
    cmd.args(["agent-user", "--user", &plan.request.agent_user])
        .args(["--custody-user", &plan.request.custody_user])
        .args(["--group", &plan.request.group])
        .arg("--socket-dir")
        .arg(&plan.socket_dir)
        .arg("--yes");
    cmd
}

/// Carries out the plan's steps in order (as root), stopping at the first
/// that fails. Each is idempotent, so running a plan twice is harmless.
pub fn apply(plan: &Plan) -> Result<(), AccessError> {
    for step in &plan.steps {
        match step {
            Step::CreateGroup(g) => run(step, Command::new("groupadd").args(["--system", g]))?,
            Step::AddToGroup { user, group } => {
                run(step, Command::new("gpasswd").args(["-a", user, group]))?
            }
            Step::MakeDir { dir, owner, group } => {
                if let Some(parent) = dir.parent() {
                    run(
                        step,
                        Command::new("install")
                            .args(["-d", "-o", "root", "-g", "root", "-m", "0755"])
                            .arg(parent),
                    )?;
                }
                run(
                    step,
                    Command::new("install")
                        .args(["-d", "-o", owner, "-g", group, "-m", "2750"])
                        .arg(dir),
                )?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_lower_case_names_and_never_root() {
        for ok in [
            "agent",
            "a",
            "agent-1",
            "my_agent",
            "a23456789012345678901234567890bc",
        ] {
            assert!(valid_name(ok), "{ok}");
        }
        for bad in [
            "",
            "root",
            "Agent",
            "1agent",
            "-rf",
            "a b",
            "a/b",
            "../x",
            "agent$",
            "a\u{202e}b",
            "ａgent",
            "a23456789012345678901234567890bcd",
        ] {
            assert!(!valid_name(bad), "{bad:?}");
        }
    }

    #[test]
    fn socket_directories_only_under_the_allowed_roots() {
        for bad in [
            "/srv/parley-custody",
            "/etc/parley",
            "relative/dir",
            "/srv/parley-custody/../../etc",
            "/srv/parley-custody/./x",
            "/srv/parley-custody//x",
            "/srv/parley-custody/x/",
            "/srv/parley-custody/a\u{1b}[2Jb",
            "/srv/parley-custody/a\nb",
            "/srv/parley-custody/a b",
            "/srv/parley-custodyx/alice",
        ] {
            assert!(
                matches!(check_dir(Path::new(bad)), Err(AccessError::BadDir(_))),
                "{bad}"
            );
        }
        assert!(check_dir(Path::new("/srv/parley-custody/alice")).is_ok());
    }

    #[test]
    fn steps_read_as_what_an_administrator_would_do() {
        let s = Step::MakeDir {
            dir: "/srv/parley-custody/alice".into(),
            owner: "alice".into(),
            group: "parley-agents".into(),
        };
        assert_eq!(
            s.to_string(),
            "make the socket directory /srv/parley-custody/alice (owner alice, group parley-agents, mode 2750)"
        );
    }

    #[test]
    fn the_helper_gets_every_checked_value_again_through_pkexec() {
        let plan = Plan {
            request: Request {
                agent_user: "bot".into(),
                custody_user: "alice".into(),
                group: DEFAULT_GROUP.into(),
                socket_dir: None,
            },
            socket_dir: PathBuf::from("/srv/parley-custody/alice"),
            steps: vec![Step::CreateGroup(DEFAULT_GROUP.into())],
        };
        let c = helper_command(&plan, Path::new("/usr/bin/parley-custody-setup"), false);
        assert_eq!(c.get_program(), "pkexec");
        let args: Vec<_> = c
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            args,
            [
                "/usr/bin/parley-custody-setup",
                "agent-user",
                "--user",
                "bot",
                "--custody-user",
                "alice",
                "--group",
                "parley-agents",
                "--socket-dir",
                "/srv/parley-custody/alice",
                "--yes"
            ]
        );
        let direct = helper_command(&plan, Path::new("/usr/bin/parley-custody-setup"), true);
        assert_eq!(direct.get_program(), "/usr/bin/parley-custody-setup");
    }
}

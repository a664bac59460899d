//! Who may have custody's OS prompt name the decision: the owners of its
//! two polkit actions.
//!
//! polkitd (122) fills `$(decision)` / `$(change)` in the actions' messages
//! from a check's details, but takes details only from root or from a user
//! the action names in its `org.freedesktop.policykit.owner` annotation
//! (`unix-user:NAME`, space-separated; groups do not count there). polkitd
//! reads actions only from `/usr/share/polkit-1/actions`, so an
//! administrator names custody's users there: `parley-custody-setup
//! prompt-owner` records the user in [`OWNERS_FILE`] (root's, 0644) and
//! rewrites the installed policy from it ([`with_owners`]); the package's
//! postinst does the same after every install or upgrade, so the owners
//! survive a new policy file. What an owner may do besides: see
//! docs/SECURITY.md ("Who may name the decision").

use std::io::Write;
use std::path::{Path, PathBuf};

/// The administrator's list of owners, one user name a line.
pub const OWNERS_FILE: &str = "/etc/parley-custody/prompt-owners";

/// The installed policy with custody's two actions.
pub const INSTALLED_POLICY: &str = "/usr/share/polkit-1/actions/org.parley.custody.policy";

/// The annotation polkit reads the owners from.
const OWNER_KEY: &str = "org.freedesktop.policykit.owner";

/// Why the owners could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum OwnersError {
    /// Not a plain user name (Debian's `NAME_REGEX`, at most 32 bytes):
    /// nothing else may reach the policy file.
    #[error("{0:?} is not a user name custody can name as an owner (lower-case letters, digits, - and _, starting with a letter, at most 32; root needs no entry)")]
    BadName(String),
    /// The policy is not custody's: an action is missing.
    #[error("{path} is not custody's policy ({missing} is missing): reinstall Parley Custody")]
    NotCustodyPolicy {
        /// The file read.
        path: String,
        /// The action id not found.
        missing: &'static str,
    },
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// What the system said.
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> OwnersError + '_ {
    move |source| OwnersError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// The owners in [`OWNERS_FILE`]'s text: one name a line, blank lines and
/// `#` comments skipped, each name checked, duplicates dropped (first kept).
pub fn parse_owners(text: &str) -> Result<Vec<String>, OwnersError> {
    let mut owners = Vec::new();
    for line in text.lines() {
        let name = line.trim();
        if name.is_empty() || name.starts_with('#') {
            continue;
        }
        add(&mut owners, name)?;
    }
    Ok(owners)
}

/// Adds `name` to `owners` once, if it is a plain user name.
fn add(owners: &mut Vec<String>, name: &str) -> Result<(), OwnersError> {
    if !crate::agent_access::valid_name(name) {
        return Err(OwnersError::BadName(name.to_string()));
    }
    if !owners.iter().any(|o| o == name) {
        owners.push(name.to_string());
    }
    Ok(())
}

/// [`OWNERS_FILE`]'s text for `owners`.
pub fn owners_text(owners: &[String]) -> String {
    let mut text = String::from(
        "# Users whose Parley Custody OS prompt names what is signed (polkit action owners).\n\
         # Written by parley-custody-setup prompt-owner; applied again after every upgrade.\n",
    );
    for o in owners {
        text.push_str(o);
        text.push('\n');
    }
    text
}

/// `policy` with exactly `owners` as the owners of every action: earlier
/// owner annotations removed, one annotation added before each
/// `</action>` (none when `owners` is empty). Idempotent; every name
/// checked and named once. `path` only names the file in errors.
pub fn with_owners(policy: &str, owners: &[String], path: &str) -> Result<String, OwnersError> {
    for id in [crate::stepup::ACTION_ID, crate::stepup::CHANGE_ACTION_ID] {
        if !policy.contains(&format!("<action id=\"{id}\"")) {
            return Err(OwnersError::NotCustodyPolicy {
                path: path.to_string(),
                missing: id,
            });
        }
    }
    let mut unique = Vec::new();
    for o in owners {
        add(&mut unique, o)?;
    }
    let annotation = (!unique.is_empty()).then(|| {
        let names: Vec<String> = unique.iter().map(|u| format!("unix-user:{u}")).collect();
        format!(
            "    <annotate key=\"{OWNER_KEY}\">{}</annotate>\n",
            names.join(" ")
        )
    });
    let mut out = String::with_capacity(policy.len() + 256);
    for line in policy.split_inclusive('\n') {
        if line.contains(&format!("key=\"{OWNER_KEY}\"")) {
            continue;
        }
        if line.trim_start().starts_with("</action>") {
            if let Some(a) = &annotation {
                out.push_str(a);
            }
        }
        out.push_str(line);
    }
    Ok(out)
}

/// The owners the policy names for `action_id` (empty if none).
pub fn owners_of(policy: &str, action_id: &str) -> Vec<String> {
    let Some(start) = policy.find(&format!("<action id=\"{action_id}\"")) else {
        return Vec::new();
    };
    let action = &policy[start..];
    let action = &action[..action.find("</action>").unwrap_or(action.len())];
    let open = format!("<annotate key=\"{OWNER_KEY}\">");
    action
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            l.strip_prefix(open.as_str())?.strip_suffix("</annotate>")
        })
        .flat_map(|v| v.split_whitespace())
        .filter_map(|id| id.strip_prefix("unix-user:"))
        .map(str::to_string)
        .collect()
}

/// Whether the policy lets `user`'s custody name the decision in both
/// actions' prompts.
pub fn names_owner(policy: &str, user: &str) -> bool {
    [crate::stepup::ACTION_ID, crate::stepup::CHANGE_ACTION_ID]
        .iter()
        .all(|id| owners_of(policy, id).iter().any(|o| o == user))
}

/// Why custody's OS prompt cannot name the decision for its user, and the
/// one step that fixes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unnamed {
    /// Custody's OS user.
    pub user: String,
    /// One sentence for Settings and the daemon's start.
    pub words: String,
}

/// Whether the installed `policy` (its text, `None` when it cannot be
/// read) lets custody's `user` have the prompt name the decision: `None`
/// when it does, for root (polkit takes root's details), or when the policy
/// is not installed (step-up then says that itself).
pub fn unnamed(user: &str, uid: u32, policy: Option<&str>) -> Option<Unnamed> {
    let policy = policy?;
    if uid == 0 || names_owner(policy, user) {
        return None;
    }
    Some(Unnamed {
        user: user.to_string(),
        words: format!(
            "Your OS password prompt cannot say what it signs (it shows $(decision)): polkit \
             names the decision only for users an administrator named as owners of custody's \
             polkit actions, and {user} is not one yet. The password is still asked."
        ),
    })
}

/// [`unnamed`] for the user running this process, from the installed policy.
pub fn unnamed_here() -> Option<Unnamed> {
    let uid = nix::unistd::Uid::current();
    let user = nix::unistd::User::from_uid(uid).ok().flatten()?.name;
    let policy = std::fs::read_to_string(INSTALLED_POLICY).ok();
    unnamed(&user, uid.as_raw(), policy.as_deref())
}

/// The command an administrator runs, as root, to name `user`: the
/// installed helper's, or in a source tree (this binary under `target/`,
/// next to `scripts/start-polkit.sh`) that script's, which installs the
/// policy from the tree.
pub fn root_command(user: &str) -> String {
    let exe = std::env::current_exe().ok();
    let tree = exe.as_deref().and_then(|e| {
        e.ancestors()
            .find(|d| d.join("scripts/start-polkit.sh").is_file())
    });
    match tree {
        Some(t) => format!("{} {user}", t.join("scripts/start-polkit.sh").display()),
        None => format!(
            "{} prompt-owner --user {user}",
            crate::agent_access::helper_path().display()
        ),
    }
}

/// Writes `text` to `path` as root's 0644 file, atomically (a temporary
/// file beside it, synced, renamed over it): polkitd, which reloads action
/// files while it runs, never reads half a policy.
pub fn write_atomic(path: &Path, text: &str) -> Result<(), OwnersError> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path.parent().unwrap_or(Path::new("/"));
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let tmp: PathBuf = dir.join(format!(
        ".{}.tmp-{}",
        name.unwrap_or_default(),
        std::process::id()
    ));
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644))?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written.map_err(io(path))
}

/// Where [`apply`] reads and writes (the real places, or a test's copies).
#[derive(Debug, Clone)]
pub struct Places {
    /// [`OWNERS_FILE`].
    pub owners_file: PathBuf,
    /// [`INSTALLED_POLICY`].
    pub policy: PathBuf,
}

impl Default for Places {
    fn default() -> Places {
        Places {
            owners_file: OWNERS_FILE.into(),
            policy: INSTALLED_POLICY.into(),
        }
    }
}

/// Adds `user` (if any) to the owners file, then rewrites the policy from
/// the file; returns the owners now named. A missing owners file is an
/// empty list. Files are rewritten only when they change.
pub fn apply(places: &Places, user: Option<&str>) -> Result<Vec<String>, OwnersError> {
    let read = |p: &Path| match std::fs::read_to_string(p) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io(p)(e)),
    };
    let before = read(&places.owners_file)?;
    let mut owners = parse_owners(before.as_deref().unwrap_or(""))?;
    if let Some(u) = user {
        add(&mut owners, u)?;
        let text = owners_text(&owners);
        if before.as_deref() != Some(text.as_str()) {
            write_atomic(&places.owners_file, &text)?;
        }
    }
    let path = places.policy.display().to_string();
    let policy = read(&places.policy)?.ok_or_else(|| OwnersError::NotCustodyPolicy {
        path: path.clone(),
        missing: crate::stepup::ACTION_ID,
    })?;
    let next = with_owners(&policy, &owners, &path)?;
    if next != policy {
        write_atomic(&places.policy, &next)?;
    }
    Ok(owners)
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: &str = include_str!("../../packaging/polkit/org.parley.custody.policy");

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn both_actions_name_every_owner_once_and_the_rest_is_untouched() {
        let out = with_owners(POLICY, &names(&["alice", "bob", "alice"]), "p").unwrap();
        for id in [crate::stepup::ACTION_ID, crate::stepup::CHANGE_ACTION_ID] {
            assert_eq!(owners_of(&out, id), names(&["alice", "bob"]), "{id}");
        }
        assert_eq!(out.matches("unix-user:alice").count(), 2, "{out}");
        assert!(names_owner(&out, "bob") && !names_owner(&out, "carol"));
        let back = with_owners(&out, &[], "p").unwrap();
        assert_eq!(back, POLICY, "no owners gives the shipped file back");
        assert!(!names_owner(POLICY, "alice"));
    }

    #[test]
    fn rewriting_is_idempotent_and_replaces_earlier_owners() {
        let once = with_owners(POLICY, &names(&["alice"]), "p").unwrap();
        assert_eq!(with_owners(&once, &names(&["alice"]), "p").unwrap(), once);
        let other = with_owners(&once, &names(&["bob"]), "p").unwrap();
        assert_eq!(owners_of(&other, crate::stepup::ACTION_ID), names(&["bob"]));
        assert!(!other.contains("alice"));
    }

    #[test]
    fn names_that_are_not_plain_user_names_never_reach_the_policy() {
        for bad in [
            "root",
            "Alice",
            "1000",
            "a b",
            "a\"><annotate",
            "unix-group:wheel",
            "",
            "a23456789012345678901234567890bcd",
        ] {
            let e = with_owners(POLICY, &names(&[bad]), "p").unwrap_err();
            assert!(matches!(e, OwnersError::BadName(_)), "{bad:?}: {e}");
            assert!(
                parse_owners(&format!("alice\n{bad}x y\n")).is_err(),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn the_owners_file_skips_comments_and_duplicates() {
        let o = parse_owners("# who\n\nalice\n  bob \nalice\n").unwrap();
        assert_eq!(o, names(&["alice", "bob"]));
        assert_eq!(parse_owners(&owners_text(&o)).unwrap(), o);
    }

    #[test]
    fn custody_knows_when_its_prompt_cannot_name_the_decision() {
        let named = with_owners(POLICY, &names(&["alice"]), "p").unwrap();
        assert_eq!(unnamed("alice", 1000, Some(&named)), None);
        assert_eq!(
            unnamed("root", 0, Some(POLICY)),
            None,
            "root needs no entry"
        );
        assert_eq!(
            unnamed("alice", 1000, None),
            None,
            "not installed: said elsewhere"
        );
        let u = unnamed("bob", 1001, Some(&named)).expect("bob is not named");
        assert!(u.words.contains("cannot say what it signs") && u.words.contains("bob"));
        assert!(
            root_command("bob").ends_with(" bob"),
            "{}",
            root_command("bob")
        );
    }

    #[test]
    fn another_policy_is_refused() {
        let e = with_owners("<policyconfig></policyconfig>", &names(&["alice"]), "x").unwrap_err();
        assert!(e.to_string().contains("reinstall"), "{e}");
    }

    #[test]
    fn apply_records_the_user_and_rewrites_the_policy_from_the_file() {
        let dir = std::env::temp_dir().join(format!("parley-owners-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let places = Places {
            owners_file: dir.join("etc/prompt-owners"),
            policy: dir.join("org.parley.custody.policy"),
        };
        std::fs::write(&places.policy, POLICY).unwrap();
        assert_eq!(apply(&places, None).unwrap(), Vec::<String>::new());
        assert_eq!(std::fs::read_to_string(&places.policy).unwrap(), POLICY);
        apply(&places, Some("alice")).unwrap();
        assert_eq!(
            apply(&places, Some("bob")).unwrap(),
            names(&["alice", "bob"])
        );
        // An upgrade puts the shipped file back; applying the file again restores the owners.
        std::fs::write(&places.policy, POLICY).unwrap();
        assert_eq!(apply(&places, None).unwrap(), names(&["alice", "bob"]));
        let policy = std::fs::read_to_string(&places.policy).unwrap();
        assert!(names_owner(&policy, "alice") && names_owner(&policy, "bob"));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&places.policy)
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o644);
        assert!(apply(&places, Some("x y")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

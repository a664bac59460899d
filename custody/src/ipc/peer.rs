//! Who is on the other end of a connection, and may they talk to custody?
//!
//! Threat model (ARCHITECTURE.md): the agent is untrusted. Nothing it *says*
//! identifies it; only what the kernel reports about the socket does. So the
//! peer's uid and gid come from the kernel at accept time (`SO_PEERCRED` on
//! Linux, `LOCAL_PEERCRED`/`getpeereid` on macOS, through interprocess's
//! `peer_creds()`), and the [`PeerPolicy`] is checked before a single byte
//! from the peer is read.
//!
//! The executable path is a hint for the human, never an authority: the kernel
//! gives the pid of the process that *connected*; that process may since have
//! exec'd another program, exited, or handed the socket to a child, and the
//! pid may be reused. [`PeerInfo::read`] reads `/proc/<pid>/exe` right at
//! accept and drops it if `/proc/<pid>` no longer belongs to the peer's uid,
//! which narrows the race but cannot close it: reviews label it
//! "not verified" (see the `Display` impl). Reading another user's
//! `/proc/<pid>/exe` needs ptrace rights, so for an agent running as another
//! user (the recommended deployment) `exe` is usually `None` unless custody
//! runs as root.
//!
//! Windows: named pipes give the client's pid only; [`PeerInfo::uid`] and
//! `gid` are [`UNKNOWN_ID`] there, and [`PeerPolicy::allows`] relies on the
//! pipe's default DACL (which lets only the creating user, SYSTEM and
//! Administrators open it for writing). That code is compiled, not tested.

use std::fmt;
use std::path::PathBuf;

/// The uid/gid reported where the platform has none (Windows).
pub const UNKNOWN_ID: u32 = u32::MAX;

/// The peer of one connection, as the kernel reported it at accept time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerInfo {
    /// Effective user id of the connecting process.
    pub uid: u32,
    /// Effective group id of the connecting process.
    pub gid: u32,
    /// Process id of the connecting process, where the platform reports it.
    pub pid: Option<u32>,
    /// The executable of `pid`, read at accept time. NOT verified: see the
    /// module docs; show it labelled as such.
    pub exe: Option<PathBuf>,
    /// The user name of `uid`, if the user database knows it.
    pub user: Option<String>,
    /// The peer and its parents up to the program that opened its session,
    /// read at accept time ([`super::process_chain`]). NOT verified either.
    pub chain: super::process_chain::ProcessChain,
}

impl PeerInfo {
    /// Reads the peer's credentials from an accepted connection and looks up
    /// its executable and user name immediately (the longer we wait, the more
    /// likely the pid refers to something else).
    ///
    /// Fails when the kernel has no credentials (the peer already hung up).
    pub fn read(stream: &interprocess::local_socket::tokio::Stream) -> std::io::Result<PeerInfo> {
        use interprocess::local_socket::traits::StreamCommon;
        let creds = stream.peer_creds()?;
        let pid = creds.pid().and_then(|p| u32::try_from(p).ok());
        #[cfg(unix)]
        let (uid, gid) = match (creds.euid(), creds.egid()) {
            (Some(uid), Some(gid)) => (uid, gid),
            _ => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::Unsupported,
                    "the kernel did not report the peer's uid and gid",
                ))
            }
        };
        #[cfg(not(unix))]
        let (uid, gid) = (UNKNOWN_ID, UNKNOWN_ID);
        Ok(PeerInfo::from_creds(uid, gid, pid))
    }

    /// Builds a `PeerInfo` from kernel credentials, resolving the executable
    /// and the user name now.
    pub fn from_creds(uid: u32, gid: u32, pid: Option<u32>) -> PeerInfo {
        PeerInfo {
            uid,
            gid,
            pid,
            exe: pid.and_then(|pid| os::exe_of(pid, uid)),
            user: os::user_name(uid),
            chain: pid
                .map(super::process_chain::ProcessChain::read)
                .unwrap_or_default(),
        }
    }
}

impl fmt::Display for PeerInfo {
    /// One line for logs and reviews, e.g.
    /// `user bob (uid 1001, gid 1001), pid 4242, executable /usr/bin/python3.11 (not verified)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.user {
            Some(name) => write!(f, "user {} ", crate::display::for_log(name))?,
            None => f.write_str("unknown user ")?,
        }
        write!(f, "(uid {}, gid {})", self.uid, self.gid)?;
        match self.pid {
            Some(pid) => write!(f, ", pid {pid}")?,
            None => f.write_str(", pid unknown")?,
        }
        match &self.exe {
            Some(exe) => write!(
                f,
                ", executable {} (not verified)",
                crate::display::safe(&exe.to_string_lossy())
            ),
            None => f.write_str(", executable unknown"),
        }
    }
}

/// Which peers may use the socket.
///
/// Default ([`PeerPolicy::new`]): custody's own user, plus every member of one
/// configured agents group, plus any uids listed explicitly. Everyone else is
/// refused before a byte is parsed.
///
/// Custody's own user is allowed on purpose: it is how the human's own tools
/// (`parley approve`, `parley grant`) reach custody. Refusing it would add no
/// protection, because a process of that user can already read the unlocked
/// keychain; that is why ARCHITECTURE.md asks agents to run as a *different*
/// user, which this policy then restricts to the agents group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerPolicy {
    /// Custody's own (effective) uid; always allowed.
    pub own_uid: u32,
    /// The agents group: its members are allowed. Membership = the peer's
    /// effective gid or its user's primary gid is this gid, or its user name
    /// is listed as a member of the group. Read at every check, so a change
    /// to the group takes effect for the next connection, without a restart.
    pub agents_gid: Option<u32>,
    /// Further uids allowed (settings: "allowed peers").
    pub extra_uids: Vec<u32>,
}

/// Why a peer was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The peer is not custody's user, not in the agents group, not listed.
    #[error(
        "peer uid {uid}{} is not allowed: it is not custody's user (uid {own_uid}){}, and not in the allowed uids; add that user to the agents group to let it in",
        user.as_deref().map(|u| format!(" ({u})")).unwrap_or_default(),
        group.as_deref().map(|g| format!(" nor a member of the agents group `{g}`")).unwrap_or_else(|| ", no agents group is configured".to_owned())
    )]
    NotAllowed {
        /// The peer's uid.
        uid: u32,
        /// The peer's user name, if known.
        user: Option<String>,
        /// Custody's uid.
        own_uid: u32,
        /// The agents group's name (or gid), if one is configured.
        group: Option<String>,
    },
    /// The agents group could not be read; the peer is refused (fail closed).
    #[error("cannot read the agents group (gid {gid}): {reason}; refusing the peer until it can be read")]
    GroupLookup {
        /// The configured gid.
        gid: u32,
        /// What went wrong.
        reason: String,
    },
}

/// Errors building a [`PeerPolicy`] from settings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// The configured agents group does not exist.
    #[error("the agents group `{0}` does not exist; create it (`groupadd --system {0}`) or configure another group")]
    UnknownGroup(String),
    /// The group database could not be read.
    #[error("cannot look up the agents group `{name}`: {reason}")]
    Lookup {
        /// The group name.
        name: String,
        /// What went wrong.
        reason: String,
    },
}

impl PeerPolicy {
    /// Custody's own user and, if `agents_group` is given, its members.
    pub fn new(agents_group: Option<&str>) -> Result<PeerPolicy, PolicyError> {
        let agents_gid = match agents_group {
            Some(name) => Some(os::gid_of_group(name)?),
            None => None,
        };
        Ok(PeerPolicy {
            own_uid: os::own_uid(),
            agents_gid,
            extra_uids: Vec::new(),
        })
    }

    /// Only custody's own user.
    pub fn own_user_only() -> PeerPolicy {
        PeerPolicy {
            own_uid: os::own_uid(),
            agents_gid: None,
            extra_uids: Vec::new(),
        }
    }

    /// Decides whether `peer` may use custody. Looks up the user and group
    /// databases (via NSS) for group membership; that is quick with local
    /// files and happens once per connection.
    pub fn allows(&self, peer: &PeerInfo) -> Result<(), Refusal> {
        if cfg!(not(unix)) {
            // Windows: see the module docs.
            return Ok(());
        }
        if peer.uid == UNKNOWN_ID {
            return Err(self.not_allowed(peer));
        }
        if peer.uid == self.own_uid || self.extra_uids.contains(&peer.uid) {
            return Ok(());
        }
        if let Some(gid) = self.agents_gid {
            if peer.gid == gid {
                return Ok(());
            }
            if os::user_in_group(peer.uid, gid)? {
                return Ok(());
            }
        }
        Err(self.not_allowed(peer))
    }

    fn not_allowed(&self, peer: &PeerInfo) -> Refusal {
        Refusal::NotAllowed {
            uid: peer.uid,
            user: peer.user.clone(),
            own_uid: self.own_uid,
            group: self
                .agents_gid
                .map(|gid| os::group_name(gid).unwrap_or_else(|| format!("gid {gid}"))),
        }
    }
}

#[cfg(unix)]
mod os {
    use super::{PolicyError, Refusal};
    use nix::unistd::{Gid, Group, Uid, User};
    use std::path::PathBuf;

    pub fn own_uid() -> u32 {
        Uid::effective().as_raw()
    }

    pub fn user_name(uid: u32) -> Option<String> {
        User::from_uid(Uid::from_raw(uid))
            .ok()
            .flatten()
            .map(|u| u.name)
    }

    pub fn group_name(gid: u32) -> Option<String> {
        Group::from_gid(Gid::from_raw(gid))
            .ok()
            .flatten()
            .map(|g| g.name)
    }

    pub fn gid_of_group(name: &str) -> Result<u32, PolicyError> {
        match Group::from_name(name) {
            Ok(Some(g)) => Ok(g.gid.as_raw()),
            Ok(None) => Err(PolicyError::UnknownGroup(name.to_owned())),
            Err(e) => Err(PolicyError::Lookup {
                name: name.to_owned(),
                reason: e.to_string(),
            }),
        }
    }

    /// Is `uid`'s primary group `gid`, or is its name listed in `gid`'s members?
    pub fn user_in_group(uid: u32, gid: u32) -> Result<bool, Refusal> {
        let user = match User::from_uid(Uid::from_raw(uid)) {
            Ok(Some(u)) => u,
            // A uid without a passwd entry has no name to list in a group.
            Ok(None) => return Ok(false),
            Err(e) => {
                return Err(Refusal::GroupLookup {
                    gid,
                    reason: format!("cannot look up uid {uid}: {e}"),
                })
            }
        };
        if user.gid.as_raw() == gid {
            return Ok(true);
        }
        match Group::from_gid(Gid::from_raw(gid)) {
            Ok(Some(group)) => Ok(group.mem.contains(&user.name)),
            Ok(None) => Err(Refusal::GroupLookup {
                gid,
                reason: "the group no longer exists".to_owned(),
            }),
            Err(e) => Err(Refusal::GroupLookup {
                gid,
                reason: e.to_string(),
            }),
        }
    }

    /// `/proc/<pid>/exe`, kept only if `/proc/<pid>` still belongs to `uid`
    /// afterwards (else the pid was reused by someone else's process).
    #[cfg(target_os = "linux")]
    pub fn exe_of(pid: u32, uid: u32) -> Option<PathBuf> {
        use std::os::unix::fs::MetadataExt;
        let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok()?;
        let owner = std::fs::metadata(format!("/proc/{pid}")).ok()?.uid();
        (owner == uid).then_some(exe)
    }

    #[cfg(not(target_os = "linux"))]
    pub fn exe_of(_pid: u32, _uid: u32) -> Option<PathBuf> {
        None
    }
}

#[cfg(not(unix))]
mod os {
    use super::{PolicyError, Refusal, UNKNOWN_ID};
    use std::path::PathBuf;

    pub fn own_uid() -> u32 {
        UNKNOWN_ID
    }
    pub fn user_name(_uid: u32) -> Option<String> {
        None
    }
    pub fn group_name(_gid: u32) -> Option<String> {
        None
    }
    pub fn gid_of_group(name: &str) -> Result<u32, PolicyError> {
        Err(PolicyError::UnknownGroup(name.to_owned()))
    }
    pub fn user_in_group(_uid: u32, _gid: u32) -> Result<bool, Refusal> {
        Ok(false)
    }
    pub fn exe_of(_pid: u32, _uid: u32) -> Option<PathBuf> {
        None
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn peer(uid: u32, gid: u32) -> PeerInfo {
        PeerInfo {
            uid,
            gid,
            pid: None,
            exe: None,
            user: None,
            chain: Default::default(),
        }
    }

    #[test]
    fn own_uid_and_listed_uids_are_allowed_others_refused() {
        let policy = PeerPolicy {
            own_uid: 1000,
            agents_gid: None,
            extra_uids: vec![1500],
        };
        assert!(policy.allows(&peer(1000, 1000)).is_ok());
        assert!(policy.allows(&peer(1500, 1500)).is_ok());
        let refusal = policy.allows(&peer(1001, 1000)).unwrap_err();
        assert!(matches!(refusal, Refusal::NotAllowed { uid: 1001, .. }));
        assert!(refusal.to_string().contains("no agents group"));
        assert!(policy.allows(&peer(UNKNOWN_ID, 1000)).is_err());
    }

    #[test]
    fn effective_gid_of_agents_group_is_allowed() {
        let policy = PeerPolicy {
            own_uid: 1000,
            agents_gid: Some(4242),
            extra_uids: vec![],
        };
        assert!(policy.allows(&peer(2000, 4242)).is_ok());
    }

    #[test]
    fn display_labels_exe_unverified() {
        let p = PeerInfo {
            uid: 5,
            gid: 6,
            pid: Some(7),
            exe: Some("/bin/x".into()),
            user: Some("u".into()),
            chain: Default::default(),
        };
        assert_eq!(
            p.to_string(),
            "user u (uid 5, gid 6), pid 7, executable /bin/x (not verified)"
        );
    }
}

//! The local socket: where it lives, who may open it, and the accept loop's
//! admission control (peer policy, then connection caps), all before a byte
//! from the peer is read.
//!
//! Built on `interprocess::local_socket` (tokio flavour, `GenericFilePath`),
//! as ARCHITECTURE.md asks. interprocess 2.4 gives what custody needs without
//! `unsafe` here: kernel peer credentials (`peer_creds()`), and a socket mode
//! applied with `fchmod` *before* `bind`, so the socket file is never born
//! wider than owner-only whatever the umask; the group and final mode are set
//! right after. (That is why `Cargo.toml`'s `interprocess = "2.2"` must resolve
//! to 2.4 or later, as `Cargo.lock` does.)
//!
//! # Socket path
//! Resolved as agents resolve it ([`parley_custody_client::socket`], whose
//! items are re-exported here): flag, `$PARLEY_CUSTODY_SOCKET`,
//! `$XDG_RUNTIME_DIR/parley-custody/`, `/run/user/<uid>/parley-custody/`,
//! `/tmp/parley-custody-<uid>/`, numbered 1–5 in that order.
//!
//! For 3–5 the `parley-custody…` directory is custody's own: created `0750`
//! (group = agents group) or `0700` (no agents group), and refused if it
//! exists but is a symlink or belongs to another uid (someone pre-creating
//! `/tmp/parley-custody-<uid>` to intercept agents). For 1–2 the parent
//! directory is created the same way if missing, and left alone otherwise.
//!
//! `$XDG_RUNTIME_DIR` and `/run/user/<uid>` are `0700`: agents running as
//! another user cannot reach a socket below them. With an agents group
//! configured, pass `--socket` (or the env var) under a directory they can
//! traverse; [`Listener::unreachable_for_agents`] names the blocking directory
//! and `bind` logs a warning.
//!
//! # Socket file
//! Mode `0660` with group = the agents group (custody's user must be allowed
//! to `chown` to it, i.e. be a member, or root), else `0600`.
//!
//! # Stale sockets
//! If the path exists: a socket nobody listens on (`ECONNREFUSED`) is removed
//! and replaced; a socket that answers means another custody is running, and
//! `bind` refuses; anything else (a file, a directory, a symlink) is never
//! removed and `bind` refuses. The socket file is removed when the
//! [`Listener`] is dropped.

use crate::ipc::frame::FrameWriter;
use crate::ipc::peer::{PeerInfo, PeerPolicy};
use crate::protocol::{ErrorCode, Reply};
use interprocess::local_socket::tokio::Stream as RawStream;
use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

// Path resolution and connecting are the agent side's (`parley-custody-client`):
// one rule, so custody binds where agents look. Re-exported so that
// `parley_custody::ipc::socket::{SocketPath, resolve_socket_path, connect, …}`
// keep working.
pub use parley_custody_client::socket::{
    connect, resolve_socket_path, resolve_with, PathInputs, PathSource, SocketPath, SocketStream,
    SOCKET_ENV,
};

/// How long a refused peer's one `ERROR` line may take to send.
const REFUSAL_WRITE_TIMEOUT: Duration = Duration::from_secs(1);

/// Caps on concurrent connections, so one agent cannot starve the others or
/// exhaust custody's file descriptors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnLimits {
    /// Connections one uid may hold open at once.
    pub per_uid: usize,
    /// Connections open at once, all peers together.
    pub total: usize,
}

impl Default for ConnLimits {
    fn default() -> Self {
        ConnLimits {
            per_uid: 8,
            total: 64,
        }
    }
}

/// Everything `bind` needs.
#[derive(Debug, Clone)]
pub struct BindOptions {
    /// Where to listen.
    pub path: SocketPath,
    /// Who may connect; its `agents_gid` is also the socket's group.
    pub policy: PeerPolicy,
    /// Connection caps.
    pub limits: ConnLimits,
}

/// Why the socket could not be set up or a connection accepted.
#[derive(Debug, thiserror::Error)]
pub enum SocketError {
    /// A live custody answers at the path.
    #[error("another custody daemon is listening at {}; stop it first, or start this one with --socket <another path>", .0.display())]
    AlreadyRunning(PathBuf),
    /// Something that is not a socket is at the path.
    #[error("{} exists and is not a socket; custody will not remove it: move it away or choose another --socket", .0.display())]
    NotASocket(PathBuf),
    /// Could not tell whether an existing socket is stale.
    #[error("cannot tell whether the existing socket {} is in use ({source}); remove it if no custody is running", path.display())]
    StaleCheck {
        /// The socket path.
        path: PathBuf,
        /// The connect error.
        source: io::Error,
    },
    /// The path does not fit in a Unix socket address.
    #[error("socket path {} is {len} bytes; Unix sockets allow at most {max}: choose a shorter --socket", path.display())]
    PathTooLong {
        /// The socket path.
        path: PathBuf,
        /// Its length in bytes.
        len: usize,
        /// The platform's limit.
        max: usize,
    },
    /// Custody's socket directory exists but is not safe to use.
    #[error("{} {problem}; someone may be trying to intercept agents: remove it, or choose another --socket", dir.display())]
    UnsafeDir {
        /// The directory.
        dir: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// A directory could not be created or secured.
    #[error("cannot prepare directory {}: {source}", dir.display())]
    Dir {
        /// The directory.
        dir: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// The socket or its directory could not be given to the agents group.
    #[error("cannot give {} to the agents group (gid {gid}): {source}; custody's user must be a member of that group (add it with `gpasswd -a USER GROUP`, then log in again) or run as root", path.display())]
    Group {
        /// The file or directory.
        path: PathBuf,
        /// The agents group.
        gid: u32,
        /// The OS error.
        source: io::Error,
    },
    /// The socket file's mode could not be set.
    #[error("cannot set the mode of {}: {source}", path.display())]
    Permissions {
        /// The socket path.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// `bind`/`listen` failed.
    #[error("cannot listen at {}: {source}", path.display())]
    Bind {
        /// The socket path.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// `accept` failed (e.g. out of file descriptors: back off and retry).
    #[error("cannot accept a connection: {0}")]
    Accept(io::Error),
}

/// Counts open connections per uid and in total.
#[derive(Debug)]
struct ConnCounter {
    limits: ConnLimits,
    counts: Mutex<Counts>,
}

#[derive(Debug, Default)]
struct Counts {
    total: usize,
    per_uid: HashMap<u32, usize>,
}

impl ConnCounter {
    fn lock(&self) -> std::sync::MutexGuard<'_, Counts> {
        // Plain counters: a panic elsewhere cannot leave them inconsistent.
        self.counts.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn try_acquire(self: &Arc<Self>, uid: u32) -> Option<Permit> {
        let mut counts = self.lock();
        let mine = counts.per_uid.get(&uid).copied().unwrap_or(0);
        if counts.total >= self.limits.total || mine >= self.limits.per_uid {
            return None;
        }
        counts.total += 1;
        counts.per_uid.insert(uid, mine + 1);
        Some(Permit {
            counter: Arc::clone(self),
            uid,
        })
    }
}

/// One connection slot; released when dropped.
#[derive(Debug)]
struct Permit {
    counter: Arc<ConnCounter>,
    uid: u32,
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut counts = self.counter.lock();
        counts.total = counts.total.saturating_sub(1);
        if let Some(n) = counts.per_uid.get_mut(&self.uid) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                counts.per_uid.remove(&self.uid);
            }
        }
    }
}

#[derive(Debug)]
struct Conn {
    io: RawStream,
    _permit: Permit,
}

/// An admitted connection. Clone it to get a reader and a writer handle for
/// separate tasks (replies are multiplexed); the connection closes and its
/// slot is released when the last clone is dropped.
#[derive(Debug, Clone)]
pub struct Stream {
    conn: Arc<Conn>,
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut &self.conn.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut &self.conn.io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut &self.conn.io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut &self.conn.io).poll_shutdown(cx)
    }
}

/// The custody socket, listening.
#[derive(Debug)]
pub struct Listener {
    inner: interprocess::local_socket::tokio::Listener,
    path: PathBuf,
    policy: PeerPolicy,
    counter: Arc<ConnCounter>,
    unreachable: Option<PathBuf>,
}

impl Listener {
    /// Prepares the directory, clears a stale socket, binds, and sets the
    /// socket's group and mode (module docs). Must run inside a tokio runtime.
    pub fn bind(opts: BindOptions) -> Result<Listener, SocketError> {
        let BindOptions {
            path,
            policy,
            limits,
        } = opts;
        let gid = policy.agents_gid;
        let inner = os::bind(&path, gid)?;
        let unreachable = gid.and_then(|gid| os::first_unsearchable_dir(&path.path, gid));
        if let (Some(dir), Some(gid)) = (&unreachable, gid) {
            tracing::warn!(
                socket = %path.path.display(),
                blocking_dir = %dir.display(),
                "agents in group {gid} cannot reach the socket because {} is not searchable by them; choose --socket under a directory they can traverse",
                dir.display()
            );
        }
        tracing::info!(socket = %path.path.display(), "custody socket listening");
        Ok(Listener {
            inner,
            path: path.path,
            policy,
            counter: Arc::new(ConnCounter {
                limits,
                counts: Mutex::new(Counts::default()),
            }),
            unreachable,
        })
    }

    /// The socket path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The peer policy in force.
    pub fn policy(&self) -> &PeerPolicy {
        &self.policy
    }

    /// A directory above the socket that members of the agents group cannot
    /// traverse, if any: they will get "permission denied" on connect.
    pub fn unreachable_for_agents(&self) -> Option<&Path> {
        self.unreachable.as_deref()
    }

    /// Connections currently admitted (for tests and the status view).
    #[doc(hidden)]
    pub fn open_connections(&self) -> usize {
        self.counter.lock().total
    }

    /// Waits for the next admitted connection.
    ///
    /// Each incoming connection's kernel credentials are read and checked
    /// against the peer policy, then against the connection caps, before any
    /// byte from it is read. A refused peer gets one `ERROR forbidden_peer`
    /// (or `ERROR busy`) line with `re: null` and is closed; that is logged
    /// and the wait goes on. Only listener failures are returned as errors;
    /// on [`SocketError::Accept`] the caller should back off briefly (it is
    /// usually a file-descriptor limit) before calling again. The user and
    /// group lookups (NSS) run inline: quick with local files; a deployment
    /// with a slow directory service should accept on a dedicated task.
    pub async fn accept(&self) -> Result<(Stream, PeerInfo), SocketError> {
        use interprocess::local_socket::traits::tokio::Listener as _;
        loop {
            let io = match self.inner.accept().await {
                Ok(io) => io,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::ConnectionAborted
                            | io::ErrorKind::Interrupted
                            | io::ErrorKind::WouldBlock
                    ) =>
                {
                    continue
                }
                Err(e) => return Err(SocketError::Accept(e)),
            };
            let peer = match PeerInfo::read(&io) {
                Ok(peer) => peer,
                Err(e) => {
                    tracing::debug!(error = %e, "peer left before its credentials could be read");
                    continue;
                }
            };
            if let Err(refusal) = self.policy.allows(&peer) {
                tracing::warn!(peer = %peer, reason = %refusal, "refused a connection: peer not allowed");
                refuse(
                    io,
                    ErrorCode::ForbiddenPeer,
                    "this custody does not accept connections from your OS user; ask its owner to add your user to the agents group",
                )
                .await;
                continue;
            }
            match self.counter.try_acquire(peer.uid) {
                Some(permit) => {
                    tracing::debug!(peer = %peer, "accepted a connection");
                    let conn = Arc::new(Conn {
                        io,
                        _permit: permit,
                    });
                    return Ok((Stream { conn }, peer));
                }
                None => {
                    tracing::warn!(peer = %peer, limits = ?self.counter.limits, "refused a connection: too many open");
                    refuse(
                        io,
                        ErrorCode::Busy,
                        "too many open connections; close one or retry later",
                    )
                    .await;
                }
            }
        }
    }
}

/// Sends one `ERROR` line to a peer that will not be served, then closes.
/// Bounded in time so a peer that does not read cannot stall the accept loop
/// (a fresh socket's buffer takes one short line without blocking anyway).
async fn refuse(io: RawStream, code: ErrorCode, message: &str) {
    let line = Reply::error(code, message).to_frame(None);
    let mut writer = FrameWriter::new(&io);
    match tokio::time::timeout(REFUSAL_WRITE_TIMEOUT, writer.send(&line)).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::debug!(error = %e, "could not tell a refused peer why"),
        Err(_) => tracing::debug!("refused peer did not take its error line in time"),
    }
}

#[cfg(unix)]
#[path = "socket/unix.rs"]
mod os;

#[cfg(not(unix))]
mod os {
    use super::{SocketError, SocketPath};
    use interprocess::local_socket::{
        tokio::Listener as RawListener, GenericFilePath, ListenerOptions, ToFsName,
    };
    use std::path::{Path, PathBuf};

    /// Windows: `path` names a named pipe (`\\.\pipe\…`); its default DACL
    /// admits only the creating user, SYSTEM and Administrators.
    pub fn bind(path: &SocketPath, _gid: Option<u32>) -> Result<RawListener, SocketError> {
        let bind_err = |source| SocketError::Bind {
            path: path.path.clone(),
            source,
        };
        let name = path
            .path
            .as_path()
            .to_fs_name::<GenericFilePath>()
            .map_err(bind_err)?;
        ListenerOptions::new()
            .name(name)
            .create_tokio()
            .map_err(bind_err)
    }

    pub fn first_unsearchable_dir(_sock: &Path, _gid: u32) -> Option<PathBuf> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_caps_per_uid_and_total() {
        let counter = Arc::new(ConnCounter {
            limits: ConnLimits {
                per_uid: 2,
                total: 3,
            },
            counts: Mutex::new(Counts::default()),
        });
        let a1 = counter.try_acquire(1).unwrap();
        let _a2 = counter.try_acquire(1).unwrap();
        assert!(counter.try_acquire(1).is_none(), "per-uid cap");
        let _b1 = counter.try_acquire(2).unwrap();
        assert!(counter.try_acquire(3).is_none(), "total cap");
        drop(a1);
        assert!(counter.try_acquire(3).is_some(), "slot released on drop");
    }
}

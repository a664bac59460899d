//! Where the custody socket is, and connecting to it: the client side only.
//! Binding, the socket's permissions, stale-socket handling and admitting
//! peers are custody's (`parley_custody::ipc::socket`), which uses the same
//! resolution so that an agent and custody agree on the path without being
//! told.
//!
//! # Socket path (first match wins)
//! 1. the `--socket` value the caller passes;
//! 2. `$PARLEY_CUSTODY_SOCKET` (if set and non-empty);
//! 3. `$XDG_RUNTIME_DIR/parley-custody/custody.sock` (if set and absolute);
//! 4. `/run/user/<uid>/parley-custody/custody.sock` (if `/run/user/<uid>` is a directory);
//! 5. `/tmp/parley-custody-<uid>/custody.sock`.
//!
//! On Windows: the flag, else the variable, else the named pipe
//! `\\.\pipe\parley-custody`.

use interprocess::local_socket::tokio::Stream as RawStream;
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

/// The environment variable naming the socket path.
pub const SOCKET_ENV: &str = "PARLEY_CUSTODY_SOCKET";

/// Where a socket path came from; decides whether its directory is ours to
/// create and lock down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathSource {
    /// The caller's `--socket` flag.
    Flag,
    /// `$PARLEY_CUSTODY_SOCKET`.
    Env,
    /// `$XDG_RUNTIME_DIR/parley-custody/`.
    XdgRuntime,
    /// `/run/user/<uid>/parley-custody/`.
    RunUser,
    /// `/tmp/parley-custody-<uid>/`.
    Tmp,
}

/// A resolved socket path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SocketPath {
    /// The socket file.
    pub path: PathBuf,
    /// Which rule chose it.
    pub source: PathSource,
}

impl SocketPath {
    /// An explicit path (as from `--socket`).
    pub fn explicit(path: impl Into<PathBuf>) -> SocketPath {
        SocketPath {
            path: path.into(),
            source: PathSource::Flag,
        }
    }

    /// Whether the parent directory is a `parley-custody` directory that
    /// custody owns and locks down even if it already exists.
    pub fn owns_parent(&self) -> bool {
        matches!(
            self.source,
            PathSource::XdgRuntime | PathSource::RunUser | PathSource::Tmp
        )
    }
}

/// What the default socket path depends on; see [`resolve_with`].
#[derive(Debug, Clone, Default)]
pub struct PathInputs {
    /// The `--socket` flag value.
    pub flag: Option<PathBuf>,
    /// `$PARLEY_CUSTODY_SOCKET`.
    pub env_socket: Option<OsString>,
    /// `$XDG_RUNTIME_DIR`.
    pub xdg_runtime_dir: Option<OsString>,
    /// Custody's effective uid.
    pub uid: u32,
    /// Whether `/run/user/<uid>` is a directory.
    pub run_user_exists: bool,
}

/// Resolves the socket path from the flag and this process's environment
/// (rules in the module docs).
#[cfg(unix)]
pub fn resolve_socket_path(flag: Option<&Path>) -> SocketPath {
    let uid = nix::unistd::Uid::effective().as_raw();
    resolve_with(&PathInputs {
        flag: flag.map(Path::to_path_buf),
        env_socket: std::env::var_os(SOCKET_ENV),
        xdg_runtime_dir: std::env::var_os("XDG_RUNTIME_DIR"),
        uid,
        run_user_exists: Path::new(&format!("/run/user/{uid}")).is_dir(),
    })
}

/// Windows: the flag, else `$PARLEY_CUSTODY_SOCKET`, else the named pipe
/// `\\.\pipe\parley-custody`.
#[cfg(not(unix))]
pub fn resolve_socket_path(flag: Option<&Path>) -> SocketPath {
    if let Some(flag) = flag {
        return SocketPath::explicit(flag);
    }
    match std::env::var_os(SOCKET_ENV).filter(|v| !v.is_empty()) {
        Some(env) => SocketPath {
            path: PathBuf::from(env),
            source: PathSource::Env,
        },
        None => SocketPath::explicit(r"\\.\pipe\parley-custody"),
    }
}

/// The resolution rules, without reading the environment (for tests).
pub fn resolve_with(inputs: &PathInputs) -> SocketPath {
    if let Some(flag) = &inputs.flag {
        return SocketPath::explicit(flag.clone());
    }
    if let Some(env) = inputs.env_socket.as_ref().filter(|v| !v.is_empty()) {
        return SocketPath {
            path: PathBuf::from(env),
            source: PathSource::Env,
        };
    }
    let sock = "custody.sock";
    if let Some(xdg) = inputs.xdg_runtime_dir.as_ref().map(PathBuf::from) {
        // The XDG spec says relative values are invalid and must be ignored.
        if xdg.is_absolute() {
            return SocketPath {
                path: xdg.join("parley-custody").join(sock),
                source: PathSource::XdgRuntime,
            };
        }
    }
    if inputs.run_user_exists {
        return SocketPath {
            path: PathBuf::from(format!("/run/user/{}", inputs.uid))
                .join("parley-custody")
                .join(sock),
            source: PathSource::RunUser,
        };
    }
    SocketPath {
        path: PathBuf::from(format!("/tmp/parley-custody-{}", inputs.uid)).join(sock),
        source: PathSource::Tmp,
    }
}

/// A connection to custody's socket, as [`connect`] returns it (named for
/// code that splits it into halves).
pub type SocketStream = RawStream;

/// Connects to a custody socket (for clients: agents, the CLI, tests). No
/// time limit here: [`crate::client::Client::connect_with`] sets one.
pub async fn connect(path: &Path) -> io::Result<RawStream> {
    use interprocess::local_socket::{traits::tokio::Stream as _, GenericFilePath, ToFsName};
    RawStream::connect(path.to_fs_name::<GenericFilePath>()?).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs() -> PathInputs {
        PathInputs {
            uid: 1000,
            ..PathInputs::default()
        }
    }

    #[test]
    fn flag_beats_env_beats_xdg_beats_run_user_beats_tmp() {
        let mut i = inputs();
        assert_eq!(
            resolve_with(&i).path,
            Path::new("/tmp/parley-custody-1000/custody.sock")
        );
        assert_eq!(resolve_with(&i).source, PathSource::Tmp);
        i.run_user_exists = true;
        assert_eq!(
            resolve_with(&i).path,
            Path::new("/run/user/1000/parley-custody/custody.sock")
        );
        i.xdg_runtime_dir = Some("relative/dir".into());
        assert_eq!(resolve_with(&i).source, PathSource::RunUser);
        i.xdg_runtime_dir = Some("/xdg".into());
        assert_eq!(
            resolve_with(&i).path,
            Path::new("/xdg/parley-custody/custody.sock")
        );
        i.env_socket = Some("".into());
        assert_eq!(resolve_with(&i).source, PathSource::XdgRuntime);
        i.env_socket = Some("/env.sock".into());
        assert_eq!(resolve_with(&i).path, Path::new("/env.sock"));
        assert!(!resolve_with(&i).owns_parent());
        i.flag = Some("/flag.sock".into());
        assert_eq!(resolve_with(&i), SocketPath::explicit("/flag.sock"));
    }
}

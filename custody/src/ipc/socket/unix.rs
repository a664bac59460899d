//! Binding on Unix, for [`Listener::bind`](super::Listener::bind): the
//! socket file and its directory, their owners and modes, stale sockets, and
//! which directory keeps the agents group out (see the parent module's docs).

use super::{SocketError, SocketPath};
use interprocess::local_socket::{
    tokio::Listener as RawListener, GenericFilePath, ListenerOptions, ToFsName,
};
use interprocess::os::unix::local_socket::ListenerOptionsExt;
use nix::unistd::{Gid, Uid};
use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// `sizeof(sun_path) - 1` (room for the terminating NUL).
#[cfg(target_os = "linux")]
const SUN_PATH_MAX: usize = 107;
#[cfg(not(target_os = "linux"))]
const SUN_PATH_MAX: usize = 103;

pub fn bind(path: &SocketPath, gid: Option<u32>) -> Result<RawListener, SocketError> {
    let sock = &path.path;
    let len = sock.as_os_str().len();
    if len > SUN_PATH_MAX {
        return Err(SocketError::PathTooLong {
            path: sock.clone(),
            len,
            max: SUN_PATH_MAX,
        });
    }
    let parent = match sock.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    prepare_dir(&parent, path.owns_parent(), gid)?;
    clear_stale(sock)?;

    let listener = listen(sock)?;
    // From here on, dropping `listener` removes the socket file again.
    if let Some(gid) = gid {
        chown_group(sock, gid)?;
    }
    let mode = if gid.is_some() { 0o660 } else { 0o600 };
    fs::set_permissions(sock, fs::Permissions::from_mode(mode)).map_err(|source| {
        SocketError::Permissions {
            path: sock.clone(),
            source,
        }
    })?;
    Ok(listener)
}

/// Binds with mode 0600 applied before `bind`, so the socket is never
/// reachable by anyone else before its group and mode are final.
fn listen(sock: &Path) -> Result<RawListener, SocketError> {
    let bind_err = |source: io::Error| {
        if source.kind() == io::ErrorKind::AddrInUse {
            SocketError::AlreadyRunning(sock.to_path_buf())
        } else {
            SocketError::Bind {
                path: sock.to_path_buf(),
                source,
            }
        }
    };
    let options = || -> io::Result<ListenerOptions<'_>> {
        Ok(ListenerOptions::new()
            .name(sock.to_fs_name::<GenericFilePath>()?)
            .reclaim_name(true)
            .try_overwrite(false))
    };
    match options().and_then(|o| o.mode(0o600).create_tokio()) {
        Ok(l) => Ok(l),
        // Platforms without pre-bind fchmod (older BSDs, macOS): the
        // directory (0700/0750) guards the moment until set_permissions.
        Err(e) if e.kind() == io::ErrorKind::Unsupported => {
            options().and_then(|o| o.create_tokio()).map_err(bind_err)
        }
        Err(e) => Err(bind_err(e)),
    }
}

fn chown_group(path: &Path, gid: u32) -> Result<(), SocketError> {
    nix::unistd::chown(path, None, Some(Gid::from_raw(gid))).map_err(|errno| SocketError::Group {
        path: path.to_path_buf(),
        gid,
        source: io::Error::from(errno),
    })
}

/// Creates the socket's directory if missing, and locks it down if it is
/// ours (module docs).
fn prepare_dir(dir: &Path, owned: bool, gid: Option<u32>) -> Result<(), SocketError> {
    let dir_err = |source: io::Error| SocketError::Dir {
        dir: dir.to_path_buf(),
        source,
    };
    let mode = if gid.is_some() { 0o750 } else { 0o700 };
    let mut ours = owned;
    match fs::symlink_metadata(dir) {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if let Some(grandparent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
                fs::create_dir_all(grandparent).map_err(dir_err)?;
            }
            match fs::DirBuilder::new().mode(mode).create(dir) {
                Ok(()) => ours = true,
                // Raced with someone: inspect what is there now.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(dir_err(e)),
            }
        }
        Err(e) => return Err(dir_err(e)),
    }

    if !ours {
        // An explicit path's existing directory: only check it is one.
        let meta = fs::metadata(dir).map_err(dir_err)?;
        if !meta.is_dir() {
            return Err(dir_err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a directory",
            )));
        }
        return Ok(());
    }

    let meta = fs::symlink_metadata(dir).map_err(dir_err)?;
    let unsafe_dir = |problem: String| SocketError::UnsafeDir {
        dir: dir.to_path_buf(),
        problem,
    };
    if meta.file_type().is_symlink() {
        return Err(unsafe_dir(
            "is a symbolic link, not custody's own directory".into(),
        ));
    }
    if !meta.is_dir() {
        return Err(unsafe_dir("is not a directory".into()));
    }
    let me = Uid::effective().as_raw();
    if meta.uid() != me {
        return Err(unsafe_dir(format!(
            "belongs to uid {}, not to custody's user (uid {me})",
            meta.uid()
        )));
    }
    if let Some(gid) = gid {
        chown_group(dir, gid)?;
    }
    fs::set_permissions(dir, fs::Permissions::from_mode(mode)).map_err(dir_err)?;
    Ok(())
}

/// Removes a socket nobody listens on; refuses a live one or a non-socket.
fn clear_stale(sock: &Path) -> Result<(), SocketError> {
    let meta = match fs::symlink_metadata(sock) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(source) => {
            return Err(SocketError::StaleCheck {
                path: sock.to_path_buf(),
                source,
            })
        }
    };
    if !meta.file_type().is_socket() {
        return Err(SocketError::NotASocket(sock.to_path_buf()));
    }
    match probe(sock) {
        Ok(()) => Err(SocketError::AlreadyRunning(sock.to_path_buf())),
        Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
            tracing::info!(socket = %sock.display(), "removing a stale custody socket");
            match fs::remove_file(sock) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
                Err(source) => Err(SocketError::StaleCheck {
                    path: sock.to_path_buf(),
                    source,
                }),
            }
        }
        // Removed between our stat and connect: the path is free.
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        // A listener with a full backlog is alive.
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
            Err(SocketError::AlreadyRunning(sock.to_path_buf()))
        }
        Err(source) => Err(SocketError::StaleCheck {
            path: sock.to_path_buf(),
            source,
        }),
    }
}

/// Tries to connect without ever blocking (a live daemon with a full
/// backlog must not hang our start-up).
#[cfg(target_os = "linux")]
fn probe(sock: &Path) -> io::Result<()> {
    use nix::sys::socket::{connect, socket, AddressFamily, SockFlag, SockType, UnixAddr};
    use std::os::fd::AsRawFd;
    let fd = socket(
        AddressFamily::Unix,
        SockType::Stream,
        SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC,
        None,
    )?;
    let addr = UnixAddr::new(sock)?;
    connect(fd.as_raw_fd(), &addr)?;
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn probe(sock: &Path) -> io::Result<()> {
    std::os::unix::net::UnixStream::connect(sock).map(drop)
}

/// The first ancestor of `sock` that members of group `gid` (who are not
/// its owner) cannot search, if any.
pub fn first_unsearchable_dir(sock: &Path, gid: u32) -> Option<PathBuf> {
    let absolute = std::path::absolute(sock).ok()?;
    let mut dirs: Vec<&Path> = absolute.ancestors().skip(1).collect();
    dirs.reverse();
    for dir in dirs {
        let meta = fs::metadata(dir).ok()?;
        let mode = meta.mode();
        let searchable = mode & 0o001 != 0 || (meta.gid() == gid && mode & 0o010 != 0);
        if !searchable {
            return Some(dir.to_path_buf());
        }
    }
    None
}

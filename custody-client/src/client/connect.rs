//! Reaching custody: the socket path ([`crate::socket`]), connecting within
//! a time limit, and saying what went wrong in words a person can act on
//! (not running, not allowed, hung). Kept apart from the request logic in the
//! parent module so that how a [`Client`] gets its stream is one place:
//! a real socket, or any byte stream for tests.

use super::{BoxRead, BoxWrite, Client, ClientError, Timeouts};
use crate::frame::{FrameReader, FrameWriter};
use std::io;
use std::path::{Path, PathBuf};
use tokio::io::{AsyncRead, AsyncWrite};

impl Client {
    /// Connects with the default [`Timeouts`]. `path`: an explicit socket
    /// (the `--socket` flag), else `$PARLEY_CUSTODY_SOCKET`, else the default
    /// of `docs/custody-protocol.md` §1.1, computed for this process's user.
    pub async fn connect(path: Option<&Path>) -> Result<Client, ClientError> {
        Client::connect_with(path, Timeouts::default()).await
    }

    /// Connects with explicit time limits.
    pub async fn connect_with(
        path: Option<&Path>,
        timeouts: Timeouts,
    ) -> Result<Client, ClientError> {
        let path = crate::socket::resolve_socket_path(path).path;
        let stream =
            match tokio::time::timeout(timeouts.connect, crate::socket::connect(&path)).await {
                Ok(Ok(stream)) => stream,
                Ok(Err(e)) => return Err(ClientError::from_connect(&path, e)),
                Err(_) => {
                    return Err(ClientError::ConnectTimeout {
                        path,
                        after: timeouts.connect,
                    })
                }
            };
        Ok(Client::from_stream(stream, path, timeouts))
    }

    /// A client over any byte stream (tests use an in-memory pipe); `path` is
    /// only used in messages.
    pub fn from_stream<S>(stream: S, path: impl Into<PathBuf>, timeouts: Timeouts) -> Client
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (r, w) = tokio::io::split(stream);
        Client {
            reader: FrameReader::new(Box::new(r) as BoxRead),
            writer: FrameWriter::new(Box::new(w) as BoxWrite),
            path: path.into(),
            timeouts,
            counter: 0,
            suffix: random_suffix(),
        }
    }
}

impl ClientError {
    /// The error for a failed connect, by what the OS said: a missing or
    /// refused socket means custody is not running; permission denied means
    /// this OS user may not reach it.
    pub(super) fn from_connect(path: &Path, source: io::Error) -> ClientError {
        let path = path.to_path_buf();
        match source.kind() {
            io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused => {
                ClientError::NotRunning { path, source }
            }
            io::ErrorKind::PermissionDenied => ClientError::PermissionDenied { path },
            _ => ClientError::Connect { path, source },
        }
    }
}

/// 8 random b64url characters; if the OS random source fails, the process
/// id and the time (the counter alone already keeps ids unique).
fn random_suffix() -> String {
    let mut bytes = [0u8; 6];
    match getrandom::getrandom(&mut bytes) {
        Ok(()) => parley_core::b64::encode(bytes),
        Err(_) => {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0);
            format!("p{}t{nanos}", std::process::id())
        }
    }
}

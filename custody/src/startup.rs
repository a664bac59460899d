//! Starting custody: one order for the headless daemon (`parley-custodyd`),
//! the desktop service and the tests. The caller opens the audit log and the
//! key store (each says in its own words why it could not); [`Custody::start`]
//! then builds the engine over them and binds the agents' socket, and
//! [`Custody::serve`] or [`Custody::spawn`] serves it.
//!
//! Kept in one place because the order matters: the engine exists before the
//! first agent can connect, a previous custody still letting go of the socket
//! is waited for (a restart) rather than reported as "already running", and a
//! socket that cannot be bound leaves the engine usable for the human (the
//! desktop shows why agents cannot connect; the daemon stops).

use crate::approver::Approver;
use crate::audit::Audit;
use crate::engine::{Engine, EngineConfig};
use crate::ipc::peer::{PeerPolicy, PolicyError};
use crate::ipc::socket::{BindOptions, ConnLimits, Listener, SocketError, SocketPath};
use crate::keystore::Keystore;
use crate::server::{self, ServerLimits};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// How long [`Custody::start`] waits, at most, for a previous custody to let
/// go of the socket (a restart from the app's settings).
pub const SOCKET_HANDOVER: Duration = Duration::from_secs(3);

/// Who may connect: custody's own user, the members of `agents_group`, and
/// `extra_uids` (sorted, each once).
pub fn peer_policy(
    agents_group: Option<&str>,
    extra_uids: impl IntoIterator<Item = u32>,
) -> Result<PeerPolicy, PolicyError> {
    let mut policy = PeerPolicy::new(agents_group)?;
    policy.extra_uids.extend(extra_uids);
    policy.extra_uids.sort_unstable();
    policy.extra_uids.dedup();
    Ok(policy)
}

/// What custody is started from.
pub struct CustodyConfig {
    /// The engine's limits and rules.
    pub engine: EngineConfig,
    /// The agents' socket: where, who may connect, connection caps.
    pub socket: BindOptions,
    /// The server's limits per connection.
    pub server: ServerLimits,
    /// How long to wait for a previous custody to let go of the socket.
    pub handover: Duration,
}

impl CustodyConfig {
    /// Default limits, on the socket at `path` for `policy`.
    pub fn new(engine: EngineConfig, path: SocketPath, policy: PeerPolicy) -> CustodyConfig {
        CustodyConfig {
            engine,
            socket: BindOptions {
                path,
                policy,
                limits: ConnLimits::default(),
            },
            server: ServerLimits::default(),
            handover: SOCKET_HANDOVER,
        }
    }
}

/// A started custody: the engine, and the socket it listens on, or why it
/// could not be bound.
pub struct Custody {
    /// The engine (clone it for the approver and the UI calls).
    pub engine: Engine,
    /// The bound socket, or why agents cannot connect.
    pub socket: Result<Listener, SocketError>,
    server: ServerLimits,
}

impl Custody {
    /// Binds the socket, waiting up to `config.handover` for a previous
    /// custody to let go of it, and builds the engine over `audit` and
    /// `keystore` (also when the socket could not be bound: the desktop
    /// still shows the key store and the log).
    pub async fn start(
        audit: Audit,
        keystore: Keystore,
        approver: Arc<dyn Approver>,
        config: CustodyConfig,
    ) -> Custody {
        // The socket first: a custody that finds another one running must
        // not touch the shared audit log (building the engine records the
        // retention policy when it changed). Nothing is accepted before
        // serving starts, so binding early lets no agent in early.
        let step = Duration::from_millis(200);
        let mut waited = Duration::ZERO;
        let socket = loop {
            match Listener::bind(config.socket.clone()) {
                Err(SocketError::AlreadyRunning(_)) if waited < config.handover => {
                    tokio::time::sleep(step).await;
                    waited += step;
                }
                other => break other,
            }
        };
        let engine = Engine::new(keystore, audit, approver, config.engine);
        Custody {
            engine,
            socket,
            server: config.server,
        }
    }

    /// Serves agents until `shutdown` completes (the daemon: until a
    /// signal). Without a socket there is nothing to serve: the error says
    /// why.
    pub async fn serve(self, shutdown: impl Future<Output = ()>) -> Result<(), SocketError> {
        let listener = self.socket?;
        server::serve(listener, self.engine, self.server, shutdown).await;
        Ok(())
    }

    /// Serves agents on a task of its own (the desktop service): the
    /// returned [`Serving`] stops it. Without a socket, the error says why.
    pub fn spawn(self) -> Result<Serving, SocketError> {
        let listener = self.socket?;
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(server::serve(listener, self.engine, self.server, async {
            let _ = stopped.await;
        }));
        Ok(Serving { stop, task })
    }
}

/// Custody serving agents on its own task.
pub struct Serving {
    /// Stops serving (send, or drop).
    pub stop: oneshot::Sender<()>,
    /// Ends when serving has stopped.
    pub task: JoinHandle<()>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approver::ScriptedApprover;
    use crate::keystore::{KdfParams, Passphrase};
    use zeroize::Zeroizing;

    fn parts(dir: &std::path::Path, name: &str) -> (Audit, Keystore) {
        let audit = Audit::open(&dir.join(format!("{name}.sqlite3"))).expect("the audit file");
        let keystore = Keystore::file_store_with_params(
            &dir.join(format!("{name}-keys")),
            Passphrase::new(Zeroizing::new("startup test".into())),
            KdfParams::new(KdfParams::MIN_M_KIB, 1, 1).expect("KDF parameters"),
        )
        .expect("the file store");
        (audit, keystore)
    }

    fn config(socket: &std::path::Path, handover: Duration) -> CustodyConfig {
        CustodyConfig {
            handover,
            ..CustodyConfig::new(
                EngineConfig::default(),
                SocketPath::explicit(socket),
                PeerPolicy::own_user_only(),
            )
        }
    }

    #[test]
    fn the_policy_lists_each_extra_user_once_in_order() {
        let p = peer_policy(None, [1002, 1001, 1002]).unwrap();
        assert_eq!(p.extra_uids, [1001, 1002]);
        assert!(peer_policy(Some("no-such-group-parley"), []).is_err());
    }

    #[tokio::test]
    async fn a_second_custody_waits_for_the_socket_then_says_already_running() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("custody.sock");
        let (audit, keystore) = parts(dir.path(), "first");
        let (approver, _shown) = ScriptedApprover::new();
        let first = Custody::start(
            audit,
            keystore,
            Arc::new(approver),
            config(&socket, Duration::ZERO),
        )
        .await;
        let serving = first.spawn().expect("the first custody serves");

        let (audit, keystore) = parts(dir.path(), "second");
        let (approver, _shown) = ScriptedApprover::new();
        let t = std::time::Instant::now();
        let second = Custody::start(
            audit,
            keystore,
            Arc::new(approver),
            config(&socket, Duration::from_millis(600)),
        )
        .await;
        assert!(
            t.elapsed() >= Duration::from_millis(600),
            "it waited for a handover"
        );
        let err = second.spawn().err().expect("the socket is taken");
        assert!(matches!(err, SocketError::AlreadyRunning(_)), "{err}");

        // Once the first lets go, a new custody takes the socket over.
        drop(serving.stop);
        serving.task.await.unwrap();
        let (audit, keystore) = parts(dir.path(), "third");
        let (approver, _shown) = ScriptedApprover::new();
        let third = Custody::start(
            audit,
            keystore,
            Arc::new(approver),
            config(&socket, SOCKET_HANDOVER),
        )
        .await;
        assert!(third.socket.is_ok(), "{:?}", third.socket.err());
    }
}

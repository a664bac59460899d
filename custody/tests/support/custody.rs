//! One custody for a test, started as the daemon and the desktop start it
//! (`parley_custody::startup::Custody::start`): a principal key, a fresh
//! audit file, the scripted approver in place of the human, the agents'
//! socket bound, and (when the test speaks the socket) served. Going through
//! the same builder keeps the start-up order in one place: a change in how
//! custody starts is made once, and the tests start custody that way.

use parley_core::PublicKey;
use parley_custody::approver::{PendingView, ScriptedApprover};
use parley_custody::audit::{Audit, Event, EventKind, Query};
use parley_custody::engine::{Engine, EngineConfig};
use parley_custody::ipc::peer::{PeerInfo, PeerPolicy};
use parley_custody::ipc::socket::{ConnLimits, SocketPath};
use parley_custody::keystore::{KdfParams, Keystore, Passphrase};
use parley_custody::protocol::Request;
use parley_custody::server::ServerLimits;
use parley_custody::startup::{Custody, CustodyConfig, Serving};
use parley_custody::stepup::StepUpPolicy;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::{self, UnboundedReceiver};
use zeroize::Zeroizing;

/// Where the test's principal key lives.
pub enum Keys {
    /// The OS keychain, namespaced `test`: only inside a private keyring
    /// session ([`super::in_session`]); files go to its scratch directory.
    Keychain,
    /// The passphrase file store with the cheapest KDF allowed, in a
    /// temporary directory: tests of the engine that need no keychain.
    File,
}

/// How a test's custody starts. [`Options::new`]: this user only, the
/// default connection and server limits, the audit file next to the keys.
pub struct Options {
    /// The engine's limits and rules.
    pub engine: EngineConfig,
    /// Who may connect to the socket.
    pub policy: PeerPolicy,
    /// The socket's connection caps.
    pub conn: ConnLimits,
    /// The server's limits per connection.
    pub server: ServerLimits,
    /// Where the audit file goes instead (a small file system, a directory
    /// made read-only later, …).
    pub audit_dir: Option<PathBuf>,
}

impl Options {
    /// The defaults around `engine`.
    pub fn new(engine: EngineConfig) -> Options {
        Options {
            engine,
            policy: PeerPolicy::own_user_only(),
            conn: ConnLimits::default(),
            server: ServerLimits::default(),
            audit_dir: None,
        }
    }
}

/// A started test custody. Every part but the start-up state is public:
/// tests look inside.
pub struct TestCustody {
    pub engine: Engine,
    pub principal: PublicKey,
    /// What the scripted approver was asked to show, in order.
    pub shown: UnboundedReceiver<PendingView>,
    pub approver: Arc<ScriptedApprover>,
    pub audit_path: PathBuf,
    /// Where the key files (for [`Keys::File`]), the audit file and the
    /// socket are.
    pub dir: PathBuf,
    /// The socket, bound at start; agents are answered once
    /// [`TestCustody::serve`] ran.
    pub socket: PathBuf,
    /// Custody as the builder left it (socket bound, nothing served), until
    /// [`TestCustody::serve`] serves it.
    started: Option<Custody>,
    /// The server, once serving; dropping it (with the test custody) stops
    /// the server.
    serving: Option<Serving>,
    _tmp: Option<tempfile::TempDir>,
}

/// The engine's defaults without OS authentication (no polkit in most tests).
pub fn no_step_up() -> EngineConfig {
    EngineConfig {
        step_up: StepUpPolicy::Never,
        ..EngineConfig::default()
    }
}

impl TestCustody {
    /// A custody with the default [`Options`] around `config`.
    pub async fn start(keys: Keys, config: EngineConfig) -> TestCustody {
        Self::start_with(keys, Options::new(config)).await
    }

    /// A custody started with `options`; its socket is bound, not yet
    /// served.
    pub async fn start_with(keys: Keys, options: Options) -> TestCustody {
        let (dir, tmp, ks) = match keys {
            Keys::Keychain => (
                super::scratch(),
                None,
                Keystore::keychain_namespaced(Some(super::NAMESPACE)).expect("the test keychain"),
            ),
            Keys::File => {
                let tmp = tempfile::tempdir().expect("a temporary directory");
                let ks = Keystore::file_store_with_params(
                    &tmp.path().join("keys"),
                    Passphrase::new(Zeroizing::new("test custody".into())),
                    KdfParams::new(KdfParams::MIN_M_KIB, 1, 1).expect("KDF parameters"),
                )
                .expect("the file store");
                (tmp.path().to_path_buf(), Some(tmp), ks)
            }
        };
        let principal = ks.create("me").expect("a principal key");
        let audit_path = options
            .audit_dir
            .as_deref()
            .unwrap_or(&dir)
            .join("audit.sqlite3");
        let audit = Audit::open(&audit_path).expect("the audit file");
        let (approver, shown) = ScriptedApprover::new();
        let approver = Arc::new(approver);
        let socket = dir.join("custody.sock");
        let mut config = CustodyConfig::new(
            options.engine,
            SocketPath::explicit(&socket),
            options.policy,
        );
        config.socket.limits = options.conn;
        config.server = options.server;
        // A test's socket is new: no previous custody to wait for.
        config.handover = Duration::ZERO;
        let custody = Custody::start(audit, ks, approver.clone(), config).await;
        if let Err(e) = &custody.socket {
            panic!("the test socket: {e}");
        }
        TestCustody {
            engine: custody.engine.clone(),
            principal,
            shown,
            approver,
            audit_path,
            socket,
            dir,
            started: Some(custody),
            serving: None,
            _tmp: tmp,
        }
    }

    /// Serves agents on [`TestCustody::socket`] until the test custody is
    /// dropped (or the test's runtime ends); returns the socket's path.
    pub fn serve(&mut self) -> PathBuf {
        let custody = self.started.take().expect("a test custody is served once");
        let serving = custody
            .spawn()
            .unwrap_or_else(|e| panic!("the test socket: {e}"));
        self.serving = Some(serving);
        self.socket.clone()
    }

    /// The audit rows of `kind`, newest first, read from the file as another
    /// reader of the log would.
    pub fn rows(&self, kind: EventKind) -> Vec<Event> {
        rows_at(&self.audit_path, &[kind])
    }

    /// Starts `req` on the engine as `peer` asking over the socket would
    /// (without the socket); returns the channel its replies arrive on.
    pub fn submit(&self, peer: &PeerInfo, req: Request) -> mpsc::Receiver<Value> {
        let (tx, rx) = mpsc::channel(16);
        let engine = self.engine.clone();
        let peer = peer.clone();
        tokio::spawn(async move { engine.handle(&peer, req, tx).await });
        rx
    }
}

/// The audit rows of `kinds` in the audit file at `path`, newest first,
/// read as another reader of the log would (also a daemon's or a service's
/// log, after it ended).
pub fn rows_at(path: &std::path::Path, kinds: &[EventKind]) -> Vec<Event> {
    Audit::open(path)
        .expect("the audit file")
        .query(&Query {
            kinds: kinds.to_vec(),
            ..Default::default()
        })
        .expect("the audit rows")
}

/// The next reply on a channel from [`TestCustody::submit`], within 30 s.
pub async fn next_reply(rx: &mut mpsc::Receiver<Value>) -> Value {
    tokio::time::timeout(Duration::from_secs(30), rx.recv())
        .await
        .expect("a reply in time")
        .expect("a reply")
}

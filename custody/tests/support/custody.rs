//! One custody for a test: a principal key, a fresh audit file, the engine
//! with the scripted approver in place of the human, and (when the test
//! speaks the socket) a server on a real socket. Written once here, not in
//! every test binary, so that a change in how custody starts is made once.

use parley_core::PublicKey;
use parley_custody::approver::{PendingView, ScriptedApprover};
use parley_custody::audit::Audit;
use parley_custody::engine::{Engine, EngineConfig};
use parley_custody::ipc::peer::PeerPolicy;
use parley_custody::ipc::socket::{BindOptions, ConnLimits, Listener, SocketPath};
use parley_custody::keystore::{KdfParams, Keystore, Passphrase};
use parley_custody::server::{serve, ServerLimits};
use parley_custody::stepup::StepUpPolicy;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::sync::mpsc::UnboundedReceiver;
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

/// A running test custody. Every part is public: tests look inside.
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
    /// The socket path [`TestCustody::serve`] binds.
    pub socket: PathBuf,
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
    /// A custody with its audit file next to its keys.
    pub fn new(keys: Keys, config: EngineConfig) -> TestCustody {
        Self::build(keys, config, None)
    }

    /// A custody whose audit file is in `audit_dir` (a small file system, a
    /// directory made read-only later, …).
    pub fn with_audit_in(keys: Keys, config: EngineConfig, audit_dir: &Path) -> TestCustody {
        Self::build(keys, config, Some(audit_dir))
    }

    fn build(keys: Keys, config: EngineConfig, audit_dir: Option<&Path>) -> TestCustody {
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
        let audit_path = audit_dir.unwrap_or(&dir).join("audit.sqlite3");
        let audit = Audit::open(&audit_path).expect("the audit file");
        let (approver, shown) = ScriptedApprover::new();
        let approver = Arc::new(approver);
        let engine = Engine::new(ks, audit, approver.clone(), config);
        TestCustody {
            engine,
            principal,
            shown,
            approver,
            audit_path,
            socket: dir.join("custody.sock"),
            dir,
            _tmp: tmp,
        }
    }

    /// Serves the engine on [`TestCustody::socket`] for this user only, with
    /// default limits; the server runs until the test's runtime ends.
    pub fn serve(&self) -> PathBuf {
        self.serve_with(
            PeerPolicy::own_user_only(),
            ConnLimits::default(),
            ServerLimits::default(),
        );
        self.socket.clone()
    }

    /// Serves with a given peer policy and limits; the task is returned for
    /// tests that stop the server.
    pub fn serve_with(
        &self,
        policy: PeerPolicy,
        conn: ConnLimits,
        server: ServerLimits,
    ) -> tokio::task::JoinHandle<()> {
        let listener = Listener::bind(BindOptions {
            path: SocketPath::explicit(&self.socket),
            policy,
            limits: conn,
        })
        .expect("the test socket");
        tokio::spawn(serve(
            listener,
            self.engine.clone(),
            server,
            std::future::pending(),
        ))
    }
}

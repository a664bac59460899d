//! The principal's keys: where they live and the only way to get one back.
//!
//! Threat model (ARCHITECTURE.md): the key is the principal's authority; an
//! agent that reads it needs no custody at all. So:
//! - a key lives in the OS keychain ([`Keystore::keychain`]), never in a
//!   plaintext file. A headless server may choose, by an explicit flag, a
//!   passphrase-encrypted file store ([`Keystore::file_store`]), which is
//!   weaker (anyone who copies the file can guess passphrases offline), and
//!   there is no silent fallback from one to the other: an unreachable keychain
//!   is an error telling the user what to do;
//! - secrets exist only in zeroizing containers, are never logged, never
//!   serialized and never part of an error message or `Debug` output; a key
//!   loaded to sign sits in a page of its own, locked in RAM ([`LockedKey`]);
//! - [`Keystore::load`] is the only way to get a secret key back, and only the
//!   signer calls it.
//!
//! [`Keystore`] is one struct over a private [`Backend`] trait, so the rules
//! that must not differ between stores (labels, import once, the delete
//! confirmation, checking a loaded secret matches the key asked for) are
//! written once, here, and no caller can reach a backend around them.

mod file_store;
mod keychain;
mod locked;
mod seed_file;

pub use file_store::{KdfParams, Passphrase};
pub use locked::probe_memory_lock;
pub(crate) use locked::LockedKey;
pub use seed_file::shred_file;

use parley_core::keys::{PublicKey, SecretKey};
use serde::Serialize;
use std::path::{Path, PathBuf};
use zeroize::Zeroizing;

/// The keychain service name; a namespace is appended as `parley-custody.<ns>`.
pub const KEYCHAIN_SERVICE: &str = "parley-custody";

/// Selects a separate set of keychain entries (tests, profiles), like a
/// per-build namespace: `PARLEY_CUSTODY_NAMESPACE=dev` keeps a development
/// build away from the real principal key.
pub const ENV_NAMESPACE: &str = "PARLEY_CUSTODY_NAMESPACE";

/// The longest label accepted, in characters. Labels are shown in reviews;
/// a bound keeps a hostile or accidental paste from taking over the screen.
pub const MAX_LABEL_CHARS: usize = 128;

/// How a key came to be in the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeySource {
    /// Generated here from the OS random source.
    Created,
    /// Imported from an upstream `principal.key` seed file.
    Imported,
}

/// Whether the secret behind a listed key can still be found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyStatus {
    /// The secret is in the store.
    Present,
    /// The keychain index names this key but its secret entry is gone (for
    /// example deleted with a keychain tool). Reported rather than failing the
    /// whole listing, so the user can see and delete the stale record.
    Missing,
}

/// A key as listed: public data only, never the secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeyInfo {
    /// The public key.
    pub public: PublicKey,
    /// The user's name for it.
    pub label: String,
    /// When it entered this store (unix seconds).
    pub created_at: i64,
    /// Created here or imported.
    pub source: KeySource,
    /// Whether its secret is still there.
    pub status: KeyStatus,
}

/// Which store a [`Keystore`] uses, for display ("keys are in: …").
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum StoreKind {
    /// The OS keychain, under this service name.
    Keychain {
        /// `parley-custody` or `parley-custody.<namespace>`.
        service: String,
    },
    /// The passphrase-encrypted file store (weaker), in this directory.
    File {
        /// The directory holding one file per key.
        dir: PathBuf,
    },
}

/// Why a key operation failed. Messages say what to do; none of them ever
/// contains secret material. Keys are carried as their public text
/// (`ed25519:…`), which keeps the error small.
#[derive(Debug, thiserror::Error)]
pub enum KeystoreError {
    /// No Secret Service (or no session bus) is reachable.
    #[error("no Secret Service on the session bus ({detail}): start gnome-keyring-daemon (or another Secret Service provider) in this session, or use --file-store (weaker: a passphrase-encrypted file)")]
    NoSecretService {
        /// What the platform said (no secrets in it).
        detail: String,
    },
    /// The keychain exists but is locked (or access was refused).
    #[error("the OS keychain is locked or refused access ({detail}): unlock it (log in to the desktop session, or run `gnome-keyring-daemon --unlock`) and try again")]
    KeychainLocked {
        /// What the platform said.
        detail: String,
    },
    /// Any other keychain failure.
    #[error("the OS keychain failed: {detail}")]
    Keychain {
        /// What the platform said.
        detail: String,
    },
    /// The keychain index entry is not what this program writes.
    #[error("the keychain index entry ({service}/index) is unreadable: {reason}; restore it or delete it with a keychain tool (the keys' own entries are untouched)")]
    CorruptIndex {
        /// The service name.
        service: String,
        /// What was wrong.
        reason: String,
    },
    /// No such key in this store.
    #[error("key {0} is not in this store (see the key list)")]
    NotFound(String),
    /// The index lists the key but its secret is gone.
    #[error("the secret of key {0} is missing from the keychain: it cannot sign; delete the stale record or re-import the key")]
    SecretMissing(String),
    /// A key is imported (or created) once.
    #[error("key {0} is already in this store: a key is imported once (delete it first to replace its label)")]
    AlreadyPresent(String),
    /// The delete confirmation did not repeat the key.
    #[error("not deleted: to delete key {0}, pass its full public key text as the confirmation (deleting a principal key cannot be undone)")]
    ConfirmationMismatch(String),
    /// A label that cannot be shown safely.
    #[error("invalid label: {0}")]
    InvalidLabel(String),
    /// A namespace that cannot be part of a service name.
    #[error("invalid keychain namespace {0:?}: use 1 to 64 characters of A-Z a-z 0-9 _ -")]
    InvalidNamespace(String),
    /// A stored secret does not belong to the key it is filed under.
    #[error("the stored secret for key {0} belongs to a different key: the store was tampered with or corrupted; do not use it")]
    WrongKeyStored(String),
    /// A seed file that is not the upstream format. The reason never quotes the file.
    #[error("{path}: {reason}")]
    SeedFile {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        reason: String,
    },
    /// A file operation failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The OS random source failed.
    #[error("the OS random source failed ({0}); no key was created")]
    Random(String),
    /// The file store passphrase does not open this key file.
    #[error("{path}: wrong passphrase for this key file")]
    WrongPassphrase {
        /// The key file.
        path: PathBuf,
    },
    /// The passphrase is right but the file was modified.
    #[error("{path}: the key file was modified or corrupted (authentication failed); restore it from a backup")]
    Tampered {
        /// The key file.
        path: PathBuf,
    },
    /// A key file that is not a version-1 envelope.
    #[error("{path}: not a Parley custody key file: {reason}")]
    BadEnvelope {
        /// The key file.
        path: PathBuf,
        /// What was wrong.
        reason: String,
    },
    /// A passphrase or KDF setting that is refused.
    #[error("{0}")]
    Kdf(String),
    /// The store directory could not be prepared.
    #[error(transparent)]
    Paths(#[from] crate::paths::PathsError),
}

type Result<T> = std::result::Result<T, KeystoreError>;

/// The stored, public part of a key (the keychain index row, the file
/// envelope's header). Never holds the secret.
#[derive(Debug, Clone)]
struct KeyMeta {
    public: PublicKey,
    label: String,
    created_at: i64,
    source: KeySource,
}

/// What a backing store does. Private: callers go through [`Keystore`],
/// which applies the shared checks before calling these.
trait Backend: Send + Sync {
    fn kind(&self) -> StoreKind;
    /// All keys, with their status.
    fn list(&self) -> Result<Vec<KeyInfo>>;
    /// Whether any trace of the key (index row, secret entry, file) exists.
    fn contains(&self, public: &PublicKey) -> Result<bool>;
    /// Stores a new key. The caller has checked it is not present.
    fn insert(&self, seed: &Zeroizing<[u8; 32]>, meta: &KeyMeta) -> Result<()>;
    /// The seed of a key; `NotFound`/`SecretMissing` if absent.
    fn load_seed(&self, public: &PublicKey) -> Result<Zeroizing<[u8; 32]>>;
    /// Removes every trace of the key; `NotFound` if there was none.
    fn remove(&self, public: &PublicKey) -> Result<()>;
}

/// The principal key store. Construct it with [`Keystore::keychain`] (the
/// default) or, only when the user chose it, [`Keystore::file_store`].
pub struct Keystore {
    backend: Box<dyn Backend>,
}

impl std::fmt::Debug for Keystore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keystore")
            .field("store", &self.backend.kind())
            .finish()
    }
}

impl Keystore {
    /// The OS keychain, namespaced by `$PARLEY_CUSTODY_NAMESPACE` if set.
    /// Nothing is contacted until the first operation.
    pub fn keychain() -> Result<Keystore> {
        let ns = std::env::var(ENV_NAMESPACE).ok().filter(|s| !s.is_empty());
        Keystore::keychain_namespaced(ns.as_deref())
    }

    /// The OS keychain under an explicit namespace (`None`: the real one).
    pub fn keychain_namespaced(namespace: Option<&str>) -> Result<Keystore> {
        let service = keychain_service(namespace)?;
        Ok(Keystore {
            backend: Box::new(keychain::KeychainStore::new(service)),
        })
    }

    /// The passphrase-encrypted file store in `dir` (created 0700), with the
    /// recommended KDF cost. Weaker than the keychain: a copy of a key file can
    /// be attacked offline, limited only by the passphrase and Argon2id's cost.
    /// Use only when the user asked for it (`--file-store`).
    pub fn file_store(dir: &Path, passphrase: Passphrase) -> Result<Keystore> {
        Keystore::file_store_with_params(dir, passphrase, KdfParams::default())
    }

    /// As [`Keystore::file_store`], with explicit KDF costs for new files
    /// (existing files keep the costs written in them). Cheaper costs exist
    /// for tests; [`KdfParams::new`] refuses costs below a floor.
    pub fn file_store_with_params(
        dir: &Path,
        passphrase: Passphrase,
        params: KdfParams,
    ) -> Result<Keystore> {
        let store = file_store::FileStore::open(dir, passphrase, params)?;
        Ok(Keystore {
            backend: Box::new(store),
        })
    }

    /// Which store this is.
    pub fn kind(&self) -> StoreKind {
        self.backend.kind()
    }

    /// Creates a new key from the OS random source and stores it.
    pub fn create(&self, label: &str) -> Result<PublicKey> {
        let mut seed = Zeroizing::new([0u8; 32]);
        getrandom::getrandom(seed.as_mut()).map_err(|e| KeystoreError::Random(e.to_string()))?;
        self.insert(&seed, label, KeySource::Created)
    }

    /// Imports an upstream `principal.key` (b64url of the 32-byte seed,
    /// optional trailing newline). Refused if the key is already here: a key
    /// is imported once, so a second import cannot silently relabel it.
    /// A file readable by group or others is accepted (the key may already be
    /// exposed; refusing would not help) with a warning in the log. Afterwards
    /// offer [`shred_file`].
    pub fn import_seed_file(&self, path: &Path, label: &str) -> Result<PublicKey> {
        let seed = seed_file::read_seed_file(path)?;
        self.insert(&seed, label, KeySource::Imported)
    }

    /// All keys with labels and status (public data only).
    pub fn list(&self) -> Result<Vec<KeyInfo>> {
        self.backend.list()
    }

    /// The keys that can sign (their secret is present).
    pub fn public_keys(&self) -> Result<Vec<PublicKey>> {
        Ok(self
            .backend
            .list()?
            .into_iter()
            .filter(|k| k.status == KeyStatus::Present)
            .map(|k| k.public)
            .collect())
    }

    /// Deletes a key for good. `confirm` must be the key's full public key
    /// text (`ed25519:…`), typed or pasted again by the user: deleting a
    /// principal key cannot be undone, so a stray call or a wrong row in a
    /// list must not be enough.
    pub fn delete(&self, public: &PublicKey, confirm: &str) -> Result<()> {
        if confirm != public.to_string() {
            return Err(KeystoreError::ConfirmationMismatch(public.to_string()));
        }
        self.backend.remove(public)?;
        tracing::info!(key = %public, "principal key deleted");
        Ok(())
    }

    /// The secret key, for the signer only (the one module that signs). The
    /// stored seed is checked to belong to `public`, so a swapped entry can
    /// never make us sign under a key other than the one the human saw. The
    /// key is in its own page, locked in RAM where the platform allows, and
    /// zeroized when dropped.
    pub(crate) fn load(&self, public: &PublicKey) -> Result<LockedKey> {
        let seed = self.backend.load_seed(public)?;
        let secret = LockedKey::new(&seed);
        if &secret.public() != public {
            return Err(KeystoreError::WrongKeyStored(public.to_string()));
        }
        Ok(secret)
    }

    /// Tests only (the `test-approver` feature, which no binary enables): the
    /// secret, to check what the keychain holds.
    #[cfg(feature = "test-approver")]
    pub fn load_for_tests(&self, public: &PublicKey) -> Result<SecretKey> {
        let seed = self.backend.load_seed(public)?;
        let secret = SecretKey::from_seed(&seed);
        if &secret.public() != public {
            return Err(KeystoreError::WrongKeyStored(public.to_string()));
        }
        Ok(secret)
    }

    fn insert(
        &self,
        seed: &Zeroizing<[u8; 32]>,
        label: &str,
        source: KeySource,
    ) -> Result<PublicKey> {
        check_label(label)?;
        let public = SecretKey::from_seed(seed).public();
        if self.backend.contains(&public)? {
            return Err(KeystoreError::AlreadyPresent(public.to_string()));
        }
        let meta = KeyMeta {
            public: public.clone(),
            label: label.to_owned(),
            created_at: now_unix(),
            source,
        };
        self.backend.insert(seed, &meta)?;
        tracing::info!(key = %public, ?source, "principal key stored");
        Ok(public)
    }
}

/// Decodes the upstream seed text (b64url of 32 bytes, 43 characters) with
/// every copy of the seed in a zeroizing container: the decoded bytes go to
/// the heap straight into `Zeroizing`, not through an array returned by value
/// on the stack. `None` if it is not such a text (nothing of it is kept).
fn decode_seed(text: &str) -> Option<Zeroizing<[u8; 32]>> {
    if text.len() != 43 {
        return None;
    }
    let bytes = Zeroizing::new(parley_core::b64::decode(text).ok()?);
    if bytes.len() != 32 {
        return None;
    }
    let mut seed = Zeroizing::new([0u8; 32]);
    seed.copy_from_slice(&bytes);
    Some(seed)
}

/// `parley-custody` or `parley-custody.<namespace>`.
fn keychain_service(namespace: Option<&str>) -> Result<String> {
    match namespace {
        None => Ok(KEYCHAIN_SERVICE.to_owned()),
        Some(ns) => {
            let ok = (1..=64).contains(&ns.len())
                && ns
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
            if ok {
                Ok(format!("{KEYCHAIN_SERVICE}.{ns}"))
            } else {
                Err(KeystoreError::InvalidNamespace(ns.to_owned()))
            }
        }
    }
}

/// Labels are shown in the review window and the key list: they must be
/// short and free of control characters (the UI would show those escaped,
/// but a label is the user's own words, so refusing is kinder than garbling).
fn check_label(label: &str) -> Result<()> {
    let count = label.chars().count();
    if label.trim().is_empty() {
        return Err(KeystoreError::InvalidLabel(
            "a label must not be empty".into(),
        ));
    }
    if count > MAX_LABEL_CHARS {
        return Err(KeystoreError::InvalidLabel(format!(
            "{count} characters; at most {MAX_LABEL_CHARS}"
        )));
    }
    if label.chars().any(char::is_control) {
        return Err(KeystoreError::InvalidLabel(
            "control characters (newlines, tabs, escapes) are not allowed".into(),
        ));
    }
    Ok(())
}

fn now_unix() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces() {
        assert_eq!(keychain_service(None).unwrap(), "parley-custody");
        assert_eq!(
            keychain_service(Some("test-1_a")).unwrap(),
            "parley-custody.test-1_a"
        );
        for bad in ["", "a b", "a/b", "é", &"x".repeat(65)] {
            assert!(keychain_service(Some(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn seed_text_decodes_only_when_it_is_32_bytes() {
        let text = parley_core::b64::encode([5u8; 32]);
        assert_eq!(*decode_seed(&text).unwrap(), [5u8; 32]);
        assert!(decode_seed(&parley_core::b64::encode([5u8; 31])).is_none());
        assert!(decode_seed(&parley_core::b64::encode([5u8; 33])).is_none());
        assert!(decode_seed(&format!("{}=", &text[..42])).is_none());
    }

    #[test]
    fn labels() {
        assert!(check_label("Alice's main key").is_ok());
        assert!(check_label("").is_err());
        assert!(check_label("  ").is_err());
        assert!(check_label("a\nb").is_err());
        assert!(check_label("\u{1b}[31m").is_err());
        assert!(check_label(&"é".repeat(MAX_LABEL_CHARS)).is_ok());
        assert!(check_label(&"é".repeat(MAX_LABEL_CHARS + 1)).is_err());
    }
}

//! The OS keychain store, through the `keyring` crate: Secret Service on
//! Linux (gnome-keyring, KeePassXC…), Keychain on macOS, Credential Manager
//! on Windows (the native stores are selected by `Cargo.toml` per target).
//!
//! Layout: keyring entries are `(service, user) → secret string`.
//! - service = `parley-custody` or `parley-custody.<namespace>`;
//! - user = the public key text (`ed25519:…`), secret = b64url of the seed
//!   (the upstream key-file format);
//! - user = `index`, secret = JSON `[{public,label,created_at,source}]`.
//!   keyring 3 cannot enumerate entries, so this index is how keys are
//!   listed. It holds no secrets. If it names a key whose entry is gone, the
//!   listing marks that key `Missing` instead of failing.
//!
//! The index is read-modify-written without a lock: one custody process per
//! namespace is assumed (the daemon or the app, not both at once).
//!
//! A locked keychain may make the platform show an unlock prompt; on a
//! desktop the call waits for the user, headless it fails at once.
//!
//! Zeroization: our copies of the secret are in `Zeroizing` containers. The
//! keyring crate and the D-Bus library keep transient copies (the decrypted
//! reply, the `String` `get_password` returns before we wrap it) that we
//! cannot wipe; they live only for the duration of the call.

use super::{Backend, KeyInfo, KeyMeta, KeySource, KeyStatus, KeystoreError, Result, StoreKind};
use parley_core::keys::PublicKey;
use serde::{Deserialize, Serialize};
use zeroize::{Zeroize, Zeroizing};

/// The keyring user name of the index entry. Cannot collide with a key,
/// which always starts with `ed25519:`.
const INDEX_USER: &str = "index";

/// One index row: public data only.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct IndexRecord {
    public: String,
    label: String,
    created_at: i64,
    source: KeySource,
}

pub(super) struct KeychainStore {
    service: String,
}

impl KeychainStore {
    pub(super) fn new(service: String) -> Self {
        KeychainStore { service }
    }

    fn entry(&self, user: &str) -> Result<keyring::Entry> {
        keyring::Entry::new(&self.service, user).map_err(map_keyring_error)
    }

    fn read_index(&self) -> Result<Vec<IndexRecord>> {
        let text = match self.entry(INDEX_USER)?.get_password() {
            Ok(text) => text,
            Err(keyring::Error::NoEntry) => return Ok(Vec::new()),
            Err(e) => return Err(map_keyring_error(e)),
        };
        serde_json::from_str(&text).map_err(|e| KeystoreError::CorruptIndex {
            service: self.service.clone(),
            reason: e.to_string(),
        })
    }

    fn write_index(&self, records: &[IndexRecord]) -> Result<()> {
        let text = serde_json::to_string(records).map_err(|e| KeystoreError::Keychain {
            detail: format!("cannot encode the index: {e}"),
        })?;
        self.entry(INDEX_USER)?
            .set_password(&text)
            .map_err(map_keyring_error)
    }

    /// Whether the key's secret entry exists, without fetching the secret.
    fn secret_present(&self, public: &PublicKey) -> Result<bool> {
        match self.entry(&public.to_string())?.get_attributes() {
            Ok(_) => Ok(true),
            Err(keyring::Error::NoEntry) => Ok(false),
            Err(e) => Err(map_keyring_error(e)),
        }
    }

    fn parse_public(&self, text: &str) -> Result<PublicKey> {
        text.parse().map_err(|e| KeystoreError::CorruptIndex {
            service: self.service.clone(),
            reason: format!("bad public key {text:?}: {e}"),
        })
    }
}

impl Backend for KeychainStore {
    fn kind(&self) -> StoreKind {
        StoreKind::Keychain {
            service: self.service.clone(),
        }
    }

    fn list(&self) -> Result<Vec<KeyInfo>> {
        let mut out = Vec::new();
        for rec in self.read_index()? {
            let public = self.parse_public(&rec.public)?;
            let status = if self.secret_present(&public)? {
                KeyStatus::Present
            } else {
                KeyStatus::Missing
            };
            out.push(KeyInfo {
                public,
                label: rec.label,
                created_at: rec.created_at,
                source: rec.source,
                status,
            });
        }
        Ok(out)
    }

    fn contains(&self, public: &PublicKey) -> Result<bool> {
        let text = public.to_string();
        Ok(self.read_index()?.iter().any(|r| r.public == text) || self.secret_present(public)?)
    }

    fn insert(&self, seed: &Zeroizing<[u8; 32]>, meta: &KeyMeta) -> Result<()> {
        let mut index = self.read_index()?;
        let user = meta.public.to_string();
        let entry = self.entry(&user)?;
        let seed_text = Zeroizing::new(parley_core::b64::encode(seed.as_ref()));
        entry.set_password(&seed_text).map_err(map_keyring_error)?;
        index.push(IndexRecord {
            public: user,
            label: meta.label.clone(),
            created_at: meta.created_at,
            source: meta.source,
        });
        if let Err(e) = self.write_index(&index) {
            // Without an index row the key would be invisible: take the
            // secret back out so the store stays consistent, and report.
            if let Err(undo) = entry.delete_credential() {
                tracing::error!(key = %meta.public, error = %map_keyring_error(undo), "could not roll back a key after the index update failed");
            }
            return Err(e);
        }
        Ok(())
    }

    fn load_seed(&self, public: &PublicKey) -> Result<Zeroizing<[u8; 32]>> {
        let text = match self.entry(&public.to_string())?.get_password() {
            Ok(text) => Zeroizing::new(text),
            Err(keyring::Error::NoEntry) => {
                let listed = self
                    .read_index()?
                    .iter()
                    .any(|r| r.public == public.to_string());
                return Err(if listed {
                    KeystoreError::SecretMissing(public.to_string())
                } else {
                    KeystoreError::NotFound(public.to_string())
                });
            }
            Err(e) => return Err(map_keyring_error(e)),
        };
        super::decode_seed(text.trim()).ok_or_else(|| KeystoreError::Keychain {
            detail: format!(
                "the keychain entry of {public} is not a Parley seed (it was changed outside this program)"
            ),
        })
    }

    fn remove(&self, public: &PublicKey) -> Result<()> {
        let text = public.to_string();
        let mut index = self.read_index()?;
        let before = index.len();
        index.retain(|r| r.public != text);
        let had_secret = match self.entry(&text)?.delete_credential() {
            Ok(()) => true,
            Err(keyring::Error::NoEntry) => false,
            Err(e) => return Err(map_keyring_error(e)),
        };
        if index.len() == before {
            return if had_secret {
                Ok(())
            } else {
                Err(KeystoreError::NotFound(public.to_string()))
            };
        }
        self.write_index(&index)
    }
}

/// Maps keyring errors to messages that say what to do. Never formats a
/// keyring error with `Debug`, and wipes the bytes a `BadEncoding` carries
/// (they are whatever the entry held, possibly a secret).
fn map_keyring_error(e: keyring::Error) -> KeystoreError {
    match e {
        keyring::Error::NoStorageAccess(inner) => KeystoreError::KeychainLocked {
            detail: inner.to_string(),
        },
        keyring::Error::PlatformFailure(inner) => {
            let detail = inner.to_string();
            let lower = detail.to_ascii_lowercase();
            if lower.contains("locked") || lower.contains("prompt") {
                KeystoreError::KeychainLocked { detail }
            } else if lower.contains("dbus") || lower.contains("secret service") {
                // No bus, no provider on the bus, or the bus refused the call.
                KeystoreError::NoSecretService { detail }
            } else {
                KeystoreError::Keychain { detail }
            }
        }
        keyring::Error::BadEncoding(mut bytes) => {
            bytes.zeroize();
            KeystoreError::Keychain {
                detail: "an entry is not UTF-8 text (it was changed outside this program)".into(),
            }
        }
        keyring::Error::Ambiguous(items) => KeystoreError::Keychain {
            detail: format!(
                "{} keychain items match one entry; remove the duplicates with a keychain tool",
                items.len()
            ),
        },
        other => KeystoreError::Keychain {
            detail: other.to_string(),
        },
    }
}

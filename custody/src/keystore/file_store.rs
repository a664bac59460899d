//! The passphrase-encrypted file store, for headless servers without a
//! keychain. Chosen only by the caller (`--file-store`); never a fallback.
//!
//! Weaker than the keychain, and documented as such: anyone who can copy a
//! key file can try passphrases offline, slowed only by Argon2id. It is as
//! strong as the passphrase.
//!
//! One file per key, `<dir>/<b64url of the public key>.json`, mode 0600,
//! written to a temporary file, synced, then linked into place (never
//! overwriting). The file is a JSON envelope:
//!
//! ```json
//! {"v":1,"public":"ed25519:…","label":"…","created_at":1700000000,"source":"created",
//!  "kdf":{"alg":"argon2id","version":19,"m_kib":65536,"t":3,"p":1,"salt":"<b64url 16 bytes>"},
//!  "check":"<b64url 32 bytes>","nonce":"<b64url 24 bytes>","ct":"<b64url 48 bytes>"}
//! ```
//!
//! - Argon2id(passphrase, salt) gives 64 bytes: the first 32 are the
//!   XChaCha20-Poly1305 key; `check` = SHA-256("parley-custody/file-store/check/v1"
//!   ‖ the last 32). `check` tells a wrong passphrase apart from a modified
//!   file without weakening anything: it costs an attacker the same Argon2id
//!   run per guess as trying to decrypt.
//! - `ct` = XChaCha20-Poly1305(key, nonce, seed) with associated data = the
//!   canonical JSON (§10) of the header `{v, public, label, created_at, source, kdf}`,
//!   so changing any header field (a label, the KDF costs) fails
//!   authentication. `list` shows headers without that check (it would cost
//!   one Argon2id run per key); `load` checks everything.

use super::{Backend, KeyInfo, KeyMeta, KeySource, KeyStatus, KeystoreError, Result, StoreKind};
use argon2::{Algorithm, Argon2, Params, Version};
use chacha20poly1305::aead::{AeadInPlace, KeyInit};
use chacha20poly1305::{Key, XChaCha20Poly1305, XNonce};
use parley_core::b64;
use parley_core::keys::PublicKey;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use zeroize::Zeroizing;

/// A key file is a few hundred bytes; refuse anything far larger unread.
const MAX_FILE: u64 = 64 * 1024;
const CHECK_DOMAIN: &[u8] = b"parley-custody/file-store/check/v1";
const MIN_PASSPHRASE_CHARS: usize = 8;

/// The file store passphrase. Zeroized on drop, redacted in `Debug`, not
/// `Serialize`.
pub struct Passphrase(Zeroizing<String>);

impl Passphrase {
    /// Wraps a passphrase (read from a prompt or a file descriptor).
    pub fn new(text: Zeroizing<String>) -> Self {
        Passphrase(text)
    }
}

impl std::fmt::Debug for Passphrase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Passphrase(<redacted>)")
    }
}

/// Argon2id costs. Stored in each file, so files written with other costs
/// keep opening when the default changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct KdfParams {
    /// Memory, in KiB.
    pub m_kib: u32,
    /// Passes.
    pub t: u32,
    /// Lanes.
    pub p: u32,
}

impl Default for KdfParams {
    /// 64 MiB, 3 passes, 1 lane: the RFC 9106 "second recommended" shape,
    /// about a third of a second on a laptop.
    fn default() -> Self {
        KdfParams {
            m_kib: 64 * 1024,
            t: 3,
            p: 1,
        }
    }
}

impl KdfParams {
    /// Least memory accepted (1 MiB): below it a guess is nearly free.
    pub const MIN_M_KIB: u32 = 1024;
    /// Most memory accepted (1 GiB), also when reading a file, so a planted
    /// file cannot make `load` allocate without bound.
    pub const MAX_M_KIB: u32 = 1024 * 1024;
    /// Most passes accepted.
    pub const MAX_T: u32 = 16;
    /// Most lanes accepted.
    pub const MAX_P: u32 = 8;

    /// Checked costs. Tests use the floor; real stores use [`KdfParams::default`].
    pub fn new(m_kib: u32, t: u32, p: u32) -> Result<KdfParams> {
        let ok = (Self::MIN_M_KIB..=Self::MAX_M_KIB).contains(&m_kib)
            && (1..=Self::MAX_T).contains(&t)
            && (1..=Self::MAX_P).contains(&p);
        if !ok {
            return Err(KeystoreError::Kdf(format!(
                "Argon2id costs m={m_kib} KiB, t={t}, p={p} are out of range (m {}..={} KiB, t 1..={}, p 1..={})",
                Self::MIN_M_KIB,
                Self::MAX_M_KIB,
                Self::MAX_T,
                Self::MAX_P
            )));
        }
        Ok(KdfParams { m_kib, t, p })
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct KdfSection {
    alg: String,
    version: u32,
    m_kib: u32,
    t: u32,
    p: u32,
    salt: String,
}

/// The authenticated header (everything but `check`, `nonce`, `ct`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Envelope {
    v: u32,
    public: String,
    label: String,
    created_at: i64,
    source: KeySource,
    kdf: KdfSection,
    check: String,
    nonce: String,
    ct: String,
}

impl Envelope {
    /// The associated data: canonical JSON of the header fields.
    fn associated_data(&self) -> std::result::Result<String, String> {
        let header = serde_json::json!({
            "v": self.v,
            "public": self.public,
            "label": self.label,
            "created_at": self.created_at,
            "source": self.source,
            "kdf": self.kdf,
        });
        parley_core::canonical::canonical(&header).map_err(|e| e.to_string())
    }
}

pub(super) struct FileStore {
    dir: PathBuf,
    passphrase: Passphrase,
    params: KdfParams,
}

impl FileStore {
    pub(super) fn open(dir: &Path, passphrase: Passphrase, params: KdfParams) -> Result<Self> {
        if passphrase.0.chars().count() < MIN_PASSPHRASE_CHARS {
            return Err(KeystoreError::Kdf(format!(
                "the file store passphrase must be at least {MIN_PASSPHRASE_CHARS} characters (it is the only protection of the key files)"
            )));
        }
        crate::paths::ensure_private_dir(dir)?;
        Ok(FileStore {
            dir: dir.to_path_buf(),
            passphrase,
            params,
        })
    }

    fn path_of(&self, public: &PublicKey) -> PathBuf {
        self.dir
            .join(format!("{}.json", b64::encode(public.as_bytes())))
    }

    fn read_envelope(&self, path: &Path) -> Result<Envelope> {
        let io = |source| KeystoreError::Io {
            path: path.to_path_buf(),
            source,
        };
        let bad = |reason: String| KeystoreError::BadEnvelope {
            path: path.to_path_buf(),
            reason,
        };
        let file = std::fs::File::open(path).map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        if meta.len() > MAX_FILE {
            return Err(bad("too large".into()));
        }
        warn_if_exposed(path, &meta);
        let mut text = String::new();
        file.take(MAX_FILE).read_to_string(&mut text).map_err(io)?;
        let env: Envelope = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
        if env.v != 1 {
            return Err(bad(format!(
                "version {} (this program reads version 1)",
                env.v
            )));
        }
        if env.kdf.alg != "argon2id" || env.kdf.version != 0x13 {
            return Err(bad(format!(
                "unknown KDF {} v{}",
                env.kdf.alg, env.kdf.version
            )));
        }
        // The file name is derived from the key; a file renamed over another
        // key's name must not be listed under that name.
        let public: PublicKey = env.public.parse().map_err(|e| bad(format!("{e}")))?;
        if self.path_of(&public).file_name() != path.file_name() {
            return Err(bad("the file name does not match the key inside".into()));
        }
        Ok(env)
    }

    fn derive(&self, params: KdfParams, salt: &[u8]) -> Result<Zeroizing<[u8; 64]>> {
        let argon_params = Params::new(params.m_kib, params.t, params.p, Some(64))
            .map_err(|e| KeystoreError::Kdf(format!("Argon2id parameters: {e}")))?;
        let argon = Argon2::new(Algorithm::Argon2id, Version::V0x13, argon_params);
        let mut out = Zeroizing::new([0u8; 64]);
        // argon2's working memory is not zeroized by the crate (its `zeroize`
        // feature is off); it holds passphrase-derived state, not the key.
        argon
            .hash_password_into(self.passphrase.0.as_bytes(), salt, out.as_mut())
            .map_err(|e| KeystoreError::Kdf(format!("Argon2id failed: {e}")))?;
        Ok(out)
    }
}

fn check_value(derived: &[u8; 64]) -> String {
    let mut h = Sha256::new();
    h.update(CHECK_DOMAIN);
    h.update(&derived[32..]);
    b64::encode(h.finalize())
}

fn random<const N: usize>() -> Result<[u8; N]> {
    let mut out = [0u8; N];
    getrandom::getrandom(&mut out).map_err(|e| KeystoreError::Random(e.to_string()))?;
    Ok(out)
}

impl Backend for FileStore {
    fn kind(&self) -> StoreKind {
        StoreKind::File {
            dir: self.dir.clone(),
        }
    }

    fn list(&self) -> Result<Vec<KeyInfo>> {
        let io = |source| KeystoreError::Io {
            path: self.dir.clone(),
            source,
        };
        let mut out = Vec::new();
        for entry in std::fs::read_dir(&self.dir).map_err(io)? {
            let path = entry.map_err(io)?.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            // Temporary files start with a dot; anything else is not ours.
            if name.starts_with('.') || !name.ends_with(".json") {
                continue;
            }
            let env = self.read_envelope(&path)?;
            let public = env.public.parse().map_err(|e| KeystoreError::BadEnvelope {
                path: path.clone(),
                reason: format!("{e}"),
            })?;
            out.push(KeyInfo {
                public,
                label: env.label,
                created_at: env.created_at,
                source: env.source,
                status: KeyStatus::Present,
            });
        }
        out.sort_by(|a, b| {
            (a.created_at, a.public.to_string()).cmp(&(b.created_at, b.public.to_string()))
        });
        Ok(out)
    }

    fn contains(&self, public: &PublicKey) -> Result<bool> {
        match std::fs::symlink_metadata(self.path_of(public)) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(KeystoreError::Io {
                path: self.path_of(public),
                source,
            }),
        }
    }

    fn insert(&self, seed: &Zeroizing<[u8; 32]>, meta: &KeyMeta) -> Result<()> {
        let salt = random::<16>()?;
        let nonce = random::<24>()?;
        let derived = self.derive(self.params, &salt)?;
        let mut env = Envelope {
            v: 1,
            public: meta.public.to_string(),
            label: meta.label.clone(),
            created_at: meta.created_at,
            source: meta.source,
            kdf: KdfSection {
                alg: "argon2id".into(),
                version: 0x13,
                m_kib: self.params.m_kib,
                t: self.params.t,
                p: self.params.p,
                salt: b64::encode(salt),
            },
            check: check_value(&derived),
            nonce: b64::encode(nonce),
            ct: String::new(),
        };
        let ad = env.associated_data().map_err(KeystoreError::Kdf)?;
        let cipher = XChaCha20Poly1305::new(Key::from_slice(&derived[..32]));
        // Capacity for seed + tag up front, so no reallocation leaves an
        // unwiped copy of the seed behind.
        let mut buf = Zeroizing::new(Vec::with_capacity(32 + 16));
        buf.extend_from_slice(seed.as_ref());
        cipher
            .encrypt_in_place(XNonce::from_slice(&nonce), ad.as_bytes(), &mut *buf)
            .map_err(|_| KeystoreError::Kdf("encryption failed".into()))?;
        env.ct = b64::encode(&*buf);
        let text = serde_json::to_string_pretty(&env)
            .map_err(|e| KeystoreError::Kdf(format!("cannot encode the key file: {e}")))?;
        write_new_private(&self.dir, &self.path_of(&meta.public), text.as_bytes())
    }

    fn load_seed(&self, public: &PublicKey) -> Result<Zeroizing<[u8; 32]>> {
        let path = self.path_of(public);
        if !self.contains(public)? {
            return Err(KeystoreError::NotFound(public.to_string()));
        }
        let env = self.read_envelope(&path)?;
        let tampered = || KeystoreError::Tampered { path: path.clone() };
        if env.public != public.to_string() {
            return Err(tampered());
        }
        let params = KdfParams::new(env.kdf.m_kib, env.kdf.t, env.kdf.p)?;
        let salt = b64::decode(&env.kdf.salt).map_err(|_| tampered())?;
        let nonce = b64::decode_array::<24>(&env.nonce).map_err(|_| tampered())?;
        let ct = b64::decode(&env.ct).map_err(|_| tampered())?;
        if salt.len() < 16 || ct.len() != 32 + 16 {
            return Err(tampered());
        }
        let derived = self.derive(params, &salt)?;
        if check_value(&derived) != env.check {
            return Err(KeystoreError::WrongPassphrase { path });
        }
        let ad = env.associated_data().map_err(|_| tampered())?;
        let cipher = XChaCha20Poly1305::new(Key::from_slice(&derived[..32]));
        let mut buf = Zeroizing::new(ct);
        cipher
            .decrypt_in_place(XNonce::from_slice(&nonce), ad.as_bytes(), &mut *buf)
            .map_err(|_| tampered())?;
        let mut seed = Zeroizing::new([0u8; 32]);
        if buf.len() != 32 {
            return Err(tampered());
        }
        seed.copy_from_slice(&buf);
        Ok(seed)
    }

    fn remove(&self, public: &PublicKey) -> Result<()> {
        let path = self.path_of(public);
        match std::fs::remove_file(&path) {
            Ok(()) => {
                sync_dir(&self.dir);
                Ok(())
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Err(KeystoreError::NotFound(public.to_string()))
            }
            Err(source) => Err(KeystoreError::Io { path, source }),
        }
    }
}

/// Writes `bytes` to `dest` (mode 0600) without ever overwriting an existing
/// file and without leaving a partial file under `dest` after a crash:
/// temporary file, fsync, hard link into place, unlink the temporary.
fn write_new_private(dir: &Path, dest: &Path, bytes: &[u8]) -> Result<()> {
    let suffix = b64::encode(random::<9>()?);
    let tmp = dir.join(format!(".tmp-{suffix}"));
    let io = |path: &Path, source| KeystoreError::Io {
        path: path.to_path_buf(),
        source,
    };
    let result = (|| {
        let mut f = crate::paths::create_private_file(&tmp).map_err(|e| io(&tmp, e))?;
        f.write_all(bytes).map_err(|e| io(&tmp, e))?;
        f.sync_all().map_err(|e| io(&tmp, e))?;
        std::fs::hard_link(&tmp, dest).map_err(|e| io(dest, e))
    })();
    let _ = std::fs::remove_file(&tmp);
    sync_dir(dir);
    result
}

#[cfg(unix)]
fn warn_if_exposed(path: &Path, meta: &std::fs::Metadata) {
    use std::os::unix::fs::PermissionsExt;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        tracing::warn!(file = %path.display(), mode = format!("{mode:o}"), "key file is accessible to other users; it should be 0600");
    }
}

#[cfg(not(unix))]
fn warn_if_exposed(_path: &Path, _meta: &std::fs::Metadata) {}

fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}

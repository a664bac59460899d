//! YEA's approval store on disk, as far as an approval is concerned
//! (SPEC-approval §8, `FileStore`): where it is, and the consent file
//! `consents/<planHash>` that `parley approve` writes and a local job server
//! reads and consumes.
//!
//! Why here: the agent side (`parley approve`, the playground's job server)
//! writes and reads it, and must not link custody; `parley-core` does no I/O.
//!
//! Writing, as upstream lays it out: directories created private (0700);
//! the consent written to a uniquely named temp file (`<name>.<random>.tmp`,
//! 0600, `O_EXCL`) and then moved into place; the token exactly, no
//! trailing newline. A consent already there that still counts (unused and
//! unexpired) is never replaced (a hard link, which fails if the name
//! exists); one that no longer counts (consumed by the server, expired, or
//! not a consent) is replaced by a rename, so that the same plan can be
//! approved again once its consent was used.

use crate::private_fs;
use std::ffi::OsString;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Why the store cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// None of `YEA_STORE`, `YEA_HOME` or a home directory is known.
    #[error("no store directory: set YEA_STORE (or YEA_HOME, or HOME)")]
    NoDirectory,
    /// A plan hash that is not 43 base64url characters: never a file name.
    #[error("{0:?} is not a plan hash (43 base64url characters)")]
    BadPlanHash(String),
    /// The token is not a `pg1.` token of base64url text.
    #[error("refusing to store a consent that is not a pg1. token")]
    NotAToken,
    /// An unused, unexpired consent for this plan is already stored; it is
    /// never replaced.
    #[error("an unused consent for this plan is already stored at {0}; it is left as it is, and the server's next identical call runs with it")]
    Exists(PathBuf),
    /// The file system said no.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
}

/// The store directory from the environment: `$YEA_STORE`, else
/// `$YEA_HOME/store`, else `~/.yea/store`. Empty variables count as unset.
pub fn store_dir_with(
    var: impl Fn(&str) -> Option<OsString>,
    home: Option<PathBuf>,
) -> Result<PathBuf, StoreError> {
    let set = |k: &str| var(k).filter(|v| !v.is_empty());
    if let Some(s) = set("YEA_STORE") {
        return Ok(PathBuf::from(s));
    }
    if let Some(h) = set("YEA_HOME") {
        return Ok(PathBuf::from(h).join("store"));
    }
    home.map(|h| h.join(".yea").join("store"))
        .ok_or(StoreError::NoDirectory)
}

/// [`store_dir_with`] this process's environment and `$HOME`.
pub fn store_dir() -> Result<PathBuf, StoreError> {
    store_dir_with(
        |k| std::env::var_os(k),
        std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from),
    )
}

/// Whether `s` is a plan hash: 43 base64url characters (a SHA-256).
pub fn is_plan_hash(s: &str) -> bool {
    s.len() == 43
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// `<store>/consents/<planHash>`, refusing anything that is not a plan hash.
pub fn consent_path(store: &Path, plan_hash: &str) -> Result<PathBuf, StoreError> {
    if !is_plan_hash(plan_hash) {
        return Err(StoreError::BadPlanHash(plan_hash.to_string()));
    }
    Ok(store.join("consents").join(plan_hash))
}

/// The most of a stored consent read to judge it (a consent is well under 2 KiB).
const MAX_STORED_CONSENT: u64 = 64 * 1024;

/// Whether the consent stored at `path` still counts at `now` (see
/// [`parley_core::job::stored_consent`]); a file that cannot be read as one
/// (too large, not UTF-8) does not.
fn still_counts(store: &Path, path: &Path, now: i64) -> bool {
    use parley_core::job::{consumed_marker, stored_consent, StoredConsent};
    let mut text = String::new();
    let read = std::fs::File::open(path).and_then(|f| {
        io::Read::read_to_string(&mut io::Read::take(f, MAX_STORED_CONSENT), &mut text)
    });
    if read.is_err() {
        // Unreadable: keep it rather than guess (the caller reports Exists).
        return path.symlink_metadata().is_ok();
    }
    let consumed = |id: &str| {
        store
            .join("consumed")
            .join(consumed_marker(id))
            .symlink_metadata()
            .is_ok()
    };
    stored_consent(&text, now, consumed) == StoredConsent::Live
}

/// Writes `token` as the consent for `plan_hash`, never replacing one that
/// still counts at `now` (see the module). Returns the file's path.
pub fn write_consent(
    store: &Path,
    plan_hash: &str,
    token: &str,
    now: i64,
) -> Result<PathBuf, StoreError> {
    let path = consent_path(store, plan_hash)?;
    let body = token.strip_prefix("pg1.").ok_or(StoreError::NotAToken)?;
    if body.is_empty()
        || !body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(StoreError::NotAToken);
    }
    let dir = store.join("consents");
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |source| StoreError::Io { path: p, source }
    };
    private_fs::create_dir_all(store).map_err(io(store))?;
    private_fs::create_dir_all(&dir).map_err(io(&dir))?;
    let replace = match path.symlink_metadata() {
        Ok(m) if m.is_file() && !still_counts(store, &path, now) => true,
        Ok(_) => return Err(StoreError::Exists(path)),
        Err(_) => false,
    };
    let tmp = dir.join(format!("{plan_hash}.{}.tmp", random_suffix()));
    let written = (|| {
        let mut f = private_fs::create_new(&tmp)?;
        f.write_all(token.as_bytes())?;
        f.sync_all()
    })();
    if let Err(source) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(StoreError::Io { path: tmp, source });
    }
    if replace {
        // Spent: a rename puts the new one in its place atomically.
        return match std::fs::rename(&tmp, &path) {
            Ok(()) => Ok(path),
            Err(source) => {
                let _ = std::fs::remove_file(&tmp);
                Err(StoreError::Io { path, source })
            }
        };
    }
    // A rename would replace a consent written meanwhile; a link cannot.
    let linked = std::fs::hard_link(&tmp, &path);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(path),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(StoreError::Exists(path)),
        Err(source) => Err(StoreError::Io { path, source }),
    }
}

/// Reads the consent stored for `plan_hash`, if any (the server's side).
pub fn read_consent(store: &Path, plan_hash: &str) -> Result<Option<String>, StoreError> {
    let path = consent_path(store, plan_hash)?;
    match std::fs::read_to_string(&path) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(StoreError::Io { path, source }),
    }
}

fn random_suffix() -> String {
    let mut b = [0u8; 9];
    // Uniqueness only: O_EXCL refuses a clash anyway.
    if getrandom::getrandom(&mut b).is_err() {
        b[..8].copy_from_slice(
            &std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0)
                .to_le_bytes(),
        );
    }
    parley_core::b64::encode(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_store_is_yea_store_else_yea_home_else_home() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| OsString::from(*v))
            }
        };
        let home = Some(PathBuf::from("/h"));
        assert_eq!(
            store_dir_with(
                env(&[("YEA_STORE", "/s"), ("YEA_HOME", "/y")]),
                home.clone()
            )
            .unwrap(),
            PathBuf::from("/s")
        );
        assert_eq!(
            store_dir_with(env(&[("YEA_STORE", ""), ("YEA_HOME", "/y")]), home.clone()).unwrap(),
            PathBuf::from("/y/store")
        );
        assert_eq!(
            store_dir_with(env(&[]), home).unwrap(),
            PathBuf::from("/h/.yea/store")
        );
        assert!(store_dir_with(env(&[]), None).is_err());
    }

    #[test]
    fn a_path_like_plan_hash_is_never_a_file_name() {
        assert!(consent_path(Path::new("/s"), "../../etc/passwd").is_err());
        assert!(consent_path(Path::new("/s"), &"a".repeat(43)).is_ok());
    }
}

//! The agent's key file, in the upstream format: `$PARLEY_HOME/agent.key`
//! (default `~/.parley/agent.key`), base64url of the 32-byte seed and a
//! newline, mode 0600 in a 0700 directory. Made if missing; never
//! overwritten.

use crate::ids::random_key;
use parley_core::SecretKey;
use parley_custody_client::private_fs;
use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use zeroize::Zeroizing;

/// The environment variable naming the agent's directory.
pub const HOME_ENV: &str = "PARLEY_HOME";
/// A key file is 43 characters and a newline.
const MAX_KEY_FILE: u64 = 256;

/// Why the key could not be loaded or made.
#[derive(Debug, thiserror::Error)]
pub enum KeyFileError {
    /// Neither `$PARLEY_HOME` nor `$HOME` is set.
    #[error(
        "cannot find the agent's directory: set {HOME_ENV} (or HOME), or pass --agent-key FILE"
    )]
    NoHome,
    /// Reading or writing failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The file is not a key file.
    #[error("{0} is not an agent key file (expected base64url of a 32-byte seed and a newline)")]
    Malformed(PathBuf),
}

/// `$PARLEY_HOME/agent.key`, else `~/.parley/agent.key`.
pub fn default_path() -> Result<PathBuf, KeyFileError> {
    let get = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(home) = get(HOME_ENV) {
        return Ok(PathBuf::from(home).join("agent.key"));
    }
    get("HOME")
        .map(|h| PathBuf::from(h).join(".parley").join("agent.key"))
        .ok_or(KeyFileError::NoHome)
}

/// Loads the key at `path`, making it (and its directory) if missing.
/// Returns the key and whether it was made now.
pub fn load_or_create(path: &Path) -> Result<(SecretKey, bool), KeyFileError> {
    let io = |source| KeyFileError::Io {
        path: path.to_path_buf(),
        source,
    };
    match fs::File::open(path) {
        Ok(file) => {
            let mut text = Zeroizing::new(String::new());
            file.take(MAX_KEY_FILE)
                .read_to_string(&mut text)
                .map_err(io)?;
            let key = SecretKey::from_seed_b64(&text)
                .map_err(|_| KeyFileError::Malformed(path.to_path_buf()))?;
            Ok((key, false))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                create_private_dir(dir).map_err(|source| KeyFileError::Io {
                    path: dir.to_path_buf(),
                    source,
                })?;
            }
            let key = random_key();
            match private_fs::create_new(path) {
                Ok(mut f) => {
                    let text = key.to_seed_b64();
                    f.write_all(text.as_bytes()).map_err(io)?;
                    f.write_all(b"\n").map_err(io)?;
                    f.sync_all().map_err(io)?;
                    Ok((key, true))
                }
                // Made by someone else in between: use theirs.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => load_or_create(path),
                Err(e) => Err(io(e)),
            }
        }
        Err(e) => Err(io(e)),
    }
}

/// `dir` (and missing parents) made 0700; an existing one is left as it is.
fn create_private_dir(dir: &Path) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    private_fs::create_dir_all(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_once_then_loaded() {
        let dir = std::env::temp_dir().join(format!("pg-key-{}", crate::ids::random_id("t")));
        let path = dir.join("sub").join("agent.key");
        let (a, made) = load_or_create(&path).unwrap();
        assert!(made);
        let (b, made) = load_or_create(&path).unwrap();
        assert!(!made);
        assert_eq!(a.public(), b.public());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
        fs::write(&path, "not a key\n").unwrap();
        assert!(matches!(
            load_or_create(&path),
            Err(KeyFileError::Malformed(_))
        ));
        let _ = fs::remove_dir_all(dir);
    }
}

//! Where the custody engine keeps its files (the audit log, the optional
//! file key store).
//!
//! Resolution order, first match wins:
//! 1. `$PARLEY_CUSTODY_DATA` (tests, profiles, a service account's unit file);
//! 2. `$XDG_DATA_HOME/parley-custody` (only if absolute, as the XDG spec says);
//! 3. `~/.local/share/parley-custody`.
//!
//! The directory is created with mode 0700 and tightened to 0700 if it
//! already exists with group/world bits: it holds the audit log (who asked
//! for what) and possibly encrypted keys, which no other local user has any
//! business listing, let alone reading.

use parley_custody_client::private_fs::{self, DirError};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Overrides the data directory entirely.
pub const ENV_DATA_DIR: &str = "PARLEY_CUSTODY_DATA";

/// The directory name under `$XDG_DATA_HOME` or `~/.local/share`.
pub const APP_DIR: &str = "parley-custody";

/// The audit log's file name inside the data directory.
pub const AUDIT_FILE: &str = "audit.sqlite3";

/// The file key store's directory name inside the data directory.
pub const FILE_STORE_DIR: &str = "keys";

/// Why the data directory could not be found or prepared.
#[derive(Debug, thiserror::Error)]
pub enum PathsError {
    /// None of the environment variables that locate it are set.
    #[error("cannot find a data directory: set {ENV_DATA_DIR} (or XDG_DATA_HOME, or HOME)")]
    NoHome,
    /// The path exists but is not a directory (or is a symlink to one, which
    /// we refuse: a swapped link would redirect the audit log).
    #[error(
        "{0} exists but is not a plain directory: move it away or point {ENV_DATA_DIR} elsewhere"
    )]
    NotADirectory(PathBuf),
    /// Creating or tightening the directory failed.
    #[error("cannot prepare data directory {path}: {source} (check its owner and permissions, or set {ENV_DATA_DIR})")]
    Io {
        /// The directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// Resolves the data directory from an environment lookup, without touching
/// the filesystem. Empty values count as unset.
pub fn resolve_data_dir(env: impl Fn(&str) -> Option<OsString>) -> Result<PathBuf, PathsError> {
    let get = |name: &str| env(name).filter(|v| !v.is_empty());
    if let Some(dir) = get(ENV_DATA_DIR) {
        return Ok(PathBuf::from(dir));
    }
    if let Some(xdg) = get("XDG_DATA_HOME").map(PathBuf::from) {
        // The XDG spec says relative values are invalid and must be ignored.
        if xdg.is_absolute() {
            return Ok(xdg.join(APP_DIR));
        }
    }
    let home = get("HOME")
        .or_else(|| get("USERPROFILE"))
        .ok_or(PathsError::NoHome)?;
    Ok(PathBuf::from(home)
        .join(".local")
        .join("share")
        .join(APP_DIR))
}

/// The data directory for this process's environment, created (0700) if needed.
pub fn data_dir() -> Result<PathBuf, PathsError> {
    let dir = resolve_data_dir(|name| std::env::var_os(name))?;
    ensure_private_dir(&dir)?;
    Ok(dir)
}

/// `flag` (a `--data-dir`), made private (0700) if needed, else [`data_dir`].
pub fn data_dir_or(flag: Option<&Path>) -> Result<PathBuf, PathsError> {
    match flag {
        Some(d) => ensure_private_dir(d).map(|_| d.to_path_buf()),
        None => data_dir(),
    }
}

/// The audit log path inside `data_dir`.
pub fn audit_path(data_dir: &Path) -> PathBuf {
    data_dir.join(AUDIT_FILE)
}

/// The file key store directory inside `data_dir`, created (0700) if needed.
pub fn file_store_dir(data_dir: &Path) -> Result<PathBuf, PathsError> {
    let dir = data_dir.join(FILE_STORE_DIR);
    ensure_private_dir(&dir)?;
    Ok(dir)
}

/// Creates `dir` (and missing parents) with mode 0700, or checks an existing
/// one is a real directory and removes any group/world permission bits
/// ([`private_fs::ensure_dir`]), with a warning in the log if others had
/// access.
pub fn ensure_private_dir(dir: &Path) -> Result<(), PathsError> {
    match private_fs::ensure_dir(dir) {
        Ok(tightened) => {
            if let Some(t) = tightened.filter(|t| t.was_exposed()) {
                tracing::warn!(dir = %dir.display(), mode = format!("{:o}", t.was), "data directory was accessible to other users; setting it to 0700");
            }
            Ok(())
        }
        Err(DirError::NotADirectory(path)) => Err(PathsError::NotADirectory(path)),
        Err(DirError::Io { path, source }) => Err(PathsError::Io { path, source }),
    }
}

/// Opens a new file that only this user can read or write (0600 on Unix),
/// failing if anything exists at `path`: [`private_fs::create_new`], under
/// the name custody's code has always called it by.
pub use parley_custody_client::private_fs::create_new as create_private_file;

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let map: HashMap<String, OsString> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[cfg(unix)]
    #[test]
    fn a_private_file_is_0600_and_never_one_that_exists() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("secret");
        create_private_file(&p).unwrap();
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let again = create_private_file(&p).unwrap_err();
        assert_eq!(again.kind(), std::io::ErrorKind::AlreadyExists);
        // Nor through a symlink someone planted.
        let planted = dir.path().join("planted");
        std::os::unix::fs::symlink(dir.path().join("elsewhere"), &planted).unwrap();
        assert!(create_private_file(&planted).is_err());
        assert!(!dir.path().join("elsewhere").exists());
    }

    #[test]
    fn resolution_order() {
        let all = env(&[
            (ENV_DATA_DIR, "/custom"),
            ("XDG_DATA_HOME", "/xdg"),
            ("HOME", "/home/u"),
        ]);
        assert_eq!(resolve_data_dir(all).unwrap(), PathBuf::from("/custom"));
        let xdg = env(&[("XDG_DATA_HOME", "/xdg"), ("HOME", "/home/u")]);
        assert_eq!(
            resolve_data_dir(xdg).unwrap(),
            PathBuf::from("/xdg/parley-custody")
        );
        let relative_xdg = env(&[("XDG_DATA_HOME", "rel"), ("HOME", "/home/u")]);
        assert_eq!(
            resolve_data_dir(relative_xdg).unwrap(),
            PathBuf::from("/home/u/.local/share/parley-custody")
        );
        let empty = env(&[(ENV_DATA_DIR, ""), ("HOME", "/h")]);
        assert_eq!(
            resolve_data_dir(empty).unwrap(),
            PathBuf::from("/h/.local/share/parley-custody")
        );
        assert!(matches!(
            resolve_data_dir(env(&[])),
            Err(PathsError::NoHome)
        ));
    }

    #[cfg(unix)]
    #[test]
    fn created_and_tightened_to_0700() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a/b");
        ensure_private_dir(&dir).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        ensure_private_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
        let file = tmp.path().join("f");
        std::fs::write(&file, b"x").unwrap();
        assert!(matches!(
            ensure_private_dir(&file),
            Err(PathsError::NotADirectory(_))
        ));
    }
}

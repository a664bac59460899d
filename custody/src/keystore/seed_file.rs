//! The upstream key file (`principal.key` from `parley init`): reading it
//! once for import, and shredding it afterwards.
//!
//! Format: base64url (unpadded) of the 32-byte Ed25519 seed, optionally
//! followed by one newline (`\n` or `\r\n`). Error messages never quote the
//! file: a slightly malformed key file is still mostly a secret.

use super::{KeystoreError, Result};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;
use zeroize::Zeroizing;

/// A seed file is 43 characters plus a newline; anything much larger is not one,
/// and is refused before it is read into memory.
const MAX_SEED_FILE: u64 = 256;

/// Reads and decodes a seed file. Warns (does not refuse) if group or others
/// may read it: the key may already have leaked, and importing it is still
/// the right next step; the user should also consider rotating it.
pub(super) fn read_seed_file(path: &Path) -> Result<Zeroizing<[u8; 32]>> {
    let io = |source| KeystoreError::Io {
        path: path.to_path_buf(),
        source,
    };
    let bad = |reason: &str| KeystoreError::SeedFile {
        path: path.to_path_buf(),
        reason: reason.to_owned(),
    };
    let file = File::open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(bad("not a regular file"));
    }
    if meta.len() > MAX_SEED_FILE {
        return Err(bad(
            "too large to be a Parley key file (expected base64url of a 32-byte seed)",
        ));
    }
    warn_if_exposed(path, &meta);
    let mut text = Zeroizing::new(Vec::with_capacity(MAX_SEED_FILE as usize + 1));
    file.take(MAX_SEED_FILE + 1)
        .read_to_end(&mut text)
        .map_err(io)?;
    let mut body: &[u8] = &text;
    if let Some(rest) = body.strip_suffix(b"\n") {
        body = rest.strip_suffix(b"\r").unwrap_or(rest);
    }
    let body = std::str::from_utf8(body).map_err(|_| {
        bad("not a Parley key file: expected base64url of a 32-byte seed (43 characters)")
    })?;
    super::decode_seed(body).ok_or_else(|| {
        bad("not a Parley key file: expected base64url of a 32-byte seed (43 characters)")
    })
}

#[cfg(unix)]
fn warn_if_exposed(path: &Path, meta: &std::fs::Metadata) {
    use std::os::unix::fs::PermissionsExt;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        tracing::warn!(
            file = %path.display(),
            mode = format!("{mode:o}"),
            "the key file was readable by other users; the key may be exposed: consider creating a new key"
        );
    }
}

#[cfg(not(unix))]
fn warn_if_exposed(_path: &Path, _meta: &std::fs::Metadata) {}

/// Overwrites a file with random bytes (its whole length), flushes that to
/// the device, then unlinks it and syncs the directory.
///
/// Best effort only: on SSDs (wear levelling), copy-on-write or journaling
/// filesystems (btrfs, ZFS, APFS, ext4 with data journaling), snapshots and
/// backups, the old blocks may survive. It removes the easy copy; it does not
/// promise the key is unrecoverable. Treat a key that was ever in a
/// plaintext file accordingly. Refuses symlinks and non-regular files, so a
/// swapped link cannot aim the overwrite at another file.
pub fn shred_file(path: &Path) -> Result<()> {
    let io = |source| KeystoreError::Io {
        path: path.to_path_buf(),
        source,
    };
    let meta = std::fs::symlink_metadata(path).map_err(io)?;
    if !meta.file_type().is_file() {
        return Err(KeystoreError::SeedFile {
            path: path.to_path_buf(),
            reason: "not a regular file (symlinks are not followed): nothing was shredded".into(),
        });
    }
    let mut file = open_for_overwrite(path).map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    file.seek(SeekFrom::Start(0)).map_err(io)?;
    let mut block = Zeroizing::new([0u8; 4096]);
    let mut left = len;
    while left > 0 {
        let n = usize::try_from(left.min(block.len() as u64)).unwrap_or(block.len());
        getrandom::getrandom(&mut block[..n]).map_err(|e| KeystoreError::Random(e.to_string()))?;
        file.write_all(&block[..n]).map_err(io)?;
        left -= n as u64;
    }
    file.sync_all().map_err(io)?;
    drop(file);
    std::fs::remove_file(path).map_err(io)?;
    sync_parent(path);
    Ok(())
}

#[cfg(unix)]
fn open_for_overwrite(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    // O_NOFOLLOW: the symlink check above and this open must agree.
    std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)
}

#[cfg(not(unix))]
fn open_for_overwrite(path: &Path) -> std::io::Result<File> {
    std::fs::OpenOptions::new().write(true).open(path)
}

/// Makes the unlink durable. Failure is not an error: the file is gone from
/// the namespace either way.
fn sync_parent(path: &Path) {
    #[cfg(unix)]
    if let Some(parent) = path.parent() {
        let dir = if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        };
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_upstream_format_with_or_without_newline() {
        let dir = tempfile::tempdir().unwrap();
        let seed_text = "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE";
        for (i, content) in [
            seed_text.to_string(),
            format!("{seed_text}\n"),
            format!("{seed_text}\r\n"),
        ]
        .iter()
        .enumerate()
        {
            let p = dir.path().join(format!("k{i}"));
            std::fs::write(&p, content).unwrap();
            assert_eq!(*read_seed_file(&p).unwrap(), [1u8; 32]);
        }
    }

    #[test]
    fn malformed_files_are_refused_without_quoting_them() {
        let dir = tempfile::tempdir().unwrap();
        let secretish = "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQ!";
        for content in [
            secretish.to_string(),
            format!("{secretish}\n\n"),
            "x".repeat(1000),
        ] {
            let p = dir.path().join("bad");
            std::fs::write(&p, &content).unwrap();
            let err = read_seed_file(&p).unwrap_err();
            let msg = format!("{err} {err:?}");
            assert!(!msg.contains("AQEBAQ"), "{msg}");
        }
    }

    #[test]
    fn shred_overwrites_and_removes() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("principal.key");
        std::fs::write(&p, "secret").unwrap();
        shred_file(&p).unwrap();
        assert!(!p.exists());
        assert!(shred_file(&p).is_err());
    }

    #[cfg(unix)]
    #[test]
    fn shred_refuses_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, "keep me").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(shred_file(&link).is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
    }
}

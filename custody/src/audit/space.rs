//! Room on the disk for the next row.
//!
//! A signature whose audit row cannot be written is never handed out (the
//! engine writes the row first), but the human would then have decided for
//! nothing and been told only "the audit log could not record this". Checked
//! before signing instead, a full disk refuses the decision with the reason.

use super::AuditError;
use std::path::Path;

/// Free space the filesystem holding the log must have before anything is
/// signed (4 MiB): room for the largest signed row (its fields are bounded
/// to 64 KiB each), its WAL frames and a checkpoint, with a wide margin.
pub const MIN_FREE_BYTES: u64 = 4 * 1024 * 1024;

/// Refuses when the filesystem holding `db` is read-only or has less than
/// [`MIN_FREE_BYTES`] available to this (unprivileged) user.
#[cfg(any(target_os = "linux", target_os = "macos"))]
pub(super) fn check(db: &Path) -> Result<(), AuditError> {
    use nix::sys::statvfs::{statvfs, FsFlags};
    let dir = db
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let st = statvfs(dir).map_err(|e| AuditError::Io {
        path: dir.to_path_buf(),
        source: std::io::Error::from(e),
    })?;
    if st.flags().contains(FsFlags::ST_RDONLY) {
        return Err(AuditError::ReadOnly {
            path: db.to_path_buf(),
            why: "its filesystem is mounted read-only",
        });
    }
    #[allow(clippy::useless_conversion)] // the field types differ between platforms
    let free = u64::from(st.blocks_available()).saturating_mul(u64::from(st.fragment_size()));
    if free < MIN_FREE_BYTES {
        return Err(AuditError::DiskFull {
            dir: dir.to_path_buf(),
            free,
        });
    }
    Ok(())
}

/// Elsewhere the write itself is the check (the engine hands nothing out
/// when it fails).
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub(super) fn check(_db: &Path) -> Result<(), AuditError> {
    Ok(())
}

/// `3 KiB`, `12 MiB`: sizes for people.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} bytes");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if v < 10.0 {
        format!("{:.1} {}", v, UNITS[unit])
    } else {
        format!("{:.0} {}", v, UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_for_people() {
        assert_eq!(human_bytes(3 * 1024), "3.0 KiB");
        assert_eq!(human_bytes(12), "12 bytes");
    }
}

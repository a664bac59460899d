//! The audit log leaving custody: the format chosen once (CSV or JSON
//! Lines, [`crate::audit::export`] writes them), to any writer (`parley
//! audit --csv` writes to its standard output) or to a new private file in
//! a folder (the app's Export), never over an existing file: an export may
//! hold what agents asked for, and a file someone else prepared (or an
//! earlier export) is not written into.

use crate::audit::{self, Event};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// How many names a folder is tried with (`…-2`, `…-3`, …) before an
/// export gives up rather than overwrite.
const MAX_NAMES: u32 = 100;

/// The format of an export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// CSV (RFC 4180, formula-safe whatever delimiter a spreadsheet splits on): for a spreadsheet.
    Csv,
    /// JSON Lines, one event per line, exactly as stored: for programs.
    Jsonl,
}

impl ExportFormat {
    /// The file name extension (also the name the app sends).
    pub fn extension(self) -> &'static str {
        match self {
            ExportFormat::Csv => "csv",
            ExportFormat::Jsonl => "jsonl",
        }
    }

    /// Writes `events` in this format to `w`, and flushes it.
    pub fn write(self, events: &[Event], w: impl Write) -> std::io::Result<()> {
        match self {
            ExportFormat::Csv => audit::export_csv(events, w),
            ExportFormat::Jsonl => audit::export_jsonl(events, w),
        }
    }
}

/// `"csv"` or `"jsonl"`.
impl FromStr for ExportFormat {
    type Err = ExportError;

    fn from_str(s: &str) -> Result<Self, ExportError> {
        match s {
            "csv" => Ok(ExportFormat::Csv),
            "jsonl" => Ok(ExportFormat::Jsonl),
            other => Err(ExportError::Format(crate::display::bounded(other, 40))),
        }
    }
}

/// Why an export was not written.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// A format other than CSV and JSON Lines.
    #[error("cannot export as {0:?}: export as jsonl or csv")]
    Format(String),
    /// The folder could not be created.
    #[error("{dir}: {source} (choose a folder you can write to)")]
    Folder {
        /// The folder.
        dir: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// No new file could be created (or every name was taken).
    #[error("{path}: {source}")]
    Create {
        /// The last name tried.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The file was created but could not be written in full.
    #[error("{path}: {source} (the file is incomplete: delete it and export again)")]
    Write {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// Where the app puts an export, as a person expects: the user's
/// Downloads folder (the XDG user directory `XDG_DOWNLOAD_DIR`), else
/// `~/Downloads` (created if missing: a fresh account may have no
/// user-dirs file), and only with no home at all `exports` in custody's
/// data directory. The app says the path it wrote.
pub fn default_export_dir(data_dir: &Path) -> PathBuf {
    export_dir_from(dirs::download_dir(), dirs::home_dir(), data_dir)
}

fn export_dir_from(downloads: Option<PathBuf>, home: Option<PathBuf>, data_dir: &Path) -> PathBuf {
    downloads
        .filter(|d| d.is_absolute())
        .or_else(|| {
            home.filter(|h| h.is_absolute())
                .map(|h| h.join("Downloads"))
        })
        .unwrap_or_else(|| data_dir.join("exports"))
}

/// Writes `events` to a new file in `dir` (created if missing), readable
/// by this user only: `parley-audit-<time>.<ext>`, `<time>` being `at`
/// (unix seconds) in UTC, else the same name with `-2`, `-3` … up to
/// `-100`. Never overwrites a file. Returns the file written.
pub fn export_to_new_file(
    dir: &Path,
    format: ExportFormat,
    events: &[Event],
    at: i64,
) -> Result<PathBuf, ExportError> {
    std::fs::create_dir_all(dir).map_err(|source| ExportError::Folder {
        dir: dir.to_path_buf(),
        source,
    })?;
    let stamp = parley_core::lens::time(at).replace(':', "-");
    let ext = format.extension();
    let mut n = 1;
    let (file, path) = loop {
        let name = match n {
            1 => format!("parley-audit-{stamp}.{ext}"),
            n => format!("parley-audit-{stamp}-{n}.{ext}"),
        };
        let path = dir.join(name);
        match crate::paths::create_private_file(&path) {
            Ok(f) => break (f, path),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < MAX_NAMES => n += 1,
            Err(source) => return Err(ExportError::Create { path, source }),
        }
    };
    format
        .write(events, std::io::BufWriter::new(file))
        .map_err(|source| ExportError::Write {
            path: path.clone(),
            source,
        })?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::{Audit, EventKind, NewEvent, Query, CSV_HEADER};

    fn events(n: i64) -> Vec<Event> {
        let dir = tempfile::tempdir().unwrap();
        let mut audit = Audit::open(&dir.path().join("audit.sqlite3")).unwrap();
        for at in 0..n {
            audit
                .append(&NewEvent {
                    reason: Some("=cmd".into()),
                    ..NewEvent::new(EventKind::KeyCreated, 1_800_000_000 + at)
                })
                .unwrap();
        }
        audit.query(&Query::default()).unwrap()
    }

    #[test]
    fn the_format_is_csv_or_jsonl() {
        assert_eq!("csv".parse::<ExportFormat>().unwrap(), ExportFormat::Csv);
        assert_eq!(
            "jsonl".parse::<ExportFormat>().unwrap(),
            ExportFormat::Jsonl
        );
        for bad in ["", "CSV", "json", "xml"] {
            assert!(matches!(
                bad.parse::<ExportFormat>(),
                Err(ExportError::Format(_))
            ));
        }
    }

    #[test]
    fn each_export_is_a_new_private_file_and_none_is_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("exports");
        let rows = events(3);
        let at = 1_800_000_000;
        let first = export_to_new_file(&out, ExportFormat::Csv, &rows, at).unwrap();
        assert_eq!(
            first.file_name().unwrap(),
            "parley-audit-2027-01-15T08-00Z.csv"
        );
        let csv = std::fs::read_to_string(&first).unwrap();
        assert!(csv.starts_with(&format!("{CSV_HEADER}\r\n")));
        assert_eq!(csv.lines().count(), 4, "{csv}");
        assert!(csv.contains("\"'=cmd\""), "formula-safe: {csv}");

        let second = export_to_new_file(&out, ExportFormat::Csv, &rows[..1], at).unwrap();
        assert_eq!(
            second.file_name().unwrap(),
            "parley-audit-2027-01-15T08-00Z-2.csv"
        );
        assert_eq!(std::fs::read_to_string(&first).unwrap(), csv, "untouched");
        let jsonl = export_to_new_file(&out, ExportFormat::Jsonl, &rows, at).unwrap();
        assert_eq!(std::fs::read_to_string(&jsonl).unwrap().lines().count(), 3);
        #[cfg(unix)]
        for f in [&first, &second, &jsonl] {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(f).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{}", f.display());
        }
    }

    #[test]
    fn an_export_gives_up_rather_than_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        let at = 1_800_000_000;
        let stamp = parley_core::lens::time(at).replace(':', "-");
        std::fs::write(
            dir.path().join(format!("parley-audit-{stamp}.jsonl")),
            "mine",
        )
        .unwrap();
        for n in 2..=MAX_NAMES {
            let name = format!("parley-audit-{stamp}-{n}.jsonl");
            std::fs::write(dir.path().join(name), "mine").unwrap();
        }
        let e = export_to_new_file(dir.path(), ExportFormat::Jsonl, &events(1), at).unwrap_err();
        assert!(matches!(e, ExportError::Create { .. }), "{e}");
        for f in std::fs::read_dir(dir.path()).unwrap() {
            assert_eq!(std::fs::read_to_string(f.unwrap().path()).unwrap(), "mine");
        }
    }

    #[test]
    fn exports_go_to_downloads_else_home_downloads_never_a_hidden_folder() {
        let data = Path::new("/home/me/.local/share/parley-custody");
        assert_eq!(
            export_dir_from(
                Some("/home/me/Téléchargements".into()),
                Some("/home/me".into()),
                data
            ),
            PathBuf::from("/home/me/Téléchargements")
        );
        // No user-dirs entry (a fresh account): ~/Downloads, not the data dir.
        assert_eq!(
            export_dir_from(None, Some("/home/me".into()), data),
            PathBuf::from("/home/me/Downloads")
        );
        assert_eq!(
            export_dir_from(Some("relative".into()), Some("/home/me".into()), data),
            PathBuf::from("/home/me/Downloads")
        );
        assert_eq!(export_dir_from(None, None, data), data.join("exports"));
    }
}

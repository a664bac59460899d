//! Files and directories that only this user may read: the one place that
//! creates and opens them, for every crate (custody's data directory, audit
//! log, log file, exports, settings and key files; the CLI's and the
//! playground's agent key and saved tokens).
//!
//! Why in this crate: the playground, and any agent, links this crate and
//! never `parley-custody`, and `parley-core` does no I/O; so this is the
//! lowest crate that every writer of a private file can link. It needs std
//! only.
//!
//! The rule, on Unix:
//! - a file is born 0600 and a directory 0700: the mode is given to
//!   `open(2)` and `mkdir(2)`, so there is no moment in which another user
//!   could open it, and a directory is then set to 0700 explicitly so the
//!   result does not depend on the umask;
//! - a new file is created with `O_EXCL` ([`create_new`]): a secret, an
//!   export or a token is never written into a file someone else prepared,
//!   nor through a symlink planted in its place;
//! - a file or directory that is ours to keep (the audit log, the log file,
//!   the data directory) is opened as it is and tightened to 0600 / 0700 if
//!   it has other bits. What was found comes back as [`Tightened`], so the
//!   caller can say so in its own log (this crate has no logger).
//!
//! Elsewhere (Windows) the profile directory's ACL already keeps other users
//! out: the same calls create and open without a mode, and tighten nothing.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

/// The mode of a private file on Unix: read and write for the owner only.
pub const FILE_MODE: u32 = 0o600;

/// The mode of a private directory on Unix: the owner only.
pub const DIR_MODE: u32 = 0o700;

/// An existing file or directory that had other permission bits than
/// [`FILE_MODE`] / [`DIR_MODE`] and was set to them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tightened {
    /// The permission bits it had.
    pub was: u32,
}

impl Tightened {
    /// Whether the group or others had any access before: worth a warning,
    /// since someone else may have read it.
    pub fn was_exposed(self) -> bool {
        self.was & 0o077 != 0
    }
}

/// Why a private directory could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum DirError {
    /// The path exists but is not a directory, or is a symlink (refused even
    /// when it points at one: a swapped link would redirect what is kept
    /// there).
    #[error("{0} exists but is not a plain directory")]
    NotADirectory(PathBuf),
    /// Reading, creating or tightening it failed.
    #[error("cannot prepare the directory {path}: {source}")]
    Io {
        /// The directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
}

/// Creates a new file that only this user can read or write (0600 on Unix),
/// open for writing, failing if anything exists at `path`, a symlink
/// included (`AlreadyExists`). The one way every crate here creates a file
/// that holds a secret, an export or a token.
pub fn create_new(path: &Path) -> io::Result<File> {
    let mut opts = OpenOptions::new();
    opts.write(true).create_new(true);
    private_mode(&mut opts);
    opts.open(path)
}

/// Opens `path` for reading and writing as it is (never truncated), creating
/// it 0600 if missing; an existing file with other permission bits is set to
/// 0600 and reported. For a file that is ours to keep across runs, such as
/// the audit log.
pub fn open_or_create(path: &Path) -> io::Result<(File, Option<Tightened>)> {
    let mut opts = OpenOptions::new();
    opts.read(true).write(true).create(true).truncate(false);
    open_tightened(opts, path)
}

/// Opens `path` for appending, creating it 0600 if missing; an existing file
/// with other permission bits is set to 0600 and reported. For a log.
pub fn open_append(path: &Path) -> io::Result<(File, Option<Tightened>)> {
    let mut opts = OpenOptions::new();
    opts.create(true).append(true);
    open_tightened(opts, path)
}

/// Creates `dir` and its missing parents, with mode 0700 (the directory
/// itself set to 0700 explicitly, whatever the umask). An existing directory
/// is not an error; callers that must leave one the user chose as it is
/// check for it first.
pub fn create_dir_all(dir: &Path) -> io::Result<()> {
    make_dir(dir).map(|_| ())
}

/// Creates `dir` (and missing parents) with mode 0700, or checks that an
/// existing one is a real directory (not a symlink) and sets it to 0700 if
/// it has other bits. For a directory that is ours, such as custody's data
/// directory.
pub fn ensure_dir(dir: &Path) -> Result<Option<Tightened>, DirError> {
    let io = |source| DirError::Io {
        path: dir.to_path_buf(),
        source,
    };
    match fs::symlink_metadata(dir) {
        Ok(meta) if meta.is_dir() => tighten(dir, &meta, DIR_MODE, DIR_BITS).map_err(io),
        Ok(_) => Err(DirError::NotADirectory(dir.to_path_buf())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => make_dir(dir).map_err(io),
        Err(e) => Err(io(e)),
    }
}

/// The bits compared for a file: permissions only, as `ls -l` shows them.
const FILE_BITS: u32 = 0o777;

/// The bits compared for a directory: with setuid, setgid and sticky, so a
/// sticky or setgid data directory is set back to a plain 0700.
const DIR_BITS: u32 = 0o7777;

fn open_tightened(mut opts: OpenOptions, path: &Path) -> io::Result<(File, Option<Tightened>)> {
    private_mode(&mut opts);
    let file = opts.open(path)?;
    // An existing file keeps its mode on open: make it private too.
    let tightened = tighten_file(&file)?;
    Ok((file, tightened))
}

#[cfg(unix)]
fn private_mode(opts: &mut OpenOptions) {
    use std::os::unix::fs::OpenOptionsExt;
    opts.mode(FILE_MODE);
}

#[cfg(not(unix))]
fn private_mode(_opts: &mut OpenOptions) {}

#[cfg(unix)]
fn tighten_file(file: &File) -> io::Result<Option<Tightened>> {
    use std::os::unix::fs::PermissionsExt;
    let was = file.metadata()?.permissions().mode() & FILE_BITS;
    if was == FILE_MODE {
        return Ok(None);
    }
    file.set_permissions(fs::Permissions::from_mode(FILE_MODE))?;
    Ok(Some(Tightened { was }))
}

#[cfg(not(unix))]
fn tighten_file(_file: &File) -> io::Result<Option<Tightened>> {
    Ok(None)
}

#[cfg(unix)]
fn make_dir(dir: &Path) -> io::Result<Option<Tightened>> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)?;
    // The umask may have removed bits but never adds any; still, set it
    // explicitly so the result does not depend on the caller's umask.
    let meta = fs::symlink_metadata(dir)?;
    tighten(dir, &meta, DIR_MODE, DIR_BITS)
}

#[cfg(not(unix))]
fn make_dir(dir: &Path) -> io::Result<Option<Tightened>> {
    fs::create_dir_all(dir).map(|()| None)
}

#[cfg(unix)]
fn tighten(
    path: &Path,
    meta: &fs::Metadata,
    want: u32,
    bits: u32,
) -> io::Result<Option<Tightened>> {
    use std::os::unix::fs::PermissionsExt;
    let was = meta.permissions().mode() & bits;
    if was == want {
        return Ok(None);
    }
    fs::set_permissions(path, fs::Permissions::from_mode(want))?;
    Ok(Some(Tightened { was }))
}

#[cfg(not(unix))]
fn tighten(_: &Path, _: &fs::Metadata, _: u32, _: u32) -> io::Result<Option<Tightened>> {
    Ok(None)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        fs::metadata(p).unwrap().permissions().mode() & 0o7777
    }

    fn chmod(p: &Path, m: u32) {
        fs::set_permissions(p, fs::Permissions::from_mode(m)).unwrap();
    }

    #[test]
    fn a_new_file_is_0600() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("secret");
        let mut f = create_new(&p).unwrap();
        f.write_all(b"s").unwrap();
        assert_eq!(mode(&p), 0o600);
    }

    #[test]
    fn a_file_someone_else_prepared_is_never_created_over() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("token");
        fs::write(&p, b"theirs").unwrap();
        chmod(&p, 0o666);
        let err = create_new(&p).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        // Left exactly as it was: not written, not truncated, not tightened.
        assert_eq!(fs::read(&p).unwrap(), b"theirs");
        assert_eq!(mode(&p), 0o666);
        // Nor through a symlink planted where the file would go.
        let planted = dir.path().join("planted");
        std::os::unix::fs::symlink(dir.path().join("elsewhere"), &planted).unwrap();
        assert_eq!(
            create_new(&planted).unwrap_err().kind(),
            io::ErrorKind::AlreadyExists
        );
        assert!(!dir.path().join("elsewhere").exists());
    }

    #[test]
    fn open_or_create_makes_a_new_file_0600_and_reports_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("audit");
        let (_, tightened) = open_or_create(&p).unwrap();
        assert_eq!(tightened, None);
        assert_eq!(mode(&p), 0o600);
        // Opened again, as it is.
        assert_eq!(open_or_create(&p).unwrap().1, None);
    }

    #[test]
    fn a_world_readable_file_is_tightened_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("audit");
        fs::write(&p, b"rows").unwrap();
        chmod(&p, 0o644);
        let (mut f, tightened) = open_or_create(&p).unwrap();
        let t = tightened.expect("tightened");
        assert_eq!(t.was, 0o644);
        assert!(t.was_exposed());
        assert_eq!(mode(&p), 0o600);
        let mut text = String::new();
        f.read_to_string(&mut text).unwrap();
        assert_eq!(text, "rows", "never truncated");
        // Other bits of the owner's are set to 0600 too, but nobody else
        // could read it: nothing to warn about.
        chmod(&p, 0o700);
        let t = open_or_create(&p).unwrap().1.expect("tightened");
        assert_eq!(t.was, 0o700);
        assert!(!t.was_exposed());
        assert_eq!(mode(&p), 0o600);
    }

    #[test]
    fn appending_creates_0600_tightens_and_keeps_what_was_there() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("log");
        let (mut f, tightened) = open_append(&p).unwrap();
        assert_eq!(tightened, None);
        f.write_all(b"one\n").unwrap();
        assert_eq!(mode(&p), 0o600);
        drop(f);
        chmod(&p, 0o664);
        let (mut f, tightened) = open_append(&p).unwrap();
        assert_eq!(tightened, Some(Tightened { was: 0o664 }));
        f.write_all(b"two\n").unwrap();
        assert_eq!(mode(&p), 0o600);
        assert_eq!(fs::read_to_string(&p).unwrap(), "one\ntwo\n");
    }

    #[test]
    fn directories_are_created_0700_and_tightened() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a/b");
        create_dir_all(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
        let ours = tmp.path().join("c/d");
        assert_eq!(ensure_dir(&ours).unwrap(), None);
        assert_eq!(mode(&ours), 0o700);
        chmod(&ours, 0o755);
        let t = ensure_dir(&ours).unwrap().expect("tightened");
        assert!(t.was_exposed());
        assert_eq!(mode(&ours), 0o700);
        chmod(&ours, 0o1700);
        assert_eq!(ensure_dir(&ours).unwrap(), Some(Tightened { was: 0o1700 }));
        assert_eq!(mode(&ours), 0o700);
    }

    #[test]
    fn a_file_or_a_symlink_is_not_a_private_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("f");
        fs::write(&file, b"x").unwrap();
        assert!(matches!(
            ensure_dir(&file),
            Err(DirError::NotADirectory(p)) if p == file
        ));
        let real = tmp.path().join("real");
        fs::create_dir(&real).unwrap();
        chmod(&real, 0o755);
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert!(matches!(ensure_dir(&link), Err(DirError::NotADirectory(_))));
        assert_eq!(mode(&real), 0o755, "the link's target is left alone");
    }
}

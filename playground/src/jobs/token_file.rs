//! An exclusive marker file that holds a random token (SPEC-approval §8):
//! the ledger's lock files.
//!
//! Whoever created the file holds it, and proves it by the token inside: a
//! holder re-checks its token before acting and removes the file only if
//! the token is still its own. A file older than its stale age belongs to a
//! process that died; a waiter takes it over without ever deleting a live
//! holder's file: it renames the file aside, deletes the moved file only if
//! it still holds the token read before the move, and otherwise links it
//! back (someone else took it over in between, and now holds it).

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What taking a token file came to.
#[derive(Debug, PartialEq, Eq)]
pub enum Take {
    /// Created: the caller holds it with this token.
    Held(String),
    /// Someone else holds it, and it is not stale.
    Busy,
}

/// Tries once to take `path`: creates it with `O_EXCL` and a fresh random
/// token, or, when it exists and is older than `stale_after`, takes it over
/// as the module says and tries again once.
pub fn try_take(path: &Path, stale_after: Duration) -> io::Result<Take> {
    for _ in 0..2 {
        match create(path) {
            Ok(token) => return Ok(Take::Held(token)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                if !is_stale(path, stale_after) {
                    return Ok(Take::Busy);
                }
                clear_stale(path)?;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(Take::Busy)
}

/// True while `path` still holds `token` (the holder's check before and
/// after it acts).
pub fn holds(path: &Path, token: &str) -> bool {
    fs::read(path).is_ok_and(|b| b == token.as_bytes())
}

/// Removes `path` if it still holds `token`; leaves another holder's file.
pub fn release(path: &Path, token: &str) -> io::Result<()> {
    if !holds(path, token) {
        return Ok(());
    }
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

fn create(path: &Path) -> io::Result<String> {
    let token = super::store::new_id("");
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    if let Err(e) = f.write_all(token.as_bytes()).and_then(|()| f.sync_all()) {
        let _ = fs::remove_file(path);
        return Err(e);
    }
    Ok(token)
}

fn is_stale(path: &Path, stale_after: Duration) -> bool {
    fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age > stale_after)
}

/// Renames the stale file aside and deletes it if it is still the one read;
/// otherwise puts it back where it was (unless a new one took its place).
fn clear_stale(path: &Path) -> io::Result<()> {
    match fs::read(path) {
        Ok(seen) => clear_if_still(path, &seen),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// The second half of [`clear_stale`]: `seen` is what the file held when it
/// was judged stale; between that read and the rename a new holder may have
/// taken it over.
fn clear_if_still(path: &Path, seen: &[u8]) -> io::Result<()> {
    let aside = aside_path(path);
    match fs::rename(path, &aside) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    }
    if fs::read(&aside).is_ok_and(|b| b == seen) {
        return fs::remove_file(&aside);
    }
    // Not the file we judged stale: a new holder's. Put it back (a link never
    // replaces a file that appeared meanwhile), then drop the aside name.
    let linked = fs::hard_link(&aside, path);
    fs::remove_file(&aside)?;
    match linked {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => Err(e),
        _ => Ok(()),
    }
}

fn aside_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "lock".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!("{name}.{}.stale", super::store::new_id("")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::SystemTime;

    fn age(path: &Path, secs: u64) {
        let f = OpenOptions::new().write(true).open(path).unwrap();
        f.set_modified(SystemTime::now() - Duration::from_secs(secs))
            .unwrap();
    }

    #[test]
    fn a_held_file_is_busy_until_released_by_its_holder() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.lock");
        let Take::Held(t) = try_take(&p, Duration::from_secs(30)).unwrap() else {
            panic!("first take must hold")
        };
        assert!(holds(&p, &t));
        assert_eq!(try_take(&p, Duration::from_secs(30)).unwrap(), Take::Busy);
        release(&p, "someone-else").unwrap();
        assert!(p.exists(), "another token never removes the file");
        release(&p, &t).unwrap();
        assert!(!p.exists());
    }

    #[test]
    fn a_stale_file_is_taken_over_and_its_old_holder_loses_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.lock");
        let Take::Held(old) = try_take(&p, Duration::from_secs(30)).unwrap() else {
            panic!()
        };
        age(&p, 31);
        let Take::Held(new) = try_take(&p, Duration::from_secs(30)).unwrap() else {
            panic!("a stale file is taken over")
        };
        assert_ne!(old, new);
        assert!(!holds(&p, &old), "the old holder's check now fails");
        release(&p, &old).unwrap();
        assert!(
            holds(&p, &new),
            "the old holder cannot release the new one's file"
        );
        let left: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "nothing is left aside");
    }

    #[test]
    fn a_file_that_changed_after_it_was_judged_stale_is_put_back() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.lock");
        fs::write(&p, "new-holder").unwrap();
        clear_if_still(&p, b"old-holder").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"new-holder");
        clear_if_still(&p, b"new-holder").unwrap();
        assert!(!p.exists());
        let left: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert!(left.is_empty(), "nothing is left aside");
    }
}

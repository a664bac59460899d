//! The job server's side of the file store (SPEC-approval §8): consumed
//! markers, the usage ledger, receipts, and reading the consents that
//! `parley approve` writes.
//!
//! The layout is upstream's, so a consent written by custody's `parley
//! approve` (or upstream's `yea approve`) is found here, and the store is
//! shared with upstream's servers. The store must be out of the agent's
//! reach (§9): an agent that can write it can reset totals.

use parley_core::b64;
use serde_json::{json, Map, Value};
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use super::token_file::{self, Take};

/// A store error: nothing runs (§9, fail closed).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Reading or writing the store failed.
    #[error("the approval store at {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// A ledger lock stayed held past 2 s, or changed hands while we held it.
    #[error("the approval store's ledger lock {0} is held by someone else; nothing ran")]
    Lock(PathBuf),
    /// A ledger file that is not the pinned format.
    #[error("the approval store's ledger file {0} is malformed; nothing ran")]
    Ledger(PathBuf),
    /// No home directory to put `~/.yea/store` in.
    #[error("no approval store: set YEA_STORE or YEA_HOME (HOME is not set)")]
    NoHome,
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Where the store is: `$YEA_STORE`, else `$YEA_HOME/store`, else
/// `~/.yea/store` (the same rule `parley approve` writes consents by).
pub fn default_root() -> Result<PathBuf, StoreError> {
    parley_custody_client::yea_store::store_dir().map_err(|_| StoreError::NoHome)
}

/// True for a receipt or reservation id in the generated format (`r_`/`v_` + 8..32 of b64url).
pub fn is_id(id: &str, prefix: &str) -> bool {
    id.strip_prefix(prefix).is_some_and(|rest| {
        (8..=32).contains(&rest.len())
            && rest
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    })
}

/// A random id: `prefix` and 12 base64url characters.
pub fn new_id(prefix: &str) -> String {
    let mut bytes = [0u8; 9];
    // Without randomness no id is safe to hand out; the OS source does not fail in practice.
    if getrandom::getrandom(&mut bytes).is_err() {
        let t = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        bytes.copy_from_slice(&t.to_le_bytes()[..9]);
    }
    format!("{prefix}{}", b64::encode(bytes))
}

/// The file store under one root.
#[derive(Debug, Clone)]
pub struct FileStore {
    root: PathBuf,
    last_sweep: Arc<Mutex<Option<Instant>>>,
}

/// How long a ledger lock may be held before a waiter takes it over (§8).
const STALE_LOCK: Duration = Duration::from_secs(30);
/// How often consumed markers are swept.
const SWEEP_EVERY: Duration = Duration::from_secs(60 * 60);
/// A marker outlives its `exp` by this much before it is swept.
const SWEEP_MARGIN_SECS: i64 = 60;

/// One ledger file: settled plus reserved amounts (scale-18 integers).
struct Ledger {
    settled: u128,
    reserved: Map<String, Value>,
}

impl FileStore {
    /// A store at `root` (created private on first write).
    pub fn new(root: impl Into<PathBuf>) -> FileStore {
        FileStore {
            root: root.into(),
            last_sweep: Arc::default(),
        }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn dir(&self, parts: &[&str]) -> Result<PathBuf, StoreError> {
        let mut p = self.root.clone();
        for part in parts {
            p.push(part);
        }
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&p)
            .map_err(io_err(&p))?;
        Ok(p)
    }

    /// Writes `path` through a unique temp file and a rename.
    fn write_file(path: &Path, content: &[u8]) -> Result<(), StoreError> {
        let name = path
            .file_name()
            .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
        let tmp = path.with_file_name(format!("{name}.{}.tmp", new_id("")));
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(io_err(&tmp))?;
        f.write_all(content).map_err(io_err(&tmp))?;
        f.sync_all().map_err(io_err(&tmp))?;
        fs::rename(&tmp, path).map_err(io_err(path))
    }

    /// `consumeOnce`: true the first time for `id`, false ever after.
    pub fn consume_once(&self, id: &str, exp: i64) -> Result<bool, StoreError> {
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        // A failed sweep leaves old markers, never a replay: it is not an error here.
        let _ = self.sweep_consumed(now);
        let dir = self.dir(&["consumed"])?;
        let path = dir.join(parley_core::job::consumed_marker(id));
        Self::create_once(&path, exp.to_string().as_bytes())
    }

    /// `claimUndo`: true only for the first claim of a receipt id that is
    /// not undone yet (atomic: the claim file is created exclusively), so
    /// two undo calls never both revert. Ids outside the format are never
    /// claimed: they never reach a path.
    ///
    /// The claim holds `*`, as the conformance vectors pin it (the spec's
    /// prose has since moved to a random token with a 10-minute stale
    /// takeover; the vectors, which are normative here, have not), so a
    /// claim left by a process that died mid-revert stays until removed by
    /// hand.
    pub fn claim_undo(&self, id: &str) -> Result<bool, StoreError> {
        if !is_id(id, "r_") {
            return Ok(false);
        }
        let dir = self.dir(&["undo"])?;
        if dir.join(format!("{id}.done")).exists() {
            return Ok(false);
        }
        let path = dir.join(format!("{id}.claim"));
        Self::create_once(&path, b"*")
    }

    /// Creates `path` (mode 0600) holding `content`, only if it does not
    /// exist yet: `true` for the one caller that created it, `false` for
    /// every other. The creation is atomic (`O_EXCL`), so two processes
    /// never both get `true`: what makes consume-once and claim-undo hold.
    fn create_once(path: &Path, content: &[u8]) -> Result<bool, StoreError> {
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
        {
            Ok(mut f) => {
                f.write_all(content).map_err(io_err(path))?;
                Ok(true)
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(io_err(path)(e)),
        }
    }

    /// `markUndone`: the receipt was reverted; it stays claimed for good.
    pub fn mark_undone(&self, id: &str) -> Result<(), StoreError> {
        if !is_id(id, "r_") {
            return Ok(());
        }
        let dir = self.dir(&["undo"])?;
        Self::write_file(&dir.join(format!("{id}.done")), b"")
    }

    /// `releaseUndo`: the revert failed, so the receipt may be tried again.
    pub fn release_undo(&self, id: &str) -> Result<(), StoreError> {
        if !is_id(id, "r_") {
            return Ok(());
        }
        let path = self.root.join("undo").join(format!("{id}.claim"));
        match fs::remove_file(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(io_err(&path)(e)),
            _ => Ok(()),
        }
    }

    /// Removes the `consumeOnce` markers whose `exp` passed more than a
    /// minute ago (§8: "expired markers may be removed after exp"): what they
    /// guarded is refused as expired anyway. Runs at most once an hour per
    /// store, so a long-running server's store stays small without listing
    /// the directory on every call. Returns how many were removed.
    pub fn sweep_consumed(&self, now: i64) -> Result<usize, StoreError> {
        {
            let mut last = self.last_sweep.lock().unwrap_or_else(|p| p.into_inner());
            if last.is_some_and(|t| t.elapsed() < SWEEP_EVERY) {
                return Ok(0);
            }
            *last = Some(Instant::now());
        }
        let dir = self.root.join("consumed");
        let entries = match fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(io_err(&dir)(e)),
        };
        let mut removed = 0;
        for entry in entries.flatten() {
            let path = entry.path();
            // Only plain marker files, read bounded: an exp is a few digits.
            let is_file = entry.file_type().is_ok_and(|t| t.is_file());
            let exp = is_file
                .then(|| fs::read(&path).ok())
                .flatten()
                .filter(|b| b.len() <= 20)
                .and_then(|b| String::from_utf8(b).ok())
                .and_then(|t| t.trim().parse::<i64>().ok());
            if exp.is_some_and(|exp| exp.saturating_add(SWEEP_MARGIN_SECS) < now)
                && fs::remove_file(&path).is_ok()
            {
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// `getConsent`: the `pg1.` consent `parley approve` stored for a plan hash.
    pub fn get_consent(&self, plan_hash: &str) -> Result<Option<String>, StoreError> {
        use parley_custody_client::yea_store::{read_consent, StoreError as E};
        match read_consent(&self.root, plan_hash) {
            Ok(token) => Ok(token),
            Err(E::Io { path, source }) => Err(StoreError::Io { path, source }),
            // Not a plan hash: nothing is stored under it.
            Err(_) => Ok(None),
        }
    }

    /// `putReceipt`: the receipt as JSON under `receipts/<id>.json`.
    pub fn put_receipt(&self, id: &str, receipt: &Value) -> Result<(), StoreError> {
        let dir = self.dir(&["receipts"])?;
        let path = dir.join(format!("{id}.json"));
        Self::write_file(&path, receipt.to_string().as_bytes())
    }

    /// `getReceipt`, for a checked id only.
    pub fn get_receipt(&self, id: &str) -> Result<Option<Value>, StoreError> {
        if !is_id(id, "r_") {
            return Ok(None);
        }
        let path = self.root.join("receipts").join(format!("{id}.json"));
        match fs::read(&path) {
            Ok(bytes) => Ok(serde_json::from_slice(&bytes).ok()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_err(&path)(e)),
        }
    }

    /// `used`: settled plus reserved for a block and measure.
    pub fn used(&self, block: &str, of: &str) -> Result<u128, StoreError> {
        let path = self
            .root
            .join("ledger")
            .join(block)
            .join(format!("{of}.json"));
        let l = Self::read_ledger(&path)?;
        Ok(l.reserved
            .values()
            .filter_map(|v| v.as_str().and_then(|s| s.parse::<u128>().ok()))
            .fold(l.settled, u128::saturating_add))
    }

    /// `reserve`: the reservation id, or `None` if `amount` would pass `max`.
    pub fn reserve(
        &self,
        block: &str,
        of: &str,
        amount: u128,
        max: u128,
    ) -> Result<Option<String>, StoreError> {
        self.with_ledger(block, of, |l| {
            let used = l
                .reserved
                .values()
                .filter_map(|v| v.as_str().and_then(|s| s.parse::<u128>().ok()))
                .fold(l.settled, u128::saturating_add);
            match used.checked_add(amount) {
                Some(sum) if sum <= max => {
                    let rid = new_id("v_");
                    l.reserved
                        .insert(rid.clone(), Value::String(amount.to_string()));
                    Some(rid)
                }
                _ => None,
            }
        })
    }

    /// `settle`: a reservation becomes settled use.
    pub fn settle(&self, block: &str, of: &str, rid: &str) -> Result<(), StoreError> {
        self.with_ledger(block, of, |l| {
            if let Some(v) = l.reserved.remove(rid) {
                let n = v.as_str().and_then(|s| s.parse::<u128>().ok()).unwrap_or(0);
                l.settled = l.settled.saturating_add(n);
            }
        })
    }

    /// `release`: a reservation is dropped (the apply failed).
    pub fn release(&self, block: &str, of: &str, rid: &str) -> Result<(), StoreError> {
        self.with_ledger(block, of, |l| {
            l.reserved.remove(rid);
        })
    }

    fn read_ledger(path: &Path) -> Result<Ledger, StoreError> {
        let bytes = match fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Ok(Ledger {
                    settled: 0,
                    reserved: Map::new(),
                })
            }
            Err(e) => return Err(io_err(path)(e)),
        };
        let bad = || StoreError::Ledger(path.to_path_buf());
        let v: Value = serde_json::from_slice(&bytes).map_err(|_| bad())?;
        let settled = v
            .get("settled")
            .and_then(Value::as_str)
            .and_then(|s| s.parse::<u128>().ok())
            .ok_or_else(bad)?;
        let reserved = v
            .get("reserved")
            .and_then(Value::as_object)
            .cloned()
            .ok_or_else(bad)?;
        Ok(Ledger { settled, reserved })
    }

    /// Runs `f` on a ledger file under its exclusive lock file (§8).
    fn with_ledger<T>(
        &self,
        block: &str,
        of: &str,
        f: impl FnOnce(&mut Ledger) -> T,
    ) -> Result<T, StoreError> {
        let safe = |s: &str| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        };
        if !safe(block) || !safe(of) {
            return Err(StoreError::Ledger(self.root.join("ledger")));
        }
        let dir = self.dir(&["ledger", block])?;
        let path = dir.join(format!("{of}.json"));
        let lock = dir.join(format!("{of}.lock"));
        let token = acquire(&lock)?;
        let result = (|| {
            let mut l = Self::read_ledger(&path)?;
            let out = f(&mut l);
            check_token(&lock, &token)?;
            let text = json!({"settled": l.settled.to_string(), "reserved": l.reserved});
            Self::write_file(&path, text.to_string().as_bytes())?;
            check_token(&lock, &token)?;
            Ok(out)
        })();
        // Only our own lock is removed; a failure to remove it ages into a stale one.
        let _ = token_file::release(&lock, &token);
        result
    }
}

/// Takes the lock file (§8): `O_EXCL` with a random token, retried every
/// 10 ms for up to 2 s; a lock older than 30 s is stale (its holder died) and
/// is taken over. Returns the token that proves we hold it.
fn acquire(lock: &Path) -> Result<String, StoreError> {
    let start = Instant::now();
    loop {
        match token_file::try_take(lock, STALE_LOCK).map_err(io_err(lock))? {
            Take::Held(token) => return Ok(token),
            Take::Busy if start.elapsed() > Duration::from_secs(2) => {
                return Err(StoreError::Lock(lock.to_path_buf()))
            }
            Take::Busy => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

fn check_token(lock: &Path, token: &str) -> Result<(), StoreError> {
    if token_file::holds(lock, token) {
        Ok(())
    } else {
        Err(StoreError::Lock(lock.to_path_buf()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consume_once_is_true_only_the_first_time() {
        let dir = tempfile::tempdir().unwrap();
        let s = FileStore::new(dir.path());
        assert!(s.consume_once("n_1", 1_790_000_600).unwrap());
        assert!(!s.consume_once("n_1", 1_790_000_600).unwrap());
    }

    #[test]
    fn reservations_never_pass_the_max_and_release_gives_room_back() {
        let dir = tempfile::tempdir().unwrap();
        let s = FileStore::new(dir.path());
        let a = s.reserve("blk", "spend", 6, 10).unwrap().unwrap();
        assert!(s.reserve("blk", "spend", 6, 10).unwrap().is_none());
        s.release("blk", "spend", &a).unwrap();
        let b = s.reserve("blk", "spend", 6, 10).unwrap().unwrap();
        s.settle("blk", "spend", &b).unwrap();
        assert_eq!(s.used("blk", "spend").unwrap(), 6);
    }

    #[test]
    fn a_stale_ledger_lock_is_taken_over_and_a_live_one_waits() {
        let dir = tempfile::tempdir().unwrap();
        let s = FileStore::new(dir.path());
        s.reserve("blk", "spend", 1, 10).unwrap().unwrap();
        let lock = dir.path().join("ledger/blk/spend.lock");
        fs::write(&lock, "dead-holder").unwrap();
        assert!(matches!(
            s.reserve("blk", "spend", 1, 10),
            Err(StoreError::Lock(_))
        ));
        let f = OpenOptions::new().write(true).open(&lock).unwrap();
        f.set_modified(SystemTime::now() - Duration::from_secs(31))
            .unwrap();
        s.reserve("blk", "spend", 1, 10).unwrap().unwrap();
        assert!(!lock.exists(), "the taken-over lock is released after use");
        assert_eq!(s.used("blk", "spend").unwrap(), 2);
    }

    #[test]
    fn expired_consumed_markers_are_swept_and_live_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let s = FileStore::new(dir.path());
        let now = 1_790_000_000;
        assert!(s.consume_once("n_old", now - 120).unwrap());
        assert!(s.consume_once("n_live", now + 600).unwrap());
        // consume_once swept once already (nothing was old by the real clock
        // then); a fresh handle on the same store sweeps at `now`.
        let fresh = FileStore::new(dir.path());
        assert_eq!(fresh.sweep_consumed(now).unwrap(), 1);
        assert!(
            !fresh.consume_once("n_live", now + 600).unwrap(),
            "live stays consumed"
        );
        assert_eq!(
            fresh.sweep_consumed(now + 10_000).unwrap(),
            0,
            "at most once an hour"
        );
    }

    #[test]
    fn ids_outside_the_generated_format_are_not_looked_up() {
        assert!(!is_id("../x", "r_"));
        assert!(is_id("r_AAAAAAAAAAAA", "r_"));
        let dir = tempfile::tempdir().unwrap();
        let s = FileStore::new(dir.path());
        assert!(s.get_receipt("r_../../etc").unwrap().is_none());
        assert!(s.get_consent("../x").unwrap().is_none());
    }
}

//! `$PARLEY_HOME`: the agent's own directory, laid out exactly as the
//! upstream Parley tooling (TypeScript/Python) expects it, so an upstream
//! agent finds what `parley` saves there (ARCHITECTURE.md, "Living with the
//! upstream tooling"):
//!
//! ```text
//! $PARLEY_HOME/              default ~/.parley, mode 0700
//!   agent.key                b64url of the 32-byte Ed25519 seed + "\n", mode 0600
//!   consents/<hash>.pg       a consent grant token + "\n", mode 0600 (dir 0700)
//!   grants/<id16>.pg         a grant token + "\n", mode 0600 (dir 0700)
//! ```
//!
//! The YEA v1 tooling's directory is `$YEA_HOME` (default `~/.yea`,
//! [`Dialect::tooling_home`]): `agent.key` in the same format, and
//! `consents/<hash>` (no extension), each created new and never replaced
//! ([`save_consent_new`]).
//!
//! Only the agent's key lives here. A principal key never does: it belongs in
//! custody's keychain, under another OS user.

use crate::error::CliError;
use parley_core::{Dialect, PublicKey, SecretKey};
use parley_custody_client::private_fs;
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use zeroize::Zeroizing;

/// The environment variable naming the agent's directory.
pub const HOME_ENV: &str = "PARLEY_HOME";

/// The agent key's file name.
pub const AGENT_KEY: &str = "agent.key";

/// Where consent tokens go, by proposal hash.
pub const CONSENTS_DIR: &str = "consents";

/// Where grant tokens go, by the first 16 characters of the grant id.
pub const GRANTS_DIR: &str = "grants";

/// A key file is 43 characters and a newline; anything much larger is not
/// one and is refused before it is read.
const MAX_KEY_FILE: u64 = 256;

/// The longest file stem (hash or id) accepted for a token file.
const MAX_STEM: usize = 128;

fn io_err(context: impl std::fmt::Display, source: io::Error) -> CliError {
    CliError::Io {
        context: context.to_string(),
        source,
    }
}

/// `$PARLEY_HOME` if set and non-empty, else `~/.parley`.
pub fn parley_home() -> Result<PathBuf, CliError> {
    resolve_home(|k| std::env::var_os(k))
}

/// The agent tooling's directory for `dialect` ([`Dialect::tooling_home`]):
/// `$PARLEY_HOME` or `~/.parley` for Parley v1, `$YEA_HOME` or `~/.yea` for
/// YEA v1, so a YEA agent finds what `parley` saves for it.
pub fn tooling_home(dialect: Dialect) -> Result<PathBuf, CliError> {
    resolve_tooling_home(dialect, |k| std::env::var_os(k))
}

/// [`tooling_home`] without reading the process environment (tests).
pub fn resolve_tooling_home(
    dialect: Dialect,
    env: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> Result<PathBuf, CliError> {
    let (dir, var) = dialect.tooling_home();
    let get = |k: &str| env(k).filter(|v| !v.is_empty());
    if let Some(home) = get(var) {
        return Ok(PathBuf::from(home));
    }
    let user_home = get("HOME").or_else(|| get("USERPROFILE")).ok_or_else(|| {
        CliError::bad(format!(
            "cannot find the agent's directory: set {var} (or HOME)"
        ))
    })?;
    Ok(PathBuf::from(user_home).join(dir))
}

/// [`parley_home`] without reading the process environment (tests): the
/// Parley v1 tooling home (`$PARLEY_HOME`, else `~/.parley`).
pub fn resolve_home(env: impl Fn(&str) -> Option<std::ffi::OsString>) -> Result<PathBuf, CliError> {
    resolve_tooling_home(Dialect::ParleyV1, env)
}

/// Creates `dir` (and missing parents) with mode 0700. An existing directory
/// is kept as it is: it may be one the user chose on purpose.
pub fn ensure_dir(dir: &Path) -> Result<(), CliError> {
    match fs::symlink_metadata(dir) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(meta) if meta.file_type().is_symlink() && dir.is_dir() => Ok(()),
        Ok(_) => Err(CliError::bad(format!(
            "{} exists but is not a directory: move it away or set {HOME_ENV} elsewhere",
            dir.display()
        ))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => private_fs::create_dir_all(dir)
            .map_err(|e| io_err(format!("creating {}", dir.display()), e)),
        Err(e) => Err(io_err(format!("reading {}", dir.display()), e)),
    }
}

/// The agent's key, loaded from `agent.key`.
pub struct AgentKey {
    /// The secret (zeroized on drop).
    pub secret: SecretKey,
    /// Its public key.
    pub public: PublicKey,
    /// The file it came from.
    pub path: PathBuf,
}

/// `$PARLEY_HOME/agent.key`.
pub fn agent_key_path(home: &Path) -> PathBuf {
    home.join(AGENT_KEY)
}

/// Reads an agent key file in the upstream format. `Ok(None)` if it does not
/// exist. A malformed file is an error that never quotes the file (it is
/// mostly a secret even when malformed).
pub fn load_agent_key(home: &Path) -> Result<Option<AgentKey>, CliError> {
    let path = agent_key_path(home);
    let file = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err(format!("reading {}", path.display()), e)),
    };
    let meta = file
        .metadata()
        .map_err(|e| io_err(format!("reading {}", path.display()), e))?;
    if !meta.is_file() || meta.len() > MAX_KEY_FILE {
        return Err(CliError::bad(format!(
            "{} is not an agent key file (expected base64url of a 32-byte seed and a newline)",
            path.display()
        )));
    }
    warn_if_exposed(&path, &meta);
    let mut text = Zeroizing::new(String::new());
    file.take(MAX_KEY_FILE)
        .read_to_string(&mut text)
        .map_err(|e| io_err(format!("reading {}", path.display()), e))?;
    let secret = SecretKey::from_seed_b64(&text).map_err(|_| {
        CliError::bad(format!(
            "{} is not an agent key file (expected base64url of a 32-byte seed and a newline); move it away and run `parley init` to make a new one",
            path.display()
        ))
    })?;
    let public = secret.public();
    Ok(Some(AgentKey {
        secret,
        public,
        path,
    }))
}

/// Loads the agent key, or explains how to make one.
pub fn require_agent_key(home: &Path) -> Result<AgentKey, CliError> {
    load_agent_key(home)?.ok_or_else(|| {
        CliError::bad(format!(
            "no agent key at {}: run `parley init` first (or set {HOME_ENV})",
            agent_key_path(home).display()
        ))
    })
}

#[cfg(unix)]
fn warn_if_exposed(path: &Path, meta: &fs::Metadata) {
    use std::os::unix::fs::PermissionsExt;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        eprintln!(
            "parley: warning: {} has mode {mode:o}; other users may read the agent key: run `chmod 600 {}`",
            path.display(),
            path.display()
        );
    }
}

#[cfg(not(unix))]
fn warn_if_exposed(_path: &Path, _meta: &fs::Metadata) {}

/// Creates `agent.key` from 32 bytes of the OS random source if it does not
/// exist. Returns the key and whether it was created now. Never overwrites:
/// the file is created with `O_EXCL`, so a concurrent `init` cannot replace
/// a key already handed out.
pub fn init_agent_key(home: &Path) -> Result<(AgentKey, bool), CliError> {
    if let Some(existing) = load_agent_key(home)? {
        return Ok((existing, false));
    }
    ensure_dir(home)?;
    let path = agent_key_path(home);
    let mut seed = Zeroizing::new([0u8; 32]);
    getrandom::getrandom(seed.as_mut()).map_err(|e| {
        CliError::bad(format!(
            "the OS random source failed ({e}); no key was created"
        ))
    })?;
    let secret = SecretKey::from_seed(&seed);
    // Sized up front so no reallocation leaves a copy of the seed behind.
    let mut line = Zeroizing::new(String::with_capacity(44));
    line.push_str(&secret.to_seed_b64());
    line.push('\n');
    let mut file = match private_fs::create_new(&path) {
        Ok(f) => f,
        // Another `init` won the race: use its key.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            return Ok((require_agent_key(home)?, false))
        }
        Err(e) => return Err(io_err(format!("creating {}", path.display()), e)),
    };
    let written = file
        .write_all(line.as_bytes())
        .and_then(|()| file.sync_all());
    if let Err(e) = written {
        drop(file);
        // Do not leave a half-written key for the next run to trip over.
        let _ = fs::remove_file(&path);
        return Err(io_err(format!("writing {}", path.display()), e));
    }
    let public = secret.public();
    Ok((
        AgentKey {
            secret,
            public,
            path,
        },
        true,
    ))
}

/// Checks a hash or id before it becomes a file name: base64url characters
/// only (which rules out `/`, `\`, `.` and so `..`), 1 to 128 of them. The
/// hash comes from a service, which is untrusted: without this, a consent for
/// hash `../../.bashrc` would write outside `consents/`.
pub fn check_stem(stem: &str) -> Result<(), CliError> {
    let refuse = |why: &str| {
        Err(CliError::bad(format!(
            "refusing to use {} as a file name: {why}",
            crate::commands::visible(&stem.chars().take(80).collect::<String>())
        )))
    };
    if stem.is_empty() {
        return refuse("it is empty");
    }
    if stem.contains('/') || stem.contains('\\') {
        return refuse("it contains a path separator");
    }
    if stem.contains("..") {
        return refuse("it contains \"..\"");
    }
    if stem.len() > MAX_STEM {
        return refuse("it is longer than 128 characters");
    }
    if !stem
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return refuse("a hash or grant id has only base64url characters (A-Z a-z 0-9 - _)");
    }
    Ok(())
}

/// Saves `token` + `\n` as `<dir>/<stem>.pg`, mode 0600, in a directory
/// created 0700. Written to a temporary file and renamed into place, so an
/// agent polling the directory never reads half a token; an existing file of
/// the same name is replaced (custody returns the same token for the same
/// request, and a newer grant under the same id is the same grant).
pub fn save_token(dir: &Path, stem: &str, token: &str) -> Result<PathBuf, CliError> {
    check_stem(stem)?;
    ensure_dir(dir)?;
    let path = dir.join(format!("{stem}.pg"));
    let tmp = dir.join(format!(".{stem}.pg.tmp{}", std::process::id()));
    let _ = fs::remove_file(&tmp);
    let result = (|| {
        let mut f = private_fs::create_new(&tmp)?;
        f.write_all(token.as_bytes())?;
        f.write_all(b"\n")?;
        f.sync_all()?;
        fs::rename(&tmp, &path)
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(io_err(format!("saving {}", path.display()), e));
    }
    Ok(path)
}

/// Saves a YEA consent token as `<dir>/<hash>` (+ `\n`), mode 0600, where
/// the YEA tooling looks for it. Created new, never replacing a file: a
/// consent already saved for that hash is kept, and an identical one counts
/// as saved; a different one is refused, naming the file, so nothing the
/// agent relies on is overwritten silently.
pub fn save_consent_new(dir: &Path, hash: &str, token: &str) -> Result<PathBuf, CliError> {
    check_stem(hash)?;
    ensure_dir(dir)?;
    let path = dir.join(hash);
    let mut f = match private_fs::create_new(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            let same = fs::read_to_string(&path).is_ok_and(|t| t.trim() == token);
            if same {
                return Ok(path);
            }
            return Err(CliError::bad(format!(
                "{} already holds another consent for this proposal; it was not replaced (move it away and approve again)",
                path.display()
            )));
        }
        Err(e) => return Err(io_err(format!("creating {}", path.display()), e)),
    };
    let written = f
        .write_all(token.as_bytes())
        .and_then(|()| f.write_all(b"\n"))
        .and_then(|()| f.sync_all());
    if let Err(e) = written {
        drop(f);
        let _ = fs::remove_file(&path);
        return Err(io_err(format!("saving {}", path.display()), e));
    }
    Ok(path)
}

/// Copies the agent key of `from` (another tooling's home) to `to`, so both
/// toolings act as one agent. Never replaces a key: if `to` has one already
/// it must be the same key. Returns the key and whether it was copied now.
pub fn import_agent_key(from: &Path, to: &Path) -> Result<(AgentKey, bool), CliError> {
    let source = load_agent_key(from)?.ok_or_else(|| {
        CliError::bad(format!(
            "no agent key at {} to import",
            agent_key_path(from).display()
        ))
    })?;
    if let Some(existing) = load_agent_key(to)? {
        if existing.public == source.public {
            return Ok((existing, false));
        }
        return Err(CliError::bad(format!(
            "{} already holds another agent key ({}); it was not replaced: move it away to import {}",
            existing.path.display(),
            existing.public,
            source.public
        )));
    }
    ensure_dir(to)?;
    let path = agent_key_path(to);
    let mut line = Zeroizing::new(String::with_capacity(44));
    line.push_str(&source.secret.to_seed_b64());
    line.push('\n');
    let mut file = private_fs::create_new(&path)
        .map_err(|e| io_err(format!("creating {}", path.display()), e))?;
    if let Err(e) = file
        .write_all(line.as_bytes())
        .and_then(|()| file.sync_all())
    {
        drop(file);
        let _ = fs::remove_file(&path);
        return Err(io_err(format!("writing {}", path.display()), e));
    }
    Ok((
        AgentKey {
            secret: source.secret,
            public: source.public,
            path,
        },
        true,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    /// A fresh, empty directory under the system temp dir, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(tag: &str) -> TempDir {
            use std::sync::atomic::{AtomicU32, Ordering};
            static N: AtomicU32 = AtomicU32::new(0);
            let p = std::env::temp_dir().join(format!(
                "parley-home-unit-{}-{tag}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::SeqCst)
            ));
            let _ = fs::remove_dir_all(&p);
            TempDir(p)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    #[cfg(unix)]
    fn mode(p: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn home_resolution() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| OsString::from(v))
            }
        };
        assert_eq!(
            resolve_home(env(&[("PARLEY_HOME", "/p"), ("HOME", "/h")])).unwrap(),
            PathBuf::from("/p")
        );
        assert_eq!(
            resolve_home(env(&[("PARLEY_HOME", ""), ("HOME", "/h")])).unwrap(),
            PathBuf::from("/h/.parley")
        );
        assert!(resolve_home(env(&[])).is_err());
    }

    #[test]
    fn stems_must_be_base64url() {
        for ok in [
            "mH3vAbc-_09",
            "A",
            "x1y2z3",
            &"a".repeat(43),
            &"b".repeat(128),
        ] {
            check_stem(ok).unwrap();
        }
        for bad in [
            "",
            "../x",
            "..",
            "a/b",
            "a\\b",
            "/etc/passwd",
            "a.b",
            "a b",
            "é",
            "a\u{202e}b",
            "x\n",
            &"c".repeat(129),
        ] {
            let e = check_stem(bad).unwrap_err().to_string();
            assert!(e.starts_with("refusing to use"), "{bad:?}: {e}");
            assert!(!e.contains('\u{202e}') && !e.contains('\n'), "{e}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn agent_key_file_is_upstream_format_and_private() {
        let t = TempDir::new("key");
        let home = t.0.join("nested/home");
        assert!(load_agent_key(&home).unwrap().is_none());
        let (key, created) = init_agent_key(&home).unwrap();
        assert!(created);
        assert_eq!(mode(&home), 0o700);
        let path = agent_key_path(&home);
        assert_eq!(mode(&path), 0o600);
        let text = fs::read_to_string(&path).unwrap();
        assert_eq!(text.len(), 44);
        assert!(text.ends_with('\n'));
        assert!(text[..43]
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        let reread = SecretKey::from_seed_b64(&text).unwrap();
        assert_eq!(reread.public(), key.public);

        let (again, created) = init_agent_key(&home).unwrap();
        assert!(!created);
        assert_eq!(again.public, key.public);
        assert_eq!(fs::read_to_string(&path).unwrap(), text);
    }

    #[test]
    fn a_malformed_key_file_is_refused_without_quoting_it() {
        let t = TempDir::new("bad");
        fs::create_dir_all(&t.0).unwrap();
        fs::write(agent_key_path(&t.0), "c2VjcmV0LWJ1dC1zaG9ydA\n").unwrap();
        let e = load_agent_key(&t.0).err().unwrap().to_string();
        assert!(e.contains("not an agent key file"), "{e}");
        assert!(!e.contains("c2VjcmV0"), "{e}");
        assert!(init_agent_key(&t.0).is_err(), "init never replaces a file");
    }

    #[cfg(unix)]
    #[test]
    fn tokens_are_saved_private_and_replaced_atomically() {
        let t = TempDir::new("tok");
        let dir = t.0.join(CONSENTS_DIR);
        let p = save_token(&dir, "abc_DEF-1", "pg1.first").unwrap();
        assert_eq!(p, dir.join("abc_DEF-1.pg"));
        assert_eq!(fs::read_to_string(&p).unwrap(), "pg1.first\n");
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&p), 0o600);
        save_token(&dir, "abc_DEF-1", "pg1.second").unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "pg1.second\n");
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1, "no temp file left");
        assert!(save_token(&dir, "../escape", "pg1.x").is_err());
        assert!(!t.0.join("escape.pg").exists());
    }

    #[cfg(unix)]
    #[test]
    fn yea_consents_are_created_new_and_never_replaced() {
        let t = TempDir::new("yea-consent");
        let dir = t.0.join("consents");
        let path = save_consent_new(&dir, "h-1_x", "pg1.a").unwrap();
        assert_eq!(path, dir.join("h-1_x"));
        assert_eq!(fs::read_to_string(&path).unwrap(), "pg1.a\n");
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&dir), 0o700);
        // The same token again: already saved. Another: refused, kept.
        assert_eq!(save_consent_new(&dir, "h-1_x", "pg1.a").unwrap(), path);
        let e = save_consent_new(&dir, "h-1_x", "pg1.b")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not replaced"), "{e}");
        assert_eq!(fs::read_to_string(&path).unwrap(), "pg1.a\n");
        assert!(save_consent_new(&dir, "../h", "pg1.a").is_err());
    }

    #[test]
    fn the_yea_home_is_its_own_variable_and_directory() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| OsString::from(v))
            }
        };
        let y = Dialect::YeaV1;
        assert_eq!(
            resolve_tooling_home(y, env(&[("YEA_HOME", "/y"), ("PARLEY_HOME", "/p")])).unwrap(),
            PathBuf::from("/y")
        );
        assert_eq!(
            resolve_tooling_home(y, env(&[("PARLEY_HOME", "/p"), ("HOME", "/h")])).unwrap(),
            PathBuf::from("/h/.yea")
        );
        assert_eq!(
            resolve_tooling_home(
                Dialect::ParleyV1,
                env(&[("YEA_HOME", "/y"), ("HOME", "/h")])
            )
            .unwrap(),
            PathBuf::from("/h/.parley")
        );
    }
}

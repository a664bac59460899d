//! `parley custody keys list|create|delete|import|export`: manages the
//! principal keys directly in custody's store (`parley_custody::keystore`),
//! as custody's OS user, and records every change in custody's audit log
//! (`key_created`, `key_imported`, `key_deleted`).
//!
//! The store is the OS keychain by default. `--file-store` selects the
//! passphrase-encrypted file store in custody's data directory: weaker (a
//! copy of a key file can be attacked offline), for headless servers only.
//! Its passphrase comes from `$PARLEY_CUSTODY_PASSPHRASE` or is asked on the
//! terminal without echo.
//!
//! `export` prints only the public key: that is what services must trust.
//! There is no way to print a secret.

use super::Report;
use crate::cli::{CustodyArgs, CustodyCommand, KeysArgs, KeysCommand};
use crate::error::CliError;
use parley_core::lens;
use parley_custody::admin;
use parley_custody::audit::Audit;
use parley_custody::keystore::{
    self, KeyInfo, KeySource, KeyStatus, Keystore, Passphrase, StoreKind,
};
use parley_custody::paths;
use serde::Serialize;
use std::fmt;
use std::path::{Path, PathBuf};
use zeroize::Zeroizing;

/// Where the passphrase of the file store may come from, besides the terminal.
pub const PASSPHRASE_ENV: &str = "PARLEY_CUSTODY_PASSPHRASE";

/// Custody's data directory (audit log, file store), created 0700 if needed:
/// these commands run as custody's user and may write there.
pub(super) fn data_dir(flag: Option<&PathBuf>) -> Result<PathBuf, CliError> {
    match flag {
        Some(d) => paths::ensure_private_dir(d)
            .map(|()| d.clone())
            .map_err(CliError::bad),
        None => paths::data_dir().map_err(CliError::bad),
    }
}

/// Reads a line from the terminal with echo off (`stty -echo`), so the
/// passphrase is not shown or left in the scrollback. Refuses rather than
/// echoing if echo cannot be turned off.
#[cfg(unix)]
fn prompt_hidden(prompt: &str) -> Result<Zeroizing<String>, CliError> {
    use std::io::{BufRead, Write};
    use std::process::{Command, Stdio};
    let no_tty = |e: std::io::Error| {
        CliError::bad(format!(
            "--file-store needs {PASSPHRASE_ENV} or a terminal to ask on ({e})"
        ))
    };
    let tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
        .map_err(no_tty)?;
    let stty = |arg: &str| -> bool {
        let Ok(input) = tty.try_clone() else {
            return false;
        };
        Command::new("stty")
            .arg(arg)
            .stdin(Stdio::from(input))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !stty("-echo") {
        return Err(CliError::bad(format!(
            "cannot turn off echo on the terminal (stty failed); set {PASSPHRASE_ENV} instead"
        )));
    }
    let mut out = tty.try_clone().map_err(no_tty)?;
    let _ = write!(out, "{prompt}");
    let _ = out.flush();
    let mut line = Zeroizing::new(String::new());
    let read = std::io::BufReader::new(&tty).read_line(&mut line);
    let restored = stty("echo");
    let _ = writeln!(out);
    read.map_err(no_tty)?;
    if !restored {
        eprintln!("parley: warning: could not turn echo back on; run `stty echo`");
    }
    let trimmed = Zeroizing::new(line.trim_end_matches(['\n', '\r']).to_string());
    Ok(trimmed)
}

#[cfg(not(unix))]
fn prompt_hidden(_prompt: &str) -> Result<Zeroizing<String>, CliError> {
    Err(CliError::bad(format!(
        "--file-store needs {PASSPHRASE_ENV} on this platform"
    )))
}

/// The file store passphrase: the environment, else the terminal (asked
/// twice when it will encrypt a new key, so a typo does not lock it away).
fn passphrase(new_key: bool) -> Result<Passphrase, CliError> {
    if let Some(p) = std::env::var_os(PASSPHRASE_ENV) {
        let p = p
            .into_string()
            .map_err(|_| CliError::bad(format!("{PASSPHRASE_ENV} is not valid UTF-8")))?;
        return Ok(Passphrase::new(Zeroizing::new(p)));
    }
    let first = prompt_hidden("passphrase for the key file store: ")?;
    if new_key {
        let again = prompt_hidden("the same passphrase again: ")?;
        if *again != *first {
            return Err(CliError::bad("the passphrases differ; nothing was changed"));
        }
    }
    Ok(Passphrase::new(first))
}

fn open_store(a: &KeysArgs, dir: &Path, new_key: bool) -> Result<Keystore, CliError> {
    open_store_with(a.file_store, a.namespace.clone(), dir, new_key)
}

/// The key store `--file-store` / `--namespace` name.
pub(super) fn open_store_with(
    file_store: bool,
    namespace: Option<String>,
    dir: &Path,
    new_key: bool,
) -> Result<Keystore, CliError> {
    if file_store {
        eprintln!("parley: note: the file store is weaker than the OS keychain: anyone who copies a key file can try passphrases offline");
        let store_dir = paths::file_store_dir(dir).map_err(CliError::bad)?;
        return Keystore::file_store(&store_dir, passphrase(new_key)?).map_err(CliError::bad);
    }
    let ns = namespace.or_else(|| {
        std::env::var(keystore::ENV_NAMESPACE)
            .ok()
            .filter(|s| !s.is_empty())
    });
    Keystore::keychain_namespaced(ns.as_deref()).map_err(CliError::bad)
}

/// Finds a key by its full public key, its label, or a unique prefix of its
/// public key (with or without `ed25519:`, at least 4 characters).
fn resolve(keys: &[KeyInfo], wanted: &str) -> Result<KeyInfo, CliError> {
    let wanted = wanted.trim();
    if let Some(k) = keys.iter().find(|k| k.public.to_string() == wanted) {
        return Ok(k.clone());
    }
    let by_label: Vec<&KeyInfo> = keys.iter().filter(|k| k.label == wanted).collect();
    let by_prefix: Vec<&KeyInfo> = if wanted.len() >= 4 {
        keys.iter()
            .filter(|k| {
                let full = k.public.to_string();
                full.starts_with(wanted)
                    || full
                        .strip_prefix(parley_core::keys::KEY_PREFIX)
                        .is_some_and(|b| b.starts_with(wanted))
            })
            .collect()
    } else {
        Vec::new()
    };
    let candidates = if by_label.is_empty() {
        by_prefix
    } else {
        by_label
    };
    match candidates.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(CliError::bad(format!(
            "no principal key matches {:?}; see `parley custody keys list`",
            super::visible(&wanted.chars().take(60).collect::<String>())
        ))),
        many => Err(CliError::bad(format!(
            "{:?} matches {} keys ({}); give the full public key",
            super::visible(&wanted.chars().take(60).collect::<String>()),
            many.len(),
            many.iter()
                .map(|k| k.public.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// Opens the audit log before a change: `parley_custody::admin` records
/// every change in it, and a change is never made that cannot be recorded.
fn open_audit(dir: &Path) -> Result<Audit, CliError> {
    Audit::open(&paths::audit_path(dir)).map_err(CliError::bad)
}

#[derive(Serialize)]
struct KeyView {
    key: String,
    label: String,
    created_at: i64,
    source: KeySource,
    status: KeyStatus,
}

/// `export`'s text: the public key alone, ready to paste into a service's
/// trust list.
impl fmt::Display for KeyView {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.key)
    }
}

impl From<&KeyInfo> for KeyView {
    fn from(k: &KeyInfo) -> Self {
        KeyView {
            key: k.public.to_string(),
            label: k.label.clone(),
            created_at: k.created_at,
            source: k.source,
            status: k.status,
        }
    }
}

#[derive(Serialize)]
struct Listing {
    store: StoreKind,
    keys: Vec<KeyView>,
}

impl fmt::Display for Listing {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match &self.store {
            StoreKind::Keychain { service } => write!(f, "store: OS keychain ({service})")?,
            StoreKind::File { dir } => {
                write!(f, "store: passphrase-encrypted files in {}", dir.display())?
            }
        }
        if self.keys.is_empty() {
            return write!(
                f,
                "\nno principal keys (create one with `parley custody keys create --label NAME`)"
            );
        }
        for k in &self.keys {
            let source = match k.source {
                KeySource::Created => "created",
                KeySource::Imported => "imported",
            };
            write!(
                f,
                "\n{}  {}  {source} {}",
                k.key,
                super::visible(&k.label),
                lens::time(k.created_at)
            )?;
            if k.status == KeyStatus::Missing {
                write!(f, "  SECRET MISSING (cannot sign; delete this record)")?;
            }
        }
        Ok(())
    }
}

#[derive(Serialize)]
struct Changed {
    action: &'static str,
    key: String,
    label: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    shredded: Option<PathBuf>,
}

impl fmt::Display for Changed {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.key)
    }
}

pub fn run(a: CustodyArgs) -> Result<Report, CliError> {
    match a.command {
        CustodyCommand::Keys(k) => keys(k),
        CustodyCommand::Freeze(f) => super::custody_freeze::freeze(&f),
        CustodyCommand::Unfreeze(f) => super::custody_freeze::unfreeze(&f),
        CustodyCommand::Frozen(f) => super::custody_freeze::status(&f),
        CustodyCommand::Revoke(r) => super::custody_revoke::revoke(&r),
    }
}

/// Create and import hold the new key's seed in this process: first make
/// its memory its own as the service does (no same-user ptrace or
/// /proc/PID/mem, no core dumps; custody/src/hardening.rs).
fn harden() -> Result<(), CliError> {
    parley_custody::hardening::harden_process()
        .map(drop)
        .map_err(CliError::bad)
}

fn keys(a: KeysArgs) -> Result<Report, CliError> {
    let dir = data_dir(a.data_dir.as_ref())?;
    match &a.command {
        KeysCommand::List => {
            let store = open_store(&a, &dir, false)?;
            let keys = store.list().map_err(CliError::bad)?;
            Ok(Report::new(
                &Listing {
                    store: store.kind(),
                    keys: keys.iter().map(KeyView::from).collect(),
                },
                0,
            ))
        }
        KeysCommand::Export { key } => {
            let store = open_store(&a, &dir, false)?;
            let found = resolve(&store.list().map_err(CliError::bad)?, key)?;
            Ok(Report::new(&KeyView::from(&found), 0))
        }
        KeysCommand::Create { label } => {
            harden()?;
            let mut audit = open_audit(&dir)?;
            let store = open_store(&a, &dir, true)?;
            let key = admin::create_key(&store, &mut audit, label, label).map_err(CliError::bad)?;
            eprintln!("parley: principal key created; services must trust it: {key}");
            Ok(Report::new(
                &Changed {
                    action: "created",
                    key: key.to_string(),
                    label: label.clone(),
                    shredded: None,
                },
                0,
            ))
        }
        KeysCommand::Import { file, label, shred } => {
            harden()?;
            let mut audit = open_audit(&dir)?;
            let store = open_store(&a, &dir, true)?;
            let key =
                admin::import_key(&store, &mut audit, file, label, label).map_err(CliError::bad)?;
            let shredded = if *shred {
                keystore::shred_file(file).map_err(|e| {
                    CliError::bad(format!("the key was imported, but shredding failed: {e}"))
                })?;
                eprintln!("parley: {} overwritten and deleted (best effort: SSDs, snapshots and backups may keep copies)", file.display());
                Some(file.clone())
            } else {
                eprintln!("parley: warning: {} still holds the principal key in plaintext: delete it (`parley custody keys import … --shred` does this)", file.display());
                None
            };
            Ok(Report::new(
                &Changed {
                    action: "imported",
                    key: key.to_string(),
                    label: label.clone(),
                    shredded,
                },
                0,
            ))
        }
        KeysCommand::Delete { key, confirm } => {
            let mut audit = open_audit(&dir)?;
            let store = open_store(&a, &dir, false)?;
            let found = resolve(&store.list().map_err(CliError::bad)?, key)?;
            admin::delete_key(&store, &mut audit, &found.public, confirm, &found.label)
                .map_err(CliError::bad)?;
            eprintln!(
                "parley: principal key {} deleted; grants it issued stay valid until they expire",
                found.public
            );
            Ok(Report::new(
                &Changed {
                    action: "deleted",
                    key: found.public.to_string(),
                    label: found.label,
                    shredded: None,
                },
                0,
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parley_core::SecretKey;

    fn info(seed: u8, label: &str) -> KeyInfo {
        KeyInfo {
            public: SecretKey::from_seed(&Zeroizing::new([seed; 32])).public(),
            label: label.into(),
            created_at: 0,
            source: KeySource::Created,
            status: KeyStatus::Present,
        }
    }

    #[test]
    fn keys_resolve_by_full_key_label_or_unique_prefix() {
        let keys = [info(1, "personal"), info(2, "work"), info(3, "work")];
        let full = keys[0].public.to_string();
        assert_eq!(resolve(&keys, &full).unwrap().public, keys[0].public);
        assert_eq!(resolve(&keys, "personal").unwrap().public, keys[0].public);
        let e = resolve(&keys, "work").unwrap_err().to_string();
        assert!(e.contains("matches 2 keys"), "{e}");
        let prefix = &full[..14];
        assert_eq!(resolve(&keys, prefix).unwrap().public, keys[0].public);
        let bare = &full["ed25519:".len().."ed25519:".len() + 6];
        assert_eq!(resolve(&keys, bare).unwrap().public, keys[0].public);
        assert!(resolve(&keys, "ed2").is_err(), "too short to be a prefix");
        assert!(resolve(&keys, "nobody").is_err());
    }
}

//! Principal keys from the UI: list, create, import, shred, delete, each
//! with its audit row. Deleting, importing, and creating a key next to
//! another ask the OS to authenticate the human first ([`change_auth`]).

use super::refused;
use super::{blocking, change_auth, CallError, ErrorCode, R};
use crate::admin;
use crate::desktop::events::UiEvent;
use crate::desktop::service::Desktop;
use crate::desktop::views::{self, KeyView};
use crate::stepup::PromptDetails;
use parley_core::PublicKey;
use serde::Serialize;
use std::path::PathBuf;

/// The key list.
#[derive(Debug, Serialize)]
pub struct KeysView {
    /// Where the keys are.
    pub store: String,
    /// The keys.
    pub keys: Vec<KeyView>,
}

/// The principal keys (public halves only).
pub async fn keys_list(state: &Desktop) -> R<KeysView> {
    let core = state.core()?;
    let e = core.engine.clone();
    let keys = blocking("listing keys", move || e.keystore().list().map_err(refused)).await?;
    Ok(KeysView {
        store: views::store_words(&core.store),
        keys: keys.into_iter().map(KeyView::from).collect(),
    })
}

async fn key_view(state: &Desktop, public: String) -> R<KeyView> {
    let core = state.core()?;
    let e = core.engine.clone();
    let keys = blocking("listing keys", move || e.keystore().list().map_err(refused)).await?;
    keys.into_iter()
        .find(|k| k.public.to_string() == public)
        .map(KeyView::from)
        .ok_or_else(|| "the key was stored but is not listed; check the keychain".into())
}

/// The keys in the store now (public halves).
async fn stored(state: &Desktop) -> R<Vec<crate::keystore::KeyInfo>> {
    let e = state.core()?.engine.clone();
    blocking("listing keys", move || e.keystore().list().map_err(refused)).await
}

/// A key in words for an OS prompt: `ed25519:abcd…wxyz ("label")`.
fn key_words(key: &PublicKey, label: &str) -> String {
    format!(
        "{} (\"{}\")",
        key.short(),
        crate::display::bounded(label, 40)
    )
}

/// What to do without OS authentication, for a key change.
fn keys_without(command: &str) -> String {
    format!("quit Parley Custody and run `parley custody keys {command}` in a terminal as yourself")
}

/// Asks the OS for a key change described by `change`.
async fn authenticate(state: &Desktop, change: &str, command: &str) -> R<&'static str> {
    let details = PromptDetails::new().with("change", change);
    change_auth::authenticate(&state.core()?.engine, &details, &keys_without(command)).await
}

/// Creates a principal key in the OS keychain. The first key is created
/// without asking; another next to it only after OS authentication (a key
/// added is a key that can sign).
pub async fn key_create(state: &Desktop, label: String) -> R<KeyView> {
    let core = state.core()?;
    let label = label.trim().to_string();
    let existing = stored(state).await?;
    let confirmed_by = match existing.first() {
        None => None,
        Some(k) => Some(
            authenticate(
                state,
                &format!(
                    "create another principal key \"{}\" next to {}",
                    crate::display::bounded(&label, 40),
                    key_words(&k.public, &k.label)
                ),
                "create",
            )
            .await?,
        ),
    };
    let e = core.engine.clone();
    let created = blocking("creating the key", move || {
        let reason = format!("created in the app: {label}");
        Ok(match confirmed_by {
            Some(by) => admin::create_key(e.keystore(), confirmed(&e, by), &label, &reason),
            None => admin::create_key(e.keystore(), &e, &label, &reason),
        })
    })
    .await?;
    tell_if_changed(state, &created);
    key_view(state, created?.to_string()).await
}

fn expand_home(path: &str) -> PathBuf {
    match path.strip_prefix("~/") {
        Some(rest) => std::env::var_os("HOME")
            .map(|h| PathBuf::from(h).join(rest))
            .unwrap_or_else(|| PathBuf::from(path)),
        None => PathBuf::from(path),
    }
}

/// Imports an upstream `principal.key` into the keychain (once).
pub async fn key_import(state: &Desktop, path: String, label: String) -> R<KeyView> {
    let core = state.core()?;
    let file = expand_home(path.trim());
    if !file.is_absolute() {
        return Err(
            "give the full path of the key file (for example ~/.parley/principal.key)".into(),
        );
    }
    if !file.is_file() {
        return Err(refuse!("there is no key file at {}", file.display()));
    }
    // An imported key can sign: always asked for.
    let by = authenticate(
        state,
        &format!(
            "import a principal key from {}",
            crate::display::bounded(&file.display().to_string(), 100)
        ),
        "import",
    )
    .await?;
    let e = core.engine.clone();
    let f = file.clone();
    let imported = blocking("importing the key", move || {
        let reason = format!("imported in the app from {}", f.display());
        Ok(admin::import_key(
            e.keystore(),
            confirmed(&e, by),
            &f,
            label.trim(),
            &reason,
        ))
    })
    .await?;
    // A key imported but not recorded is still in the store: its file may
    // be shredded all the same.
    let stored = match &imported {
        Ok(key) => Some(key),
        Err(e) => e.changed_key(),
    };
    if let (Some(key), Ok(mut m)) = (stored, state.imported.lock()) {
        m.insert(file, key.to_string());
    }
    tell_if_changed(state, &imported);
    key_view(state, imported?.to_string()).await
}

/// Overwrites and deletes a seed file imported in this session.
pub async fn key_shred(state: &Desktop, path: String) -> R<()> {
    let file = expand_home(path.trim());
    let known = state
        .imported
        .lock()
        .map(|m| m.contains_key(&file))
        .unwrap_or(false);
    if !known {
        return Err("only a key file imported in this session can be shredded here".into());
    }
    let f = file.clone();
    blocking("shredding the key file", move || {
        crate::keystore::shred_file(&f).map_err(refused)
    })
    .await?;
    if let Ok(mut m) = state.imported.lock() {
        m.remove(&file);
    }
    Ok(())
}

/// Deletes a principal key for good; `confirm` must repeat the full key.
pub async fn key_delete(state: &Desktop, public: String, confirm: String) -> R<()> {
    let core = state.core()?;
    let pk: PublicKey = public
        .parse()
        .map_err(|e| CallError::new(ErrorCode::BadRequest, format!("not a key: {e}")))?;
    // The confirmation and the key are checked before the OS is asked, so
    // a mistyped confirmation never raises a password prompt.
    if confirm.trim() != pk.to_string() {
        return Err(admin::KeyChangeError::from(
            crate::keystore::KeystoreError::ConfirmationMismatch(pk.to_string()),
        )
        .into());
    }
    let Some(found) = stored(state).await?.into_iter().find(|k| k.public == pk) else {
        return Err(refuse!("there is no principal key {pk} to delete"));
    };
    let by = authenticate(
        state,
        &format!(
            "delete the principal key {}",
            key_words(&found.public, &found.label)
        ),
        "delete",
    )
    .await?;
    let e = core.engine.clone();
    let deleted = blocking("deleting the key", move || {
        Ok(admin::delete_key(
            e.keystore(),
            confirmed(&e, by),
            &pk,
            &confirm,
            "deleted in the app",
        ))
    })
    .await?;
    tell_if_changed(state, &deleted);
    Ok(deleted?)
}

/// The engine's log, its key rows saying how the OS vouched for the change.
fn confirmed<'a>(
    e: &'a crate::engine::Engine,
    by: &str,
) -> admin::Confirmed<&'a crate::engine::Engine> {
    admin::Confirmed {
        log: e,
        by: by.to_string(),
    }
}

/// Tells every window that the key store changed, when it did: also when
/// the change stands but its audit row could not be written, so that the
/// key list shows the key that is (or is no longer) there next to the
/// refusal that says the log missed it.
fn tell_if_changed<T>(state: &Desktop, result: &Result<T, admin::KeyChangeError>) {
    let changed = match result {
        Ok(_) => true,
        Err(e) => e.changed_key().is_some(),
    };
    if changed {
        state.hub.send(UiEvent::StatusChanged);
    }
}

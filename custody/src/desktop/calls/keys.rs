//! Principal keys from the UI: list, create, import, shred, delete, each
//! with its audit row.

use super::refused;
use super::{blocking, R};
use crate::admin::{self, KeyChange};
use crate::desktop::events::UiEvent;
use crate::desktop::service::Desktop;
use crate::desktop::views::{self, KeyView};
use crate::engine::unix_now;
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

async fn log_key_event(
    state: &Desktop,
    change: KeyChange,
    key: &PublicKey,
    reason: String,
) -> R<()> {
    let e = state.core()?.engine.clone();
    let key = key.clone();
    blocking("writing the audit log", move || {
        e.with_audit(|a| admin::record_key_change(a, change, &key, &reason, unix_now()))
            .map_err(refused)
    })
    .await
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

/// Creates a principal key in the OS keychain.
pub async fn key_create(state: &Desktop, label: String) -> R<KeyView> {
    let core = state.core()?;
    let e = core.engine.clone();
    let l = label.clone();
    let key = blocking("creating the key", move || {
        e.keystore().create(l.trim()).map_err(refused)
    })
    .await?;
    log_key_event(
        state,
        KeyChange::Created,
        &key,
        format!("created in the app: {}", label.trim()),
    )
    .await?;
    let public = key.to_string();
    state.hub.send(UiEvent::StatusChanged);
    key_view(state, public).await
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
    let e = core.engine.clone();
    let (f, l) = (file.clone(), label.clone());
    let key = blocking("importing the key", move || {
        e.keystore().import_seed_file(&f, l.trim()).map_err(refused)
    })
    .await?;
    let public = key.to_string();
    if let Ok(mut m) = state.imported.lock() {
        m.insert(file.clone(), public.clone());
    }
    log_key_event(
        state,
        KeyChange::Imported,
        &key,
        format!("imported in the app from {}", file.display()),
    )
    .await?;
    state.hub.send(UiEvent::StatusChanged);
    key_view(state, public).await
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
    let pk: PublicKey = public.parse().map_err(|e| format!("not a key: {e}"))?;
    let e = core.engine.clone();
    let (p, c) = (pk.clone(), confirm.trim().to_string());
    blocking("deleting the key", move || {
        e.keystore().delete(&p, &c).map_err(refused)
    })
    .await?;
    log_key_event(state, KeyChange::Deleted, &pk, "deleted in the app".into()).await?;
    state.hub.send(UiEvent::StatusChanged);
    Ok(())
}

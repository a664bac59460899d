//! `parley-custody`: Parley Custody, the desktop app. It runs the custody
//! engine in-process (the same keychain, socket, queue and audit log as the
//! headless `parley-custodyd`) with the GUI as the approver: a tray icon
//! with the number of pending requests, a notification per request, a
//! review window per request, the grant form, the audit view and settings.
//!
//! Threat model (ARCHITECTURE.md): the agent and the service are untrusted;
//! the GUI shows what the engine re-verified and decides nothing itself.
//! The web view gets no key material, renders untrusted text as text only,
//! loads nothing remote (strict CSP), and each window may call only the
//! commands its capability lists.
#![forbid(unsafe_code)]
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

mod autostart;
mod commands;
mod notify;
mod settings;
mod state;
mod tray;
mod views;
mod windows;

use clap::Parser;
use std::path::PathBuf;
use tauri::{Manager, RunEvent};

/// Parley Custody: approve your agents' purchases and grants, in a window.
#[derive(Debug, Clone, Parser)]
#[command(name = "parley-custody", version)]
pub struct Args {
    /// Socket path (default: $PARLEY_CUSTODY_SOCKET, else the settings, else
    /// $XDG_RUNTIME_DIR/parley-custody/custody.sock).
    #[arg(long)]
    pub socket: Option<PathBuf>,
    /// Data directory: audit log and settings (default: $PARLEY_CUSTODY_DATA,
    /// else $XDG_DATA_HOME/parley-custody).
    #[arg(long = "data-dir")]
    pub data_dir: Option<PathBuf>,
    /// The group whose members (agents running as other users) may connect
    /// (overrides the settings).
    #[arg(long = "agents-group", value_name = "GROUP")]
    pub agents_group: Option<String>,
    /// Another uid allowed to connect (repeatable; added to the settings' users).
    #[arg(long = "allow-uid", value_name = "UID")]
    pub allow_uid: Vec<u32>,
    /// Keychain namespace (default: $PARLEY_CUSTODY_NAMESPACE; separates profiles and test runs).
    #[arg(long)]
    pub namespace: Option<String>,
    /// Start in the tray only, without opening the home window.
    #[arg(long)]
    pub hidden: bool,
}

fn main() {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,tao=warn,wry=warn".into()),
        )
        // Every line display-safe and bounded (custody's log writer).
        .with_ansi(false)
        .with_writer(parley_custody::logging::Sink::stderr())
        .init();
    let setup_args = args.clone();
    let app = tauri::Builder::default()
        // First: a second start focuses this instance instead (one custody per user).
        .plugin(tauri_plugin_single_instance::init(|app, _argv, _cwd| {
            if let Err(e) = windows::open_main(app) {
                tracing::warn!("{e}");
            }
        }))
        .invoke_handler(tauri::generate_handler![
            commands::status,
            commands::pending_list,
            commands::review_get,
            commands::review_decide,
            commands::review_deny_and_pause,
            commands::review_alike,
            commands::review_deny_alike,
            commands::agent_pause,
            commands::agent_resume,
            commands::agent_pauses,
            commands::open_window,
            commands::window_close,
            commands::grant_context,
            commands::grant_preview,
            commands::grant_issue,
            commands::audit_query,
            commands::audit_export,
            commands::keys_list,
            commands::key_create,
            commands::key_import,
            commands::key_shred,
            commands::key_delete,
            commands::settings_get,
            commands::settings_save,
            commands::agent_label_set,
            commands::app_restart,
            commands::autostart_set,
            commands::agent_user_plan,
            commands::agent_user_apply,
        ])
        .setup(move |app| {
            let handle = app.handle().clone();
            let state = state::start(&handle, &setup_args);
            if let Ok(core) = &state.core {
                tracing::info!(
                    socket = %core.socket.path,
                    listening = core.socket.listening,
                    data = %core.data_dir.display(),
                    "Parley Custody started"
                );
            }
            app.manage(state);
            match tray::build(&handle) {
                Ok(t) => {
                    if let Ok(mut slot) = app.state::<state::AppState>().tray.lock() {
                        *slot = Some(t);
                    }
                    tray::refresh(&handle);
                }
                Err(e) => tracing::warn!("no tray icon: {e}"),
            }
            if !setup_args.hidden {
                windows::open_main(&handle)?;
            }
            Ok(())
        })
        .build(tauri::generate_context!())
        .unwrap_or_else(|e| {
            eprintln!("parley-custody: cannot start: {e}");
            std::process::exit(2);
        });
    app.run(|app, event| match event {
        // Closing the last window keeps custody running in the tray; only
        // Quit (or a restart) ends it.
        RunEvent::ExitRequested {
            code: None, api, ..
        } => api.prevent_exit(),
        RunEvent::Exit => {
            if let Some(state) = app.try_state::<state::AppState>() {
                state.stop_blocking();
            }
        }
        _ => {}
    });
}

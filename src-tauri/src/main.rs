//! `parley-custody`: Parley Custody's windows. A UI process that holds no
//! key and links no key store, audit log or signer: the custody service
//! (`parley-custodyd --approver desktop`) runs the engine, the tray and the
//! notifications, and this process asks it, over the private UI channel
//! (docs/ui-channel.md), for everything a window shows or does. Started by
//! the service, it inherits that channel and exits with its last window or
//! when the service goes away; started otherwise (the menu, autostart), it
//! asks the service at its door to show the window, starting the service
//! when none runs, and exits.
//!
//! Threat model (ARCHITECTURE.md): the agent and the service it pays are
//! untrusted; a bug in the web view or the web UI lands in a process with
//! nothing to steal, whose every call the service checks again against the
//! calling window's label (which this process takes from Tauri, never from a
//! page). The web view renders untrusted text as text only and loads nothing
//! remote (strict CSP).
#![forbid(unsafe_code)]
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

mod bridge;
mod channel;
mod door;
mod protocol;
mod service;
mod webkit;
mod windows;

use clap::Parser;
use std::path::PathBuf;
use tauri::RunEvent;
use windows::OpenTarget;

/// Parley Custody: approve your agents' purchases and grants, in a window.
#[derive(Debug, Clone, Parser)]
#[command(name = "parley-custody", version)]
pub struct Args {
    /// The custody service's UI socket (default: $PARLEY_CUSTODY_UI_SOCKET,
    /// else $XDG_RUNTIME_DIR/parley-custody-ui/ui.sock).
    #[arg(long = "ui-socket", value_name = "PATH")]
    pub ui_socket: Option<PathBuf>,
    /// The window to open: main:<view>[#fragment] (view home, grant, audit or
    /// settings) or review-<id>.
    #[arg(long, value_name = "TARGET", default_value = "main:home")]
    pub open: OpenTarget,
    /// Make sure the custody service runs, then exit without a window (autostart).
    #[arg(long)]
    pub hidden: bool,
    /// For a service this starts: its custody socket.
    #[arg(long)]
    pub socket: Option<PathBuf>,
    /// For a service this starts: its data directory.
    #[arg(long = "data-dir")]
    pub data_dir: Option<PathBuf>,
    /// For a service this starts: the group whose members' agents may connect.
    #[arg(long = "agents-group", value_name = "GROUP")]
    pub agents_group: Option<String>,
    /// For a service this starts: another uid allowed to connect (repeatable).
    #[arg(long = "allow-uid", value_name = "UID")]
    pub allow_uid: Vec<u32>,
    /// For a service this starts: its keychain namespace.
    #[arg(long)]
    pub namespace: Option<String>,
}

impl Args {
    fn passthrough(&self) -> service::Passthrough {
        service::Passthrough {
            socket: self.socket.clone(),
            data_dir: self.data_dir.clone(),
            agents_group: self.agents_group.clone(),
            allow_uid: self.allow_uid.clone(),
            namespace: self.namespace.clone(),
        }
    }
}

fn main() {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,tao=warn,wry=warn".into()),
        )
        .with_ansi(false)
        .with_writer(std::io::stderr)
        .init();
    webkit::before_windows();
    std::process::exit(run(args));
}

/// With the channel custody gave this process (it started it), runs the
/// windows; without, asks custody at its door to show the window (starting
/// custody if needed) and exits. Returns the exit code.
fn run(args: Args) -> i32 {
    let stream = match channel::take_inherited() {
        Ok(Some(s)) => s,
        Ok(None) => {
            return door::knock(
                args.ui_socket.as_deref(),
                &args.passthrough(),
                &args.open,
                args.hidden,
            )
        }
        Err(e) => {
            eprintln!("parley-custody: {e}");
            return 1;
        }
    };
    let (channel, reader, service_version) =
        match channel::Channel::handshake(stream, env!("CARGO_PKG_VERSION")) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("parley-custody: {e}");
                return 1;
            }
        };
    tracing::info!(service = %service_version, "connected to custody");
    // No page of ours is shown by a web engine that could reach the key:
    // without its sandbox, the windows say why and do not open.
    if let Err(e) = webkit::probe() {
        webkit::refuse(&e);
        return 3;
    }
    webkit::own_cache_dir();
    webkit::compositing_for_the_display();
    let first = args.open.clone();
    let app = tauri::Builder::default()
        // First: a second start opens its window here instead (one UI per user).
        .plugin(tauri_plugin_single_instance::init(|app, argv, _cwd| {
            let target = Args::try_parse_from(&argv)
                .map(|a| a.open)
                .unwrap_or(OpenTarget::Home);
            if let Err(e) = bridge::open(app, &target) {
                tracing::warn!("{e}");
            }
        }))
        .manage(channel)
        .invoke_handler(tauri::generate_handler![bridge::call, bridge::window_close])
        .on_window_event(bridge::on_window_event)
        .on_page_load(bridge::on_page_load)
        .setup(move |app| {
            // The plugins (single instance) have their session-bus connection;
            // the web processes, started from here on, get none.
            webkit::without_session_bus();
            // GTK has its display now, the web engine not yet its first view.
            webkit::for_the_display();
            let handle = app.handle().clone();
            bridge::start_reader(handle.clone(), reader)?;
            bridge::open(&handle, &first)?;
            Ok(())
        })
        .build(tauri::generate_context!());
    let app = match app {
        Ok(a) => a,
        Err(e) => {
            eprintln!("parley-custody: cannot start: {e}");
            return 2;
        }
    };
    // Closing the last window ends this process (the tray and the engine
    // live in the service); the service's `quit`, or its going away, too.
    let code = app.run_return(|_, event| {
        if let RunEvent::ExitRequested { code, .. } = event {
            tracing::debug!(?code, "the windows are closing");
        }
    });
    code.max(bridge::exit_code())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args() {
        let a = Args::try_parse_from(["parley-custody"]).unwrap();
        assert_eq!(a.open, OpenTarget::Home);
        assert!(!a.hidden);
        assert_eq!(a.passthrough(), service::Passthrough::default());
        let a = Args::try_parse_from([
            "parley-custody",
            "--open",
            "review-q7",
            "--ui-socket",
            "/tmp/ui.sock",
            "--allow-uid",
            "1001",
            "--allow-uid",
            "1002",
            "--namespace",
            "t",
            "--hidden",
        ])
        .unwrap();
        assert_eq!(a.open, OpenTarget::Review("q7".into()));
        assert_eq!(a.ui_socket, Some(PathBuf::from("/tmp/ui.sock")));
        assert!(a.hidden);
        assert_eq!(a.passthrough().allow_uid, vec![1001, 1002]);
        assert_eq!(a.passthrough().namespace.as_deref(), Some("t"));
        assert!(Args::try_parse_from(["parley-custody", "--open", "review-x"]).is_err());
        assert!(Args::try_parse_from(["parley-custody", "--open", "main:nope"]).is_err());
    }
}

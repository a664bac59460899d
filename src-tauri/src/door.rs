//! A start that custody did not make (the menu entry, the autostart entry,
//! a second `parley-custodyd`): this process knocks at the channel's door,
//! the socket path, starting the service first when nothing answers there,
//! and asks it to show a main window view. The service shows it in its own
//! UI, the one it started with an inherited channel (starting one if none
//! runs), and this process exits: a connection on the path never gets
//! windows, reviews or decisions (docs/ui-channel.md).

use crate::channel::Channel;
use crate::protocol::CallError;
use crate::service::{self, Passthrough};
use crate::windows::{GrantFor, OpenTarget};
use serde_json::json;
use std::path::Path;

/// What the door accepts for `target`: the main window's view, without a
/// request or an agent (`open_window`'s `kind`). A review opens from the
/// tray, its notification or the home window, so `review-<id>` asks for home.
pub fn kind(target: &OpenTarget) -> &'static str {
    match target {
        OpenTarget::Home | OpenTarget::Review(_) => "main",
        OpenTarget::Grant(GrantFor::New | GrantFor::Request(_) | GrantFor::Agent(_)) => "grant",
        OpenTarget::Audit => "audit",
        OpenTarget::Settings => "settings",
    }
}

/// Makes sure the service runs; unless `hidden`, asks it to show `target`.
/// Returns the exit code.
pub fn knock(socket: Option<&Path>, pass: &Passthrough, target: &OpenTarget, hidden: bool) -> i32 {
    let connected = service::socket_path(socket, |k| std::env::var_os(k))
        .and_then(|path| service::connect_or_start(&path, pass));
    let stream = match connected {
        Ok(s) => s,
        Err(e) => {
            eprintln!("parley-custody: {e}");
            return 1;
        }
    };
    let (channel, reader, _) = match Channel::handshake(stream, env!("CARGO_PKG_VERSION")) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("parley-custody: {e}");
            return 1;
        }
    };
    if hidden {
        // Autostart: the service runs (it has its tray); no window now.
        return 0;
    }
    let reading = std::thread::spawn(move || reader.run(|_| {}));
    let asked = tauri::async_runtime::block_on(channel.call(
        "main",
        "open_window",
        &json!({ "kind": kind(target) }),
    ));
    drop(reading);
    match asked {
        Ok(_) => 0,
        Err(CallError { message, .. }) => {
            eprintln!("parley-custody: custody did not open the window: {message}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_door_asks_only_for_a_main_window_view() {
        assert_eq!(kind(&OpenTarget::Home), "main");
        assert_eq!(kind(&OpenTarget::Review("q7".into())), "main");
        assert_eq!(
            kind(&OpenTarget::Grant(GrantFor::Request("q7".into()))),
            "grant"
        );
        assert_eq!(kind(&OpenTarget::Settings), "settings");
        assert_eq!(kind(&OpenTarget::Audit), "audit");
    }
}

//! The tray icon: the number of pending requests (drawn on the icon and as
//! its title), and a menu listing them, a "Pause <agent>" line per agent
//! asking now (its requests are then refused unseen until resumed in the
//! audit view), then Issue a grant…, Audit log, Settings, Quit. With no tray host (a bare X server, some desktops) the
//! icon is built anyway and simply not shown; the app works from its windows.

use crate::state::AppState;
use crate::windows;
use parley_custody::approver::PendingView;
use std::sync::Mutex;
use tauri::image::Image;
use tauri::menu::{IsMenuItem, Menu, MenuItem, PredefinedMenuItem};
use tauri::tray::{TrayIcon, TrayIconBuilder};
use tauri::{AppHandle, Emitter, Manager, Wry};

/// Pending requests listed in the menu; the rest are "… and N more".
const MENU_MAX: usize = 8;

/// What the tray needs to update itself.
pub struct Tray {
    icon: TrayIcon,
    menu: Menu<Wry>,
    header: MenuItem<Wry>,
    items: Mutex<Vec<MenuItem<Wry>>>,
    base: Option<(Vec<u8>, u32, u32)>,
}

/// Builds the tray icon and its menu.
pub fn build(app: &AppHandle) -> tauri::Result<Tray> {
    let header = MenuItem::with_id(app, "header", "No pending requests", false, None::<&str>)?;
    let open = MenuItem::with_id(app, "open", "Open Parley Custody", true, None::<&str>)?;
    let grant = MenuItem::with_id(app, "grant", "Issue a grant…", true, None::<&str>)?;
    let audit = MenuItem::with_id(app, "audit", "Audit log", true, None::<&str>)?;
    let settings = MenuItem::with_id(app, "settings", "Settings", true, None::<&str>)?;
    let quit = MenuItem::with_id(app, "quit", "Quit Parley Custody", true, None::<&str>)?;
    let sep1 = PredefinedMenuItem::separator(app)?;
    let sep2 = PredefinedMenuItem::separator(app)?;
    let menu = Menu::with_items(
        app,
        &[
            &header as &dyn IsMenuItem<Wry>,
            &sep1,
            &open,
            &grant,
            &audit,
            &settings,
            &sep2,
            &quit,
        ],
    )?;
    let base = app
        .default_window_icon()
        .map(|i| (i.rgba().to_vec(), i.width(), i.height()));
    let mut builder = TrayIconBuilder::with_id("parley-custody")
        .menu(&menu)
        .tooltip("Parley Custody")
        .show_menu_on_left_click(true)
        .on_menu_event(|app, event| on_menu(app, event.id().as_ref()));
    if let Some((rgba, w, h)) = &base {
        let (rgba, w, h) = badge(rgba, *w, *h, 0);
        builder = builder.icon(Image::new_owned(rgba, w, h));
    }
    let icon = builder.build(app)?;
    Ok(Tray {
        icon,
        menu,
        header,
        items: Mutex::new(Vec::new()),
        base,
    })
}

fn on_menu(app: &AppHandle, id: &str) {
    let r = match id {
        "open" => windows::open_main(app),
        "grant" => windows::open_grant(app, None, None),
        "audit" => windows::open_audit(app),
        "settings" => windows::open_settings(app),
        "quit" => {
            app.exit(0);
            Ok(())
        }
        other => match (other.strip_prefix("review:"), other.strip_prefix("pause:")) {
            (Some(rid), _) => windows::open_review(app, rid),
            (_, Some(agent)) => {
                pause(app, agent);
                Ok(())
            }
            _ => Ok(()),
        },
    };
    if let Err(e) = r {
        tracing::warn!("tray menu: {e}");
    }
}

/// Pauses `agent` from the tray (until resumed in the audit view); its
/// pending requests are denied, told why. Off the menu thread: the audit
/// log is written first.
fn pause(app: &AppHandle, agent: &str) {
    let Some(state) = app.try_state::<AppState>() else {
        return;
    };
    let Ok(core) = state.core() else {
        return;
    };
    let (app, engine, agent) = (app.clone(), core.engine.clone(), agent.to_string());
    tauri::async_runtime::spawn_blocking(move || {
        match engine.pause_agent(&agent, None, "paused by the human from the tray") {
            Ok(_) => {
                let _ = app.emit("pending-changed", ());
                let _ = app.emit("pauses-changed", ());
                refresh(&app);
            }
            Err(e) => tracing::warn!("tray menu: the agent was not paused: {e}"),
        }
    });
}

/// Who asks, in a menu line: the human's label, else the key's short form.
fn who(p: &PendingView) -> String {
    let a = &p.review.agent;
    a.label.clone().unwrap_or_else(|| a.short.clone())
}

/// One menu line for a pending request: who asks, for what.
pub fn describe(p: &PendingView) -> String {
    let r = &p.review;
    let who = who(p);
    let what = match r.kind {
        parley_custody::review::ReviewKind::Consent => {
            format!("{} at {}", r.cost, r.service)
        }
        parley_custody::review::ReviewKind::Grant => format!("a grant at {}", r.service),
    };
    let line = format!("{who}: {what}");
    if line.chars().count() > 80 {
        format!("{}…", line.chars().take(79).collect::<String>())
    } else {
        line
    }
}

/// The "Pause <agent>" lines: one per agent asking now (in the order they
/// first ask, at most [`MENU_MAX`]), each through the display rule.
fn pause_lines<'a>(asking: impl Iterator<Item = (&'a str, String)>) -> Vec<(String, String)> {
    let mut seen: Vec<&str> = Vec::new();
    let mut lines = Vec::new();
    for (key, who) in asking {
        if seen.contains(&key) || seen.len() == MENU_MAX {
            continue;
        }
        seen.push(key);
        lines.push((
            format!("pause:{key}"),
            parley_custody::display::menu_label(&format!(
                "Pause {who} (refuse its requests unseen)"
            )),
        ));
    }
    lines
}

impl Tray {
    /// Shows the current pending requests.
    pub fn refresh(&self, app: &AppHandle, pending: &[PendingView]) {
        let n = pending.len();
        let _ = self.header.set_text(match n {
            0 => "No pending requests".to_string(),
            1 => "1 pending request".to_string(),
            n => format!("{n} pending requests"),
        });
        let _ = self
            .icon
            .set_title(if n == 0 { None } else { Some(n.to_string()) });
        let _ = self.icon.set_tooltip(Some(match n {
            0 => "Parley Custody".to_string(),
            n => format!("Parley Custody: {n} pending"),
        }));
        if let Some((rgba, w, h)) = &self.base {
            let (rgba, w, h) = badge(rgba, *w, *h, n);
            let _ = self.icon.set_icon(Some(Image::new_owned(rgba, w, h)));
        }
        let Ok(mut items) = self.items.lock() else {
            return;
        };
        for old in items.drain(..) {
            let _ = self.menu.remove(&old);
        }
        let mut lines: Vec<(String, String)> = pending
            .iter()
            .take(MENU_MAX)
            .map(|p| {
                (
                    format!("review:{}", p.id),
                    parley_custody::display::menu_label(&format!("Review — {}", describe(p))),
                )
            })
            .collect();
        if n > MENU_MAX {
            lines.push(("open".into(), format!("… and {} more", n - MENU_MAX)));
        }
        lines.extend(pause_lines(
            pending
                .iter()
                .map(|p| (p.review.agent.key.as_str(), who(p))),
        ));
        for (i, (id, text)) in lines.into_iter().enumerate() {
            if let Ok(item) = MenuItem::with_id(app, id, text, true, None::<&str>) {
                if self.menu.insert(&item, 1 + i).is_ok() {
                    items.push(item);
                }
            }
        }
    }
}

/// Updates the tray (if there is one) from the engine's queue.
pub fn refresh(app: &AppHandle) {
    let Some(state) = app.try_state::<AppState>() else {
        return;
    };
    let pending = state.pending_labelled();
    if let Ok(t) = state.tray.lock() {
        if let Some(tray) = t.as_ref() {
            tray.refresh(app, &pending);
        }
    };
}

/// 3×5 digit glyphs, one row per byte (bits 2..0 = left to right).
const DIGITS: [[u8; 5]; 10] = [
    [7, 5, 5, 5, 7],
    [2, 6, 2, 2, 7],
    [7, 1, 7, 4, 7],
    [7, 1, 7, 1, 7],
    [5, 5, 7, 1, 1],
    [7, 4, 7, 1, 7],
    [7, 4, 7, 5, 7],
    [7, 1, 2, 2, 2],
    [7, 5, 7, 5, 7],
    [7, 5, 7, 1, 7],
];
const PLUS: [u8; 5] = [0, 2, 7, 2, 0];

/// The icon with a red badge carrying `count` (nothing when 0; "9+" above 9).
pub fn badge(rgba: &[u8], w: u32, h: u32, count: usize) -> (Vec<u8>, u32, u32) {
    let mut out = rgba.to_vec();
    if count == 0 || w < 8 || h < 8 || out.len() != (w * h * 4) as usize {
        return (out, w, h);
    }
    let size = w.min(h) as i64;
    let r = size * 30 / 100;
    let (cx, cy) = (w as i64 - r - 1, r + 1);
    let mut put = |x: i64, y: i64, c: [u8; 4]| {
        if x >= 0 && y >= 0 && x < w as i64 && y < h as i64 {
            let i = ((y as u32 * w + x as u32) * 4) as usize;
            out[i..i + 4].copy_from_slice(&c);
        }
    };
    for y in cy - r - 1..=cy + r + 1 {
        for x in cx - r - 1..=cx + r + 1 {
            let d = (x - cx) * (x - cx) + (y - cy) * (y - cy);
            if d <= r * r {
                put(x, y, [0xd3, 0x2f, 0x2f, 0xff]);
            } else if d <= (r + 1) * (r + 1) {
                put(x, y, [0xff, 0xff, 0xff, 0xff]);
            }
        }
    }
    let glyphs: Vec<[u8; 5]> = if count > 9 {
        vec![DIGITS[9], PLUS]
    } else {
        vec![DIGITS[count]]
    };
    let cols = glyphs.len() as i64 * 4 - 1;
    let scale = ((2 * r * 7 / 10) / 5)
        .max(1)
        .min((2 * r * 8 / 10) / cols.max(1))
        .max(1);
    let (gw, gh) = (cols * scale, 5 * scale);
    let (x0, y0) = (cx - gw / 2, cy - gh / 2);
    for (g, glyph) in glyphs.iter().enumerate() {
        for (row, bits) in glyph.iter().enumerate() {
            for col in 0..3 {
                if bits & (4 >> col) != 0 {
                    for dy in 0..scale {
                        for dx in 0..scale {
                            put(
                                x0 + (g as i64 * 4 + col) * scale + dx,
                                y0 + row as i64 * scale + dy,
                                [0xff, 0xff, 0xff, 0xff],
                            );
                        }
                    }
                }
            }
        }
    }
    (out, w, h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_pause_line_per_agent_asking_each_display_safe() {
        let asking = [
            ("ed25519:AAA", "shop\u{202e}bot".to_string()),
            ("ed25519:BBB", "ed25519:BBB…".to_string()),
            ("ed25519:AAA", "shop\u{202e}bot".to_string()),
        ];
        let lines = pause_lines(asking.iter().map(|(k, w)| (*k, w.clone())));
        let ids: Vec<&str> = lines.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(ids, ["pause:ed25519:AAA", "pause:ed25519:BBB"]);
        assert!(!lines[0].1.contains('\u{202e}'), "{}", lines[0].1);
        assert!(lines[0].1.starts_with("Pause shop"), "{}", lines[0].1);
        assert!(
            lines[0].1.contains("202e"),
            "the hidden character made visible"
        );
        let many: Vec<(String, String)> = (0..20)
            .map(|i| (format!("ed25519:K{i}"), format!("agent {i}")))
            .collect();
        let lines = pause_lines(many.iter().map(|(k, w)| (k.as_str(), w.clone())));
        assert_eq!(lines.len(), MENU_MAX);
    }

    #[test]
    fn badge_only_when_pending() {
        let base = vec![0u8; 32 * 32 * 4];
        assert_eq!(badge(&base, 32, 32, 0).0, base);
        let one = badge(&base, 32, 32, 1).0;
        assert_ne!(one, base);
        // The badge is in the top-right corner; the bottom-left is untouched.
        let px = |img: &[u8], x: u32, y: u32| img[((y * 32 + x) * 4) as usize..][..4].to_vec();
        assert_eq!(px(&one, 0, 31), vec![0, 0, 0, 0]);
        assert_eq!(px(&one, 22, 2)[3], 0xff);
        assert_ne!(badge(&base, 32, 32, 2).0, one, "different counts differ");
        assert_eq!(badge(&base, 32, 32, 12).0, badge(&base, 32, 32, 99).0, "9+");
        // A malformed buffer is returned unchanged rather than indexed out of bounds.
        assert_eq!(badge(&[1, 2, 3], 32, 32, 3).0, vec![1, 2, 3]);
    }
}

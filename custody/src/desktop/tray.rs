//! The tray icon, a StatusNotifierItem on the session bus (`ksni`, no GTK):
//! the number of pending requests (a badge on the icon, the title and the
//! tooltip), and a menu listing them, a "Pause <agent>" submenu per agent
//! asking now (for 15 minutes, for 1 hour, or until resumed in the audit
//! view: its requests are refused unseen meanwhile), then Open, Issue a
//! grant…, Audit log, Settings, Quit. Agents are named by their one name
//! ([`crate::fingerprint::agent_name`]), never by their key. While the
//! session is locked (or going to sleep) the menu and tooltip say that
//! nothing is approved meanwhile ([`crate::session`]).
//!
//! With no tray host (a bare X server, GNOME without the AppIndicator
//! extension) the item still exists on the bus, [`Tray::available`] says
//! there is no host, and requests open their review window themselves.

use super::badge::badge;
use super::events::{OpenTarget, UiEvent, View};
use super::service::Desktop;
use crate::approver::PendingView;
use crate::display;
use crate::review::ReviewKind;
use crate::session::Hold;
use ksni::menu::{StandardItem, SubMenu};
use ksni::{MenuItem, TrayMethods};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

/// Pending requests listed in the menu; the rest are "… and N more".
const MENU_MAX: usize = 8;

/// The pauses the tray offers per agent: (menu text, seconds; `None`: until
/// the human resumes it in the audit view).
pub const PAUSE_CHOICES: [(&str, Option<i64>); 3] = [
    ("For 15 minutes", Some(15 * 60)),
    ("For 1 hour", Some(3600)),
    ("Until I resume it", None),
];

const ICON_32: &[u8] = include_bytes!("../../assets/tray-32.png");
const ICON_128: &[u8] = include_bytes!("../../assets/tray-128.png");

/// A decoded icon, RGBA.
#[derive(Clone)]
struct Rgba {
    w: u32,
    h: u32,
    px: Vec<u8>,
}

fn decode(png_bytes: &[u8]) -> Option<Rgba> {
    let mut dec = png::Decoder::new(std::io::Cursor::new(png_bytes));
    dec.set_transformations(png::Transformations::EXPAND | png::Transformations::ALPHA);
    let mut reader = dec.read_info().ok()?;
    let mut buf = vec![0; reader.output_buffer_size()?];
    let info = reader.next_frame(&mut buf).ok()?;
    if info.color_type != png::ColorType::Rgba || info.bit_depth != png::BitDepth::Eight {
        return None;
    }
    buf.truncate(info.buffer_size());
    Some(Rgba {
        w: info.width,
        h: info.height,
        px: buf,
    })
}

/// RGBA to the StatusNotifierItem's ARGB32 in network byte order.
fn argb(img: &Rgba, count: usize) -> ksni::Icon {
    let (px, w, h) = badge(&img.px, img.w, img.h, count);
    let data = px
        .chunks_exact(4)
        .flat_map(|p| [p[3], p[0], p[1], p[2]])
        .collect();
    ksni::Icon {
        width: w as i32,
        height: h as i32,
        data,
    }
}

/// A menu label: the display rule, and ksni's mnemonic underscores escaped
/// (an agent's `a_b` must not become "ab" with an access key).
fn menu_text(s: &str) -> String {
    display::menu_label(s).replace('_', "__")
}

/// Who asks, in a menu line: the agent's one name (the human's label,
/// else its four words; [`crate::fingerprint::agent_name`]).
fn who(p: &PendingView) -> String {
    p.review.agent.name.clone()
}

/// One menu line for a pending request: who asks, for what.
pub fn describe(p: &PendingView) -> String {
    let r = &p.review;
    let what = match r.kind {
        ReviewKind::Consent => format!("{} at {}", r.cost, r.service),
        ReviewKind::Grant => format!("a grant at {}", r.service),
    };
    let line = format!("{}: {what}", who(p));
    if line.chars().count() > 80 {
        format!("{}…", line.chars().take(79).collect::<String>())
    } else {
        line
    }
}

/// What the menu shows for the queue: `(action, label)` per line.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Line {
    Review(String),
    More,
    Pause(String),
}

fn lines(pending: &[PendingView]) -> Vec<(Line, String)> {
    let mut out: Vec<(Line, String)> = pending
        .iter()
        .take(MENU_MAX)
        .map(|p| {
            (
                Line::Review(p.id.clone()),
                menu_text(&format!("Review — {}", describe(p))),
            )
        })
        .collect();
    if pending.len() > MENU_MAX {
        out.push((
            Line::More,
            format!("… and {} more", pending.len() - MENU_MAX),
        ));
    }
    let mut seen: Vec<&str> = Vec::new();
    for p in pending {
        let key = p.review.agent.key.as_str();
        if seen.contains(&key) || seen.len() == MENU_MAX {
            continue;
        }
        seen.push(key);
        out.push((
            Line::Pause(key.to_string()),
            menu_text(&format!("Pause {}", who(p))),
        ));
    }
    out
}

/// The item ksni serves.
struct Item {
    desktop: Weak<Desktop>,
    rt: tokio::runtime::Handle,
    icons: Vec<Rgba>,
    count: usize,
    lines: Vec<(Line, String)>,
    online: Arc<AtomicBool>,
    /// Custody is frozen ("Stop all agents"): title, tooltip and menu say so.
    frozen: bool,
    /// What custody last told the human with no notification service
    /// ("Approved …", "Still waiting: …"), display-safe, for a minute.
    told: Option<String>,
    /// The session is locked or going to sleep: nothing is approved.
    held: Option<Hold>,
}

/// The tray's line for a locked (or sleeping) session.
fn held_line(h: Hold) -> &'static str {
    match h {
        Hold::Locked => "Screen locked: approving and issuing are off until you unlock it",
        Hold::Asleep => "Going to sleep: approving and issuing are off until it wakes up",
    }
}

impl Item {
    fn open(&self, target: OpenTarget) {
        if let Some(d) = self.desktop.upgrade() {
            d.opener.open(target);
        }
    }

    /// "Stop all agents": freezes custody (asks nothing); the pending
    /// requests are denied, told why. Off the D-Bus task.
    fn freeze(&self) {
        let Some(d) = self.desktop.upgrade() else {
            return;
        };
        self.rt.spawn_blocking(move || {
            let Ok(core) = d.core() else {
                return;
            };
            match core.engine.freeze("all agents stopped from the tray") {
                Ok(_) => {
                    d.hub.send(UiEvent::PendingChanged);
                    d.hub.send(UiEvent::StatusChanged);
                    if let Some(t) = d.tray.get() {
                        t.show_frozen(true);
                    }
                    d.refresh_tray();
                }
                Err(e) => tracing::warn!("tray menu: custody was not frozen: {e}"),
            }
        });
    }

    fn main(&self, view: View) {
        self.open(OpenTarget::Main {
            view,
            fragment: None,
        });
    }

    /// Pauses `agent` for `secs` (`None`: until resumed in the audit
    /// view); its pending requests are denied, told why. Off the D-Bus
    /// task: the audit log is written first.
    fn pause(&self, agent: String, secs: Option<i64>) {
        let Some(d) = self.desktop.upgrade() else {
            return;
        };
        self.rt.spawn_blocking(move || {
            let Ok(core) = d.core() else {
                return;
            };
            match core
                .engine
                .pause_agent(&agent, secs, "paused by the human from the tray")
            {
                Ok(_) => {
                    d.hub.send(UiEvent::PendingChanged);
                    d.hub.send(UiEvent::PausesChanged);
                    d.refresh_tray();
                }
                Err(e) => tracing::warn!("tray menu: the agent was not paused: {e}"),
            }
        });
    }
}

fn item(
    label: String,
    enabled: bool,
    act: impl Fn(&mut Item) + Send + Sync + 'static,
) -> MenuItem<Item> {
    StandardItem {
        label,
        enabled,
        activate: Box::new(act),
        ..Default::default()
    }
    .into()
}

impl ksni::Tray for Item {
    fn id(&self) -> String {
        "parley-custody".into()
    }

    fn title(&self) -> String {
        if self.frozen {
            return "Parley Custody (frozen: all agents stopped)".into();
        }
        match self.count {
            0 => "Parley Custody".into(),
            n => format!("Parley Custody ({n})"),
        }
    }

    fn icon_name(&self) -> String {
        "parley-custody".into()
    }

    fn icon_pixmap(&self) -> Vec<ksni::Icon> {
        self.icons.iter().map(|i| argb(i, self.count)).collect()
    }

    fn status(&self) -> ksni::Status {
        if self.count == 0 && !self.frozen {
            ksni::Status::Active
        } else {
            ksni::Status::NeedsAttention
        }
    }

    fn tool_tip(&self) -> ksni::ToolTip {
        ksni::ToolTip {
            title: "Parley Custody".into(),
            description: {
                let state = match (self.frozen, self.count) {
                    (true, _) => "Frozen: all agents stopped, every request refused unseen".into(),
                    (false, 0) => "No pending requests".into(),
                    (false, 1) => "1 pending request".into(),
                    (false, n) => format!("{n} pending requests"),
                };
                let state = match self.held {
                    Some(h) => format!("{}\n{state}", held_line(h)),
                    None => state,
                };
                match &self.told {
                    Some(t) => format!("{}\n{state}", display::menu_label(t)),
                    None => state,
                }
            },
            ..Default::default()
        }
    }

    fn activate(&mut self, _x: i32, _y: i32) {
        self.main(View::Home);
    }

    fn menu(&self) -> Vec<MenuItem<Self>> {
        let header = match self.count {
            0 => "No pending requests".to_string(),
            1 => "1 pending request".to_string(),
            n => format!("{n} pending requests"),
        };
        let mut menu = vec![item(header, false, |_| {})];
        if let Some(h) = self.held {
            menu.push(item(held_line(h).into(), false, |_| {}));
        }
        if let Some(t) = &self.told {
            menu.push(item(menu_text(t), false, |_| {}));
        }
        menu.push(MenuItem::Separator);
        if self.frozen {
            menu.push(item("FROZEN: all agents stopped".into(), false, |_| {}));
            menu.push(item(
                "Unfreeze… (asks for your password)".into(),
                true,
                |m: &mut Item| m.main(View::Home),
            ));
        } else {
            menu.push(item(
                "Stop all agents (refuse every request)".into(),
                true,
                |m: &mut Item| m.freeze(),
            ));
        }
        menu.push(MenuItem::Separator);
        for (line, text) in &self.lines {
            let line = line.clone();
            if let Line::Pause(agent) = line {
                let submenu = PAUSE_CHOICES
                    .iter()
                    .map(|&(words, secs)| {
                        let agent = agent.clone();
                        item(words.into(), true, move |m: &mut Item| {
                            m.pause(agent.clone(), secs)
                        })
                    })
                    .collect();
                menu.push(
                    SubMenu {
                        label: text.clone(),
                        submenu,
                        ..Default::default()
                    }
                    .into(),
                );
                continue;
            }
            menu.push(item(text.clone(), true, move |m: &mut Item| match &line {
                Line::Review(id) => m.open(OpenTarget::Review(id.clone())),
                Line::More => m.main(View::Home),
                Line::Pause(_) => {}
            }));
        }
        if !self.lines.is_empty() {
            menu.push(MenuItem::Separator);
        }
        menu.push(item("Open Parley Custody".into(), true, |m: &mut Item| {
            m.main(View::Home)
        }));
        menu.push(item("Issue a grant…".into(), true, |m: &mut Item| {
            m.main(View::Grant)
        }));
        menu.push(item("Audit log".into(), true, |m: &mut Item| {
            m.main(View::Audit)
        }));
        menu.push(item("Settings".into(), true, |m: &mut Item| {
            m.main(View::Settings)
        }));
        menu.push(MenuItem::Separator);
        menu.push(item("Quit Parley Custody".into(), true, |m: &mut Item| {
            if let Some(d) = m.desktop.upgrade() {
                d.request_stop(false);
            }
        }));
        menu
    }

    fn watcher_online(&self) {
        self.online.store(true, Ordering::SeqCst);
        tracing::info!("a tray host appeared: the tray icon is shown");
    }

    fn watcher_offline(&self, reason: ksni::OfflineReason) -> bool {
        if self.online.swap(false, Ordering::SeqCst) {
            tracing::warn!("the tray host went away ({reason:?})");
        }
        // Keep the item: a host that comes back shows it again.
        true
    }
}

/// The running tray icon.
pub struct Tray {
    handle: ksni::Handle<Item>,
    online: Arc<AtomicBool>,
    rt: tokio::runtime::Handle,
}

impl Tray {
    /// Puts the icon on the session bus. `Err` only when there is no
    /// session bus at all; no tray host is [`Tray::available`] `false`.
    pub async fn spawn(desktop: &Arc<Desktop>) -> Result<Tray, String> {
        let rt = tokio::runtime::Handle::current();
        let icons: Vec<Rgba> = [ICON_32, ICON_128]
            .iter()
            .filter_map(|b| decode(b))
            .collect();
        let online = Arc::new(AtomicBool::new(true));
        let make = || Item {
            desktop: Arc::downgrade(desktop),
            rt: rt.clone(),
            icons: icons.clone(),
            count: 0,
            lines: Vec::new(),
            online: online.clone(),
            frozen: false,
            told: None,
            held: None,
        };
        let handle = match make().spawn().await {
            Ok(h) => h,
            Err(ksni::Error::Watcher(e)) => {
                online.store(false, Ordering::SeqCst);
                tracing::warn!(
                    "no tray host on this desktop ({e}): new requests open their review window directly"
                );
                // Still served, so a host that starts later shows it.
                make()
                    .assume_sni_available(true)
                    .spawn()
                    .await
                    .map_err(|e| format!("no tray icon: {e:?}"))?
            }
            Err(e) => return Err(format!("no tray icon: {e:?}")),
        };
        Ok(Tray { handle, online, rt })
    }

    /// Whether a tray host shows the icon.
    pub fn available(&self) -> bool {
        self.online.load(Ordering::SeqCst) && !self.handle.is_closed()
    }

    /// Shows whether custody is frozen (title, tooltip, menu); returns at once.
    pub fn show_frozen(&self, frozen: bool) {
        let handle = self.handle.clone();
        self.rt.spawn(async move {
            handle.update(move |m| m.frozen = frozen).await;
        });
    }

    /// Shows whether the session is locked or going to sleep (menu,
    /// tooltip); returns at once.
    pub fn show_held(&self, held: Option<Hold>) {
        let handle = self.handle.clone();
        self.rt.spawn(async move {
            handle.update(move |m| m.held = held).await;
        });
    }

    /// Says `text` (display-safe) in the tooltip and at the top of the
    /// menu for a minute: the tray's word when there are no notifications.
    pub fn tell(&self, text: String) {
        let handle = self.handle.clone();
        self.rt.spawn(async move {
            let shown = text.clone();
            handle.update(move |m| m.told = Some(shown)).await;
            tokio::time::sleep(std::time::Duration::from_secs(60)).await;
            handle
                .update(move |m| {
                    if m.told.as_deref() == Some(text.as_str()) {
                        m.told = None;
                    }
                })
                .await;
        });
    }

    /// Shows `pending` (count, badge, menu lines); returns at once.
    pub fn show(&self, pending: &[PendingView]) {
        let count = pending.len();
        let new_lines = lines(pending);
        let handle = self.handle.clone();
        self.rt.spawn(async move {
            handle
                .update(move |m| {
                    m.count = count;
                    m.lines = new_lines;
                })
                .await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_icon_decodes_and_converts_to_argb() {
        let img = decode(ICON_32).expect("the tray icon is a PNG");
        assert_eq!((img.w, img.h), (32, 32));
        let icon = argb(&img, 0);
        assert_eq!(icon.data.len(), 32 * 32 * 4);
        // The first pixel, RGBA → ARGB.
        assert_eq!(icon.data[..4], [img.px[3], img.px[0], img.px[1], img.px[2]]);
        assert_ne!(argb(&img, 3).data, icon.data, "the badge shows");
    }

    #[test]
    fn the_badge_never_covers_the_key() {
        // The key's pixels (yellow) in the icon as drawn with a badge are
        // exactly those of the shrunk icon alone: the disc covers none.
        for png_bytes in [ICON_32, ICON_128] {
            let img = decode(png_bytes).expect("the tray icon is a PNG");
            let key = |px: &[u8]| {
                px.chunks_exact(4)
                    .enumerate()
                    .filter(|(_, p)| p[0] > 180 && p[1] > 140 && p[2] < 120 && p[3] > 128)
                    .map(|(i, _)| i)
                    .collect::<Vec<_>>()
            };
            let alone = key(&super::super::badge::shrunk(&img.px, img.w, img.h));
            assert!(alone.len() > 20, "the key is drawn");
            for n in [1, 5, 12] {
                let (with, _, _) = badge(&img.px, img.w, img.h, n);
                assert_eq!(key(&with), alone, "{}px, {n} pending", img.w);
            }
        }
    }

    #[test]
    fn menu_text_is_display_safe_and_never_a_mnemonic() {
        let t = menu_text("Pause shop_bot\u{202e}x");
        assert!(t.contains("shop__bot"), "{t}");
        assert!(!t.contains('\u{202e}'), "{t}");
    }

    fn labels(m: &Item) -> Vec<String> {
        ksni::Tray::menu(m)
            .into_iter()
            .filter_map(|i| match i {
                MenuItem::Standard(s) => Some(s.label),
                _ => None,
            })
            .collect()
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
    }

    /// A tray item with `count` requests waiting, nothing else to say.
    fn item(rt: &tokio::runtime::Runtime, count: usize) -> Item {
        Item {
            desktop: Weak::new(),
            rt: rt.handle().clone(),
            icons: Vec::new(),
            count,
            lines: Vec::new(),
            online: Arc::new(AtomicBool::new(true)),
            frozen: false,
            told: None,
            held: None,
        }
    }

    #[test]
    fn the_tray_offers_stop_all_agents_and_says_when_custody_is_frozen() {
        let rt = runtime();
        let mut m = item(&rt, 0);
        assert!(labels(&m).iter().any(|l| l.starts_with("Stop all agents")));
        assert_eq!(ksni::Tray::title(&m), "Parley Custody");
        // With no notifications, what custody tells shows here.
        m.told = Some("Approved 58.30 USD at shop.example for “shopper”".into());
        assert_eq!(
            labels(&m)[1],
            "Approved 58.30 USD at shop.example for “shopper”"
        );
        assert!(ksni::Tray::tool_tip(&m)
            .description
            .starts_with("Approved 58.30 USD"));
        m.told = None;
        m.frozen = true;
        let l = labels(&m);
        assert!(l.iter().any(|l| l == "FROZEN: all agents stopped"), "{l:?}");
        assert!(!l.iter().any(|l| l.starts_with("Stop all agents")), "{l:?}");
        assert!(ksni::Tray::title(&m).contains("frozen"));
        assert!(ksni::Tray::tool_tip(&m).description.starts_with("Frozen"));
        assert!(matches!(
            ksni::Tray::status(&m),
            ksni::Status::NeedsAttention
        ));
    }

    #[test]
    fn the_tray_says_when_the_session_is_locked_or_going_to_sleep() {
        let rt = runtime();
        let mut m = item(&rt, 1);
        let said = |m: &Item| {
            let mut l = labels(m);
            l.push(ksni::Tray::tool_tip(m).description);
            l.join("\n")
        };
        assert!(!said(&m).contains("lock"), "{}", said(&m));
        m.held = Some(Hold::Locked);
        assert_eq!(
            labels(&m)[..2],
            [
                "1 pending request".to_string(),
                "Screen locked: approving and issuing are off until you unlock it".to_string()
            ]
        );
        assert_eq!(
            ksni::Tray::tool_tip(&m).description,
            "Screen locked: approving and issuing are off until you unlock it\n1 pending request"
        );
        m.held = Some(Hold::Asleep);
        assert_eq!(
            labels(&m)[1],
            "Going to sleep: approving and issuing are off until it wakes up"
        );
        m.held = None;
        assert!(!said(&m).contains("lock"), "{}", said(&m));
    }

    #[test]
    fn menu_lines_name_the_agent_by_its_name_never_its_key() {
        let mut p = crate::terminal::tests::pending("r1");
        let l = lines(std::slice::from_ref(&p));
        let texts: Vec<&str> = l.iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(
            texts,
            [
                "Review — cactus orbit lemon frost: 71.36 USD at shop.example",
                "Pause cactus orbit lemon frost"
            ]
        );
        assert!(!texts.iter().any(|t| t.contains("ed25519")), "{texts:?}");
        p.review.agent.name = "shopper".into();
        assert_eq!(lines(&[p])[1].1, "Pause shopper");
        assert_eq!(
            PAUSE_CHOICES.map(|(_, s)| s),
            [Some(900), Some(3600), None],
            "durations, then until resumed"
        );
    }
}

//! The app's windows: which ones exist, their labels, pages and sizes, and
//! opening or focusing them. Home, the human's own grant form, audit and
//! settings are views (pages) of one main window; each request has one
//! window of its own, `review-<id>`, showing its review or (for a grant
//! request) the grant form that answers it, because the custody service
//! decides what each window may call by its label (a request's window can
//! act on its own request and nothing else), so labels are built here only
//! from checked ids. Opening a request's grant form while its window is open
//! brings that window to the front; the page moves to the form and back by
//! itself (Edit in grant form…, Back to the review).
//!
//! | window | label | page |
//! |---|---|---|
//! | main: home (pending list, first run) | `main` | `index.html` |
//! | main: the own grant form | `main` | `grant.html`, `grant.html#agent=<key>` |
//! | main: audit view | `main` | `audit.html` |
//! | main: settings | `main` | `settings.html` |
//! | one per request | `review-<id>` | `review.html#<id>` |
//! | the same request's grant form | `review-<id>` | `grant.html#request=<id>` |

use std::str::FromStr;
use tauri::{AppHandle, Manager, Runtime, WebviewUrl, WebviewWindowBuilder};

/// A window label for request `id`.
pub fn review_label(id: &str) -> String {
    format!("review-{id}")
}

/// Custody's request ids are `q` + digits; anything else is refused before
/// it becomes part of a label or a URL.
pub fn valid_request_id(id: &str) -> bool {
    id.len() <= 24
        && id.starts_with('q')
        && id.len() > 1
        && id[1..].bytes().all(|b| b.is_ascii_digit())
}

/// The shape of an agent key (`ed25519:` and 43 characters of unpadded
/// URL-safe base64). This process links no key code: the service checks the
/// key itself; here it only has to be safe inside a URL fragment.
pub fn plausible_agent_key(key: &str) -> bool {
    key.strip_prefix("ed25519:").is_some_and(|b64| {
        b64.len() == 43
            && b64
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    })
}

/// What the grant form is opened for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrantFor {
    /// The human's own form (a view of `main`).
    New,
    /// A pending grant request (in its request's window `review-<id>`,
    /// `#request=<id>`: the review and its form share one window).
    Request(String),
    /// The human's own form with an agent key filled in (`main`, `#agent=<key>`).
    Agent(String),
}

/// A window to open or bring to the front: the main window in one of its
/// views, or the review window of one request. Both `--open` and the
/// service's `open` events name one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpenTarget {
    /// Home (`main`, `index.html`).
    Home,
    /// The grant form.
    Grant(GrantFor),
    /// The audit view.
    Audit,
    /// The settings.
    Settings,
    /// The review window of request `id` (`review-<id>`).
    Review(String),
}

/// Why a window target was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    /// Not `home`, `grant`, `audit` or `settings`.
    #[error("unknown view (home, grant, audit or settings)")]
    View,
    /// A grant fragment other than `request=<id>` or `agent=<key>`.
    #[error("the grant view takes request=<id> or agent=<key>")]
    GrantFragment,
    /// Not a request id (`q` and digits).
    #[error("not a request id")]
    RequestId,
    /// Not an agent key.
    #[error("not an agent key")]
    AgentKey,
    /// Neither `main…` nor `review-<id>`.
    #[error("unknown window (main:<view>[#fragment] or review-<id>)")]
    Window,
}

impl OpenTarget {
    /// The main window's `view`, with its `fragment`. Only the grant view
    /// reads a fragment; the others have none to show and ignore it.
    pub fn main(view: &str, fragment: Option<&str>) -> Result<Self, TargetError> {
        let fragment = fragment.unwrap_or("");
        Ok(match view {
            "home" => OpenTarget::Home,
            "audit" => OpenTarget::Audit,
            "settings" => OpenTarget::Settings,
            "grant" => OpenTarget::Grant(if fragment.is_empty() {
                GrantFor::New
            } else if let Some(id) = fragment.strip_prefix("request=") {
                if !valid_request_id(id) {
                    return Err(TargetError::RequestId);
                }
                GrantFor::Request(id.to_string())
            } else if let Some(key) = fragment.strip_prefix("agent=") {
                if !plausible_agent_key(key) {
                    return Err(TargetError::AgentKey);
                }
                GrantFor::Agent(key.to_string())
            } else {
                return Err(TargetError::GrantFragment);
            }),
            _ => return Err(TargetError::View),
        })
    }

    /// The window `label` (`review-<id>`); `main` is the main window's home.
    pub fn window(label: &str) -> Result<Self, TargetError> {
        if label == "main" {
            return Ok(OpenTarget::Home);
        }
        match label.strip_prefix("review-") {
            Some(id) if valid_request_id(id) => Ok(OpenTarget::Review(id.to_string())),
            Some(_) => Err(TargetError::RequestId),
            None => Err(TargetError::Window),
        }
    }

    /// The label of the window this target opens.
    pub fn label(&self) -> String {
        match self {
            // One window per request: its grant form is shown in its
            // review's window (which is only brought to the front when open).
            OpenTarget::Grant(GrantFor::Request(id)) | OpenTarget::Review(id) => review_label(id),
            OpenTarget::Home | OpenTarget::Grant(_) | OpenTarget::Audit | OpenTarget::Settings => {
                "main".into()
            }
        }
    }

    /// The page (with its fragment) this target shows, relative to the
    /// bundle's root.
    pub fn page(&self) -> String {
        match self {
            OpenTarget::Home => "index.html".into(),
            OpenTarget::Grant(GrantFor::New) => "grant.html".into(),
            OpenTarget::Grant(GrantFor::Request(id)) => format!("grant.html#request={id}"),
            OpenTarget::Grant(GrantFor::Agent(key)) => format!("grant.html#agent={key}"),
            OpenTarget::Audit => "audit.html".into(),
            OpenTarget::Settings => "settings.html".into(),
            OpenTarget::Review(id) => format!("review.html#{id}"),
        }
    }

    /// The window title when it opens: fixed strings of ours, no agent text
    /// (a review's names its request once custody has described it:
    /// [`request_title`]).
    pub fn title(&self) -> &'static str {
        match self {
            OpenTarget::Home => "Parley Custody",
            OpenTarget::Grant(GrantFor::Request(_)) => "Grant request — Parley Custody",
            OpenTarget::Grant(_) => "Issue a grant — Parley Custody",
            OpenTarget::Audit => "Audit log — Parley Custody",
            OpenTarget::Settings => "Settings — Parley Custody",
            OpenTarget::Review(_) => "Review request — Parley Custody",
        }
    }

    fn size(&self) -> (f64, f64) {
        match self {
            OpenTarget::Review(_) => REVIEW_SIZE,
            OpenTarget::Grant(GrantFor::Request(_)) => GRANT_REQUEST_SIZE,
            _ => MAIN_SIZE,
        }
    }
}

/// Whether the main window, showing `current` (its URL's path and
/// fragment, e.g. `/grant.html#agent=…`), already shows `page`: then
/// opening it only brings it to the front and keeps what the human typed.
fn shows(current: &str, page: &str) -> bool {
    let current = match current.trim_start_matches('/') {
        "" => "index.html",
        c => c,
    };
    current == page
}

/// `--open`: `main`, `main:<view>[#fragment]` or `review-<id>`.
impl FromStr for OpenTarget {
    type Err = TargetError;
    fn from_str(s: &str) -> Result<Self, TargetError> {
        match s.strip_prefix("main:") {
            Some(rest) => {
                let (view, fragment) = match rest.split_once('#') {
                    Some((v, f)) => (v, Some(f)),
                    None => (rest, None),
                };
                OpenTarget::main(view, fragment)
            }
            None => OpenTarget::window(s),
        }
    }
}

/// Window sizes (logical pixels, inside the decorations). Every window fits
/// a 1366×768 laptop screen with a panel and a title bar (at most 680 tall);
/// longer content scrolls inside it. The main window is as wide as its
/// widest view, the audit table.
const MAIN_SIZE: (f64, f64) = (1100.0, 680.0);
const REVIEW_SIZE: (f64, f64) = (620.0, 680.0);
const GRANT_REQUEST_SIZE: (f64, f64) = (720.0, 680.0);
/// The smallest inside size the pages are laid out for.
const MIN_SIZE: (f64, f64) = (420.0, 360.0);

fn front<R: Runtime>(w: &tauri::WebviewWindow<R>) {
    // The main window's own navigation: it is in front already, and asking
    // again for focus only races the windows opened next (a review's grant
    // form lost its focus to it under a bare X server).
    if w.is_focused().unwrap_or(false) {
        return;
    }
    let _ = w.unminimize();
    let _ = w.show();
    let _ = w.set_focus();
}

/// A window's place and size, in logical pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rect {
    /// Left edge.
    pub x: f64,
    /// Top edge.
    pub y: f64,
    /// Width.
    pub w: f64,
    /// Height.
    pub h: f64,
}

impl Rect {
    fn overlap(&self, o: &Rect) -> f64 {
        let w = (self.x + self.w).min(o.x + o.w) - self.x.max(o.x);
        let h = (self.y + self.h).min(o.y + o.h) - self.y.max(o.y);
        if w > 0.0 && h > 0.0 {
            w * h
        } else {
            0.0
        }
    }
}

/// Space between request windows placed side by side.
const GAP: f64 = 16.0;

/// Where a new request window of `size` goes on `screen`, given the request
/// windows already open (`others`, at least one: the first one opens
/// centred) and the one the human is deciding in, if any (`focused`).
/// Request windows never open on top of one another (B's buttons would be
/// where A's were, and take the click meant for A): beside the window being
/// decided (right, then left), beside the others, anywhere free; and when
/// the screen is full, the place that covers least of the window being
/// decided (or of all of them), never exactly where another one is. (It
/// also opens without the focus then, so a click meant for A that lands on
/// it only brings it to the front and starts its arming delay.)
pub fn place(size: (f64, f64), screen: Rect, others: &[Rect], focused: Option<Rect>) -> (f64, f64) {
    let (w, h) = size;
    let at = |x: f64, y: f64| Rect { x, y, w, h };
    let fits = |r: &Rect| {
        r.x >= screen.x - 0.5
            && r.y >= screen.y - 0.5
            && r.x + r.w <= screen.x + screen.w + 0.5
            && r.y + r.h <= screen.y + screen.h + 0.5
    };
    let mut candidates = Vec::new();
    for o in focused.iter().chain(others) {
        candidates.push(at(o.x + o.w + GAP, o.y));
        candidates.push(at(o.x - GAP - w, o.y));
    }
    // Then every place on a coarse grid.
    let step = 40.0;
    let mut gy = screen.y;
    while gy + h <= screen.y + screen.h + 0.5 {
        let mut gx = screen.x;
        while gx + w <= screen.x + screen.w + 0.5 {
            candidates.push(at(gx, gy));
            gx += step;
        }
        gy += step;
    }
    candidates.retain(|r| fits(r));
    if candidates.is_empty() {
        // A screen smaller than the window: its corner.
        return (screen.x, screen.y);
    }
    let free = |r: &Rect| others.iter().all(|o| r.overlap(o) == 0.0);
    if let Some(r) = candidates.iter().find(|r| free(r)) {
        return (r.x, r.y);
    }
    let covered = |r: &Rect| match focused {
        Some(f) => r.overlap(&f),
        None => others.iter().map(|o| r.overlap(o)).sum(),
    };
    let exactly_over = |r: &Rect| {
        others
            .iter()
            .any(|o| (o.x - r.x).abs() < step && (o.y - r.y).abs() < step)
    };
    let best = candidates
        .iter()
        .filter(|r| !exactly_over(r))
        .min_by(|a, b| covered(a).total_cmp(&covered(b)))
        .unwrap_or(&candidates[0]);
    (best.x, best.y)
}

/// The request windows whose request is no longer being decided (decided,
/// or gone): they close by themselves a moment later, and a new request
/// window need not keep out of their way nor leave them the focus.
static DECIDED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Window `label`'s request was decided or is gone (`bridge` sees the answer).
pub fn decided(label: &str) {
    if let Ok(mut d) = DECIDED.lock() {
        if !d.iter().any(|l| l == label) {
            d.push(label.to_string());
        }
    }
}

/// Window `label` is gone.
pub fn forget(label: &str) {
    if let Ok(mut d) = DECIDED.lock() {
        d.retain(|l| l != label);
    }
}

fn is_decided(label: &str) -> bool {
    DECIDED.lock().is_ok_and(|d| d.iter().any(|l| l == label))
}

/// Whether `label` is a request's window (its review or its grant form).
fn is_request_window(label: &str) -> bool {
    label.starts_with("review-")
}

/// A window's place and size in logical pixels (outer: with decorations).
fn rect_of<R: Runtime>(w: &tauri::WebviewWindow<R>) -> Option<Rect> {
    let scale = w.scale_factor().ok()?;
    let pos = w.outer_position().ok()?.to_logical::<f64>(scale);
    let size = w.outer_size().ok()?.to_logical::<f64>(scale);
    Some(Rect {
        x: pos.x,
        y: pos.y,
        w: size.width,
        h: size.height,
    })
}

/// Room a window manager's title bar and borders take around a window's
/// inside (logical pixels): what [`fit`] keeps free of the work area.
const DECORATION: (f64, f64) = (16.0, 48.0);

/// A window's inside size on a work area `area`: the wanted `size`, never
/// wider or taller than the area leaves once the decorations are counted,
/// never below the minimum the pages are laid out for (a screen smaller than
/// that still gets the minimum, placed at its corner).
pub fn fit(size: (f64, f64), area: Rect) -> (f64, f64) {
    let w = size.0.min(area.w - DECORATION.0).max(MIN_SIZE.0);
    let h = size.1.min(area.h - DECORATION.1).max(MIN_SIZE.1);
    (w, h)
}

/// The work area of the monitor new windows open on (the screen less its
/// panels), in logical pixels: the monitor of a request window already
/// open, else the primary one.
fn work_area<R: Runtime>(app: &AppHandle<R>) -> Option<Rect> {
    let monitor = app
        .webview_windows()
        .into_iter()
        .filter(|(label, w)| is_request_window(label) && w.is_visible().unwrap_or(false))
        .find_map(|(_, w)| w.current_monitor().ok().flatten())
        .or_else(|| app.primary_monitor().ok().flatten())?;
    let scale = monitor.scale_factor();
    let area = monitor.work_area();
    let pos = area.position.to_logical::<f64>(scale);
    let dim = area.size.to_logical::<f64>(scale);
    (dim.width > 0.0 && dim.height > 0.0).then_some(Rect {
        x: pos.x,
        y: pos.y,
        w: dim.width,
        h: dim.height,
    })
}

/// `outer` (a window with its decorations) centred on `area`, its top-left
/// corner inside it.
fn centred(outer: (f64, f64), area: Rect) -> (f64, f64) {
    (
        area.x + ((area.w - outer.0) / 2.0).max(0.0),
        area.y + ((area.h - outer.1) / 2.0).max(0.0),
    )
}

/// Where a new request window goes on `area` and whether it may take the
/// focus: not while another request window has it (the human is deciding
/// there). Never exactly over another request window: beside the one in
/// front, else beside the others ([`place`]); the first one centred.
fn request_window_place<R: Runtime>(
    app: &AppHandle<R>,
    outer: (f64, f64),
    area: Rect,
) -> ((f64, f64), bool) {
    let mut others = Vec::new();
    let mut focused = None;
    for (label, w) in app.webview_windows() {
        if !is_request_window(&label) || is_decided(&label) || !w.is_visible().unwrap_or(false) {
            continue;
        }
        // A window still being made (or closing) has no size yet: it covers nothing.
        if let Some(r) = rect_of(&w).filter(|r| r.w > 0.0 && r.h > 0.0) {
            if w.is_focused().unwrap_or(false) {
                focused = Some(r);
            }
            others.push(r);
        }
    }
    if others.is_empty() {
        return (centred(outer, area), true);
    }
    // With no request window in front, nothing is being decided: it takes
    // the focus (an unfocused window it sits beside takes no click as an
    // approval: the click focuses it and starts its arming delay).
    (place(outer, area, &others, focused), focused.is_none())
}

fn build<R: Runtime>(
    app: &AppHandle<R>,
    label: &str,
    page: String,
    title: &str,
    size: (f64, f64),
) -> Result<tauri::WebviewWindow<R>, String> {
    // Sized to the work area and placed inside it: a review's Deny and
    // Approve sit in its footer, which is on screen only if the window is.
    let area = work_area(app);
    let size = area.map_or(size, |a| fit(size, a));
    let builder = WebviewWindowBuilder::new(app, label, WebviewUrl::App(page.into()))
        // Titles are fixed strings of ours here; a request's own title
        // (`request_title`) is set once custody has described it.
        .title(title)
        .inner_size(size.0, size.1)
        .min_inner_size(MIN_SIZE.0, MIN_SIZE.1);
    let outer = (size.0 + DECORATION.0, size.1 + DECORATION.1);
    let builder = match area {
        Some(area) if is_request_window(label) => {
            let ((x, y), focus) = request_window_place(app, outer, area);
            // On Wayland a window can neither read its place on screen nor
            // choose it: the compositor places it (and decides whether it
            // takes the focus; unfocused, it is not counted in front, see
            // bridge.rs).
            if crate::webkit::on_wayland() {
                builder.focused(focus)
            } else {
                builder.position(x, y).focused(focus)
            }
        }
        Some(area) => {
            let (x, y) = centred(outer, area);
            builder.position(x, y).focused(true)
        }
        None => builder.center().focused(true),
    };
    builder
        .build()
        .inspect(crate::webkit::keep_small)
        .map_err(|e| format!("cannot open the window: {e}"))
}

/// The longest title a request window gets (characters, before the app's name).
const MAX_TITLE_FIELD: usize = 40;

/// `s` for a window title: the desktop shows titles in its own places
/// (task bar, window switcher), outside our pages and their display rule,
/// so only printable ASCII passes (anything else becomes `?`, which also
/// keeps look-alike letters out) and at most `max` characters, `…` after.
/// Custody made the text display-safe already; this is the title's own
/// narrower rule.
pub fn title_field(s: &str, max: usize) -> String {
    let words = s.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out: String = words
        .chars()
        .take(max)
        .map(|c| {
            if c == ' ' || c.is_ascii_graphic() {
                c
            } else {
                '?'
            }
        })
        .collect();
    if words.chars().nth(max).is_some() {
        out = out.trim_end().to_string();
        out.push('…');
    }
    out
}

/// A review window's title, naming its request from custody's description
/// of it (`review_get`'s `review`), in the words the page uses for its own:
/// "Approve 58.30 USD at shop.example? (q7) — Parley Custody", "Grant for
/// shop.example? (q8) — Parley Custody". The page's `document.title` does
/// not reach the window (a page is not trusted with the desktop's title).
/// Every value is cut by [`title_field`]; the request id (checked: `q` and
/// digits) tells apart two requests that read alike.
pub fn request_title(id: &str, review: &serde_json::Value) -> String {
    let text = |k: &str| review.get(k).and_then(|v| v.as_str()).unwrap_or("");
    let service = title_field(text("service"), MAX_TITLE_FIELD);
    let id = if valid_request_id(id) { id } else { "?" };
    let what = match text("kind") {
        "grant" if service.is_empty() => "Grant for every service?".to_string(),
        "grant" => format!("Grant for {service}?"),
        _ => format!(
            "Approve {} at {}?",
            title_field(text("cost"), MAX_TITLE_FIELD / 2),
            if service.is_empty() { "?" } else { &service }
        ),
    };
    format!("{what} ({id}) — Parley Custody")
}

/// Opens the window `target` names, or brings it to the front if it is
/// open; the main window moves to the target's view unless it shows it
/// already. Returns its label when it was created now (the caller reports
/// it `shown` to the service), `None` when it was already open (a view the
/// main window moves to reports itself `shown` when its page has loaded,
/// see `bridge::on_page_load`, which re-arms the approve delay).
pub fn open<R: Runtime>(app: &AppHandle<R>, target: &OpenTarget) -> Result<Option<String>, String> {
    let label = target.label();
    let page = target.page();
    if let Some(w) = app.get_webview_window(&label) {
        if label == "main" {
            let current = w
                .url()
                .map_err(|e| format!("cannot read the main window's page: {e}"))?;
            let here = match current.fragment() {
                Some(f) => format!("{}#{f}", current.path()),
                None => current.path().to_string(),
            };
            if !shows(&here, &page) {
                let next = current
                    .join(&format!("/{page}"))
                    .map_err(|e| format!("cannot go to {page}: {e}"))?;
                w.navigate(next)
                    .map_err(|e| format!("cannot go to {page}: {e}"))?;
                let _ = w.set_title(target.title());
            }
        }
        front(&w);
        return Ok(None);
    }
    build(app, &label, page, target.title(), target.size())?;
    Ok(Some(label))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_window_fits_a_1366_by_768_screen_with_a_panel_and_title_bar() {
        for (name, (w, h)) in [
            ("main", MAIN_SIZE),
            ("review", REVIEW_SIZE),
            ("grant request", GRANT_REQUEST_SIZE),
        ] {
            assert!(w <= 1366.0 - 40.0 && h <= 768.0 - 88.0, "{name} is {w}×{h}");
            assert!(
                w >= 420.0 && h >= 360.0,
                "{name} is at least the minimum size"
            );
        }
    }

    #[test]
    fn request_ids() {
        assert!(valid_request_id("q1"));
        assert!(valid_request_id("q12345"));
        for bad in ["", "q", "1", "q1a", "q-1", "../q1", "q1#x", "review-q1"] {
            assert!(!valid_request_id(bad), "{bad}");
        }
    }

    #[test]
    fn agent_keys() {
        let key = format!("ed25519:{}", "A".repeat(42) + "_");
        assert!(plausible_agent_key(&key));
        for bad in [
            "".to_string(),
            "ed25519:".to_string(),
            format!("ed25519:{}", "A".repeat(42)),
            format!("ed25519:{}", "A".repeat(44)),
            format!("ed25519:{}#x", "A".repeat(41)),
            format!("ed25519:{}&", "A".repeat(42)),
            format!("x25519:{}", "A".repeat(43)),
        ] {
            assert!(!plausible_agent_key(&bad), "{bad}");
        }
    }

    #[test]
    fn open_targets_parse() {
        let key = format!("ed25519:{}", "b".repeat(43));
        for (arg, want) in [
            ("main", OpenTarget::Home),
            ("main:home", OpenTarget::Home),
            ("main:audit", OpenTarget::Audit),
            ("main:settings#anything", OpenTarget::Settings),
            ("main:grant", OpenTarget::Grant(GrantFor::New)),
            ("main:grant#", OpenTarget::Grant(GrantFor::New)),
            (
                "main:grant#request=q7",
                OpenTarget::Grant(GrantFor::Request("q7".into())),
            ),
            ("review-q12", OpenTarget::Review("q12".into())),
        ] {
            assert_eq!(arg.parse::<OpenTarget>(), Ok(want), "{arg}");
        }
        assert_eq!(
            format!("main:grant#agent={key}").parse::<OpenTarget>(),
            Ok(OpenTarget::Grant(GrantFor::Agent(key.clone())))
        );
        for (arg, err) in [
            ("main:", TargetError::View),
            ("main:review", TargetError::View),
            ("main:grant#request=7", TargetError::RequestId),
            ("main:grant#agent=nope", TargetError::AgentKey),
            ("main:grant#id=q7", TargetError::GrantFragment),
            ("review-", TargetError::RequestId),
            ("review-q7/../x", TargetError::RequestId),
            ("audit", TargetError::Window),
            ("", TargetError::Window),
        ] {
            assert_eq!(arg.parse::<OpenTarget>(), Err(err), "{arg}");
        }
    }

    #[test]
    fn labels_are_those_the_capabilities_and_the_service_know() {
        for view in [
            OpenTarget::Home,
            OpenTarget::Grant(GrantFor::New),
            OpenTarget::Grant(GrantFor::Agent("k".into())),
            OpenTarget::Audit,
            OpenTarget::Settings,
        ] {
            assert_eq!(view.label(), "main", "{view:?} is a view of main");
        }
        // One window per request: its grant form is its review's window.
        assert_eq!(
            OpenTarget::Grant(GrantFor::Request("q3".into())).label(),
            "review-q3"
        );
        assert_eq!(OpenTarget::Review("q3".into()).label(), "review-q3");
        // Every label matches exactly one capability's `windows`.
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("capabilities");
        let mut patterns = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
            let cap: serde_json::Value = serde_json::from_str(&text).unwrap();
            for w in cap["windows"].as_array().unwrap() {
                patterns.push(w.as_str().unwrap().to_string());
            }
        }
        for label in ["main", "review-q3"] {
            let n = patterns
                .iter()
                .filter(|p| match p.strip_suffix('*') {
                    Some(prefix) => label.starts_with(prefix),
                    None => p.as_str() == label,
                })
                .count();
            assert_eq!(n, 1, "{label} in {patterns:?}");
        }
        for gone in ["grant", "audit", "settings", "grant-*"] {
            assert!(
                !patterns.iter().any(|p| p == gone),
                "{gone} is a view of main, not a window"
            );
        }
    }

    #[test]
    fn the_main_window_moves_only_when_it_shows_another_view() {
        let key = format!("ed25519:{}", "b".repeat(43));
        assert!(shows("/index.html", &OpenTarget::Home.page()));
        assert!(
            shows("/", &OpenTarget::Home.page()),
            "the bundle's root is home"
        );
        assert!(shows("/audit.html", &OpenTarget::Audit.page()));
        assert!(!shows("/audit.html", &OpenTarget::Settings.page()));
        assert!(!shows(
            "/index.html",
            &OpenTarget::Grant(GrantFor::New).page()
        ));
        let agent = OpenTarget::Grant(GrantFor::Agent(key.clone()));
        assert!(shows(&format!("/grant.html#agent={key}"), &agent.page()));
        assert!(
            !shows("/grant.html", &agent.page()),
            "another agent's form is another view"
        );
        assert!(!shows(
            &format!("/grant.html#agent={key}"),
            &OpenTarget::Grant(GrantFor::New).page()
        ));
    }

    const SCREEN: Rect = Rect {
        x: 0.0,
        y: 0.0,
        w: 1280.0,
        h: 800.0,
    };

    fn at((x, y): (f64, f64)) -> Rect {
        Rect {
            x,
            y,
            w: REVIEW_SIZE.0,
            h: REVIEW_SIZE.1,
        }
    }

    fn centred(screen: Rect) -> Rect {
        at((
            screen.x + (screen.w - REVIEW_SIZE.0) / 2.0,
            screen.y + (screen.h - REVIEW_SIZE.1) / 2.0,
        ))
    }

    #[test]
    fn every_window_is_sized_to_the_work_area_and_placed_inside_it() {
        // 1366×768 with a 28-px top panel, 1024×600 with a 32-px bottom one.
        for area in [
            Rect {
                x: 0.0,
                y: 28.0,
                w: 1366.0,
                h: 740.0,
            },
            Rect {
                x: 0.0,
                y: 0.0,
                w: 1024.0,
                h: 568.0,
            },
        ] {
            for size in [MAIN_SIZE, REVIEW_SIZE, GRANT_REQUEST_SIZE] {
                let (w, h) = fit(size, area);
                let outer = (w + DECORATION.0, h + DECORATION.1);
                let (x, y) = super::centred(outer, area);
                assert!(
                    x >= area.x && y >= area.y,
                    "{size:?} at {x},{y} in {area:?}"
                );
                assert!(
                    x + outer.0 <= area.x + area.w && y + outer.1 <= area.y + area.h,
                    "{size:?} as {w}×{h} at {x},{y} overflows {area:?}"
                );
            }
        }
        assert_eq!(
            fit(REVIEW_SIZE, SCREEN),
            REVIEW_SIZE,
            "room enough: as wanted"
        );
    }

    #[test]
    fn a_second_review_never_opens_exactly_over_the_first_even_unfocused() {
        let area = Rect {
            w: 1366.0,
            h: 740.0,
            ..SCREEN
        };
        let a = centred(area);
        let b = at(place(REVIEW_SIZE, area, &[a], None));
        assert!(
            (b.x - a.x).abs() >= 40.0 || (b.y - a.y).abs() >= 40.0,
            "{a:?} {b:?}"
        );
    }

    #[test]
    fn a_second_review_opens_beside_the_first_never_over_it() {
        let wide = Rect {
            w: 1920.0,
            h: 1080.0,
            ..SCREEN
        };
        let a = centred(wide);
        let b = at(place(REVIEW_SIZE, wide, &[a], Some(a)));
        assert_eq!(a.overlap(&b), 0.0, "{a:?} and {b:?} side by side");
        assert_eq!(b.y, a.y, "beside, at the same height");
        let c = at(place(REVIEW_SIZE, wide, &[a, b], Some(a)));
        assert_eq!(
            c.overlap(&a) + c.overlap(&b),
            0.0,
            "{c:?} on the other side"
        );
    }

    #[test]
    fn on_a_full_screen_the_window_being_decided_is_covered_least_and_never_exactly() {
        for screen in [
            SCREEN,
            Rect {
                w: 1366.0,
                h: 768.0,
                ..SCREEN
            },
        ] {
            let a = centred(screen);
            let b = at(place(REVIEW_SIZE, screen, &[a], Some(a)));
            assert!(
                a.overlap(&b) < a.w * a.h / 2.0,
                "{b:?} covers under half of {a:?}"
            );
            assert!((b.x - a.x).abs() >= 40.0, "{b:?} not over {a:?}");
            // The human decides in B: C covers the least of B.
            let c = at(place(REVIEW_SIZE, screen, &[a, b], Some(b)));
            assert!(c.overlap(&b) < b.w * b.h / 2.0, "{c:?} {b:?}");
            assert!((c.x - b.x).abs() >= 40.0 || (c.y - b.y).abs() >= 40.0);
        }
        // A screen as small as one window: still never exactly over it.
        let small = Rect {
            w: 700.0,
            h: 700.0,
            ..SCREEN
        };
        let a = centred(small);
        let b = at(place(REVIEW_SIZE, small, &[a], Some(a)));
        assert!(
            (b.x - a.x).abs() >= 40.0 || (b.y - a.y).abs() >= 40.0,
            "{a:?} {b:?}"
        );
    }

    #[test]
    fn titles_name_the_request_in_printable_ascii_and_bounded() {
        let consent =
            serde_json::json!({"kind": "consent", "service": "shop.example", "cost": "58.30 USD"});
        assert_eq!(
            request_title("q7", &consent),
            "Approve 58.30 USD at shop.example? (q7) — Parley Custody"
        );
        let grant = serde_json::json!({"kind": "grant", "service": ""});
        assert_eq!(
            request_title("q8", &grant),
            "Grant for every service? (q8) — Parley Custody"
        );
        let hostile = serde_json::json!({
            "kind": "consent",
            "service": format!("sh\u{043e}p.example\u{202e}\n{}", "x".repeat(200)),
            "cost": "1 USD\tand more",
        });
        let t = request_title("../q1", &hostile);
        assert!(
            t.starts_with("Approve 1 USD and more at sh?p.example? x"),
            "{t}"
        );
        assert!(t.ends_with("…? (?) — Parley Custody"), "{t}");
        assert!(t.chars().count() < 120, "{t}");
        assert_eq!(title_field("a\u{0}b  c", 10), "a?b c");
        assert_eq!(title_field("abcdef", 3), "abc…");
        assert_eq!(title_field(" abc ", 3), "abc", "nothing cut, nothing said");
    }
}

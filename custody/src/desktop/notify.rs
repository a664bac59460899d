//! A desktop notification per new request (`notify-rust`, the freedesktop
//! notification service on Linux, spoken by this service over D-Bus):
//! "“shopper” asks you to approve 58.30 USD at shop.example", the agent by
//! its one name ([`crate::fingerprint::agent_name`]: the human's name for
//! it, else its four words). Category `x-parley-custody.request` (no
//! freedesktop category fits a decision to make), normal urgency (a request
//! closes itself when its time runs out; nothing here is an emergency), the
//! app's icon. Its click (the
//! default action) or its Review button opens the review window. The
//! notification closes when the request leaves the queue.
//!
//! With no notification daemon custody still works (tray and windows): the
//! first failure is reported once (log and the home view), and from then
//! on new requests open their review window directly so none goes unseen.

use super::events::{OpenTarget, UiEvent};
use super::service::Desktop;
use super::settings::HideDetails;
use crate::approver::PendingView;
use crate::review::ReviewKind;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;

/// How long showing a notification may take before we give up on it.
const SHOW_TIMEOUT: Duration = Duration::from_secs(5);
/// Notifications stay at most this long (the request closes earlier).
const MAX_LIFETIME: Duration = Duration::from_secs(600);
/// Notifications waiting for a click at once; more are shown but not tracked.
const MAX_TRACKED: usize = 32;
/// How long after a review window closes custody looks whether its
/// request still waits (a decision closes its window too; closes this
/// close together are told once).
const STILL_WAITING_AFTER: Duration = Duration::from_millis(1500);
/// How long a notification that only tells (after Approve) stays.
const TELL_LIFETIME: Duration = Duration::from_secs(8);
/// The notification's category hint: vendor-specific (`x-` prefix, as the
/// freedesktop notification spec asks), since no standard one means "a
/// request waits for your decision" (`im.received` is a chat message).
pub const CATEGORY: &str = "x-parley-custody.request";
/// The app's icon, written once to the data directory so a notification
/// daemon can read it by `file://` path even when the app is not installed
/// (the theme name `parley-custody` is used when it cannot be written).
const ICON: &[u8] = include_bytes!("../../assets/tray-128.png");

const UNKNOWN: u8 = 0;
const AVAILABLE: u8 = 1;
const UNAVAILABLE: u8 = 2;

/// Tracks shown notifications and whether a notification service exists.
#[derive(Default)]
pub struct Notifier {
    state: AtomicU8,
    reason: Mutex<Option<String>>,
    open: Mutex<HashMap<String, oneshot::Sender<()>>>,
    /// Requests whose review window closed, not yet told about.
    closed: Mutex<Vec<String>>,
}

/// Whether notifications work, for the home window.
#[derive(Debug, Clone, serde::Serialize)]
pub struct NotifyStatus {
    /// `None` until the first notification was tried.
    pub available: Option<bool>,
    /// Why not, when they do not.
    pub message: Option<String>,
}

/// Notification markup (the body may be interpreted as a subset of HTML by
/// the daemon): display-safe ([`crate::display`]; review text is so
/// already, this only catches what is not), markup escaped, cut short.
pub fn body_text(s: &str) -> String {
    let s = &if crate::display::is_display_safe(s) {
        s.to_string()
    } else {
        crate::display::safe(s)
    };
    let cut: String = if s.chars().count() > 240 {
        format!("{}…", s.chars().take(239).collect::<String>())
    } else {
        s.to_string()
    };
    cut.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The notification's sentence. Every part comes from the review, whose
/// untrusted strings are display-safe already.
pub fn sentence(p: &PendingView) -> String {
    let r = &p.review;
    let who = format!("“{}”", r.agent.name);
    match r.kind {
        ReviewKind::Consent if r.cost_money.is_some() => {
            format!("{who} asks you to approve {} at {}", r.cost, r.service)
        }
        ReviewKind::Consent => format!(
            "{who} asks you to approve {} at {} ({})",
            r.capability,
            r.service,
            // "free", or "not stated (an effect charges)": never "no cost" for a charge.
            if r.cost == "free" { "no cost" } else { &r.cost }
        ),
        ReviewKind::Grant if r.service.is_empty() => {
            format!("{who} asks for a grant at every service")
        }
        ReviewKind::Grant => format!("{who} asks for a grant at {}", r.service),
    }
}

/// Which principal key would sign if the human approves, on its own line
/// of the notification so a long service id cannot push it out: "If you
/// approve, your key “household” signs it". Nothing is signed yet, and the
/// line never says so. Custody may hold several keys; the request picks one
/// (the key's short form only when it has no name).
pub fn principal_line(p: &PendingView) -> String {
    let r = &p.review;
    match r
        .principal_label
        .as_deref()
        .filter(|l| !l.trim().is_empty())
    {
        Some(l) => format!(
            "If you approve, your key “{}” signs it",
            l.chars().take(60).collect::<String>()
        ),
        None => format!("If you approve, your key {} signs it", r.principal_short),
    }
}

/// The whole body of a notification whose details are hidden (the screen
/// is locked, or the setting says always): that an agent asks, never what,
/// how much, where, or any text of the agent's.
pub const HIDDEN_DETAILS: &str =
    "An agent asks for your decision. Open Parley Custody to see what it asks.";

/// What a notification that only tells says with its details hidden.
const HIDDEN_TOLD: &str = "Open Parley Custody to see what happened.";

/// Whether notifications now leave out what is asked: while the session is
/// locked (or going to sleep), or always, as the settings say.
pub fn hides_details(d: &Desktop) -> bool {
    let always = d
        .settings
        .lock()
        .map(|s| s.hide_notification_details == HideDetails::Always)
        // Settings that cannot be read: the careful choice.
        .unwrap_or(true);
    always
        || d.core
            .as_ref()
            .is_ok_and(|c| c.engine.session().hold().is_some())
}

/// The notification for `p`, before it is shown: summary, body, actions,
/// category, urgency and icon (`icon`: a `file://` URI or a theme name).
/// With `hide`, the body is [`HIDDEN_DETAILS`] alone.
pub fn notification(
    p: &PendingView,
    icon: &str,
    lifetime: Duration,
    hide: bool,
) -> notify_rust::Notification {
    let text = if hide {
        HIDDEN_DETAILS.to_string()
    } else {
        format!(
            "{}\n{}",
            body_text(&sentence(p)),
            body_text(&principal_line(p))
        )
    };
    let mut n = notify_rust::Notification::new();
    n.appname("Parley Custody")
        .summary("A request needs your decision")
        .body(&text)
        .icon(icon)
        .action("default", "Review")
        .action("review", "Review…")
        .timeout(notify_rust::Timeout::Milliseconds(
            lifetime.as_millis().min(u32::MAX as u128) as u32,
        ));
    #[cfg(all(unix, not(target_os = "macos")))]
    n.urgency(notify_rust::Urgency::Normal)
        .hint(notify_rust::Hint::Category(CATEGORY.into()));
    n
}

/// What was approved, for the notification that follows Approve (the
/// review window closes a moment after; this stays): "Approved 58.30 USD at
/// shop.example for “shopper”". Every part comes from the review (display-
/// safe already; [`body_text`] catches the rest).
pub fn approved_sentence(p: &PendingView) -> String {
    let r = &p.review;
    let who = format!("“{}”", r.agent.name);
    match r.kind {
        ReviewKind::Consent if r.cost_money.is_some() => {
            format!("Approved {} at {} for {who}", r.cost, r.service)
        }
        ReviewKind::Consent => format!("Approved {} at {} for {who}", r.capability, r.service),
        ReviewKind::Grant if r.service.is_empty() => {
            format!("Issued a grant at every service to {who}")
        }
        ReviewKind::Grant => format!("Issued a grant at {} to {who}", r.service),
    }
}

/// Why nothing happened after a review window was closed: the request
/// still waits, and where it is. `None` when none still waits.
pub fn still_waiting_sentence(waiting: &[PendingView]) -> Option<String> {
    match waiting {
        [] => None,
        [p] => Some(format!(
            "{} — closing its window did not deny it; open it from the tray or home",
            sentence(p)
        )),
        many => Some(format!(
            "{} requests — closing their windows did not deny them; open them from the tray or home",
            many.len()
        )),
    }
}

/// A notification that only tells (no action): the same app name,
/// category, urgency and icon as a request's, gone after [`TELL_LIFETIME`].
pub fn telling(summary: &str, body: &str, icon: &str) -> notify_rust::Notification {
    let mut n = notify_rust::Notification::new();
    n.appname("Parley Custody")
        .summary(summary)
        .body(&body_text(body))
        .icon(icon)
        .timeout(notify_rust::Timeout::Milliseconds(
            TELL_LIFETIME.as_millis() as u32,
        ));
    #[cfg(all(unix, not(target_os = "macos")))]
    n.urgency(notify_rust::Urgency::Normal)
        .hint(notify_rust::Hint::Category(CATEGORY.into()));
    n
}

/// The icon to name in notifications: the app's icon as a `file://` URI in
/// the data directory (written once), else the icon theme's name.
fn icon() -> &'static str {
    static ICON_URI: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    ICON_URI.get_or_init(|| {
        let written = crate::paths::data_dir().ok().and_then(|dir| {
            let path = dir.join("notification-icon.png");
            let same = std::fs::read(&path).is_ok_and(|b| b == ICON);
            if !same {
                std::fs::write(&path, ICON).ok()?;
            }
            Some(format!("file://{}", path.display()))
        });
        written.unwrap_or_else(|| "parley-custody".into())
    })
}

impl Notifier {
    /// The current status.
    pub fn status(&self) -> NotifyStatus {
        let available = match self.state.load(Ordering::SeqCst) {
            UNKNOWN => None,
            AVAILABLE => Some(true),
            _ => Some(false),
        };
        NotifyStatus {
            available,
            message: self.reason.lock().ok().and_then(|r| r.clone()),
        }
    }

    /// Whether the service was found missing.
    pub fn unavailable(&self) -> bool {
        self.state.load(Ordering::SeqCst) == UNAVAILABLE
    }

    fn failed(&self, d: &Desktop, why: String) {
        if self.state.swap(UNAVAILABLE, Ordering::SeqCst) != UNAVAILABLE {
            let msg = format!(
                "Desktop notifications are not available ({why}). Parley Custody still works: \
                 new requests appear in the tray and open their review window directly."
            );
            tracing::warn!("{msg}");
            if let Ok(mut r) = self.reason.lock() {
                *r = Some(msg);
            }
            d.hub.send(UiEvent::StatusChanged);
        }
    }

    /// Shows a notification for a new request (returns at once).
    pub fn show(self: &Arc<Self>, d: &Arc<Desktop>, p: &PendingView) {
        let id = p.id.clone();
        if self.unavailable() {
            d.opener.open(OpenTarget::Review(id));
            return;
        }
        let left = (p.closes_at - crate::engine::unix_now()).max(1) as u64;
        let lifetime = Duration::from_secs(left).min(MAX_LIFETIME);
        let (tx, rx) = oneshot::channel();
        let tracked = match self.open.lock() {
            Ok(mut open) if open.len() < MAX_TRACKED => {
                open.insert(id.clone(), tx);
                true
            }
            _ => false,
        };
        let d = d.clone();
        let me = self.clone();
        let hide = hides_details(&d);
        let n = notification(p, icon(), lifetime, hide);
        let p = p.clone();
        tokio::spawn(async move {
            let handle = match tokio::time::timeout(SHOW_TIMEOUT, n.show_async()).await {
                Ok(Ok(h)) => h,
                Ok(Err(e)) => return me.gave_up(&d, &id, e.to_string()),
                Err(_) => return me.gave_up(&d, &id, "no answer in 5 s".into()),
            };
            me.state.store(AVAILABLE, Ordering::SeqCst);
            if !tracked {
                return;
            }
            let (act_tx, act_rx) = oneshot::channel::<bool>();
            let wait = handle.wait_for_action_async(move |r| {
                use notify_rust::NotificationResponse as R;
                let _ = act_tx.send(matches!(r, R::Default | R::Action(_)));
            });
            let shown_at = tokio::time::Instant::now();
            let ends = tokio::time::sleep(lifetime);
            tokio::pin!(wait, ends, rx);
            // A lock while it is on screen: it is replaced (same id) by one
            // that says only that an agent asks, before the lock screen shows
            // it; the unlock replaces it again with the request's own words,
            // as the request reads now, if it still waits.
            let mut session = d.core().ok().map(|c| c.engine.session().subscribe());
            let mut hidden = hide;
            loop {
                tokio::select! {
                    _ = &mut wait => {
                        if act_rx.await.unwrap_or(false) {
                            d.opener.open(OpenTarget::Review(id.clone()));
                        }
                        break;
                    }
                    _ = &mut rx => {
                        let _ = tokio::time::timeout(SHOW_TIMEOUT, handle.close_async()).await;
                        break;
                    }
                    _ = &mut ends => {
                        let _ = tokio::time::timeout(SHOW_TIMEOUT, handle.close_async()).await;
                        break;
                    }
                    Ok(()) = async {
                        match session.as_mut() {
                            Some(s) => s.changed().await.map_err(|_| ()),
                            None => std::future::pending().await,
                        }
                    } => {
                        let hide = hides_details(&d);
                        if hide == hidden {
                            continue;
                        }
                        let shown = if hide {
                            Some(p.clone())
                        } else {
                            // Gone meanwhile: its notification closes (`rx`), never shown again.
                            d.pending_labelled().into_iter().find(|w| w.id == id)
                        };
                        let Some(shown) = shown else { continue };
                        hidden = hide;
                        let left = lifetime
                            .saturating_sub(shown_at.elapsed())
                            .max(Duration::from_secs(1));
                        let mut n = notification(&shown, icon(), left, hide);
                        n.id(handle.id());
                        if let Ok(Err(e)) = tokio::time::timeout(SHOW_TIMEOUT, n.show_async()).await {
                            tracing::warn!(
                                "a notification could not be replaced by one {} details: {e}",
                                if hide { "without" } else { "with its" }
                            );
                        }
                    }
                }
            }
            if let Ok(mut open) = me.open.lock() {
                open.remove(&id);
            }
        });
    }

    fn gave_up(&self, d: &Desktop, id: &str, why: String) {
        if let Ok(mut open) = self.open.lock() {
            open.remove(id);
        }
        self.failed(d, why);
        d.opener.open(OpenTarget::Review(id.to_string()));
    }

    /// Tells the human what was just approved (`p`, as it was reviewed).
    /// Returns at once.
    pub fn approved(&self, d: &Desktop, p: &PendingView) {
        self.tell(d, "Approved", approved_sentence(p));
    }

    /// Shows a notification that only tells, or with no notification
    /// service, the same words in the tray (its tooltip and menu).
    fn tell(&self, d: &Desktop, summary: &str, body: String) {
        let body = if hides_details(d) {
            HIDDEN_TOLD.to_string()
        } else {
            body
        };
        if self.unavailable() {
            if let Some(t) = d.tray.get() {
                let text = if body.starts_with(summary) {
                    body
                } else {
                    format!("{summary}: {body}")
                };
                t.tell(crate::display::safe(&text));
            }
            return;
        }
        let n = telling(summary, &body, icon());
        tokio::spawn(async move {
            if let Ok(Err(e)) = tokio::time::timeout(SHOW_TIMEOUT, n.show_async()).await {
                tracing::debug!("a notification was not shown: {e}");
            }
        });
    }

    /// Request `id`'s review window was closed. If the request still waits
    /// a moment later, the human is told so, never silently: closes within
    /// [`STILL_WAITING_AFTER`] of each other make one notification, so
    /// closing many windows tells once.
    pub fn window_closed(self: &Arc<Self>, d: &Arc<Desktop>, id: &str) {
        let Ok(mut closed) = self.closed.lock() else {
            return;
        };
        let first = closed.is_empty();
        if closed.len() < MAX_TRACKED && !closed.iter().any(|c| c == id) {
            closed.push(id.to_string());
        }
        drop(closed);
        if !first {
            return;
        }
        let (me, d) = (self.clone(), d.clone());
        tokio::spawn(async move {
            tokio::time::sleep(STILL_WAITING_AFTER).await;
            let ids = me
                .closed
                .lock()
                .map(|mut c| std::mem::take(&mut *c))
                .unwrap_or_default();
            let waiting: Vec<PendingView> = d
                .pending_labelled()
                .into_iter()
                .filter(|p| ids.contains(&p.id))
                .collect();
            if let Some(body) = still_waiting_sentence(&waiting) {
                me.tell(&d, "Still waiting", body);
            }
        });
    }

    /// The request left the queue: close its notification.
    pub fn withdrawn(&self, id: &str) {
        if let Some(tx) = self.open.lock().ok().and_then(|mut o| o.remove(id)) {
            let _ = tx.send(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_is_escaped_and_bounded() {
        assert_eq!(
            body_text("<b>x</b> & <a href=\"y\">"),
            "&lt;b&gt;x&lt;/b&gt; &amp; &lt;a href=\"y\"&gt;"
        );
        let long = body_text(&"x".repeat(1000));
        assert_eq!(long.chars().count(), 240);
        assert_eq!(
            body_text("pay\u{202e}\u{1b}[2K\n"),
            "pay\\u{202e}\\u{1b}[2K\\u{a}"
        );
    }

    #[test]
    fn the_notification_names_the_agent_and_is_a_normal_request() {
        let mut p = crate::terminal::tests::pending("r1");
        let n = notification(&p, "file:///icon.png", Duration::from_secs(60), false);
        assert!(
            n.body
                .starts_with("“cactus orbit lemon frost” asks you to approve"),
            "{}",
            n.body
        );
        assert!(!n.body.contains("ed25519:AAAA"), "{}", n.body);
        assert!(!n.body.contains("Signed with"), "{}", n.body);
        assert!(
            n.body
                .contains("If you approve, your key “Ana (personal)” signs it"),
            "{}",
            n.body
        );
        assert_eq!(n.icon, "file:///icon.png");
        assert!(n
            .hints
            .contains(&notify_rust::Hint::Category(CATEGORY.into())));
        assert!(n
            .hints
            .contains(&notify_rust::Hint::Urgency(notify_rust::Urgency::Normal)));
        assert!(!n
            .hints
            .iter()
            .any(|h| matches!(h, notify_rust::Hint::Category(c) if c.starts_with("im."))));
        // After Approve: what was approved, for whom, as a normal request's.
        let told = telling("Approved", &approved_sentence(&p), "file:///icon.png");
        assert_eq!(told.summary, "Approved");
        assert!(
            told.body.starts_with("Approved ")
                && told.body.ends_with(" for “cactus orbit lemon frost”"),
            "{}",
            told.body
        );
        assert!(told.actions.is_empty(), "it only tells");
        assert_eq!(told.icon, "file:///icon.png");
        assert!(told
            .hints
            .contains(&notify_rust::Hint::Category(CATEGORY.into())));
        p.review.service = "shop<b>\u{202e}".into();
        let told = telling("Approved", &approved_sentence(&p), "x");
        assert!(
            !told.body.contains("<b>") && !told.body.contains('\u{202e}'),
            "{}",
            told.body
        );
        // A closed review: the request still waits, and says where; many at once are one line.
        let one = still_waiting_sentence(std::slice::from_ref(&p)).unwrap();
        assert!(
            one.starts_with("“cactus orbit lemon frost” asks you to approve"),
            "{one}"
        );
        assert!(one.ends_with("open it from the tray or home"), "{one}");
        let many = vec![p.clone(); 20];
        assert_eq!(
            still_waiting_sentence(&many).unwrap(),
            "20 requests — closing their windows did not deny them; open them from the tray or home"
        );
        assert_eq!(still_waiting_sentence(&[]), None);
        // The human's name for the agent wins over its words.
        p.review.agent.name = "shopper".into();
        let n = notification(&p, "x", Duration::from_secs(60), false);
        assert!(n.body.starts_with("“shopper” asks"), "{}", n.body);
    }

    #[test]
    fn with_details_hidden_it_says_only_that_an_agent_asks() {
        let mut p = crate::terminal::tests::pending("r1");
        p.review.agent.name = "shopper".into();
        p.review.service = "shop.example".into();
        let shown = notification(&p, "x", Duration::from_secs(60), false);
        assert!(shown.body.contains("shop.example"), "{}", shown.body);
        let hidden = notification(&p, "x", Duration::from_secs(60), true);
        assert_eq!(hidden.body, HIDDEN_DETAILS);
        for secret in [
            "shopper",
            "shop.example",
            p.review.cost.as_str(),
            p.review.principal_short.as_str(),
            "USD",
        ] {
            assert!(!hidden.body.contains(secret), "{secret} in {}", hidden.body);
            assert!(
                !hidden.summary.contains(secret),
                "{secret} in {}",
                hidden.summary
            );
        }
        // Still a request's notification: it opens the review.
        assert_eq!(hidden.summary, shown.summary);
        assert_eq!(hidden.actions, shown.actions);
    }
}

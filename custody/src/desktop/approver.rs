//! The approver of the desktop service: for each new request, the tray
//! count, a notification, and `pending-changed` to every UI; when a request
//! leaves the queue, its notification closes and its review window too.
//!
//! It decides nothing: it only makes sure the human sees the request. The
//! decision comes back through a UI call ([`super::calls`]) that the service
//! checks. Calls return at once (the engine must not wait on the desktop).

use super::events::UiEvent;
use super::hub::UiHub;
use super::notify::Notifier;
use super::service::Desktop;
use crate::approver::{Approver, PendingView};
use std::sync::{Arc, OnceLock, Weak};

/// [`Approver`] for the desktop.
pub struct DesktopApprover {
    rt: tokio::runtime::Handle,
    hub: UiHub,
    notifier: Arc<Notifier>,
    desktop: OnceLock<Weak<Desktop>>,
}

impl DesktopApprover {
    /// An approver that sends to `hub` and runs its work on `rt`.
    pub fn new(rt: tokio::runtime::Handle, hub: UiHub) -> DesktopApprover {
        DesktopApprover {
            rt,
            hub,
            notifier: Arc::new(Notifier::default()),
            desktop: OnceLock::new(),
        }
    }

    /// The notifications it shows (the service's status reads them).
    pub fn notifier(&self) -> Arc<Notifier> {
        self.notifier.clone()
    }

    /// Gives it the service state once that exists (the engine, and so this
    /// approver, is built first).
    pub fn attach(&self, desktop: &Arc<Desktop>) {
        let _ = self.desktop.set(Arc::downgrade(desktop));
    }

    fn desktop(&self) -> Option<Arc<Desktop>> {
        self.desktop.get().and_then(Weak::upgrade)
    }
}

impl Approver for DesktopApprover {
    fn notify(&self, pending: &PendingView) {
        self.hub.send(UiEvent::PendingChanged);
        let Some(d) = self.desktop() else {
            return;
        };
        let p = d.label(pending.clone());
        self.rt.spawn(async move {
            d.refresh_tray();
            // With no notification service (or none that answers), the
            // notifier opens the review by itself: no request goes unseen.
            d.notifier.show(&d, &p);
        });
    }

    fn withdrawn(&self, id: &str) {
        self.hub.send(UiEvent::PendingWithdrawn(id.to_string()));
        self.hub.send(UiEvent::PendingChanged);
        self.notifier.withdrawn(id);
        if let Some(d) = self.desktop() {
            self.rt.spawn(async move { d.refresh_tray() });
        }
    }
}

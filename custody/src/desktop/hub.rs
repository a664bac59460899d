//! The service's side of "tell every UI": a broadcast of [`UiEvent`]s that
//! each UI connection of the channel subscribes to, and a count of connected
//! UIs (the opener sends `open` over the channel when one is connected, and
//! starts a UI process when none is).

use super::events::UiEvent;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::broadcast;

/// How many events a slow UI may fall behind before it misses some (it then
/// reloads everything: a lagging subscriber is told `pending-changed`).
const BACKLOG: usize = 256;

/// A cheap, cloneable handle to the UIs.
#[derive(Clone)]
pub struct UiHub {
    tx: broadcast::Sender<UiEvent>,
    connected: Arc<AtomicUsize>,
}

impl Default for UiHub {
    fn default() -> Self {
        UiHub::new()
    }
}

impl UiHub {
    /// A hub with no UI connected yet.
    pub fn new() -> UiHub {
        let (tx, _) = broadcast::channel(BACKLOG);
        UiHub {
            tx,
            connected: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Sends `ev` to every connected UI (none connected: dropped; a UI that
    /// connects later asks for the current state itself).
    pub fn send(&self, ev: UiEvent) {
        let _ = self.tx.send(ev);
    }

    /// Whether at least one UI has said hello and is still connected.
    pub fn connected(&self) -> bool {
        self.connected.load(Ordering::SeqCst) > 0
    }

    /// For the channel: one UI connection, counted while the guard lives.
    pub fn attach(&self) -> (broadcast::Receiver<UiEvent>, Attached) {
        self.connected.fetch_add(1, Ordering::SeqCst);
        (
            self.tx.subscribe(),
            Attached {
                connected: self.connected.clone(),
            },
        )
    }
}

/// Counts one connected UI until dropped.
pub struct Attached {
    connected: Arc<AtomicUsize>,
}

impl Drop for Attached {
    fn drop(&mut self) {
        self.connected.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_ui_is_counted_while_attached_and_gets_what_is_sent() {
        let hub = UiHub::new();
        assert!(!hub.connected());
        let (mut rx, guard) = hub.attach();
        assert!(hub.connected());
        hub.send(UiEvent::PendingChanged);
        assert_eq!(rx.recv().await.unwrap(), UiEvent::PendingChanged);
        drop(guard);
        assert!(!hub.connected());
    }
}

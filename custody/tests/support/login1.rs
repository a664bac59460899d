//! A login1 of the tests' own (`org.freedesktop.login1`: the Manager with
//! `GetSession`, `GetSessionByPID`, `GetUser`, `Inhibit` returning a real
//! pipe, the signal `PrepareForSleep`; one Session with `LockedHint` and
//! its `PropertiesChanged`), and a notification service that keeps what it
//! was asked to show, on a private D-Bus bus. Custody finds login1 there
//! through `$PARLEY_CUSTODY_LOGIN1_BUS` (crate::session).

#![allow(dead_code)]

use std::collections::HashMap;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use zbus::object_server::SignalEmitter;
use zbus::wire::{OwnedObjectPath, OwnedVariant};

/// The one session's id and object path.
pub const SESSION_ID: &str = "c7";
pub const SESSION_PATH: &str = "/org/freedesktop/login1/session/c7";

/// One `Notify` call: the id it replaces (0: a new one), summary, body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub replaces: u32,
    pub summary: String,
    pub body: String,
}

#[derive(Default)]
struct Seen {
    /// The read ends of the inhibitor pipes handed out.
    inhibitors: Vec<(String, OwnedFd)>,
    /// Notifications asked for, in order.
    notes: Vec<Note>,
}

struct Manager(Arc<Mutex<Seen>>);

#[zbus::interface(name = "org.freedesktop.login1.Manager")]
impl Manager {
    fn get_session(&self, id: &str) -> zbus::fdo::Result<OwnedObjectPath> {
        if id == SESSION_ID {
            Ok(OwnedObjectPath::try_from(SESSION_PATH).expect("a path"))
        } else {
            Err(zbus::fdo::Error::Failed(format!("No session '{id}' known")))
        }
    }

    #[zbus(name = "GetSessionByPID")]
    fn get_session_by_pid(&self, _pid: u32) -> zbus::fdo::Result<OwnedObjectPath> {
        Ok(OwnedObjectPath::try_from(SESSION_PATH).expect("a path"))
    }

    fn inhibit(
        &self,
        what: &str,
        who: &str,
        _why: &str,
        mode: &str,
    ) -> zbus::fdo::Result<zbus::OwnedFd> {
        let (r, w) = nix::unistd::pipe().map_err(|e| zbus::fdo::Error::Failed(e.to_string()))?;
        self.0
            .lock()
            .unwrap()
            .inhibitors
            .push((format!("{what}|{who}|{mode}"), r));
        Ok(zbus::OwnedFd::from(w))
    }

    #[zbus(signal)]
    async fn prepare_for_sleep(emitter: &SignalEmitter<'_>, start: bool) -> zbus::Result<()>;
}

struct Session {
    locked: bool,
}

#[zbus::interface(name = "org.freedesktop.login1.Session")]
impl Session {
    #[zbus(property)]
    fn locked_hint(&self) -> bool {
        self.locked
    }
}

struct Notifications(Arc<Mutex<Seen>>, u32);

#[zbus::interface(name = "org.freedesktop.Notifications")]
impl Notifications {
    #[allow(clippy::too_many_arguments)]
    fn notify(
        &mut self,
        _app: String,
        replaces: u32,
        _icon: String,
        summary: String,
        body: String,
        _actions: Vec<String>,
        _hints: HashMap<String, OwnedVariant>,
        _timeout: i32,
    ) -> u32 {
        self.0.lock().unwrap().notes.push(Note {
            replaces,
            summary,
            body,
        });
        if replaces != 0 {
            return replaces;
        }
        self.1 += 1;
        self.1
    }

    fn close_notification(&self, _id: u32) {}

    fn get_capabilities(&self) -> Vec<String> {
        vec!["body".into(), "actions".into()]
    }

    fn get_server_information(&self) -> (String, String, String, String) {
        ("test".into(), "parley".into(), "1".into(), "1.2".into())
    }
}

/// The fake services, served on the bus at `address`.
pub struct FakeLogin1 {
    conn: zbus::Connection,
    seen: Arc<Mutex<Seen>>,
}

impl FakeLogin1 {
    /// Serves login1 (and, with `notifications`, a notification service)
    /// on the bus at `address`.
    pub async fn serve(address: &str, notifications: bool) -> FakeLogin1 {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let mut b = zbus::connection::Builder::address(address)
            .name("org.freedesktop.login1")
            .serve_at("/org/freedesktop/login1", Manager(seen.clone()))
            .serve_at(SESSION_PATH, Session { locked: false });
        if notifications {
            b = b.name("org.freedesktop.Notifications").serve_at(
                "/org/freedesktop/Notifications",
                Notifications(seen.clone(), 0),
            );
        }
        let conn = b.build().await.expect("the fake login1 on the test bus");
        FakeLogin1 { conn, seen }
    }

    /// Locks or unlocks the session: `LockedHint` and its `PropertiesChanged`.
    pub async fn set_locked(&self, locked: bool) {
        let iface = self
            .conn
            .object_server()
            .interface::<_, Session>(SESSION_PATH)
            .await
            .expect("the session object");
        iface.get_mut().await.locked = locked;
        iface
            .get()
            .await
            .locked_hint_changed(iface.signal_emitter())
            .await
            .expect("PropertiesChanged");
    }

    /// Emits `PrepareForSleep(start)`.
    pub async fn prepare_for_sleep(&self, start: bool) {
        let e = SignalEmitter::new(&self.conn, "/org/freedesktop/login1").expect("an emitter");
        Manager::prepare_for_sleep(&e, start)
            .await
            .expect("PrepareForSleep");
    }

    /// The inhibitors handed out (`what|who|mode`), each with whether
    /// custody still holds it (its pipe's write end is open).
    pub fn inhibitors(&self) -> Vec<(String, bool)> {
        let seen = self.seen.lock().unwrap();
        seen.inhibitors
            .iter()
            .map(|(k, r)| (k.clone(), still_held(r)))
            .collect()
    }

    /// Waits until `f` holds for the inhibitors, at most `wait`.
    pub async fn wait_inhibitors(&self, wait: Duration, f: impl Fn(&[(String, bool)]) -> bool) {
        let end = Instant::now() + wait;
        loop {
            let now = self.inhibitors();
            if f(&now) {
                return;
            }
            assert!(Instant::now() < end, "inhibitors stayed {now:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The notifications asked for so far.
    pub fn notes(&self) -> Vec<Note> {
        self.seen.lock().unwrap().notes.clone()
    }
}

/// Whether a pipe's write end is still open somewhere: no hang-up on the
/// read end.
fn still_held(r: &OwnedFd) -> bool {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let mut fds = [PollFd::new(r.as_fd(), PollFlags::POLLIN)];
    match poll(&mut fds, PollTimeout::ZERO) {
        Ok(0) => true,
        Ok(_) => !fds[0]
            .revents()
            .is_some_and(|e| e.contains(PollFlags::POLLHUP)),
        Err(_) => false,
    }
}

struct ScreenSaver(bool);

#[zbus::interface(name = "org.freedesktop.ScreenSaver")]
impl ScreenSaver {
    fn get_active(&self) -> bool {
        self.0
    }

    #[zbus(signal)]
    async fn active_changed(emitter: &SignalEmitter<'_>, active: bool) -> zbus::Result<()>;
}

/// The desktop's screensaver (`org.freedesktop.ScreenSaver`: `GetActive`,
/// `ActiveChanged`), for a session where login1 has nothing to say.
pub struct FakeScreenSaver {
    conn: zbus::Connection,
}

impl FakeScreenSaver {
    /// Serves it on the bus at `address`, inactive.
    pub async fn serve(address: &str) -> FakeScreenSaver {
        let conn = zbus::connection::Builder::address(address)
            .name("org.freedesktop.ScreenSaver")
            .serve_at("/org/freedesktop/ScreenSaver", ScreenSaver(false))
            .build()
            .await
            .expect("the fake screensaver on the test bus");
        FakeScreenSaver { conn }
    }

    /// Activates (locks) or deactivates it: `ActiveChanged`.
    pub async fn set_active(&self, active: bool) {
        let iface = self
            .conn
            .object_server()
            .interface::<_, ScreenSaver>("/org/freedesktop/ScreenSaver")
            .await
            .expect("the screensaver object");
        iface.get_mut().await.0 = active;
        ScreenSaver::active_changed(iface.signal_emitter(), active)
            .await
            .expect("ActiveChanged");
    }
}

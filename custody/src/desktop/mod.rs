//! The desktop approver of the custody service: the tray icon, the
//! notifications, the private channel to the UI process and the UI process
//! itself. The windows never run in this process (see docs/ui-channel.md):
//! this module only tells a separate, keyless UI what to show, and checks
//! every call that UI makes.
//!
//! | module | what it is |
//! |---|---|
//! | [`events`] | what the service tells the UI (shared by everything here) |
//! | [`hub`] | "tell every UI": the broadcast the channel connections subscribe to |
//! | [`channel`] | the UI channel: socket, peer check, framing, dispatch |
//! | [`permissions`] | which window may make which call; the arming of windows that sign |
//! | [`calls`] | what each call does (status, reviews, grant form, audit, keys, settings) |
//! | [`daemon`] | the service's life: start, hand over to a running one, stop, restart |
//! | [`in_flight`] | the decisions being carried out: Quit and Restart wait for them or refuse |
//! | [`service`] | the running service: engine, socket, settings, shared state |
//! | [`settings`] | the desktop's saved settings |
//! | [`loosening`] | which settings changes loosen custody (and so need OS authentication) |
//! | [`views`] | keys, caveats and audit rows as the windows show them |
//! | [`autostart`] | start at login (an XDG autostart entry) |
//! | [`tray`] | the StatusNotifierItem tray icon and menu ([`badge`]: its count) |
//! | [`notify`] | desktop notifications with their actions |
//! | [`ui_process`] | opens windows: over the channel, or by starting the UI |
//! | [`approver`] | [`crate::approver::Approver`] for the desktop, tying the above together |

pub mod approver;
pub mod autostart;
pub mod badge;
pub mod calls;
pub mod channel;
pub mod daemon;
pub mod events;
pub mod hub;
pub mod in_flight;
pub mod loosening;
pub mod notify;
pub mod permissions;
pub mod service;
pub mod settings;
mod short_grants;
pub mod tray;
pub mod ui_process;
pub mod views;

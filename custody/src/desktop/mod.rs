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
//! | `channel` | the UI channel: socket, peer check, framing, dispatch |
//! | `permissions` | which window may make which call |
//! | `calls` | what each call does (status, reviews, grant form, audit, keys, settings) |
//! | `settings` | the desktop's saved settings |
//! | `tray` | the StatusNotifierItem tray icon and menu |
//! | `notify` | desktop notifications with their actions |
//! | `ui_process` | starts the UI process when a window is needed |
//! | `approver` | [`crate::approver::Approver`] for the desktop, tying the above together |

pub mod events;
pub mod hub;

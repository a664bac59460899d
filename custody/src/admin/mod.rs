//! What the human administers in custody, done once for every way in: the
//! app's calls, the `parley` command and the daemon's first start call these
//! functions rather than the key store or the audit log directly, so a key
//! change is recorded the same way whoever made it, and the app and the
//! command list and export the same things.
//!
//! | module | what |
//! |---|---|
//! | [`keys`] | principal keys created, imported and deleted, each with its audit row |
//! | [`agents`] | the agents the human has dealt with |
//! | [`export`] | the audit log as CSV or JSON Lines, to a writer or a new private file |
//!
//! Errors are `thiserror` enums whose messages say what to do; the app turns
//! them into `{code, message}` (`crate::desktop::calls::CallError`), the
//! command into its exit status.

pub mod agents;
pub mod export;
pub mod keys;

pub use agents::{known_agents, KnownAgent};
pub use export::{default_export_dir, export_to_new_file, ExportError, ExportFormat};
pub use keys::{
    create_key, delete_key, import_key, Confirmed, KeyChange, KeyChangeError, KeyLog, Unrecorded,
};

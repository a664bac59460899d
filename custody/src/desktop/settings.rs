//! The app's settings: `settings.json` in the custody data directory
//! (mode 0600, written atomically). The peer policy and the limits are read
//! once, when the custody service starts (the engine and the socket are built
//! from them), so changing them needs a restart of the socket: [`Settings::restart_needed`]
//! names which fields. Agent labels are the human's own names for agent keys
//! and apply at once.

use crate::stepup::StepUpPolicy;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The file name inside the data directory.
pub const FILE: &str = "settings.json";

/// Every setting. Unknown fields in the file are refused, so a typo is an
/// error the user sees rather than a setting silently not applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Settings {
    /// The group whose members (agents running as other OS users) may connect.
    pub agents_group: Option<String>,
    /// Further users allowed to connect: user names or numeric uids.
    pub extra_users: Vec<String>,
    /// The socket path (empty: the default; `--socket` and
    /// `$PARLEY_CUSTODY_SOCKET` take precedence).
    pub socket_path: Option<String>,
    /// A consent may be asked for a proposal expiring at most this far ahead (seconds).
    pub max_consent_horizon_secs: i64,
    /// A grant expires at most this long after it is issued (seconds).
    pub max_grant_lifetime_secs: i64,
    /// Pending requests in total.
    pub queue_size: usize,
    /// New requests per minute from one OS user.
    pub rate_per_minute: u32,
    /// Agent labels an earlier version kept here (`ed25519:…` → label): moved
    /// into custody's own store at start ([`crate::audit`]), then empty.
    pub agent_labels: BTreeMap<String, String>,
    /// Which approvals need OS authentication (polkit) before signing.
    pub step_up: StepUpPolicy,
    /// Whether the home window has offered start-at-login (it asks once;
    /// Settings can change it later). The entry itself is the truth of
    /// whether the app starts at login (crate::autostart).
    pub autostart_offered: bool,
    /// End every approve-for-a-while grant when the session locks (the
    /// lock watcher calls [`crate::engine::Engine::end_short_grants`]).
    pub end_short_grants_on_lock: bool,
    /// When notifications leave out what is asked (amount, service, the
    /// agent's name): while the screen is locked (default), or always.
    pub hide_notification_details: HideDetails,
}

/// "Hide details in notifications": a notification then says only that an
/// agent asks, never what or how much, so a locked screen shows nothing of
/// it to whoever walks by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum HideDetails {
    /// While the screen is locked.
    #[default]
    WhenLocked,
    /// Always.
    Always,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            agents_group: None,
            extra_users: Vec::new(),
            socket_path: None,
            max_consent_horizon_secs: 86_400,
            max_grant_lifetime_secs: 7 * 86_400,
            queue_size: 64,
            rate_per_minute: 30,
            agent_labels: BTreeMap::new(),
            step_up: StepUpPolicy::default(),
            autostart_offered: false,
            end_short_grants_on_lock: true,
            hide_notification_details: HideDetails::default(),
        }
    }
}

/// A setting that cannot be used, named for the form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{field}: {message}")]
pub struct Invalid {
    /// The field's name in the JSON.
    pub field: &'static str,
    /// What to change.
    pub message: String,
}

fn invalid(field: &'static str, message: impl Into<String>) -> Invalid {
    Invalid {
        field,
        message: message.into(),
    }
}

/// Why the settings file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// Reading or writing failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid settings JSON.
    #[error("{path} is not valid settings ({reason}); fix or delete it (defaults are in use until then)")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        reason: String,
    },
    /// A value is out of range.
    #[error(transparent)]
    Invalid(#[from] Invalid),
}

/// A user-or-group name as the OS databases accept it (POSIX portable names).
fn is_os_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 32
        && !s.starts_with('-')
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

impl Settings {
    /// Checks every value (the form shows the first problem next to its field).
    pub fn validate(&self) -> Result<(), Invalid> {
        if let Some(g) = &self.agents_group {
            if !is_os_name(g) {
                return Err(invalid(
                    "agents_group",
                    "a group name: letters, digits, '_', '-', '.', at most 32 characters",
                ));
            }
        }
        if self.extra_users.len() > 64 {
            return Err(invalid("extra_users", "at most 64 users"));
        }
        for u in &self.extra_users {
            if !is_os_name(u) {
                return Err(invalid(
                    "extra_users",
                    format!(
                        "{:?} is not a user name or uid",
                        u.chars().take(40).collect::<String>()
                    ),
                ));
            }
        }
        if let Some(p) = &self.socket_path {
            if !p.is_empty() && !Path::new(p).is_absolute() {
                return Err(invalid("socket_path", "the socket path must be absolute"));
            }
            if p.len() > 107 {
                return Err(invalid(
                    "socket_path",
                    "at most 107 bytes (the platform's limit for socket paths)",
                ));
            }
        }
        if !(60..=7 * 86_400).contains(&self.max_consent_horizon_secs) {
            return Err(invalid(
                "max_consent_horizon_secs",
                "between 1 minute and 7 days",
            ));
        }
        if !(60..=365 * 86_400).contains(&self.max_grant_lifetime_secs) {
            return Err(invalid(
                "max_grant_lifetime_secs",
                "between 1 minute and 365 days",
            ));
        }
        if !(1..=1024).contains(&self.queue_size) {
            return Err(invalid("queue_size", "between 1 and 1024"));
        }
        if !(1..=600).contains(&self.rate_per_minute) {
            return Err(invalid("rate_per_minute", "between 1 and 600"));
        }
        if self.agent_labels.len() > 1024 {
            return Err(invalid("agent_labels", "at most 1024 labels"));
        }
        for (key, label) in &self.agent_labels {
            check_agent_label(key, label)?;
        }
        if let StepUpPolicy::Above { amount, currency } = &self.step_up {
            if *amount <= 0 {
                return Err(invalid("step_up", "the amount must be more than zero"));
            }
            if currency.len() != 3 || !currency.bytes().all(|b| b.is_ascii_uppercase()) {
                return Err(invalid(
                    "step_up",
                    "the currency is three capital letters, like USD",
                ));
            }
        }
        Ok(())
    }

    /// The fields whose change takes effect only when the socket restarts.
    pub fn restart_needed(&self, running: &Settings) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.agents_group != running.agents_group {
            v.push("agents_group");
        }
        if self.extra_users != running.extra_users {
            v.push("extra_users");
        }
        if self.socket_path.as_deref().filter(|s| !s.is_empty())
            != running.socket_path.as_deref().filter(|s| !s.is_empty())
        {
            v.push("socket_path");
        }
        if self.max_consent_horizon_secs != running.max_consent_horizon_secs {
            v.push("max_consent_horizon_secs");
        }
        if self.max_grant_lifetime_secs != running.max_grant_lifetime_secs {
            v.push("max_grant_lifetime_secs");
        }
        if self.queue_size != running.queue_size {
            v.push("queue_size");
        }
        if self.rate_per_minute != running.rate_per_minute {
            v.push("rate_per_minute");
        }
        if self.step_up != running.step_up {
            v.push("step_up");
        }
        v
    }

    /// Reads `dir/settings.json`; a missing file is the defaults.
    pub fn load(dir: &Path) -> Result<Settings, SettingsError> {
        let path = dir.join(FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Settings::default()),
            Err(source) => return Err(SettingsError::Io { path, source }),
        };
        if text.len() > 1 << 20 {
            return Err(SettingsError::Parse {
                path,
                reason: "larger than 1 MiB".into(),
            });
        }
        let s: Settings = serde_json::from_str(&text).map_err(|e| SettingsError::Parse {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        s.validate()?;
        Ok(s)
    }

    /// Writes `dir/settings.json` (0600) through a temporary file and a rename,
    /// so a crash leaves the old or the new file, never half of one.
    pub fn save(&self, dir: &Path) -> Result<(), SettingsError> {
        self.validate()?;
        let path = dir.join(FILE);
        let tmp = dir.join(format!("{FILE}.tmp"));
        let io = |source| SettingsError::Io {
            path: path.clone(),
            source,
        };
        let text = serde_json::to_string_pretty(self).map_err(|e| SettingsError::Parse {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        let _ = std::fs::remove_file(&tmp);
        {
            use std::io::Write;
            let mut f = crate::paths::create_private_file(&tmp).map_err(io)?;
            f.write_all(text.as_bytes()).map_err(io)?;
            f.write_all(b"\n").map_err(io)?;
            f.sync_all().map_err(io)?;
        }
        std::fs::rename(&tmp, &path).map_err(io)
    }
}

/// An agent label must name a well-formed key and be short visible text
/// (custody's own rule, [`crate::audit::check_label`]). Labels are
/// kept by custody now; this checks the ones an earlier version saved here.
pub fn check_agent_label(key: &str, label: &str) -> Result<(), Invalid> {
    if key.parse::<parley_core::PublicKey>().is_err() {
        return Err(invalid(
            "agent_labels",
            "an agent label must belong to an ed25519: key",
        ));
    }
    crate::audit::check_label(label).map_err(|e| invalid("agent_labels", e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "ed25519:gTl3Dqh9F19Wo1Rmw0x-zMuNipG07jeiXfYPW4_Js5Q";

    #[test]
    fn defaults_are_valid_and_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Settings::load(dir.path()).unwrap(), Settings::default());
        let mut s = Settings {
            agents_group: Some("parley-agents".into()),
            extra_users: vec!["agent".into(), "1001".into()],
            ..Default::default()
        };
        s.agent_labels.insert(KEY.into(), "shopping bot".into());
        s.save(dir.path()).unwrap();
        assert_eq!(Settings::load(dir.path()).unwrap(), s);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn out_of_range_and_unknown_fields_are_refused() {
        let s = Settings {
            queue_size: 0,
            ..Default::default()
        };
        assert_eq!(s.validate().unwrap_err().field, "queue_size");
        let s = Settings {
            agents_group: Some("bad group".into()),
            ..Default::default()
        };
        assert_eq!(s.validate().unwrap_err().field, "agents_group");
        let s = Settings {
            socket_path: Some("relative.sock".into()),
            ..Default::default()
        };
        assert_eq!(s.validate().unwrap_err().field, "socket_path");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(FILE), r#"{"queue_sise": 3}"#).unwrap();
        assert!(matches!(
            Settings::load(dir.path()),
            Err(SettingsError::Parse { .. })
        ));
        std::fs::write(dir.path().join(FILE), r#"{"rate_per_minute": 0}"#).unwrap();
        assert!(matches!(
            Settings::load(dir.path()),
            Err(SettingsError::Invalid(_))
        ));
    }

    #[test]
    fn agent_labels_are_checked() {
        assert!(check_agent_label(KEY, "shopping bot").is_ok());
        assert!(check_agent_label("ed25519:nope", "x").is_err());
        assert!(check_agent_label(KEY, " ").is_err());
        assert!(check_agent_label(KEY, "a\u{202e}b").is_err());
        assert!(check_agent_label(KEY, "a\u{200b}b").is_err());
        assert!(check_agent_label(KEY, &"x".repeat(65)).is_err());
    }

    #[test]
    fn which_changes_need_a_restart() {
        let running = Settings::default();
        let mut s = running.clone();
        s.agent_labels.insert(KEY.into(), "bot".into());
        assert!(
            s.restart_needed(&running).is_empty(),
            "labels apply at once"
        );
        s.queue_size = 10;
        s.agents_group = Some("agents".into());
        assert_eq!(s.restart_needed(&running), ["agents_group", "queue_size"]);
        let mut empty = running.clone();
        empty.socket_path = Some(String::new());
        assert!(empty.restart_needed(&running).is_empty());
    }
}

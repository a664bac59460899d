//! Start at login, as the human opts in: an XDG autostart entry
//! (`$XDG_CONFIG_HOME/autostart/org.parley.custody.desktop`, the freedesktop
//! Desktop Application Autostart spec) that starts the app hidden in the
//! tray, so an agent that asks after login reaches a custody that is there.
//!
//! Written here rather than through `auto-launch` (what
//! `tauri-plugin-autostart` uses): that crate ignores `$XDG_CONFIG_HOME`,
//! writes the executable path unquoted into `Exec=` and follows a symlink
//! planted at the entry's path. This module is the few lines the spec needs:
//! it refuses a path `Exec=` cannot carry without quoting, and replaces the
//! entry atomically (a new file renamed over it, never written through a link).

use std::io::Write;
use std::path::{Path, PathBuf};

/// The entry's file name: the app's identifier, as desktop files are named.
pub const ENTRY_NAME: &str = "org.parley.custody.desktop";

/// What the entry runs with: no window, the tray only.
pub const HIDDEN_FLAG: &str = "--hidden";

/// Why start-at-login could not be read or changed.
#[derive(Debug, thiserror::Error)]
pub enum AutostartError {
    /// Neither `$XDG_CONFIG_HOME` nor `$HOME` says where the user's config is.
    #[error("cannot tell where your configuration lives: set HOME (or XDG_CONFIG_HOME)")]
    NoConfigDir,
    /// The app's own path could not be read.
    #[error("cannot tell where Parley Custody is installed: {0}")]
    NoExecutable(std::io::Error),
    /// The path has characters the entry's `Exec=` line would have to quote.
    #[error("Parley Custody runs from {0}, a path an autostart entry cannot name safely (only letters, digits and / . _ - + are allowed): install it (the .deb puts it in /usr/bin) and try again")]
    UnsafePath(String),
    /// Writing or removing the entry failed.
    #[error("could not change {path}: {source}")]
    Io {
        /// The entry or its directory.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
}

/// The autostart entry of one user for one installed app.
#[derive(Debug, Clone)]
pub struct Autostart {
    dir: PathBuf,
    exe: PathBuf,
}

impl Autostart {
    /// The entry for this user and the app installed next to this service.
    pub fn for_this_app() -> Result<Autostart, AutostartError> {
        let config = std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| {
                std::env::var_os("HOME")
                    .map(PathBuf::from)
                    .filter(|p| p.is_absolute())
                    .map(|h| h.join(".config"))
            })
            .ok_or(AutostartError::NoConfigDir)?;
        // The entry starts the app (the UI binary), which starts this
        // service if it is not running and, with `--hidden`, opens nothing.
        let exe = super::ui_process::app_binary().map_err(AutostartError::NoExecutable)?;
        Ok(Autostart::in_config_dir(&config, &exe))
    }

    /// The entry under a given config directory (tests; other profiles).
    pub fn in_config_dir(config: &Path, exe: &Path) -> Autostart {
        Autostart {
            dir: config.join("autostart"),
            exe: exe.to_path_buf(),
        }
    }

    /// Where the entry is.
    pub fn path(&self) -> PathBuf {
        self.dir.join(ENTRY_NAME)
    }

    /// Whether the app starts at login: the entry exists, runs this
    /// binary, and is not switched off (`Hidden=true`, as desktop settings
    /// tools do to disable an entry without deleting it).
    pub fn is_enabled(&self) -> bool {
        let Ok(text) = std::fs::read_to_string(self.path()) else {
            return false;
        };
        let Ok(exec) = exec_line(&self.exe) else {
            return false;
        };
        let mut runs_us = false;
        for line in text.lines() {
            let line = line.trim();
            if line == "Hidden=true" || line == "X-GNOME-Autostart-enabled=false" {
                return false;
            }
            if line.strip_prefix("Exec=") == Some(exec.as_str()) {
                runs_us = true;
            }
        }
        runs_us
    }

    /// Writes the entry (replacing an older one atomically).
    pub fn enable(&self) -> Result<(), AutostartError> {
        let text = entry_text(&self.exe)?;
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| AutostartError::Io { path, source }
        };
        std::fs::create_dir_all(&self.dir).map_err(io(&self.dir))?;
        let tmp = self
            .dir
            .join(format!(".{ENTRY_NAME}.{}.tmp", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(io(&tmp))?;
        let written = file
            .write_all(text.as_bytes())
            .and_then(|_| file.sync_all());
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(io(&tmp)(e));
        }
        std::fs::rename(&tmp, self.path()).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            io(&self.path())(e)
        })
    }

    /// Removes the entry; not having one is not an error.
    pub fn disable(&self) -> Result<(), AutostartError> {
        match std::fs::remove_file(self.path()) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(AutostartError::Io {
                path: self.path(),
                source: e,
            }),
        }
    }
}

/// `Exec=`'s value: the binary and the hidden flag. Only paths that need no
/// quoting under the Desktop Entry spec are accepted.
fn exec_line(exe: &Path) -> Result<String, AutostartError> {
    let text = exe.to_string_lossy();
    let plain = exe.is_absolute()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+".contains(c));
    if !plain {
        return Err(AutostartError::UnsafePath(crate::display::bounded(
            &text, 200,
        )));
    }
    Ok(format!("{text} {HIDDEN_FLAG}"))
}

fn entry_text(exe: &Path) -> Result<String, AutostartError> {
    Ok(format!(
        "[Desktop Entry]\n\
         Type=Application\n\
         Name=Parley Custody\n\
         Comment=Waits in the tray for your agents' requests; signs only what you approve\n\
         Exec={}\n\
         Icon=parley-custody\n\
         Terminal=false\n\
         NoDisplay=true\n\
         X-GNOME-Autostart-enabled=true\n",
        exec_line(exe)?
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(dir: &Path) -> Autostart {
        Autostart::in_config_dir(dir, Path::new("/usr/bin/parley-custody"))
    }

    #[test]
    fn enable_writes_an_entry_that_starts_the_app_hidden() {
        let tmp = tempfile::tempdir().unwrap();
        let a = entry(tmp.path());
        assert!(!a.is_enabled());
        a.enable().unwrap();
        assert!(a.is_enabled());
        let text = std::fs::read_to_string(tmp.path().join("autostart").join(ENTRY_NAME)).unwrap();
        assert!(text.starts_with("[Desktop Entry]\n"), "{text}");
        assert!(
            text.contains("\nExec=/usr/bin/parley-custody --hidden\n"),
            "{text}"
        );
        assert!(text.contains("\nType=Application\n"), "{text}");
        a.disable().unwrap();
        assert!(!a.is_enabled());
        a.disable().unwrap();
    }

    #[test]
    fn an_entry_switched_off_or_for_another_binary_is_not_enabled() {
        let tmp = tempfile::tempdir().unwrap();
        let a = entry(tmp.path());
        a.enable().unwrap();
        let path = a.path();
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, format!("{text}Hidden=true\n")).unwrap();
        assert!(!a.is_enabled());
        let other = Autostart::in_config_dir(tmp.path(), Path::new("/opt/old/parley-custody"));
        a.enable().unwrap();
        assert!(!other.is_enabled());
    }

    #[test]
    fn enable_replaces_a_planted_symlink_instead_of_writing_through_it() {
        let tmp = tempfile::tempdir().unwrap();
        let a = entry(tmp.path());
        std::fs::create_dir_all(tmp.path().join("autostart")).unwrap();
        let victim = tmp.path().join("victim");
        std::fs::write(&victim, "keep me").unwrap();
        std::os::unix::fs::symlink(&victim, a.path()).unwrap();
        a.enable().unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
        assert!(!std::fs::symlink_metadata(a.path())
            .unwrap()
            .file_type()
            .is_symlink());
        assert!(a.is_enabled());
    }

    #[test]
    fn a_path_exec_would_need_quoted_is_refused_with_advice() {
        let tmp = tempfile::tempdir().unwrap();
        for bad in [
            "/home/a b/parley-custody",
            "/tmp/x$(id)",
            "relative/parley-custody",
        ] {
            let a = Autostart::in_config_dir(tmp.path(), Path::new(bad));
            let e = a.enable().unwrap_err();
            assert!(matches!(e, AutostartError::UnsafePath(_)), "{bad}: {e}");
            assert!(e.to_string().contains("/usr/bin"), "{e}");
        }
        assert!(!tmp.path().join("autostart").join(ENTRY_NAME).exists());
    }
}

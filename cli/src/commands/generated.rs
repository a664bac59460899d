//! `parley completions` and `parley manpages`: documentation generated from
//! the command-line definitions themselves (clap_complete, clap_mangen), so
//! the shell completions and man pages can never drift from the flags.

use super::Report;
use crate::cli::Cli;
use crate::error::CliError;
use clap::CommandFactory;
use serde::Serialize;
use std::fmt;
use std::path::{Path, PathBuf};

/// What `manpages` wrote.
#[derive(Serialize)]
struct Written {
    pages: Vec<PathBuf>,
}

impl fmt::Display for Written {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.pages.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{}", p.display())?;
        }
        Ok(())
    }
}

/// Writes the completion script to stdout.
pub fn completions(shell: clap_complete::Shell) -> Result<Report, CliError> {
    use std::io::Write;
    let mut cmd = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "parley", &mut script);
    let mut out = std::io::stdout().lock();
    match out.write_all(&script).and_then(|()| out.flush()) {
        Ok(()) => Ok(Report::silent(0)),
        // A reader that stopped early (`| head`) is not our failure.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(Report::silent(0)),
        Err(e) => Err(CliError::bad(format!(
            "cannot write the completion script: {e}"
        ))),
    }
}

/// Writes `parley.1` and one page per subcommand (`parley-custody-keys.1`, …) into `dir`.
pub fn manpages(dir: &Path) -> Result<Report, CliError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| CliError::bad(format!("cannot create {}: {e}", dir.display())))?;
    let mut pages = Vec::new();
    let mut cmd = Cli::command();
    cmd.build();
    write_page(&cmd, "parley", dir, &mut pages)?;
    Ok(Report::new(&Written { pages }, 0))
}

fn write_page(
    cmd: &clap::Command,
    name: &str,
    dir: &Path,
    pages: &mut Vec<PathBuf>,
) -> Result<(), CliError> {
    if cmd.is_hide_set() {
        return Ok(());
    }
    let path = dir.join(format!("{name}.1"));
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .title(name)
        .render(&mut out)
        .map_err(|e| CliError::bad(format!("cannot render {name}.1: {e}")))?;
    std::fs::write(&path, out)
        .map_err(|e| CliError::bad(format!("cannot write {}: {e}", path.display())))?;
    pages.push(path);
    for sub in cmd.get_subcommands() {
        if sub.get_name() == "help" {
            continue;
        }
        write_page(sub, &format!("{name}-{}", sub.get_name()), dir, pages)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_visible_subcommand_gets_a_page_and_hidden_ones_none() {
        let dir = tempfile::tempdir().unwrap();
        let r = manpages(dir.path()).unwrap();
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        for want in [
            "parley.1",
            "parley-lens.1",
            "parley-custody-keys-create.1",
            "parley-completions.1",
        ] {
            assert!(
                names.iter().any(|n| n == want),
                "{want} missing in {names:?}"
            );
        }
        assert!(!names.iter().any(|n| n.contains("manpages")), "{names:?}");
        let top = std::fs::read_to_string(dir.path().join("parley.1")).unwrap();
        assert!(top.contains(".TH parley 1"), "{top}");
        assert!(
            top.contains("approve"),
            "the top page lists the subcommands"
        );
        assert_eq!(r.exit_code(), 0);
    }

    /// The man pages and completions are only as good as the help text:
    /// every flag and argument of every command must have some.
    #[test]
    fn every_argument_has_help_text() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for a in cmd.get_arguments() {
                let id = a.get_id().as_str();
                if id != "help" && id != "version" && a.get_help().is_none() {
                    missing.push(format!("{path} {id}"));
                }
            }
            for sub in cmd.get_subcommands() {
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut cmd = Cli::command();
        cmd.build();
        let mut missing = Vec::new();
        walk(&cmd, "parley", &mut missing);
        assert!(missing.is_empty(), "no help text: {missing:?}");
        let dir = tempfile::tempdir().unwrap();
        manpages(dir.path()).unwrap();
        let verify = std::fs::read_to_string(dir.path().join("parley-verify.1")).unwrap();
        for flag in ["uses", "used", "dialect"] {
            assert!(verify.contains(flag), "{flag} missing in parley-verify.1");
        }
        let grant = std::fs::read_to_string(dir.path().join("parley-grant.1")).unwrap();
        assert!(grant.contains("each") && grant.contains("total"), "{grant}");
    }
}

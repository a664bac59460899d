//! `parley-playground mcp-jobs` and `mcp-client`.

use super::mcp::{run_client, ClientScript, JobsMcp, ServerAt};
use super::policy::{read_tightening, Tightening};
use super::server::{JobServer, Setup};
use super::store::{default_root, FileStore};
use crate::agent::key;
use crate::cli::{McpClientArgs, McpJobsArgs};
use crate::clock::SystemClock;
use crate::commands::{trusted, CommandError};
use parley_core::PublicKey;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

fn jobs_err(e: impl std::fmt::Display) -> CommandError {
    CommandError::Jobs(e.to_string())
}

/// `$YEA_HOME`, else `~/.yea`.
fn yea_home() -> Result<PathBuf, CommandError> {
    let get = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(h) = get("YEA_HOME") {
        return Ok(PathBuf::from(h));
    }
    get("HOME")
        .map(|h| PathBuf::from(h).join(".yea"))
        .ok_or_else(|| CommandError::Usage("HOME is not set: pass --key and --store".into()))
}

/// Refuses a pinned key file the server's user could change (SPEC-approval
/// §2): the file or a directory above it owned by this user, or writable by
/// anyone; and any file when running as root (root can write anything).
pub fn check_pinned(path: &Path) -> Result<(), String> {
    let me = fs::metadata("/proc/self")
        .map(|m| m.uid())
        .map_err(|e| format!("cannot tell which user this server runs as: {e}"))?;
    if me == 0 {
        return Err("the server runs as root, which can write any file: a pinned principal key proves nothing".into());
    }
    let full = fs::canonicalize(path).map_err(|e| format!("{}: {e}", path.display()))?;
    for p in full.ancestors() {
        let m = fs::metadata(p).map_err(|e| format!("{}: {e}", p.display()))?;
        let sticky_dir = m.is_dir() && m.mode() & 0o1000 != 0;
        if m.uid() == me || (m.mode() & 0o002 != 0 && !sticky_dir) {
            return Err(format!(
                "{} is owned or writable by this server's user, so an agent could swap the principal key",
                p.display()
            ));
        }
    }
    Ok(())
}

async fn principal(a: &McpJobsArgs) -> Result<PublicKey, CommandError> {
    let file = a
        .principal_pub
        .clone()
        .or_else(|| std::env::var_os("YEA_PRINCIPAL_PUB").map(PathBuf::from));
    if let Some(file) = file {
        if !a.principal_pub_unchecked {
            check_pinned(&file).map_err(|why| {
                CommandError::Usage(format!("refusing the principal key file: {why}"))
            })?;
        }
        let text = fs::read_to_string(&file)
            .map_err(|e| CommandError::Usage(format!("{}: {e}", file.display())))?;
        return text.trim().parse().map_err(|e| {
            CommandError::Usage(format!("{}: not a public key: {e}", file.display()))
        });
    }
    let keys = trusted(&[], a.custody_socket.as_deref()).await?;
    keys.into_iter()
        .next()
        .ok_or_else(|| CommandError::Usage("custody holds no principal".into()))
}

fn tightening(a: &McpJobsArgs) -> Result<Tightening, CommandError> {
    let path = match &a.policy_json {
        Some(p) => p.clone(),
        None => yea_home()?.join("policy.json"),
    };
    let value = read_policy_json(&path)?;
    let t = read_tightening(&value);
    for w in &t.warnings {
        eprintln!("mcp-jobs: {}: {w}", path.display());
    }
    Ok(t)
}

/// The most `policy.json` may hold.
const MAX_POLICY_JSON_BYTES: u64 = 64 * 1024;

/// The person's `policy.json`: `{}` only when there is none. A file that
/// cannot be read, is over [`MAX_POLICY_JSON_BYTES`] or is not JSON stops
/// the server: ignoring it would drop the person's deny list.
fn read_policy_json(path: &Path) -> Result<serde_json::Value, CommandError> {
    use std::io::Read;
    let refuse = |why: String| {
        CommandError::Usage(format!(
            "{}: {why}; fix or remove it (mcp-jobs does not start without the policy it holds)",
            path.display()
        ))
    };
    let file = match fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(serde_json::json!({})),
        Err(e) => return Err(refuse(e.to_string())),
    };
    let mut bytes = Vec::new();
    file.take(MAX_POLICY_JSON_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| refuse(e.to_string()))?;
    if bytes.len() as u64 > MAX_POLICY_JSON_BYTES {
        return Err(refuse(format!("over {MAX_POLICY_JSON_BYTES} bytes")));
    }
    serde_json::from_slice(&bytes).map_err(|e| refuse(format!("not valid JSON ({e})")))
}

/// `mcp-jobs`: serves MCP on stdio. Its stdout is the MCP channel, so
/// everything else goes to stderr.
pub async fn mcp_jobs(a: McpJobsArgs) -> Result<(), CommandError> {
    let key_path = match &a.key {
        Some(k) => k.clone(),
        None => yea_home()?.join("playground-jobs.key"),
    };
    let (key, made) = key::load_or_create(&key_path)?;
    if a.service_id {
        println!("{}", key.public());
        return Ok(());
    }
    let principal = principal(&a).await?;
    let policy_grant = match &a.policy {
        Some(p) => Some(
            fs::read_to_string(p)
                .map_err(|e| CommandError::Usage(format!("{}: {e}", p.display())))?
                .trim()
                .to_string(),
        ),
        None => None,
    };
    let store = match &a.store {
        Some(s) => s.clone(),
        None => default_root().map_err(jobs_err)?,
    };
    eprintln!(
        "mcp-jobs: service id {}{}; principal {principal}; {}; store {}",
        key.public(),
        if made { " (new key)" } else { "" },
        if policy_grant.is_some() {
            "a signed policy"
        } else {
            "no signed policy: every job asks"
        },
        store.display()
    );
    let server = JobServer::new(Setup {
        key,
        principal,
        policy_grant,
        tightening: tightening(&a)?,
        store: FileStore::new(store),
        clock: Arc::new(SystemClock),
    });
    JobsMcp::new(server).serve_stdio().await.map_err(jobs_err)
}

/// `mcp-client`: the scripted MCP client.
pub async fn mcp_client(a: McpClientArgs) -> Result<(), CommandError> {
    let server = if a.server.is_empty() {
        let me = std::env::current_exe().map_err(jobs_err)?;
        vec![me.display().to_string(), "mcp-jobs".into()]
    } else {
        a.server.clone()
    };
    let store = match &a.store {
        Some(s) => s.clone(),
        None => default_root().map_err(jobs_err)?,
    };
    let code_file = a.code_file.clone();
    run_client(ClientScript {
        server: ServerAt::Child(server),
        order: a.order,
        store,
        wait: Duration::from_secs(a.wait),
        within_policy: !a.no_policy,
        on_code: Box::new(move |code| {
            println!(
                "client: (the agent now tells the person) {}",
                super::approval_code::ask_line(code)
            );
            if let Some(file) = &code_file {
                match write_private(file, code) {
                    Ok(()) => println!(
                        "client: the code is also in {0}: parley approve \"$(cat {0})\"",
                        file.display()
                    ),
                    Err(e) => eprintln!("client: cannot write {}: {e}", file.display()),
                }
            }
        }),
    })
    .await
    .map(|_| ())
    .map_err(jobs_err)
}

/// Writes `text` to `path`, mode 0600, replacing what was there.
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let _ = fs::remove_file(path);
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_json_is_empty_only_when_missing() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("policy.json");
        assert_eq!(read_policy_json(&path).unwrap(), serde_json::json!({}));
        fs::write(&path, r#"{"deny": ["refund"]}"#).unwrap();
        assert_eq!(
            read_policy_json(&path).unwrap(),
            serde_json::json!({"deny": ["refund"]})
        );
        fs::write(&path, "{not json").unwrap();
        let err = read_policy_json(&path).unwrap_err().to_string();
        assert!(err.contains("not valid JSON"), "{err}");
        let big = format!("[{}0]", "0,".repeat(MAX_POLICY_JSON_BYTES as usize));
        fs::write(&path, big).unwrap();
        let err = read_policy_json(&path).unwrap_err().to_string();
        assert!(err.contains("over 65536 bytes"), "{err}");
        // Unreadable (here: a directory by that name) is refused too.
        let err = read_policy_json(tmp.path()).unwrap_err().to_string();
        assert!(err.contains("fix or remove it"), "{err}");
    }
}

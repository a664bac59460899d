//! The `parley-playground` binary: `serve` prints where it listens and
//! answers HELLO there; bad flags and a missing custody say what to do.

use parley_core::PublicKey;
use std::io::{BufRead, BufReader, Lines};
use std::net::TcpStream;
use std::process::{ChildStdout, Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_parley-playground");

/// The key the served services trust.
fn trusted() -> PublicKey {
    parley_core::SecretKey::from_seed(&zeroize::Zeroizing::new([5; 32])).public()
}

/// Kills the child it holds when dropped, so a failed assertion leaves no
/// server behind.
struct Reaper(std::process::Child);

impl Drop for Reaper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `parley-playground serve` with `flags`, both services on
/// ephemeral local ports, trusting `key`; returns the server (killed when
/// dropped) and the lines it prints.
fn serve(flags: &[&str], key: &PublicKey) -> (Reaper, Lines<BufReader<ChildStdout>>) {
    let mut child = Command::new(BIN)
        .arg("serve")
        .args(flags)
        .args(["--shop", "127.0.0.1:0", "--cal", "127.0.0.1:0", "--trust"])
        .arg(key.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    (Reaper(child), BufReader::new(stdout).lines())
}

#[test]
fn serve_prints_its_addresses_and_answers_there() {
    let key = trusted();
    let (_reaper, mut lines) = serve(&[], &key);
    let mut addrs = Vec::new();
    for _ in 0..3 {
        let line = lines.next().unwrap().unwrap();
        if let Some(addr) = line.split("parley://").nth(1) {
            addrs.push(addr.trim().to_string());
        } else {
            assert_eq!(line, format!("trusting grants from {key}"));
        }
    }
    let ids: Vec<String> = addrs
        .iter()
        .map(|a| {
            hello_in(a, "parley")["service"]["id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(ids, ["shop.example", "cal.example.com"]);
}

#[test]
fn bad_flags_and_a_missing_custody_say_what_to_do() {
    let out = Command::new(BIN)
        .args([
            "serve",
            "--shop",
            "127.0.0.1:0",
            "--cal",
            "127.0.0.1:0",
            "--trust",
            "ed25519:nope",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--trust ed25519:nope"));

    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["agent", "--custody-socket"])
        .arg(dir.path().join("no.sock"))
        .arg("--agent-key")
        .arg(dir.path().join("agent.key"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("custody daemon is not running"), "{err}");
    assert!(
        dir.path().join("agent.key").exists(),
        "the agent key was made"
    );
}

/// HELLO in `marker`'s dialect (`parley` or `yea`), the first reply line.
fn hello_in(addr: &str, marker: &str) -> serde_json::Value {
    use std::io::Write;
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    writeln!(s, "{{\"{marker}\":1,\"id\":\"1\",\"verb\":\"HELLO\"}}").unwrap();
    let mut line = String::new();
    BufReader::new(s).read_line(&mut line).unwrap();
    serde_json::from_str(&line).unwrap()
}

#[test]
fn serve_dialect_yea_prints_yea_addresses_and_answers_only_yea() {
    let key = trusted();
    let (_reaper, mut lines) = serve(&["--dialect", "yea"], &key);
    let mut addrs = Vec::new();
    let mut said = Vec::new();
    for _ in 0..4 {
        let line = lines.next().unwrap().unwrap();
        assert!(!line.contains("parley://"), "{line}");
        match line.split("yea://").nth(1) {
            Some(addr) => addrs.push(addr.trim().to_string()),
            None => said.push(line),
        }
    }
    assert_eq!(
        said,
        [
            "speaking YEA v1".to_string(),
            format!("trusting grants from {key}")
        ]
    );
    let brief = hello_in(&addrs[0], "yea");
    assert_eq!(
        (&brief["yea"], &brief["kind"]),
        (&1.into(), &"BRIEF".into())
    );
    assert_eq!(brief["service"]["id"], "shop.example");
    let refused = hello_in(&addrs[0], "parley");
    assert_eq!(refused["code"], "bad_frame", "{refused}");
}

#[test]
fn an_unknown_dialect_is_a_usage_error_that_names_the_choices() {
    let out = Command::new(BIN)
        .args(["demo", "--dialect", "yea2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("use parley or yea"), "{err}");
}

//! Who asks, as a process chain, over a real socket and a real process tree:
//! a shell (`sh`) starts a client (`python3`) that connects to custody; the
//! chain custody reads from the kernel's peer pid names the client, the
//! shell, and this test process, each with its executable, and says when a
//! link is no longer the process that asked.
//!
//! Needs `/usr/bin/python3` (as `ipc_peer.rs` does).
#![cfg(target_os = "linux")]

use parley_custody::ipc::peer::PeerPolicy;
use parley_custody::ipc::process_chain::MAX_DEPTH;
use parley_custody::ipc::socket::{BindOptions, ConnLimits, Listener, SocketPath};
use parley_custody::review::Requester;
use std::process::{Command, Stdio};
use std::time::Duration;

const PYTHON: &str = "/usr/bin/python3";

#[tokio::test]
async fn a_shell_that_starts_the_client_is_in_the_chain_with_this_test_above_it() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("c.sock");
    let listener = Listener::bind(BindOptions {
        path: SocketPath::explicit(&sock),
        policy: PeerPolicy::own_user_only(),
        limits: ConnLimits::default(),
    })
    .unwrap();
    // `; exit 0` keeps the shell from exec'ing the client: a real parent.
    let client = format!(
        "import socket, time\ns = socket.socket(socket.AF_UNIX)\ns.connect({:?})\ntime.sleep(30)\n",
        sock.display().to_string()
    );
    let mut shell = Command::new("/bin/sh")
        .arg("-c")
        .arg(format!("{PYTHON} -c \"$0\"; exit 0"))
        .arg(&client)
        .stdin(Stdio::null())
        .spawn()
        .expect("sh starts");
    let (_stream, peer) = tokio::time::timeout(Duration::from_secs(10), listener.accept())
        .await
        .expect("the client connects within 10 s")
        .expect("admitted");
    let links = &peer.chain.links;
    assert!(links.len() >= 3 && links.len() <= MAX_DEPTH, "{links:#?}");
    assert_eq!(Some(links[0].pid), peer.pid, "the chain starts at the peer");
    assert!(links[0].name.starts_with("python3"), "{links:#?}");
    let python = std::fs::canonicalize(PYTHON).unwrap();
    assert_eq!(links[0].exe.as_deref(), Some(python.as_path()));
    assert_eq!(links[1].pid, shell.id(), "then the shell that started it");
    assert_eq!(links[1].name, "sh");
    assert_eq!(links[2].pid, std::process::id(), "then this test");
    assert_eq!(
        links[2].exe.as_deref(),
        Some(
            std::fs::canonicalize(std::env::current_exe().unwrap())
                .unwrap()
                .as_path()
        )
    );
    assert!(links.iter().all(|l| l.same && l.pid > 1));
    // It ends after the session leader (and its parent), or at the bound.
    if let Some(i) = links.iter().position(|l| l.session_leader) {
        assert!(links.len() <= i + 2, "{links:#?}");
    }

    let shown = Requester::from(&peer);
    let expect = format!(
        "{} ({}) ← sh ({}) ← ",
        links[0].name,
        links[0].pid,
        shell.id()
    );
    assert!(
        shown.chain_line.starts_with(&expect),
        "{}",
        shown.chain_line
    );

    // The client exits: the chain, checked again, says so for that link.
    shell.kill().ok();
    let killed = Command::new("kill")
        .args(["-9", &links[0].pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let _ = shell.wait();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let again = peer.chain.rechecked();
        if !again.links[0].same {
            assert!(!again.links[1].same, "the shell is gone too");
            assert!(again.links[2].same, "this test still runs");
            let mut r = shown.clone();
            r.set_chain(&again);
            assert!(
                r.chain_line
                    .contains(&format!("({}, exited or replaced)", links[0].pid)),
                "{}",
                r.chain_line
            );
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the client never went away"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

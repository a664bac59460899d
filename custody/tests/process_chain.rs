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

fn file_name(p: &std::path::Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

fn listener(sock: &std::path::Path) -> Listener {
    Listener::bind(BindOptions {
        path: SocketPath::explicit(sock),
        policy: PeerPolicy::own_user_only(),
        limits: ConnLimits::default(),
    })
    .unwrap()
}

/// A real tree as agents run: a program with a name longer than the
/// kernel's 15-byte `comm` (a copy of bash) runs a bash script, which runs a
/// python3 script that connects. The chain names each by what it runs:
/// `python3.X client.py ← bash start.sh ← parley-agent-launcher-with-a-long-name`,
/// never `python3 ← bash ← parley-agent-la`.
#[tokio::test]
async fn each_link_is_named_by_what_it_runs_scripts_and_long_names_whole() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("c.sock");
    let listener = listener(&sock);
    let client = dir.path().join("client.py");
    std::fs::write(
        &client,
        "import socket, sys, time\ns = socket.socket(socket.AF_UNIX)\ns.connect(sys.argv[1])\ntime.sleep(30)\n",
    )
    .unwrap();
    let start = dir.path().join("start.sh");
    std::fs::write(
        &start,
        format!("{PYTHON} -u {} \"$1\"\nexit 0\n", client.display()),
    )
    .unwrap();
    let bash = std::fs::canonicalize("/bin/bash").unwrap();
    let launcher = dir.path().join("parley-agent-launcher-with-a-long-name");
    std::fs::copy(&bash, &launcher).unwrap();
    // `; exit 0` keeps the launcher from exec'ing bash: a real parent.
    let mut top = Command::new(&launcher)
        .arg("-c")
        .arg(format!(
            "{} {} \"$0\"; exit 0",
            bash.display(),
            start.display()
        ))
        .arg(&sock)
        .stdin(Stdio::null())
        .spawn()
        .expect("the launcher starts");
    let (_stream, peer) = tokio::time::timeout(Duration::from_secs(10), listener.accept())
        .await
        .expect("the client connects within 10 s")
        .expect("admitted");
    let links = &peer.chain.links;
    assert!(links.len() >= 4, "{links:#?}");
    let python = file_name(&std::fs::canonicalize(PYTHON).unwrap());
    assert_eq!(links[0].name, format!("{python} client.py"), "{links:#?}");
    assert_eq!(
        links[1].name,
        format!("{} start.sh", file_name(&bash)),
        "{links:#?}"
    );
    assert_eq!(links[2].pid, top.id());
    assert_eq!(links[2].name, "parley-agent-launcher-with-a-long-name");
    assert_eq!(links[2].comm, "parley-agent-la", "the kernel's name is cut");
    assert_eq!(links[3].pid, std::process::id(), "then this test");

    let shown = Requester::from(&peer);
    let expect = format!(
        "{python} client.py ({}) ← bash start.sh ({}) ← parley-agent-launcher-with-a-long-name ({}) ← ",
        links[0].pid,
        links[1].pid,
        top.id()
    );
    assert!(
        shown.chain_line.starts_with(&expect),
        "{}",
        shown.chain_line
    );
    assert!(
        !shown.chain_line.contains("parley-agent-la "),
        "{}",
        shown.chain_line
    );
    top.kill().ok();
    let _ = Command::new("kill")
        .args(["-9", &links[0].pid.to_string(), &links[1].pid.to_string()])
        .status();
    let _ = top.wait();
}

/// A name is shown through the display-safety rule: a script named with
/// control and bidi characters reaches the review escaped, not raw.
#[tokio::test]
async fn a_hostile_script_name_is_shown_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("c.sock");
    let listener = listener(&sock);
    let client = dir.path().join("ok\u{202e}yp.evil\x1b[31m.py");
    std::fs::write(
        &client,
        "import socket, sys, time\ns = socket.socket(socket.AF_UNIX)\ns.connect(sys.argv[1])\ntime.sleep(30)\n",
    )
    .unwrap();
    let mut child = Command::new(PYTHON)
        .arg(&client)
        .arg(&sock)
        .stdin(Stdio::null())
        .spawn()
        .expect("python3 starts");
    let (_stream, peer) = tokio::time::timeout(Duration::from_secs(10), listener.accept())
        .await
        .expect("the client connects within 10 s")
        .expect("admitted");
    assert!(
        peer.chain.links[0].name.contains('\u{202e}'),
        "stored as read"
    );
    let shown = Requester::from(&peer);
    let line = &shown.chain_line;
    assert!(
        !line.contains('\u{202e}') && !line.contains('\x1b'),
        "{line}"
    );
    assert!(line.contains("yp.evil"), "{line}");
    child.kill().ok();
    let _ = child.wait();
}

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
    let sh = file_name(&std::fs::canonicalize("/bin/sh").unwrap());
    assert_eq!(links[1].name, format!("{sh} -c"), "what runs, not `sh`");
    assert_eq!(links[1].comm, "sh");
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
        "{} ({}) ← {sh} -c ({}) ← ",
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

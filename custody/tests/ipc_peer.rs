//! Peer credentials, the peer policy, connection caps and socket setup, over
//! real sockets and real OS users.
//!
//! `another_os_user_is_refused_until_added_to_the_agents_group` needs root (it
//! creates the user `parley-test-other` and the group `parley-test-agents`)
//! and `/usr/bin/python3`. Without root it fails with a message saying so,
//! unless `PARLEY_SKIP_ROOT_TESTS=1` is set.
#![cfg(target_os = "linux")]

mod support;

use nix::unistd::{Gid, Uid};
use parley_custody::ipc::frame::{FrameReader, FrameWriter};
use parley_custody::ipc::peer::{PeerInfo, PeerPolicy, Refusal};
use parley_custody::ipc::socket::{
    self, BindOptions, ConnLimits, Listener, PathSource, SocketError, SocketPath, Stream,
};
use parley_custody::protocol::{Principal, Reply, Request};
use serde_json::Value;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

const OTHER_USER: &str = "parley-test-other";
const AGENTS_GROUP: &str = "parley-test-agents";
const PYTHON: &str = "/usr/bin/python3";

fn bind(path: PathBuf, policy: PeerPolicy, limits: ConnLimits) -> Result<Listener, SocketError> {
    Listener::bind(BindOptions {
        path: SocketPath::explicit(path),
        policy,
        limits,
    })
}

/// Runs the accept loop in a task; admitted connections arrive on the channel.
fn serve(listener: Listener) -> mpsc::UnboundedReceiver<(Stream, PeerInfo)> {
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok(conn) = listener.accept().await {
            if tx.send(conn).is_err() {
                break;
            }
        }
    });
    rx
}

/// Reads one line from a client connection.
async fn read_line(client: interprocess::local_socket::tokio::Stream) -> Option<Value> {
    let mut lines = BufReader::new(client).lines();
    let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
        .await
        .expect("a line within 10 s")
        .ok()??;
    serde_json::from_str(&line).ok()
}

#[tokio::test]
async fn kernel_credentials_name_this_very_process() {
    let dir = tempfile::tempdir().unwrap();
    let listener = bind(
        dir.path().join("c.sock"),
        PeerPolicy::own_user_only(),
        ConnLimits::default(),
    )
    .unwrap();
    let (client, accepted) = tokio::join!(socket::connect(listener.path()), listener.accept());
    let _client = client.unwrap();
    let (_stream, peer) = accepted.unwrap();
    assert_eq!(peer.uid, Uid::effective().as_raw());
    assert_eq!(peer.gid, Gid::effective().as_raw());
    assert_eq!(peer.pid, Some(std::process::id()));
    let exe = std::fs::canonicalize(std::env::current_exe().unwrap()).unwrap();
    assert_eq!(peer.exe.as_deref(), Some(exe.as_path()));
    let me = nix::unistd::User::from_uid(Uid::effective())
        .unwrap()
        .map(|u| u.name);
    assert_eq!(peer.user, me);
    assert!(peer.to_string().contains("(not verified)"));
}

#[test]
fn policy_refuses_a_different_uid() {
    let me = Uid::effective().as_raw();
    let stranger = PeerInfo {
        uid: me.wrapping_add(4242),
        gid: 4242,
        pid: Some(1),
        exe: Some("/usr/bin/agent".into()),
        user: Some("mallory".into()),
        chain: Default::default(),
    };
    let policy = PeerPolicy::own_user_only();
    match policy.allows(&stranger) {
        Err(Refusal::NotAllowed { uid, .. }) => assert_eq!(uid, stranger.uid),
        other => panic!("a different uid must be refused, got {other:?}"),
    }
    let mut listed = policy.clone();
    listed.extra_uids.push(stranger.uid);
    assert!(listed.allows(&stranger).is_ok());
    let own = PeerInfo {
        uid: me,
        ..stranger
    };
    assert!(policy.allows(&own).is_ok(), "custody's own user is allowed");
}

#[test]
fn unknown_agents_group_is_a_clear_error() {
    let err = PeerPolicy::new(Some("parley-no-such-group-xyz")).unwrap_err();
    assert!(err.to_string().contains("groupadd"), "{err}");
}

#[tokio::test]
async fn socket_without_group_is_owner_only() {
    let base = tempfile::tempdir().unwrap();
    let path = base.path().join("sub/custody.sock");
    let listener = bind(
        path.clone(),
        PeerPolicy::own_user_only(),
        ConnLimits::default(),
    )
    .unwrap();
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!(meta.mode() & 0o777, 0o600);
    let dir = std::fs::metadata(base.path().join("sub")).unwrap();
    assert_eq!(
        dir.mode() & 0o777,
        0o700,
        "a directory we create is ours only"
    );
    assert_eq!(dir.uid(), Uid::effective().as_raw());
    drop(listener);
    assert!(
        !path.exists(),
        "the socket file goes away with the listener"
    );
}

#[tokio::test]
async fn socket_with_agents_group_is_group_writable() {
    let base = tempfile::tempdir().unwrap();
    // Our own primary group stands in for the agents group: chown to it is
    // always permitted, so this part needs no root.
    let gid = Gid::effective().as_raw();
    let policy = PeerPolicy {
        agents_gid: Some(gid),
        ..PeerPolicy::own_user_only()
    };
    std::fs::set_permissions(base.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let path = base.path().join("custody.sock");
    let listener = Listener::bind(BindOptions {
        path: SocketPath {
            path: path.clone(),
            source: PathSource::Env,
        },
        policy,
        limits: ConnLimits::default(),
    })
    .unwrap();
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!(meta.mode() & 0o777, 0o660);
    assert_eq!(meta.gid(), gid);
    assert_eq!(meta.uid(), Uid::effective().as_raw());
    // Its directory is 0700: agents could not get through it.
    assert_eq!(listener.unreachable_for_agents(), Some(base.path()));
}

#[tokio::test]
async fn custody_directory_under_a_default_path_is_locked_down() {
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().join("parley-custody");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let sp = SocketPath {
        path: dir.join("custody.sock"),
        source: PathSource::XdgRuntime,
    };
    let _l = Listener::bind(BindOptions {
        path: sp,
        policy: PeerPolicy::own_user_only(),
        limits: ConnLimits::default(),
    })
    .unwrap();
    assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
}

#[tokio::test]
async fn symlinked_custody_directory_is_refused() {
    let base = tempfile::tempdir().unwrap();
    let elsewhere = base.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let dir = base.path().join("parley-custody-0");
    std::os::unix::fs::symlink(&elsewhere, &dir).unwrap();
    let err = Listener::bind(BindOptions {
        path: SocketPath {
            path: dir.join("custody.sock"),
            source: PathSource::Tmp,
        },
        policy: PeerPolicy::own_user_only(),
        limits: ConnLimits::default(),
    })
    .unwrap_err();
    assert!(matches!(err, SocketError::UnsafeDir { .. }), "{err}");
    assert!(!elsewhere.join("custody.sock").exists());
}

#[tokio::test]
async fn leftover_socket_of_a_dead_daemon_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.sock");
    // A std listener leaves its socket file behind when dropped, like a crash.
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    assert!(path.exists());
    let listener = bind(
        path.clone(),
        PeerPolicy::own_user_only(),
        ConnLimits::default(),
    )
    .unwrap();
    let (client, accepted) = tokio::join!(socket::connect(&path), listener.accept());
    assert!(client.is_ok() && accepted.is_ok(), "the new socket answers");
}

#[tokio::test]
async fn live_daemon_makes_a_second_bind_refuse() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.sock");
    let first = bind(
        path.clone(),
        PeerPolicy::own_user_only(),
        ConnLimits::default(),
    )
    .unwrap();
    let err = bind(
        path.clone(),
        PeerPolicy::own_user_only(),
        ConnLimits::default(),
    )
    .unwrap_err();
    assert!(matches!(err, SocketError::AlreadyRunning(_)), "{err}");
    assert!(err
        .to_string()
        .contains("another custody daemon is listening at"));
    // The refused second daemon must not have removed the live socket.
    let (client, accepted) = tokio::join!(socket::connect(&path), first.accept());
    assert!(client.is_ok() && accepted.is_ok());
}

#[tokio::test]
async fn regular_file_at_the_socket_path_is_never_removed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.sock");
    std::fs::write(&path, b"precious").unwrap();
    let err = bind(
        path.clone(),
        PeerPolicy::own_user_only(),
        ConnLimits::default(),
    )
    .unwrap_err();
    assert!(matches!(err, SocketError::NotASocket(_)), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), b"precious");
}

#[tokio::test]
async fn connections_beyond_the_per_uid_cap_get_busy() {
    let dir = tempfile::tempdir().unwrap();
    let listener = bind(
        dir.path().join("c.sock"),
        PeerPolicy::own_user_only(),
        ConnLimits {
            per_uid: 2,
            total: 64,
        },
    )
    .unwrap();
    let path = listener.path().to_path_buf();
    let mut admitted = serve(listener);
    let _c1 = socket::connect(&path).await.unwrap();
    let _c2 = socket::connect(&path).await.unwrap();
    let first = admitted.recv().await.unwrap();
    let _second = admitted.recv().await.unwrap();

    let c3 = socket::connect(&path).await.unwrap();
    let reply = read_line(c3).await.expect("an ERROR line");
    assert_eq!(reply["kind"], "ERROR");
    assert_eq!(reply["code"], "busy");
    assert_eq!(reply["re"], Value::Null);

    // Closing one (all clones of it) frees its slot.
    drop(first);
    let c4 = socket::connect(&path).await.unwrap();
    let (stream, _peer) = tokio::time::timeout(Duration::from_secs(10), admitted.recv())
        .await
        .unwrap()
        .unwrap();
    let mut w = FrameWriter::new(stream);
    w.send(&Reply::Cancelled.to_frame(Some("x"))).await.unwrap();
    assert_eq!(read_line(c4).await.unwrap()["kind"], "CANCELLED");
}

/// Fails loudly when not root, unless PARLEY_SKIP_ROOT_TESTS=1.
fn require_root(test: &str) -> bool {
    support::require_root(
        test,
        &format!(
            "it creates the OS user `{OTHER_USER}` and the group `{AGENTS_GROUP}` and connects \
             as that user"
        ),
    )
}

fn run(cmd: &str, args: &[&str]) -> std::process::Output {
    Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd}: {e}"))
}

fn ensure_user_and_group() {
    if !run("getent", &["group", AGENTS_GROUP]).status.success() {
        let out = run("groupadd", &["--system", AGENTS_GROUP]);
        assert!(
            out.status.success(),
            "groupadd: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    if !run("id", &["-u", OTHER_USER]).status.success() {
        let out = run(
            "useradd",
            &[
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                OTHER_USER,
            ],
        );
        assert!(
            out.status.success(),
            "useradd: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

fn set_membership(member: bool) {
    let flag = if member { "-a" } else { "-d" };
    let out = run("gpasswd", &[flag, OTHER_USER, AGENTS_GROUP]);
    // `-d` of a non-member fails; only the resulting state matters.
    let listed = nix::unistd::Group::from_name(AGENTS_GROUP)
        .unwrap()
        .unwrap()
        .mem
        .iter()
        .any(|m| m == OTHER_USER);
    assert_eq!(
        listed,
        member,
        "gpasswd {flag}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A client in another process, as another user: connects, sends a hello
/// straight away, prints the first line it gets back (or CONNECT-ERROR).
const CLIENT_PY: &str = r#"
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
try:
    s.connect(sys.argv[1])
except OSError as e:
    print("CONNECT-ERROR", e.errno, e)
    sys.exit(3)
try:
    s.sendall(b'{"custody":1,"id":"h1","op":"hello"}\n')
except OSError:
    pass
buf = b""
try:
    while b"\n" not in buf:
        chunk = s.recv(4096)
        if not chunk:
            break
        buf += chunk
except OSError:
    pass
print(buf.split(b"\n")[0].decode("utf-8", "replace"))
"#;

/// Runs the client as OTHER_USER without blocking the runtime.
async fn client_as_other_user(sock: &Path) -> String {
    let sock = sock.to_path_buf();
    let task = tokio::task::spawn_blocking(move || {
        run(
            "runuser",
            &[
                "-u",
                OTHER_USER,
                "--",
                PYTHON,
                "-c",
                CLIENT_PY,
                sock.to_str().unwrap(),
            ],
        )
    });
    let out = tokio::time::timeout(Duration::from_secs(30), task)
        .await
        .expect("client finished within 30 s")
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert!(
        !stdout.is_empty(),
        "client printed nothing; stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_os_user_is_refused_until_added_to_the_agents_group() {
    if !require_root("another_os_user_is_refused_until_added_to_the_agents_group") {
        return;
    }
    assert!(
        Path::new(PYTHON).exists(),
        "install python3 (apt-get install python3-minimal)"
    );
    ensure_user_and_group();
    set_membership(false);
    let other_uid = nix::unistd::User::from_name(OTHER_USER)
        .unwrap()
        .unwrap()
        .uid
        .as_raw();
    let base = tempfile::tempdir().unwrap();
    std::fs::set_permissions(base.path(), std::fs::Permissions::from_mode(0o755)).unwrap();

    // Part 1: not a member. The filesystem would already keep this user out
    // (socket 0660, directory 0750, both group agents), so open them wide to
    // prove the peer policy refuses on its own, before reading a byte.
    let policy = PeerPolicy::new(Some(AGENTS_GROUP)).unwrap();
    let sock = base.path().join("refuse/custody.sock");
    let listener = bind(sock.clone(), policy.clone(), ConnLimits::default()).unwrap();
    std::fs::set_permissions(
        base.path().join("refuse"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o666)).unwrap();
    let mut admitted = serve(listener);
    let line = client_as_other_user(&sock).await;
    let reply: Value = serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON: {line}"));
    assert_eq!(reply["kind"], "ERROR", "{line}");
    assert_eq!(reply["code"], "forbidden_peer", "{line}");
    assert_eq!(
        reply["re"],
        Value::Null,
        "the hello it sent was never read: {line}"
    );
    assert!(
        admitted.try_recv().is_err(),
        "a refused peer must never reach the request handler"
    );

    // Part 2: a member of the agents group, with the real permissions.
    set_membership(true);
    let sock = base.path().join("allow/custody.sock");
    let listener = bind(sock.clone(), policy, ConnLimits::default()).unwrap();
    let agents_gid = nix::unistd::Group::from_name(AGENTS_GROUP)
        .unwrap()
        .unwrap()
        .gid
        .as_raw();
    let meta = std::fs::metadata(&sock).unwrap();
    assert_eq!((meta.mode() & 0o777, meta.gid()), (0o660, agents_gid));
    let dir = std::fs::metadata(base.path().join("allow")).unwrap();
    assert_eq!((dir.mode() & 0o777, dir.gid()), (0o750, agents_gid));
    assert_eq!(listener.unreachable_for_agents(), None);
    let mut admitted = serve(listener);
    let handler = tokio::spawn(async move {
        let (stream, peer) = admitted.recv().await.expect("the member is admitted");
        let mut reader = FrameReader::new(stream.clone());
        let frame = reader.next_frame().await.unwrap().unwrap();
        let request = Request::from_value(&frame.value).unwrap();
        let hello = Reply::Hello {
            version: 1,
            principals: vec![Principal {
                key: "ed25519:test".into(),
                label: None,
            }],
        };
        let mut writer = FrameWriter::new(stream);
        writer
            .send(&hello.to_frame(Some(&request.id)))
            .await
            .unwrap();
        writer.into_inner().shutdown().await.unwrap();
        peer
    });
    let line = client_as_other_user(&sock).await;
    let peer = handler.await.unwrap();
    set_membership(false);

    let reply: Value = serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON: {line}"));
    assert_eq!(reply["kind"], "HELLO", "{line}");
    assert_eq!(reply["re"], "h1");
    assert_eq!(peer.uid, other_uid);
    assert_eq!(peer.user.as_deref(), Some(OTHER_USER));
    assert!(peer.pid.is_some());
    // Root may read another user's /proc/<pid>/exe: it is the interpreter.
    let python = std::fs::canonicalize(PYTHON).unwrap();
    assert_eq!(peer.exe.as_deref(), Some(python.as_path()));
}

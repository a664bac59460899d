//! Hostile input against the real custody server: the engine and
//! `server::serve` in this process, on a real Unix socket, with a real SQLite
//! audit file. Each test is one way an agent (untrusted: prompt-injected,
//! buggy or hostile) could try to take custody down or starve other agents.
//!
//! The keystore is the passphrase file store with the cheapest Argon2 costs
//! (no D-Bus needed; the keystore is not what these tests attack).
//!
//! The two tests with many connections need a second OS user (created as
//! root: `parley-test-flood`) and `/usr/bin/python3`, so that flood and
//! well-behaved client have different uids, as the per-uid caps require.
//! Without root they fail saying so, unless `PARLEY_SKIP_ROOT_TESTS=1`.
#![cfg(target_os = "linux")]

mod support;

use nix::unistd::Uid;
use parley_custody::approver::Verdict;
use parley_custody::approver::{Gesture, Yes};
use parley_custody::audit::{Audit, EventKind, Query, RetentionPolicy, MAX_LIMIT};
use parley_custody::engine::{unix_now, EngineConfig};
use parley_custody::ipc::peer::PeerPolicy;
use parley_custody::ipc::socket::ConnLimits;
use parley_custody::server::ServerLimits;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::custody::{no_step_up, Keys, Options, TestCustody};
use support::requests::{agent_key, consent_req, proposal, SERVICE};
use support::rt;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::UnixStream;

const FLOOD_USER: &str = "parley-test-flood";
const PYTHON: &str = "/usr/bin/python3";

/// The tests that load the machine or measure promptness run one at a time.
static HEAVY: Mutex<()> = Mutex::new(());

fn heavy() -> std::sync::MutexGuard<'static, ()> {
    HEAVY.lock().unwrap_or_else(|p| p.into_inner())
}

// ---------------------------------------------------------------- the daemon

#[derive(Default)]
struct Setup {
    server: ServerLimits,
    conn: ConnLimits,
    config: EngineConfig,
    /// Another uid allowed to connect (the flood user).
    extra_uid: Option<u32>,
}

async fn start(setup: Setup) -> TestCustody {
    let policy = PeerPolicy {
        extra_uids: setup.extra_uid.into_iter().collect(),
        ..PeerPolicy::own_user_only()
    };
    let options = Options {
        policy,
        conn: setup.conn,
        server: setup.server,
        ..Options::new(setup.config)
    };
    let mut c = TestCustody::start_with(Keys::File, options).await;
    // Reachable by the second user (the socket's own mode is opened below).
    std::fs::set_permissions(&c.dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    c.serve();
    if setup.extra_uid.is_some() {
        // The peer policy, not the file mode, is what admits the flood user.
        std::fs::set_permissions(&c.socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    }
    c
}

// ---------------------------------------------------------------- a raw client

/// A client that can send anything, and reads reply lines.
struct Client {
    r: BufReader<OwnedReadHalf>,
    w: OwnedWriteHalf,
}

impl Client {
    async fn connect(path: &Path) -> Client {
        let (r, w) = UnixStream::connect(path).await.unwrap().into_split();
        Client {
            r: BufReader::new(r),
            w,
        }
    }

    async fn send_raw(&mut self, bytes: &[u8]) {
        self.w.write_all(bytes).await.unwrap();
        self.w.flush().await.unwrap();
    }

    async fn send(&mut self, v: &Value) {
        let mut line = serde_json::to_vec(v).unwrap();
        line.push(b'\n');
        self.send_raw(&line).await;
    }

    /// The next reply line, or why there is none.
    async fn recv(&mut self) -> Result<Value, String> {
        let mut line = String::new();
        match tokio::time::timeout(Duration::from_secs(20), self.r.read_line(&mut line)).await {
            Err(_) => Err("no reply within 20 s".into()),
            Ok(Err(e)) => Err(format!("read failed: {e}")),
            Ok(Ok(0)) => Err("the connection was closed".into()),
            Ok(Ok(_)) => serde_json::from_str(&line).map_err(|e| format!("not JSON ({e}): {line}")),
        }
    }

    /// Sends a hello and waits for its answer; returns the answer and how long it took.
    async fn hello(&mut self, id: &str) -> (Value, Duration) {
        let t = Instant::now();
        self.send(&json!({"custody": 1, "id": id, "op": "hello"}))
            .await;
        loop {
            let v = self.recv().await.unwrap();
            if v["re"] == id || v["re"].is_null() {
                return (v, t.elapsed());
            }
        }
    }

    /// Whether the server closes the connection within `d`.
    async fn closed_within(&mut self, d: Duration) -> bool {
        let mut sink = Vec::new();
        matches!(
            tokio::time::timeout(d, self.r.read_to_end(&mut sink)).await,
            Ok(Ok(_)) | Ok(Err(_))
        )
    }
}

fn vm_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/self/status")
}

// ---------------------------------------------------------------- the tests

#[test]
fn a_two_mib_line_is_refused_and_the_same_connection_is_then_served() {
    rt().block_on(async {
        let d = start(Setup::default()).await;
        let mut c = Client::connect(&d.socket).await;
        let pad = "x".repeat(2 * 1024 * 1024);
        let mut line = format!(r#"{{"custody":1,"id":"big","op":"hello","pad":"{pad}"}}"#);
        line.push('\n');
        c.send_raw(line.as_bytes()).await;
        let reply = c.recv().await.unwrap();
        assert_eq!(
            (&reply["kind"], &reply["code"], &reply["re"]),
            (&json!("ERROR"), &json!("bad_frame"), &Value::Null),
            "{reply}"
        );
        assert!(
            reply["message"]
                .as_str()
                .unwrap()
                .contains("over the 1048576-byte limit"),
            "{reply}"
        );
        let (hello, _) = c.hello("h1").await;
        assert_eq!(hello["kind"], "HELLO", "{hello}");
        assert_eq!(hello["principals"][0]["key"], d.principal.to_string());
        // The refused line never reached the engine.
        let rows = d.engine.with_audit(|a| a.query(&Query::default()).unwrap());
        assert!(rows.is_empty(), "{rows:?}");
    });
}

/// A few kilobytes of deterministic noise without a newline.
fn noise(len: usize) -> Vec<u8> {
    let mut x: u32 = 0x9e37_79b9;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            match (x >> 24) as u8 {
                b'\n' => 0,
                b => b,
            }
        })
        .collect()
}

#[test]
fn garbage_invalid_utf8_duplicate_keys_and_deep_nesting_are_refused_line_by_line() {
    rt().block_on(async {
        let mut d = start(Setup::default()).await;
        let mut c = Client::connect(&d.socket).await;
        let p = proposal("p_1", 7136);
        // The dangerous duplicate: the human would see one amount, a
        // parser keeping the other key would hash (and sign) another.
        let dup_amount = serde_json::to_string(&consent_req("dup", &d.principal, &p))
            .unwrap()
            .replacen(
                r#""amount":7136"#,
                r#""amount":7136,"amount":999999"#,
                1,
            );
        let nested = |depth: usize| {
            format!(
                r#"{{"custody":1,"id":"n","op":"hello","x":{}{}}}"#,
                "[".repeat(depth),
                "]".repeat(depth)
            )
            .into_bytes()
        };
        // (name, line without its \n, expected code, expected `re`)
        let cases: Vec<(&str, Vec<u8>, &str, Value)> = vec![
            ("binary_noise", noise(4096), "bad_frame", Value::Null),
            ("nul_bytes", vec![0; 64], "bad_frame", Value::Null),
            (
                "invalid_utf8_in_a_string",
                b"{\"custody\":1,\"id\":\"u\",\"op\":\"hello\",\"x\":\"\xff\xfe\"}".to_vec(),
                "bad_frame",
                Value::Null,
            ),
            (
                "overlong_utf8_encoding",
                b"{\"custody\":1,\"id\":\"\xc0\xaf\",\"op\":\"hello\"}".to_vec(),
                "bad_frame",
                Value::Null,
            ),
            (
                "lone_surrogate_escape",
                br#"{"custody":1,"id":"\ud800","op":"hello"}"#.to_vec(),
                "bad_frame",
                Value::Null,
            ),
            (
                "raw_control_character_in_a_string",
                b"{\"custody\":1,\"id\":\"a\x01b\",\"op\":\"hello\"}".to_vec(),
                "bad_frame",
                Value::Null,
            ),
            (
                "duplicate_op_key",
                br#"{"custody":1,"id":"d","op":"hello","op":"grant"}"#.to_vec(),
                "bad_frame",
                Value::Null,
            ),
            (
                "duplicate_key_inside_the_proposal",
                dup_amount.into_bytes(),
                "bad_frame",
                Value::Null,
            ),
            ("nesting_65_levels", nested(64), "bad_frame", Value::Null),
            (
                "nesting_a_million_levels",
                "[".repeat(1_000_000).into_bytes(),
                "bad_frame",
                Value::Null,
            ),
            ("a_list_not_an_object", b"[1,2,3]".to_vec(), "bad_frame", Value::Null),
            ("a_bare_string", br#""hello""#.to_vec(), "bad_frame", Value::Null),
            (
                "nan_literal",
                br#"{"custody":1,"id":"x","op":"hello","v":NaN}"#.to_vec(),
                "bad_frame",
                Value::Null,
            ),
            (
                "trailing_garbage",
                br#"{"custody":1,"id":"t","op":"hello"} {"op":"grant"}"#.to_vec(),
                "bad_frame",
                Value::Null,
            ),
            (
                "unterminated_string",
                br#"{"custody":1,"id":"t"#.to_vec(),
                "bad_frame",
                Value::Null,
            ),
            (
                "id_of_four_thousand_characters",
                format!(r#"{{"custody":1,"id":"{}","op":"hello"}}"#, "i".repeat(4000))
                    .into_bytes(),
                "bad_frame",
                Value::Null,
            ),
            (
                "protocol_version_2",
                br#"{"custody":2,"id":"v2","op":"hello"}"#.to_vec(),
                "bad_frame",
                json!("v2"),
            ),
            (
                "sign_these_bytes",
                br#"{"custody":1,"id":"s","op":"sign","bytes":"AAAA"}"#.to_vec(),
                "unknown_op",
                json!("s"),
            ),
            (
                "consent_without_a_proposal",
                format!(
                    r#"{{"custody":1,"id":"np","op":"consent","service":"{SERVICE}","agent":"{}","consent":{{}}}}"#,
                    agent_key()
                )
                .into_bytes(),
                "invalid",
                json!("np"),
            ),
        ];
        let mut failures = Vec::new();
        for (name, mut line, code, re) in cases {
            line.push(b'\n');
            c.send_raw(&line).await;
            match c.recv().await {
                Err(e) => failures.push(format!("{name}: {e}")),
                Ok(v) => {
                    if v["kind"] != "ERROR" || v["code"] != code || v["re"] != re {
                        failures.push(format!(
                            "{name}: expected ERROR {code} re {re}, got {v}"
                        ));
                    }
                }
            }
        }
        let (hello, _) = c.hello("after").await;
        assert_eq!(hello["kind"], "HELLO", "still served after it all: {hello}");
        assert!(
            failures.is_empty(),
            "hostile lines not refused as expected:\n  {}",
            failures.join("\n  ")
        );
        // None of it reached review, the human or the log.
        assert!(d.shown.try_recv().is_err());
        let rows = d
            .engine
            .with_audit(|a| a.query(&Query::default()).unwrap());
        assert!(rows.is_empty(), "{rows:?}");
    });
}

#[test]
fn a_client_that_never_finishes_a_line_blocks_no_one_and_is_dropped_when_idle() {
    let _one_at_a_time = heavy();
    rt().block_on(async {
        let idle = Duration::from_secs(1);
        let d = start(Setup {
            server: ServerLimits {
                idle,
                ..ServerLimits::default()
            },
            conn: ConnLimits {
                per_uid: 4,
                total: 64,
            },
            ..Setup::default()
        })
        .await;
        let started = Instant::now();
        // Half a request, then silence.
        let mut stuck = Client::connect(&d.socket).await;
        stuck
            .send_raw(br#"{"custody":1,"id":"stuck","op":"hel"#)
            .await;
        // Slowloris: one byte every 150 ms, never a newline.
        let trickle = Client::connect(&d.socket).await;
        let Client {
            r: mut trickle_r,
            w: mut trickle_w,
        } = trickle;
        let trickling = Arc::new(AtomicBool::new(true));
        let flag = trickling.clone();
        let trickler = tokio::spawn(async move {
            let mut sent = 0u32;
            while flag.load(Ordering::SeqCst) && trickle_w.write_all(b"a").await.is_ok() {
                sent += 1;
                tokio::time::sleep(Duration::from_millis(150)).await;
            }
            sent
        });
        // Meanwhile a well-behaved client is answered, again and again.
        let mut good = Client::connect(&d.socket).await;
        let mut slowest = Duration::ZERO;
        for i in 0..4 {
            let (v, took) = good.hello(&format!("g{i}")).await;
            assert_eq!(v["kind"], "HELLO", "{v}");
            slowest = slowest.max(took);
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        assert!(
            slowest < idle,
            "a hello took {slowest:?} while others stalled"
        );
        // Both stallers are dropped by the idle timeout (not before it).
        assert!(
            stuck.closed_within(Duration::from_secs(5)).await,
            "the half-line client was not dropped"
        );
        assert!(
            started.elapsed() >= idle - Duration::from_millis(100),
            "dropped before the idle timeout"
        );
        let mut sink = Vec::new();
        let closed = tokio::time::timeout(
            Duration::from_secs(5),
            trickle_r.read_to_end(&mut sink),
        )
        .await
        .is_ok();
        trickling.store(false, Ordering::SeqCst);
        let sent = trickler.await.unwrap();
        assert!(closed, "the trickling client was not dropped");
        assert!(sent >= 4, "it trickled {sent} bytes before the drop");
        // Their connection slots were released: with per_uid = 4, four new
        // connections are admitted once the good one is closed too.
        drop(good);
        let deadline = Instant::now() + Duration::from_secs(3);
        let mut held = Vec::new();
        while held.len() < 4 {
            let mut c = Client::connect(&d.socket).await;
            let (v, _) = c.hello("again").await;
            if v["kind"] == "HELLO" {
                held.push(c);
            } else {
                assert!(
                    Instant::now() < deadline,
                    "slot {} of 4 still taken: {v}",
                    held.len() + 1
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        println!("idle drop: slowest hello while stalled {slowest:?}; trickler sent {sent} bytes before it was dropped");
    });
}

// ---------------------------------------------------------------- second user

/// Fails loudly when not root, unless PARLEY_SKIP_ROOT_TESTS=1.
fn require_root(test: &str) -> bool {
    support::require_root(
        test,
        &format!(
            "it creates the OS user `{FLOOD_USER}` and connects as that user, so that the \
             flood and the well-behaved client have different uids"
        ),
    )
}

/// Creates the flood user if missing; returns its uid.
fn flood_user() -> u32 {
    assert!(
        Path::new(PYTHON).exists(),
        "install python3 (apt-get install python3-minimal)"
    );
    support::os_user::system_user(FLOOD_USER, "/usr/sbin/nologin")
        .uid
        .as_raw()
}

/// Starts `python3 -c script args…` as the flood user, stdin and stdout piped.
fn python_as_flood_user(script: &str, args: &[&str]) -> std::process::Child {
    Command::new("runuser")
        .args(["-u", FLOOD_USER, "--", PYTHON, "-c", script])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runuser")
}

/// Opens N sockets at once and keeps them all open; then sends a hello on
/// each and prints a count of the first line each one got.
const THOUSAND_PY: &str = r#"
import json, resource, socket, sys
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))
path, n = sys.argv[1], int(sys.argv[2])
socks, counts = [], {}
def count(k):
    counts[k] = counts.get(k, 0) + 1
for i in range(n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(20)
    try:
        s.connect(path)
        socks.append(s)
    except OSError as e:
        count("connect_error:%d" % e.errno)
        s.close()
for s in socks:
    try:
        s.sendall(b'{"custody":1,"id":"h","op":"hello"}\n')
    except OSError:
        pass
for s in socks:
    buf = b""
    try:
        while b"\n" not in buf:
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
    except OSError:
        pass
    try:
        v = json.loads(buf.split(b"\n")[0])
        count("%s:%s" % (v.get("kind"), v.get("code")))
    except ValueError:
        count("no_reply")
print(json.dumps(counts), flush=True)
"#;

fn run_thousand(sock: &Path, n: usize) -> BTreeMap<String, u64> {
    let child = python_as_flood_user(THOUSAND_PY, &[sock.to_str().unwrap(), &n.to_string()]);
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the flood client failed: {stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[test]
fn a_thousand_connections_from_another_user_are_refused_busy_and_others_are_still_served() {
    if !require_root(
        "a_thousand_connections_from_another_user_are_refused_busy_and_others_are_still_served",
    ) {
        return;
    }
    let _one_at_a_time = heavy();
    let flood_uid = flood_user();
    rt().block_on(async {
        let limits = ConnLimits::default();
        let d = start(Setup {
            extra_uid: Some(flood_uid),
            conn: limits,
            ..Setup::default()
        })
        .await;
        let sock = d.socket.clone();
        let (done_tx, mut done_rx) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            let _ = done_tx.send(run_thousand(&sock, 1000));
        });
        // This process's uid is not the flood's: it keeps being served.
        let mut latencies = Vec::new();
        let counts = loop {
            let mut c = Client::connect(&d.socket).await;
            let (v, took) = c.hello("wb").await;
            assert_eq!(
                v["kind"], "HELLO",
                "the well-behaved client was refused: {v}"
            );
            latencies.push(took);
            if let Ok(counts) = done_rx.try_recv() {
                break counts;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let admitted = counts.get("HELLO:None").copied().unwrap_or(0);
        let busy = counts.get("ERROR:busy").copied().unwrap_or(0);
        assert_eq!(
            admitted, limits.per_uid as u64,
            "exactly the per-uid cap is admitted: {counts:?}"
        );
        assert_eq!(busy, 1000 - admitted, "all the others get busy: {counts:?}");
        latencies.sort();
        let worst = *latencies.last().unwrap();
        assert!(
            worst < Duration::from_secs(3),
            "a well-behaved hello took {worst:?} during the flood"
        );
        // The flood's slots were all released when it went away.
        let again = run_thousand(&d.socket, limits.per_uid);
        assert_eq!(
            again.get("HELLO:None").copied(),
            Some(limits.per_uid as u64),
            "{again:?}"
        );
        println!(
            "1000 connections from uid {flood_uid}: {counts:?}; {} hellos of uid {} meanwhile, \
             median {:?}, worst {worst:?}",
            latencies.len(),
            Uid::effective(),
            latencies[latencies.len() / 2]
        );
    });
}

/// A well-behaved agent of another uid: hellos on fresh connections until
/// stdin closes, and one consent when stdin says `consent`. Prints a JSON
/// summary.
const WELL_BEHAVED_PY: &str = r#"
import json, socket, sys, threading, time
path, consent_line = sys.argv[1], sys.argv[2].encode()
def ask(line, want, timeout):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    t = time.monotonic()
    try:
        s.connect(path)
        s.sendall(line + b"\n")
        buf = b""
        while True:
            while b"\n" not in buf:
                chunk = s.recv(65536)
                if not chunk:
                    raise EOFError("closed after %r" % buf[:200])
                buf += chunk
            l, buf = buf.split(b"\n", 1)
            v = json.loads(l)
            if v.get("re") in (want, None) and v.get("kind") != "PENDING":
                return v, (time.monotonic() - t) * 1000
    finally:
        s.close()
out = {"hellos": 0, "max_hello_ms": 0.0, "errors": [], "consent": None}
stop = threading.Event()
def on_cue():
    for cue in sys.stdin:
        if cue.strip() == "consent":
            try:
                v, ms = ask(consent_line, "wb-consent", 60)
                out["consent"] = v.get("kind")
                out["consent_ms"] = ms
            except Exception as e:
                out["errors"].append("consent: %r" % e)
    stop.set()
threading.Thread(target=on_cue).start()
print("READY", flush=True)
n = 0
while not stop.is_set():
    n += 1
    try:
        v, ms = ask(b'{"custody":1,"id":"h%d","op":"hello"}' % n, "h%d" % n, 30)
        if v.get("kind") != "HELLO":
            out["errors"].append(str(v)[:200])
        out["hellos"] += 1
        out["max_hello_ms"] = max(out["max_hello_ms"], ms)
    except Exception as e:
        out["errors"].append("hello: %r" % e)
    time.sleep(0.02)
print(json.dumps(out), flush=True)
"#;

const FLOOD: usize = 10_000;
const FLOOD_CONNS: usize = 4;
const FLOOD_RATE: u32 = 500;

#[test]
fn ten_thousand_consent_requests_are_limited_memory_stays_bounded_and_every_answer_is_logged() {
    if !require_root(
        "ten_thousand_consent_requests_are_limited_memory_stays_bounded_and_every_answer_is_logged",
    ) {
        return;
    }
    let _one_at_a_time = heavy();
    let flood_uid = flood_user();
    rt().block_on(async {
        let mut config = no_step_up();
        // Above the default (30/min), so that the flood also loads review
        // and the audit log, not only the rate limiter.
        config.queue.per_minute = FLOOD_RATE;
        let mut d = start(Setup {
            extra_uid: Some(flood_uid),
            config,
            ..Setup::default()
        })
        .await;
        let me = Uid::effective().as_raw();

        // The human: approves everything shown, as fast as it can.
        let mut shown = std::mem::replace(&mut d.shown, tokio::sync::mpsc::unbounded_channel().1);
        let engine = d.engine.clone();
        let human = tokio::spawn(async move {
            let mut approved = 0u64;
            while let Some(pv) = shown.recv().await {
                if engine.decide(&pv.id, Verdict::Approve(YES)).await.is_ok() {
                    approved += 1;
                }
            }
            approved
        });

        // The well-behaved agent of another uid.
        let wb_p = proposal("p_wb", 4200);
        let wb_line =
            serde_json::to_string(&consent_req("wb-consent", &d.principal, &wb_p)).unwrap();
        let mut wb = python_as_flood_user(WELL_BEHAVED_PY, &[d.socket.to_str().unwrap(), &wb_line]);
        let mut wb_stdin = wb.stdin.take().unwrap();
        let mut wb_out = std::io::BufReader::new(wb.stdout.take().unwrap());
        let mut ready = String::new();
        wb_out.read_line(&mut ready).unwrap();
        assert_eq!(
            ready.trim(),
            "READY",
            "the well-behaved client did not start"
        );

        // The flood's requests, made before it starts (so that making them
        // neither slows the server down nor counts as its memory).
        let principal = d.principal.clone();
        let flood_lines: Vec<Vec<Vec<u8>>> = tokio::task::spawn_blocking(move || {
            (0..FLOOD_CONNS)
                .map(|k| {
                    (k..FLOOD)
                        .step_by(FLOOD_CONNS)
                        .map(|i| {
                            let mut p = proposal(&format!("p_{i}"), 100 + i as i64);
                            if (i / FLOOD_CONNS) % 2 == 1 {
                                p["cost"]["amount"] = json!(1);
                            }
                            let mut line =
                                serde_json::to_vec(&consent_req(&format!("f{i}"), &principal, &p))
                                    .unwrap();
                            line.push(b'\n');
                            line
                        })
                        .collect()
                })
                .collect()
        })
        .await
        .unwrap();

        // RSS, sampled throughout.
        let rss_before = vm_rss_kib();
        let rss_peak = Arc::new(AtomicU64::new(rss_before));
        let sampling = Arc::new(AtomicBool::new(true));
        let sampler = {
            let (peak, on) = (rss_peak.clone(), sampling.clone());
            tokio::spawn(async move {
                while on.load(Ordering::SeqCst) {
                    peak.fetch_max(vm_rss_kib(), Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(25)).await;
                }
            })
        };

        // The flood: 10,000 consent requests on 4 connections. Two pipeline
        // without waiting (the per-connection in-flight cap answers them);
        // two keep 8 requests outstanding, under that cap, so theirs reach
        // the engine (rate limit, review, queue bounds). Half the requests
        // are well formed (each a new proposal), half were tampered with
        // after hashing.
        let answered = Arc::new(AtomicU64::new(0));
        let started = Instant::now();
        let mut conns = Vec::new();
        for (k, lines) in flood_lines.into_iter().enumerate() {
            let stream = UnixStream::connect(&d.socket).await.unwrap();
            let (r, mut w) = stream.into_split();
            let window = (k >= FLOOD_CONNS / 2).then(|| Arc::new(tokio::sync::Semaphore::new(8)));
            let credit = window.clone();
            let writer = tokio::spawn(async move {
                let mut buf = Vec::new();
                for line in lines {
                    buf.extend_from_slice(&line);
                    if let Some(window) = &window {
                        window.acquire().await.unwrap().forget();
                        w.write_all(&buf).await.unwrap();
                        buf.clear();
                    } else if buf.len() > 64 * 1024 {
                        w.write_all(&buf).await.unwrap();
                        buf.clear();
                    }
                }
                w.write_all(&buf).await.unwrap();
                w
            });
            let count = answered.clone();
            let reader = tokio::spawn(async move {
                let mut lines = BufReader::new(r).lines();
                let mut kinds: BTreeMap<String, u64> = BTreeMap::new();
                let mut finals = 0;
                while finals < FLOOD / FLOOD_CONNS {
                    let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
                        .await
                        .expect("the flood is answered")
                        .unwrap()
                        .expect("the connection stays open");
                    let v: Value = serde_json::from_str(&line).unwrap();
                    let kind = v["kind"].as_str().unwrap_or("?").to_string();
                    if kind == "PENDING" {
                        continue;
                    }
                    finals += 1;
                    count.fetch_add(1, Ordering::SeqCst);
                    if let Some(window) = &credit {
                        window.add_permits(1);
                    }
                    let key = match (kind.as_str(), v["code"].as_str()) {
                        ("ERROR", Some("busy"))
                            if v["message"].as_str().unwrap_or("").contains("in flight") =>
                        {
                            "ERROR:busy (in flight on the connection)".to_string()
                        }
                        ("ERROR", Some("busy")) => "ERROR:busy (queue full)".to_string(),
                        ("ERROR" | "REJECTED", Some(code)) => format!("{kind}:{code}"),
                        _ => kind,
                    };
                    *kinds.entry(key).or_default() += 1;
                }
                kinds
            });
            conns.push((writer, reader));
        }

        // Mid-flood, the other uid asks for a consent.
        let mut cued = false;
        while answered.load(Ordering::SeqCst) < FLOOD as u64 {
            if !cued && answered.load(Ordering::SeqCst) >= FLOOD as u64 / 4 {
                writeln!(wb_stdin, "consent").unwrap();
                wb_stdin.flush().unwrap();
                cued = true;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        if !cued {
            writeln!(wb_stdin, "consent").unwrap();
        }
        let mut replies: BTreeMap<String, u64> = BTreeMap::new();
        let mut keep_open = Vec::new();
        for (writer, reader) in conns {
            for (k, n) in reader.await.unwrap() {
                *replies.entry(k).or_default() += n;
            }
            keep_open.push(writer.await.unwrap());
        }
        let flood_time = started.elapsed();
        drop(wb_stdin);
        let wb_summary = tokio::task::spawn_blocking(move || {
            let mut line = String::new();
            wb_out.read_line(&mut line).unwrap();
            let _ = wb.wait();
            line
        })
        .await
        .unwrap();
        sampling.store(false, Ordering::SeqCst);
        sampler.await.unwrap();
        let rss_after = vm_rss_kib();
        let peak = rss_peak.load(Ordering::SeqCst).max(rss_after);

        // Every request got exactly one final answer, mostly refusals.
        let get = |k: &str| replies.get(k).copied().unwrap_or(0);
        assert_eq!(replies.values().sum::<u64>(), FLOOD as u64, "{replies:?}");
        assert!(
            get("ERROR:rate_limited") >= (FLOOD / 2) as u64 - FLOOD_RATE as u64,
            "{replies:?}"
        );
        assert!(
            get("ERROR:busy (in flight on the connection)") > 0,
            "{replies:?}"
        );
        assert!(get("REJECTED:proposal_hash") > 0, "{replies:?}");
        assert!(get("APPROVED") > 0, "{replies:?}");
        if flood_time < Duration::from_secs(60) {
            let reviewed: u64 = replies
                .iter()
                .filter(|(k, _)| !k.starts_with("ERROR:rate_limited") && !k.contains("in flight"))
                .map(|(_, n)| n)
                .sum();
            assert!(
                reviewed <= FLOOD_RATE as u64,
                "{reviewed} requests got past the {FLOOD_RATE}/min rate limit: {replies:?}"
            );
        }

        // The other uid was served throughout.
        let wb: Value = serde_json::from_str(wb_summary.trim())
            .unwrap_or_else(|e| panic!("{e}: {wb_summary:?}"));
        assert_eq!(wb["errors"], json!([]), "{wb}");
        assert!(wb["hellos"].as_u64().unwrap() >= 1, "{wb}");
        assert_eq!(wb["consent"], "APPROVED", "{wb}");
        // Liveness, not speed (benchmarks measure speed): generous bound.
        assert!(
            wb["max_hello_ms"].as_f64().unwrap() < 10_000.0,
            "a hello of the other uid took {} ms during the flood",
            wb["max_hello_ms"]
        );

        // Memory stayed bounded.
        let growth_mib = peak.saturating_sub(rss_before) / 1024;
        assert!(
            growth_mib < 200,
            "RSS grew by {growth_mib} MiB ({rss_before} kB before, peak {peak} kB)"
        );

        // Every acknowledged outcome is in the log, and the log verifies.
        drop(keep_open);
        let mut audit = Audit::open(&d.audit_path).unwrap();
        // Summarize the running hour too, so every count is in a row.
        audit.flush_tallies(unix_now(), true).unwrap();
        let rows = |kind: EventKind, uid: u32| {
            audit
                .query(&Query {
                    kinds: vec![kind],
                    limit: Some(MAX_LIMIT),
                    ..Default::default()
                })
                .unwrap()
                .into_iter()
                .filter(|e| e.peer_uid == Some(uid))
                .count() as u64
        };
        let rejected: u64 = replies
            .iter()
            .filter(|(k, _)| k.starts_with("REJECTED"))
            .map(|(_, n)| n)
            .sum();
        // Every refusal the engine made (rejected by review, rate limited,
        // queue full) is accounted for, most of them counted into summary
        // rows by the retention policy; the rows stay few.
        let refused = rejected + get("ERROR:rate_limited") + get("ERROR:busy (queue full)");
        assert_eq!(audit.rejections_accounted(Some(me)).unwrap(), refused);
        assert!(
            rows(EventKind::RequestRejected, me)
                <= 2 * u64::from(RetentionPolicy::default().rejections_per_hour),
            "the retention policy bounds the rejection rows"
        );
        assert_eq!(rows(EventKind::ConsentApproved, me), get("APPROVED"));
        assert_eq!(rows(EventKind::ConsentApproved, flood_uid), 1);
        assert_eq!(rows(EventKind::RequestRejected, flood_uid), 0);
        let report = audit.verify().unwrap();
        assert!(report.ok, "{report:?}");
        human.abort();
        println!(
            "flood of {FLOOD} in {flood_time:?}: {replies:?}; other uid: {wb}; \
             RSS {} MiB before, peak {} MiB (+{growth_mib} MiB); audit rows {}",
            rss_before / 1024,
            peak / 1024,
            report.rows
        );
    });
}

/// The scripted human's yes: a click, with the second confirmation given.
const YES: Yes = Yes {
    gesture: Gesture::Click,
    second_confirmation: true,
};

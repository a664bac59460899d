//! `cargo bench -p parley-custody --bench custody`: prints the figures the
//! README quotes (a bench command, not timed tests; nothing here asserts a
//! speed).
//!
//! - consent round trip over the real socket, the scripted approver
//!   approving at once: with the principal key in gnome-keyring (a private
//!   D-Bus session, as the tests use: the bench re-runs itself inside
//!   `dbus-run-session` when the tools are there), and with the passphrase
//!   file store at its default Argon2id cost (what `--file-store` costs);
//! - audit append rate (WAL, `synchronous=FULL`, one fsync'd transaction per row);
//! - a filtered query (agent + kind + since) and `verify` over a 1,000,000-row
//!   log, built once per run in a temp dir (bulk insert, same hash chain);
//! - full against incremental (from the checkpoint) verification over a
//!   100,000-row log (`-- verify` runs only this);
//! - idle RSS of the real `parley-custodyd` binary, run under `script -qfc`
//!   so that it has the terminal its approver needs (keyring, one key, after
//!   one HELLO).

#[path = "../tests/support/mod.rs"]
mod support;

use parley_core::proposal::proposal_hash;
use parley_core::{PublicKey, SecretKey};
use parley_custody::approver::{Gesture, Yes};
use parley_custody::approver::{ScriptedApprover, Verdict};
use parley_custody::audit::{Audit, Event, EventKind, NewEvent, Query, GENESIS};
use parley_custody::engine::{unix_now, Engine, EngineConfig};
use parley_custody::ipc::frame::{FrameReader, FrameWriter};
use parley_custody::ipc::peer::PeerPolicy;
use parley_custody::ipc::socket::{connect, BindOptions, ConnLimits, Listener, SocketPath};
use parley_custody::keystore::{Keystore, Passphrase};
use parley_custody::server::{serve, ServerLimits};
use parley_custody::stepup::StepUpPolicy;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use zeroize::Zeroizing;

const INSIDE: &str = "PARLEY_BENCH_IN_KEYRING";
const ROUND_TRIPS: usize = 300;
const FILE_STORE_ROUND_TRIPS: usize = 30;
const APPENDS: usize = 2_000;
const BIG_LOG: i64 = 1_000_000;
const AGENTS: i64 = 100;

fn main() {
    // `cargo bench -p parley-custody --bench custody -- m7`: only the M7 figures.
    // `… -- verify`: only full against incremental verification.
    if std::env::args().any(|a| a == "verify") {
        for (k, v) in verify_modes() {
            println!("| {k} | {v} |");
        }
        return;
    }
    if std::env::args().any(|a| a == "m7") {
        for (k, v) in m7_review() {
            println!("| {k} | {v} |");
        }
        return;
    }
    if std::env::var_os(INSIDE).is_none() && keyring_tools() {
        std::process::exit(rerun_in_keyring_session());
    }
    let keyring = std::env::var_os(INSIDE).is_some();
    let mut table: Vec<(String, String)> = Vec::new();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");

    if keyring {
        let ks = Keystore::keychain_namespaced(Some("bench")).expect("keychain");
        let (p50, p99, n) = rt.block_on(round_trips(ks, ROUND_TRIPS));
        table.push((
            format!("consent round trip, keyring ({n} round trips)"),
            format!("p50 {p50:.2} ms, p99 {p99:.2} ms"),
        ));
    } else {
        table.push((
            "consent round trip, keyring".into(),
            format!("n/a: {}", support::APT_HINT),
        ));
    }
    {
        let dir = tempfile::tempdir().expect("temp dir");
        let ks = Keystore::file_store(
            &dir.path().join("keys"),
            Passphrase::new(Zeroizing::new("bench passphrase".into())),
        )
        .expect("file store");
        let (p50, p99, n) = rt.block_on(round_trips(ks, FILE_STORE_ROUND_TRIPS));
        table.push((
            format!("consent round trip, file store, Argon2id 64 MiB t=3 ({n} round trips)"),
            format!("p50 {p50:.1} ms, p99 {p99:.1} ms"),
        ));
    }

    let (rate, sync) = append_rate();
    table.push((
        format!(
            "audit append, WAL, synchronous={} ({APPENDS} rows, one transaction each)",
            if sync == 2 { "FULL" } else { "NOT FULL" }
        ),
        format!("{rate:.0} rows/s"),
    ));

    let big = big_log();
    table.extend(big);
    table.extend(verify_modes());
    table.extend(m7_review());

    if keyring {
        table.push(match daemon_idle_rss() {
            Ok(kib) => (
                "parley-custodyd idle RSS (keyring, 1 key, after 1 HELLO)".into(),
                format!("{:.1} MiB", kib as f64 / 1024.0),
            ),
            Err(e) => ("parley-custodyd idle RSS".into(), format!("n/a: {e}")),
        });
    }

    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!();
    println!("Parley Custody figures ({cpus} CPUs, release build)");
    println!();
    println!("| measure | result |");
    println!("|---|---|");
    for (k, v) in table {
        println!("| {k} | {v} |");
    }
}

// ------------------------------------------------------------ keyring session

fn keyring_tools() -> bool {
    ["dbus-run-session", "dbus-send", "gnome-keyring-daemon"]
        .into_iter()
        .all(support::on_path)
}

/// Runs this bench again inside a private D-Bus session with an unlocked
/// gnome-keyring; returns its exit code.
fn rerun_in_keyring_session() -> i32 {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = |name: &str| {
        let p = tmp.path().join(name);
        std::fs::create_dir_all(&p).expect("temp dir");
        p
    };
    let runtime = dir("run");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    }
    let exe = std::env::current_exe().expect("current exe");
    let status = Command::new("dbus-run-session")
        .arg("--")
        .arg("sh")
        .arg("-c")
        .arg(support::SESSION_SCRIPT)
        .arg("sh")
        .arg(&exe)
        .args(std::env::args_os().skip(1))
        .env(INSIDE, "1")
        .env("HOME", dir("home"))
        .env("XDG_DATA_HOME", dir("data"))
        .env("XDG_CONFIG_HOME", dir("config"))
        .env("XDG_CACHE_HOME", dir("cache"))
        .env("XDG_RUNTIME_DIR", &runtime)
        .env("PARLEY_TEST_KEYRING_PW", "bench-login-password")
        .env_remove("DBUS_SESSION_BUS_ADDRESS")
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .stdin(Stdio::null())
        .status()
        .expect("dbus-run-session");
    status.code().unwrap_or(1)
}

// ------------------------------------------------------------ round trips

fn agent_key() -> PublicKey {
    SecretKey::from_seed(&Zeroizing::new([2u8; 32])).public()
}

fn consent_req(id: &str, principal: &PublicKey, n: usize) -> Value {
    let mut p = json!({
        "id": format!("p_{n}"), "capability": "shop.order", "summary": "Order 3 items",
        "effects": [
            {"op": "create", "target": "order"},
            {"op": "charge", "target": "card ••42", "detail": "71.36 USD"}
        ],
        "cost": {"amount": 7136 + n as i64, "currency": "USD"}, "risk": "medium",
        "undo": {"window": 1800}, "expires": unix_now() + 600
    });
    p["hash"] = json!(proposal_hash(&p).expect("hashable"));
    json!({"custody": 1, "id": id, "op": "consent", "service": "shop.example",
           "agent": agent_key().to_string(), "proposal": p,
           "consent": {"proposal": p["id"], "hash": p["hash"], "service": "shop.example",
                       "capability": "shop.order", "principal": principal.to_string(),
                       "summary": "Order 3 items", "expires": p["expires"]}})
}

/// Consent request → PENDING → approved at once → APPROVED, `n` times on one
/// connection (after 5 warm-up round trips). Returns p50, p99 in ms.
async fn round_trips(ks: Keystore, n: usize) -> (f64, f64, usize) {
    let principal = ks.create("bench").expect("a principal key");
    let dir = tempfile::tempdir().expect("temp dir");
    let audit = Audit::open(&dir.path().join("audit.sqlite3")).expect("audit");
    let (approver, mut shown) = ScriptedApprover::new();
    let mut config = EngineConfig {
        step_up: StepUpPolicy::Never,
        ..EngineConfig::default()
    };
    config.queue.per_minute = 1_000_000;
    let engine = Engine::new(ks, audit, Arc::new(approver), config);
    let socket = dir.path().join("c.sock");
    let listener = Listener::bind(BindOptions {
        path: SocketPath::explicit(&socket),
        policy: PeerPolicy::own_user_only(),
        limits: ConnLimits::default(),
    })
    .expect("bind");
    let server = tokio::spawn(serve(
        listener,
        engine.clone(),
        ServerLimits::default(),
        std::future::pending(),
    ));
    let human = {
        let engine = engine.clone();
        tokio::spawn(async move {
            while let Some(pv) = shown.recv().await {
                let _ = engine.decide(&pv.id, Verdict::Approve(YES)).await;
            }
        })
    };
    let (r, w) = tokio::io::split(connect(&socket).await.expect("connect"));
    let (mut r, mut w) = (FrameReader::new(r), FrameWriter::new(w));
    let mut times = Vec::with_capacity(n);
    for i in 0..n + 5 {
        let id = format!("c{i}");
        let req = consent_req(&id, &principal, i);
        let t = Instant::now();
        w.send(&req).await.expect("send");
        loop {
            let f = r.next_frame().await.expect("read").expect("a frame").value;
            if f["re"] == id.as_str() && f["kind"] != "PENDING" {
                assert_eq!(f["kind"], "APPROVED", "{f}");
                break;
            }
        }
        if i >= 5 {
            times.push(t.elapsed().as_secs_f64() * 1000.0);
        }
    }
    human.abort();
    server.abort();
    times.sort_by(f64::total_cmp);
    (percentile(&times, 50), percentile(&times, 99), n)
}

fn percentile(sorted: &[f64], p: usize) -> f64 {
    let i = ((sorted.len() * p).div_ceil(100)).clamp(1, sorted.len()) - 1;
    sorted[i]
}

// ------------------------------------------------------------ the audit log

fn sample_event(i: i64, at: i64) -> NewEvent {
    let kind = match i % 10 {
        0..=3 => EventKind::ConsentApproved,
        4..=6 => EventKind::RequestRejected,
        7 => EventKind::GrantIssued,
        8 => EventKind::ConsentDenied,
        _ => EventKind::RequestExpired,
    };
    let mut ev = NewEvent::new(kind, at);
    ev.peer_uid = Some(1000 + (i % 3) as u32);
    ev.peer_pid = Some(4000 + i % 5000);
    ev.peer_exe = Some("/usr/bin/python3.11".into());
    // Agents independent of kinds (which cycle every 10 rows).
    ev.agent = Some(format!("ed25519:agent{:037}", (i / 10) % AGENTS));
    ev.service = Some("shop.example".into());
    ev.capability = Some("shop.order".into());
    ev.hash = Some(format!("{:043}", i));
    ev.cost_amount = Some(100 + i % 10_000);
    ev.cost_currency = Some("USD".into());
    ev.risk = Some("medium".into());
    ev.undo = Some(1800);
    ev.expires = Some(at + 600);
    ev.principal = Some("ed25519:principal000000000000000000000000000000".into());
    if kind == EventKind::RequestRejected {
        ev.reason = Some("proposal_hash: the proposal's content hashes to …".into());
    } else {
        ev.token_id = Some(format!("{:043}", i * 7));
    }
    ev
}

/// Rows per second through `Audit::append`, and the synchronous setting.
fn append_rate() -> (f64, i64) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut audit = Audit::open(&dir.path().join("audit.sqlite3")).expect("audit");
    let sync = audit.settings().expect("settings").synchronous;
    let now = unix_now();
    let t = Instant::now();
    for i in 0..APPENDS as i64 {
        audit.append(&sample_event(i, now + i)).expect("append");
    }
    (APPENDS as f64 / t.elapsed().as_secs_f64(), sync)
}

/// Builds a 1,000,000-row log with a valid chain (bulk: one transaction,
/// synchronous off while loading), then times verify and queries.
fn big_log() -> Vec<(String, String)> {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("audit.sqlite3");
    drop(Audit::open(&path).expect("audit"));
    // About 200 days of history, one row every 17 s.
    let t0 = unix_now() - 200 * 86_400;
    let step = 200 * 86_400 / BIG_LOG;
    let built = Instant::now();
    build_log(&path, BIG_LOG, t0, step);
    let build_s = built.elapsed().as_secs_f64();
    let audit = Audit::open(&path).expect("audit");
    let t = Instant::now();
    let report = audit.verify().expect("verify");
    let verify_s = t.elapsed().as_secs_f64();
    assert!(
        report.ok && report.rows == BIG_LOG as u64,
        "the bulk-built log must verify: {report:?}"
    );
    let end = t0 + (BIG_LOG - 1) * step;
    let since = end - 7 * 86_400; // the last week
    let filtered = Query {
        agent: Some(format!("ed25519:agent{:037}", 7)),
        kinds: vec![EventKind::ConsentApproved],
        since: Some(since),
        ..Default::default()
    };
    let (f_ms, f_rows) = time_query(&audit, &filtered);
    let live = Query {
        live_at: Some(end - 300),
        ..Default::default()
    };
    let (l_ms, l_rows) = time_query(&audit, &live);
    let newest = Query::default();
    let (n_ms, n_rows) = time_query(&audit, &newest);
    let size_mib = std::fs::metadata(&path).map_or(0, |m| m.len()) / (1024 * 1024);
    vec![
        (
            format!("build a {BIG_LOG}-row chained log (bulk, one transaction; {size_mib} MiB)"),
            format!("{build_s:.1} s"),
        ),
        (
            format!("audit verify, {BIG_LOG} rows"),
            format!("{verify_s:.2} s"),
        ),
        (
            format!("query agent + kind + since (last 7 days) over {BIG_LOG} rows → {f_rows} rows"),
            format!("{f_ms:.2} ms (median of 21)"),
        ),
        (
            format!("query live grants/consents at a time over {BIG_LOG} rows → {l_rows} rows"),
            format!("{l_ms:.2} ms (median of 21)"),
        ),
        (
            format!("query newest (no filter, default limit) → {n_rows} rows"),
            format!("{n_ms:.2} ms (median of 21)"),
        ),
    ]
}

/// Writes `n` chained rows (one every `step` seconds from `t0`) into the
/// empty log at `path`, in one transaction with synchronous off.
fn build_log(path: &Path, n: i64, t0: i64, step: i64) {
    {
        let mut conn = rusqlite::Connection::open(path).expect("sqlite");
        conn.pragma_update(None, "synchronous", "OFF")
            .expect("pragma");
        let tx = conn.transaction().expect("transaction");
        let mut head = GENESIS.to_string();
        {
            let mut insert = tx
                .prepare(
                    "INSERT INTO events (seq, at, kind, peer_uid, peer_pid, peer_exe, agent, \
                     service, capability, hash, cost_amount, cost_currency, risk, undo, expires, \
                     token_id, caveats, reason, principal, prev, row_hash) VALUES (?1, ?2, ?3, \
                     ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, \
                     ?20, ?21)",
                )
                .expect("prepare");
            for i in 0..n {
                let ev = sample_event(i, t0 + i * step);
                let mut e = Event {
                    seq: i + 1,
                    event: ev,
                    prev: head,
                    row_hash: String::new(),
                    cut: None,
                    compacted_by: None,
                };
                e.row_hash = e.compute_row_hash().expect("hash");
                insert
                    .execute(rusqlite::params![
                        e.seq,
                        e.at,
                        e.kind.as_str(),
                        e.peer_uid,
                        e.peer_pid,
                        e.peer_exe,
                        e.agent,
                        e.service,
                        e.capability,
                        e.hash,
                        e.cost_amount,
                        e.cost_currency,
                        e.risk,
                        e.undo,
                        e.expires,
                        e.token_id,
                        e.caveats,
                        e.reason,
                        e.principal,
                        e.prev,
                        e.row_hash,
                    ])
                    .expect("insert");
                head = e.row_hash;
            }
        }
        tx.execute(
            "UPDATE chain_head SET count = ?1, last_seq = ?1, head = ?2 WHERE id = 1",
            rusqlite::params![n, head],
        )
        .expect("head");
        tx.commit().expect("commit");
    }
}

/// Full against incremental verification over a 100,000-row log: the audit
/// view verifies from the checkpoint on each time it opens.
fn verify_modes() -> Vec<(String, String)> {
    const ROWS: i64 = 100_000;
    const NEW: i64 = 100;
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("audit.sqlite3");
    drop(Audit::open(&path).expect("audit"));
    build_log(&path, ROWS, unix_now() - 86_400, 1);
    let mut audit = Audit::open(&path).expect("audit");
    let median = |f: &dyn Fn() -> bool| {
        let mut times = Vec::new();
        for _ in 0..5 {
            let t = Instant::now();
            assert!(f(), "the bench log must verify");
            times.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        times.sort_by(f64::total_cmp);
        times[times.len() / 2]
    };
    let full_ms = median(&|| audit.verify().expect("verify").ok);
    for i in 0..NEW {
        audit
            .append(&sample_event(ROWS + i, unix_now()))
            .expect("append");
    }
    let t = Instant::now();
    let first = audit.verify_incremental().expect("verify");
    let after_new_ms = t.elapsed().as_secs_f64() * 1000.0;
    assert!(first.ok && !first.full && first.checked_from == ROWS + 1);
    let none_new_ms = median(&|| audit.verify_incremental().expect("verify").ok);
    vec![
        (
            format!("audit verify, full, {ROWS} rows"),
            format!("{full_ms:.1} ms (median of 5)"),
        ),
        (
            format!("audit verify, incremental, {ROWS} rows + {NEW} new since the checkpoint"),
            format!(
                "{after_new_ms:.2} ms ({:.0}× faster than full)",
                full_ms / after_new_ms.max(0.001)
            ),
        ),
        (
            format!("audit verify, incremental, {ROWS} rows, none new (reopening the view)"),
            format!(
                "{none_new_ms:.2} ms (median of 5; {:.0}× faster than full)",
                full_ms / none_new_ms.max(0.001)
            ),
        ),
    ]
}

fn time_query(audit: &Audit, q: &Query) -> (f64, usize) {
    let mut times = Vec::new();
    let mut rows = 0;
    for _ in 0..21 {
        let t = Instant::now();
        rows = audit.query(q).expect("query").len();
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    (times[times.len() / 2], rows)
}

// ------------------------------------------------------------ daemon RSS

/// Starts the real daemon under `script -qfc` (a pseudo-terminal for its
/// terminal approver), waits for its socket, says HELLO once, waits two
/// seconds and reads its VmRSS. Stops it with SIGTERM by pid.
fn daemon_idle_rss() -> Result<u64, String> {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_parley-custodyd"));
    let bin = std::fs::canonicalize(&bin).map_err(|e| format!("{}: {e}", bin.display()))?;
    if !support::on_path("script") {
        return Err("`script` (util-linux) is not installed".into());
    }
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let sock = dir.path().join("d.sock");
    let data = dir.path().join("data");
    Keystore::keychain_namespaced(Some("bench-daemon"))
        .and_then(|ks| ks.create("bench"))
        .map_err(|e| e.to_string())?;
    let cmd = format!(
        "'{}' --namespace bench-daemon --socket '{}' --data-dir '{}'",
        bin.display(),
        sock.display(),
        data.display()
    );
    let mut script = Command::new("script")
        .args(["-qfc", &cmd, "/dev/null"])
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("script: {e}"))?;
    let result = (|| {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !sock.exists() {
            if Instant::now() > deadline {
                return Err("the daemon did not open its socket within 20 s".to_string());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        rt.block_on(hello(&sock))?;
        std::thread::sleep(Duration::from_secs(2));
        let pid = find_pid(&bin).ok_or("cannot find the daemon's pid")?;
        let rss = vm_rss(pid).ok_or("cannot read the daemon's VmRSS")?;
        let _ = Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status();
        Ok(rss)
    })();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match script.try_wait() {
            Ok(Some(_)) => break,
            _ if Instant::now() > deadline => {
                let _ = script.kill();
                let _ = script.wait();
                break;
            }
            _ => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    result
}

async fn hello(sock: &Path) -> Result<(), String> {
    let s = connect(sock).await.map_err(|e| e.to_string())?;
    let (r, w) = tokio::io::split(s);
    let (mut r, mut w) = (FrameReader::new(r), FrameWriter::new(w));
    w.send(&json!({"custody": 1, "id": "h", "op": "hello"}))
        .await
        .map_err(|e| e.to_string())?;
    let f = tokio::time::timeout(Duration::from_secs(10), r.next_frame())
        .await
        .map_err(|_| "no HELLO within 10 s".to_string())?
        .map_err(|e| e.to_string())?
        .ok_or("the daemon closed the connection")?;
    if f.value["kind"] == "HELLO" {
        Ok(())
    } else {
        Err(format!("unexpected reply {}", f.value))
    }
}

/// The pid of the one process running `bin`.
fn find_pid(bin: &Path) -> Option<u32> {
    std::fs::read_dir("/proc").ok()?.find_map(|e| {
        let e = e.ok()?;
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        (std::fs::read_link(e.path().join("exe")).ok()? == bin).then_some(pid)
    })
}

fn vm_rss(pid: u32) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

// ------------------------------------------------------------ M7: huge fields

/// M7: reviewing a consent whose summary, consent summary and an effect
/// target are 300,000 characters each (hash recomputation and the checks,
/// which refuse a field longer than the 4,096 characters a review shows);
/// and a `pc1.` code of that size, refused at its size bound. Median of 21.
fn m7_review() -> Vec<(String, String)> {
    use parley_custody::review::{review_code, review_consent, Requester, ReviewContext};
    let principal = SecretKey::from_seed(&Zeroizing::new([1u8; 32]));
    let agent = SecretKey::from_seed(&Zeroizing::new([2u8; 32]))
        .public()
        .to_string();
    let now = unix_now();
    let huge = "é\u{202e}x".repeat(100_000); // 300,000 characters
    let mut p = json!({
        "id": "p_m7", "capability": "shop.order", "summary": huge,
        "effects": [{"op": "send", "target": huge, "detail": huge}],
        "cost": {"amount": 100, "currency": "USD"}, "risk": "low",
        "undo": null, "expires": now + 600
    });
    p["hash"] = json!(proposal_hash(&p).expect("hash"));
    let consent = json!({"proposal": "p_m7", "hash": p["hash"], "service": "shop.example",
        "capability": "shop.order", "principal": principal.public().to_string(),
        "summary": huge, "expires": now + 600});
    let principals = [principal.public()];
    let ctx = ReviewContext {
        now,
        principals: &principals,
        principal_labels: &[],
        limits: Default::default(),
        requester: Requester {
            user: "agent".into(),
            uid: 1001,
            pid: None,
            exe: None,
            chain: Vec::new(),
            chain_line: String::new(),
        },
        agent_label: None,
        agent_known: false,
    };
    let median = |f: &mut dyn FnMut() -> bool| {
        let mut ms: Vec<f64> = (0..21)
            .map(|_| {
                let t = Instant::now();
                assert!(f());
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        ms.sort_by(f64::total_cmp);
        ms[ms.len() / 2]
    };
    let review = median(
        &mut || match review_consent(&consent, &p, "shop.example", &agent, &ctx) {
            // Nothing is approved unseen: a field that would be cut is refused.
            Ok(_) => panic!("M7 review accepted a field too large to show"),
            Err(e) => e.code == "too_large_to_review",
        },
    );
    let code = format!("pc1.{}", "A".repeat(400_000));
    let refused = median(&mut || review_code(&code, &agent, &ctx).is_err());
    vec![
        (
            "M7: review of a consent with three 300,000-character fields (refused: too large to review)".into(),
            format!("{review:.2} ms (goal: well under 100 ms)"),
        ),
        (
            "M7: a 400,000-byte pc1. code, refused at the size bound".into(),
            format!("{refused:.3} ms"),
        ),
    ]
}

/// The scripted human's yes: a click, with the second confirmation given.
const YES: Yes = Yes {
    gesture: Gesture::Click,
    second_confirmation: true,
};

//! The `parley` binary with a temporary `$PARLEY_HOME`: the agent key file,
//! offline delegation, and the custody commands against no daemon, against a
//! scripted stand-in on a real Unix socket, and against a real audit log and
//! file key store in a temporary data directory.
#![cfg(unix)]

mod support;

use parley_core::grant::UnverifiedGrant;
use parley_core::{PublicKey, SecretKey};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use support::{parley_with, stderr, stdout, vectors};
use zeroize::Zeroizing;

/// A fresh directory under the system temp dir, removed on drop.
struct Temp(PathBuf);

impl Temp {
    fn new(tag: &str) -> Temp {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        // Short: a socket path inside must fit in 107 bytes.
        let p = std::env::temp_dir().join(format!(
            "ph-{}-{tag}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Temp(p)
    }

    fn home(&self) -> PathBuf {
        self.0.join("home")
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `parley` with `PARLEY_HOME` in `t` and a socket nobody listens on
/// (unless `args` pass `--socket`).
fn parley(t: &Temp, args: &[&str], stdin: &[u8]) -> Output {
    parley_with(args, stdin, |cmd| {
        cmd.env("PARLEY_HOME", t.home())
            // Never the real ~/.yea: YEA consents and keys go here.
            .env("YEA_HOME", t.0.join("yea"))
            .env("PARLEY_CUSTODY_SOCKET", t.0.join("nobody.sock"))
            .env_remove("PARLEY_CUSTODY_PASSPHRASE");
    })
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

fn secret(seed: u8) -> SecretKey {
    SecretKey::from_seed(&Zeroizing::new([seed; 32]))
}

/// The consent object for order `p_1` at shop.example hashed `hash`, under
/// the principal of seed 1.
fn order_consent(hash: &str) -> Value {
    json!({"proposal":"p_1","hash":hash,"service":"shop.example",
        "capability":"shop.order","principal":secret(1).public().to_string(),
        "summary":"Order","expires":1790000600})
}

/// `consent` as a `pc1.` consent code, as `parley approve` reads it.
fn consent_code(consent: &Value) -> String {
    let req = parley_core::consent::ConsentRequest::from_value(consent).unwrap();
    parley_core::code::encode(&req, None).unwrap()
}

/// `parley init` in `t`, returning the agent's public key.
fn init(t: &Temp) -> PublicKey {
    let o = parley(t, &["init", "--json"], b"");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    v["public_key"].as_str().unwrap().parse().unwrap()
}

#[test]
fn init_creates_an_upstream_agent_key_once() {
    let t = Temp::new("init");
    let o = parley(&t, &["init"], b"");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let key_file = t.home().join("agent.key");
    assert_eq!(mode(&key_file), 0o600);
    assert_eq!(mode(&t.home()), 0o700);
    let text = std::fs::read_to_string(&key_file).unwrap();
    assert_eq!(text.len(), 44, "43 b64url characters and a newline");
    assert!(text.ends_with('\n'));
    assert!(text[..43]
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
    let public = SecretKey::from_seed_b64(&text).unwrap().public();
    let out = stdout(&o);
    assert!(out.contains("agent key created"), "{out}");
    assert!(out.contains(&public.to_string()), "{out}");
    assert!(!t.home().join("principal.key").exists());

    let again = parley(&t, &["init"], b"");
    assert_eq!(again.status.code(), Some(0));
    let out = stdout(&again);
    assert!(out.contains("already exists"), "{out}");
    assert!(out.contains(&public.to_string()), "{out}");
    assert_eq!(std::fs::read_to_string(&key_file).unwrap(), text, "kept");
}

#[test]
fn whoami_shows_the_agent_key_even_without_custody() {
    let t = Temp::new("who");
    let key = init(&t);
    let o = parley(&t, &["whoami", "--json"], b"");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["agent"], key.to_string());
    assert_eq!(v["custody"]["reachable"], false);
    assert!(v["custody"]["error"]
        .as_str()
        .unwrap()
        .contains("custody daemon is not running"));
}

#[test]
fn delegate_round_trip_verifies_with_parley_core() {
    let t = Temp::new("deleg");
    let agent = init(&t);
    let principal = secret(1);
    let sub = secret(2).public();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let root = UnverifiedGrant::issue_root(
        &principal,
        &agent,
        &[parley_core::Caveat::Exp(now + 86_400)],
        now,
        "n1",
    )
    .unwrap()
    .encode();
    let o = parley(
        &t,
        &[
            "delegate",
            &root,
            "--to",
            &sub.to_string(),
            "--verbs",
            "ASK,INTENT",
            "--svc",
            "shop.example",
            "--exp",
            "1h",
        ],
        b"",
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let token = stdout(&o).trim().to_string();
    let g = UnverifiedGrant::decode(&token).unwrap();
    let verified = g.verify(&[principal.public()], &sub).unwrap();
    assert_eq!(g.blocks().len(), 2);
    assert_eq!(g.id(), UnverifiedGrant::decode(&root).unwrap().id());
    let ctx = |verb: &str| parley_core::caveat::RequestContext {
        service: "shop.example".into(),
        verb: verb.into(),
        capability: "shop.search".into(),
        now: now + 60,
        ..Default::default()
    };
    assert_eq!(
        verified.evaluate(&ctx("ASK")),
        parley_core::grant::Decision::Ok
    );
    assert_ne!(
        verified.evaluate(&ctx("COMMIT")),
        parley_core::grant::Decision::Ok,
        "the delegation narrowed the verbs"
    );

    // From standard input, and refused for a grant this agent does not hold.
    let o = parley(
        &t,
        &["delegate", "-", "--to", &agent.to_string()],
        token.as_bytes(),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("only the holder can delegate it"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn approve_without_a_daemon_exits_2_with_the_actionable_message() {
    let t = Temp::new("nod");
    init(&t);
    let code = consent_code(&order_consent("mH3v"));
    let sock = t.0.join("nobody.sock");
    let o = parley(&t, &["approve", &code], b"");
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "custody daemon is not running at {} (start parley-custodyd or the Parley Custody app",
            sock.display()
        )),
        "{err}"
    );
    // --socket wins over the environment.
    let other = t.0.join("other.sock");
    let o = parley(
        &t,
        &["approve", &code, "--socket", other.to_str().unwrap()],
        b"",
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains(&other.display().to_string()));
}

#[test]
fn bad_consent_input_exits_2() {
    let t = Temp::new("bad");
    init(&t);
    let good_consent = order_consent("mH3v");
    let mut traversal = good_consent.clone();
    traversal["hash"] = json!("../../.bashrc");
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"not json".to_vec(), "neither a pc1. consent code nor JSON"),
        (b"{\"consent\":{},\"consent\":{}}".to_vec(), "neither a pc1"),
        (b"[]".to_vec(), "not a JSON object"),
        (
            serde_json::to_vec(&json!({"consent": good_consent, "service": "shop.example"}))
                .unwrap(),
            "missing `proposal`",
        ),
        (
            serde_json::to_vec(&json!({"consent": {"hash": "x"}, "proposal": {}, "service": "s"}))
                .unwrap(),
            "`consent`",
        ),
        (
            serde_json::to_vec(&json!({"consent": traversal, "proposal": {}, "service": "s"}))
                .unwrap(),
            "refusing to use",
        ),
        (b"pc1.%%%".to_vec(), "consent code"),
    ];
    let file = t.0.join("consent.json");
    for (bytes, want) in cases {
        std::fs::write(&file, &bytes).unwrap();
        let o = parley(&t, &["approve", file.to_str().unwrap()], b"");
        assert_eq!(
            o.status.code(),
            Some(2),
            "{}",
            String::from_utf8_lossy(&bytes)
        );
        assert!(stderr(&o).contains(want), "{want}: {}", stderr(&o));
        assert!(stdout(&o).is_empty());
    }
    let o = parley(
        &t,
        &["approve", t.0.join("missing.json").to_str().unwrap()],
        b"",
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(!t.home().join("consents").exists(), "nothing was saved");
}

/// A scripted stand-in for custody on a real Unix socket: accepts one
/// connection, reads one request, answers with `respond(request)`. Gives up
/// after 60 s so a failing CLI cannot hang the test.
fn fake_custody(
    path: PathBuf,
    respond: impl FnOnce(&Value) -> Vec<Value> + Send + 'static,
) -> JoinHandle<Value> {
    let listener = UnixListener::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(60);
        let stream = loop {
            match listener.accept() {
                Ok((s, _)) => break s,
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock && Instant::now() < deadline =>
                {
                    std::thread::sleep(Duration::from_millis(10))
                }
                Err(e) => panic!("no client: {e}"),
            }
        };
        stream.set_nonblocking(false).unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let request: Value = serde_json::from_str(&line).unwrap();
        let mut out = stream;
        for frame in respond(&request) {
            let mut bytes = serde_json::to_vec(&frame).unwrap();
            bytes.push(b'\n');
            out.write_all(&bytes).unwrap();
        }
        request
    })
}

fn pending(req: &Value) -> Value {
    json!({"custody":1,"re":req["id"],"kind":"PENDING","request":req["id"],"position":1})
}

#[test]
fn approve_saves_the_token_where_upstream_agents_look() {
    let t = Temp::new("ok");
    let agent = init(&t);
    let principal = secret(1);
    let hash = "mH3vQ-_x9";
    let consent = order_consent(hash);
    let file = t.0.join("consent.json");
    std::fs::write(
        &file,
        serde_json::to_vec(
            &json!({"consent": consent, "proposal": {"id":"p_1","hash":hash},
            "service":"shop.example"}),
        )
        .unwrap(),
    )
    .unwrap();
    let caveats =
        parley_core::consent::consent_caveats("shop.example", "shop.order", hash, 1790000600);
    let token = UnverifiedGrant::issue_root(&principal, &agent, &caveats, 1, "n")
        .unwrap()
        .encode();
    let sock = t.0.join("c.sock");
    let reply_token = token.clone();
    let server = fake_custody(sock.clone(), move |req| {
        vec![
            pending(req),
            json!({"custody":1,"re":"someone-else","kind":"EXPIRED"}),
            json!({"custody":1,"re":req["id"],"kind":"APPROVED","grant":reply_token}),
        ]
    });
    let o = parley(
        &t,
        &[
            "approve",
            file.to_str().unwrap(),
            "--socket",
            sock.to_str().unwrap(),
        ],
        b"",
    );
    let req = server.join().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(req["op"], "consent");
    assert_eq!(req["agent"], agent.to_string());
    assert_eq!(req["service"], "shop.example");
    assert_eq!(stdout(&o), format!("{token}\n"));
    assert!(
        stderr(&o).contains("waiting for the human to decide in Parley Custody… (request "),
        "{}",
        stderr(&o)
    );
    let saved = t.home().join("consents").join(format!("{hash}.pg"));
    assert_eq!(
        std::fs::read_to_string(&saved).unwrap(),
        format!("{token}\n")
    );
    assert_eq!(mode(&saved), 0o600);
    assert_eq!(mode(&t.home().join("consents")), 0o700);
}

#[test]
fn a_denied_approval_exits_1_and_saves_nothing() {
    let t = Temp::new("deny");
    init(&t);
    let code = consent_code(&order_consent("h1"));
    let sock = t.0.join("c.sock");
    let server = fake_custody(sock.clone(), |req| {
        vec![json!({"custody":1,"re":req["id"],"kind":"DENIED","reason":"too\u{202e}much"})]
    });
    let o = parley(
        &t,
        &[
            "approve",
            &code,
            "--socket",
            sock.to_str().unwrap(),
            "--json",
        ],
        b"",
    );
    let req = server.join().unwrap();
    assert_eq!(req["op"], "approve_code");
    assert_eq!(req["code"], code);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("the human denied the request: too\\u{202e}much"),
        "{err}"
    );
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["outcome"], "denied");
    assert!(!t.home().join("consents").exists());
}

#[test]
fn grant_asks_custody_and_saves_the_token_under_its_id() {
    let t = Temp::new("grant");
    let agent = init(&t);
    let principal = secret(1);
    let sock = t.0.join("c.sock");
    let p = principal.public();
    let server = fake_custody(sock.clone(), move |req| {
        // The human narrows the per-action cap.
        let mut caveats: Vec<parley_core::Caveat> = req["caveats"]
            .as_array()
            .unwrap()
            .iter()
            .map(parley_core::Caveat::parse)
            .collect();
        for c in &mut caveats {
            if let parley_core::Caveat::Per(m) = c {
                m.amount = 2500;
            }
        }
        let holder: PublicKey = req["agent"].as_str().unwrap().parse().unwrap();
        let token = UnverifiedGrant::issue_root(&principal, &holder, &caveats, 1, "n")
            .unwrap()
            .encode();
        let signed: Vec<Value> = caveats.iter().map(|c| c.to_value()).collect();
        vec![
            pending(req),
            json!({"custody":1,"re":req["id"],"kind":"ISSUED","grant":token,"caveats":signed}),
        ]
    });
    let o = parley(
        &t,
        &[
            "grant",
            "--svc",
            "shop.example",
            "--per",
            "40USD",
            "--spend",
            "100USD",
            "--exp",
            "8h",
            "--label",
            "groceries",
            "--socket",
            sock.to_str().unwrap(),
        ],
        b"",
    );
    let req = server.join().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(req["op"], "grant");
    assert_eq!(req["agent"], agent.to_string());
    assert_eq!(req["label"], "groceries");
    assert_eq!(req["caveats"][0], json!({"svc": ["shop.example"]}));
    assert_eq!(
        req["caveats"][1],
        json!({"per": {"max": 4000, "currency": "USD"}})
    );
    let token = stdout(&o).trim().to_string();
    let g = UnverifiedGrant::decode(&token).unwrap();
    g.verify(&[p], &agent).unwrap();
    assert!(
        stderr(&o).contains("the human changed the caveats"),
        "{}",
        stderr(&o)
    );
    let id16: String = g.id().chars().take(16).collect();
    let saved = t.home().join("grants").join(format!("{id16}.pg"));
    assert_eq!(
        std::fs::read_to_string(&saved).unwrap(),
        format!("{token}\n")
    );
    assert_eq!(mode(&saved), 0o600);
}

#[test]
fn keys_and_audit_in_a_file_store() {
    let t = Temp::new("keys");
    let data = t.0.join("data");
    let data_s = data.to_str().unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_parley"))
            .args(args)
            .env("PARLEY_CUSTODY_PASSPHRASE", "correct horse battery")
            .env("PARLEY_HOME", t.home())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    // No log yet: audit says where it looked, and creates nothing.
    let o = run(&["audit", "--data-dir", data_s]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no audit log at"), "{}", stderr(&o));
    assert!(!data.join("audit.sqlite3").exists());

    let o = run(&[
        "custody",
        "keys",
        "--file-store",
        "--data-dir",
        data_s,
        "create",
        "--label",
        "Ana",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let key = stdout(&o).trim().to_string();
    assert!(key.parse::<PublicKey>().is_ok(), "{key}");
    assert!(stderr(&o).contains("weaker"), "{}", stderr(&o));

    let o = run(&[
        "custody",
        "keys",
        "--file-store",
        "--data-dir",
        data_s,
        "export",
        "Ana",
    ]);
    assert_eq!(stdout(&o).trim(), key);
    let o = run(&[
        "custody",
        "keys",
        "--file-store",
        "--data-dir",
        data_s,
        "list",
        "--json",
    ]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["keys"][0]["key"], key);
    assert_eq!(v["keys"][0]["label"], "Ana");

    let o = run(&[
        "custody",
        "keys",
        "--file-store",
        "--data-dir",
        data_s,
        "delete",
        "Ana",
        "--confirm",
        "Ana",
    ]);
    assert_eq!(o.status.code(), Some(2), "a label is not a confirmation");
    let o = run(&[
        "custody",
        "keys",
        "--file-store",
        "--data-dir",
        data_s,
        "delete",
        "Ana",
        "--confirm",
        &key,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));

    let o = run(&["audit", "--data-dir", data_s, "--jsonl"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let kinds: Vec<String> = stdout(&o)
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["kind"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(kinds, ["key_deleted", "key_created"], "newest first");
    let o = run(&["audit", "--data-dir", data_s, "--kind", "key_created"]);
    let text = stdout(&o);
    // The retention policy in effect, then the one event.
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(
        text.starts_with(
            "retention: at most 20 rejected requests, and as many cancelled ones, per peer and hour"
        ),
        "{text}"
    );
    assert!(
        text.contains("key_created") && text.contains(&key),
        "{text}"
    );
    let o = run(&["audit", "--data-dir", data_s, "--csv"]);
    assert!(stdout(&o).starts_with("seq,at,kind,"));
    let o = run(&["audit", "--data-dir", data_s, "--verify"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(
        stdout(&o).contains("audit log ok: 2 rows"),
        "{}",
        stdout(&o)
    );
    // The first verify set the checkpoint: the next starts after it.
    let o = run(&["audit", "--data-dir", data_s, "--verify"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(
        stdout(&o).contains("rows 3 and later re-hashed"),
        "{}",
        stdout(&o)
    );
    let o = run(&["audit", "--data-dir", data_s, "--verify", "--full"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(
        stdout(&o).contains("audit log ok: 2 rows, hash chain and head intact"),
        "{}",
        stdout(&o)
    );
    let o = run(&["audit", "--data-dir", data_s, "--since", "soon"]);
    assert_eq!(o.status.code(), Some(2));
}

fn yea_vectors() -> Value {
    vectors("yea/grants.json")
}

#[test]
fn approve_saves_a_yea_consent_where_the_yea_tooling_looks_and_never_overwrites() {
    let t = Temp::new("yea-approve");
    let v = yea_vectors();
    let c = &v["consentCode"];
    let code = c["code"].as_str().unwrap().to_string();
    let hash = c["consent"]["hash"].as_str().unwrap().to_string();
    let agent: PublicKey = c["agent"].as_str().unwrap().parse().unwrap();
    let caveats = parley_core::consent::consent_caveats(
        c["consent"]["service"].as_str().unwrap(),
        c["consent"]["capability"].as_str().unwrap(),
        &hash,
        c["consent"]["expires"].as_i64().unwrap(),
    );
    let issue = |nonce: &str| {
        UnverifiedGrant::issue_root(&secret(1), &agent, &caveats, 1, nonce)
            .unwrap()
            .encode()
    };
    let agent_text = agent.to_string();
    let runs = std::cell::Cell::new(0);
    let run = |token: String| {
        runs.set(runs.get() + 1);
        let sock = t.0.join(format!("c{}.sock", runs.get()));
        let server = fake_custody(sock.clone(), move |req| {
            vec![json!({"custody":1,"re":req["id"],"kind":"APPROVED","grant":token})]
        });
        // The code's proposal reports `uses`: YEA v1, no flag needed.
        let o = parley(
            &t,
            &[
                "approve",
                &code,
                "--agent",
                &agent_text,
                "--socket",
                sock.to_str().unwrap(),
            ],
            b"",
        );
        (o, server.join().unwrap())
    };
    let first = issue("n1");
    let (o, req) = run(first.clone());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(req["op"], "approve_code");
    assert_eq!(req["dialect"], "yea1");
    let saved = t.0.join("yea").join("consents").join(&hash);
    assert_eq!(
        std::fs::read_to_string(&saved).unwrap(),
        format!("{first}\n")
    );
    assert_eq!(mode(&saved), 0o600);
    assert!(
        !t.home().join("consents").exists(),
        "nothing under $PARLEY_HOME"
    );
    // The same token again is already saved; another one never replaces it.
    let (o, _) = run(first.clone());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let (o, _) = run(issue("n2"));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("not replaced"), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(&saved).unwrap(),
        format!("{first}\n")
    );
    // --dialect parley1 contradicts the code's proposal.
    let o = parley(&t, &["approve", &code, "--dialect", "parley1"], b"");
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("contradicts"), "{}", stderr(&o));
}

#[test]
fn grant_asks_for_each_and_total_limits_in_the_yea_shape() {
    let t = Temp::new("yea-grant");
    let to = secret(9).public().to_string();
    let sock = t.0.join("g.sock");
    let server = fake_custody(sock.clone(), |req| {
        vec![json!({"custody":1,"re":req["id"],"kind":"DENIED"})]
    });
    let o = parley(
        &t,
        &[
            "grant",
            "--to",
            &to,
            "--svc",
            "shop.example",
            "--each",
            "spend=40USD",
            "--total",
            "emails=3",
            "--exp",
            "8h",
            "--socket",
            sock.to_str().unwrap(),
        ],
        b"",
    );
    let req = server.join().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let caveats = req["caveats"].as_array().unwrap();
    assert_eq!(caveats[0], json!({"svc": ["shop.example"]}));
    assert_eq!(
        caveats[1],
        json!({"each": {"of": "spend", "max": 4000, "scale": 2, "unit": "USD"}})
    );
    assert_eq!(caveats[2], json!({"total": {"of": "emails", "max": 3}}));
    assert!(caveats[3].get("exp").is_some());
    // --each without a --total for its measure is warned about.
    assert!(
        stderr(&o).contains("--each spend without a --total"),
        "{}",
        stderr(&o)
    );
    // Parley and YEA limits do not mix.
    let o = parley(
        &t,
        &[
            "grant", "--to", &to, "--spend", "1USD", "--total", "emails=1",
        ],
        b"",
    );
    assert_eq!(o.status.code(), Some(2));
    let o = parley(
        &t,
        &[
            "grant",
            "--to",
            &to,
            "--dialect",
            "parley1",
            "--total",
            "emails=1",
        ],
        b"",
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("contradicts"), "{}", stderr(&o));
}

/// A YEA job approval code (SPEC-approval §6, upstream's `consentCode`
/// vector): asked of custody for the server's key, and the consent custody
/// returns (upstream's own, from `consents`) written into the YEA store as
/// `consents/<planHash>`, exactly, 0600, never replaced.
#[test]
fn approve_writes_a_job_consent_into_the_yea_store_and_never_replaces_it() {
    let t = Temp::new("job");
    let v = vectors("yea/approval.json");
    let code = v["consentCode"]["code"].as_str().unwrap().to_string();
    let hash = v["consents"]["plan"]["planHash"]
        .as_str()
        .unwrap()
        .to_string();
    let token = v["consents"]["cases"][0]["grant"]
        .as_str()
        .unwrap()
        .to_string();
    let sock = t.0.join("c.sock");
    let reply_token = token.clone();
    let server = fake_custody(sock.clone(), move |req| {
        vec![
            pending(req),
            json!({"custody":1,"re":req["id"],"kind":"APPROVED","grant":reply_token}),
        ]
    });
    let run = |t: &Temp| {
        parley(
            t,
            &["approve", &code, "--socket", sock.to_str().unwrap()],
            b"",
        )
    };
    let o = run(&t);
    let req = server.join().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(req["op"], "approve_code");
    assert_eq!(req["dialect"], "yea1");
    assert_eq!(
        req["agent"], v["keys"]["server"],
        "the consent's holder is the server"
    );
    let saved = t.0.join("yea").join("store").join("consents").join(&hash);
    assert_eq!(
        std::fs::read_to_string(&saved).unwrap(),
        token,
        "no newline"
    );
    assert_eq!(mode(&saved), 0o600);
    assert_eq!(mode(&t.0.join("yea").join("store")), 0o700);
    assert_eq!(mode(&t.0.join("yea").join("store").join("consents")), 0o700);
    let out = stdout(&o);
    assert!(out.contains("refund") && out.contains(&hash), "{out}");
    assert!(out.contains(saved.to_str().unwrap()), "{out}");
    // Again: refused before asking custody (no one listens now), the consent kept.
    let o = run(&t);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("already in the store"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read_to_string(&saved).unwrap(), token);
}

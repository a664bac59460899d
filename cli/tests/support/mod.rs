//! What the `parley` binary's test files share, written once: running the
//! binary with piped stdin, reading what it printed, and the conformance
//! vectors the tests run through it. Each test file declares `mod support;`.
#![allow(dead_code)]

use serde_json::Value;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// Runs the `parley` binary with `args` and `stdin`, after `env` has set up
/// its environment; returns what it did. Stdin is written from another
/// thread, so that a large input cannot deadlock against a full stdout
/// pipe, and a binary that stops reading early is not an error.
pub fn parley_with(args: &[&str], stdin: &[u8], env: impl FnOnce(&mut Command)) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_parley"));
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    env(&mut cmd);
    let mut child = cmd.spawn().unwrap();
    let mut sin = child.stdin.take().unwrap();
    let data = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = sin.write_all(&data);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

/// Runs `parley` in the test's own environment.
pub fn parley(args: &[&str], stdin: &[u8]) -> Output {
    parley_with(args, stdin, |_| {})
}

/// What it printed on stdout (must be UTF-8).
pub fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

/// What it printed on stderr (must be UTF-8).
pub fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

/// The repository's `conformance/` directory.
pub fn conformance_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../conformance")
}

/// A vector file of `conformance/`, parsed (`name` may name a
/// subdirectory: `yea/grants.json`).
pub fn vectors(name: &str) -> Value {
    let path = conformance_dir().join(name);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The outcome a grant vector's case expects: `ok`, or its error code.
pub fn expected_outcome(case: &Value) -> &str {
    if case["expect"]["ok"] == true {
        "ok"
    } else {
        case["expect"]["code"].as_str().unwrap()
    }
}

/// The `parley verify --json` command line for a grant vector's case: its
/// token, the request's service, verb, capability and time, the proof key
/// and every trusted principal. The caller adds the proposal's facts, which
/// each dialect states in its own flags.
pub fn verify_args(case: &Value) -> Vec<String> {
    let ctx = &case["ctx"];
    let mut args: Vec<String> = vec![
        "verify".into(),
        case["token"].as_str().unwrap().into(),
        "--json".into(),
        "--svc".into(),
        ctx["service"].as_str().unwrap().into(),
        "--verb".into(),
        ctx["verb"].as_str().unwrap().into(),
        "--cap".into(),
        ctx["capability"].as_str().unwrap().into(),
        "--now".into(),
        ctx["now"].to_string(),
        "--proof-key".into(),
        case["proofKey"].as_str().unwrap().into(),
    ];
    for t in case["trusted"].as_array().unwrap() {
        args.extend(["--trust".into(), t.as_str().unwrap().into()]);
    }
    args
}

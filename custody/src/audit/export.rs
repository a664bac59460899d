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
    /// Text is always quoted (`"` doubled) and neutralized against formula
    /// injection whatever delimiter a spreadsheet splits it on (see
    /// [`csv_text`]). Absent values are empty cells. Numbers are ours and
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

/// What makes a spreadsheet read a cell as a formula (or, tab and CR, what
/// it strips before looking): OWASP's CSV injection list.
const FORMULA_START: [char; 6] = ['=', '+', '-', '@', '\t', '\r'];

/// Characters a spreadsheet may split a row on when the human (or its
/// guess) picks the delimiter: the ones LibreOffice and Excel offer (comma,
/// semicolon, tab, space) and the common "other" ones (`|`, `:`), plus the
/// line breaks a parser ignoring our quotes would end the row at. Splitting
/// on one of these inside our quoted text starts a new cell there, quotes or
/// not: once a parser is out of step with our quoting it treats them as bare.
fn may_split(c: char) -> bool {
    matches!(c, ',' | ';' | '\t' | ' ' | '|' | ':' | '\n' | '\r')
}

/// What an importer may drop from the start of a cell before it looks for a
/// formula: whitespace (trimmed) and quote characters (taken as quoting).
fn may_be_stripped(c: char) -> bool {
    c.is_whitespace() || c == '"' || c == '\''
}

/// A quoted CSV cell, neutralized against formula injection for any of the
/// delimiters of [`may_split`].
///
/// The rule: a `'` goes right before every formula character that could
/// begin a cell, that is one that starts the text, or that follows a
/// character a spreadsheet may split on with only whitespace or quote
/// characters in between. So `x;=HYPERLINK(…)` becomes `x;'=HYPERLINK(…)`:
/// split on `;`, its second cell is the text `'=HYPERLINK(…)`, never a
/// formula. Everything else is kept as it was, so the text stays readable,
/// and it is reversible: the `'`s added are exactly those right before a
/// formula character in such a place ([`csv_text_original`] undoes it; an
/// inserted `'` leaves the places it marks unchanged, since a `'` is itself
/// one of the characters skipped). Delimiters outside [`may_split`] (some
/// spreadsheets let one type any character) are not covered; the JSON Lines
/// export has no such question.
fn csv_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    out.push('"');
    let mut cell_start = true;
    for c in s.chars() {
        if cell_start && FORMULA_START.contains(&c) {
            out.push('\'');
        }
        if c == '"' {
            out.push_str("\"\"");
        } else {
            out.push(c);
        }
        if may_split(c) {
            cell_start = true;
        } else if !may_be_stripped(c) {
            cell_start = false;
        }
    }
    out.push('"');
    out
}

/// The text a [`csv_text`] cell stands for (its quotes removed, `""` read as
/// `"`): every `'` it added, and only those, removed.
#[cfg(test)]
fn csv_text_original(cell: &str) -> String {
    let inner = cell
        .strip_prefix('"')
        .and_then(|c| c.strip_suffix('"'))
        .unwrap_or(cell)
        .replace("\"\"", "\"");
    let chars: Vec<char> = inner.chars().collect();
    let mut out = String::with_capacity(inner.len());
    let mut cell_start = true;
    for (i, &c) in chars.iter().enumerate() {
        let added =
            c == '\'' && cell_start && chars.get(i + 1).is_some_and(|n| FORMULA_START.contains(n));
        if !added {
            out.push(c);
        }
        if may_split(c) {
            cell_start = true;
        } else if !may_be_stripped(c) {
            cell_start = false;
        }
    }
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

    /// A formula after any delimiter a spreadsheet may split on, with or
    /// without spaces and quotes before it, gets its `'`; ordinary text is
    /// left alone.
    #[test]
    fn a_formula_after_any_delimiter_is_neutralized() {
        for (text, cell) in [
            (
                "x;=HYPERLINK(\"http://e.example\",\"y\")",
                "\"x;'=HYPERLINK(\"\"http://e.example\"\",\"\"y\"\")\"",
            ),
            ("a\t=1", "\"a\t'=1\""),
            ("a|=1", "\"a|'=1\""),
            ("a,=1", "\"a,'=1\""),
            ("a; =1", "\"a; '=1\""),
            ("a;\"=1", "\"a;\"\"'=1\""),
            ("a:@x", "\"a:'@x\""),
            ("a\n+1", "\"a\n'+1\""),
            ("a\t\t", "\"a\t'\t\""),
            ("a=1 b-2 c@d e+f", "\"a=1 b-2 c@d e+f\""),
            ("order 3 meals", "\"order 3 meals\""),
        ] {
            assert_eq!(csv_text(text), cell, "{text:?}");
        }
    }

    #[test]
    fn neutralizing_is_reversible() {
        for text in [
            "x;=HYPERLINK(1)",
            "x;'=1",
            "''=1",
            "'",
            "a\t\t=",
            "-",
            "a\"b\";-c",
            "plain text, with: punctuation | and - dashes",
            "fee: -1.00 USD; total =3",
        ] {
            assert_eq!(csv_text_original(&csv_text(text)), text, "{text:?}");
        }
    }
}

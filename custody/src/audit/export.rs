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
        let mut out = String::new();
        let mut first = true;
        let mut cell = |s: String| {
            if !first {
                out.push(',');
            }
            first = false;
            out.push_str(&s);
        };
        let int = |v: Option<i64>| v.map(|n| n.to_string()).unwrap_or_default();
        let text = |v: &Option<String>| v.as_deref().map(csv_text).unwrap_or_default();
        cell(self.seq.to_string());
        cell(self.at.to_string());
        cell(csv_text(self.kind.as_str()));
        cell(int(self.peer_uid.map(i64::from)));
        cell(int(self.peer_pid));
        cell(text(&self.peer_exe));
        cell(text(&self.agent));
        cell(text(&self.service));
        cell(text(&self.capability));
        cell(text(&self.hash));
        cell(int(self.cost_amount));
        cell(text(&self.cost_currency));
        cell(text(&self.risk));
        cell(int(self.undo));
        cell(int(self.expires));
        cell(text(&self.token_id));
        cell(text(&self.caveats));
        cell(text(&self.reason));
        cell(text(&self.principal));
        cell(csv_text(&self.prev));
        cell(csv_text(&self.row_hash));
        cell(text(&self.confirmed_by));
        cell(text(&self.cut));
        cell(int(self.count));
        cell(int(self.span_start));
        cell(int(self.span_end));
        cell(int(self.compacted_by));
        cell(text(&self.peer_chain));
        out
    }
}

/// The CSV header row, in column order.
pub const CSV_HEADER: &str = "seq,at,kind,peer_uid,peer_pid,peer_exe,agent,service,capability,hash,cost_amount,cost_currency,risk,undo,expires,token_id,caveats,reason,principal,prev,row_hash,confirmed_by,cut,count,span_start,span_end,compacted_by,peer_chain";

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
    fn csv_cells_are_quoted_and_neutralized() {
        assert_eq!(csv_text("plain"), "\"plain\"");
        assert_eq!(csv_text("a\"b,c\nd"), "\"a\"\"b,c\nd\"");
        for f in ["=1+1", "+1", "-1", "@SUM(A1)", "\tx", "\rx"] {
            assert!(csv_text(f).starts_with("\"'"), "{f:?}");
        }
    }
}

//! `parley audit`: reads custody's audit log directly from custody's data
//! directory (`parley_custody::audit`). The log is mode 0600 and belongs to
//! custody's OS user, so the human runs this as that user; an agent (another
//! user) cannot, by design.
//!
//! Output: text (one line per event, newest first), `--json` (an array),
//! `--jsonl`, `--csv` (formula-safe). The text listing starts with the
//! retention policy in effect and ends with the rejections counted but not
//! yet summarized. `--verify` checks the hash chain from the last verified
//! row (the checkpoint) instead, `--verify --full` from row 1 (exit 1 if it
//! is broken).

use super::grant::{parse_when, Relative};
use super::Report;
use crate::cli::AuditArgs;
use crate::error::CliError;
use parley_core::lens;
use parley_core::money::Money;
use parley_custody::admin::ExportFormat;
use parley_custody::audit::{
    Audit, Event, EventKind, OpenTally, Query, RetentionPolicy, VerifyReport,
};
use parley_custody::paths;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;
use std::io::Write;
use std::path::PathBuf;

/// Custody's data directory: the flag, else the documented resolution. Not
/// created: reading must not leave an empty log behind for the wrong user.
fn data_dir(flag: Option<&PathBuf>) -> Result<PathBuf, CliError> {
    match flag {
        Some(d) => Ok(d.clone()),
        None => paths::resolve_data_dir(|k| std::env::var_os(k)).map_err(CliError::bad),
    }
}

/// Opens the existing log, with a hint when it is not there.
pub(crate) fn open_existing(dir: &std::path::Path) -> Result<Audit, CliError> {
    let path = paths::audit_path(dir);
    match std::fs::metadata(&path) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(CliError::bad(format!(
                "no audit log at {}: run this as custody's OS user, or point --data-dir (or {}) at custody's data directory",
                path.display(),
                paths::ENV_DATA_DIR
            )))
        }
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            return Err(CliError::bad(format!(
                "permission denied on {}: the audit log belongs to custody's OS user; run this as that user",
                path.display()
            )))
        }
        Err(source) => {
            return Err(CliError::Io {
                context: format!("reading {}", path.display()),
                source,
            })
        }
    }
    Audit::open(&path).map_err(CliError::bad)
}

/// The filters of the flags.
fn query(a: &AuditArgs, now: i64) -> Result<Query, CliError> {
    let when = |flag: &str, v: &Option<String>| {
        v.as_deref()
            .map(|t| parse_when(t, now, Relative::Ago))
            .transpose()
            .map_err(|e| CliError::bad(format!("{flag}: {e}")))
    };
    let mut kinds = Vec::new();
    for k in a.kind.iter().flat_map(|k| k.split(',')) {
        let k: EventKind = k
            .trim()
            .parse()
            .map_err(|e| CliError::bad(format!("--kind: {e}")))?;
        if !kinds.contains(&k) {
            kinds.push(k);
        }
    }
    Ok(Query {
        since: when("--since", &a.since)?,
        until: when("--until", &a.until)?,
        agent: a.agent.clone(),
        service: a.service.clone(),
        kinds,
        live_at: a.live.then_some(now),
        limit: a.limit,
    })
}

/// One event on one line. Every text field came from an agent or a service
/// (untrusted) and is made [`super::visible`]. The agent is named as every
/// view names it (`labels`: the human's names for agent keys, else its four
/// words; [`parley_custody::fingerprint::agent_name_of_text`]), its key
/// after it.
fn line(e: &Event, labels: &BTreeMap<String, String>) -> String {
    let v = super::visible;
    let mut out = format!("{}  #{} {}", lens::time(e.at), e.seq, e.kind);
    let mut field = |name: &str, value: String| {
        out.push_str("  ");
        out.push_str(name);
        out.push('=');
        out.push_str(&value);
    };
    if let Some(n) = e.count {
        field("requests", n.to_string());
    }
    if let (Some(from), Some(to)) = (e.span_start, e.span_end) {
        field(
            "period",
            format!("{}..{}", lens::time(from), lens::time(to)),
        );
    }
    if let Some(p) = &e.principal {
        field("principal", v(p));
    }
    if let Some(a) = &e.agent {
        let name =
            parley_custody::fingerprint::agent_name_of_text(a, labels.get(a).map(String::as_str));
        field("agent", format!("\"{}\"", v(&name)));
        field("agent_key", v(a));
    }
    if let Some(s) = &e.service {
        field("service", v(s));
    }
    if let Some(c) = &e.capability {
        field("cap", v(c));
    }
    if let (Some(amount), Some(currency)) = (e.cost_amount, &e.cost_currency) {
        let m = Money {
            amount,
            currency: currency.clone(),
        };
        field("cost", v(&m.to_string().replace(' ', "")));
    }
    if let Some(r) = &e.risk {
        field("risk", v(r));
    }
    if let Some(u) = e.undo {
        field("undo", lens::duration(u));
    }
    if let Some(x) = e.expires {
        field("expires", lens::time(x));
    }
    // An approve-for-a-while grant, as custody's engine marked it (never
    // read from its reason, which an agent's request may have written).
    if let Some(m) = e.for_a_while {
        field("for_a_while", format!("{m}min"));
    }
    if let Some(h) = &e.hash {
        field("hash", v(h));
    }
    if let Some(t) = &e.token_id {
        field("grant", v(&t.chars().take(16).collect::<String>()));
    }
    if let Some(c) = &e.caveats {
        field("caveats", v(c));
    }
    if let Some(uid) = e.peer_uid {
        let mut peer = format!("uid {uid}");
        if let Some(pid) = e.peer_pid {
            peer.push_str(&format!(" pid {pid}"));
        }
        if let Some(exe) = &e.peer_exe {
            peer.push(' ');
            peer.push_str(&v(exe));
        }
        field("peer", format!("({peer})"));
    }
    if let Some(c) = &e.confirmed_by {
        field("confirmed", v(c));
    }
    if let Some(r) = &e.reason {
        field("reason", format!("\"{}\"", v(r)));
    }
    if let Some(c) = &e.cut {
        field("cut", format!("(too long, original bytes: {})", v(c)));
    }
    out
}

/// The listing's text form: the policy first, then the events, then what is
/// counted but not yet in a row.
struct Listing {
    events: Vec<Event>,
    retention: RetentionPolicy,
    open: Vec<OpenTally>,
    /// The human's names for agent keys.
    labels: BTreeMap<String, String>,
}

impl Serialize for Listing {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.events.serialize(s)
    }
}

impl fmt::Display for Listing {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        writeln!(f, "retention: {}", self.retention)?;
        if self.events.is_empty() {
            write!(f, "no events")?;
        }
        let lines: Vec<String> = self.events.iter().map(|e| line(e, &self.labels)).collect();
        f.write_str(&lines.join("\n"))?;
        for t in &self.open {
            let who = t
                .peer_uid
                .map_or("a peer of unknown uid".to_owned(), |u| format!("uid {u}"));
            write!(
                f,
                "\ncounting: {} more rejected requests from {who} since {} (logged one by one: {}), summarized when the hour is over",
                t.counted,
                lens::time(t.hour_start),
                t.logged
            )?;
        }
        Ok(())
    }
}

#[derive(Serialize)]
struct Verified {
    log: PathBuf,
    #[serde(flatten)]
    report: VerifyReport,
}

impl fmt::Display for Verified {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let r = &self.report;
        if r.ok && r.full {
            return write!(
                f,
                "audit log ok: {} rows, hash chain and head intact ({})",
                r.rows,
                self.log.display()
            );
        }
        if r.ok {
            return write!(
                f,
                "audit log ok: {} rows, rows {} and later re-hashed, linked to the checkpoint and the head ({}); rows before were verified earlier: --full re-hashes them too",
                r.rows,
                r.checked_from,
                self.log.display()
            );
        }
        write!(f, "audit log BROKEN ({})", self.log.display())?;
        if let Some(seq) = r.first_bad_seq {
            write!(f, "\n  first bad row: {seq}")?;
        }
        if let Some(p) = &r.problem {
            write!(f, "\n  {p}")?;
        }
        write!(
            f,
            "\n  keep this file as evidence; note that anyone who can write it as custody's user could also rewrite the whole chain"
        )
    }
}

/// The export `--csv` or `--jsonl` asks for, if any (at most one is given).
fn export_format(a: &AuditArgs) -> Option<ExportFormat> {
    if a.csv {
        Some(ExportFormat::Csv)
    } else if a.jsonl {
        Some(ExportFormat::Jsonl)
    } else {
        None
    }
}

pub fn run(a: AuditArgs, json: bool) -> Result<Report, CliError> {
    if json && (a.jsonl || a.csv) {
        return Err(CliError::bad("choose one of --json, --jsonl and --csv"));
    }
    let dir = data_dir(a.data_dir.as_ref())?;
    let log = open_existing(&dir)?;
    if a.verify {
        let report = if a.full {
            log.verify()
        } else {
            log.verify_incremental()
        }
        .map_err(CliError::bad)?;
        let exit = if report.ok { 0 } else { 1 };
        return Ok(Report::new(
            &Verified {
                log: log.path().to_path_buf(),
                report,
            },
            exit,
        ));
    }
    let q = query(&a, super::unix_now())?;
    let events = log.query(&q).map_err(CliError::bad)?;
    if let Some(format) = export_format(&a) {
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        format
            .write(&events, &mut out)
            .and_then(|()| out.flush())
            .map_err(|source| CliError::Io {
                context: "writing the audit export".into(),
                source,
            })?;
        return Ok(Report::done(0));
    }
    let listing = Listing {
        events,
        retention: log.retention(),
        open: log.open_tallies().map_err(CliError::bad)?,
        labels: log
            .agent_labels()
            .map_err(CliError::bad)?
            .into_iter()
            .collect(),
    };
    Ok(Report::new(&listing, 0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use parley_custody::audit::NewEvent;

    fn args() -> AuditArgs {
        AuditArgs {
            since: None,
            until: None,
            agent: None,
            service: None,
            kind: vec![],
            live: false,
            limit: None,
            jsonl: false,
            csv: false,
            verify: false,
            full: false,
            data_dir: None,
        }
    }

    #[test]
    fn flags_become_a_query() {
        let now = 1_000_000;
        let a = AuditArgs {
            since: Some("24h".into()),
            until: Some("999000".into()),
            kind: vec![
                "consent_approved,grant_issued".into(),
                "grant_issued".into(),
            ],
            live: true,
            limit: Some(10),
            agent: Some("ed25519:A".into()),
            ..args()
        };
        let q = query(&a, now).unwrap();
        assert_eq!(q.since, Some(now - 86_400));
        assert_eq!(q.until, Some(999_000));
        assert_eq!(
            q.kinds,
            vec![EventKind::ConsentApproved, EventKind::GrantIssued]
        );
        assert_eq!(q.live_at, Some(now));
        assert_eq!(q.limit, Some(10));
        let bad = AuditArgs {
            kind: vec!["signed".into()],
            ..args()
        };
        assert!(query(&bad, now).unwrap_err().to_string().contains("--kind"));
    }

    #[test]
    fn hostile_text_is_shown_visibly_on_one_line() {
        let e = Event {
            seq: 3,
            event: NewEvent {
                peer_uid: Some(1001),
                peer_pid: Some(42),
                peer_exe: Some("/usr/bin/agent".into()),
                agent: Some("ed25519:A".into()),
                service: Some("shop\u{202e}.example".into()),
                capability: Some("shop.order".into()),
                hash: Some("mH3v".into()),
                cost_amount: Some(6480),
                cost_currency: Some("USD".into()),
                risk: Some("medium".into()),
                undo: Some(1800),
                expires: Some(1_790_000_600),
                token_id: Some("abcdefghijklmnopqrstuvwxyz".into()),
                reason: Some("line\nbreak".into()),
                confirmed_by: Some("click+os-auth".into()),
                ..NewEvent::new(EventKind::ConsentApproved, 1_790_000_000)
            },
            prev: "p".into(),
            row_hash: "h".into(),
            cut: Some("{\"hash\":900000}".into()),
            compacted_by: None,
        };
        let l = line(&e, &BTreeMap::new());
        assert!(l.contains("confirmed=click+os-auth"), "{l}");
        assert!(
            l.contains("cut=(too long, original bytes: {\"hash\":900000})"),
            "{l}"
        );
        assert!(!l.contains('\n') && !l.contains('\u{202e}'), "{l}");
        assert!(l.starts_with("2026-09-21T"), "{l}");
        assert!(l.contains("#3 consent_approved"), "{l}");
        assert!(l.contains("cost=64.80USD"), "{l}");
        assert!(l.contains("grant=abcdefghijklmnop "), "{l}");
        assert!(l.contains("service=shop\\u{202e}.example"), "{l}");
        // Not a key: named as unknown, never blank, the text after it.
        assert!(
            l.contains("agent=\"an unknown agent (ed25519:A)\"  agent_key=ed25519:A"),
            "{l}"
        );
        let key = "ed25519:gTl3Dqh9F19Wo1Rmw0x-zMuNipG07jeiXfYPW4_Js5Q";
        let named = Event {
            event: NewEvent {
                agent: Some(key.into()),
                ..e.event.clone()
            },
            ..e
        };
        let words = parley_custody::fingerprint::phrase_of_text(key).expect("a key");
        let l = line(&named, &BTreeMap::new());
        assert!(
            l.contains(&format!("agent=\"{words}\"  agent_key={key}")),
            "{l}"
        );
        let labels = BTreeMap::from([(key.to_string(), "shopper".to_string())]);
        assert!(line(&named, &labels).contains("agent=\"shopper\""));
        // A short grant is named by its column, an agent's words are not.
        let mut short = named.clone();
        short.event.kind = EventKind::GrantIssued;
        short.event.reason = Some("approve for a while: and let it spend".into());
        assert!(!line(&short, &labels).contains("for_a_while="));
        short.event.for_a_while = Some(15);
        assert!(line(&short, &labels).contains("for_a_while=15min"));
    }
}

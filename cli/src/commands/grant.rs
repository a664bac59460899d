//! `parley grant`: asks custody for a grant; the human confirms (and may
//! narrow it) in the Parley Custody app. Also the caveat flags and time
//! parsing shared with `parley delegate`.

use super::approve::{pending_notice, Finish};
use super::Report;
use crate::cli::{CaveatFlags, GrantArgs};
use crate::error::CliError;
use crate::home;
use parley_core::canonical::MAX_SAFE_INTEGER;
use parley_core::caveat::{Caveat, RiskLevel};
use parley_core::grant::UnverifiedGrant;
use parley_core::money::Money;
use parley_core::quantity::Limit;
use parley_core::{Dialect, PublicKey};
use parley_custody_client::client::Client;
use parley_custody_client::protocol::Reply;
use serde::Serialize;
use serde_json::Value;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The verbs a grant can name (Parley §4).
const VERBS: [&str; 6] = ["HELLO", "ASK", "INTENT", "COMMIT", "UNDO", "EXPAND"];

/// Reads a duration: one or more `<number><unit>` parts with unit `s`, `m`,
/// `h`, `d` or `w` (`30m`, `8h`, `7d`, `1h30m`). Positive, at most ~285
/// million years (`i64` seconds with room to add to now).
pub(crate) fn parse_duration(text: &str) -> Result<i64, String> {
    let err = || {
        format!(
            "{:?} is not a duration: write it like 30m, 8h, 7d or 1h30m (units s, m, h, d, w)",
            text.chars().take(40).collect::<String>()
        )
    };
    let t = text.trim();
    if t.is_empty() {
        return Err(err());
    }
    let mut total: i64 = 0;
    let mut digits = String::new();
    for c in t.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let unit: i64 = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            'w' => 7 * 86_400,
            _ => return Err(err()),
        };
        if digits.is_empty() || digits.len() > 15 {
            return Err(err());
        }
        let n: i64 = digits.parse().map_err(|_| err())?;
        digits.clear();
        total = n
            .checked_mul(unit)
            .and_then(|s| total.checked_add(s))
            .filter(|s| *s <= MAX_SAFE_INTEGER / 2)
            .ok_or_else(err)?;
    }
    if !digits.is_empty() || total <= 0 {
        return Err(err());
    }
    Ok(total)
}

/// Which way a relative time points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Relative {
    /// `8h` means 8 hours from now (`--exp`, `--nbf`).
    FromNow,
    /// `24h` means 24 hours ago (`audit --since`).
    Ago,
}

/// Reads a time flag: plain digits are unix seconds; anything else is a
/// duration ([`parse_duration`]) from or before `now`.
pub(crate) fn parse_when(text: &str, now: i64, dir: Relative) -> Result<i64, String> {
    let t = text.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        return t
            .parse::<i64>()
            .ok()
            .filter(|v| *v <= MAX_SAFE_INTEGER)
            .ok_or_else(|| format!("{t} is too large for unix seconds"));
    }
    let d = parse_duration(t)?;
    let v = match dir {
        Relative::FromNow => now.checked_add(d),
        Relative::Ago => now.checked_sub(d),
    };
    // `unsigned_abs`, not `abs`: `i64::MIN.abs()` overflows (a panic in debug
    // builds, and i64::MIN passing the check in release builds).
    v.filter(|v| v.unsigned_abs() <= MAX_SAFE_INTEGER as u64)
        .ok_or_else(|| format!("{t} is too far from now"))
}

/// Caveats built from the flags, and advice for the user.
#[derive(Debug)]
pub(crate) struct BuiltCaveats {
    /// In the order svc, verbs, can, risk, per, spend (or each, total), nbf, exp.
    pub caveats: Vec<Caveat>,
    /// Things the user should know (printed on stderr).
    pub warnings: Vec<String>,
    /// The dialect the caveats are in: YEA v1 with `--each`/`--total` (or
    /// `--dialect yea1`), else Parley v1.
    pub dialect: Dialect,
}

impl BuiltCaveats {
    pub(crate) fn to_value(&self) -> Value {
        Value::Array(self.caveats.iter().map(Caveat::to_value).collect())
    }
}

/// Splits repeatable, comma-separable list flags; refuses empty items.
fn list(items: &[String], flag: &str) -> Result<Vec<String>, CliError> {
    let mut out: Vec<String> = Vec::new();
    for item in items {
        for part in item.split(',') {
            let part = part.trim();
            if part.is_empty() {
                return Err(CliError::bad(format!("{flag}: an empty value")));
            }
            if !out.iter().any(|o| o == part) {
                out.push(part.to_string());
            }
        }
    }
    Ok(out)
}

/// Checks a caveat is one services accept, exactly as it will be signed
/// (so a typo fails here, not at the service).
fn checked(c: Caveat, flag: &str) -> Result<Caveat, CliError> {
    match Caveat::parse(&c.to_value()) {
        Caveat::Invalid { why, .. } => Err(CliError::bad(format!("{flag}: {why}"))),
        _ => Ok(c),
    }
}

/// The signs of a dialect among the caveat flags: `--each`/`--total` are
/// YEA v1, `--per`/`--spend` Parley v1 (clap refuses both together).
fn flag_signs(f: &CaveatFlags) -> Vec<crate::dialect::Sign> {
    let mut signs = Vec::new();
    if !f.each.is_empty() || !f.total.is_empty() {
        signs.push((Dialect::YeaV1, "--each/--total".to_string()));
    }
    if f.per.is_some() || f.spend.is_some() {
        signs.push((Dialect::ParleyV1, "--per/--spend".to_string()));
    }
    signs
}

/// The dialect the caveat flags themselves name, if any.
pub(crate) fn flags_dialect(f: &CaveatFlags) -> Option<Dialect> {
    flag_signs(f).first().map(|(d, _)| *d)
}

/// The `--each` and `--total` limits, and warnings about them.
fn limits(f: &CaveatFlags, warnings: &mut Vec<String>) -> Result<Vec<Caveat>, CliError> {
    let read = |items: &[String], flag: &str| -> Result<Vec<Limit>, CliError> {
        let mut out: Vec<Limit> = Vec::new();
        for item in items {
            let (of, max) = crate::dialect::parse_measure(item, flag)?;
            if out.iter().any(|l| l.of == of) {
                return Err(CliError::bad(format!(
                    "{flag} names {of} twice: give one limit per measure"
                )));
            }
            out.push(Limit { of, max });
        }
        Ok(out)
    };
    let each = read(&f.each, "--each")?;
    let total = read(&f.total, "--total")?;
    for e in &each {
        match total.iter().find(|t| t.of == e.of) {
            None => warnings.push(format!(
                "--each {} without a --total for it: a per-action limit alone can be dodged by splitting an action; add --total {}=… to bound the sum",
                e.of, e.of
            )),
            Some(t) if t.max.unit != e.max.unit => warnings.push(format!(
                "--each and --total of {} use different units ({} and {}): a commit in one unit is refused by the other limit (units are never converted)",
                e.of,
                e.max.unit.as_deref().unwrap_or("none"),
                t.max.unit.as_deref().unwrap_or("none")
            )),
            Some(_) => {}
        }
    }
    let mut out = Vec::new();
    for l in each {
        out.push(checked(Caveat::Each(l), "--each")?);
    }
    for l in total {
        out.push(checked(Caveat::Total(l), "--total")?);
    }
    Ok(out)
}

/// Builds the caveats the flags ask for. Times are relative to `now`.
pub(crate) fn build_caveats(
    f: &CaveatFlags,
    now: i64,
    flag: Option<Dialect>,
) -> Result<BuiltCaveats, CliError> {
    let mut caveats = Vec::new();
    let mut warnings = Vec::new();
    // Without --each/--total (or --dialect yea1) a grant is Parley v1, as always.
    let dialect = crate::dialect::decide(flag, &flag_signs(f))?.unwrap_or_default();

    let svc = list(&f.svc, "--svc")?;
    if !svc.is_empty() {
        caveats.push(checked(Caveat::Svc(svc), "--svc")?);
    }
    if let Some(v) = &f.verbs {
        let verbs = list(std::slice::from_ref(v), "--verbs")?
            .into_iter()
            .map(|v| v.to_ascii_uppercase())
            .collect::<Vec<_>>();
        if let Some(bad) = verbs.iter().find(|v| !VERBS.contains(&v.as_str())) {
            return Err(CliError::bad(format!(
                "--verbs: {:?} is not a verb; use {}",
                bad.chars().take(40).collect::<String>(),
                VERBS.join(", ")
            )));
        }
        caveats.push(checked(Caveat::Verbs(verbs), "--verbs")?);
    }
    let can = list(&f.can, "--can")?;
    if !can.is_empty() {
        caveats.push(checked(Caveat::Can(can), "--can")?);
    }
    if let Some(r) = &f.risk {
        let level = RiskLevel::parse(&r.to_ascii_lowercase()).ok_or_else(|| {
            CliError::bad(format!(
                "--risk {:?}: use low, medium or high",
                r.chars().take(40).collect::<String>()
            ))
        })?;
        caveats.push(Caveat::Risk(level));
    }
    let money = |flag: &str, v: &Option<String>| {
        v.as_deref()
            .map(Money::parse_flag)
            .transpose()
            .map_err(|e| CliError::bad(format!("{flag}: {e}")))
    };
    let per = money("--per", &f.per)?;
    let spend = money("--spend", &f.spend)?;
    if let Some(m) = &per {
        caveats.push(checked(Caveat::Per(m.clone()), "--per")?);
        if spend.is_none() {
            warnings.push(
                "--per without --spend: a per-action cap alone can be dodged by splitting a purchase; add --spend to bound the total"
                    .into(),
            );
        }
    }
    if let Some(m) = &spend {
        caveats.push(checked(Caveat::Spend(m.clone()), "--spend")?);
        if per.as_ref().is_some_and(|p| p.currency != m.currency) {
            warnings.push(format!(
                "--per and --spend use different currencies ({} and {}): a commit in one currency is refused by the other cap",
                per.as_ref().map(|p| p.currency.as_str()).unwrap_or(""),
                m.currency
            ));
        }
    }
    caveats.extend(limits(f, &mut warnings)?);
    let time = |flag: &str, v: &Option<String>| {
        v.as_deref()
            .map(|t| parse_when(t, now, Relative::FromNow))
            .transpose()
            .map_err(|e| CliError::bad(format!("{flag}: {e}")))
    };
    let nbf = time("--nbf", &f.nbf)?;
    let exp = time("--exp", &f.exp)?;
    if let Some(exp) = exp {
        if exp <= now {
            return Err(CliError::bad(format!(
                "--exp: {} is in the past; give a duration like 8h or a later time",
                parley_core::lens::time(exp)
            )));
        }
        if nbf.is_some_and(|n| n >= exp) {
            return Err(CliError::bad(
                "--nbf is not before --exp: the grant would never be valid",
            ));
        }
    }
    if let Some(n) = nbf {
        caveats.push(Caveat::Nbf(n));
    }
    if let Some(e) = exp {
        caveats.push(Caveat::Exp(e));
    }
    if let Some(c) = caveats.iter().find(|c| !c.is_well_formed_in(dialect)) {
        return Err(CliError::bad(format!(
            "{} is not a {dialect} caveat",
            c.name().unwrap_or("this")
        )));
    }
    Ok(BuiltCaveats {
        caveats,
        warnings,
        dialect,
    })
}

/// Reads a public key flag.
pub(crate) fn key_flag(text: &str, flag: &str) -> Result<PublicKey, CliError> {
    text.trim().parse().map_err(|e| {
        CliError::bad(format!(
            "{flag} {:?}: {e}",
            text.chars().take(60).collect::<String>()
        ))
    })
}

/// Reads a `--wait` duration.
pub(crate) fn wait_flag(text: &str) -> Result<Duration, CliError> {
    let secs = parse_duration(text).map_err(|e| CliError::bad(format!("--wait: {e}")))?;
    Ok(Duration::from_secs(u64::try_from(secs).unwrap_or(0)))
}

#[derive(Serialize)]
struct Issued {
    outcome: &'static str,
    grant: String,
    id: String,
    holder: String,
    caveats: Value,
    narrowed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    saved_to: Option<PathBuf>,
}

impl fmt::Display for Issued {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.grant)
    }
}

pub fn run(a: GrantArgs, socket: Option<&Path>, flag: Option<Dialect>) -> Result<Report, CliError> {
    let now = super::unix_now();
    let built = build_caveats(&a.caveats, now, flag)?;
    for w in &built.warnings {
        eprintln!("parley: warning: {w}");
    }
    if a.caveats.exp.is_none() {
        eprintln!("parley: warning: no --exp: the grant would never expire; consider --exp 8h (custody may refuse or the human may add one)");
    }
    if built.caveats.is_empty() {
        eprintln!("parley: warning: no caveats: this asks for everything the principal may do");
    }
    let wait = wait_flag(&a.wait)?;
    // The agent the grant is for by default: the one of the grant's dialect.
    let home = home::tooling_home(built.dialect)?;
    let own = home::load_agent_key(&home)?.map(|k| k.public);
    let holder = match (&a.to, &own) {
        (Some(to), _) => key_flag(to, "--to")?,
        (None, Some(own)) => own.clone(),
        (None, None) => {
            return Err(CliError::bad(format!(
                "no agent key at {}: run `parley init`, or name the holder with --to KEY",
                home::agent_key_path(&home).display()
            )))
        }
    };
    let requested = built.to_value();
    let holder_text = holder.to_string();
    let mut finish = Finish::new("grant");
    let reply = super::block_on(async {
        let mut client = Client::connect(socket).await?;
        client.set_human_deadline(wait);
        client
            .grant(
                &holder_text,
                requested.clone(),
                a.label.as_deref(),
                a.reason.as_deref(),
                pending_notice(&mut finish.request),
            )
            .await
    })?;
    let (grant, caveats) = match reply {
        Ok(Reply::Issued { grant, caveats }) => (grant, caveats),
        other => return finish.refused(other),
    };
    let decoded = UnverifiedGrant::decode(&grant).map_err(|e| {
        CliError::bad(format!(
            "custody returned a token that does not decode: {e}"
        ))
    })?;
    let id = decoded.id();
    let narrowed = caveats != requested;
    if narrowed {
        eprintln!("parley: the human changed the caveats; the grant allows:");
        for c in decoded.blocks()[0].caveats() {
            eprintln!("  - {}", super::visible(&c.describe()));
        }
    }
    let ours = own.as_ref() == Some(&holder);
    let saved_to = if built.dialect == Dialect::YeaV1 {
        // The YEA tooling keeps no grants directory we know of: the token
        // goes to stdout only, for the agent to be given.
        None
    } else if ours && decoded.holder() == holder_text {
        let stem: String = id.chars().take(16).collect();
        let path = home::save_token(&home.join(home::GRANTS_DIR), &stem, &grant)?;
        eprintln!("parley: saved to {}", path.display());
        Some(path)
    } else {
        if ours {
            eprintln!("parley: warning: custody issued the grant to {}, not to this agent's key; not saved", super::visible(decoded.holder()));
        }
        None
    };
    Ok(Report::new(
        &Issued {
            outcome: "issued",
            grant,
            id,
            holder: holder_text,
            caveats,
            narrowed,
            saved_to,
        },
        0,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NOW: i64 = 1_790_000_000;

    fn flags() -> CaveatFlags {
        CaveatFlags::default()
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30m"), Ok(1800));
        assert_eq!(parse_duration("8h"), Ok(28_800));
        assert_eq!(parse_duration("7d"), Ok(604_800));
        assert_eq!(parse_duration("2w"), Ok(1_209_600));
        assert_eq!(parse_duration("1h30m"), Ok(5400));
        assert_eq!(parse_duration(" 45s "), Ok(45));
        for bad in [
            "",
            "8",
            "h",
            "0h",
            "8x",
            "-8h",
            "8 h",
            "1.5h",
            "8hh",
            "99999999999999999d",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn times_are_unix_seconds_or_relative() {
        assert_eq!(parse_when("8h", NOW, Relative::FromNow), Ok(NOW + 28_800));
        assert_eq!(parse_when("24h", NOW, Relative::Ago), Ok(NOW - 86_400));
        assert_eq!(
            parse_when("1790000600", NOW, Relative::FromNow),
            Ok(1_790_000_600)
        );
        assert_eq!(parse_when("0", NOW, Relative::Ago), Ok(0));
        assert!(parse_when("99999999999999999999", NOW, Relative::Ago).is_err());
        assert!(parse_when("yesterday", NOW, Relative::Ago).is_err());
    }

    /// A relative time landing on exactly `i64::MIN` (`now` is a parameter)
    /// overflowed `abs()`: a panic in debug builds, `Ok(i64::MIN)` in release.
    #[test]
    fn a_relative_time_at_i64_min_is_refused_without_overflow() {
        assert!(parse_when("1s", i64::MIN + 1, Relative::Ago).is_err());
        assert!(parse_when("1s", i64::MIN, Relative::Ago).is_err());
        assert!(parse_when("1s", i64::MIN, Relative::FromNow).is_err());
        assert!(parse_when("1s", i64::MAX, Relative::FromNow).is_err());
        assert_eq!(
            parse_when("1s", -MAX_SAFE_INTEGER + 1, Relative::Ago),
            Ok(-MAX_SAFE_INTEGER)
        );
        assert!(parse_when("2s", -MAX_SAFE_INTEGER + 1, Relative::Ago).is_err());
    }

    #[test]
    fn the_seed_example_builds_the_documented_caveats() {
        let f = CaveatFlags {
            svc: vec!["cal.example.com".into(), "shop.example".into()],
            risk: Some("low".into()),
            per: Some("40USD".into()),
            spend: Some("100USD".into()),
            exp: Some("8h".into()),
            ..flags()
        };
        let b = build_caveats(&f, NOW, None).unwrap();
        assert!(b.warnings.is_empty());
        assert_eq!(
            b.to_value(),
            json!([
                {"svc": ["cal.example.com", "shop.example"]},
                {"risk": "low"},
                {"per": {"max": 4000, "currency": "USD"}},
                {"spend": {"max": 10000, "currency": "USD"}},
                {"exp": NOW + 28_800}
            ])
        );
    }

    /// The policy grant of README's "Approving a YEA MCP server's job"
    /// (SPEC-approval §2): to the server's key, at the server's key.
    #[test]
    fn a_job_servers_policy_builds_the_caveats_the_server_checks() {
        let server = "ed25519:bnoc3Smwt4_ROvTFWY_v9O8qlxZuPKby5Pv8zYBQW_E";
        let f = CaveatFlags {
            svc: vec![server.into()],
            verbs: Some("COMMIT".into()),
            can: vec!["refund".into()],
            risk: Some("low".into()),
            each: vec!["spend=25USD".into()],
            total: vec!["spend=100USD".into()],
            exp: Some("30d".into()),
            ..flags()
        };
        let b = build_caveats(&f, NOW, None).unwrap();
        assert_eq!(
            b.to_value(),
            json!([
                {"svc": [server]},
                {"verbs": ["COMMIT"]},
                {"can": ["refund"]},
                {"risk": "low"},
                {"each": {"of": "spend", "max": 2500, "scale": 2, "unit": "USD"}},
                {"total": {"of": "spend", "max": 10000, "scale": 2, "unit": "USD"}},
                {"exp": NOW + 30 * 86_400}
            ])
        );
    }

    #[test]
    fn lists_split_on_commas_and_verbs_are_checked() {
        let f = CaveatFlags {
            svc: vec!["a.example, b.example".into(), "a.example".into()],
            verbs: Some("ask,intent".into()),
            can: vec!["calendar.*".into(), "shop.order".into()],
            nbf: Some("1m".into()),
            ..flags()
        };
        let b = build_caveats(&f, NOW, None).unwrap();
        assert_eq!(
            b.to_value(),
            json!([
                {"svc": ["a.example", "b.example"]},
                {"verbs": ["ASK", "INTENT"]},
                {"can": ["calendar.*", "shop.order"]},
                {"nbf": NOW + 60}
            ])
        );
        let bad = CaveatFlags {
            verbs: Some("ASK,SIGN".into()),
            ..flags()
        };
        let e = build_caveats(&bad, NOW, None).unwrap_err().to_string();
        assert!(e.contains("\"SIGN\" is not a verb"), "{e}");
    }

    #[test]
    fn malformed_flags_are_refused_with_the_flag_named() {
        let cases: [(CaveatFlags, &str); 7] = [
            (
                CaveatFlags {
                    risk: Some("extreme".into()),
                    ..flags()
                },
                "--risk",
            ),
            (
                CaveatFlags {
                    per: Some("40".into()),
                    ..flags()
                },
                "--per",
            ),
            (
                CaveatFlags {
                    spend: Some("1.234USD".into()),
                    ..flags()
                },
                "--spend",
            ),
            (
                CaveatFlags {
                    exp: Some("soon".into()),
                    ..flags()
                },
                "--exp",
            ),
            (
                CaveatFlags {
                    exp: Some("1000".into()),
                    ..flags()
                },
                "--exp",
            ),
            (
                CaveatFlags {
                    exp: Some("1h".into()),
                    nbf: Some("2h".into()),
                    ..flags()
                },
                "--nbf",
            ),
            (
                CaveatFlags {
                    svc: vec!["a,,b".into()],
                    ..flags()
                },
                "--svc",
            ),
        ];
        for (f, flag) in cases {
            let e = build_caveats(&f, NOW, None).unwrap_err().to_string();
            assert!(e.contains(flag), "{flag}: {e}");
        }
    }

    #[test]
    fn per_without_spend_warns() {
        let f = CaveatFlags {
            per: Some("40USD".into()),
            ..flags()
        };
        let b = build_caveats(&f, NOW, None).unwrap();
        assert_eq!(b.warnings.len(), 1);
        assert!(b.warnings[0].contains("--spend"));
        let f = CaveatFlags {
            per: Some("40USD".into()),
            spend: Some("100EUR".into()),
            ..flags()
        };
        let b = build_caveats(&f, NOW, None).unwrap();
        assert!(b.warnings[0].contains("different currencies"));
    }

    #[test]
    fn no_flags_no_caveats() {
        let b = build_caveats(&flags(), NOW, None).unwrap();
        assert!(b.caveats.is_empty());
        assert_eq!(b.to_value(), json!([]));
    }
}

//! Caveats (§6.3): the single-key objects that restrict what a grant allows.
//!
//! Parsing never fails: a caveat that is unknown or malformed becomes
//! [`Caveat::Invalid`], which fails closed as a hard (`forbidden`) failure on
//! every request. So an older verifier never over-authorizes a newer grant,
//! and `{"risk":"toString"}` is just a risk level that does not exist.

use crate::canonical::MAX_SAFE_INTEGER;
use crate::dialect::Dialect;
use crate::money::Money;
use crate::quantity::{Exact, Limit, Used, Uses};
use serde_json::{json, Map, Value};
use std::fmt;

/// A proposal's risk as assessed by the service (§5.1), ordered low < medium < high.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RiskLevel {
    /// `low`
    Low,
    /// `medium`
    Medium,
    /// `high`
    High,
}

impl RiskLevel {
    /// Parses exactly `low`, `medium` or `high` (an own name, never a lookup
    /// that could hit something like `toString`).
    pub fn parse(s: &str) -> Option<RiskLevel> {
        match s {
            "low" => Some(RiskLevel::Low),
            "medium" => Some(RiskLevel::Medium),
            "high" => Some(RiskLevel::High),
            _ => None,
        }
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            RiskLevel::Low => "low",
            RiskLevel::Medium => "medium",
            RiskLevel::High => "high",
        }
    }
}

impl fmt::Display for RiskLevel {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One caveat, parsed. Build them with the variants; read them with [`Caveat::parse`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caveat {
    /// `{"svc": [serviceId…]}`: the service's id is listed.
    Svc(Vec<String>),
    /// `{"verbs": [verb…]}`: the request verb is listed.
    Verbs(Vec<String>),
    /// `{"can": [pattern…]}`: the capability matches an exact name, `*`, or a prefix ending in `.*`.
    Can(Vec<String>),
    /// `{"exp": int}`: now < exp.
    Exp(i64),
    /// `{"nbf": int}`: now ≥ nbf.
    Nbf(i64),
    /// `{"per": {max, currency}}`: COMMIT only; the cost is null or same currency and ≤ max.
    Per(Money),
    /// `{"spend": {max, currency}}`: COMMIT only; spent through this block + cost ≤ max.
    Spend(Money),
    /// YEA `{"each": limit}`: COMMIT only; the proposal's use of `of` is
    /// absent, or in the limit's unit and ≤ it.
    Each(Limit),
    /// YEA `{"total": limit}`: COMMIT only; the proposal's use of `of` is
    /// absent, or in the limit's unit and, with what this block already
    /// used of it, ≤ the limit.
    Total(Limit),
    /// `{"risk": level}`: COMMIT only; the proposal's risk ≤ level.
    Risk(RiskLevel),
    /// `{"only": hash}`: COMMIT only; the proposal hash equals it.
    Only(String),
    /// Anything else: unknown name or malformed value. Always a hard failure.
    Invalid {
        /// The caveat exactly as it appeared.
        raw: Value,
        /// Why it is not a well-formed caveat.
        why: String,
    },
}

/// How one caveat judged one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Satisfied.
    Pass,
    /// Failed, but a human may approve it (only `per`, `spend`, `each`,
    /// `total`, `risk`: §6.6).
    Soft(String),
    /// Failed; no consent can fix it.
    Hard(String),
}

/// The facts about the proposal a COMMIT is for (§6.3 `per`, `spend`,
/// `each`, `total`, `risk`, `only`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CommitFacts {
    /// The proposal hash (§5.1).
    pub hash: String,
    /// Parley: the proposal cost; `None` when free.
    pub cost: Option<Money>,
    /// YEA: the proposal's `uses` exactly as it reported it; `None` when
    /// absent. Kept as JSON, like `risk`, so that a malformed one fails every
    /// `each`/`total` closed instead of being unrepresentable (§6.3).
    pub uses: Option<Value>,
    /// The proposal risk as the service wrote it (kept as text so an unknown level fails closed).
    pub risk: String,
}

/// The request being authorized (§6.3, §6.4): time is a parameter.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RequestContext {
    /// The service's id (its audience, §4.1).
    pub service: String,
    /// The request verb: `ASK`, `INTENT`, `COMMIT`, `UNDO`, `EXPAND`, `HELLO`.
    pub verb: String,
    /// The capability; for UNDO the capability of the receipt being undone.
    pub capability: String,
    /// Unix seconds.
    pub now: i64,
    /// For COMMIT: the proposal being committed.
    pub proposal: Option<CommitFacts>,
    /// Parley: spend already reserved per block id (minor units), for `spend`.
    pub spent: std::collections::BTreeMap<String, i64>,
    /// YEA: quantities already committed or reserved per block id and
    /// measure, for `total`.
    pub used: Used,
    /// The dialect the request is read under: it decides which caveats exist.
    pub dialect: Dialect,
}

impl Caveat {
    /// Reads one caveat. Never fails: see [`Caveat::Invalid`].
    pub fn parse(v: &Value) -> Caveat {
        match Self::parse_strict(v) {
            Ok(c) => c,
            Err(why) => Caveat::Invalid {
                raw: v.clone(),
                why,
            },
        }
    }

    fn parse_strict(v: &Value) -> Result<Caveat, String> {
        let obj = v
            .as_object()
            .ok_or_else(|| "a caveat must be a single-key object".to_string())?;
        if obj.len() != 1 {
            return Err(format!(
                "a caveat must have exactly one key, this one has {}",
                obj.len()
            ));
        }
        let (name, value) = obj.iter().next().ok_or("empty caveat")?;
        match name.as_str() {
            "svc" => string_list(value, "svc").map(Caveat::Svc),
            "verbs" => string_list(value, "verbs").map(Caveat::Verbs),
            "can" => string_list(value, "can").map(Caveat::Can),
            "exp" => safe_int(value, "exp").map(Caveat::Exp),
            "nbf" => safe_int(value, "nbf").map(Caveat::Nbf),
            "per" => limit(value, "per").map(Caveat::Per),
            "spend" => limit(value, "spend").map(Caveat::Spend),
            "each" => Limit::from_value(value, "each")
                .map(Caveat::Each)
                .map_err(|e| e.to_string()),
            "total" => Limit::from_value(value, "total")
                .map(Caveat::Total)
                .map_err(|e| e.to_string()),
            "risk" => value
                .as_str()
                .and_then(RiskLevel::parse)
                .map(Caveat::Risk)
                .ok_or_else(|| "risk must be one of low, medium, high".to_string()),
            "only" => value
                .as_str()
                .map(|s| Caveat::Only(s.to_string()))
                .ok_or_else(|| "only must be a proposal hash string".to_string()),
            other => Err(format!(
                "unknown caveat {:?}",
                other.chars().take(40).collect::<String>()
            )),
        }
    }

    /// The caveat as JSON, exactly as it is signed.
    pub fn to_value(&self) -> Value {
        match self {
            Caveat::Svc(l) => json!({ "svc": l }),
            Caveat::Verbs(l) => json!({ "verbs": l }),
            Caveat::Can(l) => json!({ "can": l }),
            Caveat::Exp(t) => json!({ "exp": t }),
            Caveat::Nbf(t) => json!({ "nbf": t }),
            Caveat::Per(m) => json!({ "per": m.to_limit_value() }),
            Caveat::Spend(m) => json!({ "spend": m.to_limit_value() }),
            Caveat::Each(l) => json!({ "each": l.to_value() }),
            Caveat::Total(l) => json!({ "total": l.to_value() }),
            Caveat::Risk(r) => json!({ "risk": r.as_str() }),
            Caveat::Only(h) => json!({ "only": h }),
            Caveat::Invalid { raw, .. } => raw.clone(),
        }
    }

    /// Whether this is a well-formed, known caveat (§6.3). Signers must refuse
    /// to sign anything else, so a human never approves a grant that services
    /// would reject.
    pub fn is_well_formed(&self) -> bool {
        !matches!(self, Caveat::Invalid { .. })
    }

    /// The caveat's name (`svc`, `each`, …); `None` for an invalid one.
    pub fn name(&self) -> Option<&'static str> {
        Some(match self {
            Caveat::Svc(_) => "svc",
            Caveat::Verbs(_) => "verbs",
            Caveat::Can(_) => "can",
            Caveat::Exp(_) => "exp",
            Caveat::Nbf(_) => "nbf",
            Caveat::Per(_) => "per",
            Caveat::Spend(_) => "spend",
            Caveat::Each(_) => "each",
            Caveat::Total(_) => "total",
            Caveat::Risk(_) => "risk",
            Caveat::Only(_) => "only",
            Caveat::Invalid { .. } => return None,
        })
    }

    /// Whether this is a well-formed caveat that `dialect` knows (§6.3):
    /// what a signer for that dialect may sign.
    pub fn is_well_formed_in(&self, dialect: Dialect) -> bool {
        self.name()
            .is_some_and(|n| dialect.caveat_names().contains(&n))
    }

    /// Judges one request. `block_id` is the id of the block this caveat is in
    /// (§6.2), used to look up spend already reserved through it.
    pub fn check(&self, ctx: &RequestContext, block_id: &str) -> Verdict {
        let commit = ctx.verb == "COMMIT";
        if let Some(name) = self.name() {
            if !ctx.dialect.caveat_names().contains(&name) {
                return Verdict::Hard(format!("unknown caveat {name:?} in {}", ctx.dialect));
            }
        }
        match self {
            Caveat::Svc(list) => pass_if(list.contains(&ctx.service), || {
                format!("service {:?} is not in svc", ctx.service)
            }),
            Caveat::Verbs(list) => pass_if(list.contains(&ctx.verb), || {
                format!("verb {} is not in verbs", ctx.verb)
            }),
            Caveat::Can(list) => pass_if(
                list.iter().any(|p| pattern_matches(p, &ctx.capability)),
                || format!("capability {:?} matches no can pattern", ctx.capability),
            ),
            Caveat::Exp(t) => pass_if(ctx.now < *t, || "the grant has expired".into()),
            Caveat::Nbf(t) => pass_if(ctx.now >= *t, || "the grant is not valid yet".into()),
            Caveat::Per(_)
            | Caveat::Spend(_)
            | Caveat::Each(_)
            | Caveat::Total(_)
            | Caveat::Risk(_)
            | Caveat::Only(_)
                if !commit =>
            {
                Verdict::Pass
            }
            Caveat::Each(limit) => check_limit(ctx, limit, Exact(0), "the per-commit limit"),
            Caveat::Total(limit) => {
                let used = ctx
                    .used
                    .get(block_id)
                    .and_then(|m| m.get(&limit.of))
                    .copied()
                    .unwrap_or_default();
                check_limit(ctx, limit, used, "the total limit")
            }
            Caveat::Per(limit) => match ctx.proposal.as_ref() {
                None => Verdict::Hard("a COMMIT must name its proposal".into()),
                Some(p) => match &p.cost {
                    None => Verdict::Pass,
                    Some(c) if c.currency != limit.currency => Verdict::Soft(format!(
                        "cost is in {}, the per-commit limit in {}",
                        c.currency, limit.currency
                    )),
                    Some(c) if c.amount > limit.amount => {
                        Verdict::Soft(format!("cost {c} exceeds the per-commit limit {limit}"))
                    }
                    Some(_) => Verdict::Pass,
                },
            },
            Caveat::Spend(limit) => match ctx.proposal.as_ref() {
                None => Verdict::Hard("a COMMIT must name its proposal".into()),
                Some(p) => {
                    let spent = ctx.spent.get(block_id).copied().unwrap_or(0);
                    let (currency_ok, cost) = match &p.cost {
                        None => (true, 0),
                        Some(c) => (c.currency == limit.currency, c.amount),
                    };
                    if !currency_ok {
                        Verdict::Soft(format!(
                            "cost is in another currency than the spend limit ({})",
                            limit.currency
                        ))
                    } else if i128::from(spent) + i128::from(cost) > i128::from(limit.amount) {
                        Verdict::Soft(format!("the spend limit {limit} would be exceeded"))
                    } else {
                        Verdict::Pass
                    }
                }
            },
            Caveat::Risk(ceiling) => match ctx.proposal.as_ref() {
                None => Verdict::Hard("a COMMIT must name its proposal".into()),
                Some(p) => match RiskLevel::parse(&p.risk) {
                    None => {
                        Verdict::Hard("the proposal's risk level is not low, medium or high".into())
                    }
                    Some(r) if r > *ceiling => {
                        Verdict::Soft(format!("risk {r} is above the ceiling {ceiling}"))
                    }
                    Some(_) => Verdict::Pass,
                },
            },
            Caveat::Only(hash) => match ctx.proposal.as_ref() {
                Some(p) if p.hash == *hash => Verdict::Pass,
                _ => Verdict::Hard("this grant is for another proposal".into()),
            },
            Caveat::Invalid { why, .. } => Verdict::Hard(format!("malformed caveat: {why}")),
        }
    }

    /// The caveat in plain words, for `parley inspect`: times in §9.2's UTC
    /// form with the raw value, as a tool for programs and experts says them.
    pub fn describe(&self) -> String {
        match self {
            Caveat::Exp(t) => format!("until {} (exp {t})", crate::lens::time(*t)),
            Caveat::Nbf(t) => format!("not before {} (nbf {t})", crate::lens::time(*t)),
            other => other.describe_with(crate::lens::time),
        }
    }

    /// The caveat in plain words with times said by `time`: a screen for a
    /// person passes its own local-time format, so that a grant's end reads
    /// the same in every line of a review.
    pub fn describe_with(&self, time: impl Fn(i64) -> String) -> String {
        fn list(l: &[String]) -> String {
            if l.is_empty() {
                "nothing (empty list)".into()
            } else {
                l.iter()
                    .map(|s| format!("{s:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        }
        match self {
            Caveat::Svc(l) => format!("only at the services {}", list(l)),
            Caveat::Verbs(l) => format!("only the verbs {}", list(l)),
            Caveat::Can(l) => format!("only the capabilities {}", list(l)),
            Caveat::Exp(t) => format!("until {}", time(*t)),
            Caveat::Nbf(t) => format!("not before {}", time(*t)),
            Caveat::Per(m) => format!("each commit costs at most {m}, else ask the human"),
            Caveat::Spend(m) => {
                format!("at most {m} in total through this grant, else ask the human")
            }
            Caveat::Each(l) => {
                format!(
                    "each commit uses at most {}, else ask the human",
                    l.describe()
                )
            }
            Caveat::Total(l) => format!(
                "at most {} in total through this grant, else ask the human",
                l.describe()
            ),
            Caveat::Risk(r) => format!("commits up to {r} risk, else ask the human"),
            Caveat::Only(h) => format!("only a COMMIT of the proposal with hash {h}"),
            Caveat::Invalid { why, raw } => format!(
                "INVALID caveat {} ({why}): refuses every request",
                crate::lens::compact_json(raw)
            ),
        }
    }
}

/// §6.3 `each`/`total` for a COMMIT: the proposal's use of `limit.of`,
/// on top of `already`, against the limit. A malformed `uses` is a hard
/// failure whichever measure it breaks; a unit mismatch or a value over the
/// limit is soft (the human may consent); a measure not reported passes.
fn check_limit(ctx: &RequestContext, limit: &Limit, already: Exact, what: &str) -> Verdict {
    let Some(p) = ctx.proposal.as_ref() else {
        return Verdict::Hard("a COMMIT must name its proposal".into());
    };
    let uses = match p.uses.as_ref().map(Uses::from_value) {
        None => return Verdict::Pass,
        Some(Err(e)) => return Verdict::Hard(format!("the proposal's uses is malformed: {e}")),
        Some(Ok(u)) => u,
    };
    let Some(q) = uses.get(&limit.of) else {
        return Verdict::Pass;
    };
    let unit = |u: Option<&str>| u.map_or_else(|| "no unit".to_string(), str::to_string);
    if !q.same_unit(limit.max.unit.as_deref()) {
        return Verdict::Soft(format!(
            "{} is in {}, but {what} is in {}",
            limit.of,
            unit(q.unit.as_deref()),
            unit(limit.max.unit.as_deref())
        ));
    }
    match already.checked_add(q.exact()) {
        Some(sum) if sum <= limit.max.exact() => Verdict::Pass,
        _ => Verdict::Soft(format!(
            "{} {q} would pass {what} of {}",
            limit.of, limit.max
        )),
    }
}

/// §6.3 `can`: an exact name, `*`, or a prefix ending in `.*` (`calendar.*`
/// matches `calendar.find` but not `calendar` or `calendarx.find`).
pub fn pattern_matches(pattern: &str, capability: &str) -> bool {
    if pattern == "*" || pattern == capability {
        return true;
    }
    match pattern.strip_suffix('*') {
        Some(prefix) if prefix.ends_with('.') => capability.starts_with(prefix),
        _ => false,
    }
}

fn pass_if(ok: bool, why: impl FnOnce() -> String) -> Verdict {
    if ok {
        Verdict::Pass
    } else {
        Verdict::Hard(why())
    }
}

fn string_list(v: &Value, name: &str) -> Result<Vec<String>, String> {
    let arr = v
        .as_array()
        .ok_or_else(|| format!("{name} must be a list of strings"))?;
    arr.iter()
        .map(|s| {
            s.as_str()
                .map(str::to_string)
                .ok_or_else(|| format!("{name} must be a list of strings"))
        })
        .collect()
}

fn safe_int(v: &Value, name: &str) -> Result<i64, String> {
    v.as_i64()
        .filter(|i| i.unsigned_abs() <= MAX_SAFE_INTEGER as u64)
        .ok_or_else(|| format!("{name} must be an integer (unix seconds)"))
}

fn limit(v: &Value, name: &str) -> Result<Money, String> {
    let err = || format!("{name} must be {{\"max\": int, \"currency\": string}}");
    let obj: &Map<String, Value> = v.as_object().ok_or_else(err)?;
    if obj.len() != 2 {
        return Err(err());
    }
    let max = obj
        .get("max")
        .and_then(Value::as_i64)
        .filter(|m| (0..=MAX_SAFE_INTEGER).contains(m))
        .ok_or_else(err)?;
    let currency = obj
        .get("currency")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
        .ok_or_else(err)?;
    Ok(Money {
        amount: max,
        currency: currency.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns() {
        assert!(pattern_matches("*", "anything"));
        assert!(pattern_matches("calendar.*", "calendar.find"));
        assert!(pattern_matches("calendar.*", "calendar.events.list"));
        assert!(!pattern_matches("calendar.*", "calendar"));
        assert!(!pattern_matches("calendar.*", "calendarx.find"));
        assert!(!pattern_matches("calendar*", "calendar.find"));
        assert!(pattern_matches("calendar.find", "calendar.find"));
        assert!(!pattern_matches("", "x"));
    }

    #[test]
    fn odd_values_fail_closed() {
        for raw in [
            json!({"risk": "toString"}),
            json!({"risk": "__proto__"}),
            json!(null),
            json!({"svc": "shop.example"}),
            json!({"svc": [1]}),
            json!({"exp": 1.5}),
            json!({"exp": "1790000000"}),
            json!({"exp": 9007199254740992i64}),
            json!({"per": {"max": 1}}),
            json!({"per": {"max": -1, "currency": "USD"}}),
            json!({"per": {"max": 1, "currency": "USD", "extra": 0}}),
            json!({"svc": ["a"], "verbs": ["ASK"]}),
            json!({}),
            json!({"nested": {"svc": ["a"]}}),
            json!([{"svc": ["a"]}]),
        ] {
            let c = Caveat::parse(&raw);
            assert!(!c.is_well_formed(), "{raw}");
            let ctx = RequestContext {
                verb: "ASK".into(),
                ..Default::default()
            };
            assert!(matches!(c.check(&ctx, "b"), Verdict::Hard(_)), "{raw}");
        }
    }

    #[test]
    fn round_trip_of_well_formed() {
        for raw in [
            json!({"svc": ["a", "b"]}),
            json!({"per": {"max": 4000, "currency": "USD"}}),
            json!({"risk": "medium"}),
            json!({"only": "h"}),
            json!({"nbf": -5}),
        ] {
            let c = Caveat::parse(&raw);
            assert!(c.is_well_formed());
            assert_eq!(
                crate::canonical::canonical(&c.to_value()).unwrap(),
                crate::canonical::canonical(&raw).unwrap()
            );
        }
    }
}

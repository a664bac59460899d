//! Whether an edited grant allows more than the grant an agent asked for.
//!
//! The human may edit a grant request in the app's form. Narrowing is always
//! fine; widening must be on purpose. [`widenings`] compares the requested
//! caveats with the edited ones and names, in words, every way the edit
//! allows something the request did not ("adds COMMIT", "allows every
//! capability", "raises the per-action cap from 40.00 USD to 80.00 USD").
//! The engine refuses a widened grant unless the caller passes exactly this
//! list back as what the human saw and confirmed
//! ([`crate::review::ReviewedGrant::narrowed`]).
//!
//! Caveats are conjunctive (§6.3): every caveat must pass. So the effective
//! limit of a kind is the intersection of its caveats (the tightest cap, the
//! earliest expiry), and a kind with no caveat allows everything. The
//! comparison is conservative: where an exact answer would need reasoning
//! about several `can` caveats at once, it reports a widening that the human
//! then confirms, never misses one.

use crate::display::safe;
use parley_core::caveat::{Caveat, RiskLevel};
use parley_core::lens;
use parley_core::money::Money;

/// Every way `edited` allows more than `requested`, in words, in a fixed
/// order (verbs, services, capabilities, money, risk, proposal, time). Empty
/// when the edit only narrows or keeps the request.
pub fn widenings(requested: &[Caveat], edited: &[Caveat]) -> Vec<String> {
    let mut out = Vec::new();
    word_lists(
        &lists(requested, Kind::Verbs),
        &lists(edited, Kind::Verbs),
        "allows every verb",
        |v| format!("adds {}", safe(v)),
        &mut out,
    );
    word_lists(
        &lists(requested, Kind::Svc),
        &lists(edited, Kind::Svc),
        "allows every service",
        |s| format!("adds service {}", safe(s)),
        &mut out,
    );
    capabilities(
        &lists(requested, Kind::Can),
        &lists(edited, Kind::Can),
        &mut out,
    );
    money(requested, edited, Kind::Per, "per-action cap", &mut out);
    money(requested, edited, Kind::Spend, "spend cap", &mut out);
    risk(requested, edited, &mut out);
    only(requested, edited, &mut out);
    times(requested, edited, &mut out);
    out
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Verbs,
    Svc,
    Can,
    Per,
    Spend,
}

fn lists(cs: &[Caveat], kind: Kind) -> Vec<&[String]> {
    cs.iter()
        .filter_map(|c| match (c, kind) {
            (Caveat::Verbs(l), Kind::Verbs) | (Caveat::Svc(l), Kind::Svc) => Some(l.as_slice()),
            (Caveat::Can(l), Kind::Can) => Some(l.as_slice()),
            _ => None,
        })
        .collect()
}

/// The values every list allows (their intersection), in first-list order;
/// `None` when there is no list (everything allowed).
fn intersection<'a>(ls: &[&'a [String]]) -> Option<Vec<&'a String>> {
    let (first, rest) = ls.split_first()?;
    let mut out: Vec<&String> = Vec::new();
    for v in first.iter() {
        if rest.iter().all(|l| l.contains(v)) && !out.contains(&v) {
            out.push(v);
        }
    }
    Some(out)
}

fn word_lists(
    requested: &[&[String]],
    edited: &[&[String]],
    everything: &str,
    added: impl Fn(&str) -> String,
    out: &mut Vec<String>,
) {
    let Some(req) = intersection(requested) else {
        return;
    };
    match intersection(edited) {
        None => out.push(everything.to_string()),
        Some(ed) => {
            for v in ed {
                if !req.contains(&v) {
                    out.push(added(v));
                }
            }
        }
    }
}

/// Whether every capability `inner` matches is matched by `outer` (§6.3
/// patterns: `*`, an exact name, or a prefix ending in `.*`).
fn covers(outer: &str, inner: &str) -> bool {
    if outer == "*" || outer == inner {
        return true;
    }
    if inner == "*" {
        return false;
    }
    match outer.strip_suffix('*') {
        Some(prefix) if prefix.ends_with('.') => inner.starts_with(prefix),
        _ => false,
    }
}

fn capabilities(requested: &[&[String]], edited: &[&[String]], out: &mut Vec<String>) {
    if requested.is_empty() {
        return;
    }
    if edited.is_empty() {
        out.push("allows every capability".into());
        return;
    }
    let mut named: Vec<String> = Vec::new();
    for req in requested {
        // The edit is within this requested caveat if one edited caveat is
        // (the others only narrow further); otherwise name what the closest
        // one adds.
        let uncovered: Vec<&String> = edited
            .iter()
            .map(|ed| {
                ed.iter()
                    .filter(|p| !req.iter().any(|r| covers(r, p)))
                    .collect::<Vec<_>>()
            })
            .min_by_key(Vec::len)
            .unwrap_or_default();
        for p in uncovered {
            let w = if p == "*" {
                "allows every capability".to_string()
            } else {
                format!("allows capability {}", safe(p))
            };
            if !named.contains(&w) {
                named.push(w);
            }
        }
    }
    out.extend(named);
}

fn limits(cs: &[Caveat], kind: Kind) -> Vec<&Money> {
    cs.iter()
        .filter_map(|c| match (c, kind) {
            (Caveat::Per(m), Kind::Per) | (Caveat::Spend(m), Kind::Spend) => Some(m),
            _ => None,
        })
        .collect()
}

/// What a set of money caps allows a cost to be: `None` no cap at all,
/// `Some(None)` no cost at all (caps in different currencies), else the
/// currency and the lowest cap.
fn allowed(caps: &[&Money]) -> Option<Option<(String, i64)>> {
    let first = caps.first()?;
    if caps.iter().any(|m| m.currency != first.currency) {
        return Some(None);
    }
    let max = caps.iter().map(|m| m.amount).min().unwrap_or(first.amount);
    Some(Some((first.currency.clone(), max)))
}

fn shown_money(amount: i64, currency: &str) -> String {
    safe(
        &Money {
            amount,
            currency: currency.to_string(),
        }
        .to_string(),
    )
}

fn money(requested: &[Caveat], edited: &[Caveat], kind: Kind, name: &str, out: &mut Vec<String>) {
    let Some(req) = allowed(&limits(requested, kind)) else {
        return;
    };
    let was = |r: &Option<(String, i64)>| match r {
        Some((c, a)) => shown_money(*a, c),
        None => "nothing with a cost".to_string(),
    };
    match (allowed(&limits(edited, kind)), &req) {
        (None, _) => out.push(format!("removes the {name} (was {})", was(&req))),
        (Some(None), _) => {}
        (Some(Some((c, a))), None) => out.push(format!(
            "allows costs in {} under the {name}, up to {}",
            safe(&c),
            shown_money(a, &c)
        )),
        (Some(Some((c, a))), Some((rc, _))) if &c != rc => out.push(format!(
            "changes the {name}'s currency from {} to {} (up to {})",
            safe(rc),
            safe(&c),
            shown_money(a, &c)
        )),
        (Some(Some((c, a))), Some((_, ra))) if a > *ra => out.push(format!(
            "raises the {name} from {} to {}",
            shown_money(*ra, &c),
            shown_money(a, &c)
        )),
        _ => {}
    }
}

fn ceiling(cs: &[Caveat]) -> Option<RiskLevel> {
    cs.iter()
        .filter_map(|c| match c {
            Caveat::Risk(r) => Some(*r),
            _ => None,
        })
        .min()
}

fn risk(requested: &[Caveat], edited: &[Caveat], out: &mut Vec<String>) {
    let Some(req) = ceiling(requested) else {
        return;
    };
    match ceiling(edited) {
        None => out.push(format!("removes the risk ceiling (was up to {req})")),
        Some(ed) if ed > req => out.push(format!("raises the risk ceiling from {req} to {ed}")),
        Some(_) => {}
    }
}

/// The one proposal hash a set of `only` caveats allows: `None` no caveat,
/// `Some(None)` none at all (two different hashes).
fn only_hash(cs: &[Caveat]) -> Option<Option<&String>> {
    let hashes: Vec<&String> = cs
        .iter()
        .filter_map(|c| match c {
            Caveat::Only(h) => Some(h),
            _ => None,
        })
        .collect();
    let first = hashes.first()?;
    Some(hashes.iter().all(|h| h == first).then_some(*first))
}

fn only(requested: &[Caveat], edited: &[Caveat], out: &mut Vec<String>) {
    let Some(req) = only_hash(requested) else {
        return;
    };
    match (only_hash(edited), req) {
        (None, _) => out.push("removes the limit to a single proposal".into()),
        (Some(Some(e)), r) if r != Some(e) => out.push(format!(
            "allows proposal {} instead of the one requested",
            safe(e)
        )),
        _ => {}
    }
}

fn times(requested: &[Caveat], edited: &[Caveat], out: &mut Vec<String>) {
    let nbf = |cs: &[Caveat]| {
        cs.iter()
            .filter_map(|c| match c {
                Caveat::Nbf(t) => Some(*t),
                _ => None,
            })
            .max()
    };
    let exp = |cs: &[Caveat]| {
        cs.iter()
            .filter_map(|c| match c {
                Caveat::Exp(t) => Some(*t),
                _ => None,
            })
            .min()
    };
    if let Some(r) = nbf(requested) {
        match nbf(edited) {
            None => out.push(format!(
                "removes the start time (was from {})",
                crate::local_time::when(r)
            )),
            Some(e) if e < r => out.push(format!(
                "starts earlier: from {} instead of {} ({} sooner)",
                crate::local_time::when(e),
                crate::local_time::when(r),
                lens::duration(r - e)
            )),
            Some(_) => {}
        }
    }
    if let Some(r) = exp(requested) {
        match exp(edited) {
            None => out.push(format!(
                "removes the expiry (was {})",
                crate::local_time::when(r)
            )),
            Some(e) if e > r => out.push(format!(
                "lasts longer: until {} instead of {} ({} more)",
                crate::local_time::when(e),
                crate::local_time::when(r),
                lens::duration(e - r)
            )),
            Some(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn caveats(v: Value) -> Vec<Caveat> {
        v.as_array()
            .expect("a list")
            .iter()
            .map(Caveat::parse)
            .collect()
    }

    const T: i64 = 1_800_000_000;

    #[test]
    fn each_widening_is_named_and_each_narrowing_is_not() {
        let base = json!([{"svc": ["shop.example"]}, {"verbs": ["ASK", "INTENT"]},
            {"can": ["shop.order"]}, {"per": {"max": 4000, "currency": "USD"}},
            {"spend": {"max": 10000, "currency": "USD"}}, {"risk": "low"}, {"exp": T}]);
        let when = crate::local_time::when;
        let later = format!(
            "lasts longer: until {} instead of {} (1h more)",
            when(T + 3600),
            when(T)
        );
        let earlier = format!(
            "starts earlier: from {} instead of {} (1h sooner)",
            when(T - 3600),
            when(T)
        );
        let cases: Vec<(&str, Value, Value, Vec<&str>)> = vec![
            ("the same caveats", base.clone(), base.clone(), vec![]),
            (
                "the same caveats in another order",
                base.clone(),
                json!([{"exp": T}, {"risk": "low"}, {"spend": {"max": 10000, "currency": "USD"}},
                    {"per": {"max": 4000, "currency": "USD"}}, {"can": ["shop.order"]},
                    {"verbs": ["INTENT", "ASK"]}, {"svc": ["shop.example"]}]),
                vec![],
            ),
            (
                "a verb added",
                json!([{"verbs": ["ASK", "INTENT"]}]),
                json!([{"verbs": ["ASK", "INTENT", "COMMIT"]}]),
                vec!["adds COMMIT"],
            ),
            (
                "a verb removed (narrower)",
                json!([{"verbs": ["ASK", "INTENT"]}]),
                json!([{"verbs": ["ASK"]}]),
                vec![],
            ),
            (
                "the verbs caveat dropped",
                json!([{"verbs": ["ASK"]}]),
                json!([]),
                vec!["allows every verb"],
            ),
            (
                "an empty verbs list made into a real one",
                json!([{"verbs": []}]),
                json!([{"verbs": ["ASK"]}]),
                vec!["adds ASK"],
            ),
            (
                "a verb named twice by two caveats is allowed once",
                json!([{"verbs": ["ASK", "COMMIT"]}, {"verbs": ["ASK"]}]),
                json!([{"verbs": ["ASK", "COMMIT"]}]),
                vec!["adds COMMIT"],
            ),
            (
                "a service added",
                json!([{"svc": ["shop.example"]}]),
                json!([{"svc": ["shop.example", "x.example"]}]),
                vec!["adds service x.example"],
            ),
            (
                "a service id with a space split into two",
                json!([{"svc": ["shop example"]}]),
                json!([{"svc": ["shop", "example"]}]),
                vec!["adds service shop", "adds service example"],
            ),
            (
                "the service caveat dropped",
                json!([{"svc": ["shop.example"]}]),
                json!([{"verbs": ["ASK"]}]),
                vec!["allows every service"],
            ),
            (
                "an empty capability list dropped",
                json!([{"can": []}]),
                json!([]),
                vec!["allows every capability"],
            ),
            (
                "an empty capability list given a name",
                json!([{"can": []}]),
                json!([{"can": ["shop.order"]}]),
                vec!["allows capability shop.order"],
            ),
            (
                "a capability under a requested prefix (narrower)",
                json!([{"can": ["shop.*"]}]),
                json!([{"can": ["shop.order", "shop.cart.*"]}]),
                vec![],
            ),
            (
                "a prefix made wider",
                json!([{"can": ["shop.cart.*"]}]),
                json!([{"can": ["shop.*"]}]),
                vec!["allows capability shop.*"],
            ),
            (
                "every capability",
                json!([{"can": ["shop.order"]}]),
                json!([{"can": ["*"]}]),
                vec!["allows every capability"],
            ),
            (
                "the per-action cap raised",
                json!([{"per": {"max": 4000, "currency": "USD"}}]),
                json!([{"per": {"max": 8000, "currency": "USD"}}]),
                vec!["raises the per-action cap from 40.00 USD to 80.00 USD"],
            ),
            (
                "the per-action cap lowered (narrower)",
                json!([{"per": {"max": 4000, "currency": "USD"}}]),
                json!([{"per": {"max": 1000, "currency": "USD"}}]),
                vec![],
            ),
            (
                "the currency's case changed (usd to USD)",
                json!([{"per": {"max": 4000, "currency": "usd"}}]),
                json!([{"per": {"max": 4000, "currency": "USD"}}]),
                vec!["changes the per-action cap's currency from usd to USD (up to 40.00 USD)"],
            ),
            (
                "the spend cap removed",
                json!([{"spend": {"max": 10000, "currency": "USD"}}]),
                json!([]),
                vec!["removes the spend cap (was 100.00 USD)"],
            ),
            (
                "a second, tighter spend cap kept by the edit",
                json!([{"spend": {"max": 10000, "currency": "USD"}}, {"spend": {"max": 5000, "currency": "USD"}}]),
                json!([{"spend": {"max": 6000, "currency": "USD"}}]),
                vec!["raises the spend cap from 50.00 USD to 60.00 USD"],
            ),
            (
                "caps in two currencies allow no cost; one cap then widens",
                json!([{"per": {"max": 100, "currency": "USD"}}, {"per": {"max": 100, "currency": "EUR"}}]),
                json!([{"per": {"max": 100, "currency": "USD"}}]),
                vec!["allows costs in USD under the per-action cap, up to 1.00 USD"],
            ),
            (
                "the risk ceiling raised",
                json!([{"risk": "low"}]),
                json!([{"risk": "high"}]),
                vec!["raises the risk ceiling from low to high"],
            ),
            (
                "the risk ceiling removed",
                json!([{"risk": "medium"}]),
                json!([]),
                vec!["removes the risk ceiling (was up to medium)"],
            ),
            (
                "the single-proposal limit removed",
                json!([{"only": "abc"}]),
                json!([]),
                vec!["removes the limit to a single proposal"],
            ),
            (
                "the single proposal swapped",
                json!([{"only": "abc"}]),
                json!([{"only": "xyz"}]),
                vec!["allows proposal xyz instead of the one requested"],
            ),
            (
                "a later expiry",
                json!([{"exp": T}]),
                json!([{"exp": T + 3600}]),
                vec![later.as_str()],
            ),
            (
                "an earlier expiry (narrower)",
                json!([{"exp": T}]),
                json!([{"exp": T - 60}]),
                vec![],
            ),
            (
                "an earlier start",
                json!([{"nbf": T}]),
                json!([{"nbf": T - 3600}]),
                vec![earlier.as_str()],
            ),
            (
                "names shown display-safe",
                json!([{"svc": ["a"]}]),
                json!([{"svc": ["a", "b\u{202e}c"]}]),
                vec!["adds service b\\u{202e}c"],
            ),
            (
                "nothing requested, anything edited: nothing widens",
                json!([]),
                base.clone(),
                vec![],
            ),
        ];
        for (name, requested, edited, want) in cases {
            let got = widenings(&caveats(requested), &caveats(edited));
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn several_widenings_are_all_named_in_a_fixed_order() {
        let requested = caveats(json!([{"svc": ["a"]}, {"verbs": ["ASK"]}, {"can": ["x"]},
            {"per": {"max": 100, "currency": "USD"}}, {"risk": "low"}, {"exp": T}]));
        let edited = caveats(
            json!([{"exp": T + 60}, {"risk": "high"}, {"verbs": ["ASK", "COMMIT"]},
            {"svc": ["a", "b"]}]),
        );
        let later = format!(
            "lasts longer: until {} instead of {} (1m more)",
            crate::local_time::when(T + 60),
            crate::local_time::when(T)
        );
        assert_eq!(
            widenings(&requested, &edited),
            vec![
                "adds COMMIT",
                "adds service b",
                "allows every capability",
                "removes the per-action cap (was 1.00 USD)",
                "raises the risk ceiling from low to high",
                later.as_str(),
            ]
        );
    }
}

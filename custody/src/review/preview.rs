//! The grant in one sentence, as the review, the grant form, the terminal
//! prompt and the audit view show it. The grant form shows this sentence
//! too (from its `grant_preview` call), never one of its own: the words a
//! person checks come from the caveats custody will sign.

use parley_core::caveat::Caveat;
use parley_custody_client::ui_constants::verb_words;

/// "may ask for offers and state intents at shop.example for shop.*, up to
/// 40.00 USD each, 100.00 USD in total, until 2026-12-24 18:00": the grant
/// in one sentence. Verbs, services and capabilities first, then every limit
/// in the order the caveats give them; times in the viewer's local time
/// ([`crate::local_time::when`]). A grant without a verbs caveat "may do
/// anything"; a caveat that is not understood is said to be invalid, never
/// left out.
pub fn preview(caveats: &[Caveat]) -> String {
    let mut verbs: Option<String> = None;
    let mut scope = Vec::new();
    let mut limits = Vec::new();
    for c in caveats {
        match c {
            Caveat::Verbs(l) => {
                let words = and_list(&l.iter().map(|v| verb_words(v)).collect::<Vec<_>>());
                match verbs {
                    None => verbs = Some(words),
                    // Each verbs caveat narrows the grant further.
                    Some(_) => limits.push(format!("and only {words}")),
                }
            }
            Caveat::Svc(l) => scope.push(format!("at {}", and_list(l))),
            Caveat::Can(l) => scope.push(format!("for {}", and_list(l))),
            Caveat::Per(m) => limits.push(format!("up to {m} each")),
            Caveat::Spend(m) => limits.push(format!("{m} in total")),
            Caveat::Each(l) => limits.push(format!("up to {} each", l.describe())),
            Caveat::Total(l) => limits.push(format!("at most {} in total", l.describe())),
            Caveat::Risk(r) => limits.push(format!("risk up to {r}")),
            Caveat::Only(h) => limits.push(format!("only proposal {h}")),
            Caveat::Nbf(t) => limits.push(format!("from {}", crate::local_time::when(*t))),
            Caveat::Exp(t) => limits.push(format!("until {}", crate::local_time::when(*t))),
            Caveat::Invalid { .. } => limits.push("(invalid caveat)".into()),
        }
    }
    let mut out = format!("may {}", verbs.as_deref().unwrap_or("do anything"));
    for part in scope {
        out.push(' ');
        out.push_str(&part);
    }
    for limit in limits {
        out.push_str(", ");
        out.push_str(&limit);
    }
    out
}

/// [`preview`] for a grant to `holder`. A grant whose every `svc` is the
/// holder's own key is a YEA job server's policy (SPEC-approval §2: the
/// server's key is its service id) and is said as one: "this job server may
/// run refund without asking, up to 25.00 USD each, at most 100.00 USD in
/// total, until …". The parenthesis says whose rule "undoable only" is: the
/// protocol's, kept by a server that follows it (SPEC-approval §2), not a
/// caveat of this grant.
pub fn preview_for(holder: &str, caveats: &[Caveat]) -> String {
    let svcs: Vec<&Vec<String>> = caveats
        .iter()
        .filter_map(|c| match c {
            Caveat::Svc(l) => Some(l),
            _ => None,
        })
        .collect();
    let own = !svcs.is_empty() && svcs.iter().all(|l| l.len() == 1 && l[0] == holder);
    let commits_only = caveats
        .iter()
        .any(|c| matches!(c, Caveat::Verbs(l) if l.len() == 1 && l[0] == "COMMIT"));
    if !own || !commits_only {
        return preview(caveats);
    }
    let tools: Vec<&String> = caveats
        .iter()
        .filter_map(|c| match c {
            Caveat::Can(l) => Some(l.iter()),
            _ => None,
        })
        .flatten()
        .collect();
    let what = if tools.is_empty() {
        "any of its tools".to_string()
    } else {
        and_list(&tools)
    };
    let rest: Vec<Caveat> = caveats
        .iter()
        .filter(|c| !matches!(c, Caveat::Svc(_) | Caveat::Verbs(_) | Caveat::Can(_)))
        .cloned()
        .collect();
    let limits = preview(&rest);
    let limits = limits.strip_prefix("may do anything").unwrap_or(&limits);
    format!("this job server may run {what} without asking (a YEA server runs only plans it can undo this way){limits}")
}

/// `a`, `a and b`, `a, b and c`.
fn and_list<S: AsRef<str>>(items: &[S]) -> String {
    match items {
        [] => String::new(),
        [one] => one.as_ref().to_owned(),
        [init @ .., last] => {
            let init: Vec<&str> = init.iter().map(AsRef::as_ref).collect();
            format!("{} and {}", init.join(", "), last.as_ref())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sentence(caveats: serde_json::Value) -> String {
        let list: Vec<Caveat> = caveats
            .as_array()
            .unwrap()
            .iter()
            .map(Caveat::parse)
            .collect();
        preview(&list)
    }

    #[test]
    fn a_grant_form_grant_reads_as_one_sentence() {
        let exp = 1_790_000_000;
        let s = sentence(json!([
            {"svc": ["shop.example"]},
            {"verbs": ["ASK", "INTENT", "COMMIT"]},
            {"per": {"max": 4000, "currency": "USD"}},
            {"spend": {"max": 10000, "currency": "USD"}},
            {"exp": exp},
        ]));
        assert_eq!(
            s,
            format!(
                "may ask for offers, state intents and commit (place orders, book, pay) at \
                 shop.example, up to 40.00 USD each, 100.00 USD in total, until {}",
                crate::local_time::when(exp)
            )
        );
    }

    #[test]
    fn measured_limits_risk_and_a_start_are_said_in_order() {
        let s = sentence(json!([
            {"svc": ["shop.example", "mail.example"]},
            {"verbs": ["COMMIT"]},
            {"can": ["shop.*"]},
            {"each": {"of": "spend", "max": 4000, "scale": 2, "unit": "USD"}},
            {"total": {"of": "emails", "max": 3}},
            {"total": {"of": "storage", "max": 15, "scale": 1, "unit": "GB"}},
            {"risk": "medium"},
            {"nbf": 1_790_000_000},
            {"exp": 1_790_003_600},
        ]));
        assert!(
            s.starts_with(
                "may commit (place orders, book, pay) at shop.example and mail.example for \
                 shop.*, up to 40.00 USD each, at most 3 emails in total, at most 1.5 GB of \
                 storage in total, risk up to medium, from "
            ),
            "{s}"
        );
        assert!(
            s.ends_with(&format!(
                ", until {}",
                crate::local_time::when(1_790_003_600)
            )),
            "{s}"
        );
    }

    #[test]
    fn a_job_servers_policy_is_said_as_one() {
        let server = "ed25519:bnoc3Smwt4_ROvTFWY_v9O8qlxZuPKby5Pv8zYBQW_E";
        let list: Vec<Caveat> = json!([
            {"svc": [server]}, {"verbs": ["COMMIT"]}, {"can": ["refund"]},
            {"each": {"of": "spend", "max": 2500, "scale": 2, "unit": "USD"}},
            {"total": {"of": "spend", "max": 10000, "scale": 2, "unit": "USD"}},
            {"exp": 1_790_000_000},
        ])
        .as_array()
        .unwrap()
        .iter()
        .map(Caveat::parse)
        .collect();
        assert_eq!(
            preview_for(server, &list),
            format!(
                "this job server may run refund without asking (a YEA server runs only plans it can \
                 undo this way), up to \
                 25.00 USD each, at most 100.00 USD in total, until {}",
                crate::local_time::when(1_790_000_000)
            )
        );
        // Another holder: the ordinary sentence.
        assert_eq!(preview_for("ed25519:other", &list), preview(&list));
    }

    #[test]
    fn nothing_is_left_out() {
        assert_eq!(sentence(json!([])), "may do anything");
        assert_eq!(
            sentence(json!([{"verbs": ["ASK", "INTENT"]}, {"verbs": ["ASK"]}, {"bogus": 1}])),
            "may ask for offers and state intents, and only ask for offers, (invalid caveat)"
        );
        assert_eq!(
            sentence(json!([{"verbs": ["FLY"]}, {"only": "mH3v"}])),
            "may FLY, only proposal mH3v"
        );
    }
}

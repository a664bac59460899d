//! Shared fixtures for the fuzz targets: the conformance keys, request
//! contexts, a review context, and the checks several targets assert.
//!
//! The keys are the seeds of `conformance/grants.json` (principal = 0x01…,
//! agent = 0x02…, sub-agent = 0x03…), so the seed corpus extracted from the
//! vectors verifies and reaches the deep code paths.

use parley_core::caveat::{CommitFacts, RequestContext};
use parley_core::json::{self, Limits};
use parley_core::money::Money;
use parley_core::{PublicKey, SecretKey};
use parley_custody::display::{is_display_safe, MAX_FIELD_CHARS};
use parley_custody::review::{Requester, Review, ReviewContext, ReviewLimits};
use serde_json::Value;
use std::sync::OnceLock;
use zeroize::Zeroizing;

/// The time the vectors use.
pub const NOW: i64 = 1_790_000_000;

/// The key whose seed is 32 bytes of `b`.
pub fn key(b: u8) -> &'static SecretKey {
    static KEYS: OnceLock<Vec<SecretKey>> = OnceLock::new();
    let keys = KEYS.get_or_init(|| {
        (0u8..8)
            .map(|i| SecretKey::from_seed(&Zeroizing::new([i; 32])))
            .collect()
    });
    &keys[usize::from(b) % keys.len()]
}

/// The principal of the vectors.
pub fn principal() -> &'static SecretKey {
    key(1)
}

/// The agent of the vectors.
pub fn agent() -> &'static SecretKey {
    key(2)
}

/// Strict JSON as custody reads it, with the given depth.
pub fn parse(data: &[u8], max_depth: usize) -> Option<Value> {
    json::parse(
        data,
        Limits {
            max_depth,
            max_bytes: 1 << 20,
        },
    )
    .ok()
}

fn s(v: Option<&Value>, default: &str) -> String {
    v.and_then(Value::as_str).unwrap_or(default).to_string()
}

/// A request context read leniently from fuzz JSON (missing or ill-typed
/// fields take the vectors' defaults), so the fuzzer can steer it.
pub fn context_from(v: Option<&Value>) -> RequestContext {
    let empty = Value::Null;
    let v = v.unwrap_or(&empty);
    let proposal = match v.get("proposal") {
        Some(Value::Null) => None,
        Some(p) => Some(CommitFacts {
            hash: s(p.get("hash"), "h"),
            cost: p.get("cost").and_then(|c| {
                Some(Money {
                    amount: c.get("amount")?.as_i64()?,
                    currency: c.get("currency")?.as_str()?.to_string(),
                })
            }),
            uses: p.get("uses").cloned(),
            risk: s(p.get("risk"), "low"),
        }),
        None => Some(CommitFacts {
            hash: "h".into(),
            cost: Some(Money {
                amount: 7136,
                currency: "USD".into(),
            }),
            risk: "medium".into(),
            ..Default::default()
        }),
    };
    RequestContext {
        service: s(v.get("service"), "shop.example"),
        verb: s(v.get("verb"), "COMMIT"),
        capability: s(v.get("capability"), "shop.order"),
        now: v.get("now").and_then(Value::as_i64).unwrap_or(NOW),
        proposal,
        spent: v
            .get("spent")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, n)| Some((k.clone(), n.as_i64()?)))
                    .collect()
            })
            .unwrap_or_default(),
        ..Default::default()
    }
}

/// A fixed set of contexts covering every verb and the COMMIT facts.
pub fn contexts() -> &'static [RequestContext] {
    static CTX: OnceLock<Vec<RequestContext>> = OnceLock::new();
    CTX.get_or_init(|| {
        let commit = |hash: &str, cost: Option<(i64, &str)>, risk: &str| RequestContext {
            service: "shop.example".into(),
            verb: "COMMIT".into(),
            capability: "shop.order".into(),
            now: NOW,
            proposal: Some(CommitFacts {
                hash: hash.into(),
                cost: cost.map(|(amount, c)| Money {
                    amount,
                    currency: c.into(),
                }),
                risk: risk.into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        let plain = |verb: &str, cap: &str| RequestContext {
            service: "shop.example".into(),
            verb: verb.into(),
            capability: cap.into(),
            now: NOW,
            proposal: None,
            ..Default::default()
        };
        vec![
            plain("ASK", "shop.search"),
            plain("INTENT", "shop.order"),
            plain("UNDO", "shop.order"),
            plain("COMMIT", "shop.order"),
            commit(
                "wVzsIwOyialnzODX8xit4H9OCuoFTKri6vupgDQ3lM8",
                Some((7136, "USD")),
                "medium",
            ),
            commit("h", None, "low"),
            commit("h", Some((i64::MAX, "JPY")), "high"),
            commit("h", Some((1, "USD")), "toString"),
        ]
    })
}

/// The review context custody would use: it holds the vectors' principal.
pub fn review_context(now: i64) -> ReviewContext<'static> {
    static PRINCIPALS: OnceLock<Vec<PublicKey>> = OnceLock::new();
    ReviewContext {
        now,
        principals: PRINCIPALS.get_or_init(|| vec![principal().public()]),
        principal_labels: &[],
        limits: ReviewLimits::default(),
        requester: Requester {
            user: "agent".into(),
            uid: 1001,
            pid: Some(42),
            exe: Some("/usr/bin/agent".into()),
            chain: Vec::new(),
            chain_line: String::new(),
        },
        agent_label: Some("fuzz \u{202e} label".into()),
        agent_known: false,
    }
}

/// Display-safe: no hidden character, and cut to [`MAX_FIELD_CHARS`] source
/// characters (each hidden one shown as an escape of at most 9) plus a note.
pub fn assert_display_safe(what: &str, s: &str) {
    assert!(
        is_display_safe(s),
        "{what} shows a hidden character: {s:?}"
    );
    assert!(
        s.chars().count() <= 9 * MAX_FIELD_CHARS + 64,
        "{what} is not cut: {} chars",
        s.chars().count()
    );
}

/// Every string of a review that came from outside is display-safe.
pub fn assert_review_safe(r: &Review) {
    assert_display_safe("service", &r.service);
    assert_display_safe("capability", &r.capability);
    assert_display_safe("cost", &r.cost);
    assert_display_safe("their_words", &r.their_words);
    assert_display_safe("preview", &r.preview);
    if let Some(l) = &r.agent.label {
        assert_display_safe("agent label", l);
    }
    for e in &r.effects {
        assert_display_safe("effect line", &e.line);
    }
    for c in &r.caveats {
        assert_display_safe("caveat words", &c.words);
    }
}

/// No C0 control character other than the line separator (Lens output).
pub fn one_line_per_line(s: &str) -> bool {
    !s.chars().any(|c| c < ' ' && c != '\n')
}

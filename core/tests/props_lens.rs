//! Property tests: Lens, the estimate and the fitter never panic on any JSON,
//! and keep their basic invariants (§8, §9).

use parley_core::estimate::est;
use parley_core::fit::{fit_reply, MAX_STEPS};
use parley_core::lens::{
    compact_json, effect_line, lean, lean_lines, render, render_lines, render_reply, scalar,
};
use proptest::prelude::*;
use serde_json::{Map, Number, Value};

/// Strings that sit on the edges of the §9.1 rules, plus arbitrary Unicode.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => any::<String>(),
        2 => prop::sample::select(vec![
            "", " ", "-", "true", "null", "1e5", "-0", "0x10", " 1", "a, b", "café", "two\nlines",
            "\u{202e}rtl", "\u{7f}\u{85}\u{2028}", "…", "ok", "2026-09-24T15:00:00Z", "0", "12345678",
        ])
        .prop_map(String::from),
        1 => (0usize..120).prop_map(|n| "lorem ipsum\n ".repeat(n)),
    ]
}

fn number() -> impl Strategy<Value = Number> {
    prop_oneof![
        any::<i64>().prop_map(Number::from),
        any::<u64>().prop_map(Number::from),
        any::<f64>().prop_filter_map("finite", Number::from_f64),
        prop::sample::select(vec![
            0.1 + 0.2,
            1e21,
            1e-7,
            -0.0,
            5e-324,
            1.7976931348623157e308
        ])
        .prop_filter_map("finite", Number::from_f64),
    ]
}

fn json() -> impl Strategy<Value = Value> {
    json_sized(5, 96)
}

fn json_sized(depth: u32, size: u32) -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number().prop_map(Value::Number),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(depth, size, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::vec((text(), inner.clone()), 0..8)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
            // Rows with the same keys: exercises the table form.
            (
                prop::collection::vec(text(), 1..4),
                prop::collection::vec(prop::collection::vec(inner, 4), 1..5)
            )
                .prop_map(|(keys, rows)| {
                    Value::Array(
                        rows.into_iter()
                            .map(|vals| Value::Object(keys.iter().cloned().zip(vals).collect()))
                            .collect(),
                    )
                }),
        ]
    })
}

/// A service-written `lens` that must never be shown.
const MARKER: &str = "ZZ-SERVICE-LENS-ZZ";

const KINDS: &[&str] = &[
    "BRIEF",
    "ANSWER",
    "PROPOSALS",
    "CLARIFY",
    "RECEIPT",
    "ERROR",
    "EVENT",
    "OTHER",
];
const FIELDS: &[&str] = &[
    "service",
    "capabilities",
    "data",
    "proposals",
    "question",
    "options",
    "receipt",
    "auto",
    "replay",
    "code",
    "message",
    "fix",
    "need",
    "consent",
    "retry",
    "progress",
    "more",
    "lens",
];
const INNER: &[&str] = &[
    "id",
    "name",
    "summary",
    "kind",
    "params",
    "risk",
    "effects",
    "cost",
    "undo",
    "expires",
    "hash",
    "data",
    "op",
    "target",
    "field",
    "from",
    "to",
    "detail",
    "label",
    "say",
    "window",
    "until",
    "undoes",
    "result",
    "amount",
    "currency",
    "handle",
    "path",
    "remaining",
    "est",
    "at",
];

/// Objects shaped like the parts of a reply, with random values.
fn part() -> impl Strategy<Value = Value> {
    prop::collection::vec((prop::sample::select(INNER), json_sized(2, 12)), 0..7)
        .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()))
}

fn frame() -> impl Strategy<Value = Value> {
    let field = prop_oneof![
        2 => json_sized(3, 32),
        2 => part(),
        2 => prop::collection::vec(part(), 0..4).prop_map(Value::Array),
    ];
    (
        prop::sample::select(KINDS),
        prop::collection::vec((prop::sample::select(FIELDS), field), 0..8),
    )
        .prop_map(|(kind, fields)| {
            let mut m = Map::new();
            m.insert("parley".into(), Value::from(1));
            m.insert("id".into(), Value::from("s1"));
            m.insert("re".into(), Value::from("c1"));
            m.insert("kind".into(), Value::from(kind));
            for (k, v) in fields {
                m.insert(k.to_owned(), v);
            }
            m.insert("lens".into(), Value::from(MARKER));
            Value::Object(m)
        })
}

/// The §8 regex, matched code point by code point (an independent model).
fn est_model(text: &str) -> usize {
    let cs: Vec<char> = text.chars().collect();
    let (mut i, mut n) = (0, 0);
    while i < cs.len() {
        let c = cs[i];
        if c.is_ascii_alphabetic() {
            while i < cs.len() && cs[i].is_ascii_alphabetic() {
                i += 1;
            }
            n += 1;
        } else if c.is_ascii_digit() {
            let mut k = 0;
            while i < cs.len() && cs[i].is_ascii_digit() && k < 3 {
                i += 1;
                k += 1;
            }
            n += 1;
        } else if c == '\n' && cs.get(i + 1) == Some(&' ') && cs.get(i + 2) == Some(&' ') {
            i += 1;
            while i < cs.len() && cs[i] == ' ' {
                i += 1;
            }
            n += 1;
        } else if matches!(c, ' ' | '\t' | '\n' | '\r' | '\u{b}' | '\u{c}') {
            i += 1;
        } else {
            i += 1;
            n += 1;
        }
    }
    n
}

/// No C0 control character other than the line separator.
fn one_line_per_line(s: &str) -> bool {
    !s.chars().any(|c| c < ' ' && c != '\n')
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn lean_never_panics_and_escapes_controls(v in json()) {
        let l = lean(&v);
        prop_assert!(one_line_per_line(&l), "{l:?}");
        prop_assert_eq!(lean_lines(&v).join("\n"), l.clone());
        prop_assert_eq!(render_lines(&v).join("\n"), render(&v));
        prop_assert_eq!(render(&v).is_empty(), false);
        let c = compact_json(&v);
        prop_assert!(serde_json::from_str::<Value>(&c).is_ok(), "{c}");
        let _ = scalar(&v);
        let _ = effect_line(&v);
        prop_assert_eq!(est(&l), est_model(&l));
    }

    #[test]
    fn replies_never_panic(f in frame()) {
        let text = render_reply(&f);
        // Verbatim text is written as it is (§9.2), so `text` may hold any
        // character; Lens's own lines are the ones `render_lines` gives.
        prop_assert_eq!(render_lines(&f).join("\n"), text.clone());
        // The service's own text never reaches the output.
        prop_assert!(!text.contains(MARKER));
    }

    #[test]
    fn fitting_never_panics_and_stays_bounded(f in frame(), budget in 0usize..400) {
        let mut handles = 0usize;
        let out = fit_reply(&f, budget, &mut || { handles += 1; format!("h_{handles}") });
        prop_assert!(handles <= MAX_STEPS);
        let more = out.reply.get("more").and_then(Value::as_array).cloned().unwrap_or_default();
        for e in &out.elided {
            prop_assert!(more.contains(&e.more.to_value()));
        }
        if out.elided.is_empty() {
            prop_assert_eq!(&out.reply, &f);
        } else {
            prop_assert!(out.reply.get("lens").is_none());
        }
        let _ = render_reply(&out.reply);
    }

    #[test]
    fn est_matches_the_model(s in any::<String>(), t in "[a-z0-9 \\n\\t.é東]{0,200}") {
        prop_assert_eq!(est(&s), est_model(&s));
        prop_assert_eq!(est(&t), est_model(&t));
    }
}

#[test]
fn huge_strings_are_linear() {
    let big = "x\n  é1234 ".repeat(30_000); // 300,000 characters
    let v = serde_json::json!({"parley": 1, "id": "s", "re": "c", "kind": "ANSWER", "data": {"s": big, "l": [big.clone()]}});
    let start = std::time::Instant::now();
    let text = render(&v);
    assert!(est(&text) > 0);
    let mut n = 0;
    let out = fit_reply(&v, 50, &mut || {
        n += 1;
        format!("h_{n}")
    });
    assert!(!out.elided.is_empty());
    // Generous even for an unoptimized build on a busy machine; quadratic
    // behaviour on 300k characters would take minutes.
    assert!(start.elapsed().as_secs() < 20, "{:?}", start.elapsed());
}

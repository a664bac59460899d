//! The two dialects of the protocol this crate reads: Parley v1 (`"parley": 1`)
//! and YEA v1 (`"yea": 1`, `../shared/seeds-yea/SPEC-yea-v1.md`).
//!
//! YEA is Parley renamed and changed in four places: proposals report a
//! generic `uses` map of quantities instead of `cost` (§5.1), grants limit
//! them with `each`/`total` instead of `per`/`spend` (§6.3), the `charge`
//! effect op is gone, and the PROPOSALS Lens shows `uses:` (omitted when
//! empty) instead of `cost:` (§9.2). Tokens, consent codes, canonical JSON,
//! keys, proofs and the consent grant are the same. So there is one code path
//! for both, and a dialect is the data saying which of those names apply:
//! every proposal, reply and caveat is read under exactly one dialect, and a
//! name from the other one is unknown (a hard failure), never reinterpreted.

use crate::proposal::EffectOp;
use serde_json::Value;
use std::fmt;

/// Which protocol a frame, proposal or grant evaluation is read under.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Dialect {
    /// Parley v1: `cost`, `per`/`spend`, the `charge` op. The default, so
    /// every caller that never heard of YEA keeps today's behaviour.
    #[default]
    #[serde(rename = "parley1")]
    ParleyV1,
    /// YEA v1: `uses`, `each`/`total`, no `charge`.
    #[serde(rename = "yea1")]
    YeaV1,
}

/// What a proposal reports it uses up, per dialect (§5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsageField {
    /// Parley's `cost`: `null` or `{"amount": int, "currency": "ABC"}`; always rendered (`free`).
    Cost,
    /// YEA's `uses`: a map of measure names to quantities; omitted from Lens when absent or empty.
    Uses,
}

impl Dialect {
    /// Both dialects, Parley first.
    pub const ALL: [Dialect; 2] = [Dialect::ParleyV1, Dialect::YeaV1];

    /// The frame marker key (§2.1): `"parley": 1` or `"yea": 1`.
    pub fn marker(self) -> &'static str {
        match self {
            Dialect::ParleyV1 => "parley",
            Dialect::YeaV1 => "yea",
        }
    }

    /// The short name used on the command line and in the custody protocol.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::ParleyV1 => "parley1",
            Dialect::YeaV1 => "yea1",
        }
    }

    /// Reads [`name`](Self::name) (also `parley` and `yea`, as v1 is the only version).
    pub fn parse(s: &str) -> Option<Dialect> {
        match s {
            "parley1" | "parley" => Some(Dialect::ParleyV1),
            "yea1" | "yea" => Some(Dialect::YeaV1),
            _ => None,
        }
    }

    /// The dialect a frame declares by its marker: `"yea": 1` is YEA v1;
    /// anything else (`"parley": 1`, no marker, both markers) is Parley v1,
    /// which is how every frame was read before YEA existed.
    pub fn of_frame(frame: &Value) -> Dialect {
        match frame.as_object() {
            Some(f) if !f.contains_key("parley") && f.get("yea") == Some(&Value::from(1)) => {
                Dialect::YeaV1
            }
            _ => Dialect::ParleyV1,
        }
    }

    /// The proposal field that reports what a commit uses up.
    pub fn usage_field(self) -> UsageField {
        match self {
            Dialect::ParleyV1 => UsageField::Cost,
            Dialect::YeaV1 => UsageField::Uses,
        }
    }

    /// Every field a proposal may have (§5.1). A hashed field outside this
    /// list cannot be shown to the human, so proposals carrying one are refused.
    pub fn proposal_fields(self) -> &'static [&'static str] {
        const COMMON: [&str; 9] = [
            "id",
            "capability",
            "summary",
            "effects",
            "risk",
            "undo",
            "expires",
            "hash",
            "data",
        ];
        const PARLEY: [&str; 10] = [
            COMMON[0], COMMON[1], COMMON[2], COMMON[3], COMMON[4], COMMON[5], COMMON[6], COMMON[7],
            COMMON[8], "cost",
        ];
        const YEA: [&str; 10] = [
            COMMON[0], COMMON[1], COMMON[2], COMMON[3], COMMON[4], COMMON[5], COMMON[6], COMMON[7],
            COMMON[8], "uses",
        ];
        match self {
            Dialect::ParleyV1 => &PARLEY,
            Dialect::YeaV1 => &YEA,
        }
    }

    /// The effect ops (§5.1); YEA dropped `charge` (a charge is a `create`).
    pub fn effect_ops(self) -> &'static [EffectOp] {
        use EffectOp::*;
        match self {
            Dialect::ParleyV1 => &[Create, Update, Delete, Send, Charge, Other],
            Dialect::YeaV1 => &[Create, Update, Delete, Send, Other],
        }
    }

    /// The caveat names this dialect knows (§6.3). Any other caveat fails
    /// closed; in particular a Parley `per` under YEA and a YEA `total`
    /// under Parley.
    pub fn caveat_names(self) -> &'static [&'static str] {
        match self {
            Dialect::ParleyV1 => &[
                "svc", "verbs", "can", "exp", "nbf", "per", "spend", "risk", "only",
            ],
            Dialect::YeaV1 => &[
                "svc", "verbs", "can", "exp", "nbf", "each", "total", "risk", "only",
            ],
        }
    }

    /// Whether Lens renders malformed leaves the YEA way (§9.2 as the YEA
    /// reference does): a time only for an integer in [0, 9999-12-31T23:59:59Z],
    /// a duration only for a safe integer (else the value's lean scalar), a
    /// proposal's undo as `never` unless it is an object with `window`, a
    /// receipt's as `irreversible` unless it has `until`, and an EVENT's
    /// progress only in [0, 1]. Parley renders every number as ECMAScript
    /// date and duration arithmetic would.
    pub fn lens_strict_leaves(self) -> bool {
        self == Dialect::YeaV1
    }

    /// The directory the agent tooling of this dialect keeps its files in,
    /// under the home directory, and the variable that overrides it.
    pub fn tooling_home(self) -> (&'static str, &'static str) {
        match self {
            Dialect::ParleyV1 => (".parley", "PARLEY_HOME"),
            Dialect::YeaV1 => (".yea", "YEA_HOME"),
        }
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(match self {
            Dialect::ParleyV1 => "Parley v1",
            Dialect::YeaV1 => "YEA v1",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn frames_declare_their_dialect() {
        assert_eq!(Dialect::of_frame(&json!({"yea": 1})), Dialect::YeaV1);
        assert_eq!(Dialect::of_frame(&json!({"parley": 1})), Dialect::ParleyV1);
        assert_eq!(Dialect::of_frame(&json!({"kind": "X"})), Dialect::ParleyV1);
        assert_eq!(Dialect::of_frame(&json!({"yea": 2})), Dialect::ParleyV1);
        assert_eq!(
            Dialect::of_frame(&json!({"yea": 1, "parley": 1})),
            Dialect::ParleyV1
        );
    }

    #[test]
    fn names_round_trip() {
        for d in Dialect::ALL {
            assert_eq!(Dialect::parse(d.name()), Some(d));
            assert_eq!(
                serde_json::to_value(d).unwrap(),
                Value::String(d.name().into())
            );
        }
        assert_eq!(Dialect::parse("yea2"), None);
    }

    #[test]
    fn the_dialects_differ_only_in_usage_and_limits() {
        let p = Dialect::ParleyV1.caveat_names();
        let y = Dialect::YeaV1.caveat_names();
        let only_p: Vec<_> = p.iter().filter(|n| !y.contains(n)).collect();
        let only_y: Vec<_> = y.iter().filter(|n| !p.contains(n)).collect();
        assert_eq!(only_p, [&"per", &"spend"]);
        assert_eq!(only_y, [&"each", &"total"]);
        assert!(!Dialect::YeaV1.effect_ops().contains(&EffectOp::Charge));
    }
}

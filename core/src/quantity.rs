//! YEA quantities (§5.1 `uses`, §6.3 `each`/`total` limits, §9.2 rendering).
//!
//! A quantity is `{"amount": int, "scale"?: int, "unit"?: string}`, worth
//! `amount × 10^−scale` of its unit. Values compare and add as exact decimals,
//! never as floats (§6.3). We do it in `u128` fixed point at the finest scale
//! the spec allows (10^−18), which provably suffices: an amount is below 2^53
//! and 10^18 < 2^60, so every single value is below 2^113, and a sum of two
//! (what a `total` check adds: already used + this proposal) is below 2^114,
//! far under `u128::MAX` ≈ 2^128. Running totals are kept with checked
//! arithmetic, and a total that would overflow is over every limit anyway
//! (the largest limit is below 2^113).

use crate::canonical::MAX_SAFE_INTEGER;
use crate::money::{is_zero_decimal, Money};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;

/// The largest `scale` (§5.1).
pub const MAX_SCALE: u8 = 18;
/// Longest measure name (§5.1).
pub const MAX_NAME_LEN: usize = 64;
/// Longest unit (§5.1).
pub const MAX_UNIT_LEN: usize = 32;

/// Why a quantity, a `uses` map or a limit is malformed (§5.1, §6.3).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// `uses` is not an object.
    #[error("uses must be an object of measure names to quantities")]
    NotAMap,
    /// A measure name breaks the §5.1 rule.
    #[error("{0:?} is not a measure name (1-64 of a-z, 0-9, _ . -, starting with a letter)")]
    Name(String),
    /// A quantity or limit has the wrong shape or a value out of range.
    #[error("{field}: {why}")]
    Value {
        /// Where: the measure name, or `each`/`total`.
        field: String,
        /// What is wrong, in words.
        why: &'static str,
    },
}

/// One quantity (§5.1), already checked: `amount ≤ 2^53 − 1`, `scale ≤ 18`,
/// a unit of 1–32 allowed characters or none.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Quantity {
    /// The integer amount, in units of 10^−scale.
    pub amount: u64,
    /// Digits after the decimal point; 0 when absent.
    pub scale: u8,
    /// The unit as the service wrote it; compared exactly, never converted.
    pub unit: Option<String>,
}

/// An exact non-negative decimal, in units of 10^−18 (see the module docs
/// for why `u128` suffices).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Exact(pub u128);

impl Exact {
    /// `self + other`, or `None` past `u128` (which is over every limit).
    pub fn checked_add(self, other: Exact) -> Option<Exact> {
        self.0.checked_add(other.0).map(Exact)
    }
}

/// Whether `name` is a §5.1 measure name: 1–64 characters of `a-z`, `0-9`,
/// `_`, `.` and `-`, starting with a letter.
pub fn is_measure_name(name: &str) -> bool {
    let b = name.as_bytes();
    (1..=MAX_NAME_LEN).contains(&b.len())
        && b[0].is_ascii_lowercase()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || b"_.-".contains(c))
}

/// Whether `unit` is a §5.1 unit: 1–32 characters of `A-Z`, `a-z`, `0-9`,
/// `_`, `.`, `/`, `%` and `-`.
pub fn is_unit(unit: &str) -> bool {
    (1..=MAX_UNIT_LEN).contains(&unit.len())
        && unit
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"_./%-".contains(&c))
}

impl Quantity {
    /// A count: no unit, scale 0 (`{"amount": 3}`, "3 emails").
    pub fn count(amount: u64) -> Quantity {
        Quantity {
            amount,
            scale: 0,
            unit: None,
        }
    }

    /// Reads a quantity strictly: exactly `amount` and optionally `scale` and
    /// `unit`, every one in range. `field` names it in the error.
    pub fn from_value(v: &Value, field: &str) -> Result<Quantity, QuantityError> {
        let obj = v.as_object().ok_or_else(|| QuantityError::Value {
            field: field.to_string(),
            why: "a quantity must be {\"amount\": int, \"scale\"?: int, \"unit\"?: string}",
        })?;
        read_fields(obj, field, "amount", &["amount", "scale", "unit"])
    }

    /// The quantity as JSON, in the shape a service writes it (`scale` and
    /// `unit` only when they say something).
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("amount".into(), Value::from(self.amount));
        if self.scale != 0 {
            m.insert("scale".into(), Value::from(self.scale));
        }
        if let Some(u) = &self.unit {
            m.insert("unit".into(), Value::String(u.clone()));
        }
        Value::Object(m)
    }

    /// The exact value (§6.3).
    pub fn exact(&self) -> Exact {
        // amount < 2^53 and 10^(18 − scale) ≤ 10^18: the product is below 2^113.
        Exact(u128::from(self.amount) * 10u128.pow(u32::from(MAX_SCALE - self.scale)))
    }

    /// §6.3: both have the same unit, or both have none.
    pub fn same_unit(&self, unit: Option<&str>) -> bool {
        self.unit.as_deref() == unit
    }

    /// The quantity as money, when it is money by the conventions
    /// (`docs/conventions.md`): a 3-letter uppercase currency code at that
    /// currency's minor-unit scale (2, or 0 for currencies without minor
    /// units). Anything else is a plain quantity.
    pub fn as_money(&self) -> Option<Money> {
        let unit = self.unit.as_deref()?;
        let code = unit.len() == 3 && unit.bytes().all(|b| b.is_ascii_uppercase());
        let minor = if is_zero_decimal(unit) { 0 } else { 2 };
        (code && self.scale == minor).then(|| Money {
            amount: self.amount as i64, // ≤ 2^53 − 1
            currency: unit.to_string(),
        })
    }
}

/// One member of a quantity or limit object, as the readers see it: the
/// checks are written once for `serde_json::Value` and the Lens's own trees.
pub(crate) enum Member<'a> {
    /// A JSON number.
    Number(&'a serde_json::Number),
    /// A JSON string.
    Str(&'a str),
    /// Anything else.
    Other,
}

impl<'a> Member<'a> {
    fn of(v: &'a Value) -> Member<'a> {
        match v {
            Value::Number(n) => Member::Number(n),
            Value::String(s) => Member::Str(s),
            _ => Member::Other,
        }
    }
}

/// Reads `amount_key` (`amount` or `max`), `scale` and `unit` of a quantity
/// or limit, refusing any key outside `allowed`.
fn read_fields(
    obj: &Map<String, Value>,
    field: &str,
    amount_key: &str,
    allowed: &[&str],
) -> Result<Quantity, QuantityError> {
    read_members(
        obj.iter().map(|(k, v)| (k.as_str(), Member::of(v))),
        field,
        amount_key,
        allowed,
    )
}

/// [`read_fields`] over any object's members.
pub(crate) fn read_members<'a>(
    members: impl Iterator<Item = (&'a str, Member<'a>)>,
    field: &str,
    amount_key: &str,
    allowed: &[&str],
) -> Result<Quantity, QuantityError> {
    let bad = |why| QuantityError::Value {
        field: field.to_string(),
        why,
    };
    let (mut amount, mut scale, mut unit) = (None, 0u8, None);
    for (k, v) in members {
        if !allowed.contains(&k) {
            return Err(bad("has a key other than the quantity's own"));
        }
        if k == amount_key {
            amount = Some(match v {
                Member::Number(n) => n
                    .as_u64()
                    .filter(|a| *a <= MAX_SAFE_INTEGER as u64)
                    .ok_or_else(|| bad("the amount must be an integer from 0 to 2^53-1"))?,
                _ => return Err(bad("the amount must be an integer from 0 to 2^53-1")),
            });
        } else if k == "scale" {
            scale = match v {
                Member::Number(n) => n
                    .as_u64()
                    .filter(|s| *s <= u64::from(MAX_SCALE))
                    .ok_or_else(|| bad("the scale must be an integer from 0 to 18"))?
                    as u8,
                _ => return Err(bad("the scale must be an integer from 0 to 18")),
            };
        } else if k == "unit" {
            unit = match v {
                Member::Str(u) if is_unit(u) => Some(u.to_string()),
                _ => return Err(bad("the unit must be 1-32 of A-Z a-z 0-9 _ . / % -")),
            };
        }
    }
    Ok(Quantity {
        amount: amount.ok_or_else(|| bad("has no integer amount"))?,
        scale,
        unit,
    })
}

impl fmt::Display for Quantity {
    /// §9.2: the value in plain decimal with exactly `scale` digits after the
    /// point (none at scale 0), then a space and the unit if there is one.
    /// No sign, no digit grouping: `22.90 USD`, `0.005`, `1`.
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let digits = self.amount.to_string();
        let scale = usize::from(self.scale);
        if scale == 0 {
            f.write_str(&digits)?;
        } else {
            let padded = format!("{digits:0>width$}", width = scale + 1);
            let (whole, frac) = padded.split_at(padded.len() - scale);
            write!(f, "{whole}.{frac}")?;
        }
        match &self.unit {
            Some(u) => write!(f, " {u}"),
            None => Ok(()),
        }
    }
}

/// A well-formed `uses` map (§5.1), in canonical key order (§10: names are
/// ASCII, so byte order is code-point order).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct Uses(pub BTreeMap<String, Quantity>);

impl Uses {
    /// Reads `uses` strictly (§5.1): an object whose every key is a measure
    /// name and every value a quantity. `null` is malformed (absent is not).
    pub fn from_value(v: &Value) -> Result<Uses, QuantityError> {
        let obj = v.as_object().ok_or(QuantityError::NotAMap)?;
        let mut map = BTreeMap::new();
        for (name, q) in obj {
            if !is_measure_name(name) {
                return Err(QuantityError::Name(name.chars().take(70).collect()));
            }
            map.insert(name.clone(), Quantity::from_value(q, name)?);
        }
        Ok(Uses(map))
    }

    /// The map as JSON, in the shape a service writes it.
    pub fn to_value(&self) -> Value {
        Value::Object(
            self.0
                .iter()
                .map(|(n, q)| (n.clone(), q.to_value()))
                .collect(),
        )
    }

    /// The quantity of one measure, if reported.
    pub fn get(&self, name: &str) -> Option<&Quantity> {
        self.0.get(name)
    }

    /// Whether nothing measured is used.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The §9.2 `uses:` value: `name quantity` per measure in canonical key
    /// order, joined with `, ` (`emails 1, spend 22.90 USD`).
    pub fn lens(&self) -> String {
        self.0
            .iter()
            .map(|(n, q)| format!("{n} {q}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// An `each` or `total` limit (§6.3): `{"of": name, "max": int, "scale"?: int, "unit"?: string}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Limit {
    /// The measure limited.
    pub of: String,
    /// The limit as a quantity (its amount is `max`).
    pub max: Quantity,
}

impl Limit {
    /// Reads a limit strictly; `caveat` (`each`/`total`) names it in errors.
    pub fn from_value(v: &Value, caveat: &str) -> Result<Limit, QuantityError> {
        let bad = |why| QuantityError::Value {
            field: caveat.to_string(),
            why,
        };
        let obj = v.as_object().ok_or_else(|| {
            bad("a limit must be {\"of\": name, \"max\": int, \"scale\"?: int, \"unit\"?: string}")
        })?;
        let of = match obj.get("of") {
            Some(Value::String(n)) if is_measure_name(n) => n.clone(),
            _ => return Err(bad("of must be a measure name")),
        };
        let max = read_fields(obj, caveat, "max", &["of", "max", "scale", "unit"])?;
        Ok(Limit { of, max })
    }

    /// The limit as JSON, exactly as it is signed.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("of".into(), Value::String(self.of.clone()));
        m.insert("max".into(), Value::from(self.max.amount));
        if self.max.scale != 0 {
            m.insert("scale".into(), Value::from(self.max.scale));
        }
        if let Some(u) = &self.max.unit {
            m.insert("unit".into(), Value::String(u.clone()));
        }
        Value::Object(m)
    }

    /// The limit in words: `40.00 USD of spend`, `3 emails`.
    pub fn describe(&self) -> String {
        describe_use(&self.of, &self.max)
    }
}

/// A measure's quantity in words, for people: money as money (`12.50 USD`
/// of spend), counts as `3 emails`, other measures as `5 GB of storage`.
pub fn describe_use(name: &str, q: &Quantity) -> String {
    match (q.as_money(), &q.unit) {
        (Some(m), _) if name == "spend" => m.to_string(),
        (Some(m), _) => format!("{m} of {name}"),
        (None, None) => format!("{q} {name}"),
        (None, Some(_)) => format!("{q} of {name}"),
    }
}

/// Quantities already committed or reserved, per block id and measure
/// (§6.3 `total`), as exact values.
pub type Used = BTreeMap<String, BTreeMap<String, Exact>>;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn q(v: Value) -> Quantity {
        Quantity::from_value(&v, "t").unwrap()
    }

    #[test]
    fn exact_values_across_scales() {
        assert_eq!(
            q(json!({"amount": 100})).exact(),
            q(json!({"amount": 10000, "scale": 2})).exact()
        );
        assert!(q(json!({"amount": 30001, "scale": 3})).exact() > q(json!({"amount": 30})).exact());
        let biggest = q(json!({"amount": 9007199254740991u64})).exact();
        assert_eq!(biggest.0, 9007199254740991u128 * 10u128.pow(18));
        assert!(biggest.checked_add(biggest).is_some());
    }

    #[test]
    fn display() {
        assert_eq!(
            q(json!({"amount": 2290, "scale": 2, "unit": "USD"})).to_string(),
            "22.90 USD"
        );
        assert_eq!(q(json!({"amount": 5, "scale": 3})).to_string(), "0.005");
        assert_eq!(q(json!({"amount": 0, "scale": 2})).to_string(), "0.00");
        assert_eq!(q(json!({"amount": 1})).to_string(), "1");
    }

    #[test]
    fn money_only_at_the_minor_unit_scale() {
        let usd = q(json!({"amount": 2287, "scale": 2, "unit": "USD"}));
        assert_eq!(usd.as_money().unwrap().to_string(), "22.87 USD");
        assert_eq!(describe_use("spend", &usd), "22.87 USD");
        assert!(q(json!({"amount": 2287, "scale": 3, "unit": "USD"}))
            .as_money()
            .is_none());
        assert!(q(json!({"amount": 5, "unit": "JPY"})).as_money().is_some());
        assert!(q(json!({"amount": 5, "unit": "GB"})).as_money().is_none());
        assert_eq!(describe_use("emails", &Quantity::count(3)), "3 emails");
        assert_eq!(
            describe_use("storage", &q(json!({"amount": 5, "unit": "GB"}))),
            "5 GB of storage"
        );
    }

    #[test]
    fn limits_are_strict() {
        let l = Limit::from_value(
            &json!({"of": "spend", "max": 4000, "scale": 2, "unit": "USD"}),
            "each",
        )
        .unwrap();
        assert_eq!(l.describe(), "40.00 USD");
        assert_eq!(
            l.to_value(),
            json!({"of": "spend", "max": 4000, "scale": 2, "unit": "USD"})
        );
        for bad in [
            json!({"of": "spend", "max": 1, "amount": 1}),
            json!({"of": "spend", "max": 1, "scale": 19}),
            json!({"of": "spend", "max": 1.5}),
            json!({"of": "Spend", "max": 1}),
            json!({"max": 1}),
            json!({"max": 4000, "currency": "USD"}),
        ] {
            assert!(Limit::from_value(&bad, "each").is_err(), "{bad}");
        }
    }
}

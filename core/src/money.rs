//! Money: amounts in minor units (§5.1 `cost`), their Lens rendering (§9.2)
//! and the command-line form (`40USD`, `40.50USD`, `500JPY`).

use serde_json::{json, Value};
use std::fmt;

/// Currencies without minor units: amounts are whole units (§9.2).
pub const ZERO_DECIMAL: &[&str] = &["JPY", "KRW", "VND", "CLP", "ISK", "UGX", "XAF", "XOF"];

/// Whether a currency code has no minor unit.
pub fn is_zero_decimal(currency: &str) -> bool {
    ZERO_DECIMAL.contains(&currency)
}

/// An amount in minor units of a currency (cents for USD, yen for JPY).
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Money {
    /// Minor units; may be negative (refunds).
    pub amount: i64,
    /// ISO 4217 code as the service wrote it.
    pub currency: String,
}

/// Why a money flag could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{input:?} is not an amount: {why} (write it like 40USD, 40.50USD or 500JPY)")]
pub struct MoneyError {
    input: String,
    why: &'static str,
}

impl Money {
    /// Reads the command-line form: digits, an optional fraction of at most
    /// two digits (none for zero-decimal currencies), then a 3-letter code.
    pub fn parse_flag(input: &str) -> Result<Money, MoneyError> {
        let err = |why| MoneyError {
            input: input.chars().take(40).collect(),
            why,
        };
        let s = input.trim();
        let split = s
            .find(|c: char| c.is_ascii_alphabetic())
            .ok_or_else(|| err("no currency code"))?;
        let (number, currency) = s.split_at(split);
        let currency = currency.trim().to_ascii_uppercase();
        if currency.len() != 3 || !currency.bytes().all(|b| b.is_ascii_uppercase()) {
            return Err(err("the currency must be a 3-letter code"));
        }
        let number = number.trim();
        let (whole, frac) = match number.split_once('.') {
            Some((w, f)) => (w, Some(f)),
            None => (number, None),
        };
        if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) || whole.len() > 13 {
            return Err(err("the amount must be a non-negative decimal number"));
        }
        let zero_decimal = is_zero_decimal(&currency);
        let minor: i64 = match frac {
            None => 0,
            Some(_) if zero_decimal => return Err(err("this currency has no minor units")),
            Some(f) if f.is_empty() || f.len() > 2 || !f.bytes().all(|b| b.is_ascii_digit()) => {
                return Err(err("at most two decimals"))
            }
            Some(f) => {
                let v: i64 = f.parse().map_err(|_| err("bad decimals"))?;
                if f.len() == 1 {
                    v * 10
                } else {
                    v
                }
            }
        };
        let whole: i64 = whole.parse().map_err(|_| err("amount too large"))?;
        let amount = if zero_decimal {
            whole
        } else {
            whole
                .checked_mul(100)
                .and_then(|w| w.checked_add(minor))
                .ok_or_else(|| err("amount too large"))?
        };
        if amount > crate::canonical::MAX_SAFE_INTEGER {
            return Err(err("amount too large"));
        }
        Ok(Money { amount, currency })
    }

    /// The `{"max": amount, "currency": code}` caveat body for `per` / `spend`.
    pub fn to_limit_value(&self) -> Value {
        json!({"max": self.amount, "currency": self.currency})
    }
}

impl fmt::Display for Money {
    /// §9.2: amount/100 with two decimals and the currency (`12.50 USD`,
    /// `-0.05 EUR`), whole units for zero-decimal currencies (`500 JPY`).
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let sign = if self.amount < 0 { "-" } else { "" };
        let abs = self.amount.unsigned_abs();
        if is_zero_decimal(&self.currency) {
            write!(f, "{sign}{abs} {}", self.currency)
        } else {
            write!(f, "{sign}{}.{:02} {}", abs / 100, abs % 100, self.currency)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(amount: i64, c: &str) -> Money {
        Money {
            amount,
            currency: c.into(),
        }
    }

    #[test]
    fn flags() {
        assert_eq!(Money::parse_flag("40USD").unwrap(), m(4000, "USD"));
        assert_eq!(Money::parse_flag("40.50USD").unwrap(), m(4050, "USD"));
        assert_eq!(Money::parse_flag("40.5usd").unwrap(), m(4050, "USD"));
        assert_eq!(Money::parse_flag("0.07EUR").unwrap(), m(7, "EUR"));
        assert_eq!(Money::parse_flag("500JPY").unwrap(), m(500, "JPY"));
        for bad in [
            "40",
            "USD",
            "40.505USD",
            "-4USD",
            "4.5JPY",
            "4US",
            "1e3USD",
            "99999999999999USD",
            "4.USD",
        ] {
            assert!(Money::parse_flag(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn display() {
        assert_eq!(m(1250, "USD").to_string(), "12.50 USD");
        assert_eq!(m(-5, "EUR").to_string(), "-0.05 EUR");
        assert_eq!(m(500, "JPY").to_string(), "500 JPY");
        assert_eq!(m(-500, "KRW").to_string(), "-500 KRW");
        assert_eq!(m(i64::MIN, "USD").to_string(), "-92233720368547758.08 USD");
    }
}

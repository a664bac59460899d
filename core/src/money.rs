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
    why: FlagError,
}

/// What is wrong with a money flag: its currency, or its number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
enum FlagError {
    #[error("no currency code")]
    NoCurrency,
    #[error("the currency must be a 3-letter code")]
    Currency,
    #[error(transparent)]
    Amount(AmountError),
}

/// Why a typed amount is not one ([`Money::parse_amount`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AmountError {
    /// Empty, signed, or not digits with at most one `.` (no separators, no
    /// exponent), or more than 13 whole digits.
    #[error("the amount must be a non-negative decimal number")]
    NotANumber,
    /// A fraction for a currency without minor units (`4.5` yen).
    #[error("this currency has no minor units")]
    NoMinorUnits,
    /// A fraction that is empty (`4.`) or has more than two digits.
    #[error("at most two decimals")]
    Decimals,
    /// Beyond 2^53 − 1 minor units (canonical JSON's integers).
    #[error("amount too large")]
    TooLarge,
}

/// The most whole units a typed amount may have: 13 digits, so that any
/// amount typed with two decimals stays within 2^53 − 1 minor units.
const MAX_WHOLE_DIGITS: usize = 13;

impl Money {
    /// Reads the command-line form: digits, an optional fraction of at most
    /// two digits (none for zero-decimal currencies), then a 3-letter code.
    /// The number is read by [`Money::parse_amount`].
    pub fn parse_flag(input: &str) -> Result<Money, MoneyError> {
        let err = |why| MoneyError {
            input: input.chars().take(40).collect(),
            why,
        };
        let s = input.trim();
        let split = s
            .find(|c: char| c.is_ascii_alphabetic())
            .ok_or_else(|| err(FlagError::NoCurrency))?;
        let (number, currency) = s.split_at(split);
        let currency = currency.trim().to_ascii_uppercase();
        if currency.len() != 3 || !currency.bytes().all(|b| b.is_ascii_uppercase()) {
            return Err(err(FlagError::Currency));
        }
        let amount =
            Money::parse_amount(number, &currency).map_err(|e| err(FlagError::Amount(e)))?;
        Ok(Money { amount, currency })
    }

    /// Reads an amount a person typed (`40`, `40.5`, `40.50`; `500` for a
    /// zero-decimal currency) into minor units of `currency`: at most 13
    /// digits, then an optional fraction of one or two digits (none for a
    /// zero-decimal currency); blanks around it are ignored. Zero is an
    /// amount (a free action's cost); a sign, a group separator or an
    /// exponent is not.
    ///
    /// The UI reads a typed amount by the same rule (`parseAmount` in
    /// `ui/src/format.ts`); `conformance/money.json` holds both to it, and
    /// says where the UI's purpose asks for more (its limits must be more
    /// than zero).
    pub fn parse_amount(text: &str, currency: &str) -> Result<i64, AmountError> {
        let number = text.trim();
        let (whole, frac) = match number.split_once('.') {
            Some((w, f)) => (w, Some(f)),
            None => (number, None),
        };
        if whole.is_empty()
            || !whole.bytes().all(|b| b.is_ascii_digit())
            || whole.len() > MAX_WHOLE_DIGITS
        {
            return Err(AmountError::NotANumber);
        }
        let zero_decimal = is_zero_decimal(currency);
        let minor: i64 = match frac {
            None => 0,
            Some(_) if zero_decimal => return Err(AmountError::NoMinorUnits),
            Some(f) if f.is_empty() || f.len() > 2 || !f.bytes().all(|b| b.is_ascii_digit()) => {
                return Err(AmountError::Decimals)
            }
            Some(f) => {
                let v: i64 = f.parse().map_err(|_| AmountError::Decimals)?;
                if f.len() == 1 {
                    v * 10
                } else {
                    v
                }
            }
        };
        let whole: i64 = whole.parse().map_err(|_| AmountError::TooLarge)?;
        let amount = if zero_decimal {
            whole
        } else {
            whole
                .checked_mul(100)
                .and_then(|w| w.checked_add(minor))
                .ok_or(AmountError::TooLarge)?
        };
        if amount > crate::canonical::MAX_SAFE_INTEGER {
            return Err(AmountError::TooLarge);
        }
        Ok(amount)
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
    fn amount_errors_say_what_is_wrong() {
        assert_eq!(Money::parse_amount("", "USD"), Err(AmountError::NotANumber));
        assert_eq!(
            Money::parse_amount("4.5", "JPY"),
            Err(AmountError::NoMinorUnits)
        );
        assert_eq!(
            Money::parse_amount("4.505", "USD"),
            Err(AmountError::Decimals)
        );
        assert_eq!(
            Money::parse_flag("4.5JPY").unwrap_err().to_string(),
            "\"4.5JPY\" is not an amount: this currency has no minor units (write it like 40USD, 40.50USD or 500JPY)"
        );
        assert_eq!(
            Money::parse_flag("40").unwrap_err().to_string(),
            "\"40\" is not an amount: no currency code (write it like 40USD, 40.50USD or 500JPY)"
        );
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

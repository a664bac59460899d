//! Which dialect a command reads its input in, Parley v1 or YEA v1, and the
//! YEA quantity flags (`--uses spend=22.87USD`, `--each emails=1`).
//!
//! The dialect is never guessed where the two would give different results:
//! `--dialect` says it, or the input does (a frame's `"yea": 1`, a proposal's
//! `uses` or `cost`, YEA or Parley flags, a grant's caveats). Conflicting
//! signs are refused, and each command decides what to do when there are
//! none (most compute both readings and refuse if they differ).

use crate::error::CliError;
use parley_core::canonical::MAX_SAFE_INTEGER;
use parley_core::money::is_zero_decimal;
use parley_core::quantity::{is_measure_name, is_unit, Quantity, MAX_SCALE};
use parley_core::Dialect;

/// Reads `--dialect` (clap value parser).
pub fn parse_flag(s: &str) -> Result<Dialect, String> {
    Dialect::parse(s).ok_or_else(|| {
        format!(
            "{:?} is not a dialect: use parley1 (Parley v1) or yea1 (YEA v1)",
            s.chars().take(40).collect::<String>()
        )
    })
}

/// One sign of a dialect in the input, and where it was seen (for messages).
pub type Sign = (Dialect, String);

/// The dialect `--dialect` and the input's signs agree on, or `None` when
/// there is neither. Refuses a sign that contradicts `--dialect` or another
/// sign: reading such input either way would drop something it says.
pub fn decide(flag: Option<Dialect>, signs: &[Sign]) -> Result<Option<Dialect>, CliError> {
    if let Some(d) = flag {
        if let Some((other, why)) = signs.iter().find(|(s, _)| *s != d) {
            return Err(CliError::bad(format!(
                "--dialect {} contradicts the input: {why} is {other}",
                d.name()
            )));
        }
        return Ok(Some(d));
    }
    let Some((first, first_why)) = signs.first() else {
        return Ok(None);
    };
    if let Some((other, why)) = signs.iter().find(|(s, _)| s != first) {
        return Err(CliError::bad(format!(
            "the input mixes dialects: {first_why} is {first}, but {why} is {other}; \
             fix the input, or pass --dialect parley1 or --dialect yea1"
        )));
    }
    Ok(Some(*first))
}

/// The message for input that reads differently in the two dialects and
/// does not say which one it is in.
pub fn ambiguous(what: &str) -> CliError {
    CliError::bad(format!(
        "{what} differs between Parley v1 and YEA v1, and the input does not say which it is; \
         pass --dialect parley1 or --dialect yea1"
    ))
}

/// The signs a proposal carries: YEA's `uses`, Parley's `cost`.
pub fn proposal_signs(p: &serde_json::Value, where_: &str) -> Vec<Sign> {
    let mut signs = Vec::new();
    if p.get("uses").is_some() {
        signs.push((Dialect::YeaV1, format!("{where_} with `uses`")));
    }
    if p.get("cost").is_some() {
        signs.push((Dialect::ParleyV1, format!("{where_} with `cost`")));
    }
    signs
}

/// Reads `NAME=AMOUNT` (`spend=22.87USD`, `emails=1`, `storage=5 GB`): a
/// measure name (§5.1), an exact decimal and an optional unit.
///
/// The scale is the number of digits written after the point, so nothing is
/// ever rounded; for a currency code (three capital letters) it is at least
/// the currency's minor-unit digits, so `40USD` is `{"amount": 4000,
/// "scale": 2, "unit": "USD"}`, the shape the conventions give money.
pub fn parse_measure(text: &str, flag: &str) -> Result<(String, Quantity), CliError> {
    let shown = || text.chars().take(80).collect::<String>();
    let (name, amount) = text.split_once('=').ok_or_else(|| {
        CliError::bad(format!(
            "{flag} {:?}: write NAME=AMOUNT, like spend=22.87USD or emails=1",
            shown()
        ))
    })?;
    let name = name.trim();
    if !is_measure_name(name) {
        return Err(CliError::bad(format!(
            "{flag} {:?}: {:?} is not a measure name (1-64 of a-z 0-9 _ . -, starting with a letter)",
            shown(),
            name.chars().take(70).collect::<String>()
        )));
    }
    let q = parse_amount(amount.trim()).map_err(|why| {
        CliError::bad(format!(
            "{flag} {:?}: {why}; write the amount as a plain decimal with an optional unit, like 22.87USD, 1 or 5 GB",
            shown()
        ))
    })?;
    Ok((name.to_string(), q))
}

/// Reads `22.87USD`, `1`, `0.005`, `5 GB` into an exact quantity.
pub fn parse_amount(text: &str) -> Result<Quantity, String> {
    let int_len = text.bytes().take_while(u8::is_ascii_digit).count();
    let (int, rest) = text.split_at(int_len);
    if int.is_empty() {
        return Err("the amount must start with a digit (no sign)".into());
    }
    let (frac, rest) = match rest.strip_prefix('.') {
        Some(r) => {
            let n = r.bytes().take_while(u8::is_ascii_digit).count();
            if n == 0 {
                return Err("a decimal point must be followed by digits".into());
            }
            r.split_at(n)
        }
        None => ("", rest),
    };
    let unit = rest.strip_prefix(' ').unwrap_or(rest);
    // `1e3` reads as a thousand to people; as a unit `e3` it would be 1.
    let exponent = unit
        .strip_prefix(['e', 'E'])
        .map(|e| e.strip_prefix(['+', '-']).unwrap_or(e))
        .is_some_and(|d| d.bytes().next().is_some_and(|b| b.is_ascii_digit()));
    if exponent && rest == unit {
        return Err("write the number in plain decimal, without an exponent".into());
    }
    let unit = if unit.is_empty() {
        None
    } else if is_unit(unit) {
        Some(unit.to_string())
    } else {
        return Err(format!(
            "{:?} is not a unit (1-32 of A-Z a-z 0-9 _ . / % -)",
            unit.chars().take(40).collect::<String>()
        ));
    };
    let currency = unit
        .as_deref()
        .filter(|u| u.len() == 3 && u.bytes().all(|b| b.is_ascii_uppercase()));
    let minor = match currency {
        Some(c) if is_zero_decimal(c) => 0,
        Some(_) => 2,
        None => 0,
    };
    let scale = frac.len().max(minor);
    if scale > usize::from(MAX_SCALE) {
        return Err("at most 18 digits after the point".into());
    }
    let digits = format!("{int}{frac}{}", "0".repeat(scale - frac.len()));
    let amount = digits
        .parse::<u64>()
        .ok()
        .filter(|a| *a <= MAX_SAFE_INTEGER as u64)
        .ok_or("the amount is too large (at most 2^53-1 in its smallest unit)")?;
    Ok(Quantity {
        amount,
        scale: scale as u8,
        unit,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(t: &str) -> Quantity {
        parse_amount(t).unwrap()
    }

    #[test]
    fn money_takes_its_minor_unit_scale_and_nothing_is_rounded() {
        assert_eq!(
            q("22.87USD").to_value(),
            serde_json::json!({"amount": 2287, "scale": 2, "unit": "USD"})
        );
        assert_eq!(
            q("40USD").to_value(),
            serde_json::json!({"amount": 4000, "scale": 2, "unit": "USD"})
        );
        assert_eq!(
            q("30.001USD").to_value(),
            serde_json::json!({"amount": 30001, "scale": 3, "unit": "USD"})
        );
        assert_eq!(
            q("500JPY").to_value(),
            serde_json::json!({"amount": 500, "unit": "JPY"})
        );
        assert_eq!(q("1").to_value(), serde_json::json!({"amount": 1}));
        assert_eq!(
            q("0.2").to_value(),
            serde_json::json!({"amount": 2, "scale": 1})
        );
        assert_eq!(
            q("5 GB").to_value(),
            serde_json::json!({"amount": 5, "unit": "GB"})
        );
        assert_eq!(
            q("0.009007199254740991").to_value(),
            serde_json::json!({"amount": 9007199254740991u64, "scale": 18})
        );
    }

    #[test]
    fn malformed_amounts_are_refused() {
        for bad in [
            "",
            "-1",
            "1.",
            ".5",
            "1e3",
            "1,5",
            "9007199254740992",
            "0.0000000000000000001",
            "1 $",
            "1USD!",
        ] {
            assert!(parse_amount(bad).is_err(), "{bad}");
        }
        for bad in ["spend", "Spend=1", "1x=1", "=1", "spend=abc"] {
            assert!(parse_measure(bad, "--uses").is_err(), "{bad}");
        }
        assert_eq!(parse_measure("emails=3", "--each").unwrap().0, "emails");
    }

    #[test]
    fn signs_decide_and_contradictions_are_refused() {
        let yea = (Dialect::YeaV1, "a proposal with `uses`".to_string());
        let parley = (Dialect::ParleyV1, "--cost".to_string());
        assert_eq!(decide(None, &[]).unwrap(), None);
        assert_eq!(
            decide(None, std::slice::from_ref(&yea)).unwrap(),
            Some(Dialect::YeaV1)
        );
        assert_eq!(
            decide(Some(Dialect::ParleyV1), &[]).unwrap(),
            Some(Dialect::ParleyV1)
        );
        let e = decide(None, &[yea.clone(), parley.clone()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("--dialect"), "{e}");
        let e = decide(Some(Dialect::ParleyV1), &[yea])
            .unwrap_err()
            .to_string();
        assert!(e.contains("contradicts"), "{e}");
    }
}

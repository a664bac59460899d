//! The service's summary against the proposal's cost.
//!
//! The summary is the service's own words, shown labelled as such; the cost
//! that binds is the proposal's `cost` (§5.1). A summary that says
//! "Order for 5.00 USD" over a 500.00 USD proposal, or "free trial" over a
//! charge, is how a human gets misled while every signed byte is honest.
//! [`mismatch`] reads the money a summary names and says, in one sentence,
//! when it disagrees with the cost. It reads amounts next to a currency code
//! (`71.36 USD`, `USD 71.36`, `71USD`) or a currency sign (`$71.36`, `€5`,
//! `5 €`), and the words "free", "no cost", "no charge".

use parley_core::money::{is_zero_decimal, Money};

/// ISO 4217 codes common enough to be recognised without a sign; the cost's
/// own currency is always recognised too.
const CODES: &[&str] = &[
    "USD", "EUR", "GBP", "JPY", "CHF", "CAD", "AUD", "NZD", "CNY", "HKD", "SGD", "SEK", "NOK",
    "DKK", "PLN", "CZK", "HUF", "INR", "BRL", "MXN", "KRW", "ZAR", "TRY", "ILS", "AED",
];

/// Which currencies a sign may stand for.
fn sign_currencies(c: char) -> Option<&'static [&'static str]> {
    Some(match c {
        '$' => &["USD", "CAD", "AUD", "NZD", "HKD", "SGD", "MXN"],
        '€' => &["EUR"],
        '£' => &["GBP"],
        '¥' => &["JPY", "CNY"],
        '₹' => &["INR"],
        '₩' => &["KRW"],
        _ => return None,
    })
}

/// One amount the summary names.
#[derive(Debug, Clone, PartialEq)]
struct Named {
    /// As written, for the message.
    text: String,
    /// The currencies it may be in (one for a code, a few for `$`).
    currencies: Vec<String>,
    /// The number as written: whole part digits and up to two fraction digits.
    whole: String,
    frac: String,
}

impl Named {
    fn is_zero(&self) -> bool {
        self.whole.bytes().all(|b| b == b'0') && self.frac.bytes().all(|b| b == b'0')
    }
    /// Whether it is exactly `m`.
    fn equals(&self, m: &Money) -> bool {
        if !self.currencies.contains(&m.currency) {
            return false;
        }
        let zero = is_zero_decimal(&m.currency);
        if zero && !self.frac.bytes().all(|b| b == b'0') {
            return false;
        }
        let Ok(whole) = self.whole.parse::<i64>() else {
            return false;
        };
        let minor = if zero {
            Some(whole)
        } else {
            let frac = format!("{:0<2}", self.frac);
            frac.parse::<i64>()
                .ok()
                .and_then(|f| whole.checked_mul(100)?.checked_add(f))
        };
        minor == Some(m.amount)
    }
}

/// A number at byte `i` of `chars`: digits with `,` thousands separators and
/// an optional `.` fraction. Returns (whole digits, fraction digits, end).
fn number(chars: &[char], i: usize) -> Option<(String, String, usize)> {
    let mut j = i;
    let mut whole = String::new();
    while j < chars.len() && (chars[j].is_ascii_digit() || (chars[j] == ',' && !whole.is_empty())) {
        if chars[j] != ',' {
            whole.push(chars[j]);
        }
        j += 1;
    }
    // A trailing comma is punctuation, not a separator.
    while j > i && chars[j - 1] == ',' {
        j -= 1;
    }
    if whole.is_empty() {
        return None;
    }
    let mut frac = String::new();
    if j + 1 < chars.len() && chars[j] == '.' && chars[j + 1].is_ascii_digit() {
        let mut k = j + 1;
        while k < chars.len() && chars[k].is_ascii_digit() {
            frac.push(chars[k]);
            k += 1;
        }
        j = k;
    }
    Some((whole.trim_start_matches('0').to_string(), frac, j))
}

/// A currency code at `i` (three capitals not part of a longer word).
fn code_at(chars: &[char], i: usize, own: Option<&str>) -> Option<String> {
    if i + 3 > chars.len() {
        return None;
    }
    let word: String = chars[i..i + 3].iter().collect();
    let bounded = (i == 0 || !chars[i - 1].is_alphabetic())
        && chars.get(i + 3).is_none_or(|c| !c.is_alphabetic());
    (bounded
        && word.chars().all(|c| c.is_ascii_uppercase())
        && (CODES.contains(&word.as_str()) || own == Some(word.as_str())))
    .then_some(word)
}

fn named_amounts(summary: &str, own: Option<&str>) -> Vec<Named> {
    let chars: Vec<char> = summary.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let starts_number =
            chars[i].is_ascii_digit() && (i == 0 || !chars[i - 1].is_alphanumeric());
        if !starts_number {
            i += 1;
            continue;
        }
        let Some((whole, frac, end)) = number(&chars, i) else {
            i += 1;
            continue;
        };
        let whole = if whole.is_empty() { "0".into() } else { whole };
        // What stands before the number ("USD 5", "$5") or after it ("5 USD", "5€").
        let sign_before = match (i.checked_sub(1), i.checked_sub(2)) {
            (Some(b), _) if sign_currencies(chars[b]).is_some() => Some(b),
            (Some(b), Some(bb)) if chars[b] == ' ' && sign_currencies(chars[bb]).is_some() => {
                Some(bb)
            }
            _ => None,
        }
        .and_then(|b| sign_currencies(chars[b]).map(|c| (b, c)));
        let code_before = (i >= 4 && chars[i - 1] == ' ')
            .then(|| code_at(&chars, i - 4, own))
            .flatten()
            .or_else(|| (i >= 3).then(|| code_at(&chars, i - 3, own)).flatten());
        let mut after = end;
        if after < chars.len() && chars[after] == ' ' {
            after += 1;
        }
        let sign_after = chars.get(after).and_then(|c| sign_currencies(*c));
        let code_after = code_at(&chars, after, own);
        let currencies: Option<Vec<String>> = code_after
            .clone()
            .or(code_before.clone())
            .map(|c| vec![c])
            .or_else(|| {
                sign_before
                    .map(|(_, c)| c)
                    .or(sign_after)
                    .map(|cs| cs.iter().map(|c| c.to_string()).collect())
            });
        if let Some(currencies) = currencies {
            let from = sign_before
                .map(|(b, _)| b)
                .or(code_before
                    .as_ref()
                    .map(|_| if chars[i - 1] == ' ' { i - 4 } else { i - 3 }))
                .unwrap_or(i);
            let to = if code_after.is_some() {
                after + 3
            } else if sign_after.is_some() {
                after + 1
            } else {
                end
            };
            out.push(Named {
                text: chars[from..to.min(chars.len())]
                    .iter()
                    .collect::<String>()
                    .trim()
                    .to_string(),
                currencies,
                whole,
                frac,
            });
        }
        i = end.max(i + 1);
    }
    out
}

fn says_free(summary: &str) -> bool {
    let lower = summary.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    words.contains(&"free")
        || words
            .windows(2)
            .any(|w| w[0] == "no" && matches!(w[1], "cost" | "charge" | "fee"))
}

/// One sentence when the summary's money disagrees with the proposal's
/// `cost` (`None`: the proposal states no cost); `None` when it agrees or
/// names no money and the cost is nothing.
pub fn mismatch(summary: &str, cost: Option<&Money>) -> Option<String> {
    let cost = cost.filter(|m| m.amount != 0);
    let named = named_amounts(summary, cost.map(|m| m.currency.as_str()));
    let shown = |n: &Named| crate::display::safe(&n.text);
    match cost {
        Some(m) => {
            if named.iter().any(|n| n.equals(m)) {
                return None;
            }
            if let Some(n) = named.first() {
                return Some(format!(
                    "The service's summary says {}, but the proposal costs {m}.",
                    shown(n)
                ));
            }
            if says_free(summary) {
                return Some(format!(
                    "The service's summary calls this free, but the proposal costs {m}."
                ));
            }
            Some(format!(
                "The service's summary names no amount, but the proposal costs {m}."
            ))
        }
        None => named.iter().find(|n| !n.is_zero()).map(|n| {
            format!(
                "The service's summary says {}, but the proposal states no cost.",
                shown(n)
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usd(amount: i64) -> Money {
        Money {
            amount,
            currency: "USD".into(),
        }
    }

    #[test]
    fn the_summary_agrees_or_the_review_says_how_it_differs() {
        let jpy = Money {
            amount: 500,
            currency: "JPY".into(),
        };
        let cases: Vec<(&str, &str, Option<Money>, Option<&str>)> = vec![
            (
                "the same amount and code",
                "Order 3 items, 71.36 USD",
                Some(usd(7136)),
                None,
            ),
            ("code first", "Pay USD 71.36 now", Some(usd(7136)), None),
            ("code glued on", "Total 71.36USD", Some(usd(7136)), None),
            ("a dollar sign", "Order for $71.36", Some(usd(7136)), None),
            ("whole dollars", "A $40 gift card", Some(usd(4000)), None),
            (
                "thousands separators",
                "A 1,234.50 USD laptop",
                Some(usd(123_450)),
                None,
            ),
            ("yen, no minor unit", "Ticket ¥500", Some(jpy.clone()), None),
            (
                "one of several amounts matches",
                "Was 90.00 USD, now 71.36 USD",
                Some(usd(7136)),
                None,
            ),
            (
                "another amount",
                "Order for 5.00 USD",
                Some(usd(50_000)),
                Some("The service's summary says 5.00 USD, but the proposal costs 500.00 USD."),
            ),
            (
                "another currency",
                "Order for 71.36 EUR",
                Some(usd(7136)),
                Some("The service's summary says 71.36 EUR, but the proposal costs 71.36 USD."),
            ),
            (
                "a euro sign over a dollar cost",
                "Only €71.36",
                Some(usd(7136)),
                Some("The service's summary says €71.36, but the proposal costs 71.36 USD."),
            ),
            (
                "no amount while it costs",
                "Order 3 items",
                Some(usd(7136)),
                Some("The service's summary names no amount, but the proposal costs 71.36 USD."),
            ),
            (
                "free while it costs",
                "Free trial, cancel any time",
                Some(usd(999)),
                Some("The service's summary calls this free, but the proposal costs 9.99 USD."),
            ),
            (
                "an amount while the proposal states no cost",
                "Subscription, 9.99 USD a month",
                None,
                Some("The service's summary says 9.99 USD, but the proposal states no cost."),
            ),
            ("free and no cost", "Free newsletter", None, None),
            (
                "no money at all, no cost",
                "Add 3 items to the cart",
                None,
                None,
            ),
            ("a zero amount, no cost", "0.00 USD today", None, None),
            (
                "a zero cost is no cost",
                "Order 3 items",
                Some(usd(0)),
                None,
            ),
            (
                "a word that merely contains a code",
                "USDA 5 approved",
                None,
                None,
            ),
            (
                "the cost's own rare code is recognised",
                "Pay 12.00 XYZ",
                Some(Money {
                    amount: 1000,
                    currency: "XYZ".into(),
                }),
                Some("The service's summary says 12.00 XYZ, but the proposal costs 10.00 XYZ."),
            ),
            (
                "hidden characters in the quoted amount are shown",
                "Pay \u{202e}5.00 USD",
                Some(usd(100)),
                Some("The service's summary says 5.00 USD, but the proposal costs 1.00 USD."),
            ),
        ];
        for (name, summary, cost, want) in cases {
            assert_eq!(
                mismatch(summary, cost.as_ref()).as_deref(),
                want,
                "{name}: {summary:?}"
            );
        }
    }
}

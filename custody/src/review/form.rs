//! The grant form: what the human edited must be what the form showed, and
//! every widening of the request must be one the human confirmed.

use super::{Rejection, ReviewedGrant};
use serde_json::Value;

/// A grant as the human's form sends it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FormGrant {
    /// The caveats the form built.
    pub caveats: Value,
    /// The caveats the form showed as "exactly what will be signed" (the
    /// engine's own preview of `caveats`). `None` only for callers with no
    /// screen (tests, scripts); the desktop app always sends it.
    pub shown: Option<Value>,
    /// The widenings the form showed and the human confirmed on purpose,
    /// word for word.
    pub confirmed_widenings: Vec<String>,
}

impl From<Value> for FormGrant {
    fn from(caveats: Value) -> FormGrant {
        FormGrant {
            caveats,
            ..FormGrant::default()
        }
    }
}

impl From<&Value> for FormGrant {
    fn from(caveats: &Value) -> FormGrant {
        FormGrant::from(caveats.clone())
    }
}

/// What is about to be signed must be what the form showed, and any way it
/// allows more than `requested` must be exactly what the human confirmed.
pub fn check_form(
    g: &ReviewedGrant,
    requested: Option<&ReviewedGrant>,
    form: &FormGrant,
) -> Result<(), Rejection> {
    if let Some(shown) = &form.shown {
        if *shown != g.caveats_value() {
            return Err(Rejection::new(
                "not_what_was_shown",
                "what would be signed differs from what the form showed; \
                 look at the form again and issue once its preview is up to date",
            ));
        }
    }
    let widened = requested.map(|r| r.widenings(g)).unwrap_or_default();
    if widened != form.confirmed_widenings {
        return Err(if widened.is_empty() {
            Rejection::new(
                "widening_not_made",
                "the form confirmed widenings that this grant does not make; look at the form again",
            )
        } else {
            Rejection::new(
                "widening_not_confirmed",
                format!(
                    "this edit allows more than the agent asked for ({}); \
                     the form must show it and you must confirm it on purpose",
                    widened.join("; ")
                ),
            )
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::review::test_support::{ctx, grant, key, NOW};
    use serde_json::json;

    #[test]
    fn a_widening_edit_is_signed_only_when_confirmed_word_for_word() {
        let principals = [key(1)];
        let c = ctx(&principals, &[]);
        let requested = json!([{"svc": ["shop.example"]}, {"verbs": ["ASK"]}, {"can": []},
            {"per": {"max": 4000, "currency": "USD"}}, {"exp": NOW + 3600}]);
        let g = grant(requested.clone(), Some("groceries")).expect("reviewed");
        let narrower = json!([{"svc": ["shop.example"]}, {"verbs": ["ASK"]}, {"can": []},
            {"per": {"max": 1000, "currency": "USD"}}, {"exp": NOW + 600}]);
        let wider = json!([{"svc": ["shop.example"]}, {"verbs": ["ASK", "COMMIT"]},
            {"per": {"max": 8000, "currency": "USD"}}, {"exp": NOW + 3600}]);
        let said = vec![
            "adds COMMIT".to_string(),
            "allows every capability".to_string(),
            "raises the per-action cap from 40.00 USD to 80.00 USD".to_string(),
        ];
        let shown = |v: &Value| grant(v.clone(), None).expect("reviewed").caveats_value();
        let form = |caveats: &Value, shown: Option<Value>, confirmed: Vec<String>| FormGrant {
            caveats: caveats.clone(),
            shown,
            confirmed_widenings: confirmed,
        };
        let cases: Vec<(&str, FormGrant, Result<(), &str>)> = vec![
            (
                "the request unchanged",
                form(&requested, Some(shown(&requested)), vec![]),
                Ok(()),
            ),
            (
                "narrower, nothing to confirm",
                form(&narrower, Some(shown(&narrower)), vec![]),
                Ok(()),
            ),
            (
                "wider, not confirmed",
                form(&wider, Some(shown(&wider)), vec![]),
                Err("widening_not_confirmed"),
            ),
            (
                "wider, confirmed in part",
                form(&wider, Some(shown(&wider)), said[..1].to_vec()),
                Err("widening_not_confirmed"),
            ),
            (
                "wider, confirmed word for word",
                form(&wider, Some(shown(&wider)), said.clone()),
                Ok(()),
            ),
            (
                "narrower, but widenings confirmed",
                form(&narrower, None, said.clone()),
                Err("widening_not_made"),
            ),
            (
                "signed differs from shown",
                form(&wider, Some(shown(&narrower)), said.clone()),
                Err("not_what_was_shown"),
            ),
        ];
        for (name, f, want) in cases {
            let got = g.narrowed(&f, &c).map(|n| {
                assert_eq!(
                    n.review().their_words,
                    "groceries",
                    "{name}: the reason stays"
                );
            });
            match (got, want) {
                (Ok(()), Ok(())) => {}
                (Err(e), Err(code)) => assert_eq!(e.code, code, "{name}: {e}"),
                (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
            }
        }
    }
}

//! Which settings changes loosen custody: widen what can be signed without
//! OS authentication, or who may ask for a signature.
//!
//! The settings form is reachable by anything that can click in it (another
//! X client's synthetic input, a compromised page on the UI channel), so a
//! change that loosens custody is made only after the operating system
//! authenticated the human for that very change (polkit's change action;
//! the desktop's calls ask it, [`crate::engine::Engine::authenticate_change`]).
//! This module only decides which changes those are and says each in words;
//! it asks nothing. Tightening never asks.
//!
//! Every field of [`Settings`], judged:
//!
//! | field | loosens when |
//! |---|---|
//! | `step_up` | the rule is weaker: committing > above:AMOUNT > never; a higher amount is weaker; another currency is a change, asked for |
//! | `agents_group` | a group is set where there was none, or another group replaces it |
//! | `extra_users` | a user or uid is added (removing one tightens) |
//! | `max_consent_horizon_secs` | it is raised |
//! | `max_grant_lifetime_secs` | it is raised |
//! | `queue_size` | it is raised (more requests may wait for a click at once) |
//! | `rate_per_minute` | it is raised |
//! | `socket_path` | never: who may connect is decided by the peer's uid and groups (the two fields above), not by where the socket is; its directory's owner is checked wherever it is |
//! | `agent_labels` | never: a label names a key, it allows nothing (and `settings_save` keeps the labels in force: they change one at a time, `agent_label_set`) |
//! | `end_short_grants_on_lock` | it is turned off (approve-for-a-while grants then outlive a lock) |
//! | `autostart_offered` | never: whether the first-run offer was answered (`settings_save` keeps the value in force) |
//! | `hide_notification_details` | never: it changes what a notification on an unlocked screen says, not what can be signed or who may ask (while locked, details are hidden whatever it says) |

use super::settings::Settings;
use crate::stepup::{PromptDetails, StepUpPolicy};
use parley_core::money::Money;
use serde::Serialize;

/// One change that loosens custody, with the field it is in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Loosening {
    /// The settings field (its JSON name).
    pub field: &'static str,
    /// The change in words, display-safe ("turn OS authentication off for
    /// approvals"); it completes "Parley Custody will …".
    pub words: String,
}

fn change(field: &'static str, words: String) -> Loosening {
    Loosening { field, words }
}

/// How strict a step-up rule is: higher asks for more. `Above` carries its
/// amount; amounts compare only within one currency.
fn strictness(p: &StepUpPolicy) -> u8 {
    match p {
        StepUpPolicy::Never => 0,
        StepUpPolicy::Above { .. } => 1,
        StepUpPolicy::Committing => 2,
    }
}

fn money(amount: i64, currency: &str) -> String {
    Money {
        amount,
        currency: currency.to_string(),
    }
    .to_string()
}

/// The step-up change in words, when it is weaker (or not comparable).
fn step_up(current: &StepUpPolicy, proposed: &StepUpPolicy) -> Option<String> {
    use StepUpPolicy::*;
    match (current, proposed) {
        (
            Above {
                amount: a,
                currency: c,
            },
            Above {
                amount: b,
                currency: d,
            },
        ) => {
            if c != d {
                Some(format!(
                    "ask OS authentication for consents from {} instead of from {}",
                    money(*b, d),
                    money(*a, c)
                ))
            } else if b > a {
                Some(format!(
                    "ask OS authentication only for consents from {} (was from {})",
                    money(*b, d),
                    money(*a, c)
                ))
            } else {
                None
            }
        }
        (_, Never) if strictness(current) > 0 => {
            Some("turn OS authentication off for approvals".into())
        }
        (_, Above { amount, currency }) if strictness(current) > 1 => Some(format!(
            "ask OS authentication for consents only from {} (was every consent)",
            money(*amount, currency)
        )),
        _ => None,
    }
}

fn duration(secs: i64) -> String {
    parley_core::lens::duration(secs)
}

fn safe(s: &str) -> String {
    crate::display::bounded(s, 64)
}

/// Every change from `current` to `proposed` that loosens custody, in
/// words, in field order. Empty when the change only tightens or keeps
/// what is there (then nothing needs to be asked).
pub fn loosenings(current: &Settings, proposed: &Settings) -> Vec<Loosening> {
    let mut out = Vec::new();
    if let Some(w) = step_up(&current.step_up, &proposed.step_up) {
        out.push(change("step_up", w));
    }
    match (&current.agents_group, &proposed.agents_group) {
        (None, Some(g)) => out.push(change(
            "agents_group",
            format!("let the agents of group \"{}\" connect", safe(g)),
        )),
        (Some(old), Some(g)) if old != g => out.push(change(
            "agents_group",
            format!(
                "let the agents of group \"{}\" connect (instead of group \"{}\")",
                safe(g),
                safe(old)
            ),
        )),
        _ => {}
    }
    for u in &proposed.extra_users {
        if !current.extra_users.contains(u) {
            let who = if u.bytes().all(|b| b.is_ascii_digit()) {
                format!("uid {}", safe(u))
            } else {
                format!("OS user \"{}\"", safe(u))
            };
            out.push(change("extra_users", format!("let {who}'s agents connect")));
        }
    }
    if proposed.max_consent_horizon_secs > current.max_consent_horizon_secs {
        out.push(change(
            "max_consent_horizon_secs",
            format!(
                "accept consents for proposals up to {} ahead (was {})",
                duration(proposed.max_consent_horizon_secs),
                duration(current.max_consent_horizon_secs)
            ),
        ));
    }
    if proposed.max_grant_lifetime_secs > current.max_grant_lifetime_secs {
        out.push(change(
            "max_grant_lifetime_secs",
            format!(
                "sign grants that last up to {} (was {})",
                duration(proposed.max_grant_lifetime_secs),
                duration(current.max_grant_lifetime_secs)
            ),
        ));
    }
    if proposed.queue_size > current.queue_size {
        out.push(change(
            "queue_size",
            format!(
                "let {} requests wait at once (was {})",
                proposed.queue_size, current.queue_size
            ),
        ));
    }
    if proposed.rate_per_minute > current.rate_per_minute {
        out.push(change(
            "rate_per_minute",
            format!(
                "accept {} new requests a minute from one OS user (was {})",
                proposed.rate_per_minute, current.rate_per_minute
            ),
        ));
    }
    if current.end_short_grants_on_lock && !proposed.end_short_grants_on_lock {
        out.push(change(
            "end_short_grants_on_lock",
            "keep approve-for-a-while grants alive while the screen is locked".into(),
        ));
    }
    out
}

/// The `change` detail of the OS prompt for several changes at once: their
/// words joined ("turn OS authentication off for approvals and let OS user
/// \"bob\"'s agents connect"), made display-safe and bounded by
/// [`PromptDetails::with`].
pub fn prompt(changes: &[Loosening]) -> PromptDetails {
    let words: Vec<&str> = changes.iter().map(|c| c.words.as_str()).collect();
    let text = match words.as_slice() {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    };
    PromptDetails::new().with("change", &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn above(amount: i64, currency: &str) -> StepUpPolicy {
        StepUpPolicy::Above {
            amount,
            currency: currency.into(),
        }
    }

    fn with(f: impl FnOnce(&mut Settings)) -> Settings {
        let mut s = Settings::default();
        f(&mut s);
        s
    }

    fn fields(a: &Settings, b: &Settings) -> Vec<&'static str> {
        loosenings(a, b).into_iter().map(|l| l.field).collect()
    }

    #[test]
    fn a_weaker_step_up_rule_loosens_and_a_stronger_one_does_not() {
        let rule = |p: StepUpPolicy| with(|s| s.step_up = p);
        let committing = rule(StepUpPolicy::Committing);
        let never = rule(StepUpPolicy::Never);
        let a50 = rule(above(5000, "USD"));
        let a80 = rule(above(8000, "USD"));
        let e50 = rule(above(5000, "EUR"));
        for (from, to) in [
            (&committing, &never),
            (&committing, &a50),
            (&a50, &never),
            (&a50, &a80),
            (&a50, &e50),
        ] {
            assert_eq!(
                fields(from, to),
                ["step_up"],
                "{:?} -> {:?}",
                from.step_up,
                to.step_up
            );
        }
        for (from, to) in [
            (&never, &committing),
            (&never, &a50),
            (&a50, &committing),
            (&a80, &a50),
            (&a50, &a50),
            (&never, &never),
        ] {
            assert!(
                fields(from, to).is_empty(),
                "{:?} -> {:?}",
                from.step_up,
                to.step_up
            );
        }
        assert_eq!(
            loosenings(&committing, &never)[0].words,
            "turn OS authentication off for approvals"
        );
        let w = &loosenings(&a50, &a80)[0].words;
        assert!(w.contains("80.00 USD") && w.contains("50.00 USD"), "{w}");
    }

    #[test]
    fn who_may_connect_widens_with_a_group_or_an_added_user() {
        let base = with(|s| {
            s.agents_group = Some("agents".into());
            s.extra_users = vec!["alice".into()];
        });
        let other_group = with(|s| {
            s.agents_group = Some("wheel".into());
            s.extra_users = vec!["alice".into()];
        });
        assert_eq!(fields(&base, &other_group), ["agents_group"]);
        assert_eq!(
            fields(
                &Settings::default(),
                &with(|s| s.agents_group = Some("agents".into()))
            ),
            ["agents_group"]
        );
        let more = with(|s| {
            s.agents_group = Some("agents".into());
            s.extra_users = vec!["alice".into(), "bob".into(), "1001".into()];
        });
        let l = loosenings(&base, &more);
        let words: Vec<&str> = l.iter().map(|l| l.words.as_str()).collect();
        assert_eq!(
            words,
            [
                "let OS user \"bob\"'s agents connect",
                "let uid 1001's agents connect"
            ]
        );
        // Fewer users, no group: tighter.
        assert!(fields(&more, &Settings::default()).is_empty());
    }

    #[test]
    fn higher_limits_loosen_and_lower_ones_do_not() {
        let d = Settings::default();
        let high = with(|s| {
            s.max_consent_horizon_secs = d.max_consent_horizon_secs * 2;
            s.max_grant_lifetime_secs = d.max_grant_lifetime_secs * 2;
            s.queue_size = d.queue_size + 1;
            s.rate_per_minute = d.rate_per_minute + 1;
        });
        assert_eq!(
            fields(&d, &high),
            [
                "max_consent_horizon_secs",
                "max_grant_lifetime_secs",
                "queue_size",
                "rate_per_minute"
            ]
        );
        assert!(fields(&high, &d).is_empty());
        let w = &loosenings(&d, &high)[2].words;
        assert_eq!(w, "let 65 requests wait at once (was 64)");
    }

    #[test]
    fn keeping_short_grants_alive_on_lock_loosens_and_ending_them_does_not() {
        let d = Settings::default();
        assert!(d.end_short_grants_on_lock, "on by default");
        let off = with(|s| s.end_short_grants_on_lock = false);
        assert_eq!(fields(&d, &off), ["end_short_grants_on_lock"]);
        assert!(fields(&off, &d).is_empty());
    }

    #[test]
    fn the_socket_path_labels_and_the_first_run_offer_are_neutral() {
        let d = Settings::default();
        let moved = with(|s| {
            s.socket_path = Some("/run/parley/custody.sock".into());
            s.autostart_offered = true;
            s.hide_notification_details = crate::desktop::settings::HideDetails::Always;
            s.agent_labels.insert(
                "ed25519:gTl3Dqh9F19Wo1Rmw0x-zMuNipG07jeiXfYPW4_Js5Q".into(),
                "bot".into(),
            );
        });
        assert!(loosenings(&d, &moved).is_empty());
        assert!(loosenings(&moved, &d).is_empty(), "and back");
    }

    #[test]
    fn the_prompt_names_every_change_display_safe() {
        let d = Settings::default();
        let p = with(|s| {
            s.step_up = StepUpPolicy::Never;
            s.extra_users = vec!["bob".into()];
            s.queue_size = 100;
        });
        let details = prompt(&loosenings(&d, &p));
        assert_eq!(
            details.get("change"),
            Some(
                "turn OS authentication off for approvals, let OS user \"bob\"'s agents connect \
                 and let 100 requests wait at once (was 64)"
            )
        );
        // A group name passes validation only as a plain name, but the words
        // are display-safe whatever they quote.
        let odd = with(|s| s.agents_group = Some("a\u{202e}b".into()));
        let w = &loosenings(&d, &odd)[0].words;
        assert!(!w.contains('\u{202e}'), "{w:?}");
    }
}

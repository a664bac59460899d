//! `cal.example.com` — "Example Calendar": five meetings over the next
//! three days, seeded from the day the service starts.
//!
//! * `calendar.find` (ask): events, by words or day.
//! * `calendar.reschedule` (intent): moves a meeting; low risk, undoable for
//!   an hour, so a grant within policy lets it auto-commit (§4.3.1). A name
//!   that matches several meetings — "Ana" is two people — is answered with
//!   CLARIFY, each option a params patch naming one event (§4.3).

use crate::service::params::{self, format_datetime};
use crate::service::{
    App, Caller, Capability, CapabilityKind, ClarifyOption, ParleyError, Plan, Planned, Progress,
    Reversal, ServiceInfo,
};
use parley_core::quantity::Quantity;
use parley_core::{Dialect, RiskLevel};
use serde_json::{json, Map, Value};
use std::sync::{Mutex, MutexGuard};

/// The service id (§4.1).
pub const ID: &str = "cal.example.com";
/// A move can be undone for this long.
pub const UNDO_WINDOW: i64 = 3600;
/// How long a proposal may be committed.
pub const PROPOSAL_TTL: i64 = 600;

/// Someone you meet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Person {
    /// Full name.
    pub name: &'static str,
    /// Where invitations go.
    pub email: &'static str,
}

const ANA_RUIZ: Person = Person {
    name: "Ana Ruiz",
    email: "ana.ruiz@example.com",
};
const ANA_LI: Person = Person {
    name: "Ana Li",
    email: "ana.li@example.com",
};
const BEN: Person = Person {
    name: "Ben Okafor",
    email: "ben@example.com",
};
const CHLOE: Person = Person {
    name: "Chloe Martin",
    email: "chloe@example.com",
};

/// A meeting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// `e1`…
    pub id: String,
    /// Title.
    pub title: &'static str,
    /// Start, unix seconds.
    pub start: i64,
    /// Length in minutes.
    pub minutes: i64,
    /// Who else attends.
    pub with: Vec<Person>,
}

impl Event {
    fn end(&self) -> i64 {
        self.start + self.minutes * 60
    }

    fn names(&self) -> String {
        self.with
            .iter()
            .map(|p| p.name)
            .collect::<Vec<_>>()
            .join(" & ")
    }

    fn to_value(&self) -> Value {
        json!({"id": self.id, "title": self.title, "start": format_datetime(self.start),
               "minutes": self.minutes, "with": self.names()})
    }

    /// Whether every word of `query` starts a word of the title or of an
    /// attendee's name, or `query` is the id.
    fn matches(&self, query: &str) -> bool {
        let q = query.trim().to_lowercase();
        if q == self.id {
            return true;
        }
        let words: Vec<String> = std::iter::once(self.title)
            .chain(self.with.iter().map(|p| p.name))
            .flat_map(|s| s.split(|c: char| !c.is_alphanumeric()))
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        let mut query_words = q.split_whitespace().peekable();
        query_words.peek().is_some()
            && query_words.all(|qw| words.iter().any(|w| w.starts_with(qw)))
    }
}

/// The seed calendar: five meetings on the three days after `today`
/// (unix seconds of any moment of that day, UTC).
pub fn seed(today: i64) -> Vec<Event> {
    let day = today.div_euclid(86_400) * 86_400;
    let at = |d: i64, h: i64| day + d * 86_400 + h * 3600;
    vec![
        Event {
            id: "e1".into(),
            title: "1:1 with Ana",
            start: at(1, 14),
            minutes: 30,
            with: vec![ANA_RUIZ],
        },
        Event {
            id: "e2".into(),
            title: "Design review",
            start: at(1, 16),
            minutes: 60,
            with: vec![ANA_LI, BEN],
        },
        Event {
            id: "e3".into(),
            title: "Roadmap planning",
            start: at(2, 10),
            minutes: 60,
            with: vec![CHLOE, BEN],
        },
        Event {
            id: "e4".into(),
            title: "Pipeline sync with Ana",
            start: at(2, 15),
            minutes: 30,
            with: vec![ANA_LI],
        },
        Event {
            id: "e5".into(),
            title: "Lunch with Chloe",
            start: at(3, 12),
            minutes: 60,
            with: vec![CHLOE],
        },
    ]
}

/// What a calendar commit does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CalendarAction {
    /// Move an event.
    Move {
        /// The event id.
        event: String,
        /// Its start when proposed.
        from: i64,
        /// The new start.
        to: i64,
    },
}

/// The calendar.
#[derive(Debug)]
pub struct Calendar {
    events: Mutex<Vec<Event>>,
}

impl Calendar {
    /// The seed calendar relative to `today` (see [`seed`]).
    pub fn new(today: i64) -> Calendar {
        Calendar {
            events: Mutex::new(seed(today)),
        }
    }

    fn events(&self) -> MutexGuard<'_, Vec<Event>> {
        self.events.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An event by id (tests).
    pub fn event(&self, id: &str) -> Option<Event> {
        self.events().iter().find(|e| e.id == id).cloned()
    }

    fn find(&self, p: &Map<String, Value>) -> Result<Value, ParleyError> {
        let query = params::opt_string(p, "query")?;
        let day = params::opt_date(p, "day")?;
        let mut found: Vec<Event> = self
            .events()
            .iter()
            .filter(|e| query.map_or(true, |q| e.matches(q)))
            .filter(|e| {
                day.as_ref()
                    .map_or(true, |(_, d)| e.start >= *d && e.start < d + 86_400)
            })
            .cloned()
            .collect();
        found.sort_by_key(|e| e.start);
        Ok(Value::Array(found.iter().map(Event::to_value).collect()))
    }

    fn plan_reschedule(
        &self,
        p: &Map<String, Value>,
        now: i64,
    ) -> Result<Planned<CalendarAction>, ParleyError> {
        let query = params::string(p, "event")?;
        let to = params::datetime(p, "to")?;
        let events = self.events();
        let mut matches: Vec<&Event> = events.iter().filter(|e| e.matches(query)).collect();
        matches.sort_by_key(|e| e.start);
        let event = match matches.as_slice() {
            [] => {
                return Err(ParleyError::not_found(format!(
                    "no meeting matches {:?}",
                    query.chars().take(60).collect::<String>()
                ))
                .fix("ASK calendar.find to list meetings"))
            }
            [one] => *one,
            many => {
                let mut people: Vec<&str> = Vec::new();
                for e in many {
                    for person in &e.with {
                        if person
                            .name
                            .to_lowercase()
                            .contains(&query.trim().to_lowercase())
                            && !people.contains(&person.name)
                        {
                            people.push(person.name);
                        }
                    }
                }
                let who = if people.len() > 1 {
                    format!(" ({} people: {})", people.len(), people.join(", "))
                } else {
                    String::new()
                };
                return Ok(Planned::Clarify {
                    question: format!(
                        "{} meetings match {:?}{who}. Which one?",
                        many.len(),
                        query.chars().take(60).collect::<String>()
                    ),
                    options: many
                        .iter()
                        .map(|e| ClarifyOption {
                            label: format!(
                                "{} · {} · {}",
                                e.title,
                                format_datetime(e.start),
                                e.with
                                    .iter()
                                    .map(|p| p.email)
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                            params: json!({"event": e.id}),
                        })
                        .collect(),
                });
            }
        };
        if to <= now {
            let suggestion = format_datetime(to + ((now - to) / 86_400 + 1) * 86_400);
            return Err(ParleyError::invalid_params(format!(
                "`to` must be in the future (got {})",
                format_datetime(to)
            ))
            .fix_params("the same time on a later day", json!({"to": suggestion})));
        }
        let end = to + event.minutes * 60;
        if let Some(clash) = events
            .iter()
            .find(|e| e.id != event.id && e.start < end && to < e.end())
        {
            return Err(ParleyError::invalid_params(format!(
                "{} clashes with {:?} at {}",
                format_datetime(to),
                clash.title,
                format_datetime(clash.start)
            ))
            .fix_params(
                "right after it",
                json!({"to": format_datetime(clash.end())}),
            ));
        }
        let mut effects = vec![json!({
            "op": "update", "target": format!("event/{}", event.id), "field": "start",
            "from": format_datetime(event.start), "to": format_datetime(to),
        })];
        effects.extend(
            event
                .with
                .iter()
                .map(|p| json!({"op": "send", "target": p.email, "detail": "updated invitation"})),
        );
        Ok(Planned::Proposals(vec![Plan {
            summary: format!("Move {:?} to {}", event.title, parley_core::lens::time(to)),
            effects,
            // Every attendee gets an updated invitation (the send effects).
            uses: super::uses([("invites", Quantity::count(event.with.len() as u64))]),
            risk: RiskLevel::Low,
            undo_window: Some(UNDO_WINDOW),
            ttl: PROPOSAL_TTL,
            data: None,
            action: CalendarAction::Move {
                event: event.id.clone(),
                from: event.start,
                to,
            },
        }]))
    }

    fn move_event(&self, id: &str, from: i64, to: i64) -> Result<Event, ParleyError> {
        let mut events = self.events();
        let event = events.iter_mut().find(|e| e.id == id).ok_or_else(|| {
            ParleyError::conflict(format!("event {id} is gone; send INTENT again"))
        })?;
        if event.start != from {
            return Err(ParleyError::conflict(format!(
                "event {id} was moved since this was proposed; send INTENT again"
            )));
        }
        event.start = to;
        Ok(event.clone())
    }
}

impl App for Calendar {
    type Action = CalendarAction;

    fn info(&self) -> ServiceInfo {
        ServiceInfo {
            id: ID.into(),
            name: "Example Calendar".into(),
            summary: "Your work calendar. Find meetings and move them; attendees are notified."
                .into(),
        }
    }

    fn capabilities(&self, _dialect: Dialect) -> Vec<Capability> {
        vec![
            Capability {
                name: "calendar.find".into(),
                kind: CapabilityKind::Ask,
                summary: "Meetings, by words in the title or an attendee's name, or by day".into(),
                params: json!({"query?": "string", "day?": "date"}),
                risk: None,
            },
            Capability {
                name: "calendar.reschedule".into(),
                kind: CapabilityKind::Intent,
                summary: "Move a meeting; attendees get an updated invitation".into(),
                params: json!({"event": "string — id or words from the title or an attendee's name", "to": "datetime"}),
                risk: Some(RiskLevel::Low),
            },
        ]
    }

    fn ask(
        &self,
        capability: &str,
        params: &Map<String, Value>,
        _caller: &Caller<'_>,
    ) -> Result<Value, ParleyError> {
        match capability {
            "calendar.find" => self.find(params),
            other => Err(ParleyError::internal(format!("no ask handler for {other}"))),
        }
    }

    fn plan(
        &self,
        capability: &str,
        params: &Map<String, Value>,
        caller: &Caller<'_>,
    ) -> Result<Planned<CalendarAction>, ParleyError> {
        match capability {
            "calendar.reschedule" => self.plan_reschedule(params, caller.now),
            other => Err(ParleyError::internal(format!(
                "no intent handler for {other}"
            ))),
        }
    }

    fn apply(
        &self,
        action: &CalendarAction,
        progress: &mut Progress,
    ) -> Result<Value, ParleyError> {
        let CalendarAction::Move { event, from, to } = action;
        let moved = self.move_event(event, *from, *to)?;
        progress.report("event moved; sending updated invitations", 0.8);
        Ok(json!({"event": moved.id, "start": format_datetime(moved.start)}))
    }

    fn revert(&self, action: &CalendarAction, _result: &Value) -> Result<Reversal, ParleyError> {
        let CalendarAction::Move { event, from, to } = action;
        let moved = self.move_event(event, *to, *from)?;
        let mut effects = vec![json!({
            "op": "update", "target": format!("event/{event}"), "field": "start",
            "from": format_datetime(*to), "to": format_datetime(*from),
        })];
        effects.extend(
            moved
                .with
                .iter()
                .map(|p| json!({"op": "send", "target": p.email, "detail": "updated invitation"})),
        );
        Ok(Reversal {
            effects,
            result: Some(json!({"event": moved.id, "start": format_datetime(moved.start)})),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ana_is_two_people_and_three_meetings() {
        let events = seed(1_790_000_000);
        let ana: Vec<&str> = events
            .iter()
            .filter(|e| e.matches("Ana"))
            .map(|e| e.id.as_str())
            .collect();
        assert_eq!(ana, ["e1", "e2", "e4"]);
        assert!(events[0].matches("e1"));
        assert!(events[0].matches("ana ruiz"));
        assert!(!events[0].matches("banana"));
        assert!(!events[0].matches("  "));
    }
}

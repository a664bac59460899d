//! `shop.example` — "Example Meals": a menu of 20 meals (deterministic),
//! orders that can be cancelled for two hours, and an irreversible tip.
//!
//! * `shop.search` (ask): the menu, filtered; big enough that a small
//!   budget elides it behind an EXPAND handle (§8).
//! * `shop.orders` (ask): the orders placed so far.
//! * `shop.order` (intent): two proposals, standard and express, with the
//!   cost in USD cents, a create and a charge effect, undo window 2 h.
//! * `shop.tip` (intent): a tip on a placed order; irreversible (`undo: null`),
//!   so it never auto-commits (§4.3.1).

use super::{usd, usd_quantity, uses};
use crate::service::params::{self, format_date};
use crate::service::{
    App, Caller, Capability, CapabilityKind, ParleyError, Plan, Planned, Progress, Reversal,
    ServiceInfo,
};
use parley_core::quantity::{Quantity, QuantityError};
use parley_core::{Dialect, RiskLevel};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

/// The service id (§4.1).
pub const ID: &str = "shop.example";
/// Orders can be cancelled for this long.
pub const CANCEL_WINDOW: i64 = 2 * 3600;
/// How long a proposal may be committed.
pub const PROPOSAL_TTL: i64 = 600;
/// Delivery fee below [`FREE_DELIVERY_FROM`].
pub const DELIVERY_FEE: i64 = 499;
/// Subtotal from which delivery is free.
pub const FREE_DELIVERY_FROM: i64 = 5000;
/// Express surcharge.
pub const EXPRESS_FEE: i64 = 799;
/// The card orders are charged to.
pub const CARD: &str = "card ••4242";

/// Where the YEA shop sends order confirmations.
pub const CUSTOMER: &str = "you (order confirmation)";

/// The largest tip, in cents.
pub const MAX_TIP: i64 = 10_000;

/// A YEA amount param (`tip`, `max_price`): an exact USD quantity in
/// cents from `min` to `max` (`{"amount": 250, "scale": 2, "unit": "USD"}`
/// is 2.50 USD). A float, a missing unit or another currency is
/// `invalid_params` with the fix: the shop never guesses what an inexact
/// amount meant (§5.1, §6.3: values are exact).
fn usd_param(
    p: &Map<String, Value>,
    name: &str,
    min: i64,
    max: i64,
) -> Result<Option<i64>, ParleyError> {
    let mut example = Map::new();
    example.insert(
        name.into(),
        json!({"amount": 250, "scale": 2, "unit": "USD"}),
    );
    let teach = |why: String| {
        ParleyError::invalid_params(format!(
            "`{name}` must be an exact USD quantity in cents, {{\"amount\": int, \"scale\": 2, \"unit\": \"USD\"}}: {why}"
        ))
        .fix_params(format!("{name} 2.50 USD"), Value::Object(example.clone()))
    };
    let v = match p.get(name) {
        None | Some(Value::Null) => return Ok(None),
        Some(v) => v,
    };
    if v.is_number() || v.get("amount").is_some_and(Value::is_f64) {
        return Err(teach(
            "the amount is a plain number; YEA amounts are whole minor units with a scale and unit, never floats".into(),
        ));
    }
    let q = Quantity::from_value(v, name).map_err(|e: QuantityError| teach(e.to_string()))?;
    let money = match q.as_money() {
        Some(m) if m.currency == "USD" => m,
        _ => return Err(teach(format!("got {q}; this shop takes USD at scale 2"))),
    };
    if !(min..=max).contains(&money.amount) {
        return Err(teach(format!(
            "{money} is not from {} to {}",
            usd(min),
            usd(max)
        )));
    }
    Ok(Some(money.amount))
}

/// One meal on the menu.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meal {
    /// `m01`…`m20`.
    pub sku: String,
    /// Its name.
    pub name: &'static str,
    /// Price in cents.
    pub price: i64,
    /// Calories.
    pub cal: i64,
    /// `vegan`, `vegetarian`, `high-protein` or `spicy`.
    pub tag: &'static str,
}

const MEALS: [(&str, &str); 20] = [
    ("Lemongrass Tofu Bowl", "vegan"),
    ("Harissa Chicken Plate", "spicy"),
    ("Wild Mushroom Risotto", "vegetarian"),
    ("Korean Beef Bibimbap", "high-protein"),
    ("Green Shakshuka", "vegetarian"),
    ("Red Lentil Dal", "vegan"),
    ("Cajun Shrimp Pasta", "spicy"),
    ("Roast Chicken and Greens", "high-protein"),
    ("Sesame Soba Noodles", "vegan"),
    ("Turkey Meatball Marinara", "high-protein"),
    ("Black Bean Enchiladas", "vegetarian"),
    ("Salmon Teriyaki", "high-protein"),
    ("Thai Green Curry", "spicy"),
    ("Spinach Ricotta Cannelloni", "vegetarian"),
    ("Pulled Pork Tacos", "spicy"),
    ("Chickpea Tagine", "vegan"),
    ("Lamb Kofta Wrap", "high-protein"),
    ("Charred Cauliflower Steak", "vegan"),
    ("Miso Glazed Cod", "high-protein"),
    ("Peanut Noodle Salad", "vegan"),
];

/// The menu, the same on every start.
pub fn menu() -> Vec<Meal> {
    MEALS
        .iter()
        .enumerate()
        .map(|(i, (name, tag))| {
            let i = i as i64;
            Meal {
                sku: format!("m{:02}", i + 1),
                name,
                price: 1099 + (i * 173) % 1100,
                cal: 380 + (i * 61) % 400,
                tag,
            }
        })
        .collect()
}

/// What a shop commit does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShopAction {
    /// Place an order.
    Order {
        /// The order id, fixed when proposed (it is in the effects).
        order: String,
        /// `qty× name` lines.
        lines: Vec<String>,
        /// Total in cents.
        total: i64,
        /// Delivery date.
        deliver: String,
    },
    /// Tip the courier of an order.
    Tip {
        /// The order.
        order: String,
        /// Cents.
        cents: i64,
    },
}

/// A placed order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Order {
    /// `placed` or `cancelled`.
    pub status: &'static str,
    /// What was ordered.
    pub lines: Vec<String>,
    /// Total in cents.
    pub total: i64,
    /// Tips in cents.
    pub tips: i64,
    /// Delivery date.
    pub deliver: String,
}

#[derive(Debug, Default)]
struct State {
    orders: BTreeMap<String, Order>,
    next_order: u64,
}

/// The shop.
#[derive(Debug)]
pub struct Shop {
    menu: Vec<Meal>,
    state: Mutex<State>,
}

impl Default for Shop {
    fn default() -> Self {
        Shop::new()
    }
}

fn money(cents: i64) -> String {
    usd(cents).to_string()
}

impl Shop {
    /// A shop with the standard menu and no orders.
    pub fn new() -> Shop {
        Shop {
            menu: menu(),
            state: Mutex::new(State {
                orders: BTreeMap::new(),
                next_order: 1001,
            }),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The orders placed so far (tests check that a commit ran once).
    pub fn orders(&self) -> BTreeMap<String, Order> {
        self.state().orders.clone()
    }

    fn search(&self, p: &Map<String, Value>, dialect: Dialect) -> Result<Value, ParleyError> {
        let query = params::opt_string(p, "query")?.map(str::to_lowercase);
        let tag = params::opt_string(p, "tag")?;
        if let Some(t) = tag {
            if !["vegan", "vegetarian", "high-protein", "spicy"].contains(&t) {
                return Err(ParleyError::invalid_params(format!(
                    "`tag` must be vegan, vegetarian, high-protein or spicy (got {:?})",
                    t.chars().take(40).collect::<String>()
                ))
                .fix_params("search vegan meals", json!({"tag": "vegan"})));
            }
        }
        let max_cents = match dialect {
            Dialect::ParleyV1 => match p.get("max_usd") {
                None | Some(Value::Null) => None,
                Some(_) => {
                    Some((params::number(p, "max_usd", 0.0..=10_000.0)? * 100.0).round() as i64)
                }
            },
            Dialect::YeaV1 => usd_param(p, "max_price", 0, 1_000_000)?,
        };
        let items: Vec<Value> = self
            .menu
            .iter()
            .filter(|m| query.as_ref().map_or(true, |q| m.name.to_lowercase().contains(q.as_str())))
            .filter(|m| tag.map_or(true, |t| m.tag == t))
            .filter(|m| max_cents.map_or(true, |c| m.price <= c))
            .map(|m| match dialect {
                Dialect::ParleyV1 => {
                    json!({"sku": m.sku, "name": m.name, "usd": m.price as f64 / 100.0, "cal": m.cal, "tag": m.tag})
                }
                // YEA prices are exact, in words (§9.2 form: `12.10 USD`).
                Dialect::YeaV1 => {
                    json!({"sku": m.sku, "name": m.name, "price": usd_quantity(m.price).to_string(), "cal": m.cal, "tag": m.tag})
                }
            })
            .collect();
        Ok(Value::Array(items))
    }

    fn list_orders(&self) -> Value {
        let orders: Vec<Value> = self
            .state()
            .orders
            .iter()
            .map(|(id, o)| {
                json!({"order": id, "status": o.status, "total": money(o.total + o.tips), "deliver": o.deliver})
            })
            .collect();
        Value::Array(orders)
    }

    fn plan_order(
        &self,
        p: &Map<String, Value>,
        now: i64,
        dialect: Dialect,
    ) -> Result<Planned<ShopAction>, ParleyError> {
        let items = params::list(p, "items")?;
        if items.is_empty() || items.len() > 20 {
            return Err(ParleyError::invalid_params(
                "`items` must list 1 to 20 meals",
            ));
        }
        let (deliver, day) = params::date(p, "deliver")?;
        let today = now.div_euclid(86_400) * 86_400;
        if day < today {
            return Err(ParleyError::invalid_params(format!(
                "`deliver` must be today or later (got {deliver})"
            ))
            .fix_params(
                "deliver tomorrow",
                json!({"deliver": format_date(today + 86_400)}),
            ));
        }
        let mut lines = Vec::new();
        let mut subtotal = 0i64;
        let mut count = 0i64;
        for (i, item) in items.iter().enumerate() {
            let Some(obj) = item.as_object() else {
                return Err(ParleyError::invalid_params(format!(
                    "`items[{i}]` must be {{sku: string, qty: int}}"
                )));
            };
            let sku = params::string(obj, "sku").map_err(|_| {
                ParleyError::invalid_params(format!("`items[{i}].sku` must be a string"))
            })?;
            let qty = params::opt_int(obj, "qty", 1..=20)
                .map_err(|_| {
                    ParleyError::invalid_params(format!(
                        "`items[{i}].qty` must be an integer from 1 to 20"
                    ))
                })?
                .unwrap_or(1);
            let Some(meal) = self.menu.iter().find(|m| m.sku == sku) else {
                return Err(ParleyError::invalid_params(format!(
                    "`items[{i}].sku` {:?} is not on the menu",
                    sku.chars().take(20).collect::<String>()
                ))
                .fix("ASK shop.search to find skus"));
            };
            lines.push(format!("{qty}× {}", meal.name));
            subtotal += meal.price * qty;
            count += qty;
        }
        let fee = if subtotal >= FREE_DELIVERY_FROM {
            0
        } else {
            DELIVERY_FEE
        };
        let mut state = self.state();
        let mut plan = |express: bool| {
            let order = format!("o{}", state.next_order);
            state.next_order += 1;
            let total = subtotal + fee + if express { EXPRESS_FEE } else { 0 };
            let risk = if total > 15_000 {
                RiskLevel::High
            } else if express {
                RiskLevel::Medium
            } else {
                RiskLevel::Low
            };
            let mut data = json!({"subtotal": money(subtotal), "delivery": money(fee)});
            if express {
                data["express"] = json!(money(EXPRESS_FEE));
            }
            let mut effects = vec![
                json!({"op": "create", "target": format!("order/{order}"), "detail": lines.join(", ")}),
                json!({"op": "charge", "target": CARD, "detail": money(total)}),
            ];
            // YEA can report counts, so the YEA shop also sends (and
            // reports) the order confirmation email; Parley's `cost` has no
            // place for it, so the Parley shop stays as it always was.
            let used = if dialect == Dialect::YeaV1 {
                effects.push(
                    json!({"op": "send", "target": CUSTOMER, "detail": "order confirmation email"}),
                );
                uses([
                    ("spend", usd_quantity(total)),
                    ("emails", Quantity::count(1)),
                ])
            } else {
                uses([("spend", usd_quantity(total))])
            };
            Plan {
                summary: format!(
                    "{count} meals for {deliver}{} — {}",
                    if express { " (express, by noon)" } else { "" },
                    money(total)
                ),
                effects,
                uses: used,
                risk,
                undo_window: Some(CANCEL_WINDOW),
                ttl: PROPOSAL_TTL,
                data: Some(data),
                action: ShopAction::Order {
                    order,
                    lines: lines.clone(),
                    total,
                    deliver: deliver.clone(),
                },
            }
        };
        let standard = plan(false);
        let express = plan(true);
        Ok(Planned::Proposals(vec![standard, express]))
    }

    fn plan_tip(
        &self,
        p: &Map<String, Value>,
        dialect: Dialect,
    ) -> Result<Planned<ShopAction>, ParleyError> {
        let order = params::string(p, "order")?;
        let cents = match dialect {
            Dialect::ParleyV1 => {
                let usd_amount = params::number(p, "usd", 0.01..=100.0)?;
                (usd_amount * 100.0).round() as i64
            }
            Dialect::YeaV1 => match usd_param(p, "tip", 1, MAX_TIP)? {
                Some(cents) => cents,
                None => {
                    return Err(ParleyError::invalid_params(
                        "`tip` must be an exact USD quantity in cents, {\"amount\": int, \"scale\": 2, \"unit\": \"USD\"}: it is missing",
                    )
                    .fix_params(
                        "tip 2.50 USD",
                        json!({"tip": {"amount": 250, "scale": 2, "unit": "USD"}}),
                    ))
                }
            },
        };
        match self.state().orders.get(order) {
            Some(o) if o.status == "placed" => {}
            Some(_) => {
                return Err(ParleyError::invalid_params(format!(
                    "order {order} was cancelled; there is no courier to tip"
                )))
            }
            None => {
                return Err(ParleyError::not_found(format!(
                    "there is no order {:?}",
                    order.chars().take(20).collect::<String>()
                ))
                .fix("ASK shop.orders to list your orders"))
            }
        }
        Ok(Planned::Proposals(vec![Plan {
            summary: format!("Tip {} on order {order}", money(cents)),
            effects: vec![
                json!({"op": "charge", "target": CARD, "detail": format!("tip {} for the courier of {order}", money(cents))}),
            ],
            uses: uses([("spend", usd_quantity(cents))]),
            risk: RiskLevel::Medium,
            undo_window: None,
            ttl: PROPOSAL_TTL,
            data: None,
            action: ShopAction::Tip {
                order: order.to_string(),
                cents,
            },
        }]))
    }
}

impl App for Shop {
    type Action = ShopAction;

    fn info(&self) -> ServiceInfo {
        ServiceInfo {
            id: ID.into(),
            name: "Example Meals".into(),
            summary: "Chef-made meals delivered. Search the menu, then order for a delivery day. Orders can be cancelled for 2 hours.".into(),
        }
    }

    fn capabilities(&self, dialect: Dialect) -> Vec<Capability> {
        // YEA amounts are exact quantities (§5.1), never floats.
        let max_price = match dialect {
            Dialect::ParleyV1 => ("max_usd?", json!("number")),
            Dialect::YeaV1 => (
                "max_price?",
                json!({"amount": "int — cents", "scale": "int — 2", "unit": "USD"}),
            ),
        };
        let mut search_params = json!({"query?": "string — words in the name", "tag?": "vegan|vegetarian|high-protein|spicy"});
        search_params[max_price.0] = max_price.1;
        let tip_params = match dialect {
            Dialect::ParleyV1 => json!({"order": "string", "usd": "number"}),
            Dialect::YeaV1 => {
                json!({"order": "string", "tip": {"amount": "int — cents", "scale": "int — 2", "unit": "USD"}})
            }
        };
        vec![
            Capability {
                name: "shop.search".into(),
                kind: CapabilityKind::Ask,
                summary: "Search the menu".into(),
                params: search_params,
                risk: None,
            },
            Capability {
                name: "shop.orders".into(),
                kind: CapabilityKind::Ask,
                summary: "Your orders".into(),
                params: json!({}),
                risk: None,
            },
            Capability {
                name: "shop.order".into(),
                kind: CapabilityKind::Intent,
                summary: "Order meals for delivery; proposes standard and express".into(),
                params: json!({"items": [{"sku": "string", "qty": "int"}], "deliver": "date"}),
                risk: Some(RiskLevel::Low),
            },
            Capability {
                name: "shop.tip".into(),
                kind: CapabilityKind::Intent,
                summary: "Tip the courier of an order (irreversible)".into(),
                params: tip_params,
                risk: Some(RiskLevel::Medium),
            },
        ]
    }

    fn ask(
        &self,
        capability: &str,
        params: &Map<String, Value>,
        caller: &Caller<'_>,
    ) -> Result<Value, ParleyError> {
        match capability {
            "shop.search" => self.search(params, caller.dialect),
            "shop.orders" => Ok(self.list_orders()),
            other => Err(ParleyError::internal(format!("no ask handler for {other}"))),
        }
    }

    fn plan(
        &self,
        capability: &str,
        params: &Map<String, Value>,
        caller: &Caller<'_>,
    ) -> Result<Planned<ShopAction>, ParleyError> {
        match capability {
            "shop.order" => self.plan_order(params, caller.now, caller.dialect),
            "shop.tip" => self.plan_tip(params, caller.dialect),
            other => Err(ParleyError::internal(format!(
                "no intent handler for {other}"
            ))),
        }
    }

    fn apply(&self, action: &ShopAction, progress: &mut Progress) -> Result<Value, ParleyError> {
        match action {
            ShopAction::Order {
                order,
                lines,
                total,
                deliver,
            } => {
                progress.report(&format!("authorizing {CARD}"), 0.3);
                let mut state = self.state();
                if state.orders.contains_key(order) {
                    return Err(ParleyError::conflict(format!(
                        "order {order} already exists"
                    )));
                }
                state.orders.insert(
                    order.clone(),
                    Order {
                        status: "placed",
                        lines: lines.clone(),
                        total: *total,
                        tips: 0,
                        deliver: deliver.clone(),
                    },
                );
                progress.report("order sent to the kitchen", 0.9);
                Ok(json!({"order": order, "status": "placed", "deliver": deliver}))
            }
            ShopAction::Tip { order, cents } => {
                let mut state = self.state();
                match state.orders.get_mut(order) {
                    Some(o) if o.status == "placed" => {
                        o.tips += cents;
                        Ok(json!({"order": order, "tipped": money(*cents)}))
                    }
                    _ => Err(ParleyError::conflict(format!(
                        "order {order} is no longer placed; send INTENT again"
                    ))),
                }
            }
        }
    }

    fn revert(&self, action: &ShopAction, _result: &Value) -> Result<Reversal, ParleyError> {
        match action {
            ShopAction::Order { order, total, .. } => {
                let mut state = self.state();
                match state.orders.get_mut(order) {
                    Some(o) if o.status == "placed" => {
                        o.status = "cancelled";
                        Ok(Reversal {
                            effects: vec![
                                json!({"op": "update", "target": format!("order/{order}"), "field": "status", "from": "placed", "to": "cancelled"}),
                                json!({"op": "charge", "target": CARD, "detail": format!("refund {}", money(*total))}),
                            ],
                            result: Some(json!({"order": order, "status": "cancelled"})),
                        })
                    }
                    _ => Err(ParleyError::conflict(format!(
                        "order {order} is not placed any more"
                    ))),
                }
            }
            ShopAction::Tip { .. } => Err(ParleyError::internal("a tip cannot be reverted")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn menu_is_deterministic_and_priced_in_cents() {
        let m = menu();
        assert_eq!(m.len(), 20);
        assert_eq!(m, menu());
        assert!(m.iter().all(|x| (1099..2199).contains(&x.price)));
        assert_eq!(m[0].sku, "m01");
    }
}

//! The policy decision (SPEC-approval §2): whether a job call's first plan
//! runs unasked, needs the person's approval, needs it out of band, or never
//! runs.
//!
//! Only a grant signed by the pinned principal and issued to this server's
//! key can let anything run unasked; its signature and holder are checked
//! with parley-core. The unsigned part (`deny`, `outOfBand`) only tightens.
//! The reasons are worded as upstream's servers word them, so a person sees
//! the same words from either server (the conformance cases pin them).

use parley_core::canonical::canonical;
use parley_core::grant::{GrantError, UnverifiedGrant};
use parley_core::quantity::{Exact, Limit, Uses};
use parley_core::{Caveat, PublicKey, RiskLevel};
use serde_json::Value;

/// What the decision reads of one plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// The job tool.
    pub tool: String,
    /// Its plan hash.
    pub hash: String,
    /// The resolved risk, as text (an unknown one fails closed).
    pub risk: String,
    /// It has an undo window and the tool a revert.
    pub undoable: bool,
    /// Its `uses`, if it reports any.
    pub uses: Option<Value>,
}

/// The person's rules for this server.
#[derive(Debug, Clone)]
pub struct Policy {
    /// The signed policy grant (`pg1.`), if the person issued one.
    pub grant: Option<String>,
    /// The pinned principal key: the only issuer trusted.
    pub principal: PublicKey,
    /// This server's key: its service id and the grant's holder.
    pub server: PublicKey,
    /// Tools that never run (unsigned: tightens only).
    pub deny: DenyList,
    /// Plans at or above this risk go out of band (unsigned; default high).
    pub out_of_band: RiskLevel,
}

/// The tools the person's unsigned policy never lets run (`deny`): one list
/// and one check, shared by the policy decision, the in-chat form and the
/// server's every path, so that no path forgets it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DenyList(Vec<String>);

impl DenyList {
    /// True when `tool` never runs.
    pub fn denies(&self, tool: &str) -> bool {
        self.0.iter().any(|d| d == tool)
    }

    /// The refusal said to the caller for a denied `tool`.
    pub fn why(tool: &str) -> String {
        format!("your policy never allows {tool}")
    }

    /// The tools, in the policy file's order.
    pub fn tools(&self) -> &[String] {
        &self.0
    }
}

impl FromIterator<String> for DenyList {
    fn from_iter<I: IntoIterator<Item = String>>(iter: I) -> Self {
        DenyList(iter.into_iter().collect())
    }
}

/// One `total` reservation an auto-run makes before it applies (§5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reservation {
    /// The policy grant block id.
    pub block: String,
    /// The measure.
    pub of: String,
    /// What this plan uses of it, at scale 18.
    pub amount: Exact,
    /// The smallest `max` of this block's totals on the measure, at scale 18.
    pub max: Exact,
}

/// What a job call does with its plans under a policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// No plans: nothing to do.
    Nothing,
    /// The tool is in `deny`: refused on every path.
    Denied {
        /// In words.
        why: String,
    },
    /// Only approval outside the chat (a consent code) may run it.
    OutOfBand {
        /// In words.
        why: String,
    },
    /// The person must approve it.
    Ask {
        /// In words.
        why: String,
    },
    /// `plans[0]` runs unasked once these reservations are made.
    Run {
        /// The plan that runs.
        hash: String,
        /// Every `total` to reserve before applying.
        reserve: Vec<Reservation>,
    },
}

/// A risk's rank; an unknown one counts as riskier than `high` (§ terms).
fn rank(risk: &str) -> u8 {
    match RiskLevel::parse(risk) {
        Some(RiskLevel::Low) => 0,
        Some(RiskLevel::Medium) => 1,
        Some(RiskLevel::High) => 2,
        None => 3,
    }
}

/// SPEC-approval's `can` rule: the exact name, or a prefix ending in `*`.
pub fn tool_matches(pattern: &str, tool: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => tool.starts_with(prefix),
        None => pattern == tool,
    }
}

/// Decides `plans[0]` (§2). `used(block, of)` is what the store holds
/// settled and reserved for a block and measure.
pub fn decide(
    plans: &[Candidate],
    policy: &Policy,
    used: impl Fn(&str, &str) -> Exact,
    now: i64,
) -> Decision {
    let Some(first) = plans.first() else {
        return Decision::Nothing;
    };
    if policy.deny.denies(&first.tool) {
        return Decision::Denied {
            why: DenyList::why(&first.tool),
        };
    }
    if rank(&first.risk) >= rank(policy.out_of_band.as_str()) {
        return Decision::OutOfBand {
            why: format!(
                "risk is {}, which needs approval outside the chat",
                first.risk
            ),
        };
    }
    if !first.undoable {
        return ask(format!("{} can't be undone", first.tool));
    }
    match judge_grant(first, policy, &used, now) {
        Ok(reserve) => Decision::Run {
            hash: first.hash.clone(),
            reserve,
        },
        Err(why) => ask(why),
    }
}

fn ask(why: String) -> Decision {
    Decision::Ask { why }
}

/// Checks the signed policy for a COMMIT of `plan` at this server; the
/// reservations it needs, or why it does not let the plan run unasked.
fn judge_grant(
    plan: &Candidate,
    policy: &Policy,
    used: &impl Fn(&str, &str) -> Exact,
    now: i64,
) -> Result<Vec<Reservation>, String> {
    let Some(token) = &policy.grant else {
        return Err(format!(
            "no signed policy lets {} run without asking",
            plan.tool
        ));
    };
    let grant = UnverifiedGrant::decode(token)
        .and_then(|g| g.verify(std::slice::from_ref(&policy.principal), &policy.server))
        .map_err(grant_reason)?;
    let blocks = grant.grant().blocks();
    let names_tools = blocks
        .iter()
        .any(|b| b.caveats().iter().any(|c| matches!(c, Caveat::Can(_))));
    if !names_tools {
        return Err(format!(
            "the signed policy names no tools, so it doesn't let {} run without asking",
            plan.tool
        ));
    }
    let uses = match &plan.uses {
        Some(u) => Uses::from_value(u).map_err(|e| format!("malformed uses: {e}"))?,
        None => Uses::default(),
    };
    let server = policy.server.to_string();
    let mut reserve: Vec<Reservation> = Vec::new();
    for (block, id) in blocks.iter().zip(grant.block_ids()) {
        for caveat in block.caveats() {
            check_caveat(caveat, plan, &uses, &server, id, used, now, &mut reserve)?;
        }
    }
    Ok(reserve)
}

#[allow(clippy::too_many_arguments)]
fn check_caveat(
    caveat: &Caveat,
    plan: &Candidate,
    uses: &Uses,
    server: &str,
    block: &str,
    used: &impl Fn(&str, &str) -> Exact,
    now: i64,
    reserve: &mut Vec<Reservation>,
) -> Result<(), String> {
    let fail = |why: String| Err(why);
    match caveat {
        Caveat::Svc(list) if !list.iter().any(|s| s == server) => {
            fail(format!("not valid for service {server}"))
        }
        Caveat::Verbs(list) if !list.iter().any(|v| v == "COMMIT") => {
            fail("does not allow COMMIT".into())
        }
        Caveat::Can(list) if !list.iter().any(|p| tool_matches(p, &plan.tool)) => {
            fail(format!("does not cover {}", plan.tool))
        }
        Caveat::Exp(t) if now >= *t => fail("grant has expired".into()),
        Caveat::Nbf(t) if now < *t => fail("grant is not valid yet".into()),
        Caveat::Risk(ceiling) if rank(&plan.risk) > rank(ceiling.as_str()) => fail(format!(
            "risk {} exceeds ceiling {}",
            plan.risk,
            ceiling.as_str()
        )),
        Caveat::Only(hash) if hash != &plan.hash => fail("grant is for another plan".into()),
        Caveat::Each(limit) => {
            let Some(q) = uses.get(&limit.of) else {
                return Ok(());
            };
            same_unit(limit, q)?;
            if q.exact() > limit.max.exact() {
                return fail(format!(
                    "{} over the per-commit limit of {}",
                    limit.of, limit.max
                ));
            }
            Ok(())
        }
        Caveat::Total(limit) => {
            let Some(q) = uses.get(&limit.of) else {
                return Ok(());
            };
            same_unit(limit, q)?;
            let max = limit.max.exact();
            let row = reserve
                .iter_mut()
                .find(|r| r.block == block && r.of == limit.of);
            let max = match row {
                Some(r) => {
                    r.max = r.max.min(max);
                    r.max
                }
                None => {
                    reserve.push(Reservation {
                        block: block.to_string(),
                        of: limit.of.clone(),
                        amount: q.exact(),
                        max,
                    });
                    max
                }
            };
            match used(block, &limit.of).checked_add(q.exact()) {
                Some(sum) if sum <= max => Ok(()),
                // A smaller max on the same measure earlier in the block
                // would have failed first, so this limit is the smallest.
                _ => fail(format!(
                    "{} would pass the total limit of {}",
                    limit.of, limit.max
                )),
            }
        }
        Caveat::Per(_) | Caveat::Spend(_) => {
            fail("the policy holds a Parley limit, which job servers do not read".into())
        }
        Caveat::Invalid { raw, .. } => fail(format!(
            "malformed caveat {}",
            canonical(raw).unwrap_or_else(|_| "(not canonical JSON)".into())
        )),
        _ => Ok(()),
    }
}

fn same_unit(limit: &Limit, q: &parley_core::quantity::Quantity) -> Result<(), String> {
    if q.same_unit(limit.max.unit.as_deref()) {
        return Ok(());
    }
    let unit = |u: Option<&str>| u.map_or_else(|| "no unit".to_string(), str::to_string);
    Err(format!(
        "{} is in {}, but the limit is in {}",
        limit.of,
        unit(q.unit.as_deref()),
        unit(limit.max.unit.as_deref())
    ))
}

/// A grant that is not usable, in upstream's words.
fn grant_reason(e: GrantError) -> String {
    match e {
        GrantError::Untrusted(_) => {
            "grant is issued by a principal this service does not trust".into()
        }
        GrantError::NotHolder => "proof key is not the grant holder".into(),
        GrantError::Encoding(_) | GrantError::Json(_) | GrantError::Prefix => {
            "malformed grant: not valid b64url JSON".into()
        }
        GrantError::BadSignature { .. } | GrantError::BrokenChain { .. } => {
            "grant signature does not verify".into()
        }
        other => format!("malformed grant: {other}"),
    }
}

/// The unsigned part of the policy, read from `~/.yea/policy.json` or a
/// server option: it can only tighten (§2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tightening {
    /// Tools that never run.
    pub deny: DenyList,
    /// Plans at or above this risk go out of band.
    pub out_of_band: RiskLevel,
    /// What was ignored, for stderr.
    pub warnings: Vec<String>,
}

/// Reads the unsigned policy: unknown fields and anything that would loosen
/// are ignored with a warning; the valid tightenings still apply.
pub fn read_tightening(file: &Value) -> Tightening {
    let mut t = Tightening {
        deny: DenyList::default(),
        out_of_band: RiskLevel::High,
        warnings: Vec::new(),
    };
    let Some(obj) = file.as_object() else {
        t.warnings
            .push("the policy file is not a JSON object; ignored".into());
        return t;
    };
    for (key, value) in obj {
        match key.as_str() {
            "deny" => match value.as_array().and_then(|a| {
                a.iter()
                    .map(|v| v.as_str().map(str::to_string))
                    .collect::<Option<Vec<_>>>()
            }) {
                Some(list) => t.deny = list.into_iter().collect(),
                None => t.warnings.push("ignored \"deny\": bad value".into()),
            },
            "outOfBand" => match value.as_str().and_then(RiskLevel::parse) {
                Some(level) => t.out_of_band = level,
                None => t.warnings.push("ignored \"outOfBand\": bad value".into()),
            },
            other => t.warnings.push(format!(
                "ignored {}: unknown field",
                serde_json::to_string(other).unwrap_or_default()
            )),
        }
    }
    t
}

//! YEA job-tool approvals (SPEC-approval §1, §6): the plan hash, the job
//! approval code, and the `pg1.` consent bound to a plan hash.
//!
//! A job tool returns plans instead of acting. When a plan needs the
//! person's approval and the client cannot ask, the server hands out a
//! `pc1.` code whose `detail` is `{job, phrase}`: `job` is the plan hash's
//! whole preimage. Nothing in the code is trusted: [`check_code`] recomputes
//! the plan hash from `job` and refuses the code unless `hash`, `proposal`,
//! `capability`, `principal` and `expires` all agree with it. Only a
//! [`CheckedJob`] can be signed ([`issue_job_consent`]), into exactly the
//! consent the server accepts ([`check_job_consent`]).

use crate::b64;
use crate::canonical::{canonical, MAX_SAFE_INTEGER};
use crate::caveat::{Caveat, CommitFacts, RequestContext, RiskLevel};
use crate::code::{self, CodeError, ConsentCode};
use crate::consent::{consent_caveats, CheckedConsent, ConsentRequest};
use crate::grant::{Decision, GrantError, UnverifiedGrant};
use crate::keys::{PublicKey, SecretKey};
use crate::proposal::Proposal;
use crate::quantity::Uses;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// The longest a job consent lives, whatever the code says (SPEC-approval §6).
pub const MAX_CONSENT_SECS: i64 = 600;

/// Why a plan has no plan hash, or a job code is refused. Each check has its
/// own variant, so a log or a test can tell which one caught a bad code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JobError {
    /// The code itself cannot be read.
    #[error("{0}")]
    Code(#[from] CodeError),
    /// The code is a consent code, but not for a job (no `detail.job`).
    #[error("this consent code is not for a job tool (it has no detail.job)")]
    NotAJob,
    /// The job (the plan-hash preimage) is not of the spec's shape.
    #[error("the job in the code is malformed: {0}")]
    Malformed(String),
    /// A number in the job that canonical JSON cannot hold (a float).
    #[error(
        "the job holds a number that is not an integer ({0}); a job tool's input must use a string or an integer instead"
    )]
    NonInteger(String),
    /// A risk other than low, medium or high: never hashed (§Terms).
    #[error("the plan's risk {0:?} is not low, medium or high")]
    UnknownRisk(String),
    /// `hash` is not the recomputed plan hash.
    #[error("the code asks to approve plan hash {code}, but its job hashes to {job}")]
    HashMismatch {
        /// The code's `hash`.
        code: String,
        /// Recomputed from `detail.job`.
        job: String,
    },
    /// `proposal` is not the recomputed plan hash.
    #[error("the code names proposal {code:?}, but its job hashes to {job}")]
    ProposalMismatch {
        /// The code's `proposal`.
        code: String,
        /// Recomputed from `detail.job`.
        job: String,
    },
    /// `capability` is not the job's tool.
    #[error("the code is for capability {code:?}, but its job is for the tool {tool:?}")]
    CapabilityMismatch {
        /// The code's `capability`.
        code: String,
        /// `detail.job.tool`.
        tool: String,
    },
    /// The code's `summary` is not the job's: the summary is not in the plan
    /// hash, so the code's words could say anything; a code must repeat its
    /// plan's summary exactly.
    #[error(
        "the code's summary is not its job's summary (the plan hash covers only the job's); ask the server for a fresh code"
    )]
    SummaryMismatch {
        /// The code's `summary`.
        code: String,
        /// `detail.job.summary`.
        job: String,
    },
    /// The code names another principal than the key that would sign.
    #[error("the code asks principal {code} to approve, not this key ({held})")]
    OtherPrincipal {
        /// The code's `principal`.
        code: String,
        /// The key held.
        held: String,
    },
    /// The service id is not an ed25519 key: a job server's id is its key.
    #[error("the code's service {0:?} is not a server key (ed25519:…); job consents are issued to the server's key")]
    ServiceNotAKey(String),
    /// The code has expired.
    #[error("the code expired at {expires} (now {now}); call the tool again for a fresh code")]
    Expired {
        /// The code's `expires`.
        expires: i64,
        /// The time of the check.
        now: i64,
    },
    /// The phrase the server names cannot be typed (see the phrase rules).
    #[error("the phrase to type is not plain text: {0}")]
    Phrase(String),
}

impl JobError {
    /// A stable name for the check that failed (audit rows, logs, tests).
    pub fn kind(&self) -> &'static str {
        match self {
            JobError::Code(_) => "code",
            JobError::NotAJob => "not_a_job",
            JobError::Malformed(_) => "job_malformed",
            JobError::NonInteger(_) => "non_integer",
            JobError::UnknownRisk(_) => "unknown_risk",
            JobError::HashMismatch { .. } => "hash_mismatch",
            JobError::ProposalMismatch { .. } => "proposal_mismatch",
            JobError::CapabilityMismatch { .. } => "capability_mismatch",
            JobError::SummaryMismatch { .. } => "summary_mismatch",
            JobError::OtherPrincipal { .. } => "other_principal",
            JobError::ServiceNotAKey(_) => "service_not_a_key",
            JobError::Expired { .. } => "expired",
            JobError::Phrase(_) => "phrase",
        }
    }
}

/// One plan of a job tool, as the plan hash sees it (§1). Read strictly.
#[derive(Debug, Clone, PartialEq)]
pub struct JobPlan {
    /// The MCP tool's registered name.
    pub tool: String,
    /// The tool's validated input (integers only).
    pub input: Value,
    /// The server's words. Untrusted.
    pub summary: String,
    /// The effects, each an object (Lens shows them).
    pub effects: Vec<Map<String, Value>>,
    /// What the plan uses up; `None` when absent or empty.
    pub uses: Option<Uses>,
    /// The resolved risk.
    pub risk: RiskLevel,
    /// Seconds within which it can be undone; `None`: irreversible.
    pub undo_window: Option<i64>,
    /// The plan hash.
    pub hash: String,
}

impl JobPlan {
    /// Reads a plan-hash preimage (`detail.job` of a code): `tool`, `input`,
    /// `summary`, `effects` and the optional `uses`, `risk` (absent: medium)
    /// and `undoWindow`. Unknown fields are refused: they would not be
    /// hashed, so the person could be shown something the hash does not bind.
    pub fn from_job(job: &Value) -> Result<JobPlan, JobError> {
        let obj = job
            .as_object()
            .ok_or_else(|| JobError::Malformed("detail.job must be an object".into()))?;
        if let Some(k) = obj.keys().find(|k| {
            !matches!(
                k.as_str(),
                "tool" | "input" | "summary" | "effects" | "uses" | "risk" | "undoWindow"
            )
        }) {
            return Err(JobError::Malformed(format!(
                "unknown field {k:?}: only the plan hash's fields may be in a job"
            )));
        }
        let tool = obj
            .get("tool")
            .and_then(Value::as_str)
            .ok_or_else(|| JobError::Malformed("tool must be a string".into()))?;
        let input = obj
            .get("input")
            .ok_or_else(|| JobError::Malformed("input is missing".into()))?;
        let plan: Map<String, Value> = obj
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "tool" | "input"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        plan_of(tool, None, input, &Value::Object(plan))
    }

    /// The plan-hash preimage (§1), with absent fields and an empty `uses`
    /// left out and the risk resolved.
    pub fn preimage(&self) -> Value {
        let mut m = Map::new();
        m.insert("tool".into(), Value::String(self.tool.clone()));
        m.insert("input".into(), self.input.clone());
        m.insert("summary".into(), Value::String(self.summary.clone()));
        m.insert(
            "effects".into(),
            Value::Array(self.effects.iter().cloned().map(Value::Object).collect()),
        );
        if let Some(u) = &self.uses {
            m.insert("uses".into(), u.to_value());
        }
        m.insert("risk".into(), Value::String(self.risk.as_str().into()));
        if let Some(w) = self.undo_window {
            m.insert("undoWindow".into(), Value::from(w));
        }
        Value::Object(m)
    }

    /// Whether it can be undone (it has an undo window).
    pub fn undoable(&self) -> bool {
        self.undo_window.is_some()
    }
}

/// The plan hash of one plan of `tool` (§1): `b64url(sha256(canonical({tool,
/// input, summary, effects, uses, risk, undoWindow})))`. `plan` holds
/// `summary`, `effects` and the optional `uses`, `risk`, `undoWindow` (other
/// fields, such as `data` or an id, are volatile and left out). The risk is
/// the plan's, else `tool_risk`, else medium; an unknown one is refused.
pub fn plan_hash(
    tool: &str,
    tool_risk: Option<&str>,
    input: &Value,
    plan: &Value,
) -> Result<String, JobError> {
    Ok(plan_of(tool, tool_risk, input, plan)?.hash)
}

/// [`plan_hash`], returning the whole plan as read.
pub fn plan_of(
    tool: &str,
    tool_risk: Option<&str>,
    input: &Value,
    plan: &Value,
) -> Result<JobPlan, JobError> {
    if tool.is_empty() || tool.contains('*') {
        return Err(JobError::Malformed(format!(
            "the tool {tool:?} is not a plain name"
        )));
    }
    refuse_non_integers(input, "input")?;
    let p = plan
        .as_object()
        .ok_or_else(|| JobError::Malformed("a plan must be an object".into()))?;
    let summary = p
        .get("summary")
        .and_then(Value::as_str)
        .ok_or_else(|| JobError::Malformed("summary must be a string".into()))?
        .to_string();
    let effects = match p.get("effects") {
        Some(Value::Array(list)) => list
            .iter()
            .map(|e| {
                e.as_object()
                    .cloned()
                    .ok_or_else(|| JobError::Malformed("each effect must be an object".into()))
            })
            .collect::<Result<Vec<_>, _>>()?,
        _ => return Err(JobError::Malformed("effects must be an array".into())),
    };
    for e in &effects {
        refuse_non_integers(&Value::Object(e.clone()), "effects")?;
    }
    let uses = match p.get("uses") {
        None => None,
        Some(v) => {
            let u = Uses::from_value(v).map_err(|e| JobError::Malformed(format!("uses: {e}")))?;
            (!u.is_empty()).then_some(u)
        }
    };
    let risk_text = match p.get("risk") {
        None => tool_risk.unwrap_or("medium"),
        Some(Value::String(r)) => r.as_str(),
        Some(_) => return Err(JobError::Malformed("risk must be a string".into())),
    };
    let risk =
        RiskLevel::parse(risk_text).ok_or_else(|| JobError::UnknownRisk(risk_text.into()))?;
    let undo_window = match p.get("undoWindow") {
        None => None,
        Some(v) => Some(
            v.as_i64()
                .filter(|w| *w > 0 && *w <= MAX_SAFE_INTEGER)
                .ok_or_else(|| {
                    JobError::Malformed("undoWindow must be a positive integer".into())
                })?,
        ),
    };
    let mut job = JobPlan {
        tool: tool.to_string(),
        input: input.clone(),
        summary,
        effects,
        uses,
        risk,
        undo_window,
        hash: String::new(),
    };
    let text = canonical(&job.preimage()).map_err(|e| JobError::NonInteger(e.to_string()))?;
    job.hash = b64::encode(Sha256::digest(text.as_bytes()));
    Ok(job)
}

fn refuse_non_integers(v: &Value, at: &str) -> Result<(), JobError> {
    match v {
        Value::Number(n) if !(n.is_i64() || n.is_u64()) => {
            Err(JobError::NonInteger(format!("{n} in {at}")))
        }
        Value::Number(n)
            if n.as_i64()
                .map_or(true, |i| i.unsigned_abs() > MAX_SAFE_INTEGER as u64) =>
        {
            Err(JobError::NonInteger(format!("{n} in {at} is past 2^53")))
        }
        Value::Array(a) => a.iter().try_for_each(|x| refuse_non_integers(x, at)),
        Value::Object(o) => o
            .iter()
            .try_for_each(|(k, x)| refuse_non_integers(x, &format!("{at}.{k}"))),
        _ => Ok(()),
    }
}

/// A decoded job approval code, not yet checked against anything.
#[derive(Debug, Clone, PartialEq)]
pub struct JobCode {
    /// The consent request part (`proposal`, `hash`, `service`, …).
    pub consent: ConsentRequest,
    /// `detail.job` exactly as the code carries it.
    pub job: Value,
    /// `detail.phrase` as the server named it (checked for typeability later).
    pub phrase: String,
}

/// Whether a decoded consent code is a job code (its detail has `job`).
pub fn is_job_code(code: &ConsentCode) -> bool {
    code.detail.as_ref().is_some_and(|d| d.get("job").is_some())
}

/// Decodes a `pc1.` job code strictly (the code's own rules, then `detail`
/// must be exactly `{job, phrase}`).
pub fn decode_code(text: &str) -> Result<JobCode, JobError> {
    from_consent_code(code::decode(text)?)
}

/// Reads a decoded consent code as a job code.
pub fn from_consent_code(c: ConsentCode) -> Result<JobCode, JobError> {
    let detail = c.detail.ok_or(JobError::NotAJob)?;
    let d = detail.as_object().ok_or(JobError::NotAJob)?;
    let job = d.get("job").ok_or(JobError::NotAJob)?.clone();
    if let Some(k) = d.keys().find(|k| !matches!(k.as_str(), "job" | "phrase")) {
        return Err(JobError::Malformed(format!(
            "unknown field {k:?} in the code's detail"
        )));
    }
    let phrase = match d.get("phrase") {
        None => String::new(),
        Some(Value::String(p)) => p.clone(),
        Some(_) => return Err(JobError::Malformed("detail.phrase must be a string".into())),
    };
    Ok(JobCode {
        consent: c.consent,
        job,
        phrase,
    })
}

/// Encodes a job code (the server side, and tests): the consent request
/// plus `detail: {job: plan.preimage(), phrase}`.
pub fn encode_code(
    consent: &ConsentRequest,
    plan: &JobPlan,
    phrase: &str,
) -> Result<String, JobError> {
    let mut detail = Map::new();
    detail.insert("job".into(), plan.preimage());
    detail.insert("phrase".into(), Value::String(phrase.to_string()));
    Ok(code::encode(consent, Some(&Value::Object(detail)))?)
}

/// The consent request a server puts in a job code for `plan` (§6):
/// `proposal` = `hash` = the plan hash, `capability` = the tool, `expires`
/// = now + 10 minutes.
pub fn consent_request(
    plan: &JobPlan,
    server: &PublicKey,
    principal: &PublicKey,
    now: i64,
) -> ConsentRequest {
    ConsentRequest {
        proposal: plan.hash.clone(),
        hash: plan.hash.clone(),
        service: server.to_string(),
        capability: plan.tool.clone(),
        principal: principal.clone(),
        summary: plan.summary.clone(),
        expires: now + MAX_CONSENT_SECS,
    }
}

/// A job code whose every claim matched its job: the only thing
/// [`issue_job_consent`] signs.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckedJob {
    code: JobCode,
    plan: JobPlan,
    server: PublicKey,
    exp: i64,
}

impl CheckedJob {
    /// The plan, read strictly from `detail.job`: what the person reviews.
    pub fn plan(&self) -> &JobPlan {
        &self.plan
    }
    /// The code as sent (its `summary` is the server's words).
    pub fn code(&self) -> &JobCode {
        &self.code
    }
    /// The server's key: the consent's holder and its service id.
    pub fn server(&self) -> &PublicKey {
        &self.server
    }
    /// The consent's `exp`: the code's `expires`, capped at 10 minutes from the check.
    pub fn exp(&self) -> i64 {
        self.exp
    }
    /// The checked job as a checked consent, for code that reviews and
    /// signs consents: its proposal is the plan (`id` and `hash` = the plan
    /// hash, `capability` = the tool, `expires` = [`CheckedJob::exp`]), and
    /// signing it for the server's key ([`crate::consent::issue_consent`])
    /// gives exactly [`issue_job_consent`]'s caveats. Effects must be YEA
    /// effects (`op` one of create, update, delete, send, other).
    pub fn consent(&self) -> Result<CheckedConsent, JobError> {
        let p = &self.plan;
        let mut v = serde_json::json!({
            "id": p.hash, "capability": p.tool, "summary": p.summary,
            "effects": p.effects, "risk": p.risk.as_str(), "expires": self.exp,
        });
        if let Some(u) = &p.uses {
            v["uses"] = u.to_value();
        }
        v["undo"] = match p.undo_window {
            Some(w) => serde_json::json!({ "window": w }),
            None => Value::Null,
        };
        v["hash"] = Value::String(
            crate::proposal::proposal_hash(&v).map_err(|e| JobError::NonInteger(e.to_string()))?,
        );
        let mut proposal = Proposal::from_value_in(&v, crate::Dialect::YeaV1)
            .map_err(|e| JobError::Malformed(e.to_string()))?;
        proposal.hash = p.hash.clone();
        Ok(CheckedConsent::for_job(
            self.code.consent.clone(),
            proposal,
            self.exp,
        ))
    }

    /// The exact five caveats the consent will carry.
    pub fn caveats(&self) -> Vec<Caveat> {
        consent_caveats(
            &self.code.consent.service,
            &self.plan.tool,
            &self.plan.hash,
            self.exp,
        )
    }
}

/// §6 step 1: recomputes the plan hash from `detail.job` and refuses the
/// code unless `hash`, `proposal`, `capability` and `summary` agree with it, the
/// principal is `principal` (the key that would sign), the service is a
/// server key, and it has not expired at `now`.
pub fn check_code(code: JobCode, principal: &PublicKey, now: i64) -> Result<CheckedJob, JobError> {
    let plan = JobPlan::from_job(&code.job)?;
    let c = &code.consent;
    if c.hash != plan.hash {
        return Err(JobError::HashMismatch {
            code: c.hash.clone(),
            job: plan.hash,
        });
    }
    if c.proposal != plan.hash {
        return Err(JobError::ProposalMismatch {
            code: c.proposal.clone(),
            job: plan.hash,
        });
    }
    if c.capability != plan.tool {
        return Err(JobError::CapabilityMismatch {
            code: c.capability.clone(),
            tool: plan.tool,
        });
    }
    if c.summary != plan.summary {
        return Err(JobError::SummaryMismatch {
            code: c.summary.clone(),
            job: plan.summary,
        });
    }
    if &c.principal != principal {
        return Err(JobError::OtherPrincipal {
            code: c.principal.to_string(),
            held: principal.to_string(),
        });
    }
    let server: PublicKey = c
        .service
        .parse()
        .map_err(|_| JobError::ServiceNotAKey(c.service.clone()))?;
    if c.expires <= now {
        return Err(JobError::Expired {
            expires: c.expires,
            now,
        });
    }
    let exp = c.expires.min(now + MAX_CONSENT_SECS);
    Ok(CheckedJob {
        code,
        plan,
        server,
        exp,
    })
}

/// Signs the job consent (§6 step 4): a root grant from the principal to
/// the server's key with exactly `[{svc:[server]}, {verbs:["COMMIT"]},
/// {can:[tool]}, {only: planHash}, {exp}]`, issued at `now`.
pub fn issue_job_consent(
    principal: &SecretKey,
    checked: &CheckedJob,
    now: i64,
    nonce: &str,
) -> Result<UnverifiedGrant, GrantError> {
    if principal.public() != checked.code.consent.principal {
        return Err(GrantError::Unsignable(
            "this key is not the principal the code names".into(),
        ));
    }
    UnverifiedGrant::issue_root(principal, &checked.server, &checked.caveats(), now, nonce)
}

/// Why a stored consent does not let a plan run (the server side, §6).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConsentRefusal {
    /// Not a single root block carrying `only` = the plan hash and an `exp`,
    /// or not a grant at all, or not for this tool and server.
    #[error("not a consent for this plan")]
    NotForThisPlan,
    /// Its `exp` has passed.
    #[error("grant has expired")]
    Expired,
    /// Signed by a key other than the pinned principal.
    #[error("grant is issued by a principal this service does not trust")]
    Untrusted,
    /// A signature or the holder does not check out.
    #[error("grant is not valid: {0}")]
    Invalid(String),
}

/// The server's check of a consent found under `consents/<planHash>` (§6):
/// a single root block that itself carries `only` = `plan_hash` and an
/// `exp`, signed by `principal`, held by `server`, authorizing a COMMIT of
/// `tool` at `server` now. Returns the consent grant's id (what
/// `consumeOnce` takes).
pub fn check_job_consent(
    token: &str,
    plan_hash: &str,
    tool: &str,
    server: &PublicKey,
    principal: &PublicKey,
    now: i64,
) -> Result<String, ConsentRefusal> {
    let grant = UnverifiedGrant::decode(token).map_err(|_| ConsentRefusal::NotForThisPlan)?;
    let [root] = grant.blocks() else {
        return Err(ConsentRefusal::NotForThisPlan);
    };
    let caveats = root.caveats();
    let only = caveats
        .iter()
        .any(|c| matches!(c, Caveat::Only(h) if h == plan_hash));
    let exp = caveats.iter().find_map(|c| match c {
        Caveat::Exp(t) => Some(*t),
        _ => None,
    });
    let Some(exp) = exp.filter(|_| only) else {
        return Err(ConsentRefusal::NotForThisPlan);
    };
    let verified = grant
        .verify(std::slice::from_ref(principal), server)
        .map_err(|e| match e {
            GrantError::Untrusted(_) => ConsentRefusal::Untrusted,
            other => ConsentRefusal::Invalid(other.to_string()),
        })?;
    if now >= exp {
        return Err(ConsentRefusal::Expired);
    }
    let ctx = RequestContext {
        service: server.to_string(),
        verb: "COMMIT".into(),
        capability: tool.to_string(),
        now,
        proposal: Some(CommitFacts {
            hash: plan_hash.to_string(),
            cost: None,
            uses: None,
            risk: "low".into(),
        }),
        dialect: crate::Dialect::YeaV1,
        ..RequestContext::default()
    };
    match verified.evaluate(&ctx) {
        Decision::Ok => Ok(grant.id()),
        _ => Err(ConsentRefusal::NotForThisPlan),
    }
}

/// The store's `consumeOnce` marker name for an id (SPEC-approval §8):
/// `consumed/<b64url(sha256(id))>`. One function for the server that
/// writes markers and for `parley approve`, which reads them.
pub fn consumed_marker(id: &str) -> String {
    b64::encode(Sha256::digest(id.as_bytes()))
}

/// What a consent already in the store still does: whether a server would
/// still run its plan once. `parley approve` replaces only a consent that no
/// longer counts, so that approving the same plan again after its consent was
/// used (or expired) works, and a live one is never overwritten.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoredConsent {
    /// Unused and unexpired: the next identical call runs with it.
    Live,
    /// Counts as absent (§4): consumed, expired, or not a consent at all.
    Spent,
}

/// Judges `token`, found stored for a plan, at `now`; `consumed` says
/// whether the store holds a marker for a consent id.
pub fn stored_consent(token: &str, now: i64, consumed: impl Fn(&str) -> bool) -> StoredConsent {
    let Ok(grant) = UnverifiedGrant::decode(token.trim()) else {
        return StoredConsent::Spent;
    };
    let exp = grant.blocks().first().and_then(|root| {
        root.caveats().iter().find_map(|c| match c {
            Caveat::Exp(t) => Some(*t),
            _ => None,
        })
    });
    match exp {
        Some(exp) if now < exp && !consumed(&grant.id()) => StoredConsent::Live,
        _ => StoredConsent::Spent,
    }
}

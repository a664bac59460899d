//! `parley approve <pc1.code | consent.json | ->`: asks custody to have the
//! human approve a consent, then saves the token where the upstream agent
//! tooling looks for it (`$PARLEY_HOME/consents/<hash>.pg`), so the agent's
//! next COMMIT goes through.
//!
//! A consent for a YEA v1 proposal (`--dialect yea1`, or a proposal or a
//! code's detail reporting `uses`) is asked for as YEA and saved where the
//! YEA tooling looks, `$YEA_HOME/consents/<hash>` (default `~/.yea`), created
//! new, or in place of one the server already used or that expired; an unused one is never replaced.
//!
//! The human decides in the Parley Custody app, never in this terminal: the
//! terminal may belong to the agent.
//!
//! Input, first match wins:
//! - an argument starting with `pc1.`: the upstream consent code;
//! - otherwise a file (`-` = standard input) holding either a `pc1.` code or
//!   this JSON object (unknown fields ignored):
//!   ```json
//!   {"consent": {…the consent object of the service's ERROR consent_required…},
//!    "proposal": {…the proposal as the agent received it, with hash…},
//!    "service": "shop.example",
//!    "agent": "ed25519:…"}
//!   ```
//!   `agent` is optional (`--agent` wins over it; the default is the key of
//!   `$PARLEY_HOME/agent.key`).
//!
//! A YEA job approval code (SPEC-approval §6: its detail carries `job`, as
//! a job tool's MCP server hands it out) is approved the same way; custody
//! shows the plan and asks the human to type its phrase. The consent is for
//! the job server's key, and is written where the server reads it: the YEA
//! store (`$YEA_STORE`, else `$YEA_HOME/store`, else `~/.yea/store`), as
//! `consents/<planHash>`, created new ([`parley_custody_client::yea_store`]).
//!
//! Exit codes: 0 approved (token on stdout); 1 denied, expired, rejected by
//! custody's checks, cancelled, or no decision in time; 2 bad input or custody
//! unreachable.

use super::grant::{key_flag, wait_flag};
use super::Report;
use crate::cli::ApproveArgs;
use crate::error::CliError;
use crate::home;
use parley_core::caveat::Caveat;
use parley_core::consent::ConsentRequest;
use parley_core::grant::UnverifiedGrant;
use parley_core::json::{self, Limits};
use parley_core::Dialect;
use parley_custody_client::client::{Client, ClientError};
use parley_custody_client::frame::MAX_FRAME;
use parley_custody_client::protocol::Reply;
use serde::Serialize;
use serde_json::Value;
use std::fmt;
use std::path::{Path, PathBuf};

/// What to ask custody to approve.
#[derive(Debug, Clone, PartialEq)]
enum Ask {
    /// An upstream `pc1.` code.
    Code { code: String },
    /// The consent, the proposal and the service id.
    Consent {
        consent: Value,
        proposal: Value,
        service: String,
        agent: Option<String>,
    },
}

/// The request, and the proposal hash the consent will be for.
#[derive(Debug, Clone, PartialEq)]
struct Input {
    ask: Ask,
    hash: String,
    /// What the proposal says of its dialect (`uses` or `cost`); a code's
    /// proposal is its `detail`, when it has one.
    signs: Vec<crate::dialect::Sign>,
}

/// Reads the argument: a code, or a file holding a code or the JSON form.
fn read_input(what: &str) -> Result<Input, CliError> {
    if what
        .trim_start()
        .starts_with(parley_core::code::CODE_PREFIX)
    {
        return from_code(what.trim());
    }
    let bytes = crate::input::read_all(Some(what))?;
    let name = if what == "-" { "standard input" } else { what };
    let trimmed = trim_ascii(&bytes);
    if trimmed.starts_with(parley_core::code::CODE_PREFIX.as_bytes()) {
        let code = std::str::from_utf8(trimmed)
            .map_err(|_| CliError::bad(format!("{name}: the consent code is not UTF-8 text")))?;
        return from_code(code);
    }
    let limits = Limits {
        max_depth: 64,
        max_bytes: MAX_FRAME,
    };
    let v = json::parse(&bytes, limits).map_err(|e| {
        CliError::bad(format!(
            "{name}: neither a pc1. consent code nor JSON ({e}); expected {{\"consent\":{{…}},\"proposal\":{{…}},\"service\":\"…\"}}"
        ))
    })?;
    from_json(&v, name)
}

fn trim_ascii(mut b: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = b {
        if first.is_ascii_whitespace() {
            b = rest;
        } else {
            break;
        }
    }
    while let [rest @ .., last] = b {
        if last.is_ascii_whitespace() {
            b = rest;
        } else {
            break;
        }
    }
    b
}

fn from_code(code: &str) -> Result<Input, CliError> {
    let decoded = parley_core::code::decode(code).map_err(CliError::bad)?;
    let signs = decoded
        .detail
        .as_ref()
        .map(|d| crate::dialect::proposal_signs(d, "the code's proposal"))
        .unwrap_or_default();
    Ok(Input {
        signs,
        hash: decoded.consent.hash,
        ask: Ask::Code {
            code: code.to_string(),
        },
    })
}

fn from_json(v: &Value, name: &str) -> Result<Input, CliError> {
    let bad = |what: &str| {
        CliError::bad(format!(
            "{name}: {what}; expected {{\"consent\":{{…}},\"proposal\":{{…}},\"service\":\"…\"}}"
        ))
    };
    let obj = v.as_object().ok_or_else(|| bad("not a JSON object"))?;
    let object = |k: &str| match obj.get(k) {
        Some(o @ Value::Object(_)) => Ok(o.clone()),
        Some(_) => Err(bad(&format!("`{k}` must be an object"))),
        None => Err(bad(&format!("missing `{k}`"))),
    };
    let consent = object("consent")?;
    let proposal = object("proposal")?;
    let service = match obj.get("service") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(_) => return Err(bad("`service` must be a non-empty string")),
        None => {
            return Err(bad(
                "missing `service` (the service id the agent learned at HELLO)",
            ))
        }
    };
    let agent = match obj.get("agent") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(bad("`agent` must be a key string")),
    };
    let request = ConsentRequest::from_value(&consent)
        .map_err(|e| CliError::bad(format!("{name}: `consent`: {e}")))?;
    Ok(Input {
        signs: crate::dialect::proposal_signs(&proposal, "the proposal"),
        hash: request.hash,
        ask: Ask::Consent {
            consent,
            proposal,
            service,
            agent,
        },
    })
}

/// The `on_pending` callback of the CLI: tells the user, once, that the
/// decision is in the app, and records the request id for messages.
pub(crate) fn pending_notice(request: &mut Option<String>) -> impl FnMut(&Reply) + '_ {
    move |reply| {
        if let Reply::Pending { request: id, .. } = reply {
            if request.is_none() {
                eprintln!(
                    "waiting for the human to decide in Parley Custody… (request {})",
                    super::visible(id)
                );
            }
            *request = Some(id.clone());
        }
    }
}

/// A request that did not end in a token, as JSON for `--json` (the text
/// form is empty: the message goes to standard error).
#[derive(Serialize)]
struct NotGranted {
    outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    request: Option<String>,
    message: String,
}

impl fmt::Display for NotGranted {
    fn fmt(&self, _: &mut fmt::Formatter) -> fmt::Result {
        Ok(())
    }
}

/// Turns the ways a custody request can fail into exit codes and messages,
/// the same for `approve` and `grant`.
pub(crate) struct Finish {
    op: &'static str,
    /// The request id, once custody named it in a `PENDING`.
    pub request: Option<String>,
}

impl Finish {
    pub(crate) fn new(op: &'static str) -> Finish {
        Finish { op, request: None }
    }

    /// Every outcome but success: the human said no or did not answer
    /// (exit 1), or custody could not be asked (exit 2).
    pub(crate) fn refused(self, result: Result<Reply, ClientError>) -> Result<Report, CliError> {
        let (outcome, message) = match result {
            Err(e @ ClientError::HumanTimeout { .. }) => ("timeout", e.to_string()),
            Err(e) => return Err(CliError::bad(e)),
            Ok(Reply::Denied { reason }) => (
                "denied",
                match reason {
                    Some(r) => format!("the human denied the request: {}", super::visible(&r)),
                    None => "the human denied the request".to_string(),
                },
            ),
            Ok(Reply::Expired) => (
                "expired",
                "the request expired before the human decided; ask again".to_string(),
            ),
            Ok(Reply::Rejected { code, message }) => (
                "rejected",
                format!(
                    "custody rejected the request without showing it to the human ({}): {}",
                    super::visible(&code),
                    super::visible(&message)
                ),
            ),
            Ok(Reply::Cancelled) => ("cancelled", "the request was cancelled".to_string()),
            Ok(Reply::Error { code, message }) => {
                return Err(CliError::bad(format!(
                    "custody refused the {} request: {code}: {}",
                    self.op,
                    super::visible(&message)
                )))
            }
            Ok(other) => {
                return Err(CliError::bad(format!(
                    "custody answered {} to a {} request; is this parley older than custody?",
                    other.kind(),
                    self.op
                )))
            }
        };
        eprintln!("parley: {message}");
        Ok(Report::new(
            &NotGranted {
                outcome,
                request: self.request,
                message,
            },
            1,
        ))
    }
}

#[derive(Serialize)]
struct Approved {
    outcome: &'static str,
    grant: String,
    hash: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    request: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    saved_to: Option<PathBuf>,
    /// The short grant the human issued beside the consent ("approve for
    /// a while"), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    for_a_while: Option<ForAWhileSaved>,
}

/// An approve-for-a-while grant as `parley approve` reports it.
#[derive(Serialize)]
struct ForAWhileSaved {
    grant: String,
    id: String,
    caveats: serde_json::Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    saved_to: Option<PathBuf>,
}

/// Saves the short grant custody issued beside a consent, like any grant
/// (`parley grant`): under `grants/` for Parley when it is this agent's;
/// the YEA tooling keeps no grants directory, so it is only reported.
fn save_for_a_while(
    w: parley_custody_client::protocol::ForAWhileGrant,
    home: &Path,
    agent: &str,
    dialect: Dialect,
) -> Result<ForAWhileSaved, CliError> {
    let decoded = UnverifiedGrant::decode(&w.grant).map_err(|e| {
        CliError::bad(format!(
            "custody's approve-for-a-while grant does not decode: {e}"
        ))
    })?;
    let id = decoded.id();
    let saved_to = if dialect == Dialect::ParleyV1 && decoded.holder() == agent {
        let stem: String = id.chars().take(16).collect();
        let path = home::save_token(&home.join(home::GRANTS_DIR), &stem, &w.grant)?;
        eprintln!(
            "parley: the approve-for-a-while grant was saved to {}",
            path.display()
        );
        Some(path)
    } else {
        if decoded.holder() != agent {
            eprintln!(
                "parley: warning: the approve-for-a-while grant is for another key; not saved"
            );
        } else {
            // YEA's tooling keeps no grants directory: the token is given here.
            eprintln!(
                "parley: the approve-for-a-while grant (give it to the agent): {}",
                w.grant
            );
        }
        None
    };
    Ok(ForAWhileSaved {
        grant: w.grant,
        id,
        caveats: w.caveats,
        saved_to,
    })
}

impl fmt::Display for Approved {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.grant)
    }
}

/// Whether a consent token authorizes exactly `hash` (an `only` caveat).
fn token_is_for(token: &str, hash: &str) -> bool {
    UnverifiedGrant::decode(token).is_ok_and(|g| {
        g.blocks()
            .iter()
            .flat_map(|b| b.caveats())
            .any(|c| matches!(c, Caveat::Only(h) if h == hash))
    })
}

pub fn run(
    a: ApproveArgs,
    socket: Option<&Path>,
    flag: Option<Dialect>,
) -> Result<Report, CliError> {
    let wait = wait_flag(&a.wait)?;
    let input = read_input(&a.what)?;
    if let Ask::Code { code } = &input.ask {
        if let Some(job) = job_code(code)? {
            return run_job(code, job, wait, socket);
        }
    }
    // The hash names a file; it comes from a service: check it before asking.
    home::check_stem(&input.hash)
        .map_err(|e| CliError::bad(format!("the consent's proposal hash is unusable: {e}")))?;
    // The dialect decides how custody reads the proposal and where the
    // consent is saved. Nothing in a consent without `uses` or `cost` says
    // which; such input is read as Parley v1 (this tool's own, and how every
    // consent was read before YEA), and the user is told how to say YEA.
    let dialect = match crate::dialect::decide(flag, &input.signs)? {
        Some(d) => d,
        None => {
            eprintln!(
                "parley: note: the consent does not say its dialect; read as Parley v1 and saved under $PARLEY_HOME (pass --dialect yea1 for the YEA tooling)"
            );
            Dialect::ParleyV1
        }
    };
    let home = home::tooling_home(dialect)?;
    let file_agent = match &input.ask {
        Ask::Consent { agent, .. } => agent.clone(),
        Ask::Code { .. } => None,
    };
    let agent = match a.agent.or(file_agent) {
        Some(k) => key_flag(&k, "--agent")?,
        None => home::load_agent_key(&home)?
            .ok_or_else(|| {
                CliError::bad(format!(
                    "no agent key at {}: pass --agent KEY (the key the agent used on INTENT) or run `parley init`",
                    home::agent_key_path(&home).display()
                ))
            })?
            .public,
    };
    let agent_text = agent.to_string();
    let Input { ask, hash, .. } = input;
    let mut finish = Finish::new("consent");
    let reply = super::block_on(async {
        let mut client = Client::connect(socket).await?;
        client.set_human_deadline(wait);
        let notice = pending_notice(&mut finish.request);
        match ask {
            Ask::Code { code } => {
                client
                    .approve_code_in(&code, &agent_text, dialect, notice)
                    .await
            }
            Ask::Consent {
                consent,
                proposal,
                service,
                ..
            } => {
                client
                    .consent_in(consent, proposal, &service, &agent_text, dialect, notice)
                    .await
            }
        }
    })?;
    let (grant, for_a_while) = match reply {
        Ok(Reply::Approved { grant, for_a_while }) => (grant, for_a_while),
        other => return finish.refused(other),
    };
    let for_a_while = match for_a_while {
        Some(w) => Some(save_for_a_while(w, &home, &agent_text, dialect)?),
        None => None,
    };
    let saved_to = if token_is_for(&grant, &hash) {
        let dir = home.join(home::CONSENTS_DIR);
        let path = match dialect {
            // Where the YEA tooling looks: `consents/<hash>`, created new.
            Dialect::YeaV1 => home::save_consent_new(&dir, &hash, &grant)?,
            Dialect::ParleyV1 => home::save_token(&dir, &hash, &grant)?,
        };
        eprintln!("parley: saved to {}", path.display());
        Some(path)
    } else {
        eprintln!("parley: warning: custody's token is not a consent for hash {hash}; not saved");
        None
    };
    let exit = if saved_to.is_some() { 0 } else { 1 };
    Ok(Report::new(
        &Approved {
            outcome: "approved",
            grant,
            hash,
            request: finish.request,
            saved_to,
            for_a_while,
        },
        exit,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use parley_core::consent::ConsentRequest;
    use parley_core::SecretKey;
    use serde_json::json;
    use zeroize::Zeroizing;

    fn principal() -> String {
        SecretKey::from_seed(&Zeroizing::new([7u8; 32]))
            .public()
            .to_string()
    }

    fn consent(hash: &str) -> Value {
        json!({"proposal":"p_1","hash":hash,"service":"shop.example","capability":"shop.order",
               "principal":principal(),"summary":"Order","expires":1790000600})
    }

    #[test]
    fn a_job_code_is_named_by_its_recomputed_plan_hash_and_a_lying_one_refused() {
        let input = json!({"charge": "ch_1"});
        let plan = json!({"summary": "Refund", "effects": [{"op": "create", "target": "refund"}],
                          "risk": "low", "undoWindow": 60});
        let plan = parley_core::job::plan_of("refund", None, &input, &plan).unwrap();
        let server = SecretKey::from_seed(&Zeroizing::new([5u8; 32])).public();
        let principal = SecretKey::from_seed(&Zeroizing::new([7u8; 32])).public();
        let mut request =
            parley_core::job::consent_request(&plan, &server, &principal, 1_790_000_000);
        let code = parley_core::job::encode_code(&request, &plan, "approve").unwrap();
        assert_eq!(job_code(&code).unwrap().unwrap().hash, plan.hash);
        request.hash = "x".repeat(43);
        let lying = parley_core::job::encode_code(&request, &plan, "approve").unwrap();
        assert!(job_code(&lying).is_err());
        // The claimed hash is the code's words: shown through the display rule.
        request.hash = "x\u{1b}[2J\u{202e}".into();
        let hostile = parley_core::job::encode_code(&request, &plan, "approve").unwrap();
        let said = job_code(&hostile).unwrap_err().to_string();
        assert!(
            !said.contains('\u{1b}') && !said.contains('\u{202e}'),
            "{said}"
        );
        // A proposal's code is not a job code.
        let c = ConsentRequest::from_value(&consent("mH3v")).unwrap();
        let code = parley_core::code::encode(&c, None).unwrap();
        assert!(job_code(&code).unwrap().is_none());
    }

    #[test]
    fn json_form_is_read_and_checked() {
        let v = json!({"consent": consent("mH3v"), "proposal": {"id":"p_1","hash":"mH3v"},
                       "service":"shop.example", "extra": 1});
        let input = from_json(&v, "c.json").unwrap();
        assert_eq!(input.hash, "mH3v");
        assert!(
            matches!(input.ask, Ask::Consent { ref service, agent: None, .. } if service == "shop.example")
        );

        for (v, want) in [
            (json!([]), "not a JSON object"),
            (json!({"proposal":{}, "service":"s"}), "missing `consent`"),
            (
                json!({"consent":"x","proposal":{},"service":"s"}),
                "`consent` must be an object",
            ),
            (
                json!({"consent":consent("h"),"service":"s"}),
                "missing `proposal`",
            ),
            (
                json!({"consent":consent("h"),"proposal":{}}),
                "missing `service`",
            ),
            (
                json!({"consent":consent("h"),"proposal":{},"service":""}),
                "`service` must be",
            ),
            (
                json!({"consent":consent("h"),"proposal":{},"service":"s","agent":1}),
                "`agent`",
            ),
            (
                json!({"consent":{"hash":"h"},"proposal":{},"service":"s"}),
                "`consent`: the consent request is malformed",
            ),
        ] {
            let e = from_json(&v, "c.json").unwrap_err().to_string();
            assert!(e.contains(want), "{v}: {e}");
        }
    }

    #[test]
    fn codes_are_decoded_for_their_hash() {
        let req = ConsentRequest::from_value(&consent("abc_-1")).unwrap();
        let code = parley_core::code::encode(&req, None).unwrap();
        let input = read_input(&code).unwrap();
        assert_eq!(input.hash, "abc_-1");
        assert_eq!(input.ask, Ask::Code { code });
        assert!(read_input("pc1.!!!").is_err());
    }

    #[test]
    fn a_traversal_hash_is_caught_before_asking() {
        let v = json!({"consent": consent("../../.bashrc"), "proposal": {}, "service":"s"});
        let input = from_json(&v, "c.json").unwrap();
        assert!(home::check_stem(&input.hash).is_err());
    }

    #[test]
    fn tokens_are_checked_against_the_hash() {
        let p = SecretKey::from_seed(&Zeroizing::new([7u8; 32]));
        let agent = SecretKey::from_seed(&Zeroizing::new([8u8; 32])).public();
        let g = parley_core::consent::consent_caveats("shop.example", "shop.order", "mH3v", 9);
        let token = UnverifiedGrant::issue_root(&p, &agent, &g, 1, "n")
            .unwrap()
            .encode();
        assert!(token_is_for(&token, "mH3v"));
        assert!(!token_is_for(&token, "other"));
        assert!(!token_is_for("pg1.garbage", "mH3v"));
    }
}

/// The plan of a job code, recomputed from its `detail.job` (the file it is
/// saved under is named by this hash, never by the code's claim); `None`
/// for a code that is not a job code.
fn job_code(code: &str) -> Result<Option<parley_core::job::JobPlan>, CliError> {
    let decoded = parley_core::code::decode(code).map_err(CliError::bad)?;
    if !parley_core::job::is_job_code(&decoded) {
        return Ok(None);
    }
    let job = parley_core::job::from_consent_code(decoded).map_err(CliError::bad)?;
    let plan = parley_core::job::JobPlan::from_job(&job.job).map_err(CliError::bad)?;
    if plan.hash != job.consent.hash {
        return Err(CliError::bad(format!(
            "the job approval code claims plan hash {}, but its job hashes to {}; refusing it",
            super::visible(&job.consent.hash),
            plan.hash
        )));
    }
    Ok(Some(plan))
}

#[derive(Serialize)]
struct JobApproved {
    outcome: &'static str,
    grant: String,
    plan_hash: String,
    tool: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    request: Option<String>,
    saved_to: PathBuf,
}

impl fmt::Display for JobApproved {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "approved: the consent for {} (plan {}) is in {}",
            parley_custody_client::display::safe(&self.tool),
            self.plan_hash,
            self.saved_to.display()
        )
    }
}

/// `parley approve` for a job code: custody reviews it (the human types the
/// plan's phrase), then the consent goes into the YEA store.
fn run_job(
    code: &str,
    plan: parley_core::job::JobPlan,
    wait: std::time::Duration,
    socket: Option<&Path>,
) -> Result<Report, CliError> {
    use parley_custody_client::yea_store;
    // Known before asking: a consent nobody could save is never signed.
    let store = yea_store::store_dir().map_err(CliError::bad)?;
    let existing = yea_store::consent_path(&store, &plan.hash).map_err(CliError::bad)?;
    if existing.exists() {
        return Err(CliError::bad(format!(
            "a consent for this plan is already in the store ({}); call the tool again, or remove it if it is stale",
            existing.display()
        )));
    }
    // The consent is for the server: its key is the code's service.
    let holder = parley_core::code::decode(code)
        .map_err(CliError::bad)?
        .consent
        .service;
    let mut finish = Finish::new("consent");
    let reply = super::block_on(async {
        let mut client = Client::connect(socket).await?;
        client.set_human_deadline(wait);
        let notice = pending_notice(&mut finish.request);
        client
            .approve_code_in(code, &holder, Dialect::YeaV1, notice)
            .await
    })?;
    let grant = match reply {
        Ok(Reply::Approved { grant, .. }) => grant,
        other => return finish.refused(other),
    };
    if !token_is_for(&grant, &plan.hash) {
        return Err(CliError::bad(format!(
            "custody's token is not a consent for plan {}; not saved",
            plan.hash
        )));
    }
    let path = yea_store::write_consent(&store, &plan.hash, &grant, super::unix_now())
        .map_err(CliError::bad)?;
    eprintln!(
        "parley: wrote the consent for {} (plan {}) to {}",
        parley_custody_client::display::safe(&plan.tool),
        plan.hash,
        path.display()
    );
    Ok(Report::new(
        &JobApproved {
            outcome: "approved",
            grant,
            plan_hash: plan.hash,
            tool: plan.tool,
            request: finish.request,
            saved_to: path,
        },
        0,
    ))
}

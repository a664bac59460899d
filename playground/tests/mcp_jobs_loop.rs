//! The MCP job server's approval loop over real stdio, with the real MCP SDK
//! on both sides: `mcp-client` starts `mcp-jobs` as its child and calls it.
//! Within the signed policy → RAN; a refund → an approval code; a consent
//! written into the store → the call again RAN; the same call again →
//! refused (the consent was used once).
//!
//! Here the test plays the person's side with a principal key of its own
//! (what custody does is tested in custody/tests/mcp_jobs_pty.rs): it reads
//! the code the agent was handed, and signs and stores the consent the way
//! `parley approve` does. Everything else is the real thing.

use parley_core::grant::UnverifiedGrant;
use parley_core::job::{check_code, decode_code, issue_job_consent};
use parley_core::quantity::Limit;
use parley_core::{Caveat, RiskLevel, SecretKey};
use parley_custody_client::yea_store::write_consent;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};
use zeroize::Zeroizing;

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn key(seed: u8) -> SecretKey {
    SecretKey::from_seed(&Zeroizing::new([seed; 32]))
}

/// The person's policy: store credit may run unasked up to 25.00 USD each.
fn policy(principal: &SecretKey, server: &SecretKey) -> String {
    let each = Limit::from_value(
        &serde_json::json!({"of": "spend", "max": 2500, "scale": 2, "unit": "USD"}),
        "each",
    )
    .unwrap();
    let total = Limit::from_value(
        &serde_json::json!({"of": "spend", "max": 10000, "scale": 2, "unit": "USD"}),
        "total",
    )
    .unwrap();
    let caveats = [
        Caveat::Can(vec!["store_credit".into(), "refund".into()]),
        Caveat::Risk(RiskLevel::Low),
        Caveat::Each(each),
        Caveat::Total(total),
        Caveat::Exp(now() + 3600),
    ];
    UnverifiedGrant::issue_root(principal, &server.public(), &caveats, now(), "policy-1")
        .unwrap()
        .encode()
}

/// What `parley approve CODE` does once the person has typed the phrase:
/// the code checked and the consent signed by parley-core's job module,
/// written where the server looks.
fn approve(code: &str, principal: &SecretKey, server: &SecretKey, store: &Path) -> String {
    let checked = check_code(decode_code(code).unwrap(), &principal.public(), now()).unwrap();
    assert_eq!(checked.server(), &server.public());
    assert_eq!(checked.code().phrase, "A-1001");
    let token = issue_job_consent(principal, &checked, now(), "c-1")
        .unwrap()
        .encode();
    let hash = checked.plan().hash.clone();
    write_consent(store, &hash, &token, now()).unwrap();
    hash
}

#[test]
fn within_policy_runs_a_refund_asks_the_consent_runs_once_and_a_replay_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let principal = key(1);
    let server = key(5);
    let key_file = dir.path().join("server.key");
    std::fs::write(&key_file, format!("{}\n", &*server.to_seed_b64())).unwrap();
    let pub_file = dir.path().join("principal.pub");
    std::fs::write(&pub_file, principal.public().to_string()).unwrap();
    let policy_file = dir.path().join("policy.grant");
    std::fs::write(&policy_file, policy(&principal, &server)).unwrap();

    let bin = env!("CARGO_BIN_EXE_parley-playground");
    let mut child = Command::new(bin)
        .args(["mcp-client", "--wait", "60", "--store"])
        .arg(&store)
        .arg("--")
        .arg(bin)
        .args(["mcp-jobs", "--principal-pub-unchecked", "--key"])
        .arg(&key_file)
        .arg("--principal-pub")
        .arg(&pub_file)
        .arg("--policy")
        .arg(&policy_file)
        .arg("--policy-json")
        .arg(dir.path().join("no-policy.json"))
        .arg("--store")
        .arg(&store)
        .env("HOME", dir.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = BufReader::new(child.stdout.take().unwrap());
    let mut transcript = Vec::new();
    let mut approved = None;
    for line in out.lines() {
        let line = line.unwrap();
        if let Some(code) = line.strip_prefix("server: code: ") {
            if approved.is_none() {
                approved = Some(approve(code, &principal, &server, &store));
            }
        }
        transcript.push(line);
    }
    let status = child.wait().unwrap();
    let text = transcript.join("\n");
    assert!(status.success(), "the client failed:\n{text}");
    let ran: Vec<&String> = transcript
        .iter()
        .filter(|l| l.starts_with("server: RAN: "))
        .collect();
    assert_eq!(ran.len(), 2, "{text}");
    assert!(
        ran[0].contains("Give Chen 10.00 USD store credit"),
        "{text}"
    );
    assert!(ran[1].contains("Refund 30.00 USD to Chen"), "{text}");
    assert!(text.contains("yea approve pc1."), "{text}");
    assert!(text.contains("already used once; nothing ran"), "{text}");
    // The consent was consumed once, and two receipts were stored.
    let hash = approved.expect("no code was handed out");
    assert!(store.join("consents").join(&hash).exists());
    assert_eq!(
        std::fs::read_dir(store.join("consumed")).unwrap().count(),
        1
    );
    assert_eq!(
        std::fs::read_dir(store.join("receipts")).unwrap().count(),
        2
    );
}

/// What an MCP client that can show forms (elicitation) says it is.
fn client_that_shows_forms() -> rmcp::model::ClientConfig {
    rmcp::model::ClientConfig::new(
        rmcp::model::ClientCapabilities::builder()
            .enable_elicitation()
            .build(),
        rmcp::model::Implementation::default(),
    )
}

/// The job server (key 3, principal key 1, no policy, its store in `dir`,
/// time from `clock`) served over MCP on one end of an in-memory pipe;
/// the other end, for the test's client, and the serving task.
fn serve_jobs(
    dir: &Path,
    clock: std::sync::Arc<dyn parley_playground::clock::Clock>,
) -> (tokio::io::DuplexStream, tokio::task::JoinHandle<()>) {
    use parley_playground::jobs::mcp::JobsMcp;
    use parley_playground::jobs::server::{JobServer, Setup};
    use rmcp::ServiceExt;
    let server = JobServer::new(Setup {
        key: key(3),
        principal: key(1).public(),
        policy_grant: None,
        tightening: parley_playground::jobs::policy::read_tightening(&serde_json::json!({})),
        store: parley_playground::jobs::store::FileStore::new(dir),
        clock,
    });
    let (client_end, server_end) = tokio::io::duplex(64 * 1024);
    let serving = tokio::spawn(async move {
        if let Ok(running) = JobsMcp::new(server).serve(server_end).await {
            let _ = running.waiting().await;
        }
    });
    (client_end, serving)
}

/// Calls `tool` with `args`; the structured answer.
async fn call<H: rmcp::ClientHandler>(
    client: &rmcp::service::RunningService<rmcp::RoleClient, H>,
    tool: &'static str,
    args: &serde_json::Value,
) -> serde_json::Value {
    let params = rmcp::model::CallToolRequestParams::new(tool)
        .with_arguments(args.as_object().expect("arguments are an object").clone());
    client
        .call_tool(params)
        .await
        .expect("the tool answers")
        .structured_content
        .expect("a structured answer")
}

/// The person at an MCP client that can show forms: answers each form with
/// the next of `answers` (`None`: decline) and keeps what it was shown.
struct PersonAtTheForm {
    answers: std::sync::Mutex<Vec<Option<&'static str>>>,
    shown: std::sync::Mutex<Vec<String>>,
}

impl rmcp::ClientHandler for PersonAtTheForm {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        client_that_shows_forms()
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<rmcp::RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        use rmcp::model::{ElicitResult, ElicitationAction};
        let v = serde_json::to_value(&request).unwrap();
        self.shown
            .lock()
            .unwrap()
            .push(v["message"].as_str().unwrap_or("").to_string());
        let next = self.answers.lock().unwrap().remove(0);
        Ok(match next {
            Some(typed) => ElicitResult::new(ElicitationAction::Accept)
                .with_content(serde_json::json!({"confirm": typed})),
            None => ElicitResult::new(ElicitationAction::Decline),
        })
    }
}

/// A client that can ask gets the in-chat approval form instead of a code:
/// a wrong phrase asks again, the order typed runs the refund once, and a
/// decline runs nothing. Then undo: never for the refund, once for store
/// credit, and an id outside the format is not found.
#[tokio::test]
async fn a_client_that_can_ask_shows_the_form_and_runs_only_on_the_typed_phrase_then_undo() {
    use rmcp::ServiceExt;
    let dir = tempfile::tempdir().unwrap();
    let (client_end, serving) = serve_jobs(
        dir.path(),
        std::sync::Arc::new(parley_playground::clock::SystemClock),
    );
    let person = PersonAtTheForm {
        answers: std::sync::Mutex::new(vec![
            Some("approve"),
            Some(" a-1001 "),
            None,
            Some("A-1001"),
        ]),
        shown: std::sync::Mutex::new(Vec::new()),
    };
    let client = person.serve(client_end).await.unwrap();
    let args = serde_json::json!({"order": "A-1001", "amount": "30.00"});
    let ran = call(&client, "refund", &args).await;
    let s = &ran;
    assert_eq!(s["outcome"], "ran", "{s}");
    assert_eq!(
        s["receipt"]["authorizedBy"], "the person's answer in the chat",
        "{s}"
    );
    let shown = client.service().shown.lock().unwrap().clone();
    assert_eq!(shown.len(), 2, "{shown:?}");
    assert!(shown[0].starts_with("Approval needed: "), "{}", shown[0]);
    assert!(
        shown[0].contains("to approve, type: A-1001"),
        "{}",
        shown[0]
    );
    assert!(
        shown[1].starts_with("Approval needed: type \"A-1001\" exactly to approve."),
        "{}",
        shown[1]
    );
    let s = call(&client, "refund", &args).await;
    assert_eq!(s["outcome"], "refused", "{s}");
    assert_eq!(s["why"], "not approved; nothing ran", "{s}");

    // Undo (§7): a refund can never be undone; store credit can, once.
    let undo = |id: &str| serde_json::json!({"receipt": id});
    let refund_id = ran["receipt"]["id"].as_str().unwrap().to_string();
    let s = call(&client, "undo", &undo(&refund_id)).await;
    assert_eq!(s["why"], "this job can never be undone", "{s}");
    let credit = call(&client, "store_credit", &args).await;
    assert_eq!(credit["outcome"], "ran", "{credit}");
    let credit_id = credit["receipt"]["id"].as_str().unwrap();
    let s = call(&client, "undo", &undo(credit_id)).await;
    assert_eq!(s["outcome"], "undone", "{s}");
    let s = call(&client, "undo", &undo(credit_id)).await;
    assert_eq!(s["why"], "this job was already undone", "{s}");
    let s = call(&client, "undo", &undo("../receipts/x")).await;
    assert_eq!(s["why"], "no such receipt", "{s}");
    serving.abort();
}

/// A clock the test moves: the person below answers only after the form's
/// state has expired.
struct MovedClock(std::sync::Arc<std::sync::atomic::AtomicI64>);

impl parley_playground::clock::Clock for MovedClock {
    fn now(&self) -> i64 {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// Types the right phrase, but only once the form's lifetime has passed.
struct LatePerson(std::sync::Arc<std::sync::atomic::AtomicI64>);

impl rmcp::ClientHandler for LatePerson {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        client_that_shows_forms()
    }

    async fn create_elicitation(
        &self,
        _request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<rmcp::RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        use rmcp::model::{ElicitResult, ElicitationAction};
        self.0.fetch_add(
            parley_playground::jobs::request_state::STATE_SECS,
            std::sync::atomic::Ordering::SeqCst,
        );
        Ok(ElicitResult::new(ElicitationAction::Accept)
            .with_content(serde_json::json!({"confirm": "A-1001"})))
    }
}

/// An answer that arrives when the form's state has expired runs nothing,
/// even the right phrase for an irreversible refund.
#[tokio::test]
async fn an_answer_after_the_form_expired_runs_nothing() {
    use rmcp::ServiceExt;
    let dir = tempfile::tempdir().unwrap();
    let time = std::sync::Arc::new(std::sync::atomic::AtomicI64::new(now()));
    let (client_end, serving) =
        serve_jobs(dir.path(), std::sync::Arc::new(MovedClock(time.clone())));
    let client = LatePerson(time).serve(client_end).await.unwrap();
    let args = serde_json::json!({"order": "A-1001", "amount": "30.00"});
    let s = call(&client, "refund", &args).await;
    assert_eq!(s["outcome"], "refused", "{s}");
    assert!(s["why"].as_str().unwrap_or("").contains("expired"), "{s}");
    assert!(
        !dir.path().join("receipts").exists()
            || std::fs::read_dir(dir.path().join("receipts"))
                .unwrap()
                .count()
                == 0,
        "a receipt was written"
    );
    serving.abort();
}

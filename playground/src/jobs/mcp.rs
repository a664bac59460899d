//! The job server on the official MCP SDK (`rmcp`, stdio transport), and
//! the scripted MCP client that drives it over the child's stdio.

use super::form::{approval_form, judge, Answer, Verdict};
use super::request_state::{input_hash, RequestState, STATE_SECS};
use super::server::{JobServer, Outcome, TOOLS};
use super::store::new_id;
use rmcp::model::ElicitRequestParams;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    InitializeResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities, Tool,
};
use rmcp::service::{ElicitationMode, Peer, RequestContext, RoleServer};
use rmcp::transport::TokioChildProcess;
use rmcp::{ServerHandler, ServiceExt};
use serde_json::{json, Map, Value};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The MCP face of a [`JobServer`].
#[derive(Clone)]
pub struct JobsMcp {
    server: Arc<JobServer>,
}

impl JobsMcp {
    /// Wraps a job server.
    pub fn new(server: JobServer) -> JobsMcp {
        JobsMcp {
            server: Arc::new(server),
        }
    }

    /// Serves MCP on stdin/stdout until the client closes it.
    pub async fn serve_stdio(self) -> Result<(), String> {
        let running = self
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| format!("MCP handshake failed: {e}"))?;
        running
            .waiting()
            .await
            .map_err(|e| format!("MCP server stopped: {e}"))?;
        Ok(())
    }
}

fn input_schema() -> Arc<Map<String, Value>> {
    let schema = json!({
        "type": "object",
        "properties": {
            "order": {"type": "string", "description": "the order, e.g. A-1001"},
            "amount": {"type": "string", "description": "USD with two decimals, e.g. \"30.00\""}
        },
        "required": ["order", "amount"],
        "additionalProperties": false
    });
    match schema {
        Value::Object(m) => Arc::new(m),
        _ => Arc::new(Map::new()),
    }
}

/// The undo tool's name.
pub const UNDO_TOOL: &str = "undo";

fn undo_schema() -> Arc<Map<String, Value>> {
    match json!({
        "type": "object",
        "properties": {"receipt": {"type": "string", "description": "the receipt id, e.g. r_…"}},
        "required": ["receipt"],
        "additionalProperties": false
    }) {
        Value::Object(m) => Arc::new(m),
        _ => Arc::new(Map::new()),
    }
}

/// The outcome as MCP: text for the model, the same facts as structured content.
fn result_of(outcome: &Outcome) -> CallToolResult {
    let structured = match outcome {
        Outcome::Ran { receipt } => json!({"outcome": "ran", "receipt": receipt}),
        Outcome::NeedsApproval { why, codes } => json!({
            "outcome": "needs_approval",
            "why": why,
            "codes": codes.iter().map(|(summary, hash, phrase, code)| json!({
                "summary": summary, "planHash": hash, "phrase": phrase, "code": code,
            })).collect::<Vec<_>>(),
        }),
        Outcome::Refused { why } => json!({"outcome": "refused", "why": why}),
        Outcome::Undone { id } => json!({"outcome": "undone", "receipt": id}),
    };
    let content = vec![ContentBlock::text(outcome.text())];
    let mut result = match outcome {
        Outcome::Ran { .. } | Outcome::Undone { .. } => CallToolResult::success(content),
        _ => CallToolResult::error(content),
    };
    result.structured_content = Some(structured);
    result
}

impl JobsMcp {
    /// Asks the person in the chat with the approval form (§3, §5), up to
    /// three rounds. `None`: no form can be offered (all plans denied or
    /// out of band) or the client failed to ask, so the approval codes
    /// stand (§6).
    async fn ask_in_chat(
        &self,
        peer: &Peer<RoleServer>,
        tool: &str,
        input: &Value,
        mut why: String,
    ) -> Option<Outcome> {
        let server = &self.server;
        let input_hash = input_hash(input)?;
        let mut round = 1;
        loop {
            let plans = match server.asked_plans(tool, input) {
                Ok(p) => p,
                Err(why) => return Some(Outcome::Refused { why }),
            };
            let policy = server.ask_policy();
            let form = approval_form(&plans, &why, &policy)?;
            let state = RequestState {
                tool: tool.to_string(),
                input_hash: input_hash.clone(),
                sub: String::new(),
                plans: form.offered.clone(),
                round,
                nonce: new_id("n_"),
                exp: server.now() + STATE_SECS,
            };
            let params: ElicitRequestParams = serde_json::from_value(json!({
                "mode": "form", "message": form.message, "requestedSchema": form.requested_schema,
            }))
            .map_err(|e| eprintln!("mcp-jobs: the form is not an MCP form: {e}"))
            .ok()?;
            // The form lives as long as its state: an answer after `exp`
            // must not run anything, so the wait is bounded by it.
            let lifetime = u64::try_from(state.exp - server.now()).unwrap_or(0);
            let asked = tokio::time::timeout(
                std::time::Duration::from_secs(lifetime),
                peer.create_elicitation(params),
            )
            .await;
            let result = match asked {
                Ok(Ok(result)) => result,
                Ok(Err(e)) => {
                    eprintln!("mcp-jobs: the client could not ask: {e}");
                    return None;
                }
                Err(_) => {
                    eprintln!("mcp-jobs: no answer to the approval form within {lifetime} s");
                    return Some(Outcome::Refused {
                        why: "the approval form expired unanswered; nothing ran; call again".into(),
                    });
                }
            };
            // Each answer consumes its round's nonce, whatever it says (§5 step 2).
            match server.consume_once(&state.nonce, state.exp) {
                Ok(true) => {}
                Ok(false) => {
                    return Some(Outcome::Refused {
                        why: "this approval was already answered".into(),
                    })
                }
                Err(e) => return Some(Outcome::Refused { why: e.to_string() }),
            }
            // §5 step 1: a late answer (from `exp` on) is refused before it is judged.
            if let Err(e) = state.check(tool, &input_hash, "", server.now()) {
                return Some(Outcome::Refused {
                    why: format!("{e}; nothing ran"),
                });
            }
            let answer = Answer::from_value(&serde_json::to_value(&result).unwrap_or(Value::Null));
            let plans = match server.asked_plans(tool, input) {
                Ok(p) => p,
                Err(why) => return Some(Outcome::Refused { why }),
            };
            match judge(&state, &answer, &plans, &policy) {
                Verdict::Run { plan } => {
                    let (server, tool, input) =
                        (Arc::clone(server), tool.to_string(), input.clone());
                    return tokio::task::spawn_blocking(move || {
                        server.run_approved(&tool, &input, &plan)
                    })
                    .await
                    .ok();
                }
                Verdict::NotApproved => {
                    return Some(Outcome::Refused {
                        why: "not approved; nothing ran".into(),
                    })
                }
                Verdict::AskAgain {
                    why: again,
                    round: next,
                } => {
                    why = again;
                    round = next;
                }
                Verdict::Refuse { why } | Verdict::Denied { why } => {
                    return Some(Outcome::Refused { why })
                }
                Verdict::OutOfBand { .. } => return None,
            }
        }
    }
}

impl ServerHandler for JobsMcp {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build()).with_instructions(
            "A refund desk with YEA job tools. A call outside the person's policy asks the person in the chat when the client can show forms; otherwise it returns an approval code: ask the user to run `yea approve <code>` (or `parley approve <code>` with Parley Custody), then call again.",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut tools: Vec<Tool> = TOOLS
            .iter()
            .map(|(name, description)| Tool::new(*name, *description, input_schema()))
            .collect();
        tools.push(Tool::new(
            UNDO_TOOL,
            "Undo a job by its receipt id, within the receipt's undo window, once (no approval needed: it restores what the person approved changing). Input: {receipt}.",
            undo_schema(),
        ));
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let tool = request.name.to_string();
        let input = Value::Object(request.arguments.unwrap_or_default());
        let server = Arc::clone(&self.server);
        if tool == UNDO_TOOL {
            let server = Arc::clone(&self.server);
            let outcome = tokio::task::spawn_blocking(move || server.undo(&input))
                .await
                .map_err(|e| ErrorData::internal_error(format!("the undo failed: {e}"), None))?;
            return Ok(result_of(&outcome).into());
        }
        let (t, i) = (tool.clone(), input.clone());
        let outcome = tokio::task::spawn_blocking(move || server.call(&t, &i))
            .await
            .map_err(|e| ErrorData::internal_error(format!("the job call failed: {e}"), None))?;
        let outcome = match outcome {
            Outcome::NeedsApproval { ref why, .. }
                if context
                    .peer
                    .supported_elicitation_modes()
                    .contains(&ElicitationMode::Form) =>
            {
                match self
                    .ask_in_chat(&context.peer, &tool, &input, why.clone())
                    .await
                {
                    Some(asked) => asked,
                    None => outcome,
                }
            }
            other => other,
        };
        Ok(result_of(&outcome).into())
    }
}

/// Where the scripted client finds its server.
pub enum ServerAt {
    /// A command (program and arguments) run as a child, MCP over its stdio.
    Child(Vec<String>),
    /// A server in this process, MCP over an in-memory pipe (for tests
    /// that drive custody alongside, in one process).
    InProcess(Box<JobServer>),
}

/// What the scripted client does, and where.
pub struct ClientScript {
    /// The server.
    pub server: ServerAt,
    /// The order to work on.
    pub order: String,
    /// The store the server reads (to wait for the consent there).
    pub store: PathBuf,
    /// How long to wait for the person's consent.
    pub wait: Duration,
    /// Told each approval code as it is handed out (the person's side).
    pub on_code: Box<dyn Fn(&str) + Send + Sync>,
    /// Start with a call the policy lets run (false when the server has no policy).
    pub within_policy: bool,
}

/// One call as the client saw it.
fn describe(result: &CallToolResult) -> (String, Value) {
    let text = result
        .content
        .iter()
        .filter_map(|c| match c {
            ContentBlock::Text(t) => Some(t.text.clone()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    (
        text,
        result.structured_content.clone().unwrap_or(Value::Null),
    )
}

/// Runs the loop: within policy → receipt; over it → approval code; wait
/// for the consent in the store; the call again → receipt; the same call
/// again → not run (consumed). Prints each step and returns the transcript;
/// fails if any step differs.
pub async fn run_client(script: ClientScript) -> Result<Vec<String>, String> {
    match &script.server {
        ServerAt::Child(command) => {
            let (program, args) = command.split_first().ok_or("no server command to run")?;
            let mut cmd = tokio::process::Command::new(program);
            cmd.args(args);
            let transport = TokioChildProcess::new(cmd)
                .map_err(|e| format!("cannot start the MCP server: {e}"))?;
            let client = ()
                .serve(transport)
                .await
                .map_err(|e| format!("MCP handshake with the server failed: {e}"))?;
            drive(client, &script).await
        }
        ServerAt::InProcess(_) => run_in_process(script).await,
    }
}

/// [`run_client`] against a server in this process, over an in-memory pipe.
async fn run_in_process(mut script: ClientScript) -> Result<Vec<String>, String> {
    let ServerAt::InProcess(server) =
        std::mem::replace(&mut script.server, ServerAt::Child(Vec::new()))
    else {
        return Err("not an in-process server".into());
    };
    let (client_end, server_end) = tokio::io::duplex(64 * 1024);
    let serving = tokio::spawn(async move {
        if let Ok(running) = JobsMcp::new(*server).serve(server_end).await {
            let _ = running.waiting().await;
        }
    });
    let client = ()
        .serve(client_end)
        .await
        .map_err(|e| format!("MCP handshake with the server failed: {e}"))?;
    let out = drive(client, &script).await;
    serving.abort();
    out
}

async fn drive(
    client: rmcp::service::RunningService<rmcp::RoleClient, ()>,
    script: &ClientScript,
) -> Result<Vec<String>, String> {
    let transcript = std::sync::Mutex::new(Vec::new());
    let say = |line: String| {
        println!("{line}");
        transcript
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(line);
    };
    let tools = client
        .list_all_tools()
        .await
        .map_err(|e| format!("tools/list failed: {e}"))?;
    let names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
    say(format!("client: the server offers {}", names.join(", ")));

    let call = |tool: &'static str, amount: &'static str| {
        let mut args = Map::new();
        args.insert("order".into(), Value::String(script.order.clone()));
        args.insert("amount".into(), Value::String(amount.into()));
        let peer = client.peer().clone();
        let say = &say;
        async move {
            say(format!("client: call {tool} {{order, amount: {amount:?}}}"));
            let r = peer
                .call_tool(CallToolRequestParams::new(tool).with_arguments(args))
                .await
                .map_err(|e| format!("tools/call {tool} failed: {e}"))?;
            let (text, facts) = describe(&r);
            for line in text.lines() {
                say(format!("server: {line}"));
            }
            Ok::<Value, String>(facts)
        }
    };
    let expect = |facts: &Value, outcome: &str, step: &str| {
        if facts["outcome"] == outcome {
            Ok(())
        } else {
            Err(format!(
                "{step}: expected {outcome}, the server answered {}",
                facts["outcome"]
            ))
        }
    };

    if script.within_policy {
        let small = call("store_credit", "10.00").await?;
        expect(&small, "ran", "within the policy")?;
    }
    let asked = call("refund", "30.00").await?;
    expect(&asked, "needs_approval", "a refund")?;
    let hash = asked["codes"][0]["planHash"]
        .as_str()
        .ok_or("the server named no plan hash")?
        .to_string();
    let code = asked["codes"][0]["code"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let consent = script.store.join("consents").join(&hash);
    // A code lasts at most 10 minutes: no consent for it can come later.
    let wait = script.wait.min(Duration::from_secs(
        parley_core::job::MAX_CONSENT_SECS.unsigned_abs(),
    ));
    say(format!(
        "client: waiting up to {}s for the person's consent at {}",
        wait.as_secs(),
        consent.display()
    ));
    (script.on_code)(&code);
    let start = std::time::Instant::now();
    while !consent.exists() {
        if start.elapsed() > wait {
            return Err("no consent arrived in the store; nothing ran".into());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let ran = call("refund", "30.00").await?;
    expect(&ran, "ran", "the call again with the consent")?;
    let replay = call("refund", "30.00").await?;
    expect(&replay, "needs_approval", "the same call a third time")?;
    say(if script.within_policy {
        "client: done: RAN within policy, RAN with consent, replay refused".into()
    } else {
        "client: done: RAN with consent, replay refused".into()
    });
    client
        .cancel()
        .await
        .map_err(|e| format!("closing the MCP session: {e}"))?;
    Ok(transcript.into_inner().unwrap_or_else(|p| p.into_inner()))
}

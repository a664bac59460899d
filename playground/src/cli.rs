//! The `parley-playground` command line.

use clap::{Args, Parser, Subcommand};
use parley_core::Dialect;
use std::path::PathBuf;

/// Reads `--dialect` (`parley`, `yea`, or their `parley1`/`yea1` names).
fn parse_dialect(s: &str) -> Result<Dialect, String> {
    Dialect::parse(s).ok_or_else(|| format!("unknown dialect {s:?}: use parley or yea"))
}

/// Default address of the shop (the Parley TCP port, §2.3).
pub const DEFAULT_SHOP: &str = "127.0.0.1:7447";
/// Default address of the calendar.
pub const DEFAULT_CAL: &str = "127.0.0.1:7448";

/// A local shop and calendar that speak Parley, and a scripted agent that
/// gets its grant and consents from Parley Custody.
#[derive(Debug, Parser)]
#[command(name = "parley-playground", version)]
pub struct Cli {
    /// What to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve shop.example and cal.example.com on 127.0.0.1 until Ctrl-C.
    Serve(ServeArgs),
    /// Run the scripted agent against running services and custody.
    Agent(AgentArgs),
    /// Serve both services on free ports and run the agent against them.
    Demo(DemoArgs),
    /// A local MCP job server on stdio (YEA job-tool approvals): a refund
    /// desk whose calls outside the person's policy return approval codes.
    #[command(name = "mcp-jobs")]
    McpJobs(McpJobsArgs),
    /// The scripted MCP client: starts `mcp-jobs` as its child and walks the
    /// approval loop (within policy, approval code, consent, replay).
    #[command(name = "mcp-client")]
    McpClient(McpClientArgs),
}

/// `mcp-jobs`.
#[derive(Debug, Args)]
pub struct McpJobsArgs {
    /// The server's own key file, made on first run; its public key is the
    /// server's service id (default: $YEA_HOME/playground-jobs.key, else
    /// ~/.yea/playground-jobs.key).
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// The file holding the principal's public key (`ed25519:…`), pinned by
    /// the person: refused if it or a directory above it is owned or
    /// writable by this user (default: $YEA_PRINCIPAL_PUB). Without it, the
    /// principal is read from the custody daemon.
    #[arg(long = "principal-pub", value_name = "FILE")]
    pub principal_pub: Option<PathBuf>,
    /// Skip the ownership check of --principal-pub: only for a demo or test
    /// where the agent, the server and the person share one account.
    #[arg(long = "principal-pub-unchecked")]
    pub principal_pub_unchecked: bool,
    /// The custody socket to read the principal from (default:
    /// $PARLEY_CUSTODY_SOCKET, else custody's default path).
    #[arg(long = "custody-socket", value_name = "PATH")]
    pub custody_socket: Option<PathBuf>,
    /// The signed policy grant (a file holding a `pg1.` token issued by the
    /// principal to this server's key). Without it nothing runs unasked.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// The unsigned policy (`{"deny": […], "outOfBand": "…"}`), which can
    /// only tighten (default: $YEA_HOME/policy.json, else ~/.yea/policy.json).
    #[arg(long = "policy-json", value_name = "FILE")]
    pub policy_json: Option<PathBuf>,
    /// The store (default: $YEA_STORE, else $YEA_HOME/store, else ~/.yea/store).
    #[arg(long, value_name = "DIR")]
    pub store: Option<PathBuf>,
    /// Print the server's service id (its public key, made on first run)
    /// and exit: the key a policy grant is issued to (`parley grant --to`).
    #[arg(long = "service-id")]
    pub service_id: bool,
}

/// `mcp-client`.
#[derive(Debug, Args)]
pub struct McpClientArgs {
    /// The order to work on.
    #[arg(long, default_value = "A-1001", value_name = "ORDER")]
    pub order: String,
    /// The store the server reads (default as for `mcp-jobs`).
    #[arg(long, value_name = "DIR")]
    pub store: Option<PathBuf>,
    /// How long to wait for the person's consent, in seconds (at most 600:
    /// an approval code lasts 10 minutes, so a consent never comes later).
    #[arg(long, default_value_t = 600, value_name = "SECS")]
    pub wait: u64,
    /// Skip the first call (store credit within the policy): for a server
    /// started without a signed policy, where every job asks.
    #[arg(long = "no-policy")]
    pub no_policy: bool,
    /// Also write each approval code into this file (mode 0600), so the
    /// person can run `parley approve "$(cat FILE)"` instead of copying it.
    #[arg(long = "code-file", value_name = "FILE")]
    pub code_file: Option<PathBuf>,
    /// The server command (default: this program's `mcp-jobs`, which reads
    /// the same environment).
    #[arg(last = true, value_name = "SERVER")]
    pub server: Vec<String>,
}

/// `serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address of shop.example.
    #[arg(long, default_value = DEFAULT_SHOP, value_name = "ADDR")]
    pub shop: String,
    /// Address of cal.example.com.
    #[arg(long, default_value = DEFAULT_CAL, value_name = "ADDR")]
    pub cal: String,
    /// A principal key whose grants the services trust (repeatable).
    /// Without it, the principals of the custody daemon are trusted.
    #[arg(long, value_name = "KEY")]
    pub trust: Vec<String>,
    /// The custody socket to read the principals from (default:
    /// $PARLEY_CUSTODY_SOCKET, else custody's default path).
    #[arg(long = "custody-socket", value_name = "PATH")]
    pub custody_socket: Option<PathBuf>,
    /// The protocol dialect: `parley` (Parley v1, the default) or `yea`
    /// (YEA v1: `"yea": 1` frames, `uses`, `each`/`total` limits).
    #[arg(long, default_value = "parley", value_name = "DIALECT", value_parser = parse_dialect)]
    pub dialect: Dialect,
    /// A directory of revocation statements (`parley custody revoke
    /// --publish DIR` writes them; an extension): a grant one of them
    /// revokes is refused `forbidden`. Read on every request.
    #[arg(long, value_name = "DIR")]
    pub revocations: Option<PathBuf>,
}

/// `agent`.
#[derive(Debug, Args)]
pub struct AgentArgs {
    /// The custody socket (default: $PARLEY_CUSTODY_SOCKET, else custody's default path).
    #[arg(long = "custody-socket", value_name = "PATH")]
    pub custody_socket: Option<PathBuf>,
    /// Address of shop.example.
    #[arg(long, default_value = DEFAULT_SHOP, value_name = "ADDR")]
    pub shop: String,
    /// Address of cal.example.com.
    #[arg(long, default_value = DEFAULT_CAL, value_name = "ADDR")]
    pub cal: String,
    /// The agent's key file (default: $PARLEY_HOME/agent.key, made if missing).
    #[arg(long = "agent-key", value_name = "FILE")]
    pub agent_key: Option<PathBuf>,
    /// How long to wait for the human on each request, in seconds.
    #[arg(long, default_value_t = 900, value_name = "SECS")]
    pub wait: u64,
    /// The protocol dialect: `parley` (Parley v1, the default) or `yea`
    /// (YEA v1: `"yea": 1` frames, `uses`, `each`/`total` limits).
    #[arg(long, default_value = "parley", value_name = "DIALECT", value_parser = parse_dialect)]
    pub dialect: Dialect,
}

/// `demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// The custody socket (default: $PARLEY_CUSTODY_SOCKET, else custody's default path).
    #[arg(long = "custody-socket", value_name = "PATH")]
    pub custody_socket: Option<PathBuf>,
    /// Address of shop.example (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:0", value_name = "ADDR")]
    pub shop: String,
    /// Address of cal.example.com (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:0", value_name = "ADDR")]
    pub cal: String,
    /// The agent's key file (default: $PARLEY_HOME/agent.key, made if missing).
    #[arg(long = "agent-key", value_name = "FILE")]
    pub agent_key: Option<PathBuf>,
    /// How long to wait for the human on each request, in seconds.
    #[arg(long, default_value_t = 900, value_name = "SECS")]
    pub wait: u64,
    /// The protocol dialect: `parley` (Parley v1, the default) or `yea`
    /// (YEA v1: `"yea": 1` frames, `uses`, `each`/`total` limits).
    #[arg(long, default_value = "parley", value_name = "DIALECT", value_parser = parse_dialect)]
    pub dialect: Dialect,
}

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

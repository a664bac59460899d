//! The three commands: `serve`, `agent` and `demo`.

use crate::agent::key::{self, KeyFileError};
use crate::agent::scenario::{self, Config, ScenarioError};
use crate::apps::Playground;
use crate::cli::{AgentArgs, Command, DemoArgs, ServeArgs};
use crate::clock::{Clock, SystemClock};
use parley_core::{Dialect, PublicKey};
use parley_custody_client::client::{Client, ClientError};
use parley_custody_client::protocol::Reply;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// Bad flags.
    #[error("{0}")]
    Usage(String),
    /// The principals could not be read from custody.
    #[error("cannot learn which principals to trust from custody ({0}); pass --trust KEY instead")]
    Trust(ClientError),
    /// A listener could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The agent key file.
    #[error("{0}")]
    Key(#[from] KeyFileError),
    /// The scenario stopped.
    #[error("{0}")]
    Scenario(#[from] ScenarioError),
    /// The MCP job server or its scripted client stopped.
    #[error("{0}")]
    Jobs(String),
}

impl CommandError {
    /// The process exit code: 1 when a scenario failed, 2 for setup problems.
    pub fn exit_code(&self) -> u8 {
        match self {
            CommandError::Scenario(_) | CommandError::Jobs(_) => 1,
            _ => 2,
        }
    }
}

/// Runs a command.
pub async fn run(command: Command) -> Result<(), CommandError> {
    match command {
        Command::Serve(a) => serve(a).await,
        Command::Agent(a) => agent(a).await,
        Command::Demo(a) => demo(a).await,
        Command::McpJobs(a) => crate::jobs::command::mcp_jobs(a).await,
        Command::McpClient(a) => crate::jobs::command::mcp_client(a).await,
    }
}

/// The principals to trust: `--trust` keys, else custody's (`hello`).
pub(crate) async fn trusted(
    flags: &[String],
    socket: Option<&Path>,
) -> Result<Vec<PublicKey>, CommandError> {
    if !flags.is_empty() {
        return flags
            .iter()
            .map(|k| {
                k.parse()
                    .map_err(|e| CommandError::Usage(format!("--trust {k}: {e}")))
            })
            .collect();
    }
    let mut client = Client::connect(socket).await.map_err(CommandError::Trust)?;
    match client.hello().await.map_err(CommandError::Trust)? {
        Reply::Hello { principals, .. } if !principals.is_empty() => principals
            .iter()
            .map(|p| {
                p.key.parse().map_err(|e| {
                    CommandError::Usage(format!("custody reported a bad key {}: {e}", p.key))
                })
            })
            .collect(),
        Reply::Hello { .. } => Err(CommandError::Usage(
            "custody holds no principal key yet: create one first (or pass --trust KEY)".into(),
        )),
        other => Err(CommandError::Usage(format!(
            "custody answered hello with {other:?}"
        ))),
    }
}

async fn start(
    shop: &str,
    cal: &str,
    trusted: Vec<PublicKey>,
    dialect: Dialect,
    revocations: Option<std::path::PathBuf>,
) -> Result<Playground, CommandError> {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    Playground::start_revocable(shop, cal, trusted, clock, dialect, revocations)
        .await
        .map_err(|source| CommandError::Bind {
            addr: format!("{shop} / {cal}"),
            source,
        })
}

fn announce(p: &Playground, trusted: &[PublicKey], dialect: Dialect) {
    // §2.3: the URL scheme is the dialect's marker (`parley://`, `yea://`).
    let scheme = dialect.marker();
    println!("shop.example     {scheme}://{}", p.shop.addr);
    println!("cal.example.com  {scheme}://{}", p.cal.addr);
    if dialect != Dialect::ParleyV1 {
        println!("speaking {dialect}");
    }
    for k in trusted {
        println!("trusting grants from {k}");
    }
}

async fn serve(a: ServeArgs) -> Result<(), CommandError> {
    let trusted = trusted(&a.trust, a.custody_socket.as_deref()).await?;
    let p = start(
        &a.shop,
        &a.cal,
        trusted.clone(),
        a.dialect,
        a.revocations.clone(),
    )
    .await?;
    announce(&p, &trusted, a.dialect);
    println!("serving until Ctrl-C");
    let _ = std::io::stdout().flush();
    let _ = tokio::signal::ctrl_c().await;
    p.stop().await;
    Ok(())
}

fn agent_config(
    socket: Option<&Path>,
    shop: String,
    cal: String,
    key_file: Option<&Path>,
    wait: u64,
    dialect: Dialect,
) -> Result<Config, CommandError> {
    let path = match key_file {
        Some(p) => p.to_path_buf(),
        None => key::default_path()?,
    };
    let (secret, made) = key::load_or_create(&path)?;
    if made {
        eprintln!("made a new agent key at {}", path.display());
    }
    Ok(Config {
        custody_socket: socket.map(Path::to_path_buf),
        shop,
        cal,
        key: Arc::new(secret),
        clock: Arc::new(SystemClock),
        human_deadline: Duration::from_secs(wait.max(1)),
        dialect,
    })
}

async fn run_scenario(cfg: &Config) -> Result<(), CommandError> {
    let mut out = std::io::stdout();
    scenario::run(cfg, &mut out).await?;
    Ok(())
}

async fn agent(a: AgentArgs) -> Result<(), CommandError> {
    let cfg = agent_config(
        a.custody_socket.as_deref(),
        a.shop,
        a.cal,
        a.agent_key.as_deref(),
        a.wait,
        a.dialect,
    )?;
    run_scenario(&cfg).await
}

async fn demo(a: DemoArgs) -> Result<(), CommandError> {
    let trusted = trusted(&[], a.custody_socket.as_deref()).await?;
    let p = start(&a.shop, &a.cal, trusted.clone(), a.dialect, None).await?;
    announce(&p, &trusted, a.dialect);
    let cfg = agent_config(
        a.custody_socket.as_deref(),
        p.shop.addr.to_string(),
        p.cal.addr.to_string(),
        a.agent_key.as_deref(),
        a.wait,
        a.dialect,
    )?;
    let result = run_scenario(&cfg).await;
    p.stop().await;
    result
}

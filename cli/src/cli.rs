//! Command-line syntax.

use clap::{Args, Parser, Subcommand};

/// Parley: Lens, grants and proofs offline.
#[derive(Debug, Parser)]
#[command(name = "parley", version, about, long_about = None)]
pub struct Cli {
    /// Print structured output as JSON.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Render a reply frame (or any JSON value) as Lens (§9).
    Lens(LensArgs),
    /// Show a grant token's chain: issuer, holders, caveats in plain words, expiry.
    Inspect(InspectArgs),
    /// Decide whether a grant authorizes a request (§6.3–6.4).
    Verify(VerifyArgs),
    /// Print a proposal's hash (§5.1).
    Hash(FileArg),
    /// Print the token estimate of a text (§8).
    Est(FileArg),
}

#[derive(Debug, Args)]
pub struct FileArg {
    /// Input file; `-` or nothing reads standard input.
    pub file: Option<String>,
}

#[derive(Debug, Args)]
pub struct LensArgs {
    /// Input file; `-` or nothing reads standard input.
    pub file: Option<String>,
    /// Render the input as a plain value (lean notation), even if it looks like a reply.
    #[arg(long)]
    pub value: bool,
    /// Read one frame (or value) per line; write one JSON string (its Lens) per line.
    #[arg(long)]
    pub ndjson: bool,
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The `pg1.` token; `-` reads it from standard input.
    pub token: String,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The `pg1.` token; `-` reads it from standard input.
    pub token: String,
    /// A principal key the service trusts (repeatable).
    #[arg(long = "trust", required = true, value_name = "KEY")]
    pub trust: Vec<String>,
    /// The service id.
    #[arg(long)]
    pub svc: String,
    /// The request verb (ASK, INTENT, COMMIT, UNDO, EXPAND).
    #[arg(long)]
    pub verb: String,
    /// The capability (for UNDO: the receipt's capability).
    #[arg(long = "cap", default_value = "")]
    pub cap: String,
    /// Unix seconds to evaluate at (default: now).
    #[arg(long)]
    pub now: Option<i64>,
    /// The key the request's proof was made with (default: the grant's holder).
    #[arg(long = "proof-key", value_name = "KEY")]
    pub proof_key: Option<String>,
    /// COMMIT: the proposal hash.
    #[arg(long)]
    pub hash: Option<String>,
    /// COMMIT: the proposal cost, like 40USD or 40.50USD (omit when free).
    #[arg(long)]
    pub cost: Option<String>,
    /// COMMIT: the proposal risk (low, medium, high).
    #[arg(long)]
    pub risk: Option<String>,
    /// Spend already reserved through a block, in minor units (repeatable).
    #[arg(long = "spent", value_name = "BLOCKID=CENTS")]
    pub spent: Vec<String>,
}

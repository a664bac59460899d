//! Command-line syntax.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// Parley: Lens, grants and proofs offline; approvals, grants and audit
/// through Parley Custody.
#[derive(Debug, Parser)]
#[command(name = "parley", version, about, long_about = None)]
pub struct Cli {
    /// Print structured output as JSON.
    #[arg(long, global = true)]
    pub json: bool,
    /// The custody socket (default: $PARLEY_CUSTODY_SOCKET, else custody's
    /// default path for this user).
    #[arg(long, global = true, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// The protocol the input is in: parley1 (Parley v1) or yea1 (YEA v1).
    /// Default: what the input says (a frame's "yea": 1, a proposal's
    /// `uses` or `cost`, the YEA or Parley flags given); input that would
    /// read differently in the two and does not say is refused.
    #[arg(long, global = true, value_name = "DIALECT", value_parser = crate::dialect::parse_flag)]
    pub dialect: Option<parley_core::Dialect>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Render a reply frame (or any JSON value) as Lens (§9).
    ///
    /// Piped or redirected, the output is the exact Lens of §9, byte for byte
    /// as every conforming implementation writes it: a service's text appears
    /// as the service wrote it, hidden characters (U+202E, zero-width,
    /// controls, line breaks) included. On a terminal, such characters are
    /// shown as \u{…} escapes instead (and very long lines are cut); a note
    /// on stderr then says that the text shown is not the exact Lens. --exact writes the exact Lens to a terminal too. --ndjson and
    /// --json are for programs: always exact.
    Lens(LensArgs),
    /// Show a grant token's chain: issuer, holders, caveats in plain words, expiry.
    Inspect(InspectArgs),
    /// Decide whether a grant authorizes a request (§6.3–6.4).
    Verify(VerifyArgs),
    /// Print a proposal's hash (§5.1).
    Hash(FileArg),
    /// Print the token estimate of a text (§8).
    Est(FileArg),
    /// Create the agent key ($PARLEY_HOME/agent.key) if missing; print its public key.
    ///
    /// With --dialect yea1 the key is $YEA_HOME/agent.key (default
    /// ~/.yea), where the YEA tooling looks. --import-yea copies the YEA
    /// agent key into $PARLEY_HOME instead of making a new one, so both
    /// toolings act as one agent.
    Init(InitArgs),
    /// Show the agent key and the principals custody holds.
    Whoami,
    /// Ask the human (in Parley Custody) to approve a consent; save the token.
    Approve(ApproveArgs),
    /// Ask the human (in Parley Custody) for a grant to an agent; print the token.
    Grant(GrantArgs),
    /// Delegate a narrower grant to another key, offline, with the agent key.
    Delegate(DelegateArgs),
    /// Read custody's audit log (run as custody's user).
    Audit(AuditArgs),
    /// Manage custody itself (run as custody's user).
    Custody(CustodyArgs),
    /// Print the shell completion script for SHELL.
    ///
    /// Shells: bash, zsh, fish, elvish, powershell. For example:
    /// `parley completions bash > ~/.local/share/bash-completion/completions/parley`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Write the man pages of parley and every subcommand into DIR (for packagers).
    #[command(hide = true)]
    Manpages {
        /// Where parley.1, parley-lens.1, … go.
        dir: PathBuf,
    },
}

/// The caveat flags of `grant` and `delegate` (§6.3 of Parley v1 and YEA v1).
#[derive(Debug, Args, Default)]
pub struct CaveatFlags {
    /// A service id the grant is limited to (repeatable, or comma-separated).
    #[arg(long = "svc", value_name = "SERVICE")]
    pub svc: Vec<String>,
    /// The verbs allowed, comma-separated (ASK, INTENT, COMMIT, UNDO, EXPAND, HELLO).
    #[arg(long, value_name = "VERBS")]
    pub verbs: Option<String>,
    /// A capability pattern: exact, `*`, or a prefix ending in `.*` (repeatable).
    #[arg(long = "can", value_name = "PATTERN")]
    pub can: Vec<String>,
    /// The highest proposal risk a COMMIT may have (low, medium, high).
    #[arg(long, value_name = "LEVEL")]
    pub risk: Option<String>,
    /// Parley v1: the most one COMMIT may cost, like 40USD or 40.50USD.
    #[arg(long, value_name = "AMOUNT")]
    pub per: Option<String>,
    /// Parley v1: the most all COMMITs together may cost (per service), like 100USD.
    #[arg(long, value_name = "AMOUNT")]
    pub spend: Option<String>,
    /// YEA v1: the most one COMMIT may use of a measure, like spend=40USD
    /// or emails=1 (repeatable; an `each` caveat). Makes the grant YEA v1.
    #[arg(long = "each", value_name = "NAME=AMOUNT", conflicts_with_all = ["per", "spend"])]
    pub each: Vec<String>,
    /// YEA v1: the most all COMMITs under the grant may use together of a
    /// measure, like spend=100USD or emails=3 (repeatable; a `total` caveat).
    #[arg(long = "total", value_name = "NAME=AMOUNT", conflicts_with_all = ["per", "spend"])]
    pub total: Vec<String>,
    /// Expiry: a duration from now (30m, 8h, 7d, 2w) or unix seconds.
    #[arg(long, value_name = "WHEN")]
    pub exp: Option<String>,
    /// Not before: a duration from now (30m, 8h, 7d) or unix seconds.
    #[arg(long, value_name = "WHEN")]
    pub nbf: Option<String>,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Copy the agent key of $YEA_HOME (default ~/.yea) into $PARLEY_HOME
    /// (never replacing a different key there).
    #[arg(long)]
    pub import_yea: bool,
}

#[derive(Debug, Args)]
pub struct ApproveArgs {
    /// A `pc1.` consent code, or a JSON file
    /// `{"consent":{…},"proposal":{…},"service":"…"}`, or `-` for standard input.
    pub what: String,
    /// The agent key the consent is for (default: the key of agent.key in
    /// $PARLEY_HOME, or in $YEA_HOME for a YEA v1 consent).
    #[arg(long, value_name = "KEY")]
    pub agent: Option<String>,
    /// How long to wait for the human's decision (like 15m, 1h).
    #[arg(long, value_name = "DURATION", default_value = "15m")]
    pub wait: String,
}

#[derive(Debug, Args)]
pub struct GrantArgs {
    #[command(flatten)]
    pub caveats: CaveatFlags,
    /// The grant's holder (default: the key of $PARLEY_HOME/agent.key).
    #[arg(long, value_name = "KEY")]
    pub to: Option<String>,
    /// A label for the grant, shown to the human.
    #[arg(long)]
    pub label: Option<String>,
    /// Why the grant is needed, shown to the human.
    #[arg(long)]
    pub reason: Option<String>,
    /// How long to wait for the human's decision (like 15m, 1h).
    #[arg(long, value_name = "DURATION", default_value = "15m")]
    pub wait: String,
}

#[derive(Debug, Args)]
pub struct DelegateArgs {
    /// The `pg1.` token held by this agent; `-` reads it from standard input.
    pub token: String,
    /// The key to delegate to.
    #[arg(long, value_name = "KEY")]
    pub to: String,
    #[command(flatten)]
    pub caveats: CaveatFlags,
}

#[derive(Debug, Args)]
pub struct AuditArgs {
    /// Events at or after: unix seconds, or a duration ago (24h, 7d).
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
    /// Events at or before: unix seconds, or a duration ago.
    #[arg(long, value_name = "WHEN")]
    pub until: Option<String>,
    /// Only this agent key.
    #[arg(long, value_name = "KEY")]
    pub agent: Option<String>,
    /// Only this service id.
    #[arg(long, value_name = "SERVICE")]
    pub service: Option<String>,
    /// Only these event kinds (repeatable, or comma-separated), like consent_approved.
    #[arg(long = "kind", value_name = "KIND")]
    pub kind: Vec<String>,
    /// Only grants and consents that are still live now.
    #[arg(long)]
    pub live: bool,
    /// At most this many events (default 500, at most 10000).
    #[arg(long, value_name = "N")]
    pub limit: Option<u32>,
    /// Write JSON Lines (one event per line).
    #[arg(long, conflicts_with = "csv")]
    pub jsonl: bool,
    /// Write CSV (RFC 4180, formula-safe).
    #[arg(long)]
    pub csv: bool,
    /// Check the log's hash chain instead of listing events (exit 1 if
    /// broken): the rows after the last verified one (the checkpoint).
    #[arg(long, conflicts_with_all = ["jsonl", "csv"])]
    pub verify: bool,
    /// With --verify: re-hash every row from the first, ignoring the
    /// checkpoint (finds an edit of rows verified earlier).
    #[arg(long, requires = "verify")]
    pub full: bool,
    /// Custody's data directory (default: $PARLEY_CUSTODY_DATA, else
    /// $XDG_DATA_HOME/parley-custody, else ~/.local/share/parley-custody).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CustodyArgs {
    #[command(subcommand)]
    pub command: CustodyCommand,
}

#[derive(Debug, Subcommand)]
pub enum CustodyCommand {
    /// Principal keys: list, create, delete, import, export.
    Keys(KeysArgs),
    /// Stop all agents: deny every pending request, refuse every new one
    /// unseen until unfrozen. Asks nothing.
    Freeze(FreezeArgs),
    /// End a freeze (asks the OS to authenticate you), then list what was
    /// refused meanwhile.
    Unfreeze(FreezeArgs),
    /// Whether custody is frozen, since when, and how many requests it refused.
    Frozen(FreezeArgs),
    /// Revoke a live grant (asks the OS to authenticate you): signs a
    /// revocation statement with its principal key, writes it to custody's
    /// revocations directory (and --publish DIRs) and prints it. Only
    /// services that read revocations refuse the grant; others accept it
    /// until it expires.
    Revoke(RevokeArgs),
}

#[derive(Debug, Args)]
pub struct RevokeArgs {
    /// The grant id (`token_id` in the audit log; `parley inspect` prints it).
    pub grant: String,
    /// Why (signed into the statement; at most 512 bytes).
    #[arg(long, default_value = "")]
    pub reason: String,
    /// Also write the statement into this directory (repeatable), e.g. the
    /// one a service reads revocations from.
    #[arg(long, value_name = "DIR")]
    pub publish: Vec<PathBuf>,
    /// Use the passphrase-encrypted file store instead of the OS keychain.
    #[arg(long)]
    pub file_store: bool,
    /// A separate set of keychain entries (default: $PARLEY_CUSTODY_NAMESPACE).
    #[arg(long, value_name = "NS")]
    pub namespace: Option<String>,
    /// Custody's data directory (audit log, revocations).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct FreezeArgs {
    /// Why (kept in the audit log; freeze only).
    #[arg(long)]
    pub reason: Option<String>,
    /// Custody's data directory (audit log).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct KeysArgs {
    /// Use the passphrase-encrypted file store instead of the OS keychain
    /// (weaker; passphrase from $PARLEY_CUSTODY_PASSPHRASE or the terminal).
    #[arg(long, global = true)]
    pub file_store: bool,
    /// A separate set of keychain entries (default: $PARLEY_CUSTODY_NAMESPACE).
    #[arg(long, global = true, value_name = "NS")]
    pub namespace: Option<String>,
    /// Custody's data directory (audit log, file store).
    #[arg(long, global = true, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    #[command(subcommand)]
    pub command: KeysCommand,
}

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// List the principal keys (public keys and labels only).
    List,
    /// Create a principal key from the OS random source.
    Create {
        /// The key's name, shown in reviews.
        #[arg(long)]
        label: String,
    },
    /// Delete a principal key for good.
    Delete {
        /// The key: its full public key, a unique prefix of it, or its label.
        key: String,
        /// The full public key again (`ed25519:…`), to confirm.
        #[arg(long, value_name = "KEY", required = true)]
        confirm: String,
    },
    /// Import an upstream `principal.key` (b64url seed) into the store, once.
    Import {
        /// The seed file.
        file: PathBuf,
        /// The key's name, shown in reviews.
        #[arg(long)]
        label: String,
        /// Overwrite and delete the file after a successful import.
        #[arg(long)]
        shred: bool,
    },
    /// Print a principal's public key (what services must trust).
    Export {
        /// The key: its full public key, a unique prefix of it, or its label.
        key: String,
    },
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
    /// Read one frame (or value) per line; write one JSON string (its exact Lens) per line.
    #[arg(long)]
    pub ndjson: bool,
    /// Write the exact Lens even to a terminal (anywhere else it always is).
    #[arg(long)]
    pub exact: bool,
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
    /// Revocation statements to honour (an extension: files that
    /// `parley custody revoke` writes); a grant one of them revokes is
    /// forbidden.
    #[arg(long = "revocations", value_name = "FILE", num_args = 1..)]
    pub revocations: Vec<PathBuf>,
    /// The key the request's proof was made with (default: the grant's holder).
    #[arg(long = "proof-key", value_name = "KEY")]
    pub proof_key: Option<String>,
    /// COMMIT: the proposal hash (base64url, so it may start with '-').
    #[arg(long, allow_hyphen_values = true)]
    pub hash: Option<String>,
    /// COMMIT, Parley v1: the proposal cost, like 40USD or 40.50USD (omit when free).
    #[arg(long)]
    pub cost: Option<String>,
    /// COMMIT, YEA v1: a measure the proposal uses, like spend=22.87USD or
    /// emails=1 (repeatable; omit when it uses nothing). Exact decimals.
    #[arg(long = "uses", value_name = "NAME=AMOUNT", conflicts_with_all = ["cost", "uses_json"])]
    pub uses: Vec<String>,
    /// COMMIT, YEA v1: the proposal's whole `uses` object, as JSON exactly
    /// as the service wrote it (a malformed one fails closed, as at the service).
    #[arg(long = "uses-json", value_name = "JSON", conflicts_with = "cost")]
    pub uses_json: Option<String>,
    /// COMMIT: the proposal risk (low, medium, high).
    #[arg(long)]
    pub risk: Option<String>,
    /// Parley v1: spend already reserved through a block, in minor units (repeatable).
    #[arg(
        long = "spent",
        value_name = "BLOCKID=CENTS",
        allow_hyphen_values = true
    )]
    pub spent: Vec<String>,
    /// YEA v1: what was already committed or reserved through a block, per
    /// measure, like BLOCKID:emails=2 or BLOCKID:spend=40.00 (repeatable).
    #[arg(
        long = "used",
        value_name = "BLOCKID:NAME=AMOUNT",
        allow_hyphen_values = true,
        conflicts_with = "spent"
    )]
    pub used: Vec<String>,
}

#[cfg(test)]
mod hyphen_tests {
    use super::*;
    use clap::Parser;

    /// A proposal hash is base64url: one in 64 starts with '-', and it is
    /// still the value of --hash, not a flag.
    #[test]
    fn a_hash_that_starts_with_a_hyphen_is_a_value() {
        let cli = Cli::try_parse_from([
            "parley",
            "verify",
            "pg1.x",
            "--trust",
            "ed25519:k",
            "--svc",
            "s",
            "--verb",
            "COMMIT",
            "--hash",
            "-3abc_def",
        ])
        .unwrap();
        match cli.command {
            Command::Verify(v) => assert_eq!(v.hash.as_deref(), Some("-3abc_def")),
            _ => panic!("not verify"),
        }
    }
}

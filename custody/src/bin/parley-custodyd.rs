//! `parley-custodyd`: the custody service. Holds the principal key in the OS
//! keychain, serves the custody protocol on a local socket, and asks the
//! human before signing anything: on its terminal (`--approver terminal`,
//! the headless daemon), or on the desktop (`--approver desktop`: a tray
//! icon, notifications, and windows drawn by a separate, keyless UI process
//! it talks to over a private channel; see docs/ui-channel.md).
#![forbid(unsafe_code)]

use clap::Parser;
use parley_custody::agent_access;
use parley_custody::allocator;
use parley_custody::audit::Audit;
use parley_custody::engine::EngineConfig;
use parley_custody::hardening::{self, Report};
use parley_custody::ipc::socket::resolve_socket_path;
use parley_custody::keystore::{Keystore, Passphrase};
use parley_custody::logging::{self, LogTarget};
use parley_custody::paths;
use parley_custody::startup::{self, Custody, CustodyConfig};
use parley_custody::stepup::{Polkit, StepUpPolicy, TextAgent};
use parley_custody::terminal::TerminalApprover;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use zeroize::Zeroizing;

/// Parley Custody, headless: approve agents' consents and grants in this terminal.
#[derive(Debug, Parser)]
#[command(name = "parley-custodyd", version)]
struct Args {
    #[command(subcommand)]
    command: Option<Command>,
    /// Who asks the human: `terminal` (this terminal), `desktop` (tray,
    /// notifications and windows), or `auto`: `desktop` in a desktop session
    /// (a display and a session bus), else `terminal`.
    #[arg(long, value_enum, default_value_t = ApproverKind::Auto)]
    approver: ApproverKind,
    /// Desktop: start in the tray only, without opening the home window.
    #[arg(long)]
    hidden: bool,
    /// Desktop: the UI channel's socket (default: $PARLEY_CUSTODY_UI_SOCKET,
    /// else $XDG_RUNTIME_DIR/parley-custody-ui/ui.sock).
    #[arg(long = "ui-socket", value_name = "PATH")]
    ui_socket: Option<PathBuf>,
    /// Socket path (default: $PARLEY_CUSTODY_SOCKET, else $XDG_RUNTIME_DIR/parley-custody/custody.sock).
    #[arg(long)]
    socket: Option<PathBuf>,
    /// The group whose members (agents running as other users) may connect.
    #[arg(long = "agents-group", value_name = "GROUP")]
    agents_group: Option<String>,
    /// Another uid allowed to connect (repeatable).
    #[arg(long = "allow-uid", value_name = "UID")]
    allow_uid: Vec<u32>,
    /// Data directory for the audit log (default: $PARLEY_CUSTODY_DATA, else $XDG_DATA_HOME/parley-custody).
    #[arg(long = "data-dir")]
    data_dir: Option<PathBuf>,
    /// Keep keys in a passphrase-encrypted file instead of the OS keychain.
    /// WEAKER: the file can be copied and attacked offline. For headless servers only.
    #[arg(long = "file-store")]
    file_store: bool,
    /// Keychain namespace (separates profiles and test runs).
    #[arg(long)]
    namespace: Option<String>,
    /// Longest time ahead a proposal may expire for a consent to be asked (seconds).
    #[arg(long = "max-consent-horizon", default_value_t = 86_400)]
    max_consent_horizon: i64,
    /// Longest lifetime of an issued grant (seconds).
    #[arg(long = "max-grant-lifetime", default_value_t = 7 * 86_400)]
    max_grant_lifetime: i64,
    /// Pending requests in total.
    #[arg(long = "queue-size", default_value_t = 64)]
    queue_size: usize,
    /// New requests per minute from one user.
    #[arg(long = "rate", default_value_t = 30)]
    rate: u32,
    /// Audit retention: rejected requests of one peer logged one by one per
    /// hour (and as many cancelled ones, counted apart); the rest of that
    /// hour are counted into one summary row each (0: summarize all).
    /// Signed and key events are always logged in full.
    #[arg(long = "rejections-per-hour", default_value_t = parley_custody::audit::RetentionPolicy::default().rejections_per_hour)]
    rejections_per_hour: u32,
    /// Audit retention: compact rejected, expired and cancelled rows older
    /// than this many days (their details go; counts and the chain stay).
    /// Default: never.
    #[arg(long = "compact-after-days", value_name = "DAYS")]
    compact_after_days: Option<u32>,
    /// Which approvals need OS authentication (polkit, through pkttyagent on
    /// this terminal) after you answer: `committing` (every consent and every
    /// grant that allows COMMIT or UNDO), `above:AMOUNT` (e.g. above:50USD:
    /// consents from that cost, and committing grants), or `never`.
    #[arg(long = "step-up", value_name = "RULE", default_value = "committing", value_parser = StepUpPolicy::parse_flag)]
    step_up: StepUpPolicy,
    /// How long the OS authentication prompt waits for you (seconds).
    #[arg(
        long = "step-up-timeout",
        value_name = "SECONDS",
        default_value_t = 120
    )]
    step_up_timeout: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ApproverKind {
    /// The prompt on this terminal.
    Terminal,
    /// The tray, notifications and windows.
    Desktop,
    /// `desktop` in a desktop session, else `terminal`.
    Auto,
}

impl ApproverKind {
    /// `auto` decided: a desktop session has a display and a session bus.
    fn resolve(self) -> ApproverKind {
        let set = |k: &str| std::env::var_os(k).is_some_and(|v| !v.is_empty());
        match self {
            ApproverKind::Auto
                if (set("DISPLAY") || set("WAYLAND_DISPLAY"))
                    && set("DBUS_SESSION_BUS_ADDRESS") =>
            {
                ApproverKind::Desktop
            }
            ApproverKind::Auto => ApproverKind::Terminal,
            k => k,
        }
    }
}

/// `parley-custodyd --approver desktop`: the service with the tray, the
/// notifications and the UI channel (custody/src/desktop/daemon.rs).
fn desktop(args: Args, hardening: &Report) -> ExitCode {
    use parley_custody::desktop::daemon::{self, DesktopOptions, Ended};
    use parley_custody::desktop::service::StartOptions;
    if args.file_store {
        return fail("--file-store is for the headless daemon (--approver terminal); the desktop keeps keys in the OS keychain");
    }
    let data = match paths::data_dir_or(args.data_dir.as_deref()) {
        Ok(d) => d,
        Err(e) => return fail(e),
    };
    // No terminal asks here: the log goes to stderr (the user unit's journal).
    if let Err(e) = logging::init_daemon(&data, false) {
        return fail(e);
    }
    tracing::info!("{hardening}");
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => return fail(e),
    };
    let opts = DesktopOptions {
        start: StartOptions {
            socket: args.socket.clone(),
            data_dir: Some(data),
            agents_group: args.agents_group.clone(),
            allow_uid: args.allow_uid.clone(),
            namespace: args.namespace.clone(),
        },
        ui_socket: args.ui_socket.clone(),
        hidden: args.hidden,
    };
    let ended = rt.block_on(daemon::run(opts));
    rt.shutdown_timeout(std::time::Duration::from_secs(2));
    match ended {
        Ok(Ended::Stopped) => {
            eprintln!("parley-custodyd: stopped");
            ExitCode::SUCCESS
        }
        Ok(Ended::HandedOver) => {
            eprintln!("parley-custodyd: Parley Custody is already running for this user; it shows its window");
            ExitCode::SUCCESS
        }
        Ok(Ended::Restart) => restart(),
        Err(e) => fail(e),
    }
}

/// Starts this program again in place, with the same arguments (the saved
/// settings then take effect). The new process finds the sockets free.
fn restart() -> ExitCode {
    use std::os::unix::process::CommandExt;
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => return fail(format!("cannot restart: {e}")),
    };
    let err = std::process::Command::new(exe)
        .args(std::env::args_os().skip(1))
        .exec();
    fail(format!("cannot restart: {err}"))
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Let another OS user's agents connect (for servers; the app has the
    /// same in Settings): shows what changes (the agents group, two
    /// memberships, a socket directory), then with --yes carries it out
    /// through the privileged helper (pkexec, an administrator's password).
    AgentUser {
        /// The OS user the agents run as.
        #[arg(long)]
        user: String,
        /// The agents group.
        #[arg(long, default_value = agent_access::DEFAULT_GROUP)]
        group: String,
        /// The socket directory (default: /srv/parley-custody/<your user>).
        #[arg(long = "socket-dir")]
        socket_dir: Option<PathBuf>,
        /// Carry it out (without it, only show what would change).
        #[arg(long)]
        yes: bool,
    },
}

/// `parley-custodyd agent-user`: plan as this user, show it, run the helper.
fn agent_user(user: String, group: String, socket_dir: Option<PathBuf>, yes: bool) -> ExitCode {
    let me = nix::unistd::Uid::current();
    let Some(custody_user) = nix::unistd::User::from_uid(me)
        .ok()
        .flatten()
        .map(|u| u.name)
    else {
        return fail("cannot tell which user you are");
    };
    let plan = match agent_access::plan(
        agent_access::Request {
            agent_user: user,
            custody_user,
            group,
            socket_dir,
        },
        None,
    ) {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    print!("{}", plan.describe());
    let next = format!(
        "Then start custody with: parley-custodyd --socket {} --agents-group {}",
        plan.socket_path().display(),
        plan.request.group
    );
    if plan.steps.is_empty() {
        println!("{next}");
        return ExitCode::SUCCESS;
    }
    if !yes {
        println!("Nothing changed. Run again with --yes to carry this out (it asks for an administrator's password).");
        return ExitCode::SUCCESS;
    }
    let helper = agent_access::helper_path();
    match agent_access::helper_command(&plan, &helper, nix::unistd::Uid::effective().is_root())
        .status()
    {
        Ok(s) if s.success() => {
            println!("{next}");
            ExitCode::SUCCESS
        }
        Ok(s) => fail(format!(
            "{} did not finish ({s}); nothing more was changed",
            helper.display()
        )),
        Err(e) => fail(format!(
            "could not run {} through pkexec: {e}",
            helper.display()
        )),
    }
}

/// The service's async runtime (both approvers).
fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
}

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("parley-custodyd: {msg}");
    ExitCode::from(2)
}

fn passphrase() -> Result<Passphrase, String> {
    if let Ok(p) = std::env::var("PARLEY_CUSTODY_PASSPHRASE") {
        return Ok(Passphrase::new(Zeroizing::new(p)));
    }
    let tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
        .map_err(|e| {
            format!("--file-store needs PARLEY_CUSTODY_PASSPHRASE or a terminal to ask on: {e}")
        })?;
    let mut out = tty.try_clone().map_err(|e| e.to_string())?;
    let _ = write!(out, "passphrase for the key file store: ");
    let _ = out.flush();
    let saved = nix::sys::termios::tcgetattr(&tty).ok();
    if let Some(t) = &saved {
        let mut quiet = t.clone();
        quiet
            .local_flags
            .remove(nix::sys::termios::LocalFlags::ECHO);
        let _ = nix::sys::termios::tcsetattr(&tty, nix::sys::termios::SetArg::TCSANOW, &quiet);
    }
    let mut line = Zeroizing::new(String::new());
    let read = std::io::BufReader::new(&tty).read_line(&mut line);
    if let Some(t) = &saved {
        let _ = nix::sys::termios::tcsetattr(&tty, nix::sys::termios::SetArg::TCSANOW, t);
    }
    let _ = writeln!(out);
    read.map_err(|e| e.to_string())?;
    Ok(Passphrase::new(Zeroizing::new(
        line.trim_end_matches(['\n', '\r']).to_string(),
    )))
}

fn main() -> ExitCode {
    let mut args = Args::parse();
    if let Some(Command::AgentUser {
        user,
        group,
        socket_dir,
        yes,
    }) = args.command.take()
    {
        return agent_user(user, group, socket_dir, yes);
    }
    // The long-lived service, before any thread starts: glibc's allocator
    // set so that its idle memory stays flat across UI sessions (one
    // arena, no per-thread caches; read only at a process's start, so the
    // service starts itself again with them once). allocator.rs.
    if let Some(e) = allocator::start_with_tunables() {
        eprintln!("parley-custodyd: could not restart with its allocator settings ({e}); running with one malloc arena only");
        allocator::one_arena();
    }
    // Before anything can load a key: no same-user ptrace or /proc/PID/mem,
    // no core dumps, the key's page kept out of swap (hardening.rs). Only the
    // dumpable flag is required; the rest is said in the log.
    let hardening = match hardening::harden_process() {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    if args.approver.resolve() == ApproverKind::Desktop {
        return desktop(args, &hardening);
    }
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => return fail(e),
    };
    // Refuse before anything else when no human can be asked.
    let approver = match TerminalApprover::open() {
        Ok(a) => Arc::new(a),
        Err(e) => return fail(e),
    };
    let data = match paths::data_dir_or(args.data_dir.as_deref()) {
        Ok(d) => d,
        Err(e) => return fail(e),
    };
    // The log never goes to the terminal that asks the human (see logging).
    match logging::init_daemon(&data, true) {
        Ok(LogTarget::File(path)) => eprintln!(
            "parley-custodyd: log: {} (this terminal only shows requests to decide)",
            path.display()
        ),
        Ok(LogTarget::Stderr) => {}
        Err(e) => return fail(e),
    }
    tracing::info!("{hardening}");
    eprintln!("parley-custodyd: {hardening}");
    let mut audit = match Audit::open(&paths::audit_path(&data)) {
        Ok(a) => a,
        Err(e) => return fail(e),
    };
    let keystore = if args.file_store {
        eprintln!("parley-custodyd: WARNING: keys are in a passphrase-encrypted file, which is weaker than the OS keychain");
        paths::file_store_dir(&data)
            .map_err(|e| e.to_string())
            .and_then(|dir| {
                passphrase().and_then(|p| Keystore::file_store(&dir, p).map_err(|e| e.to_string()))
            })
    } else {
        Keystore::keychain_namespaced(args.namespace.as_deref()).map_err(|e| e.to_string())
    };
    let keystore = match keystore {
        Ok(k) => k,
        Err(e) => return fail(e),
    };
    let keys = match keystore.list() {
        Ok(k) => k,
        Err(e) => return fail(e),
    };
    if keys.is_empty() {
        eprint!("No principal key yet. Create one now? [y/N] ");
        let mut a = String::new();
        let tty = std::fs::File::open("/dev/tty").map(std::io::BufReader::new);
        if let Ok(mut tty) = tty {
            let _ = tty.read_line(&mut a);
        }
        if a.trim().eq_ignore_ascii_case("y") {
            if let Err(e) = parley_custody::admin::create_key(
                &keystore,
                &mut audit,
                "principal",
                "created at daemon start",
            ) {
                return fail(e);
            }
        } else {
            eprintln!("parley-custodyd: create one with `parley custody keys create --label NAME`, then start again");
        }
    }
    if let Ok(keys) = keystore.list() {
        for k in keys {
            eprintln!(
                "principal {} ({}): services must trust this key",
                k.public, k.label
            );
        }
    }
    let policy = match startup::peer_policy(args.agents_group.as_deref(), args.allow_uid.clone()) {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    let mut config = EngineConfig::default();
    config.review.max_consent_horizon = args.max_consent_horizon;
    config.review.max_grant_lifetime = args.max_grant_lifetime;
    config.queue.total = args.queue_size;
    config.queue.per_minute = args.rate;
    config.retention.rejections_per_hour = args.rejections_per_hour;
    config.retention.compact_after_days = args.compact_after_days;
    eprintln!("parley-custodyd: audit retention: {}", config.retention);
    config.step_up = args.step_up.clone();
    config.polkit = Polkit::terminal(TextAgent::pkttyagent())
        .with_timeout(std::time::Duration::from_secs(args.step_up_timeout.max(1)));
    eprintln!("parley-custodyd: {}", config.step_up.describe());
    if config.step_up != StepUpPolicy::Never {
        if let Some(u) = parley_custody::prompt_owners::unnamed_here() {
            eprintln!("parley-custodyd: {}", u.words);
            eprintln!(
                "parley-custodyd: an administrator fixes it once, as root: {}",
                parley_custody::prompt_owners::root_command(&u.user)
            );
        }
    }
    rt.block_on(async move {
        // The session's lock and sleep: nothing is approved while it is locked.
        tokio::spawn(parley_custody::session::follow(config.session.clone()));
        let custody = Custody::start(
            audit,
            keystore,
            approver.clone(),
            CustodyConfig::new(config, resolve_socket_path(args.socket.as_deref()), policy),
        )
        .await;
        let listener = match &custody.socket {
            Ok(l) => l,
            Err(e) => return fail(e),
        };
        eprintln!("parley-custodyd: listening on {}", listener.path().display());
        if let Some(dir) = listener.unreachable_for_agents() {
            eprintln!("parley-custodyd: note: agents of other users cannot reach {}; use --socket in a directory the agents group can enter", dir.display());
        }
        if let Err(e) = approver.run(custody.engine.clone(), tokio::runtime::Handle::current()) {
            return fail(e);
        }
        let shutdown = async {
            let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => return std::future::pending().await,
            };
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        };
        if let Err(e) = custody.serve(shutdown).await {
            return fail(e);
        }
        eprintln!("parley-custodyd: stopped");
        ExitCode::SUCCESS
    })
}

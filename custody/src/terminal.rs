//! The terminal approver of the headless daemon: prints each review on the
//! daemon's controlling terminal and asks `approve? [y/N]`.
//!
//! It needs a TTY (`/dev/tty`) and refuses to start without one: an approver
//! that cannot ask a human must not exist. Deny is the default; a high-risk
//! or irreversible consent needs the word `approve` typed in full.
//!
//! What a human at this terminal can rely on:
//! - every request is shown, one at a time, in the order it arrived; the
//!   header says how many more wait behind it, and a request withdrawn while
//!   it waited (expired, cancelled) is said to be gone, never silently lost;
//! - the answer is read only after the whole review is printed, and
//!   whatever was typed before the prompt appeared is thrown away first, so
//!   a `y` typed ahead for one request never answers the next; and a yes
//!   counts only once the prompt has been on screen for [`ANSWER_DELAY`]:
//!   one that arrives sooner (typed ahead, pasted, meant for something
//!   else) is thrown away and the terminal says so;
//! - the decisive facts (service, cost, risk, undo, number of effects,
//!   signing principal) are repeated right above the prompt, so a long
//!   review cannot scroll them out of sight;
//! - every untrusted string is display-safe ([`crate::display`]), and the
//!   daemon sends its log elsewhere ([`crate::logging`]), so nothing but this
//!   approver writes here.

use crate::approver::{Approver, Gesture, PendingView, Verdict, Yes};
use crate::display::{is_display_safe, safe};
use crate::engine::{Engine, OfferView};
use crate::for_a_while::ForAWhile;
use crate::review::{Review, ReviewKind};
use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::sync::mpsc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long the prompt must have been on screen before a yes counts: the
/// review window's approve delay
/// ([`parley_custody_client::ui_constants::APPROVE_DELAY`], 1.5 s), for
/// the same reason. A line that ends sooner was not typed by someone who
/// read the request: type-ahead, a paste with a newline, keys meant for
/// another window. A no counts at once (denying early is never harmful).
pub const ANSWER_DELAY: Duration = parley_custody_client::ui_constants::APPROVE_DELAY;

/// The terminal approver. Create it with [`TerminalApprover::open`], give it
/// to the engine, then [`TerminalApprover::run`] it with that engine.
pub struct TerminalApprover {
    tx: Mutex<mpsc::Sender<Event>>,
    rx: Mutex<Option<mpsc::Receiver<Event>>>,
    tty: Mutex<Option<File>>,
}

enum Event {
    New(Box<PendingView>),
    Gone(String),
}

/// No terminal to ask on.
#[derive(Debug, thiserror::Error)]
#[error("the terminal approver needs a terminal (/dev/tty: {0}); run parley-custodyd in a terminal, or use the desktop app")]
pub struct NoTty(std::io::Error);

impl TerminalApprover {
    /// Opens the controlling terminal.
    pub fn open() -> Result<TerminalApprover, NoTty> {
        let tty = OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/tty")
            .map_err(NoTty)?;
        let (tx, rx) = mpsc::channel();
        Ok(TerminalApprover {
            tx: Mutex::new(tx),
            rx: Mutex::new(Some(rx)),
            tty: Mutex::new(Some(tty)),
        })
    }

    /// Asks about requests one at a time, on a dedicated thread, until the
    /// engine goes away. Call once.
    pub fn run(
        &self,
        engine: Engine,
        rt: tokio::runtime::Handle,
    ) -> std::io::Result<std::thread::JoinHandle<()>> {
        let rx = self.rx.lock().ok().and_then(|mut r| r.take());
        let tty = self.tty.lock().ok().and_then(|mut t| t.take());
        let (Some(rx), Some(tty)) = (rx, tty) else {
            return Err(std::io::Error::other(
                "the terminal approver is already running",
            ));
        };
        std::thread::Builder::new()
            .name("terminal-approver".into())
            .spawn(move || {
                let mut waiting = Waiting::new(rx);
                while let Some(p) = waiting.next() {
                    let mut out = &tty;
                    // A failed OS authentication leaves the request pending:
                    // it is asked again, never silently left behind.
                    loop {
                        let alike = engine.alike(&p.id).len();
                        let offer = engine.for_a_while_offer(&p.id).ok();
                        let verdict = match ask(&tty, &mut waiting, &p, alike, offer.as_ref()) {
                            Answer::Withdrawn => {
                                let _ = writeln!(
                                    out,
                                    "\n→ this request was withdrawn while it waited (expired or cancelled by the agent); nothing was signed\n"
                                );
                                break;
                            }
                            Answer::NoToAllAlike => {
                                match engine.deny_alike(&p.id, Some("denied at the terminal, with the requests alike to it")) {
                                    Ok(ids) => {
                                        let _ = writeln!(out, "→ denied {} requests: nothing was signed; each agent was told\n", ids.len());
                                    }
                                    Err(e) => {
                                        let _ = writeln!(out, "→ not done: {}\n", safe(&e.to_string()));
                                    }
                                }
                                break;
                            }
                            answer => verdict(answer),
                        };
                        match rt.block_on(engine.decide(&p.id, verdict)) {
                            Ok(o) => {
                                let _ = writeln!(out, "→ {}\n", describe(&o));
                            }
                            Err(crate::engine::DecideError::StepUp(e)) => {
                                let _ = writeln!(
                                    out,
                                    "→ not signed: {}. The request is still waiting; answer again.\n",
                                    safe(&e.to_string())
                                );
                                continue;
                            }
                            // Locked, or going to sleep: the engine signs
                            // nothing; the request is asked again.
                            Err(crate::engine::DecideError::Session(h)) => {
                                let _ = writeln!(
                                    out,
                                    "→ not signed: {} The request is still waiting; answer again.\n",
                                    h.sentence()
                                );
                                continue;
                            }
                            Err(e) => {
                                let _ = writeln!(out, "→ not done: {}\n", safe(&e.to_string()));
                            }
                        }
                        break;
                    }
                }
            })
    }
}

/// The requests not yet asked, in order of arrival. Every event is kept:
/// new requests join the end, withdrawals remove theirs.
struct Waiting {
    rx: mpsc::Receiver<Event>,
    queue: VecDeque<PendingView>,
    /// Withdrawn ids not (yet) matched by a request in the queue, most recent last.
    gone: VecDeque<String>,
    closed: bool,
}

impl Waiting {
    fn new(rx: mpsc::Receiver<Event>) -> Waiting {
        Waiting {
            rx,
            queue: VecDeque::new(),
            gone: VecDeque::new(),
            closed: false,
        }
    }

    fn take(&mut self, ev: Event) {
        match ev {
            Event::New(p) => {
                if let Some(i) = self.gone.iter().position(|g| *g == p.id) {
                    self.gone.remove(i);
                } else {
                    self.queue.push_back(*p);
                }
            }
            Event::Gone(id) => {
                if let Some(i) = self.queue.iter().position(|p| p.id == id) {
                    self.queue.remove(i);
                } else {
                    self.gone.push_back(id);
                    if self.gone.len() > 1024 {
                        self.gone.pop_front();
                    }
                }
            }
        }
    }

    /// Takes every event already sent, without waiting.
    fn drain(&mut self) {
        loop {
            match self.rx.try_recv() {
                Ok(ev) => self.take(ev),
                Err(mpsc::TryRecvError::Empty) => return,
                Err(mpsc::TryRecvError::Disconnected) => {
                    self.closed = true;
                    return;
                }
            }
        }
    }

    /// Whether the request `id` was withdrawn since it was taken out.
    fn withdrawn(&mut self, id: &str) -> bool {
        self.drain();
        match self.gone.iter().position(|g| g == id) {
            Some(i) => {
                self.gone.remove(i);
                true
            }
            None => false,
        }
    }

    /// The next request to ask, waiting for one; `None` once the engine is gone.
    fn next(&mut self) -> Option<PendingView> {
        loop {
            self.drain();
            if let Some(p) = self.queue.pop_front() {
                return Some(p);
            }
            if self.closed {
                return None;
            }
            match self.rx.recv() {
                Ok(ev) => self.take(ev),
                Err(_) => return None,
            }
        }
    }

    /// Requests waiting behind the one being asked.
    fn behind(&self) -> usize {
        self.queue.len()
    }
}

fn describe(o: &crate::queue::Outcome) -> &'static str {
    use crate::queue::Outcome::*;
    match o {
        Approved(_, None) => "approved: the consent was signed and sent to the agent",
        Approved(_, Some(_)) => {
            "approved: the consent and the approve-for-a-while grant were signed and sent to the agent"
        }
        Issued(..) => "issued: the grant was signed and sent to the agent",
        Denied(_) => "denied",
        Expired => "expired",
        Cancelled => "cancelled",
    }
}

/// What the human answered.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Answer {
    /// Yes; `second_confirmation` when the word `approve` was typed too;
    /// `typed`: a job's phrase as typed (the engine checks it).
    Yes {
        second_confirmation: bool,
        typed: Option<String>,
        /// Approve for a while, when the human chose it after the yes.
        for_a_while: Option<ForAWhile>,
    },
    /// No (or anything but yes), with the reason recorded.
    No(&'static str),
    /// No to this request and to every request alike to it waiting now.
    NoToAllAlike,
    /// The request left the queue while the prompt was open.
    Withdrawn,
}

/// The one place an answer at this terminal becomes a [`Verdict`].
fn verdict(a: Answer) -> Verdict {
    match a {
        Answer::Yes {
            second_confirmation,
            typed: None,
            for_a_while: None,
        } => Verdict::Approve(Yes {
            gesture: Gesture::Terminal,
            second_confirmation,
        }),
        Answer::Yes {
            second_confirmation,
            typed: None,
            for_a_while: Some(w),
        } => Verdict::ApproveForAWhile(
            Yes {
                gesture: Gesture::Terminal,
                second_confirmation,
            },
            w,
        ),
        Answer::Yes {
            second_confirmation,
            typed: Some(typed),
            ..
        } => Verdict::ApproveTyped(
            Yes {
                gesture: Gesture::Terminal,
                second_confirmation,
            },
            typed,
        ),
        Answer::No(why) => Verdict::Deny(Some(why.into())),
        Answer::NoToAllAlike => Verdict::Deny(Some("denied at the terminal".into())),
        Answer::Withdrawn => Verdict::Deny(Some("withdrawn".into())),
    }
}

/// Reads one line from the terminal, after throwing away whatever was typed
/// before this call; meanwhile watches for the request being withdrawn.
/// `None`: withdrawn.
fn read_answer(tty: &File, waiting: &mut Waiting, id: &str) -> Option<String> {
    #[cfg(unix)]
    {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        use std::os::fd::AsFd;
        let _ = nix::sys::termios::tcflush(tty, nix::sys::termios::FlushArg::TCIFLUSH);
        loop {
            let mut fds = [PollFd::new(tty.as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, PollTimeout::from(250u16)) {
                Ok(0) | Err(nix::errno::Errno::EINTR) => {
                    if waiting.withdrawn(id) {
                        return None;
                    }
                    if waiting.closed {
                        return Some(String::new());
                    }
                }
                Ok(_) => break,
                Err(_) => return Some(String::new()),
            }
        }
    }
    #[cfg(not(unix))]
    let _ = (waiting, id);
    // In canonical mode one read returns at most one line; a longer line
    // than the buffer is read to its end and counts as "no".
    let mut line = Vec::new();
    let mut buf = [0u8; 256];
    let mut reader = tty;
    loop {
        match reader.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                line.extend_from_slice(&buf[..n]);
                if buf[..n].contains(&b'\n') || line.len() > 4096 {
                    break;
                }
            }
        }
    }
    Some(String::from_utf8_lossy(&line).trim().to_ascii_lowercase())
}

/// Reads the answer to the prompt shown at `shown_at`: a yes whose line
/// ended within [`ANSWER_DELAY`] of it is discarded, the terminal says so
/// and asks again. `None`: withdrawn.
fn read_yes_after_delay(
    tty: &File,
    waiting: &mut Waiting,
    id: &str,
    shown_at: Instant,
    alike: usize,
) -> Option<String> {
    let mut out = tty;
    loop {
        let a = read_answer(tty, waiting, id)?;
        if !(is_yes(&a) || a == FOR_A_WHILE) || shown_at.elapsed() >= ANSWER_DELAY {
            return Some(a);
        }
        let _ = write!(
            out,
            "(ignored: that \"{a}\" came less than {:.1} s after the prompt appeared, as typed-ahead or pasted input would; read the request, then answer)\n{}",
            ANSWER_DELAY.as_secs_f32(),
            if alike > 0 { "approve? [y/N/deny all] " } else { "approve? [y/N] " }
        );
        let _ = out.flush();
    }
}

/// The answer that approves and then asks for approve-for-a-while's amount
/// and minutes (offered only where custody offers it).
const FOR_A_WHILE: &str = "w";

/// Whether an answer approves.
fn is_yes(a: &str) -> bool {
    a == "y" || a == "yes"
}

/// The line shown when `alike` requests like this one wait too.
fn alike_line(alike: usize) -> String {
    match alike {
        0 => String::new(),
        1 => "  alike       1 more request like this one from this agent is waiting; answer \"deny all\" to deny both\n".into(),
        n => format!("  alike       {n} more requests like this one from this agent are waiting; answer \"deny all\" to deny this one and them\n"),
    }
}

fn ask(
    tty: &File,
    waiting: &mut Waiting,
    p: &PendingView,
    alike: usize,
    offer: Option<&OfferView>,
) -> Answer {
    let mut out = tty;
    let behind = waiting.behind();
    let _ = write!(out, "{}", render(&p.review, p.closes_at));
    let _ = write!(out, "{}", decisive(&p.review, behind));
    if !p.step_up.words.is_empty() {
        let _ = writeln!(out, "  step-up     {}", shown(&p.step_up.words));
    }
    let _ = write!(out, "{}", alike_line(alike));
    // Approve for a while: offered beside yes, never for a job.
    let offer = offer.filter(|_| p.review.job.is_none());
    if let Some(o) = offer {
        let _ = writeln!(
            out,
            "  for a while answer \"{FOR_A_WHILE}\" to approve and also let {} spend more at {} without asking, for up to an hour (you pick how much and how long)",
            o.agent_name, o.offer.service
        );
    }
    if alike > 0 {
        let _ = write!(out, "approve? [y/N/deny all] ");
    } else {
        let _ = write!(out, "approve? [y/N] ");
    }
    let _ = out.flush();
    let Some(a) = read_yes_after_delay(tty, waiting, &p.id, Instant::now(), alike) else {
        return Answer::Withdrawn;
    };
    if alike > 0 && a == "deny all" {
        return Answer::NoToAllAlike;
    }
    let wants_while = offer.is_some() && a == FOR_A_WHILE;
    if !is_yes(&a) && !wants_while {
        return Answer::No("denied at the terminal");
    }
    let second_confirmation = if p.review.needs_second_confirmation {
        let _ = write!(
            out,
            "This is high risk or cannot be undone. Type \"approve\" to confirm: "
        );
        let _ = out.flush();
        match read_answer(tty, waiting, &p.id) {
            None => return Answer::Withdrawn,
            Some(a) if a == "approve" => true,
            Some(_) => return Answer::No("second confirmation not given"),
        }
    } else {
        false
    };
    // A job: the plan's phrase, typed (SPEC-approval §3). Three tries, as
    // upstream's form allows; the engine checks it again.
    let typed = match &p.review.job {
        None => None,
        Some(job) => {
            let mut tries = 0;
            loop {
                let _ = write!(
                    out,
                    "Type \"{}\" to approve this plan: ",
                    shown(&job.phrase)
                );
                let _ = out.flush();
                let Some(a) = read_answer(tty, waiting, &p.id) else {
                    return Answer::Withdrawn;
                };
                if parley_custody_client::phrase::matches(&a, &job.phrase) {
                    break Some(a);
                }
                tries += 1;
                if tries == 3 {
                    return Answer::No("the phrase was not typed as asked");
                }
                let _ = writeln!(out, "That is not the phrase.");
            }
        }
    };
    // Approve for a while: asked after the "w" answer, default no (this
    // order only); the engine checks the choice again.
    let for_a_while = match offer.filter(|_| wants_while && typed.is_none()) {
        None => None,
        Some(o) => {
            let _ = write!(out, "{}", for_a_while_question(o));
            let _ = out.flush();
            let Some(amount) = read_answer(tty, waiting, &p.id) else {
                return Answer::Withdrawn;
            };
            let minutes = if pick(&amount, o.offer.amounts.len()).is_some() {
                let _ = write!(out, "{}", minutes_question(o));
                let _ = out.flush();
                let Some(m) = read_answer(tty, waiting, &p.id) else {
                    return Answer::Withdrawn;
                };
                m
            } else {
                String::new()
            };
            let chosen = for_a_while_choice(o, &amount, &minutes);
            match &chosen {
                Some(w) => {
                    let _ = writeln!(out, "  for a while {}", o.offer.words(&o.agent_name, w));
                }
                None => {
                    let _ = writeln!(out, "  (this order only)");
                }
            }
            chosen
        }
    };
    if p.step_up.required || for_a_while.is_some() {
        let _ = writeln!(out, "Now authenticate (your system password) to sign it:");
        let _ = out.flush();
    }
    Answer::Yes {
        second_confirmation,
        typed,
        for_a_while,
    }
}

/// The optional question after a yes: which amount, numbered; Enter: no.
fn for_a_while_question(o: &OfferView) -> String {
    let amounts: Vec<String> = o
        .amount_words
        .iter()
        .enumerate()
        .map(|(i, a)| format!("[{}] {a}", i + 1))
        .collect();
    format!(
        "How much more may {} spend at {} without asking? {} (Enter: none, this order only): ",
        o.agent_name,
        o.offer.service,
        amounts.join(" ")
    )
}

/// Which minutes, numbered; Enter: no.
fn minutes_question(o: &OfferView) -> String {
    let m: Vec<String> = o
        .offer
        .minutes
        .iter()
        .enumerate()
        .map(|(i, m)| format!("[{}] {m}", i + 1))
        .collect();
    format!("For how long? {} minutes (Enter: no): ", m.join(" "))
}

/// The 0-based index `answer` picks among `n` numbered choices.
fn pick(answer: &str, n: usize) -> Option<usize> {
    match answer.trim().parse::<usize>() {
        Ok(i) if (1..=n).contains(&i) => Some(i - 1),
        _ => None,
    }
}

/// The human's two answers as a choice, or `None` (anything but two valid
/// numbers is a no: the default).
fn for_a_while_choice(o: &OfferView, amount: &str, minutes: &str) -> Option<ForAWhile> {
    let a = pick(amount, o.offer.amounts.len())?;
    let m = pick(minutes, o.offer.minutes.len())?;
    Some(ForAWhile {
        amount: o.offer.amounts[a],
        minutes: o.offer.minutes[m],
    })
}

/// Text from a review, display-safe. Review fields are made safe when the
/// review is built; this only escapes what is not (so a cut note stays whole).
fn shown(s: &str) -> String {
    if is_display_safe(s) {
        s.to_string()
    } else {
        safe(s)
    }
}

/// The signing principal: the human's label for it (display-safe
/// already), then the key as given.
fn principal_line(r: &Review, key: &str) -> String {
    match &r.principal_label {
        Some(l) => format!("\"{}\" {key}", shown(l)),
        None => key.to_string(),
    }
}

/// The short form of a key as shown (`ed25519:` and ten characters).
fn short_key(k: &str) -> String {
    let k = shown(k);
    if k.chars().count() <= 20 {
        return k;
    }
    let head: String = k.chars().take(18).collect();
    format!("{head}…")
}

fn undo_line(r: &Review) -> String {
    if r.irreversible {
        "IRREVERSIBLE".to_string()
    } else {
        format!("within {}", shown(&r.undo))
    }
}

/// The decisive facts again, right above the prompt, whatever the review's
/// length. `behind`: requests waiting after this one.
pub fn decisive(r: &Review, behind: usize) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let queue = match behind {
        0 => "request 1 of 1 waiting".to_string(),
        n => format!(
            "request 1 of {} waiting: {n} more after this one, each shown in order",
            n + 1
        ),
    };
    let _ = writeln!(s, "──────── decide ({queue}) ────────");
    match r.kind {
        ReviewKind::Consent => {
            let _ = writeln!(s, "  service     {}", shown(&r.service));
            write_cost(&mut s, r, "  ");
            if let Some(w) = &r.why {
                let _ = writeln!(s, "  why asked   {}", shown(&w.words));
            }
            let _ = writeln!(s, "  risk        {}", shown(&r.risk));
            let _ = writeln!(s, "  undo        {}", undo_line(r));
            let _ = writeln!(s, "  effects     {} (listed above)", r.effects.len());
        }
        ReviewKind::Grant => {
            let _ = writeln!(s, "  GRANT       {}", shown(&r.preview));
            let _ = writeln!(s, "  caveats     {} (listed above)", r.caveats.len());
        }
    }
    let _ = writeln!(
        s,
        "  signed by   {}",
        principal_line(r, &short_key(&r.principal))
    );
    if !r.warnings.is_empty() {
        let _ = writeln!(s, "  WARNINGS    {} (listed above)", r.warnings.len());
    }
    s
}

/// The cost line of a Parley consent, or for YEA one line per measure of
/// `uses` (`USES        22.87 USD`, then `            1 emails`), or
/// `USES        nothing measured`: each as the review model words it.
fn write_cost(s: &mut String, r: &Review, indent: &str) {
    use std::fmt::Write as _;
    if r.dialect == parley_core::Dialect::ParleyV1 {
        let _ = writeln!(s, "{indent}COST        {}", shown(&r.cost));
        return;
    }
    if r.uses.is_empty() {
        let _ = writeln!(s, "{indent}USES        {}", shown(&r.cost));
    }
    for (i, u) in r.uses.iter().enumerate() {
        let label = if i == 0 { "USES" } else { "" };
        let _ = writeln!(s, "{indent}{label:<12}{}", shown(&u.words));
    }
}

/// The review as terminal text, in ARCHITECTURE.md's order. Every string is
/// display-safe.
pub fn render(r: &Review, closes_at: i64) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let left = (closes_at - crate::engine::unix_now()).max(0);
    let _ = writeln!(
        s,
        "\n──────── Parley Custody: a request needs your decision ────────"
    );
    match r.kind {
        ReviewKind::Consent if r.job.is_some() => {
            let job = r.job.as_ref().expect("a job");
            let _ = writeln!(
                s,
                "JOB         {} (a YEA job tool's plan)",
                shown(&job.tool)
            );
            let _ = writeln!(s, "input:");
            for line in &job.input {
                let _ = writeln!(s, "  {}", shown(line));
            }
            write_cost(&mut s, r, "");
            let _ = writeln!(s, "risk        {}", shown(&r.risk));
            let _ = writeln!(s, "undo        {}", undo_line(r));
            let _ = writeln!(s, "effects ({}):", r.effects.len());
            for e in &r.effects {
                let _ = writeln!(s, "  {}", shown(&e.line));
            }
            let _ = writeln!(s, "to approve  type \"{}\"", shown(&job.phrase));
        }
        ReviewKind::Consent => {
            let _ = writeln!(s, "service     {}", shown(&r.service));
            let _ = writeln!(s, "capability  {}", shown(&r.capability));
            write_cost(&mut s, r, "");
            if let Some(w) = &r.why {
                let _ = writeln!(s, "why asked   {}", shown(&w.words));
            }
            let _ = writeln!(s, "risk        {}", shown(&r.risk));
            let _ = writeln!(s, "undo        {}", undo_line(r));
            let _ = writeln!(s, "effects ({}):", r.effects.len());
            for e in &r.effects {
                let _ = writeln!(s, "  {}", shown(&e.line));
            }
        }
        ReviewKind::Grant => {
            let _ = writeln!(s, "GRANT       {}", shown(&r.preview));
            let _ = writeln!(s, "caveats ({}):", r.caveats.len());
            for c in &r.caveats {
                let _ = writeln!(s, "  {}  {}", shown(&c.words), safe(&c.json.to_string()));
            }
        }
    }
    let _ = writeln!(s, "closes in   {}", parley_core::lens::duration(left));
    let exe = r.requester.exe.as_deref().map_or("unknown".into(), shown);
    let pid = r.requester.pid.map_or("?".to_string(), |p| p.to_string());
    let _ = writeln!(
        s,
        "asked by    user {} (uid {}), pid {pid}, {exe} (not verified)",
        shown(&r.requester.user),
        r.requester.uid
    );
    if !r.requester.chain_line.is_empty() {
        let _ = writeln!(
            s,
            "from        {} (not verified)",
            shown(&r.requester.chain_line)
        );
    }
    let known = if r.agent.known {
        ""
    } else {
        " — never granted to before"
    };
    let holder = if r.job.is_some() {
        "server     "
    } else {
        "agent      "
    };
    // The one name every view gives it (the human's, else its four words),
    // then the key and, under a name of the human's, the words as details.
    let _ = writeln!(s, "{holder} {}{known}", shown(&r.agent.name));
    let words = if r.agent.label.is_some() && !r.agent.phrase.is_empty() {
        format!(", words: {}", shown(&r.agent.phrase))
    } else {
        String::new()
    };
    let _ = writeln!(s, "            key {}{words}", shown(&r.agent.short));
    if let Some(a) = &r.activity {
        let _ = writeln!(s, "so far      {}", shown(&a.words));
    }
    let _ = writeln!(s, "signed by   {}", principal_line(r, &shown(&r.principal)));
    if !r.their_words.is_empty() {
        let whose = if r.job.is_some() {
            "the server says"
        } else if r.kind == ReviewKind::Consent {
            "the service says"
        } else {
            "the agent says"
        };
        let _ = writeln!(s, "{whose}: \"{}\"", shown(&r.their_words));
    }
    if !r.hash_short.is_empty() {
        let _ = writeln!(s, "hash        {}…", shown(&r.hash_short));
    }
    for w in &r.warnings {
        let _ = writeln!(s, "WARNING     {}", shown(w));
    }
    s
}

impl Approver for TerminalApprover {
    fn notify(&self, pending: &PendingView) {
        if let Ok(tx) = self.tx.lock() {
            let _ = tx.send(Event::New(Box::new(pending.clone())));
        }
    }
    fn withdrawn(&self, id: &str) {
        if let Ok(tx) = self.tx.lock() {
            let _ = tx.send(Event::Gone(id.to_string()));
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn consent_review() -> Review {
        use crate::review::{AgentView, EffectView, Requester};
        let line = |op: &str, line: &str| EffectView {
            op: op.into(),
            line: line.into(),
        };
        Review {
            kind: ReviewKind::Consent,
            service: "shop.example".into(),
            capability: "shop.order".into(),
            cost: "71.36 USD".into(),
            cost_money: None,
            dialect: parley_core::Dialect::ParleyV1,
            uses: Vec::new(),
            risk: "low".into(),
            undo: "30m".into(),
            irreversible: false,
            effects: vec![
                line("create", "+ create order"),
                line("charge", "$ charge card ••42 — 71.36 USD"),
            ],
            expires: 0,
            requester: Requester {
                user: "agent".into(),
                uid: 1001,
                pid: Some(42),
                exe: Some("/usr/bin/python3".into()),
                chain: Vec::new(),
                chain_line: String::new(),
            },
            agent: AgentView {
                key: "ed25519:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA".into(),
                short: "ed25519:AAAAAAAAAA…".into(),
                phrase: "cactus orbit lemon frost".into(),
                label: None,
                name: "cactus orbit lemon frost".into(),
                known: false,
            },
            their_words: "Order 3 meals".into(),
            summary_differs: false,
            hash: "h".repeat(43),
            hash_short: "h".repeat(12),
            principal: "ed25519:PPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPP".into(),
            principal_label: Some("Ana (personal)".into()),
            principal_short: "ed25519:PPPPPPPPPP…".into(),
            caveats: vec![],
            preview: String::new(),
            warnings: vec![],
            needs_second_confirmation: false,
            unusual: vec![],
            activity: None,
            job: None,
            why: None,
        }
    }

    /// A consent waiting for a decision, for tests of every view of one.
    pub(crate) fn pending(id: &str) -> PendingView {
        PendingView {
            id: id.into(),
            review: consent_review(),
            step_up: crate::stepup::StepUpNeed {
                required: false,
                words: String::new(),
            },
            received_at: 0,
            closes_at: 0,
        }
    }

    #[test]
    fn no_event_is_lost_behind_a_withdrawal() {
        // hold, A, B, C queued with withdrawals in between: A, B, C all come out, in order.
        let (tx, rx) = mpsc::channel();
        let mut w = Waiting::new(rx);
        for ev in [
            Event::New(Box::new(pending("hold"))),
            Event::Gone("old".into()),
            Event::New(Box::new(pending("A"))),
            Event::Gone("other".into()),
            Event::New(Box::new(pending("B"))),
            Event::New(Box::new(pending("C"))),
            Event::Gone("hold".into()),
        ] {
            tx.send(ev).unwrap();
        }
        drop(tx);
        let ids: Vec<String> = std::iter::from_fn(|| w.next()).map(|p| p.id).collect();
        assert_eq!(ids, ["A", "B", "C"]);
    }

    #[test]
    fn a_withdrawal_that_overtakes_its_request_still_removes_it() {
        let (tx, rx) = mpsc::channel();
        let mut w = Waiting::new(rx);
        tx.send(Event::Gone("A".into())).unwrap();
        tx.send(Event::New(Box::new(pending("A")))).unwrap();
        tx.send(Event::New(Box::new(pending("B")))).unwrap();
        drop(tx);
        assert_eq!(w.next().map(|p| p.id), Some("B".into()));
        assert!(w.next().is_none());
    }

    #[test]
    fn the_prompt_names_the_agent_by_its_one_name_the_key_after_it() {
        let mut r = consent_review();
        let text = render(&r, 0);
        assert!(
            text.contains("agent       cactus orbit lemon frost — never granted to before\n"),
            "{text}"
        );
        assert!(
            text.contains(&format!("            key {}\n", r.agent.short)),
            "{text}"
        );
        r.agent.relabel(Some("shopper\u{202e}"));
        let text = render(&r, 0);
        assert!(
            text.contains("agent       shopper\\u{202e} — never granted to before\n"),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "            key {}, words: cactus orbit lemon frost\n",
                r.agent.short
            )),
            "{text}"
        );
    }

    #[test]
    fn the_review_names_the_process_chain_unverified_and_the_agents_record() {
        let mut r = consent_review();
        let plain = render(&r, 0);
        assert!(
            !plain.contains("from  ") && !plain.contains("so far"),
            "{plain}"
        );
        r.requester.chain_line = "claude (4242) ← bash\u{202e} (4100)".into();
        r.activity = Some(crate::activity::AgentActivity {
            consents: 3,
            consents_week: 3,
            spent_day: vec![],
            spent_week: vec!["184.20 USD".into()],
            live_grants: 0,
            words: "this agent: 3 consents signed".into(),
        });
        let text = render(&r, 0);
        assert!(
            text.contains("from        claude (4242) ← bash\\u{202e} (4100) (not verified)\n"),
            "{text}"
        );
        assert!(
            text.contains("so far      this agent: 3 consents signed\n"),
            "{text}"
        );
    }

    #[test]
    fn the_prompt_says_why_custody_asks() {
        let mut r = consent_review();
        r.why = Some(crate::review::WhyAsked {
            rule: "per_exceeded",
            words: "Your grant allows 40.00 USD per order; this is 71.36 USD (31.36 USD over)"
                .into(),
        });
        let full = render(&r, 0);
        let d = decisive(&r, 0);
        for text in [&full, &d] {
            assert!(
                text.contains("why asked   Your grant allows 40.00 USD per order; this is 71.36 USD (31.36 USD over)"),
                "{text}"
            );
        }
    }

    #[test]
    fn decisive_facts_name_the_queue_and_the_principal() {
        let r = consent_review();
        let d = decisive(&r, 2);
        assert!(d.contains("request 1 of 3 waiting"), "{d}");
        assert!(d.contains("effects     2"), "{d}");
        assert!(
            d.contains("signed by   \"Ana (personal)\" ed25519:PPPPPPPPPP"),
            "{d}"
        );
    }

    #[test]
    fn a_yea_consent_shows_a_line_per_measure_of_uses() {
        let mut r = consent_review();
        r.dialect = parley_core::Dialect::YeaV1;
        r.uses = ["22.87 USD", "3 emails"]
            .iter()
            .map(|w| crate::review::UseView {
                measure: String::new(),
                words: w.to_string(),
                money: None,
            })
            .collect();
        let d = decisive(&r, 0);
        assert!(
            d.contains("  USES        22.87 USD\n              3 emails\n"),
            "{d}"
        );
        assert!(!d.contains("COST"), "{d}");
        let full = render(&r, 0);
        assert!(
            full.contains("USES        22.87 USD\n            3 emails\n"),
            "{full}"
        );
        r.uses.clear();
        r.cost = crate::review::NOTHING_MEASURED.into();
        assert!(decisive(&r, 0).contains("  USES        nothing measured\n"));
    }

    #[test]
    fn answers_become_verdicts_in_one_place() {
        assert_eq!(
            verdict(Answer::Yes {
                second_confirmation: true,
                typed: None,
                for_a_while: None,
            }),
            Verdict::Approve(Yes {
                gesture: Gesture::Terminal,
                second_confirmation: true
            })
        );
        assert!(matches!(verdict(Answer::No("x")), Verdict::Deny(_)));
    }

    #[test]
    fn approve_for_a_while_is_asked_after_the_yes_and_defaults_to_no() {
        let o = OfferView {
            offer: crate::for_a_while::test_offer(5830, "USD", parley_core::Dialect::ParleyV1),
            agent_name: "Alice's shopper".into(),
            asks_password: false,
            amount_words: vec![
                "50.00 USD".into(),
                "100.00 USD".into(),
                "200.00 USD".into(),
                "500.00 USD".into(),
            ],
        };
        let q = for_a_while_question(&o);
        assert!(
            q.starts_with("How much more may Alice's shopper spend at shop.example without asking? [1] 50.00 USD [2] 100.00 USD"),
            "{q}"
        );
        assert!(q.contains("Enter: none"), "{q}");
        assert!(minutes_question(&o).contains("[1] 5 [2] 15 [3] 30 [4] 60 minutes"));
        assert_eq!(
            for_a_while_choice(&o, "2", "2"),
            Some(ForAWhile {
                amount: 10000,
                minutes: 15
            })
        );
        for (a, m) in [
            ("", ""),
            ("2", ""),
            ("0", "1"),
            ("5", "1"),
            ("2", "9"),
            ("y", "y"),
        ] {
            assert_eq!(for_a_while_choice(&o, a, m), None, "{a:?} {m:?}");
        }
        let yes = Yes {
            gesture: Gesture::Terminal,
            second_confirmation: false,
        };
        let w = ForAWhile {
            amount: 10000,
            minutes: 15,
        };
        assert_eq!(
            verdict(Answer::Yes {
                second_confirmation: false,
                typed: None,
                for_a_while: Some(w),
            }),
            Verdict::ApproveForAWhile(yes, w)
        );
    }

    #[test]
    fn alike_requests_are_announced_with_the_answer_that_denies_them() {
        assert_eq!(alike_line(0), "");
        assert!(alike_line(1).contains("1 more request like this one"));
        let l = alike_line(4);
        assert!(
            l.starts_with(
                "  alike       4 more requests like this one from this agent are waiting"
            ),
            "{l}"
        );
        assert!(l.contains("\"deny all\""), "{l}");
        assert!(
            matches!(verdict(Answer::NoToAllAlike), Verdict::Deny(_)),
            "never a yes"
        );
    }

    #[test]
    fn a_job_is_shown_with_its_input_the_server_and_the_phrase_to_type() {
        let mut r = consent_review();
        r.job = Some(crate::review::JobView {
            tool: "refund".into(),
            input: vec![safe("who: Chen \u{202e}evil")],
            phrase: "ch_1".into(),
            plan_hash: "h".into(),
        });
        let text = render(&r, crate::engine::unix_now() + 60);
        assert!(text.contains("JOB         refund"), "{text}");
        assert!(text.contains("to approve  type \"ch_1\""), "{text}");
        assert!(text.contains("server      "), "{text}");
        assert!(text.contains("the server says"), "{text}");
        assert!(
            text.contains("\\u{202e}") && !text.contains('\u{202e}'),
            "{text}"
        );
        assert_eq!(
            verdict(Answer::Yes {
                second_confirmation: false,
                typed: Some("CH_1".into()),
                for_a_while: None,
            }),
            Verdict::ApproveTyped(
                Yes {
                    gesture: Gesture::Terminal,
                    second_confirmation: false,
                },
                "CH_1".into()
            )
        );
    }
}

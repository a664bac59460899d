//! A YEA MCP job server's approvals through the real headless daemon on a
//! real pty: the whole loop issue 29 asks for.
//!
//! The real `parley-custodyd` runs in its own tmux server (as in
//! `terminal_prompt.rs`), inside a private D-Bus session with a real,
//! unlocked gnome-keyring. The human types on that terminal. The
//! playground's job server (the real MCP SDK, in this process over an
//! in-memory pipe) and its scripted MCP client do the agent's part:
//!
//! 1. custody issues the server its signed policy grant (the human says yes
//!    on the terminal): store credit up to 25.00 USD each runs unasked;
//! 2. store credit of 10.00 USD → RAN, with a receipt;
//! 3. a refund of 30.00 USD → NOT RUN, with an approval code;
//! 4. the code goes to custody (`approve_code`, what `parley approve CODE`
//!    sends): the terminal shows the plan and asks for the phrase; the human
//!    types it; custody signs the consent, and it is written into the store
//!    where the server looks (what `parley approve` does with the reply);
//! 5. the refund again → RAN; 6. the same call again → refused (consumed).

mod support;

use parley_core::SecretKey;
use parley_custody::terminal::ANSWER_DELAY;
use parley_playground::clock::SystemClock;
use parley_playground::jobs::mcp::{run_client, ClientScript, ServerAt};
use parley_playground::jobs::policy::read_tightening;
use parley_playground::jobs::server::{JobServer, Setup};
use parley_playground::jobs::store::FileStore;
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::terminal::{submit, Term, PROMPT, WAIT};
use zeroize::Zeroizing;

/// The human says yes on the terminal, once the prompt has been up long enough.
fn say_yes(t: &Term, from: usize) -> usize {
    let at = t.wait_raw(PROMPT, from);
    std::thread::sleep(ANSWER_DELAY + Duration::from_millis(100));
    t.keys(&["y", "Enter"]);
    at
}

#[test]
fn a_refund_outside_the_policy_runs_once_after_the_human_types_its_phrase_on_the_terminal() {
    let t = Term::start();
    let started = Instant::now();
    let server_key = SecretKey::from_seed(&Zeroizing::new([9u8; 32]));
    let server_id = server_key.public().to_string();

    // 1. The policy: a grant from the principal to the server's key.
    let exp = parley_custody::engine::unix_now() + 3600;
    let g = t.submit(
        json!({"custody": 1, "id": "policy", "op": "grant", "agent": server_id,
               "label": "refund desk policy",
               "reason": "let small store credit run without asking",
               "caveats": [{"can": ["store_credit", "refund"]}, {"verbs": ["COMMIT"]},
                           {"risk": "low"},
                           {"each": {"of": "spend", "max": 2500, "scale": 2, "unit": "USD"}},
                           {"total": {"of": "spend", "max": 10000, "scale": 2, "unit": "USD"}},
                           {"exp": exp}]}),
    );
    g.pending();
    let at = say_yes(&t, 0);
    let granted = g.wait();
    assert_eq!(granted["kind"], "ISSUED", "{granted}");
    let policy = granted["grant"]
        .as_str()
        .expect("the policy grant")
        .to_string();

    // 2–6. The server and the scripted MCP client.
    let store = t.path("store");
    std::fs::create_dir(&store).unwrap();
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o700)).unwrap();
    let server = JobServer::new(Setup {
        key: server_key,
        principal: t.principal.parse().unwrap(),
        policy_grant: Some(policy),
        tightening: read_tightening(&json!({})),
        store: FileStore::new(&store),
        clock: Arc::new(SystemClock),
    });
    let term = Arc::new(Mutex::new((t, at)));
    let human = Arc::clone(&term);
    let sock = term.lock().unwrap().0.sock();
    let store_for_human = store.clone();
    let done: Arc<Mutex<Option<std::thread::JoinHandle<Value>>>> = Arc::new(Mutex::new(None));
    let done_in = Arc::clone(&done);
    let on_code = move |code: &str| {
        let code = code.to_string();
        let human = Arc::clone(&human);
        let sock = sock.clone();
        let store = store_for_human.clone();
        let handle = std::thread::spawn(move || {
            // What `parley approve CODE` sends; custody reviews the plan.
            let agent = SecretKey::from_seed(&Zeroizing::new([7u8; 32])).public();
            let asked = submit(
                &sock,
                json!({"custody": 1, "id": "job", "op": "approve_code", "code": code,
                       "agent": agent.to_string(), "dialect": "yea1"}),
            );
            let job = parley_core::job::decode_code(&code).expect("a job code");
            let hash = parley_core::job::JobPlan::from_job(&job.job)
                .expect("the code's plan")
                .hash;
            asked.pending();
            let (t, from) = &mut *human.lock().unwrap();
            // The review: the plan and the phrase, then the prompt.
            let shown = t.wait_raw("JOB         refund", *from);
            let at = say_yes(t, shown);
            // A refund cannot be undone: custody asks for "approve" first,
            // then for the plan's own phrase.
            let at = t.wait_raw("cannot be undone. Type \"approve\" to confirm: ", at);
            t.keys(&["-l", "approve"]);
            t.keys(&["Enter"]);
            let at = t.wait_raw("Type \"A-1001\" to approve this plan: ", at);
            t.keys(&["-l", "A-1001"]);
            t.keys(&["Enter"]);
            *from = t.wait_raw("approved: the consent was signed", at);
            let fin = asked.wait();
            if let Some(token) = fin["grant"].as_str() {
                // What `parley approve` does with the reply.
                parley_custody_client::yea_store::write_consent(&store, &hash, token, unix_now())
                    .unwrap();
            }
            fin
        });
        *done_in.lock().unwrap() = Some(handle);
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let transcript = rt.block_on(run_client(ClientScript {
        server: ServerAt::InProcess(Box::new(server)),
        order: "A-1001".into(),
        store: store.clone(),
        wait: WAIT,
        on_code: Box::new(on_code),
        within_policy: true,
    }));
    let fin = done
        .lock()
        .unwrap()
        .take()
        .map(|h| h.join().unwrap())
        .unwrap_or(Value::Null);
    let transcript = transcript.unwrap_or_else(|e| panic!("{e}\ncustody answered: {fin}"));
    let text = transcript.join("\n");
    assert_eq!(fin["kind"], "APPROVED", "{fin}");
    let ran: Vec<&String> = transcript
        .iter()
        .filter(|l| l.starts_with("server: RAN: "))
        .collect();
    assert_eq!(ran.len(), 2, "{text}");
    assert!(ran[0].contains("store credit"), "{text}");
    assert!(ran[1].contains("Refund 30.00 USD to Chen"), "{text}");
    assert!(text.contains("already used once; nothing ran"), "{text}");
    // The terminal showed the plan before the human typed: the tool, the
    // server's summary, what it uses, and the phrase to type.
    let (t, _) = &*term.lock().unwrap();
    let raw = String::from_utf8_lossy(&t.raw()[at..]).into_owned();
    for needle in [
        "JOB         refund",
        "Refund 30.00 USD to Chen for order A-1001",
        "30.00 USD",
        "to approve  type \"A-1001\"",
    ] {
        assert!(raw.contains(needle), "{needle:?} on the terminal:\n{raw}");
    }
    eprintln!(
        "the MCP loop through the daemon took {:?}",
        started.elapsed()
    );
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

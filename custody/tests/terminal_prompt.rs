//! The headless daemon's terminal prompt under attack, on a real pty.
//!
//! Each test runs the real `parley-custodyd` in its own tmux server (a real
//! terminal, 200×50), inside a private D-Bus session with a real, unlocked
//! gnome-keyring, and talks to it as an agent would: a real client on its
//! socket. What the daemon wrote to the terminal is read twice: as raw bytes
//! (`tmux pipe-pane`, which shows ESC, CR, C1 and bidi characters a screen
//! dump would hide) and as the screen (`tmux capture-pane`). Keys are typed
//! with `tmux send-keys`. Needs tmux, dbus-run-session, dbus-send and
//! gnome-keyring-daemon (scripts/setup.sh installs them).

mod support;

use parley_core::proposal::proposal_hash;
use parley_core::SecretKey;
use parley_custody::terminal::ANSWER_DELAY;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::terminal::{connect, Term, PROMPT};
use zeroize::Zeroizing;

fn count(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len()).filter(|w| *w == needle).count()
}

fn agent() -> String {
    SecretKey::from_seed(&Zeroizing::new([7u8; 32]))
        .public()
        .to_string()
}

fn effects(n: usize) -> Vec<Value> {
    let mut e = vec![json!({"op": "charge", "target": "card ••42", "detail": "999.00 USD"})];
    for i in 1..n {
        e.push(json!({"op": "send", "target": format!("recipient {i}@example.org"), "detail": "newsletter"}));
    }
    e
}

/// What a proposal says.
struct Offer<'a> {
    summary: &'a str,
    amount: i64,
    risk: &'a str,
    effects: Vec<Value>,
    service: &'a str,
    capability: &'a str,
}

impl Default for Offer<'_> {
    fn default() -> Self {
        Offer {
            summary: "Order 3 meals",
            amount: 100,
            risk: "low",
            effects: vec![json!({"op": "charge", "target": "card ••42", "detail": "paid"})],
            service: "shop.example",
            capability: "shop.order",
        }
    }
}

/// A consent request for a well-formed proposal.
fn consent(t: &Term, id: &str, o: Offer) -> Value {
    let Offer {
        summary,
        amount,
        risk,
        effects,
        service,
        capability,
    } = o;
    let expires = parley_custody::engine::unix_now() + 1800;
    let mut p = json!({
        "id": format!("p_{id}"), "capability": capability, "summary": summary,
        "effects": effects, "cost": {"amount": amount, "currency": "USD"}, "risk": risk,
        "undo": {"window": 1800}, "expires": expires
    });
    p["hash"] = json!(proposal_hash(&p).unwrap());
    json!({"custody": 1, "id": id, "op": "consent", "service": service, "agent": agent(),
           "proposal": p,
           "consent": {"proposal": p["id"], "hash": p["hash"], "service": service,
                       "capability": capability, "principal": t.principal,
                       "summary": summary, "expires": expires}})
}

fn shop(t: &Term, id: &str, summary: &str, amount: i64) -> Value {
    consent(
        t,
        id,
        Offer {
            summary,
            amount,
            ..Offer::default()
        },
    )
}

/// Bytes a terminal acts on: ESC, C1 (as UTF-8), a CR that is not the
/// terminal's own CR before LF, bidi controls, tag characters.
fn terminal_controls(raw: &[u8]) -> Vec<String> {
    let mut found = Vec::new();
    for (i, &b) in raw.iter().enumerate() {
        if b == 0x1b {
            found.push(format!("ESC at {i}"));
        }
        if b == b'\r' && raw.get(i + 1) != Some(&b'\n') {
            found.push(format!("bare CR at {i}"));
        }
        if b == 0xc2 && raw.get(i + 1).is_some_and(|n| (0x80..=0x9f).contains(n)) {
            found.push(format!("C1 at {i}"));
        }
    }
    let text = String::from_utf8_lossy(raw);
    for c in text.chars() {
        if matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200b}'..='\u{200f}' | '\u{e0000}'..='\u{e007f}' | '\u{2028}' | '\u{2029}' | '\u{feff}')
        {
            found.push(format!("U+{:04X}", c as u32));
        }
    }
    found
}

#[test]
fn forged_prompt_through_a_rejection_never_reaches_the_terminal() {
    let t = Term::start();
    let real = t.submit(consent(
        &t,
        "real",
        Offer {
            summary: "Order the real thing",
            amount: 99_900,
            effects: effects(1),
            ..Offer::default()
        },
    ));
    real.pending();
    let at = t.wait_raw(PROMPT, 0);
    // A request custody rejects (its hash is not the proposal's), whose hash
    // erases the prompt and draws a cheap review with a prompt of its own.
    let forged = "\r\u{1b}[2K\u{1b}[1A\u{9b}2K\u{202e}\n──── Parley Custody: a request needs your decision ────\nCOST        1.00 USD\napprove? [y/N] ";
    let mut bad = shop(&t, "forged", "Order 3 meals", 100);
    bad["proposal"]["hash"] = json!(forged);
    bad["consent"]["hash"] = json!(forged);
    let r = t.request(bad);
    assert_eq!(r["kind"], "REJECTED", "{r}");
    // And one whose hash is 900 KB.
    let mut huge = shop(&t, "huge", "Order 3 meals", 100);
    let big = format!("\r{}", "f".repeat(900_405));
    // (In the consent only: twice would be over the 1 MiB frame limit.)
    huge["consent"]["hash"] = json!(big);
    let r = t.request(huge);
    assert_eq!(r["kind"], "REJECTED", "{r}");
    // The human answers; everything written between the prompt and the
    // outcome is the echo of that answer and the outcome.
    t.keys(&["n", "Enter"]);
    assert_eq!(real.wait()["kind"], "DENIED");
    let end = t.wait_raw("→ denied", at);
    let raw = t.raw();
    let between = String::from_utf8_lossy(&raw[at..end]);
    assert_eq!(
        between, "n\r\n→ denied",
        "nothing but the answer reached the terminal"
    );
    assert_eq!(terminal_controls(&raw), Vec::<String>::new());
    assert!(!t.raw_text().contains("1.00 USD\r\n"), "no forged cost");
    assert_eq!(count(&raw, PROMPT.as_bytes()), 1, "one prompt only");
    assert!(raw.len() < 20_000, "{} bytes on the terminal", raw.len());
    let screen = t.screen();
    assert!(screen.contains("COST        999.00 USD"), "{screen}");
    // The rejections are in the log file, made visible and cut by size.
    let log = t.log();
    assert!(log.contains("request rejected"), "{log}");
    assert!(log.contains("\\u{1b}[2K"), "{log}");
    assert!(
        log.contains("…(900"),
        "the 900 KB hash is cut in the log:\n{log}"
    );
    assert!(log.len() < 20_000, "{} bytes of log", log.len());
    assert_eq!(terminal_controls(log.as_bytes()), Vec::<String>::new());
    let mode = std::fs::metadata(t.path("data/custodyd.log"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    assert!(
        t.raw_text().contains("custodyd.log"),
        "the terminal says where the log is"
    );
}

#[test]
fn request_queued_behind_two_others_is_shown_in_order() {
    let t = Term::start();
    let hold = t.submit(shop(&t, "hold", "order HOLD", 100));
    hold.pending();
    let at = t.wait_raw(PROMPT, 0);
    let mut queued = Vec::new();
    for name in ["A", "B", "C"] {
        // Each for another capability: not alike, so each is asked on its
        // own (alike requests are offered "deny all", tested below).
        let (summary, capability) = (format!("order {name}"), format!("shop.order-{name}"));
        let a = t.submit(consent(
            &t,
            name,
            Offer {
                summary: &summary,
                amount: 200,
                capability: &capability,
                ..Offer::default()
            },
        ));
        a.pending();
        queued.push(a);
    }
    // Cancelled meanwhile: its withdrawal must not take anyone's place.
    let gone = t.submit(shop(&t, "gone", "order GONE", 300));
    gone.pending();
    let c = t.request(json!({"custody": 1, "id": "x", "op": "cancel", "request": "gone"}));
    assert_eq!(c["kind"], "CANCELLED", "{c}");
    assert_eq!(gone.wait()["kind"], "CANCELLED");
    t.keys(&["n", "Enter"]);
    assert_eq!(hold.wait()["kind"], "DENIED");
    let mut from = at;
    for (i, (name, a)) in ["A", "B", "C"].iter().zip(queued).enumerate() {
        let shown = t.wait_raw(&format!("\"order {name}\""), from);
        let prompt = t.wait_raw(PROMPT, shown);
        let review = String::from_utf8_lossy(&t.raw()[from..prompt]).into_owned();
        let waiting = 3 - i;
        assert!(
            review.contains(&format!("request 1 of {waiting} waiting")),
            "request {name} says how many wait:\n{review}"
        );
        assert!(!review.contains("order GONE"), "{review}");
        t.keys(&["n", "Enter"]);
        assert_eq!(a.wait()["kind"], "DENIED", "request {name}");
        from = prompt;
    }
    assert!(!t.raw_text().contains("order GONE"));
}

/// A `y` sent the moment the prompt appears (typed ahead, pasted) is thrown
/// away and the terminal says so; the request still waits, and a `y` once
/// the prompt has been on screen for [`ANSWER_DELAY`] approves it.
#[test]
fn a_yes_sent_as_the_prompt_appears_does_not_approve() {
    let t = Term::start();
    let a = t.submit(shop(&t, "A", "order A", 100));
    a.pending();
    let at = t.wait_raw(PROMPT, 0);
    let shown = Instant::now();
    t.keys(&["y", "Enter"]);
    let said = t.wait_raw("came less than 1.5 s after the prompt appeared", at);
    assert!(
        shown.elapsed() < ANSWER_DELAY,
        "the test was too slow to send its yes within the delay"
    );
    let again = t.wait_raw(PROMPT, said);
    // Not approved: no final reply while the request waits.
    assert!(
        a.rx.recv_timeout(Duration::from_millis(200)).is_err(),
        "the early yes answered the request"
    );
    // Now the prompt has been up long enough: a yes counts.
    std::thread::sleep(ANSWER_DELAY.saturating_sub(shown.elapsed()) + Duration::from_millis(100));
    t.keys(&["y", "Enter"]);
    let r = a.wait();
    assert_eq!(r["kind"], "APPROVED", "{r}");
    assert_eq!(
        count(&t.raw()[again..], b"ignored:"),
        0,
        "the later yes was not ignored"
    );
}

#[test]
fn typed_ahead_yes_does_not_answer_the_next_request() {
    let t = Term::start();
    let a = t.submit(shop(&t, "A", "order A", 100));
    a.pending();
    let at = t.wait_raw(PROMPT, 0);
    let b = t.submit(shop(&t, "B", "order B", 200));
    b.pending();
    // Two yeses in a row: the first for A (once the prompt has been on
    // screen long enough to count), the second typed ahead.
    std::thread::sleep(ANSWER_DELAY);
    t.keys(&["y", "Enter", "y", "Enter"]);
    let approved = a.wait();
    assert_eq!(approved["kind"], "APPROVED", "{approved}");
    let shown = t.wait_raw("\"order B\"", at);
    t.wait_raw(PROMPT, shown);
    // B waits for its own answer: the typed-ahead `y` was thrown away.
    t.keys(&["n", "Enter"]);
    let r = b.wait();
    assert_eq!(r["kind"], "DENIED", "the typed-ahead yes answered B: {r}");
}

#[test]
fn hostile_characters_in_every_field_are_escaped_on_the_terminal() {
    let t = Term::start();
    let evil = "\u{1b}[2J\r\u{9b}1A\u{202e}\u{2066}\u{200b}\u{e0041}\u{2028}";
    let effects = vec![
        json!({"op": "charge", "target": format!("card{evil}42"), "detail": format!("1 USD{evil}")}),
        json!({"op": "send", "target": format!("to{evil}"), "detail": format!("x{evil}")}),
    ];
    // The request comes from a program whose path is hostile too.
    let exe = t.path(&format!("agent{evil}bin"));
    std::fs::copy(std::env::current_exe().unwrap(), &exe).unwrap();
    let req = consent(
        &t,
        "evil",
        Offer {
            summary: &format!("Free{evil}!"),
            effects,
            service: &format!("shop{evil}.example"),
            capability: &format!("shop.order{evil}"),
            ..Offer::default()
        },
    );
    let file = t.path("request.json");
    std::fs::write(&file, req.to_string()).unwrap();
    let mut client = Command::new(&exe)
        .args(["hostile_client_helper", "--exact", "--nocapture"])
        .env("PARLEY_TEST_CLIENT_REQUEST", &file)
        .env("PARLEY_TEST_CLIENT_SOCKET", t.sock())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let at = t.wait_raw(PROMPT, 0);
    let review = t.raw()[..at].to_vec();
    let text = String::from_utf8_lossy(&review);
    assert!(
        text.contains(
            "card\\u{1b}[2J\\u{d}\\u{9b}1A\\u{202e}\\u{2066}\\u{200b}\\u{e0041}\\u{2028}42"
        ),
        "{text}"
    );
    for field in [
        "shop\\u{1b}",
        "shop.order\\u{1b}",
        "Free\\u{1b}",
        "to\\u{1b}",
        "x\\u{1b}",
        "agent\\u{1b}",
    ] {
        assert!(text.contains(field), "{field} shown escaped:\n{text}");
    }
    assert_eq!(terminal_controls(&review), Vec::<String>::new());
    t.keys(&["n", "Enter"]);
    let end = t.wait_raw("→ denied", at);
    assert!(client.wait().unwrap().success());
    let _ = client.stdout.take();

    // A grant whose caveats, reason and label are hostile.
    let g = t.submit(json!({"custody": 1, "id": "g", "op": "grant", "agent": agent(),
        "label": format!("helper{evil}"), "reason": format!("because{evil}"),
        "caveats": [{"svc": [format!("svc{evil}.example")]}, {"can": [format!("can{evil}")]},
                    {"verbs": ["ASK", "COMMIT"]}, {"exp": parley_custody::engine::unix_now() + 3600}]}));
    g.pending();
    let at2 = t.wait_raw(PROMPT, end);
    let review = t.raw()[end..at2].to_vec();
    let text = String::from_utf8_lossy(&review);
    assert!(text.contains("svc\\u{1b}[2J"), "{text}");
    assert!(text.contains("can\\u{1b}[2J"), "{text}");
    assert!(text.contains("because\\u{1b}[2J"), "{text}");
    assert_eq!(terminal_controls(&review), Vec::<String>::new());
    t.keys(&["n", "Enter"]);
    assert_eq!(g.wait()["kind"], "DENIED");
    assert_eq!(terminal_controls(&t.raw()), Vec::<String>::new());
}

/// Not a test by itself: the agent program of
/// `hostile_characters_in_every_field_are_escaped_on_the_terminal`, run from a
/// copy of this test binary at a hostile path.
#[test]
fn hostile_client_helper() {
    let (Some(file), Some(sock)) = (
        std::env::var_os("PARLEY_TEST_CLIENT_REQUEST"),
        std::env::var_os("PARLEY_TEST_CLIENT_SOCKET"),
    ) else {
        return;
    };
    let req = std::fs::read_to_string(file).unwrap();
    let mut s = connect(Path::new(&sock));
    s.write_all(format!("{}\n", req.trim()).as_bytes()).unwrap();
    let mut lines = BufReader::new(s);
    loop {
        let mut line = String::new();
        if lines.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["kind"] != "PENDING" {
            println!("{v}");
            return;
        }
    }
}

#[test]
fn a_flood_of_rejections_prints_nothing_on_the_terminal() {
    let t = Term::start();
    let real = t.submit(shop(&t, "real", "order REAL", 4_200));
    real.pending();
    let at = t.wait_raw(PROMPT, 0);
    let mut s = connect(&t.sock());
    let mut lines = BufReader::new(s.try_clone().unwrap());
    let n = 300;
    let mut kinds = std::collections::BTreeMap::<String, usize>::new();
    for i in 0..n {
        let mut bad = shop(&t, &format!("f{i}"), "Order 3 meals", 100);
        let h = format!("\r\u{1b}[2K{i}\u{202e}\nCOST 1.00 USD\napprove? [y/N] ");
        bad["proposal"]["hash"] = json!(h);
        bad["consent"]["hash"] = json!(h);
        s.write_all(format!("{bad}\n").as_bytes()).unwrap();
        let mut line = String::new();
        lines.read_line(&mut line).unwrap();
        let v: Value = serde_json::from_str(&line).unwrap();
        *kinds
            .entry(format!(
                "{}{}",
                v["kind"].as_str().unwrap_or("?"),
                v["code"]
                    .as_str()
                    .map(|c| format!(" {c}"))
                    .unwrap_or_default()
            ))
            .or_default() += 1;
    }
    assert!(
        kinds
            .keys()
            .all(|k| k.starts_with("REJECTED") || k.starts_with("ERROR")),
        "{kinds:?}"
    );
    assert_eq!(kinds.values().sum::<usize>(), n);
    t.keys(&["n", "Enter"]);
    assert_eq!(real.wait()["kind"], "DENIED");
    let end = t.wait_raw("→ denied", at);
    let raw = t.raw();
    assert_eq!(
        String::from_utf8_lossy(&raw[at..end]),
        "n\r\n→ denied",
        "the flood wrote to the terminal"
    );
    assert_eq!(terminal_controls(&raw), Vec::<String>::new());
    let screen = t.screen();
    assert!(
        screen.contains("\"order REAL\""),
        "the review is still on screen:\n{screen}"
    );
    // Every one of them is in the log file, one line each.
    let log = t.log();
    let logged = log
        .lines()
        .filter(|l| l.contains("request rejected") || l.contains("request refused"))
        .count();
    assert!(logged >= n, "{logged} of {n} logged:\n{kinds:?}");
    assert_eq!(terminal_controls(log.as_bytes()), Vec::<String>::new());
}

#[test]
fn a_long_review_repeats_its_decisive_facts_above_the_prompt() {
    let t = Term::start();
    let mut req = consent(
        &t,
        "long",
        Offer {
            summary: "Send the newsletter",
            amount: 99_900,
            risk: "high",
            effects: effects(500),
            ..Offer::default()
        },
    );
    req["proposal"]["undo"] = Value::Null;
    let hash = proposal_hash(&{
        let mut p = req["proposal"].clone();
        p.as_object_mut().unwrap().remove("hash");
        p
    })
    .unwrap();
    req["proposal"]["hash"] = json!(hash);
    req["consent"]["hash"] = json!(hash);
    let a = t.submit(req);
    a.pending();
    let at = t.wait_raw(PROMPT, 0);
    let review = String::from_utf8_lossy(&t.raw()[..at]).into_owned();
    assert!(
        review.contains("effects (500):"),
        "the count of effects is shown"
    );
    assert!(review.contains("recipient 499@example.org"));
    // What is on screen now: the end of the effects, then the facts, then the prompt.
    let screen = t.screen();
    assert!(
        !screen.contains("$ charge card ••42"),
        "the first effect scrolled away (else this test proves nothing):\n{screen}"
    );
    let facts = screen
        .rsplit_once("──────── decide")
        .map(|(_, f)| f)
        .unwrap_or_else(|| panic!("the decisive facts are on screen:\n{screen}"));
    let short = &t.principal[..18];
    for fact in [
        "request 1 of 1 waiting",
        "service     shop.example",
        "COST        999.00 USD",
        "risk        high",
        "undo        IRREVERSIBLE",
        "effects     500",
        // The label the daemon gave the key it created, then the key.
        &format!("signed by   \"principal\" {short}…"),
        "approve? [y/N]",
    ] {
        assert!(
            facts.contains(fact),
            "{fact:?} right above the prompt:\n{facts}"
        );
    }
    t.keys(&["n", "Enter"]);
    assert_eq!(a.wait()["kind"], "DENIED");
}

#[test]
fn a_yea_consent_shows_every_measure_and_authorizes_exactly_that_commit() {
    use parley_core::caveat::{CommitFacts, RequestContext};
    use parley_core::grant::{authorize, Decision};
    let t = Term::start();
    let uses =
        json!({"spend": {"amount": 2287, "scale": 2, "unit": "USD"}, "emails": {"amount": 3}});
    let mut req = shop(&t, "y", "Order 3 items", 0);
    let p = req["proposal"].as_object_mut().unwrap();
    p.remove("cost");
    p.remove("hash");
    p.insert("uses".into(), uses.clone());
    p.insert(
        "effects".into(),
        json!([{"op": "create", "target": "order"}, {"op": "send", "target": "ana@example.com", "detail": "receipt"}]),
    );
    let hash = proposal_hash(&req["proposal"]).unwrap();
    req["proposal"]["hash"] = json!(hash);
    req["consent"]["hash"] = json!(hash);
    req["dialect"] = json!("yea1");
    let a = t.submit(req);
    a.pending();
    let at = t.wait_raw(PROMPT, 0);
    let review = String::from_utf8_lossy(&t.raw()[..at]).into_owned();
    for line in ["USES        3 emails", "22.87 USD"] {
        assert!(review.contains(line), "{line:?} in the review:\n{review}");
    }
    assert!(!review.contains("COST"), "{review}");
    std::thread::sleep(ANSWER_DELAY);
    t.keys(&["y", "Enter"]);
    let fin = a.wait();
    assert_eq!(fin["kind"], "APPROVED", "{fin}");
    let token = fin["grant"].as_str().unwrap();
    let me: parley_core::PublicKey = agent().parse().unwrap();
    let trust = [t.principal.parse().unwrap()];
    let ctx = |hash: &str| RequestContext {
        service: "shop.example".into(),
        verb: "COMMIT".into(),
        capability: "shop.order".into(),
        now: parley_custody::engine::unix_now(),
        proposal: Some(CommitFacts {
            hash: hash.into(),
            uses: Some(uses.clone()),
            risk: "low".into(),
            ..Default::default()
        }),
        dialect: parley_core::Dialect::YeaV1,
        ..Default::default()
    };
    assert_eq!(authorize(token, &trust, &me, &ctx(&hash)), Decision::Ok);
    assert_eq!(
        authorize(token, &trust, &me, &ctx("another")).code(),
        "forbidden"
    );
}

#[test]
fn deny_all_at_the_prompt_denies_the_alike_requests_and_nothing_else() {
    let t = Term::start();
    let first = t.submit(shop(&t, "a1", "order 1", 100));
    first.pending();
    let at = t.wait_raw(PROMPT, 0);
    let alike: Vec<_> = ["a2", "a3"]
        .iter()
        .map(|id| {
            let a = t.submit(shop(&t, id, &format!("order {id}"), 200));
            a.pending();
            a
        })
        .collect();
    let other = t.submit(consent(
        &t,
        "cal",
        Offer {
            service: "cal.example.com",
            capability: "cal.book",
            summary: "Book a table",
            ..Offer::default()
        },
    ));
    other.pending();
    // The first prompt was printed before the others arrived: deny it, then
    // the next one (a2) names its alike request and offers "deny all".
    t.keys(&["n", "Enter"]);
    assert_eq!(first.wait()["kind"], "DENIED");
    let shown = t.wait_raw("\"order a2\"", at);
    let prompt = t.wait_raw("approve? [y/N/deny all] ", shown);
    let review = String::from_utf8_lossy(&t.raw()[shown..prompt]).into_owned();
    assert!(
        review.contains("1 more request like this one from this agent is waiting"),
        "{review}"
    );
    t.keys(&["deny all", "Enter"]);
    for a in alike {
        let r = a.wait();
        assert_eq!(r["kind"], "DENIED", "{r}");
        assert!(r["reason"].as_str().unwrap().contains("alike"), "{r}");
    }
    // The calendar request is not alike: still asked, on its own.
    let cal = t.wait_raw("cal.example.com", prompt);
    t.wait_raw(PROMPT, cal);
    t.keys(&["n", "Enter"]);
    assert_eq!(other.wait()["kind"], "DENIED");
}

/// A YEA job code at the daemon's prompt: the review names the tool, its
/// input (escaped), the server and the phrase; `y` alone signs nothing, a
/// wrong phrase is asked again, and the phrase signs the consent for the
/// server's key that the server accepts.
#[test]
fn a_job_code_is_approved_at_the_prompt_only_by_typing_its_phrase() {
    use parley_core::job;
    let t = Term::start();
    let principal: parley_core::PublicKey = t.principal.parse().unwrap();
    let server = SecretKey::from_seed(&Zeroizing::new([5u8; 32])).public();
    let input = json!({"charge": "ch_1", "who": "Chen \u{202e}evil"});
    let plan = json!({"summary": "Refund 30.00 USD to Chen",
        "effects": [{"op": "create", "target": "refund", "detail": "30.00 USD to card ••42"}],
        "uses": {"spend": {"amount": 3000, "scale": 2, "unit": "USD"}}, "risk": "low", "undoWindow": 60});
    let plan = job::plan_of("refund", None, &input, &plan).unwrap();
    let request = job::consent_request(
        &plan,
        &server,
        &principal,
        parley_custody::engine::unix_now(),
    );
    let code = job::encode_code(&request, &plan, "ch_1").unwrap();
    let a = t.submit(
        json!({"custody": 1, "id": "job", "op": "approve_code", "code": code,
        "agent": server.to_string(), "dialect": "yea1"}),
    );
    a.pending();
    let at = t.wait_raw(PROMPT, 0);
    let review = String::from_utf8_lossy(&t.raw()[..at]).into_owned();
    for line in [
        "JOB         refund",
        "to approve  type \"ch_1\"",
        "\\u{202e}",
        "the server says",
    ] {
        assert!(review.contains(line), "{line:?} in the review:\n{review}");
    }
    assert!(!review.contains('\u{202e}'), "{review}");
    std::thread::sleep(ANSWER_DELAY);
    t.keys(&["y", "Enter"]);
    let asked = t.wait_raw("Type \"ch_1\" to approve this plan: ", at);
    t.keys(&["approve", "Enter"]);
    let again = t.wait_raw("That is not the phrase.", asked);
    t.wait_raw("to approve this plan: ", again);
    t.keys(&[" CH_1", "Enter"]);
    let fin = a.wait();
    assert_eq!(fin["kind"], "APPROVED", "{fin}");
    let token = fin["grant"].as_str().unwrap();
    job::check_job_consent(
        token,
        &plan.hash,
        "refund",
        &server,
        &principal,
        parley_custody::engine::unix_now(),
    )
    .expect("the server accepts it");
}

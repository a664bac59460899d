//! The desktop service's UI channel, driven as the keyless UI process
//! drives it: the real `parley-custodyd --approver desktop` inside a private
//! D-Bus session with a real, unlocked gnome-keyring, a real agent on the
//! custody socket, and UIs that are real clients of the UI socket (one of
//! them a separate process killed with SIGKILL mid-review).
//!
//! What these stop: a UI that dies mid-review getting anything signed or
//! losing the request; a window deciding what is not its own; an approval
//! that came too soon, from a window in the back, or without a pointer
//! gesture; a line that is not a message of the channel keeping its
//! connection.

mod support;

use parley_core::SecretKey;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::desktop::{Door, Service, Ui, STEP_UP_NEVER, WAIT};
use support::line_agent::Agent;
use support::requests::meal_order;
use support::{in_session, scratch, Session};
use zeroize::Zeroizing;

/// The service for these tests: OS authentication is tested with a real
/// polkitd elsewhere (stepup e2e, os_prompt.rs); here the channel's own
/// rules are what is tested.
fn start() -> Service {
    Service::start(&scratch(), Some(STEP_UP_NEVER), &[])
}

/// Agent 7's meal order `id` of 58.30 USD at shop.example, waiting.
fn ask(svc: &Service, principal: &str, id: &str) -> Agent {
    Agent::ask(
        &svc.sock,
        &meal_order(7, id, "shop.example", 5830, principal),
    )
}

fn principal(ui: &mut Ui) -> String {
    let key = ui
        .call("main", "key_create", json!({"label": "Ana"}))
        .expect("create a key from the home window");
    key["public"].as_str().unwrap().to_string()
}

/// The service, its principal key created from a home window that is
/// closed again (the UI it ran in is gone).
fn start_with_key() -> (Service, String) {
    let svc = start();
    let mut home = svc.ui();
    let principal = principal(&mut home);
    drop(home);
    (svc, principal)
}

/// Denies q1 from its own window (denying signs nothing, at once); the
/// agent is told.
fn deny_q1(ui: &mut Ui, agent: &Agent) {
    let denied = ui
        .call(
            "review-q1",
            "review_decide",
            json!({"id": "q1", "approve": false, "confirmed": false}),
        )
        .unwrap();
    assert_eq!(denied["outcome"], "denied");
    assert_eq!(agent.final_within(WAIT).unwrap()["kind"], "DENIED");
}

fn first_pending(ui: &mut Ui) -> String {
    let list = ui.call("main", "pending_list", json!({})).unwrap();
    list[0]["id"]
        .as_str()
        .expect("a pending request")
        .to_string()
}

#[test]
fn a_ui_killed_mid_review_signs_nothing_and_the_next_ui_picks_the_request_up() {
    if !in_session(
        "a_ui_killed_mid_review_signs_nothing_and_the_next_ui_picks_the_request_up",
        Session::Keyring,
    ) {
        return;
    }
    let (svc, principal) = start_with_key();
    let agent = ask(&svc, &principal, "c1");

    // No UI connected: the service starts one for the review.
    let mut dying = svc.next_ui();
    assert_eq!(dying.opened_with(), "review-q1");
    dying.note("review-q1", "shown");
    let review = dying
        .call("review-q1", "review_get", json!({"id": "q1"}))
        .expect("the review");
    assert_eq!(review["review"]["service"], "shop.example");
    dying.kill();

    assert_eq!(
        agent.final_within(Duration::from_secs(3)),
        None,
        "nothing was decided"
    );
    let mut next = svc.ui();
    assert_eq!(first_pending(&mut next), "q1", "the request still waits");
    let review = next
        .call("review-q1", "review_get", json!({"id": "q1"}))
        .unwrap();
    assert_eq!(review["review"]["service"], "shop.example");
    // The new UI's window starts its own arming: the dead UI's window counts for nothing.
    next.note("review-q1", "shown");
    let early = next.call(
        "review-q1",
        "review_decide",
        json!({"id": "q1", "approve": true, "confirmed": false, "gesture": "click"}),
    );
    assert!(
        early.unwrap_err().contains("too soon"),
        "an approval right away is refused"
    );
    std::thread::sleep(Duration::from_millis(1600));
    let done = next
        .call(
            "review-q1",
            "review_decide",
            json!({"id": "q1", "approve": true, "confirmed": false, "gesture": "click"}),
        )
        .expect("approved after the delay");
    assert_eq!(done["outcome"], "approved");
    let fin = agent.final_within(WAIT).expect("the agent's answer");
    assert_eq!(fin["kind"], "APPROVED", "{fin}");
}

#[test]
fn a_window_decides_only_its_own_request_in_front_after_the_delay_with_the_pointer() {
    if !in_session(
        "a_window_decides_only_its_own_request_in_front_after_the_delay_with_the_pointer",
        Session::Keyring,
    ) {
        return;
    }
    let svc = start();
    let mut ui = svc.ui();
    let principal = principal(&mut ui);
    let agent = ask(&svc, &principal, "c1");
    let id = first_pending(&mut ui);
    assert_eq!(id, "q1");
    ui.note("review-q1", "shown");
    ui.note("review-q2", "shown");
    std::thread::sleep(Duration::from_millis(1600));
    let yes = |gesture: Value| json!({"id": "q1", "approve": true, "confirmed": false, "gesture": gesture});
    for (window, args, why) in [
        ("main", yes(json!("click")), "may not do that"),
        // One window per request: a separate grant form window is none of ours.
        ("grant-q1", yes(json!("click")), "not one of"),
        ("settings", yes(json!("click")), "not one of"),
        ("review-q2", yes(json!("click")), "its own request"),
        ("review-q1", yes(Value::Null), "keyboard alone"),
        ("review-q1", yes(json!("terminal")), "with the pointer"),
        ("review-q1x", yes(json!("click")), "not one of"),
    ] {
        let e = ui.call(window, "review_decide", args).unwrap_err();
        assert!(e.contains(why), "{window}: {e}");
        // The window table refuses as `not_permitted`; the gesture rules as `refused`.
        let by_the_table = ["may not do that", "not one of", "its own request"].contains(&why);
        assert_eq!(
            e.starts_with("not_permitted: "),
            by_the_table,
            "{window}: {e}"
        );
    }
    // The main window's own grant form answers no waiting agent.
    let e = ui
        .call("main", "grant_issue", json!({"request": "q1"}))
        .unwrap_err();
    assert!(e.contains("its own grant form"), "{e}");
    // A request's window shows its grant form too, for its own request only.
    let e = ui
        .call("review-q2", "grant_issue", json!({"request": "q1"}))
        .unwrap_err();
    assert!(
        e.starts_with("not_permitted: ") && e.contains("that request only"),
        "{e}"
    );
    // In the back, it cannot approve; back in front, it waits the delay again.
    ui.note("review-q1", "blurred");
    let e = ui
        .call("review-q1", "review_decide", yes(json!("click")))
        .unwrap_err();
    assert!(e.contains("in front and focused"), "{e}");
    ui.note("review-q1", "focused");
    let e = ui
        .call("review-q1", "review_decide", yes(json!("click")))
        .unwrap_err();
    assert!(e.contains("too soon"), "{e}");
    assert_eq!(
        agent.final_within(Duration::from_millis(500)),
        None,
        "nothing was decided"
    );
    // Its own window denies at once (denying signs nothing).
    deny_q1(&mut ui, &agent);
    ui.event(|v| v["event"] == "pending-withdrawn" && v["id"] == "q1");
}

#[test]
fn a_line_that_is_not_a_message_of_the_channel_closes_only_its_connection() {
    if !in_session(
        "a_line_that_is_not_a_message_of_the_channel_closes_only_its_connection",
        Session::Keyring,
    ) {
        return;
    }
    let svc = start();
    // No hello on the path: refused with a reason.
    let mut raw = UnixStream::connect(&svc.ui).unwrap();
    raw.write_all(b"{\"custody\":1,\"op\":\"hello\"}\n")
        .unwrap();
    let mut answer = String::new();
    BufReader::new(raw.try_clone().unwrap())
        .read_line(&mut answer)
        .unwrap();
    assert!(answer.contains("refused"), "{answer}");
    // Too long a line from the UI: its connection is closed.
    let mut big = svc.ui();
    let huge = format!(
        "{{\"window\":\"main\",\"note\":\"{}\"}}\n",
        "x".repeat(5 * 1024 * 1024)
    );
    let _ = big.out.write_all(huge.as_bytes());
    let closed = big.event(|v| v.get("closed").is_some());
    assert_eq!(closed["closed"], true);
    // An unknown message: closed too.
    let mut odd = svc.ui();
    odd.send(json!({"window": "main", "please": "sign"}));
    odd.event(|v| v.get("closed").is_some());
    // The service still serves a well-behaved UI.
    let mut ok = svc.ui();
    assert_eq!(
        ok.call("main", "status", json!({})).unwrap()["running"],
        true
    );
    let log = svc.log();
    assert!(
        log.contains("closed a connection"),
        "every rejection is logged:\n{log}"
    );
}

#[test]
fn six_idle_connections_and_six_without_hello_do_not_keep_the_real_ui_out() {
    if !in_session(
        "six_idle_connections_and_six_without_hello_do_not_keep_the_real_ui_out",
        Session::Keyring,
    ) {
        return;
    }
    let (svc, principal) = start_with_key();
    // Six that say hello and then nothing, six that never say hello: more
    // than the door's limit (the old channel let four keep every UI out).
    let mut idle: Vec<Door> = (0..6).map(|_| Door::connect(&svc.ui)).collect();
    let mut silent: Vec<Door> = (0..6).map(|_| Door::raw(&svc.ui)).collect();
    let t0 = Instant::now();
    let agent = ask(&svc, &principal, "c1");
    // The request's window still appears: the service starts its UI, which
    // gets its channel at birth, however full the path is.
    let mut ui = svc.next_ui();
    assert_eq!(ui.opened_with(), "review-q1");
    ui.note("review-q1", "shown");
    let review = ui
        .call("review-q1", "review_get", json!({"id": "q1"}))
        .expect("the UI reads its review");
    assert_eq!(review["review"]["service"], "shop.example");
    // And the crowd is gone: no hello in 2 s, idle 5 s after it. (Past the
    // door's limit, a connection is told "busy" at once and closed.)
    for d in &mut silent {
        let seen = d.until_closed(Duration::from_secs(10));
        assert!(seen.iter().all(|v| v["code"] == "busy"), "{seen:?}");
    }
    for d in &mut idle {
        assert_eq!(d.until_closed(Duration::from_secs(10)), Vec::<Value>::new());
    }
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    // The UI kept its connection all along; the agent waits for the human.
    assert_eq!(ui.call("main", "status", json!({})).unwrap()["pending"], 1);
    assert_eq!(agent.final_within(Duration::from_millis(200)), None);
}

#[test]
fn a_raw_client_on_the_path_cannot_take_a_queued_review_window_nor_decide() {
    if !in_session(
        "a_raw_client_on_the_path_cannot_take_a_queued_review_window_nor_decide",
        Session::Keyring,
    ) {
        return;
    }
    let (svc, principal) = start_with_key();
    // A client on the path, hello said as the UI says it, before the request
    // arrives: under the old channel it was handed the queued review.
    let mut raw = Door::connect(&svc.ui);
    let agent = ask(&svc, &principal, "c1");
    let mut ui = svc.next_ui();
    assert_eq!(ui.opened_with(), "review-q1", "the review went to the UI");
    ui.note("review-q1", "shown");
    // The raw client asks as a review window would: refused, and closed.
    raw.send(
        json!({"id": 7, "window": "review-q1", "call": "review_decide",
        "args": {"id": "q1", "approve": false, "confirmed": false}}),
    );
    let seen = raw.until_closed(Duration::from_secs(10));
    assert_eq!(seen.len(), 1, "one answer, no window: {seen:?}");
    assert_eq!(seen[0]["id"], 7);
    assert_eq!(seen[0]["err"]["code"], "not_permitted", "{seen:?}");
    assert!(
        seen[0]["err"]["message"]
            .as_str()
            .unwrap()
            .contains("only the window process custody started"),
        "{seen:?}"
    );
    // Every call but "show the main window" is refused the same way.
    for (window, call, args) in [
        ("review-q1", "review_get", json!({"id": "q1"})),
        ("main", "pending_list", json!({})),
        ("main", "settings_save", json!({"settings": {}})),
        ("main", "open_window", json!({"kind": "review", "id": "q1"})),
        (
            "main",
            "agent_label_set",
            json!({"agent": "x", "label": "y"}),
        ),
    ] {
        let mut d = Door::connect(&svc.ui);
        d.send(json!({"id": 1, "window": window, "call": call, "args": args}));
        let a = d.recv();
        assert_eq!(a["err"]["code"], "not_permitted", "{call}: {a}");
    }
    assert_eq!(
        agent.final_within(Duration::from_millis(500)),
        None,
        "nothing was decided"
    );
    // The UI the service started decides.
    deny_q1(&mut ui, &agent);
}

#[test]
fn a_review_window_labels_only_its_own_requests_agent() {
    if !in_session(
        "a_review_window_labels_only_its_own_requests_agent",
        Session::Keyring,
    ) {
        return;
    }
    let svc = start();
    let mut ui = svc.ui();
    let principal = principal(&mut ui);
    let _agent = ask(&svc, &principal, "c1");
    assert_eq!(first_pending(&mut ui), "q1");
    let own = SecretKey::from_seed(&Zeroizing::new([7u8; 32]))
        .public()
        .to_string();
    let other = SecretKey::from_seed(&Zeroizing::new([9u8; 32]))
        .public()
        .to_string();
    // Another agent's key, from q1's review window: refused as {code, message}.
    let e = ui
        .call(
            "review-q1",
            "agent_label_set",
            json!({"agent": other, "label": "Mallory"}),
        )
        .unwrap_err();
    assert!(e.starts_with("not_permitted: "), "{e}");
    assert!(e.contains("its own request's agent"), "{e}");
    // A window of a request that is not waiting: refused too.
    let e = ui
        .call(
            "review-q9",
            "agent_label_set",
            json!({"agent": own, "label": "Kitchen"}),
        )
        .unwrap_err();
    assert!(
        e.starts_with("gone: ") || e.starts_with("not_permitted: "),
        "{e}"
    );
    // Its own request's agent: named.
    ui.call(
        "review-q1",
        "agent_label_set",
        json!({"agent": own, "label": "Kitchen"}),
    )
    .expect("its own agent is named");
    let list = ui.call("main", "pending_list", json!({})).unwrap();
    assert_eq!(list[0]["review"]["agent"]["label"], "Kitchen", "{list}");

    // Once the request is decided, its window still names its own agent (the
    // grant form names it after issuing), and still no other.
    ui.call(
        "review-q1",
        "review_decide",
        json!({"id": "q1", "approve": false, "confirmed": false}),
    )
    .expect("denied");
    ui.call(
        "review-q1",
        "agent_label_set",
        json!({"agent": own, "label": "Kitchen 2"}),
    )
    .expect("its own agent, after the decision");
    let e = ui
        .call(
            "review-q1",
            "agent_label_set",
            json!({"agent": other, "label": "Mallory"}),
        )
        .unwrap_err();
    assert!(e.starts_with("not_permitted: "), "{e}");
    // The main window names any agent (the audit view lists them all).
    ui.call(
        "main",
        "agent_label_set",
        json!({"agent": other, "label": "Other"}),
    )
    .expect("main names any agent");
}

#[test]
fn a_second_service_asks_the_first_at_its_door_for_the_window_and_exits() {
    if !in_session(
        "a_second_service_asks_the_first_at_its_door_for_the_window_and_exits",
        Session::Keyring,
    ) {
        return;
    }
    let svc = start();
    let second = Command::new(env!("CARGO_BIN_EXE_parley-custodyd"))
        .args(["--approver", "desktop", "--ui-socket"])
        .arg(&svc.ui)
        .arg("--socket")
        .arg(&svc.sock)
        .arg("--data-dir")
        .arg(scratch().join("custody"))
        .stdin(Stdio::null())
        .output()
        .expect("a second parley-custodyd");
    assert!(
        second.status.success(),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    // The first service shows its main window in a UI it starts itself.
    let ui = svc.next_ui();
    assert_eq!(ui.opened_with(), "main:home");
}

/// Approve for a while through the real service's UI channel (issue 30,
/// item 4): the review window reads custody's offer, a choice outside it is
/// refused with the engine's words and signs nothing, and a bounded one
/// signs the consent and the short grant the agent receives; home cannot
/// read another window's offer.
#[test]
fn a_review_window_approves_for_a_while_only_within_custodys_offer() {
    if !in_session(
        "a_review_window_approves_for_a_while_only_within_custodys_offer",
        Session::Keyring,
    ) {
        return;
    }
    let svc = start();
    let mut ui = svc.ui();
    let principal = principal(&mut ui);
    let agent = ask(&svc, &principal, "c1");
    let id = first_pending(&mut ui);
    let window = format!("review-{id}");
    ui.note(&window, "shown");
    let offer = ui
        .call(&window, "review_for_a_while", json!({"id": id}))
        .expect("the offer");
    assert_eq!(
        offer["amounts"],
        json!([5000, 10000, 20000, 50000]),
        "{offer}"
    );
    assert_eq!(offer["minutes"], json!([5, 15, 30, 60]), "{offer}");
    assert_eq!(offer["ceiling"], 58300, "{offer}");
    assert!(ui
        .call("main", "review_for_a_while", json!({"id": id}))
        .is_err());
    std::thread::sleep(Duration::from_millis(1600));
    let yes = |w: Value| json!({"id": id, "approve": true, "confirmed": false, "gesture": "click", "for_a_while": w});
    let e = ui
        .call(
            &window,
            "review_decide",
            yes(json!({"amount": 10000, "minutes": 600})),
        )
        .unwrap_err();
    assert!(e.contains("600 minutes is not offered"), "{e}");
    assert_eq!(
        agent.final_within(Duration::from_millis(200)),
        None,
        "nothing signed"
    );
    let done = ui
        .call(
            &window,
            "review_decide",
            yes(json!({"amount": 10000, "minutes": 15})),
        )
        .expect("approved for a while");
    assert_eq!(done["outcome"], "approved");
    assert!(
        done["message"]
            .as_str()
            .unwrap()
            .contains("spend up to 100.00 USD more at shop.example in the next 15 minutes"),
        "{done}"
    );
    let fin = agent.final_within(WAIT).expect("the agent's answer");
    assert_eq!(fin["kind"], "APPROVED", "{fin}");
    assert!(fin["for_a_while"]["grant"].is_string(), "{fin}");

    // The human revokes the short grant from the audit view (as root, the
    // OS is not asked): signed, published once, listed as revoked; a second
    // revoke is refused and changes nothing.
    let view = ui
        .call("main", "audit_query", json!({"filter": {}}))
        .unwrap();
    let short = view["live"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["for_a_while"] == 15)
        .unwrap_or_else(|| panic!("the short grant among the live rows: {view}"));
    let id = short["token_id"].as_str().unwrap().to_string();
    let revoke = json!({"grant": id, "reason": "done shopping"});
    let done = ui.call("main", "grant_revoke", revoke.clone()).unwrap();
    assert_eq!(done["grant"], id.as_str(), "{done}");
    let file = std::fs::read_to_string(done["files"][0].as_str().unwrap()).unwrap();
    assert!(file.contains("done shopping"), "{file}");
    let again = ui.call("main", "grant_revoke", revoke).unwrap_err();
    assert!(again.contains("revoked already"), "{again}");
    let view = ui
        .call("main", "audit_query", json!({"filter": {}}))
        .unwrap();
    assert!(
        view["revoked"].as_array().unwrap().contains(&json!(id)),
        "{view}"
    );
}

/// The service runs with its allocator settings (it started itself again
/// with them: glibc reads them only at a process's start), and the UI it
/// starts does not inherit them.
#[test]
fn the_service_keeps_its_allocator_settings_to_itself() {
    if !in_session(
        "the_service_keeps_its_allocator_settings_to_itself",
        Session::Keyring,
    ) {
        return;
    }
    let svc = start();
    let _ui = svc.ui();
    let var = format!("{}=", parley_custody::allocator::TUNABLES_VAR);
    // What the process was started with (glibc parses the value where it
    // lies, so /proc shows its settings split; the process itself reads
    // the whole value).
    let environ = |pid: u32| std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
    let started_with = |pid: u32| {
        environ(pid)
            .split(|b| *b == 0)
            .any(|kv| kv.starts_with(var.as_bytes()))
    };
    let service = environ(svc.pid());
    assert!(
        started_with(svc.pid())
            && service
                .windows(b"glibc.malloc.tcache_count=0".len())
                .any(|w| w == b"glibc.malloc.tcache_count=0"),
        "the service runs with {}",
        parley_custody::allocator::TUNABLES
    );
    let children: Vec<u32> = std::fs::read_dir(format!("/proc/{}/task", svc.pid()))
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("children")).ok())
        .flat_map(|c| {
            c.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect();
    assert!(!children.is_empty(), "the UI runs as the service's child");
    for c in children {
        assert!(!started_with(c), "the UI (pid {c}) got the service's {var}");
    }
}

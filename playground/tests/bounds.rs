//! Bounds on what a playground service reads from a peer (docs/SECURITY.md,
//! "Bounds"): frames nested deeper than 64 levels, and over-long lines sent
//! in pieces, are `bad_frame` for that line only; the connection goes on.
//! (The 1 MiB + 100 line in one write is `framing.rs`.)

mod harness;

use harness::{req, World};
use serde_json::{json, Value};

#[tokio::test]
async fn a_frame_nested_deeper_than_64_is_bad_frame_and_the_connection_stays_usable() {
    let w = World::start().await;
    let mut c = w.shop().await;
    let deep = format!(
        "{{\"parley\":1,\"id\":\"d\",\"verb\":\"HELLO\",\"x\":{}{}}}\n",
        "[".repeat(70),
        "]".repeat(70)
    );
    c.send_raw(deep.as_bytes()).await;
    let e = c.recv().await;
    assert_eq!(
        (e["kind"].as_str(), e["code"].as_str()),
        (Some("ERROR"), Some("bad_frame")),
        "{e}"
    );
    assert_eq!(e["re"], Value::Null);
    let hello = c.reply(req("HELLO", json!({}))).await;
    assert_eq!(hello["kind"], "BRIEF");
}

#[tokio::test]
async fn a_two_mib_line_sent_in_pieces_is_bad_frame_and_the_connection_stays_usable() {
    let w = World::start().await;
    let mut c = w.shop().await;
    c.send_raw(b"{\"parley\":1,\"id\":\"big\",\"verb\":\"HELLO\",\"pad\":\"")
        .await;
    let chunk = vec![b'x'; 64 * 1024];
    for _ in 0..32 {
        c.send_raw(&chunk).await;
    }
    c.send_raw(b"\"}\n").await;
    let e = c.recv().await;
    assert_eq!(e["code"], "bad_frame", "{e}");
    let hello = c.reply(req("HELLO", json!({}))).await;
    assert_eq!(hello["kind"], "BRIEF");
}

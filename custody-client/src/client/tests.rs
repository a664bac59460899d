//! The client against a scripted custody on an in-memory pipe: every reply
//! kind, foreign and malformed frames, refusals, and every time limit.
//! (Against a real custody socket: `custody/tests/client_socket.rs`.)

use super::*;
use crate::protocol;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};

/// The custody side of an in-memory connection.
struct FakeCustody {
    lines: tokio::io::Lines<BufReader<tokio::io::ReadHalf<DuplexStream>>>,
    out: tokio::io::WriteHalf<DuplexStream>,
}

impl FakeCustody {
    async fn request(&mut self) -> Value {
        let line = self.lines.next_line().await.unwrap().expect("a request");
        serde_json::from_str(&line).unwrap()
    }

    async fn send_raw(&mut self, bytes: &[u8]) {
        self.out.write_all(bytes).await.unwrap();
    }

    async fn reply(&mut self, re: Option<&str>, reply: Reply) {
        let mut line = serde_json::to_vec(&reply.to_frame(re)).unwrap();
        line.push(b'\n');
        self.send_raw(&line).await;
    }
}

fn fast() -> Timeouts {
    Timeouts {
        connect: Duration::from_secs(5),
        reply: Duration::from_secs(5),
        human: Duration::from_secs(5),
    }
}

fn pair(timeouts: Timeouts) -> (Client, FakeCustody) {
    let (a, b) = tokio::io::duplex(4 * MAX_FRAME);
    let (r, w) = tokio::io::split(b);
    let client = Client::from_stream(a, "/test/custody.sock", timeouts);
    (
        client,
        FakeCustody {
            lines: BufReader::new(r).lines(),
            out: w,
        },
    )
}

#[tokio::test]
async fn ids_are_unique_and_carry_a_per_connection_suffix() {
    let (mut a, _) = pair(fast());
    let (mut b, _) = pair(fast());
    let ids: Vec<String> = (0..3).map(|_| a.next_id()).collect();
    assert_eq!(ids.len(), 3);
    assert!(ids[0] != ids[1] && ids[1] != ids[2]);
    assert!(ids[0].starts_with("1-") && ids[2].starts_with("3-"));
    let suffix = |id: String| id.split_once('-').map(|(_, s)| s.to_owned());
    assert_ne!(suffix(a.next_id()), suffix(b.next_id()));
    assert!(ids[0].len() <= protocol::MAX_ID_CHARS);
}

#[tokio::test]
async fn consent_reports_pending_skips_foreign_replies_and_returns_the_final_one() {
    let (mut client, mut custody) = pair(fast());
    let server = tokio::spawn(async move {
        let req = custody.request().await;
        assert_eq!(req["custody"], 1);
        assert_eq!(req["op"], "consent");
        assert_eq!(req["service"], "shop.example");
        assert_eq!(req["agent"], "ed25519:A");
        assert_eq!(req["proposal"]["id"], "p");
        // The request is valid for custody's own parser.
        let parsed = protocol::Request::from_value(&req).unwrap();
        let id = parsed.id;
        let pending = |p| Reply::Pending {
            request: id.clone(),
            position: Some(p),
        };
        custody.reply(Some(&id), pending(2)).await;
        custody.reply(Some("someone-else"), Reply::Expired).await;
        custody
            .send_raw(b"{\"custody\":1,\"re\":\"someone-else\",\"kind\":\"NEW\"}\n")
            .await;
        custody.reply(Some(&id), pending(1)).await;
        custody
            .reply(
                Some(&id),
                Reply::Approved {
                    grant: "pg1.token".into(),
                    for_a_while: None,
                },
            )
            .await;
        custody
    });
    let mut seen = Vec::new();
    let reply = client
        .consent(
            json!({"hash": "h"}),
            json!({"id": "p", "hash": "h"}),
            "shop.example",
            "ed25519:A",
            |p| seen.push(p.clone()),
        )
        .await
        .unwrap();
    assert_eq!(
        reply,
        Reply::Approved {
            grant: "pg1.token".into(),
            for_a_while: None,
        }
    );
    assert_eq!(seen.len(), 2);
    assert!(matches!(
        seen[1],
        Reply::Pending {
            position: Some(1),
            ..
        }
    ));
    server.await.unwrap();
}

#[tokio::test]
async fn every_op_sends_a_request_custody_accepts() {
    let (mut client, mut custody) = pair(fast());
    let server = tokio::spawn(async move {
        let mut ops = Vec::new();
        for _ in 0..5 {
            let req = custody.request().await;
            let parsed = protocol::Request::from_value(&req).unwrap();
            ops.push(parsed.op.clone());
            custody.reply(Some(&parsed.id), Reply::Cancelled).await;
        }
        ops
    });
    client.hello().await.unwrap();
    client
        .approve_code("pc1.x", "ed25519:A", |_| {})
        .await
        .unwrap();
    client
        .grant("ed25519:A", json!([{"exp": 9}]), Some("l"), None, |_| {})
        .await
        .unwrap();
    client.status("1-x").await.unwrap();
    client.cancel("1-x").await.unwrap();
    let ops = server.await.unwrap();
    assert_eq!(ops[0], protocol::Op::Hello);
    assert_eq!(
        ops[1],
        protocol::Op::ApproveCode {
            code: "pc1.x".into(),
            agent: "ed25519:A".into(),
            dialect: parley_core::Dialect::ParleyV1,
        }
    );
    assert_eq!(
        ops[2],
        protocol::Op::Grant {
            agent: "ed25519:A".into(),
            caveats: json!([{"exp": 9}]),
            label: Some("l".into()),
            reason: None
        }
    );
    assert_eq!(
        ops[3],
        protocol::Op::Status {
            request: "1-x".into()
        }
    );
    assert_eq!(
        ops[4],
        protocol::Op::Cancel {
            request: "1-x".into()
        }
    );
}

#[tokio::test]
async fn an_error_with_null_re_ends_the_request_as_refused() {
    let (mut client, mut custody) = pair(fast());
    let server = tokio::spawn(async move {
        custody.request().await;
        custody
            .reply(None, Reply::error(ErrorCode::Busy, "too many"))
            .await;
        custody
    });
    let err = client.hello().await.unwrap_err();
    assert!(
        matches!(&err, ClientError::Refused { code: ErrorCode::Busy, message } if message == "too many"),
        "{err}"
    );
    server.await.unwrap();
}

#[tokio::test]
async fn an_error_for_our_id_is_the_final_reply() {
    let (mut client, mut custody) = pair(fast());
    let server = tokio::spawn(async move {
        let req = custody.request().await;
        let id = req["id"].as_str().unwrap().to_owned();
        custody
            .reply(Some(&id), Reply::error(ErrorCode::Invalid, "`agent` bad"))
            .await;
        custody
    });
    let reply = client.approve_code("pc1.x", "k", |_| {}).await.unwrap();
    assert_eq!(reply, Reply::error(ErrorCode::Invalid, "`agent` bad"));
    server.await.unwrap();
}

#[tokio::test]
async fn oversized_or_malformed_frames_from_custody_are_errors() {
    let (mut client, mut custody) = pair(fast());
    let server = tokio::spawn(async move {
        custody.request().await;
        let mut big = vec![b'x'; MAX_FRAME + 1];
        big.push(b'\n');
        custody.send_raw(&big).await;
        custody.request().await;
        custody
            .send_raw(b"{\"custody\":1,\"re\":null,\"re\":1}\n")
            .await;
        let req = custody.request().await;
        let id = req["id"].as_str().unwrap().to_owned();
        custody
            .send_raw(
                format!("{{\"custody\":1,\"re\":\"{id}\",\"kind\":\"APPROVED\"}}\n").as_bytes(),
            )
            .await;
        custody
    });
    let err = client.hello().await.unwrap_err();
    assert!(
        matches!(err, ClientError::BadFrame(FrameError::TooLarge { .. })),
        "{err}"
    );
    let err = client.hello().await.unwrap_err();
    assert!(
        matches!(err, ClientError::BadFrame(FrameError::Invalid(_))),
        "{err}"
    );
    let err = client.approve_code("pc1.x", "k", |_| {}).await.unwrap_err();
    assert!(
        matches!(
            err,
            ClientError::BadReply(ReplyError::Missing {
                kind: "APPROVED",
                field: "grant"
            })
        ),
        "{err}"
    );
    server.await.unwrap();
}

#[tokio::test]
async fn a_closed_connection_ends_the_request() {
    let (mut client, mut custody) = pair(fast());
    let server = tokio::spawn(async move {
        custody.request().await;
        drop(custody);
    });
    let err = client.hello().await.unwrap_err();
    assert!(matches!(err, ClientError::Closed { .. }), "{err}");
    assert!(err.is_connection_problem());
    server.await.unwrap();
}

#[tokio::test]
async fn a_missed_human_deadline_withdraws_the_request() {
    let mut t = fast();
    t.human = Duration::from_millis(200);
    let (mut client, mut custody) = pair(t);
    let server = tokio::spawn(async move {
        let req = custody.request().await;
        let id = req["id"].as_str().unwrap().to_owned();
        custody
            .reply(
                Some(&id),
                Reply::Pending {
                    request: id.clone(),
                    position: None,
                },
            )
            .await;
        let cancel = custody.request().await;
        assert_eq!(cancel["op"], "cancel");
        assert_eq!(cancel["request"], id.as_str());
        // Late replies to both: the next request must skip them.
        custody.reply(Some(&id), Reply::Cancelled).await;
        let cancel_id = cancel["id"].as_str().unwrap().to_owned();
        custody.reply(Some(&cancel_id), Reply::Cancelled).await;
        let hello = custody.request().await;
        let hello_id = hello["id"].as_str().unwrap().to_owned();
        custody
            .reply(
                Some(&hello_id),
                Reply::Hello {
                    version: 1,
                    principals: vec![],
                },
            )
            .await;
        custody
    });
    let mut pendings = 0;
    let err = client
        .grant("ed25519:A", json!([]), None, None, |_| pendings += 1)
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::HumanTimeout { .. }), "{err}");
    assert!(err.to_string().contains("within 200ms"), "{err}");
    assert_eq!(pendings, 1);
    assert!(!err.is_connection_problem());
    let hello = client.hello().await.unwrap();
    assert!(matches!(hello, Reply::Hello { .. }));
    server.await.unwrap();
}

#[tokio::test]
async fn a_silent_custody_times_out() {
    let mut t = fast();
    t.reply = Duration::from_millis(100);
    let (mut client, custody) = pair(t);
    let err = client.status("x").await.unwrap_err();
    assert!(
        matches!(err, ClientError::Timeout { op: "status", .. }),
        "{err}"
    );
    drop(custody);
}

#[test]
fn connect_errors_say_what_to_do() {
    let p = Path::new("/run/x/custody.sock");
    let e = ClientError::from_connect(p, io::ErrorKind::NotFound.into());
    assert_eq!(
        e.to_string(),
        "custody daemon is not running at /run/x/custody.sock (start parley-custodyd or the Parley Custody app; if it listens elsewhere, pass --socket or set PARLEY_CUSTODY_SOCKET)"
    );
    let e = ClientError::from_connect(p, io::ErrorKind::ConnectionRefused.into());
    assert!(matches!(e, ClientError::NotRunning { .. }));
    let e = ClientError::from_connect(p, io::ErrorKind::PermissionDenied.into());
    assert!(e.to_string().starts_with(
        "permission denied on /run/x/custody.sock: your user is not in the agents group"
    ));
    assert_eq!(human_duration(Duration::from_secs(900)), "15m");
    assert_eq!(human_duration(Duration::from_secs(5400)), "1h30m");
    assert_eq!(human_duration(Duration::from_secs(45)), "45s");
}

#[cfg(unix)]
#[tokio::test]
async fn connect_to_a_missing_socket_says_custody_is_not_running() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("none.sock");
    let err = Client::connect(Some(&path)).await.unwrap_err();
    assert!(matches!(err, ClientError::NotRunning { .. }), "{err}");
    assert!(err.to_string().contains(&path.display().to_string()));
}

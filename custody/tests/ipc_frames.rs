//! Framing attacks over a real custody socket: every test binds the real
//! `Listener` in a temporary directory and talks to it through the kernel.
#![cfg(unix)]

use parley_custody::ipc::frame::{FrameError, FrameReader, FrameWriter, MAX_FRAME};
use parley_custody::ipc::peer::PeerPolicy;
use parley_custody::ipc::socket::{self, BindOptions, ConnLimits, Listener, SocketPath, Stream};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

type Client = interprocess::local_socket::tokio::Stream;

/// A connected (server side, client side) pair over a fresh socket.
async fn pair() -> (Stream, Client, Listener, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let listener = Listener::bind(BindOptions {
        path: SocketPath::explicit(dir.path().join("c.sock")),
        policy: PeerPolicy::own_user_only(),
        limits: ConnLimits::default(),
    })
    .expect("bind");
    let (client, accepted) = tokio::join!(socket::connect(listener.path()), listener.accept());
    let (server, _peer) = accepted.expect("accept");
    (server, client.expect("connect"), listener, dir)
}

async fn next(reader: &mut FrameReader<Stream>) -> Result<Option<serde_json::Value>, FrameError> {
    tokio::time::timeout(Duration::from_secs(60), reader.next_frame())
        .await
        .expect("frame within 60 s")
        .map(|f| f.map(|f| f.value))
}

#[tokio::test]
async fn line_one_byte_over_the_limit_is_refused_and_the_connection_stays_usable() {
    let (server, mut client, _l, _d) = pair().await;
    let mut reader = FrameReader::new(server);
    let filler = "x".repeat(MAX_FRAME + 1 - r#"{"k":""}"#.len());
    let big = format!(r#"{{"k":"{filler}"}}"#);
    assert_eq!(big.len(), MAX_FRAME + 1);
    let writer = tokio::spawn(async move {
        client.write_all(big.as_bytes()).await?;
        client.write_all(b"\n{\"after\":true}\n").await?;
        Ok::<_, std::io::Error>(client)
    });
    match next(&mut reader).await {
        Err(FrameError::TooLarge { size, limit }) => {
            assert_eq!(size, MAX_FRAME as u64 + 1);
            assert_eq!(limit, MAX_FRAME);
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
    let v = next(&mut reader)
        .await
        .expect("next frame")
        .expect("not EOF");
    assert_eq!(v["after"], true);
    let _client = writer.await.unwrap().unwrap();
}

#[tokio::test]
async fn line_of_exactly_the_limit_is_accepted() {
    let (server, mut client, _l, _d) = pair().await;
    let mut reader = FrameReader::new(server);
    let filler = "y".repeat(MAX_FRAME - r#"{"k":""}"#.len());
    let line = format!("{{\"k\":\"{filler}\"}}\n");
    let writer =
        tokio::spawn(async move { client.write_all(line.as_bytes()).await.map(|_| client) });
    let v = next(&mut reader).await.unwrap().unwrap();
    assert_eq!(v["k"].as_str().map(str::len), Some(filler.len()));
    let _client = writer.await.unwrap().unwrap();
}

#[tokio::test]
async fn fifty_mib_line_is_refused_with_bounded_memory() {
    let (server, mut client, _l, _d) = pair().await;
    let mut reader = FrameReader::new(server);
    const TOTAL: usize = 50 * 1024 * 1024;
    let writer = tokio::spawn(async move {
        let chunk = vec![b'z'; 256 * 1024];
        let mut sent = 0;
        while sent < TOTAL {
            client.write_all(&chunk).await?;
            sent += chunk.len();
        }
        client.write_all(b"\n{\"id\":\"next\"}\n").await?;
        Ok::<_, std::io::Error>(client)
    });
    match next(&mut reader).await {
        Err(FrameError::TooLarge { size, .. }) => assert_eq!(size, TOTAL as u64),
        other => panic!("expected TooLarge, got {other:?}"),
    }
    let peak = reader.peak_buffered_capacity();
    assert!(
        peak <= 2 * MAX_FRAME,
        "reader held {peak} bytes while skipping a 50 MiB line"
    );
    assert_eq!(next(&mut reader).await.unwrap().unwrap()["id"], "next");
    assert!(reader.buffered_capacity() <= 2 * MAX_FRAME);
    let _client = writer.await.unwrap().unwrap();
}

#[tokio::test]
async fn frames_delivered_byte_by_byte_are_reassembled() {
    let (server, mut client, _l, _d) = pair().await;
    let mut reader = FrameReader::new(server);
    let text = b"{\"custody\":1,\"id\":\"a\",\"op\":\"hello\"}\n\n{\"s\":\"\xc3\xa9\"}\n";
    let writer = tokio::spawn(async move {
        for b in text {
            client.write_all(&[*b]).await?;
            client.flush().await?;
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        Ok::<_, std::io::Error>(client)
    });
    assert_eq!(next(&mut reader).await.unwrap().unwrap()["id"], "a");
    assert_eq!(next(&mut reader).await.unwrap().unwrap()["s"], "é");
    let client = writer.await.unwrap().unwrap();
    drop(client);
    assert!(next(&mut reader).await.unwrap().is_none(), "clean EOF");
}

#[tokio::test]
async fn invalid_utf8_refuses_that_line_only() {
    let (server, mut client, _l, _d) = pair().await;
    let mut reader = FrameReader::new(server);
    client
        .write_all(b"{\"a\":\"\xff\xfe\"}\n{\"ok\":1}\n")
        .await
        .unwrap();
    assert!(matches!(
        next(&mut reader).await,
        Err(FrameError::NotUtf8 { offset: 6 })
    ));
    assert_eq!(next(&mut reader).await.unwrap().unwrap()["ok"], 1);
}

#[tokio::test]
async fn duplicate_keys_refuse_that_line_only() {
    let (server, mut client, _l, _d) = pair().await;
    let mut reader = FrameReader::new(server);
    client
        .write_all(b"{\"op\":\"hello\",\"op\":\"grant\"}\n{\"x\":{\"k\":1,\"k\":2}}\n{\"ok\":1}\n")
        .await
        .unwrap();
    for _ in 0..2 {
        match next(&mut reader).await {
            Err(e @ FrameError::Invalid(_)) => {
                assert!(!e.is_fatal());
                assert!(e.to_string().contains("duplicate key"), "{e}");
            }
            other => panic!("expected Invalid, got {other:?}"),
        }
    }
    assert_eq!(next(&mut reader).await.unwrap().unwrap()["ok"], 1);
}

#[tokio::test]
async fn deep_nesting_refuses_that_line_only() {
    let (server, mut client, _l, _d) = pair().await;
    let mut reader = FrameReader::new(server);
    // The frame object is depth 1: 63 nested arrays reach depth 64 (allowed).
    let ok = format!("{{\"a\":{}{}}}\n", "[".repeat(63), "]".repeat(63));
    let deep = format!("{{\"a\":{}{}}}\n", "[".repeat(64), "]".repeat(64));
    let huge = format!("{{\"a\":{}{}}}\n", "[".repeat(100_000), "]".repeat(100_000));
    let writer = tokio::spawn(async move {
        for line in [&ok, &deep, &huge, &"{\"ok\":2}\n".to_owned()] {
            client.write_all(line.as_bytes()).await?;
        }
        Ok::<_, std::io::Error>(client)
    });
    assert!(next(&mut reader).await.unwrap().is_some());
    assert!(matches!(
        next(&mut reader).await,
        Err(FrameError::Invalid(_))
    ));
    assert!(matches!(
        next(&mut reader).await,
        Err(FrameError::Invalid(_))
    ));
    assert_eq!(next(&mut reader).await.unwrap().unwrap()["ok"], 2);
    let _client = writer.await.unwrap().unwrap();
}

#[tokio::test]
async fn flood_of_ten_thousand_small_frames_is_read_in_order() {
    let (server, mut client, _l, _d) = pair().await;
    let mut reader = FrameReader::new(server);
    const N: usize = 10_000;
    let writer = tokio::spawn(async move {
        let mut all = Vec::new();
        for i in 0..N {
            all.extend_from_slice(
                format!("{{\"custody\":1,\"id\":\"{i}\",\"op\":\"hello\"}}\n").as_bytes(),
            );
        }
        client.write_all(&all).await?;
        drop(client);
        Ok::<_, std::io::Error>(())
    });
    for i in 0..N {
        let v = next(&mut reader).await.unwrap().unwrap();
        assert_eq!(v["id"], i.to_string());
    }
    assert!(next(&mut reader).await.unwrap().is_none());
    writer.await.unwrap().unwrap();
}

#[tokio::test]
async fn last_line_without_newline_is_a_truncated_frame() {
    let (server, mut client, _l, _d) = pair().await;
    let mut reader = FrameReader::new(server);
    let cut = br#"{"custody":1,"id":"cut""#;
    client.write_all(b"{\"ok\":1}\n").await.unwrap();
    client.write_all(cut).await.unwrap();
    drop(client);
    assert_eq!(next(&mut reader).await.unwrap().unwrap()["ok"], 1);
    match next(&mut reader).await {
        Err(FrameError::Truncated { size }) => assert_eq!(size, cut.len()),
        other => panic!("expected Truncated, got {other:?}"),
    }
    assert!(next(&mut reader).await.unwrap().is_none());
}

#[tokio::test]
async fn writer_sends_one_line_per_frame_over_the_socket() {
    let (server, client, _l, _d) = pair().await;
    let mut writer = FrameWriter::new(server);
    let reply = parley_custody::protocol::Reply::Denied {
        reason: Some("not\ntoday".into()),
    }
    .to_frame(Some("r1"));
    writer.send(&reply).await.unwrap();
    writer.send(&reply).await.unwrap();
    let mut lines = BufReader::new(client).lines();
    for _ in 0..2 {
        let line = lines.next_line().await.unwrap().unwrap();
        assert_eq!(
            line,
            r#"{"custody":1,"re":"r1","kind":"DENIED","reason":"not\ntoday"}"#
        );
    }
}

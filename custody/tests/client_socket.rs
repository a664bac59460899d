//! The agent-side client (`parley-custody-client`, re-exported as
//! `parley_custody::client`) against custody's real listener: a client that
//! resolves and connects the way agents do gets through custody's admission
//! (own user) and reads its reply. Lives here, not in the client crate, so
//! that crate never depends on custody, not even for tests.

use parley_custody::client::Client;
use parley_custody::ipc::frame::{FrameReader, FrameWriter};
use parley_custody::ipc::peer::PeerPolicy;
use parley_custody::ipc::socket::{BindOptions, ConnLimits, Listener, SocketPath};
use parley_custody::protocol::{self, Principal, Reply};

#[cfg(unix)]
#[tokio::test]
async fn talks_to_a_real_custody_socket() {
    let dir = tempfile::tempdir().unwrap();
    let listener = Listener::bind(BindOptions {
        path: SocketPath::explicit(dir.path().join("c.sock")),
        policy: PeerPolicy::own_user_only(),
        limits: ConnLimits::default(),
    })
    .unwrap();
    let path = listener.path().to_path_buf();
    let server = tokio::spawn(async move {
        let (stream, _peer) = listener.accept().await.unwrap();
        let (r, w) = tokio::io::split(stream);
        let mut reader = FrameReader::new(r);
        let mut writer = FrameWriter::new(w);
        let frame = reader.next_frame().await.unwrap().unwrap();
        let req = protocol::Request::from_value(&frame.value).unwrap();
        let hello = Reply::Hello {
            version: 1,
            principals: vec![Principal {
                key: "ed25519:K".into(),
                label: None,
            }],
        };
        writer.send(&hello.to_frame(Some(&req.id))).await.unwrap();
        listener
    });
    let mut client = Client::connect(Some(&path)).await.unwrap();
    assert_eq!(client.path(), path);
    match client.hello().await.unwrap() {
        Reply::Hello { principals, .. } => assert_eq!(principals[0].key, "ed25519:K"),
        other => panic!("{other:?}"),
    }
    drop(server.await.unwrap());
}

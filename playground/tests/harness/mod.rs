//! The protocol tests' world: both services on real TCP sockets
//! (127.0.0.1, ephemeral ports) with a hand-moved clock, fixed keys, and a
//! raw NDJSON client that signs proofs for whatever it sends.
#![allow(dead_code)]

use parley_core::caveat::Caveat;
use parley_core::grant::UnverifiedGrant;
use parley_core::proof::{self, Target};
use parley_core::{Dialect, SecretKey};
use parley_custody_client::frame::FrameReader;
use parley_playground::apps::Playground;
use parley_playground::clock::{Clock, ManualClock};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use zeroize::Zeroizing;

/// 2026-09-21T14:13:20Z: the clock's start.
pub const T0: i64 = 1_790_000_000;
pub const SHOP: &str = "shop.example";
pub const CAL: &str = "cal.example.com";

pub fn key(b: u8) -> SecretKey {
    SecretKey::from_seed(&Zeroizing::new([b; 32]))
}

pub struct World {
    pub clock: Arc<ManualClock>,
    pub pg: Playground,
    /// The trusted principal.
    pub principal: SecretKey,
    /// A principal the services do not trust.
    pub stranger: SecretKey,
    /// The agent.
    pub agent: SecretKey,
    /// Another agent of the same principal.
    pub other: SecretKey,
    /// The dialect both services speak.
    pub dialect: Dialect,
}

impl World {
    pub async fn start() -> World {
        World::start_in(Dialect::ParleyV1).await
    }

    /// Both services speaking `dialect`.
    pub async fn start_in(dialect: Dialect) -> World {
        let clock = Arc::new(ManualClock::new(T0));
        let principal = key(1);
        let dyn_clock: Arc<dyn Clock> = clock.clone();
        let pg = Playground::start_in(
            "127.0.0.1:0",
            "127.0.0.1:0",
            vec![principal.public()],
            dyn_clock,
            dialect,
        )
        .await
        .unwrap();
        World {
            clock,
            pg,
            principal,
            stranger: key(9),
            agent: key(2),
            other: key(3),
            dialect,
        }
    }

    pub fn now(&self) -> i64 {
        self.clock.now()
    }

    pub async fn shop(&self) -> Conn {
        Conn::connect_in(
            &self.pg.shop.addr.to_string(),
            SHOP,
            self.clock.clone(),
            self.dialect,
        )
        .await
    }

    pub async fn cal(&self) -> Conn {
        Conn::connect_in(
            &self.pg.cal.addr.to_string(),
            CAL,
            self.clock.clone(),
            self.dialect,
        )
        .await
    }

    /// A root grant from `issuer` to `holder` with these caveats.
    pub fn grant_from(&self, issuer: &SecretKey, holder: &SecretKey, caveats: Value) -> String {
        let caveats: Vec<Caveat> = caveats
            .as_array()
            .unwrap()
            .iter()
            .map(Caveat::parse)
            .collect();
        UnverifiedGrant::issue_root(
            issuer,
            &holder.public(),
            &caveats,
            self.now(),
            &format!("n{}", next()),
        )
        .unwrap()
        .encode()
    }

    /// A root grant from the trusted principal.
    pub fn grant(&self, holder: &SecretKey, caveats: Value) -> String {
        self.grant_from(&self.principal, holder, caveats)
    }

    /// The playground agent's usual grant: both services, all verbs, 40 USD
    /// per commit, 100 USD in total, up to medium risk, one hour.
    pub fn policy(&self, holder: &SecretKey) -> String {
        self.grant(holder, policy_caveats(self.now()))
    }
}

pub fn policy_caveats(now: i64) -> Value {
    json!([
        {"svc": [SHOP, CAL]},
        {"verbs": ["ASK", "INTENT", "COMMIT", "UNDO", "EXPAND"]},
        {"can": ["shop.*", "calendar.*"]},
        {"per": {"max": 4000, "currency": "USD"}},
        {"spend": {"max": 10000, "currency": "USD"}},
        {"risk": "medium"},
        {"exp": now + 3600}
    ])
}

/// The token with its per-commit limit raised but the signature kept: the
/// chain no longer verifies.
pub fn tamper(token: &str) -> String {
    let body = token.strip_prefix("pg1.").unwrap();
    let text = String::from_utf8(parley_core::b64::decode(body).unwrap()).unwrap();
    assert!(text.contains("\"max\":4000"), "{text}");
    let forged = text.replace("\"max\":4000", "\"max\":900000");
    format!("pg1.{}", parley_core::b64::encode(forged))
}

/// The root block id of a grant (spend is reserved against it).
pub fn root_block(token: &str) -> String {
    UnverifiedGrant::decode(token).unwrap().blocks()[0].id()
}

fn next() -> u64 {
    static N: AtomicU64 = AtomicU64::new(1);
    N.fetch_add(1, Ordering::Relaxed)
}

/// A fresh request frame.
pub fn req(verb: &str, fields: Value) -> Value {
    req_in(Dialect::ParleyV1, verb, fields)
}

/// A fresh request frame in `dialect` (its marker, §2.1).
pub fn req_in(dialect: Dialect, verb: &str, fields: Value) -> Value {
    let mut f = json!({"id": format!("q{}", next()), "verb": verb});
    f[dialect.marker()] = json!(1);
    for (k, v) in fields.as_object().unwrap() {
        f[k] = v.clone();
    }
    f
}

/// An ERROR reply's code (the reply must be an ERROR).
pub fn code(v: &Value) -> &str {
    assert_eq!(v["kind"], "ERROR", "{v}");
    v["code"].as_str().unwrap()
}

/// An INTENT to order `qty` × `sku` in `dialect` (m01 is 10.99 USD, plus
/// 4.99 USD delivery under 50 USD).
pub fn order_in(dialect: Dialect, sku: &str, qty: i64) -> Value {
    req_in(
        dialect,
        "INTENT",
        json!({"capability": "shop.order", "params": {"items": [{"sku": sku, "qty": qty}], "deliver": "2026-09-22"}}),
    )
}

/// A COMMIT of proposal `p` (by id and hash) in `dialect`.
pub fn commit_in(dialect: Dialect, p: &Value) -> Value {
    req_in(
        dialect,
        "COMMIT",
        json!({"proposal": p["id"], "hash": p["hash"]}),
    )
}

/// [`order_in`] Parley v1.
pub fn order(sku: &str, qty: i64) -> Value {
    order_in(Dialect::ParleyV1, sku, qty)
}

/// [`commit_in`] Parley v1.
pub fn commit(p: &Value) -> Value {
    commit_in(Dialect::ParleyV1, p)
}

/// The §6.5 target of a request frame.
pub fn target_of(frame: &Value) -> (String, String) {
    let s = |k: &str| frame[k].as_str().unwrap_or_default().to_string();
    let verb = s("verb");
    let target = match verb.as_str() {
        "COMMIT" => s("hash"),
        "UNDO" => s("receipt"),
        "EXPAND" => s("handle"),
        "INTENT" if frame["auto"] == true => format!("auto:{}:{}", s("capability"), s("id")),
        _ => s("capability"),
    };
    (verb, target)
}

/// Adds grants and a proof by `key` for service `aud` at `ts`.
pub fn prove(mut frame: Value, key: &SecretKey, aud: &str, ts: i64, grants: &[&str]) -> Value {
    let (verb, target) = target_of(&frame);
    let p = proof::sign_raw(key, aud, &verb, &target, ts);
    if !grants.is_empty() {
        frame["grants"] = json!(grants);
    }
    frame["proof"] = p.to_value();
    frame
}

/// A proof for an explicit target (for tests of wrong targets).
pub fn prove_target(
    mut frame: Value,
    key: &SecretKey,
    aud: &str,
    target: &Target,
    ts: i64,
    grants: &[&str],
) -> Value {
    frame["grants"] = json!(grants);
    frame["proof"] = proof::sign(key, aud, target, ts).to_value();
    frame
}

pub struct Conn {
    pub aud: &'static str,
    /// The marker every reply must carry.
    pub dialect: Dialect,
    clock: Arc<ManualClock>,
    r: FrameReader<OwnedReadHalf>,
    w: OwnedWriteHalf,
}

impl Conn {
    pub async fn connect(addr: &str, aud: &'static str, clock: Arc<ManualClock>) -> Conn {
        Conn::connect_in(addr, aud, clock, Dialect::ParleyV1).await
    }

    /// A connection to a service speaking `dialect`.
    pub async fn connect_in(
        addr: &str,
        aud: &'static str,
        clock: Arc<ManualClock>,
        dialect: Dialect,
    ) -> Conn {
        let s = TcpStream::connect(addr).await.unwrap();
        let (r, w) = s.into_split();
        Conn {
            aud,
            dialect,
            clock,
            r: FrameReader::new(r),
            w,
        }
    }

    pub async fn send(&mut self, v: &Value) {
        let mut bytes = serde_json::to_vec(v).unwrap();
        bytes.push(b'\n');
        self.send_raw(&bytes).await;
    }

    /// Raw bytes, for frames a well-behaved writer would never produce.
    pub async fn send_raw(&mut self, bytes: &[u8]) {
        self.w.write_all(bytes).await.unwrap();
        self.w.flush().await.unwrap();
    }

    pub async fn recv(&mut self) -> Value {
        tokio::time::timeout(Duration::from_secs(10), self.r.next_frame())
            .await
            .expect("a reply in time")
            .expect("a readable frame")
            .expect("the connection is open")
            .value
    }

    /// Sends `frame` and reads until its final reply: (events, reply).
    pub async fn call(&mut self, frame: Value) -> (Vec<Value>, Value) {
        let id = frame["id"].clone();
        self.send(&frame).await;
        let mut events = Vec::new();
        loop {
            let v = self.recv().await;
            assert_eq!(v[self.dialect.marker()], 1, "{v}");
            if v["re"] != id {
                continue;
            }
            if v["kind"] == "EVENT" {
                events.push(v);
            } else {
                return (events, v);
            }
        }
    }

    /// `call`, returning only the final reply.
    pub async fn reply(&mut self, frame: Value) -> Value {
        self.call(frame).await.1
    }

    /// Signs `frame` with `key` now and calls it.
    pub async fn signed(&mut self, frame: Value, key: &SecretKey, grants: &[&str]) -> Value {
        let ts = self.clock.now();
        let aud = self.aud;
        self.reply(prove(frame, key, aud, ts, grants)).await
    }
}

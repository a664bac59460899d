//! Parley verbs from the agent's side: builds request frames, signs the
//! proof of possession for each (§6.5) when the agent presents grants (or
//! when a handle needs one, §4.6), and keeps the service id learned at HELLO
//! (the proofs' audience, and the `service` of a consent request, §6.6).

use super::conn::{Conn, ConnError, Exchange};
use crate::clock::Clock;
use crate::ids::random_id;
use parley_core::proof::{self, Target};
use parley_core::{Dialect, SecretKey};
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// A session with one service, as one agent key.
pub struct Session {
    conn: Conn,
    key: Arc<SecretKey>,
    clock: Arc<dyn Clock>,
    service: String,
    /// The grants presented with every request that carries them.
    pub grants: Vec<String>,
    /// The dialect every frame is written in (its marker, §2.1).
    dialect: Dialect,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("service", &self.service)
            .field("addr", &self.conn.addr())
            .finish_non_exhaustive()
    }
}

/// A request as sent, and what came back.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The request frame.
    pub request: Value,
    /// EVENTs and the final reply.
    pub exchange: Exchange,
}

impl Step {
    /// The final reply.
    pub fn reply(&self) -> &Value {
        &self.exchange.reply
    }

    /// The final reply's kind.
    pub fn kind(&self) -> &str {
        self.reply()["kind"].as_str().unwrap_or("")
    }
}

impl Session {
    /// Connects and sends HELLO (§4.1); the BRIEF's `service.id` becomes the
    /// audience of every proof.
    pub async fn open(
        addr: &str,
        key: Arc<SecretKey>,
        clock: Arc<dyn Clock>,
        budget: usize,
        dialect: Dialect,
    ) -> Result<(Session, Step), ConnError> {
        let mut conn = Conn::connect(addr).await?;
        let mut hello = json!({"id": random_id("a"), "verb": "HELLO",
            "agent": {"name": "parley-playground", "key": key.public().to_string()}, "budget": budget});
        hello[dialect.marker()] = json!(1);
        let exchange = conn.request(&hello).await?;
        let service = exchange.reply["service"]["id"]
            .as_str()
            .ok_or_else(|| ConnError::Malformed {
                addr: conn.addr().to_string(),
                why: format!(
                    "HELLO was answered {} without service.id",
                    exchange.reply["kind"]
                ),
            })?
            .to_string();
        let session = Session {
            conn,
            key,
            clock,
            service,
            grants: Vec::new(),
            dialect,
        };
        Ok((
            session,
            Step {
                request: hello,
                exchange,
            },
        ))
    }

    /// The service id from HELLO.
    pub fn service(&self) -> &str {
        &self.service
    }

    /// ASK (§4.2).
    pub async fn ask(
        &mut self,
        capability: &str,
        params: Value,
        budget: usize,
    ) -> Result<Step, ConnError> {
        let body = json!({"capability": capability, "params": params, "budget": budget});
        self.send(
            "ASK",
            body,
            &Target::Ask { capability },
            self.grants.clone(),
        )
        .await
    }

    /// INTENT (§4.3), with `auto` (§4.3.1).
    pub async fn intent(
        &mut self,
        capability: &str,
        params: Value,
        auto: bool,
        budget: usize,
    ) -> Result<Step, ConnError> {
        let id = random_id("a");
        let mut body = json!({"capability": capability, "params": params, "budget": budget});
        if auto {
            body["auto"] = json!(true);
        }
        let target = if auto {
            Target::AutoIntent {
                capability,
                frame_id: &id,
            }
        } else {
            Target::Intent { capability }
        };
        self.send_with_id(id.clone(), "INTENT", body, &target, self.grants.clone())
            .await
    }

    /// COMMIT (§4.4) of a proposal as received, with `grants`.
    pub async fn commit(
        &mut self,
        proposal: &Value,
        grants: Vec<String>,
    ) -> Result<Step, ConnError> {
        let hash = proposal["hash"].as_str().unwrap_or_default();
        let body = json!({"proposal": proposal["id"], "hash": hash});
        self.send("COMMIT", body, &Target::Commit { hash }, grants)
            .await
    }

    /// UNDO (§4.5).
    pub async fn undo(&mut self, receipt: &str) -> Result<Step, ConnError> {
        let body = json!({"receipt": receipt});
        self.send("UNDO", body, &Target::Undo { receipt }, self.grants.clone())
            .await
    }

    /// EXPAND (§4.6), always with a proof: a handle made for a proven
    /// request can only be expanded by the same key.
    pub async fn expand(&mut self, handle: &str, budget: usize) -> Result<Step, ConnError> {
        let body = json!({"handle": handle, "budget": budget});
        let id = random_id("a");
        let mut frame = self.frame(&id, "EXPAND", body);
        let ts = self.clock.now();
        let p = proof::sign(&self.key, &self.service, &Target::Expand { handle }, ts);
        frame["proof"] = p.to_value();
        if !self.grants.is_empty() {
            frame["grants"] = json!(self.grants);
        }
        let exchange = self.conn.request(&frame).await?;
        Ok(Step {
            request: frame,
            exchange,
        })
    }

    async fn send(
        &mut self,
        verb: &str,
        body: Value,
        target: &Target<'_>,
        grants: Vec<String>,
    ) -> Result<Step, ConnError> {
        self.send_with_id(random_id("a"), verb, body, target, grants)
            .await
    }

    async fn send_with_id(
        &mut self,
        id: String,
        verb: &str,
        body: Value,
        target: &Target<'_>,
        grants: Vec<String>,
    ) -> Result<Step, ConnError> {
        let mut frame = self.frame(&id, verb, body);
        if !grants.is_empty() {
            let p = proof::sign(&self.key, &self.service, target, self.clock.now());
            frame["grants"] = json!(grants);
            frame["proof"] = p.to_value();
        }
        let exchange = self.conn.request(&frame).await?;
        Ok(Step {
            request: frame,
            exchange,
        })
    }

    fn frame(&self, id: &str, verb: &str, body: Value) -> Value {
        let mut m = Map::new();
        m.insert(self.dialect.marker().into(), json!(1));
        m.insert("id".into(), json!(id));
        m.insert("verb".into(), json!(verb));
        if let Value::Object(fields) = body {
            m.extend(fields);
        }
        Value::Object(m)
    }
}

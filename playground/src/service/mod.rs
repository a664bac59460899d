//! A Parley (or YEA v1) service, just big enough to be honest.
//!
//! One engine for both dialects: [`Service::new_in`] takes the dialect as
//! data, and it decides the frame marker, whether proposals and receipts
//! report `cost` or `uses`, whether a payment effect is `charge` or `create`,
//! and which caveats grants are judged by (`per`/`spend` or `each`/`total`,
//! evaluated by parley-core).
//!
//! [`Service`] is the protocol engine: it turns one request frame into its
//! EVENTs and final reply ([`Service::handle`]), for any [`App`]. [`server`]
//! runs it on TCP with NDJSON framing (§2.1–§2.3). The verbs live in their
//! own modules: discovery and reads here (HELLO §4.1, ASK §4.2), [`intent`]
//! (§4.3, auto-commit §4.3.1), [`commit`] (§4.4, spend §6.3, consent §6.6),
//! [`undo`] (§4.5) and [`expand`] (§4.6, budgets §8).
//!
//! What every reply gets: a `re` naming the request (or `null` when the
//! frame had no usable id), and, for BRIEF, ANSWER, PROPOSALS and RECEIPT,
//! fitting to the request's `budget` with `parley_core::fit::fit_reply`;
//! the elided remainders are kept behind handles bound to the proof key.

pub mod app;
pub mod auth;
mod commit;
pub mod error;
mod expand;
mod intent;
pub mod ledger;
pub mod params;
pub mod request;
pub mod server;
pub mod store;
mod undo;

pub use app::{
    App, Caller, Capability, CapabilityKind, ClarifyOption, Plan, Planned, Progress, Reversal,
    ServiceInfo,
};
pub use error::{ErrorCode, Fix, ParleyError};
pub use request::{Request, Verb};

use crate::clock::Clock;
use parley_core::caveat::RequestContext;
use parley_core::proof::Target;
use parley_core::{Dialect, PublicKey};
use serde_json::{json, Value};
use std::sync::Arc;

use auth::Presented;
use ledger::Ledger;
use store::Store;

/// How long an EXPAND handle lives (§4.6: at least 10 minutes).
pub const HANDLE_TTL: i64 = 900;

/// One request's output: the EVENTs, then the final reply (§2.2). Bodies
/// have no envelope; the transport adds `parley`, `id` and `re`.
#[derive(Debug, Clone, PartialEq)]
pub struct Handled {
    /// The request id the replies answer (`None`: the frame had none).
    pub re: Option<String>,
    /// EVENT bodies, in order.
    pub events: Vec<Value>,
    /// The final reply body.
    pub reply: Value,
}

/// Most revocation statements a service reads; more refuses every grant.
pub const MAX_REVOCATION_FILES: usize = 10_000;

/// Most entries of any kind the revocations directory may hold.
pub const MAX_DIRECTORY_ENTRIES: usize = 4 * MAX_REVOCATION_FILES;

/// The protocol engine for one service.
pub struct Service<A: App> {
    app: A,
    info: ServiceInfo,
    capabilities: Vec<Capability>,
    trusted: Vec<PublicKey>,
    clock: Arc<dyn Clock>,
    store: Store<A::Action>,
    ledger: Ledger,
    dialect: Dialect,
    /// Where revocation statements are read from (an extension), if set.
    revocations: Option<std::path::PathBuf>,
}

impl<A: App> std::fmt::Debug for Service<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service")
            .field("id", &self.info.id)
            .field("trusted", &self.trusted)
            .finish_non_exhaustive()
    }
}

impl<A: App> Service<A> {
    /// A service for `app`, trusting grants rooted in `trusted` principals
    /// (§6.4), reading time from `clock`.
    pub fn new(app: A, trusted: Vec<PublicKey>, clock: Arc<dyn Clock>) -> Service<A> {
        Service::new_in(app, trusted, clock, Dialect::ParleyV1)
    }

    /// [`Service::new`] speaking `dialect`: the frame marker, the usage
    /// field of proposals and receipts, the effect ops and the caveats
    /// grants are judged by all follow it. One engine, the dialect is data.
    pub fn new_in(
        app: A,
        trusted: Vec<PublicKey>,
        clock: Arc<dyn Clock>,
        dialect: Dialect,
    ) -> Service<A> {
        let info = app.info();
        let capabilities = app.capabilities(dialect);
        Service {
            app,
            info,
            capabilities,
            trusted,
            clock,
            store: Store::default(),
            ledger: Ledger::default(),
            dialect,
            revocations: None,
        }
    }

    /// Honours the revocation statements in `dir` (`parley custody revoke`
    /// writes them; an extension of ours): a grant one of them revokes is
    /// refused `forbidden`, its `need` naming the revocation. Read on every
    /// request, so a statement dropped in takes effect at once.
    pub fn with_revocations(mut self, dir: std::path::PathBuf) -> Service<A> {
        self.revocations = Some(dir);
        self
    }

    /// The grant and proof `req` presents for `target`, checked against this
    /// service's id, the principals it trusts and the revocations it holds
    /// now ([`auth::presented`]); `None` when it presents neither.
    fn presented(
        &self,
        req: &Request,
        target: &Target<'_>,
        now: i64,
    ) -> Result<Option<Presented>, ParleyError> {
        auth::presented(req, &self.info.id, target, now, &self.trusted, || {
            self.revocations()
        })
    }

    /// The valid statements in the revocations directory
    /// ([`read_revocations`]); none when the service has no directory.
    fn revocations(&self) -> Result<Vec<parley_core::revocation::Revocation>, ParleyError> {
        match &self.revocations {
            Some(dir) => read_revocations(dir),
            None => Ok(Vec::new()),
        }
    }

    /// The dialect this service speaks.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// YEA: the exact quantity of `measure` committed or reserved against
    /// one grant block (§6.3 `total`), in units of 10^-18.
    pub fn used(&self, block_id: &str, measure: &str) -> u128 {
        self.ledger.used(block_id, measure).0
    }

    /// The service's identity.
    pub fn info(&self) -> &ServiceInfo {
        &self.info
    }

    /// The app.
    pub fn app(&self) -> &A {
        &self.app
    }

    /// Spend reserved so far against one grant block (§6.3).
    pub fn spent(&self, block_id: &str) -> i64 {
        self.ledger.spent(block_id)
    }

    /// Handles one request frame (already parsed as strict JSON).
    pub async fn handle(&self, frame: &Value) -> Handled {
        let req = match Request::parse(frame, self.dialect) {
            Ok(r) => r,
            Err(rejected) => {
                return Handled {
                    re: rejected.re,
                    events: Vec::new(),
                    reply: rejected.error.to_body(),
                }
            }
        };
        let mut events = Vec::new();
        let result = match req.verb {
            Verb::Hello => Ok(self.hello(&req)),
            Verb::Ask => self.ask(&req),
            Verb::Intent => self.intent(&req, &mut events).await,
            Verb::Commit => self.commit(&req, &mut events).await,
            Verb::Undo => self.undo(&req).await,
            Verb::Expand => self.expand(&req),
        };
        Handled {
            re: Some(req.id),
            events,
            reply: result.unwrap_or_else(|e| e.to_body()),
        }
    }

    /// HELLO → BRIEF (§4.1). Capabilities are whole entries; if the budget
    /// is small, trailing ones are elided behind a handle (§8).
    fn hello(&self, req: &Request) -> Value {
        let body = json!({
            "kind": "BRIEF",
            "service": {"id": self.info.id, "name": self.info.name, "summary": self.info.summary},
            "capabilities": self.capabilities.iter().map(Capability::to_value).collect::<Vec<_>>(),
        });
        self.fit(body, req.budget, None, "")
    }

    /// ASK → ANSWER (§4.2). Grants are optional; when presented they must
    /// authorize the ASK (a credential that does not cover a request is
    /// refused, not ignored).
    fn ask(&self, req: &Request) -> Result<Value, ParleyError> {
        let name = req.field("capability")?;
        let cap = self.capability(name, CapabilityKind::Ask)?;
        let params = req.params()?;
        let now = self.clock.now();
        let target = Target::Ask {
            capability: &cap.name,
        };
        let presented = self.presented(req, &target, now)?;
        let principal = self.authorize_read(presented.as_ref(), Verb::Ask, &cap.name, now)?;
        let data = self.app.ask(
            &cap.name,
            &params,
            &Caller {
                principal: principal.as_ref(),
                now,
                dialect: self.dialect,
            },
        )?;
        let body = json!({"kind": "ANSWER", "data": data});
        Ok(self.fit(
            body,
            req.budget,
            presented.as_ref().map(|p| &p.key),
            &cap.name,
        ))
    }

    /// The context of a request that is not a COMMIT.
    fn context(&self, verb: Verb, capability: &str, now: i64) -> RequestContext {
        RequestContext {
            service: self.info.id.clone(),
            verb: verb.as_str().into(),
            capability: capability.into(),
            now,
            proposal: None,
            spent: Default::default(),
            dialect: self.dialect,
            ..Default::default()
        }
    }

    /// For ASK, INTENT and EXPAND: grants are optional, but presented ones
    /// must authorize the request. Returns the authorizing principal.
    fn authorize_read(
        &self,
        presented: Option<&Presented>,
        verb: Verb,
        capability: &str,
        now: i64,
    ) -> Result<Option<PublicKey>, ParleyError> {
        let Some(p) = presented.filter(|p| p.has_grants()) else {
            return Ok(None);
        };
        let outcome = p.evaluate(&self.context(verb, capability, now), None);
        if let Some(e) = outcome.refusal(verb.as_str()) {
            return Err(e);
        }
        Ok(match outcome {
            auth::Outcome::Ok(g) => auth::principal_of(g),
            _ => None,
        })
    }

    /// Looks a capability up by name and kind; `unknown_capability` teaches
    /// the right verb or the nearest name (§7).
    fn capability(&self, name: &str, kind: CapabilityKind) -> Result<&Capability, ParleyError> {
        if let Some(c) = self.capabilities.iter().find(|c| c.name == name) {
            if c.kind == kind {
                return Ok(c);
            }
            let verb = match c.kind {
                CapabilityKind::Ask => "ASK",
                CapabilityKind::Intent => "INTENT",
            };
            return Err(ParleyError::new(
                ErrorCode::UnknownCapability,
                format!("{name} is an {} capability", c.kind.as_str()),
            )
            .fix(format!("send it with {verb}")));
        }
        let shown: String = name.chars().take(60).collect();
        let e = ParleyError::new(
            ErrorCode::UnknownCapability,
            format!("{} has no capability named {shown:?}", self.info.id),
        );
        Err(match self.nearest(name) {
            Some(near) => e.fix(format!("did you mean {near}?")),
            None => e.fix(format!(
                "send HELLO to list the {} capabilities",
                self.capabilities.len()
            )),
        })
    }

    fn nearest(&self, name: &str) -> Option<&str> {
        self.capabilities
            .iter()
            .map(|c| (edit_distance(name, &c.name), c.name.as_str()))
            .filter(|(d, _)| *d <= 3)
            .min_by_key(|(d, _)| *d)
            .map(|(_, n)| n)
    }

    /// Fits a reply body to `budget` (§8) and keeps the elided remainders
    /// behind handles, bound to `key` when the request had a verified proof.
    fn fit(&self, body: Value, budget: usize, key: Option<&PublicKey>, capability: &str) -> Value {
        let fitted = parley_core::fit::fit_reply(&body, budget, &mut || crate::ids::random_id("h"));
        if !fitted.elided.is_empty() {
            let now = self.clock.now();
            for e in fitted.elided {
                self.store.add_handle(
                    e.more.handle,
                    store::HandleRecord {
                        rest: e.rest,
                        key: key.cloned(),
                        capability: capability.to_string(),
                        expires: now + HANDLE_TTL,
                    },
                    now,
                );
            }
        }
        fitted.reply
    }
}

/// Levenshtein distance over chars, for "did you mean" (names are short).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().take(64).enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The valid statements in `dir`: its `.json` regular files (not symlinks,
/// FIFOs or devices), each read through at most
/// [`parley_core::revocation::MAX_FILE_BYTES`] + 1 bytes; one that is too
/// big, does not parse or does not verify is skipped and logged. A missing
/// directory holds none. Fails closed (a grant is then refused rather than
/// trusted unchecked) when the directory cannot be read, holds more than
/// [`MAX_REVOCATION_FILES`] `.json` files, or more than
/// [`MAX_DIRECTORY_ENTRIES`] entries in all: ignoring the ones past a cap
/// could ignore the very revocation that matters.
pub fn read_revocations(
    dir: &std::path::Path,
) -> Result<Vec<parley_core::revocation::Revocation>, ParleyError> {
    let unusable = |why: String| {
        eprintln!(
            "playground: the revocations directory {} {why}",
            dir.display()
        );
        ParleyError::forbidden(format!(
            "the revocations directory {} {why}, so no grant can be checked against it",
            dir.display()
        ))
    };
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(unusable(format!("cannot be read ({e})"))
                .fix("make the revocations directory readable by the playground, or remove it"))
        }
    };
    let mut files = Vec::new();
    for (seen, entry) in entries.enumerate() {
        if seen >= MAX_DIRECTORY_ENTRIES {
            return Err(
                unusable(format!("holds more than {MAX_DIRECTORY_ENTRIES} entries"))
                    .fix("keep only revocation statements there"),
            );
        }
        let Ok(entry) = entry else { continue };
        if entry.path().extension().is_some_and(|x| x == "json") {
            if files.len() == MAX_REVOCATION_FILES {
                return Err(
                    unusable(format!("holds more than {MAX_REVOCATION_FILES} statements"))
                        .fix("remove the statements of grants that have expired"),
                );
            }
            files.push(entry.path());
        }
    }
    Ok(files
        .into_iter()
        .filter_map(|path| {
            let parsed = read_revocation_file(&path).and_then(|text| {
                parley_core::revocation::Revocation::parse(&text).map_err(|e| e.to_string())
            });
            parsed
                .map_err(|err| {
                    eprintln!("playground: revocation {} skipped: {err}", path.display())
                })
                .ok()
        })
        .collect())
}

/// One statement file's text: a regular file, not followed through a
/// symlink, at most [`parley_core::revocation::MAX_FILE_BYTES`] bytes.
fn read_revocation_file(path: &std::path::Path) -> Result<String, String> {
    use std::io::Read;
    let max = parley_core::revocation::MAX_FILE_BYTES;
    // `symlink_metadata` does not follow a symlink: a link, a FIFO or a
    // device is never opened (opening a FIFO would block).
    let meta = std::fs::symlink_metadata(path).map_err(|e| e.to_string())?;
    if !meta.file_type().is_file() {
        return Err("not a regular file".into());
    }
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    // Re-checked on what was opened, in case the name was swapped between.
    let opened = file.metadata().map_err(|e| e.to_string())?;
    if !opened.is_file() {
        return Err("not a regular file".into());
    }
    let mut text = String::new();
    file.take(max as u64 + 1)
        .read_to_string(&mut text)
        .map_err(|e| e.to_string())?;
    if text.len() > max {
        return Err(format!("over {max} bytes"));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::edit_distance;

    #[test]
    fn revocations_read_only_regular_json_files_and_refuse_an_unreadable_directory() {
        use super::{read_revocations, MAX_REVOCATION_FILES};
        use parley_core::revocation::{sign, MAX_FILE_BYTES};
        use parley_core::SecretKey;
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("revoked");
        // A missing directory holds no revocations.
        assert!(read_revocations(&dir).unwrap().is_empty());
        std::fs::create_dir(&dir).unwrap();
        let key = SecretKey::from_seed(&zeroize::Zeroizing::new([7; 32]));
        let r = sign(&key, "gid", 100, "lost laptop");
        let good = dir.join(r.file_name());
        std::fs::write(&good, r.to_value().to_string()).unwrap();
        // Many other files first: the cap counts only `.json` files.
        for i in 0..MAX_REVOCATION_FILES {
            std::fs::write(dir.join(format!("note{i}.txt")), "x").unwrap();
        }
        // A symlink to a huge file and a FIFO, both named `*.json`.
        let huge = tmp.path().join("huge");
        std::fs::write(&huge, vec![b' '; MAX_FILE_BYTES * 4]).unwrap();
        std::os::unix::fs::symlink(&huge, dir.join("huge.json")).unwrap();
        std::os::unix::fs::symlink(&good, dir.join("link.json")).unwrap();
        let fifo = dir.join("fifo.json");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo");
        assert_eq!(read_revocations(&dir).unwrap(), vec![r]);
        // A directory that exists but cannot be read (here: a file) refuses.
        let err = read_revocations(&huge).unwrap_err();
        assert_eq!(err.code.as_str(), "forbidden");
        assert!(err.message.contains("revocations directory"), "{err:?}");
    }

    #[test]
    fn more_statements_than_the_cap_refuse_rather_than_ignore_some() {
        use super::{read_revocations, MAX_REVOCATION_FILES};
        let tmp = tempfile::tempdir().unwrap();
        for i in 0..=MAX_REVOCATION_FILES {
            std::fs::write(tmp.path().join(format!("r{i}.json")), "{}").unwrap();
        }
        let err = read_revocations(tmp.path()).unwrap_err();
        assert_eq!(err.code.as_str(), "forbidden");
        assert!(
            err.message.contains("more than 10000 statements"),
            "{err:?}"
        );
        // One fewer: read (each skipped as not a statement), not refused.
        std::fs::remove_file(tmp.path().join("r0.json")).unwrap();
        assert!(read_revocations(tmp.path()).unwrap().is_empty());
    }

    #[test]
    fn distances() {
        assert_eq!(edit_distance("shop.serch", "shop.search"), 1);
        assert_eq!(edit_distance("", "ab"), 2);
        assert_eq!(edit_distance("abc", "abc"), 0);
    }
}

//! A small, deterministic driver for instruction-count profiling of the
//! benchmark workloads (`bench/inputs.json`), e.g.
//!
//! ```text
//! cargo build --release -p parley-core --examples
//! valgrind --tool=callgrind target/release/examples/perf_driver lens 1000
//! ```
//!
//! Workloads: `lens` (a), `lean` (b), `hash` (c), `grant2` (d), `grant3`,
//! `raw3` (three raw `verify_strict`), `raw3bytes` (the same, decoding the
//! key from its bytes each time), `est` (f), `canon` (canonical text of the proposal), `sha` (SHA-256 of
//! that text), `parse` (strict parse of the 16
//! reply frames as text), `ndjson` (parse + Lens of the 16 frames as `Value`s), `node` (the
//! same through the borrowed `json::Node`, as `parley lens --ndjson` does). Each runs N times (default 1000).

use parley_core::caveat::RequestContext;
use parley_core::grant::{self, UnverifiedGrant};
use parley_core::json::{self, Limits};
use parley_core::{estimate, lens, proposal, PublicKey, SecretKey};
use serde_json::Value;
use std::hint::black_box;

fn main() {
    let mut args = std::env::args().skip(1);
    let work = args.next().unwrap_or_else(|| "lens".into());
    let n: usize = args.next().map_or(1000, |s| s.parse().expect("N"));

    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../bench/inputs.json");
    let all: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let replies = all["replies"].as_array().unwrap().clone();
    let reply_texts: Vec<String> = replies.iter().map(Value::to_string).collect();
    let g = &all["grant"];
    let ctx = &g["ctx"];
    let grant_ctx = RequestContext {
        service: ctx["service"].as_str().unwrap().into(),
        verb: ctx["verb"].as_str().unwrap().into(),
        capability: ctx["capability"].as_str().unwrap().into(),
        now: ctx["now"].as_i64().unwrap(),
        ..Default::default()
    };
    let trusted: Vec<PublicKey> = vec![g["trusted"][0].as_str().unwrap().parse().unwrap()];
    let proof_key: PublicKey = g["proofKey"].as_str().unwrap().parse().unwrap();
    let grant2 = g["token"].as_str().unwrap().to_string();
    let sub = SecretKey::from_seed_b64(g["seeds"]["subagent"].as_str().unwrap()).unwrap();
    let last = SecretKey::from_seed_b64(g["seeds"]["mallory"].as_str().unwrap()).unwrap();
    let grant3 = UnverifiedGrant::decode(&grant2)
        .unwrap()
        .delegate(
            &sub,
            &last.public(),
            &[parley_core::Caveat::Exp(1_790_003_000)],
            1_789_999_990,
        )
        .unwrap()
        .encode();
    let holder3 = last.public();
    let ed = &all["ed"];
    let ed_key: PublicKey = format!("ed25519:{}", ed["pub"].as_str().unwrap())
        .parse()
        .unwrap();
    let ed_sig: parley_core::keys::Signature = ed["sig"].as_str().unwrap().parse().unwrap();
    let ed_msg = ed["msg"].as_str().unwrap().as_bytes().to_vec();
    let ed_bytes = *ed_key.as_bytes();
    let table60 = all["table60"].clone();
    let hash_basic = all["hashBasic"]["proposal"].clone();
    let lens10k = all["lens10k"].as_str().unwrap().to_string();
    let canon_text = parley_core::canonical::canonical(&hash_basic).unwrap();

    let mut acc = 0usize;
    let mut scratch = String::new();
    let mut arena = json::Arena::new();
    for _ in 0..n {
        acc += match work.as_str() {
            "lens" => replies
                .iter()
                .map(|r| lens::render_reply(black_box(r)).len())
                .sum(),
            "lean" => lens::lean(black_box(&table60)).len(),
            "hash" => proposal::proposal_hash(black_box(&hash_basic))
                .unwrap()
                .len(),
            "grant2" => usize::from(
                grant::authorize(black_box(&grant2), &trusted, &proof_key, &grant_ctx)
                    == grant::Decision::Ok,
            ),
            "grant3" => usize::from(
                grant::authorize(black_box(&grant3), &trusted, &holder3, &grant_ctx)
                    == grant::Decision::Ok,
            ),
            "raw3" => (0..3)
                .filter(|_| black_box(&ed_key).verify(&ed_msg, &ed_sig).is_ok())
                .count(),
            "raw3bytes" => (0..3)
                .filter(|_| {
                    PublicKey::from_bytes(black_box(&ed_bytes))
                        .is_ok_and(|k| k.verify(&ed_msg, &ed_sig).is_ok())
                })
                .count(),
            "est" => estimate::est(black_box(&lens10k)),
            "canon" => parley_core::canonical::canonical(black_box(&hash_basic))
                .unwrap()
                .len(),
            "sha" => {
                use sha2::Digest;
                sha2::Sha256::digest(black_box(&canon_text).as_bytes())[0] as usize
            }
            "parse" => reply_texts
                .iter()
                .map(|t| json::parse(black_box(t.as_bytes()), Limits::FRAME).is_ok() as usize)
                .sum(),
            "node" => reply_texts
                .iter()
                .map(|t| {
                    arena.reset();
                    let v =
                        json::parse_node(black_box(t.as_bytes()), Limits::FRAME, &arena).unwrap();
                    lens::render_into(&v, &mut scratch);
                    scratch.len()
                })
                .sum(),
            "ndjson" => reply_texts
                .iter()
                .map(|t| {
                    let v = json::parse(black_box(t.as_bytes()), Limits::FRAME).unwrap();
                    lens::render(&v).len()
                })
                .sum(),
            other => panic!("unknown workload {other}"),
        };
    }
    println!("{work} x{n}: {acc}");
}

//! `pg1.` tokens as an agent or service would send them: decode, verify
//! (chain and trust), evaluate on every verb. Never panics; a token that
//! decodes re-encodes to one that decodes to the same grant; a chain with a
//! malformed caveat never authorizes anything.
#![no_main]

use libfuzzer_sys::fuzz_target;
use parley_core::caveat::Caveat;
use parley_core::grant::{authorize, Decision, UnverifiedGrant, MAX_BLOCKS, MAX_CAVEATS_PER_BLOCK};
use parley_core::PublicKey;
use parley_fuzz::{agent, contexts, key, principal};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let decoded = UnverifiedGrant::decode(&text);
    let trusted = [principal().public()];
    if let Ok(g) = &decoded {
        assert!((1..=MAX_BLOCKS).contains(&g.blocks().len()));
        let again = UnverifiedGrant::decode(&g.encode()).expect("a re-encoded grant decodes");
        assert_eq!(&again, g, "re-encoding changed the grant");
        let _ = (g.issuer(), g.holder(), g.id(), g.expiry());
        let mut any_invalid = false;
        for b in g.blocks() {
            assert!(b.caveats().len() <= MAX_CAVEATS_PER_BLOCK);
            for c in b.caveats() {
                let _ = c.describe();
                if c.is_well_formed() {
                    assert_eq!(&Caveat::parse(&c.to_value()), c, "caveat round trip");
                } else {
                    any_invalid = true;
                }
            }
        }
        if let Ok(chain) = g.verify_chain() {
            // A signed chain is evaluated only once a root is trusted: here,
            // on purpose, its own issuer, so that whoever signed it, a
            // malformed caveat is seen to fail closed. (A holder that is not
            // a valid key can never present a proof; such a chain is skipped.)
            let root: PublicKey = g
                .issuer()
                .parse()
                .expect("a signed chain's issuer is a key");
            if let Ok(holder) = g.holder().parse::<PublicKey>() {
                let v = g
                    .verify(&[root], &holder)
                    .expect("a signed chain verifies under its own issuer");
                assert_eq!(v.block_ids(), chain.block_ids());
                for ctx in contexts() {
                    let d = v.evaluate(ctx);
                    if any_invalid {
                        assert!(
                            matches!(d, Decision::Forbidden { .. }),
                            "a malformed caveat did not fail closed: {d:?}"
                        );
                    }
                }
            }
        }
    }
    // The one-step path a service takes, with the holder the token names and
    // with the vectors' agent key.
    let holder: Option<PublicKey> = decoded.as_ref().ok().and_then(|g| g.holder().parse().ok());
    let keys = [holder, Some(agent().public()), Some(key(3).public())];
    for proof_key in keys.iter().flatten() {
        for ctx in contexts() {
            let d = authorize(&text, &trusted, proof_key, ctx);
            if decoded.is_err() {
                assert_eq!(d.code(), "unauthorized");
            }
        }
    }
});

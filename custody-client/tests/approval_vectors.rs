//! Upstream YEA's `conformance/approval.json` (job-tool approvals; where it
//! comes from: `conformance/yea/SOURCE.md`), the agent side's parts:
//! `phrases` (matching), `phraseChecks` (what can be typed) and the
//! consent file of `fileStore`. The plan hash, the code and the consent
//! run in `core/tests/conformance_approval.rs`.

use parley_custody_client::{phrase, yea_store};
use serde_json::Value;
use std::path::PathBuf;

fn vectors() -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../conformance/yea/approval.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("approval.json")).expect("json")
}

/// Four characters of `phrases` could not be confirmed against upstream
/// (SOURCE.md, "Inferred, not confirmed"): they were written back as a best
/// guess of the same length. The cases they are in still run; they are
/// named here so a failure there is read as a question about the copy.
const UNCONFIRMED: [(usize, &str); 4] = [
    (
        1,
        "typed: U+00A0 before and U+FEFF after old-nav (a non-ASCII blank; one hidden character)",
    ),
    (2, "typed: U+200B after old-nav (one hidden character)"),
    (3, "typed: e + U+0301 for é (café in 5 code points)"),
    (7, "typed: U+2003 before approve (a non-ASCII blank)"),
];

#[test]
fn phrases_match_as_upstream_says() {
    let v = vectors();
    let cases = v["phrases"].as_array().unwrap();
    assert_eq!(cases.len(), 16);
    for (i, case) in cases.iter().enumerate() {
        let typed = case["typed"].as_str().unwrap();
        let want = case["phrase"].as_str().unwrap();
        let note = UNCONFIRMED
            .iter()
            .find(|(n, _)| *n == i)
            .map(|(_, w)| format!(" (unconfirmed characters: {w})"))
            .unwrap_or_default();
        assert_eq!(
            phrase::matches(typed, want),
            case["match"].as_bool().unwrap(),
            "phrases[{i}] {typed:?} vs {want:?}{note}"
        );
    }
}

/// `phraseChecks` at `117ab8b7` predates the spec's stricter rule
/// (SPEC-approval §3, copied from `6a9c483e`: a tab or any `Zs` space inside
/// a phrase is refused; SOURCE.md says so). We follow the spec: the one case
/// it changes, `old\tnav`, is refused here, and is checked as such by name.
const SPEC_IS_STRICTER: &str = "old\tnav";

#[test]
fn phrase_checks_refuse_what_cannot_be_typed() {
    let v = vectors();
    let cases = v["phraseChecks"].as_array().unwrap();
    assert_eq!(cases.len(), 11);
    for case in cases {
        let named = case["phrase"].as_str().unwrap();
        if named == SPEC_IS_STRICTER {
            assert_eq!(
                case["expect"].as_str(),
                Some(named),
                "the vector's older rule"
            );
            assert!(
                matches!(
                    phrase::phrase_for(named),
                    Err(phrase::PhraseError::InnerSpace { .. })
                ),
                "the spec's rule refuses a tab inside"
            );
            continue;
        }
        let got = phrase::phrase_for(named).ok();
        assert_eq!(
            got.as_deref(),
            case["expect"].as_str(),
            "phraseChecks {named:?}"
        );
    }
}

#[test]
fn the_consent_file_is_laid_out_as_the_file_store_reads_it() {
    let v = vectors();
    let files = v["fileStore"]["files"].as_object().unwrap();
    let hash = v["consents"]["plan"]["planHash"].as_str().unwrap();
    let name = format!("consents/{hash}");
    let expected = files[&name].as_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let now = v["consents"]["cases"][0]["now"].as_i64().unwrap();
    let path = yea_store::write_consent(&store, hash, expected, now).unwrap();
    assert_eq!(path, store.join(&name));
    assert_eq!(std::fs::read(&path).unwrap(), expected.as_bytes());
    assert_eq!(
        yea_store::read_consent(&store, hash).unwrap().as_deref(),
        Some(expected)
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&store), 0o700);
        assert_eq!(mode(&store.join("consents")), 0o700);
    }
    // The vector's file holds no real consent ("pg1.example"): it counts as
    // absent, so a real consent replaces it.
    let live = v["consents"]["cases"][0]["grant"].as_str().unwrap();
    yea_store::write_consent(&store, hash, live, now).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), live.as_bytes());
    // A live consent (unused, unexpired) is never replaced.
    let again = yea_store::write_consent(&store, hash, "pg1.other", now);
    assert!(
        matches!(again, Err(yea_store::StoreError::Exists(_))),
        "{again:?}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), live.as_bytes());
    // Once the server consumed it, approving the same plan again replaces it.
    let id = v["consents"]["cases"][0]["expect"]["id"].as_str().unwrap();
    let consumed = store.join("consumed");
    std::fs::create_dir_all(&consumed).unwrap();
    std::fs::write(
        consumed.join(parley_core::job::consumed_marker(id)),
        "1790000600",
    )
    .unwrap();
    yea_store::write_consent(&store, hash, "pg1.other", now).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"pg1.other");
    // No temp file left behind.
    let left: Vec<_> = std::fs::read_dir(store.join("consents")).unwrap().collect();
    assert_eq!(left.len(), 1);
}

#[test]
fn an_expired_consent_is_replaced_by_a_new_approval_of_the_same_plan() {
    let v = vectors();
    let hash = v["consents"]["plan"]["planHash"].as_str().unwrap();
    let case = &v["consents"]["cases"][0];
    let live = case["grant"].as_str().unwrap();
    let now = case["now"].as_i64().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let path = yea_store::write_consent(&store, hash, live, now).unwrap();
    // 600 s later it has expired (the vectors' "an expired consent").
    yea_store::write_consent(&store, hash, "pg1.fresh", now + 600).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"pg1.fresh");
}

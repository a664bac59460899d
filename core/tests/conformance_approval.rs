//! Runs the core's parts of upstream YEA's `conformance/approval.json`
//! (job-tool approvals, SPEC-approval; where it comes from:
//! `conformance/yea/SOURCE.md`): `hash`, `consentCode` and `consents`.
//! `phrases`, `phraseChecks` and `fileStore`'s consent file run in
//! custody-client (`tests/approval_phrases.rs`, `tests/approval_store.rs`);
//! `decide`, `states`, `judge`, `undo`, `tightening` and `forms` in the
//! playground's job server.

use parley_core::job::{self, ConsentRefusal, JobError};
use parley_core::{PublicKey, SecretKey};
use serde_json::Value;

mod vectors;

fn vectors() -> Value {
    vectors::load("yea/approval.json")
}

fn key(v: &Value, name: &str) -> PublicKey {
    v["keys"][name].as_str().unwrap().parse().unwrap()
}

fn secret(v: &Value, name: &str) -> SecretKey {
    SecretKey::from_seed_b64(v["seeds"][name].as_str().unwrap()).unwrap()
}

#[test]
fn plan_hashes_match_and_a_float_input_has_none() {
    let v = vectors();
    let cases = v["hash"].as_array().unwrap();
    assert_eq!(cases.len(), 6);
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let got = job::plan_of(
            case["tool"]["name"].as_str().unwrap(),
            case["tool"]["risk"].as_str(),
            &case["input"],
            &case["plan"],
        );
        if case["error"] == true {
            assert!(
                matches!(got, Err(JobError::NonInteger(_))),
                "{name}: {got:?}"
            );
            continue;
        }
        let plan = got.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(plan.hash, case["planHash"].as_str().unwrap(), "{name}");
        assert_eq!(plan.risk.as_str(), case["risk"].as_str().unwrap(), "{name}");
        // `undoable` also needs the tool's `revert`: the server's side.
        if case["undoable"] == true {
            assert!(plan.undoable(), "{name}");
        }
        // The preimage read back from a code hashes the same.
        let again = job::JobPlan::from_job(&plan.preimage()).unwrap();
        assert_eq!(again.hash, plan.hash, "{name}");
    }
}

#[test]
fn the_consent_code_encodes_byte_for_byte_and_checks() {
    let v = vectors();
    let c = &v["consentCode"];
    let now = c["now"].as_i64().unwrap();
    let server = key(&v, "server");
    let principal = key(&v, "principal");
    assert_eq!(c["server"].as_str().unwrap(), server.to_string());
    let plan = job::plan_of(
        c["plan"]["tool"].as_str().unwrap(),
        None,
        &c["input"],
        &c["plan"]["plan"],
    )
    .unwrap();
    assert_eq!(plan.hash, c["plan"]["planHash"].as_str().unwrap());
    let request = job::consent_request(&plan, &server, &principal, now);
    let code = job::encode_code(&request, &plan, c["phrase"].as_str().unwrap()).unwrap();
    assert_eq!(code, c["code"].as_str().unwrap());

    let decoded = job::decode_code(&code).unwrap();
    assert_eq!(decoded.phrase, "approve");
    let checked = job::check_code(decoded, &principal, now).unwrap();
    assert_eq!(checked.plan().hash, plan.hash);
    assert_eq!(checked.exp(), now + 600);
    assert_eq!(checked.server(), &server);
}

#[test]
fn the_consent_signed_for_a_code_is_the_vectors_consent_byte_for_byte() {
    let v = vectors();
    let c = &v["consentCode"];
    let now = c["now"].as_i64().unwrap();
    let checked = job::check_code(
        job::decode_code(c["code"].as_str().unwrap()).unwrap(),
        &key(&v, "principal"),
        now,
    )
    .unwrap();
    // Upstream's generator names its nonce `c-<first 6 of the hash>-<exp>`;
    // custody uses a random one, which changes nothing the server checks.
    let nonce = format!("c-{}-{}", &checked.plan().hash[..6], checked.exp());
    let grant = job::issue_job_consent(&secret(&v, "principal"), &checked, now, &nonce).unwrap();
    let expected = &v["consents"]["cases"][0];
    assert_eq!(expected["name"], "a consent for this plan");
    assert_eq!(grant.encode(), expected["grant"].as_str().unwrap());
    // The stranger's key cannot sign for the principal the code names.
    assert!(job::issue_job_consent(&secret(&v, "stranger"), &checked, now, &nonce).is_err());
}

#[test]
fn stored_consents_are_judged_as_the_server_does() {
    let v = vectors();
    let plan = &v["consents"]["plan"];
    let hash = plan["planHash"].as_str().unwrap();
    let tool = plan["tool"].as_str().unwrap();
    let server = key(&v, "server");
    let principal = key(&v, "principal");
    let cases = v["consents"]["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 7);
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let now = case["now"].as_i64().unwrap();
        let got = job::check_job_consent(
            case["grant"].as_str().unwrap(),
            hash,
            tool,
            &server,
            &principal,
            now,
        );
        if case["expect"]["ok"] == true {
            assert_eq!(
                got,
                Ok(case["expect"]["id"].as_str().unwrap().to_string()),
                "{name}"
            );
        } else {
            let why = got.expect_err(name).to_string();
            assert_eq!(why, case["expect"]["why"].as_str().unwrap(), "{name}");
        }
    }
    let _ = ConsentRefusal::NotForThisPlan;
}

fn code_with(v: &Value, edit: impl FnOnce(&mut Value)) -> String {
    let c = &v["consentCode"];
    let text = c["code"].as_str().unwrap();
    let body = parley_core::b64::decode(&text[4..]).unwrap();
    let mut body: Value = serde_json::from_slice(&body).unwrap();
    edit(&mut body);
    format!(
        "pc1.{}",
        parley_core::b64::encode(parley_core::canonical::canonical(&body).unwrap())
    )
}

fn refusal(v: &Value, code: &str, now_offset: i64) -> JobError {
    let now = v["consentCode"]["now"].as_i64().unwrap() + now_offset;
    job::decode_code(code)
        .and_then(|c| job::check_code(c, &key(v, "principal"), now))
        .expect_err("refused")
}

#[test]
fn a_code_whose_job_does_not_hash_to_its_hash_is_refused() {
    let v = vectors();
    let code = code_with(&v, |b| b["detail"]["job"]["input"]["n"] = 3.into());
    assert_eq!(refusal(&v, &code, 0).kind(), "hash_mismatch");
    let code = code_with(&v, |b| b["proposal"] = "other".into());
    assert_eq!(refusal(&v, &code, 0).kind(), "proposal_mismatch");
    let code = code_with(&v, |b| b["capability"] = "refund_all".into());
    assert_eq!(refusal(&v, &code, 0).kind(), "capability_mismatch");
    let code = code_with(&v, |b| b["detail"]["job"]["note"] = "unhashed".into());
    assert_eq!(refusal(&v, &code, 0).kind(), "job_malformed");
}

#[test]
fn an_expired_code_and_one_for_another_principal_are_refused() {
    let v = vectors();
    let code = v["consentCode"]["code"].as_str().unwrap().to_string();
    assert_eq!(refusal(&v, &code, 600).kind(), "expired");
    let stranger = secret(&v, "stranger").public().to_string();
    let code = code_with(&v, |b| b["principal"] = stranger.into());
    assert_eq!(refusal(&v, &code, 0).kind(), "other_principal");
}

#[test]
fn a_code_whose_input_holds_a_float_is_refused() {
    let v = vectors();
    let text = v["consentCode"]["code"].as_str().unwrap();
    let body = String::from_utf8(parley_core::b64::decode(&text[4..]).unwrap()).unwrap();
    let body = body.replace("\"n\":2", "\"n\":2.5");
    let code = format!("pc1.{}", parley_core::b64::encode(body));
    let e = refusal(&v, &code, 0);
    assert!(matches!(e.kind(), "non_integer" | "code"), "{e}");
}

#[test]
fn a_code_lives_at_most_ten_minutes_whatever_it_says() {
    let v = vectors();
    let code = code_with(&v, |b| b["expires"] = 1_790_009_999.into());
    let now = v["consentCode"]["now"].as_i64().unwrap();
    let checked =
        job::check_code(job::decode_code(&code).unwrap(), &key(&v, "principal"), now).unwrap();
    assert_eq!(checked.exp(), now + 600);
}

#[test]
fn a_checked_job_signed_as_a_consent_for_the_server_is_the_job_consent() {
    let v = vectors();
    let c = &v["consentCode"];
    let now = c["now"].as_i64().unwrap();
    let checked = job::check_code(
        job::decode_code(c["code"].as_str().unwrap()).unwrap(),
        &key(&v, "principal"),
        now,
    )
    .unwrap();
    let consent = checked.consent().unwrap();
    assert_eq!(consent.proposal().hash, checked.plan().hash);
    assert_eq!(consent.caveats(), checked.caveats());
    let nonce = format!("c-{}-{}", &checked.plan().hash[..6], checked.exp());
    let a = parley_core::consent::issue_consent(
        &secret(&v, "principal"),
        checked.server(),
        &consent,
        now,
        &nonce,
    )
    .unwrap();
    assert_eq!(
        a.encode(),
        v["consents"]["cases"][0]["grant"].as_str().unwrap()
    );
}

#[test]
fn a_stored_consent_is_live_only_unused_and_unexpired() {
    use job::StoredConsent::{Live, Spent};
    let v = vectors();
    let case = &v["consents"]["cases"][0];
    assert_eq!(case["name"], "a consent for this plan");
    let grant = case["grant"].as_str().unwrap();
    let id = case["expect"]["id"].as_str().unwrap();
    let now = case["now"].as_i64().unwrap();
    let unused = |_: &str| false;
    assert_eq!(job::stored_consent(grant, now, unused), Live);
    // Used once: the server's marker is under the consent's own id.
    assert_eq!(job::stored_consent(grant, now, |c| c == id), Spent);
    assert_eq!(job::stored_consent(grant, now, |c| c == "another"), Live);
    // Expired (the vector's expired case is this consent 600 s later).
    assert_eq!(job::stored_consent(grant, now + 600, unused), Spent);
    assert_eq!(job::stored_consent("not a grant", now, unused), Spent);
    // The marker name is the store's: b64url(sha256(id)).
    assert_eq!(
        job::consumed_marker("n_1"),
        "WDKSoRuiQ4FKzxcrRUH-G1gXsfj5_6UGiyP1fzmW1Ac"
    );
}

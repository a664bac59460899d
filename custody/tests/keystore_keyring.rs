//! The key store against a real gnome-keyring in a private D-Bus session,
//! and the passphrase-encrypted file store against real files.
//!
//! # How the keyring tests run
//! A keyring test calls [`in_session`] first. In the normal test run
//! (`PARLEY_TEST_IN_KEYRING` unset) that spawns
//! `dbus-run-session -- sh -c '<unlock gnome-keyring, wait for it on the bus>; exec "$@"'`
//! running this same test binary with `--exact <test name>` and
//! `PARLEY_TEST_IN_KEYRING=1`, in a fresh `HOME`, `XDG_DATA_HOME`,
//! `XDG_RUNTIME_DIR` (0700) and `PARLEY_CUSTODY_DATA`, and asserts the child
//! ran exactly that one test and it passed; then returns `false` and the
//! parent's copy of the test ends. In the child it returns `true` and the
//! test body runs against the private keyring. Each test gets its own bus and
//! daemon, so they may run in parallel and never touch the developer's
//! real keychain. Missing tools make the test FAIL, naming the packages.

use parley_core::keys::{PublicKey, SecretKey};
use parley_custody::keystore::{
    shred_file, KdfParams, KeySource, KeyStatus, Keystore, KeystoreError, Passphrase, StoreKind,
};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use zeroize::Zeroizing;

mod support;
use support::*;

fn write_seed_file(path: &Path, seed: [u8; 32], trailing_newline: bool) -> String {
    let text = parley_core::b64::encode(seed);
    let content = if trailing_newline {
        format!("{text}\n")
    } else {
        text.clone()
    };
    std::fs::write(path, content).unwrap();
    text
}

fn assert_signs(ks: &Keystore, public: &PublicKey) {
    let secret = ks.load_for_tests(public).unwrap();
    assert_eq!(&secret.public(), public);
    let sig = secret.sign(b"parley test message");
    public.verify(b"parley test message", &sig).unwrap();
}

fn no_secret_in(text: &str, secrets: &[&str]) {
    for s in secrets {
        assert!(!text.contains(s), "a secret leaked into: {text}");
    }
}

// ---------------------------------------------------------------- keychain

#[test]
fn keychain_create_list_load_import_shred_delete() {
    if !in_session(
        "keychain_create_list_load_import_shred_delete",
        Session::Keyring,
    ) {
        return;
    }
    let ks = Keystore::keychain().unwrap();
    assert_eq!(
        ks.kind(),
        StoreKind::Keychain {
            service: format!("parley-custody.{NAMESPACE}")
        }
    );
    assert!(ks.list().unwrap().is_empty());

    // create → list → load signs and verifies
    let a = ks.create("Alice main").unwrap();
    let listed = ks.list().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].public, a);
    assert_eq!(listed[0].label, "Alice main");
    assert_eq!(listed[0].source, KeySource::Created);
    assert_eq!(listed[0].status, KeyStatus::Present);
    assert!(listed[0].created_at > 1_600_000_000);
    assert_signs(&ks, &a);
    assert_eq!(ks.public_keys().unwrap(), vec![a.clone()]);

    // import an upstream principal.key, once
    let key_file = scratch().join("principal.key");
    let seed_b = [42u8; 32];
    let seed_b_text = write_seed_file(&key_file, seed_b, true);
    let expected_b = SecretKey::from_seed(&Zeroizing::new(seed_b)).public();
    let b = ks.import_seed_file(&key_file, "from parley init").unwrap();
    assert_eq!(b, expected_b);
    assert_signs(&ks, &b);
    let again = ks.import_seed_file(&key_file, "again").unwrap_err();
    assert!(
        matches!(&again, KeystoreError::AlreadyPresent(k) if *k == b.to_string()),
        "{again}"
    );
    assert!(again.to_string().contains("imported once"));
    let listed = ks.list().unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[1].label, "from parley init");
    assert_eq!(listed[1].source, KeySource::Imported);

    // a created key cannot be "imported" over either
    let seed_a_text = ks.load_for_tests(&a).unwrap().to_seed_b64();
    let file_a = scratch().join("a.key");
    std::fs::write(&file_a, seed_a_text.as_bytes()).unwrap();
    assert!(matches!(
        ks.import_seed_file(&file_a, "dup"),
        Err(KeystoreError::AlreadyPresent(_))
    ));

    // shred removes the file
    shred_file(&key_file).unwrap();
    shred_file(&file_a).unwrap();
    assert!(!key_file.exists() && !file_a.exists());

    // the keys live in the keychain, not in this object
    let fresh = Keystore::keychain().unwrap();
    assert_eq!(fresh.public_keys().unwrap(), vec![a.clone(), b.clone()]);

    // secrets never appear in Debug output, errors, or the index entry
    let secrets = [seed_a_text.as_str(), seed_b_text.as_str()];
    let index = keyring::Entry::new(&format!("parley-custody.{NAMESPACE}"), "index")
        .unwrap()
        .get_password()
        .unwrap();
    assert!(index.contains(&a.to_string()) && index.contains(&b.to_string()));
    no_secret_in(&index, &secrets);
    let loaded = ks.load_for_tests(&b).unwrap();
    no_secret_in(
        &format!(
            "{ks:?} {:?} {loaded:?} {again:?} {again} {:?}",
            ks.list().unwrap(),
            ks.public_keys().unwrap()
        ),
        &secrets,
    );
    let as_json = serde_json::to_string(&ks.list().unwrap()).unwrap();
    no_secret_in(&as_json, &secrets);

    // delete demands the full key text again
    for wrong in ["", "yes", &a.to_string(), &b.short(), &format!(" {b}")] {
        let err = ks.delete(&b, wrong).unwrap_err();
        assert!(
            matches!(err, KeystoreError::ConfirmationMismatch(_)),
            "{err}"
        );
    }
    assert_eq!(ks.public_keys().unwrap().len(), 2, "nothing was deleted");
    ks.delete(&b, &b.to_string()).unwrap();
    assert_eq!(ks.public_keys().unwrap(), vec![a.clone()]);
    assert!(matches!(
        ks.load_for_tests(&b),
        Err(KeystoreError::NotFound(_))
    ));
    assert!(matches!(
        ks.delete(&b, &b.to_string()),
        Err(KeystoreError::NotFound(_))
    ));
    // deleted means re-importable
    write_seed_file(&key_file, seed_b, false);
    assert_eq!(ks.import_seed_file(&key_file, "back").unwrap(), b);
}

#[test]
fn keychain_index_naming_a_missing_secret_lists_it_as_missing() {
    if !in_session(
        "keychain_index_naming_a_missing_secret_lists_it_as_missing",
        Session::Keyring,
    ) {
        return;
    }
    let ks = Keystore::keychain().unwrap();
    let a = ks.create("will lose its secret").unwrap();
    let b = ks.create("stays").unwrap();
    // Someone deletes the secret entry with a keychain tool.
    keyring::Entry::new(&format!("parley-custody.{NAMESPACE}"), &a.to_string())
        .unwrap()
        .delete_credential()
        .unwrap();
    let listed = ks.list().unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0].status, KeyStatus::Missing);
    assert_eq!(listed[1].status, KeyStatus::Present);
    assert_eq!(ks.public_keys().unwrap(), vec![b.clone()]);
    let err = ks.load_for_tests(&a).unwrap_err();
    assert!(matches!(err, KeystoreError::SecretMissing(_)), "{err}");
    // The stale record can be deleted (with confirmation).
    ks.delete(&a, &a.to_string()).unwrap();
    assert_eq!(ks.list().unwrap().len(), 1);
}

#[test]
fn keychain_namespaces_are_separate() {
    if !in_session("keychain_namespaces_are_separate", Session::Keyring) {
        return;
    }
    let test_ns = Keystore::keychain().unwrap();
    let other = Keystore::keychain_namespaced(Some("other")).unwrap();
    let a = test_ns.create("in test").unwrap();
    assert!(other.list().unwrap().is_empty());
    assert!(matches!(
        other.load_for_tests(&a),
        Err(KeystoreError::NotFound(_))
    ));
    assert!(Keystore::keychain_namespaced(Some("../x")).is_err());
}

#[test]
fn keychain_swapped_entry_is_refused() {
    if !in_session("keychain_swapped_entry_is_refused", Session::Keyring) {
        return;
    }
    let ks = Keystore::keychain().unwrap();
    let a = ks.create("victim").unwrap();
    // Another key's seed filed under a's name: load must not sign with it.
    keyring::Entry::new(&format!("parley-custody.{NAMESPACE}"), &a.to_string())
        .unwrap()
        .set_password(&parley_core::b64::encode([7u8; 32]))
        .unwrap();
    let err = ks.load_for_tests(&a).unwrap_err();
    assert!(matches!(err, KeystoreError::WrongKeyStored(_)), "{err}");
}

#[test]
fn keychain_locked_gives_a_clear_error() {
    if !in_session("keychain_locked_gives_a_clear_error", Session::Keyring) {
        return;
    }
    let ks = Keystore::keychain().unwrap();
    let a = ks.create("before lock").unwrap();
    let status = Command::new("dbus-send")
        .args([
            "--session",
            "--print-reply",
            "--dest=org.freedesktop.secrets",
            "/org/freedesktop/secrets",
            "org.freedesktop.Secret.Service.Lock",
            "array:objpath:/org/freedesktop/secrets/collection/login",
        ])
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "could not lock the login keyring");
    let err = ks.load_for_tests(&a).unwrap_err();
    assert!(
        matches!(err, KeystoreError::KeychainLocked { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("unlock"), "{err}");
    let err = ks.create("while locked").unwrap_err();
    assert!(
        matches!(err, KeystoreError::KeychainLocked { .. }),
        "{err:?}"
    );
}

#[test]
fn keychain_without_a_bus_gives_a_clear_error() {
    if !in_session("keychain_without_a_bus_gives_a_clear_error", Session::NoBus) {
        return;
    }
    let ks = Keystore::keychain().unwrap();
    for err in [
        ks.create("x").unwrap_err(),
        ks.list().unwrap_err(),
        ks.load_for_tests(&SecretKey::from_seed(&Zeroizing::new([1u8; 32])).public())
            .unwrap_err(),
    ] {
        assert!(
            matches!(err, KeystoreError::NoSecretService { .. }),
            "{err:?}"
        );
        let msg = err.to_string();
        assert!(
            msg.contains("no Secret Service on the session bus"),
            "{msg}"
        );
        assert!(msg.contains("gnome-keyring-daemon"), "{msg}");
        assert!(msg.contains("--file-store"), "{msg}");
    }
}

// -------------------------------------------------------------- file store

fn cheap() -> KdfParams {
    KdfParams::new(KdfParams::MIN_M_KIB, 1, 1).unwrap()
}

fn pass(p: &str) -> Passphrase {
    Passphrase::new(Zeroizing::new(p.to_owned()))
}

fn only_file(dir: &Path) -> PathBuf {
    let files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files[0].clone()
}

#[test]
fn file_store_round_trip_with_default_costs() {
    // Argon2id at 64 MiB × 3 passes is slow in a debug build (seconds per
    // run): this test derives twice (create, load); the others use cheap costs.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("keys");
    let ks = Keystore::file_store(&dir, pass("correct horse battery")).unwrap();
    assert_eq!(ks.kind(), StoreKind::File { dir: dir.clone() });
    let a = ks.create("server key").unwrap();
    let listed = ks.list().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].label, "server key");
    assert_eq!(listed[0].status, KeyStatus::Present);
    let secret = ks.load_for_tests(&a).unwrap();
    assert_eq!(secret.public(), a);
    a.verify(b"m", &secret.sign(b"m")).unwrap();

    let file = only_file(&dir);
    let env: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(env["v"], 1);
    assert_eq!(env["public"], a.to_string());
    assert_eq!(env["kdf"]["alg"], "argon2id");
    assert_eq!(env["kdf"]["m_kib"], 65536);
    assert_eq!(env["kdf"]["t"], 3);
    assert_eq!(env["kdf"]["p"], 1);
    let seed_text = secret.to_seed_b64();
    no_secret_in(&env.to_string(), &[seed_text.as_str()]);
    no_secret_in(
        &format!("{ks:?} {listed:?} {secret:?}"),
        &[seed_text.as_str()],
    );
}

#[cfg(unix)]
#[test]
fn file_store_files_are_0600_in_a_0700_dir() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("keys");
    let ks = Keystore::file_store_with_params(&dir, pass("passphrase"), cheap()).unwrap();
    let a = ks.create("k").unwrap();
    // Another process with the passphrase opens it.
    let again = Keystore::file_store_with_params(&dir, pass("passphrase"), cheap()).unwrap();
    assert_signs(&again, &a);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&only_file(&dir)), 0o600);
}

#[test]
fn file_store_wrong_passphrase_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let ks = Keystore::file_store_with_params(tmp.path(), pass("the right one"), cheap()).unwrap();
    let a = ks.create("k").unwrap();
    let wrong =
        Keystore::file_store_with_params(tmp.path(), pass("the wrong one"), cheap()).unwrap();
    // Listing needs no passphrase (public data); loading does.
    assert_eq!(wrong.public_keys().unwrap(), vec![a.clone()]);
    let err = wrong.load_for_tests(&a).unwrap_err();
    assert!(
        matches!(err, KeystoreError::WrongPassphrase { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("wrong passphrase"));
    assert!(matches!(
        Keystore::file_store(tmp.path(), pass("short")),
        Err(KeystoreError::Kdf(_))
    ));
}

#[test]
fn file_store_tampered_file_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let ks = Keystore::file_store_with_params(tmp.path(), pass("passphrase"), cheap()).unwrap();
    let a = ks.create("original label").unwrap();
    let file = only_file(tmp.path());
    let pristine = std::fs::read_to_string(&file).unwrap();
    let env: serde_json::Value = serde_json::from_str(&pristine).unwrap();

    type Edit = Box<dyn Fn(&mut serde_json::Value)>;
    let edits: Vec<(&str, Edit)> = vec![
        (
            "ciphertext bit flip",
            Box::new(|v| {
                let ct = v["ct"].as_str().unwrap();
                let mut bytes = parley_core::b64::decode(ct).unwrap();
                bytes[0] ^= 1;
                v["ct"] = parley_core::b64::encode(bytes).into();
            }),
        ),
        (
            "nonce changed",
            Box::new(|v| v["nonce"] = parley_core::b64::encode([0u8; 24]).into()),
        ),
        (
            "label changed",
            Box::new(|v| v["label"] = "an innocent label".into()),
        ),
        (
            "created_at changed",
            Box::new(|v| v["created_at"] = 1.into()),
        ),
    ];
    for (what, edit) in edits {
        let mut v = env.clone();
        edit(&mut v);
        std::fs::write(&file, v.to_string()).unwrap();
        let err = ks.load_for_tests(&a).unwrap_err();
        assert!(
            matches!(err, KeystoreError::Tampered { .. }),
            "{what}: {err:?}"
        );
    }
    std::fs::write(&file, "not json").unwrap();
    assert!(matches!(
        ks.load_for_tests(&a),
        Err(KeystoreError::BadEnvelope { .. })
    ));
    // Restored, it loads again.
    std::fs::write(&file, pristine).unwrap();
    assert_signs(&ks, &a);
}

#[test]
fn file_store_import_once_and_delete_with_confirmation() {
    let tmp = tempfile::tempdir().unwrap();
    let ks =
        Keystore::file_store_with_params(&tmp.path().join("keys"), pass("passphrase"), cheap())
            .unwrap();
    let key_file = tmp.path().join("principal.key");
    write_seed_file(&key_file, [9u8; 32], true);
    #[cfg(unix)]
    {
        // A world-readable key file is imported (with a logged warning), not refused.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let k = ks.import_seed_file(&key_file, "imported").unwrap();
    assert_eq!(k, SecretKey::from_seed(&Zeroizing::new([9u8; 32])).public());
    assert_eq!(ks.list().unwrap()[0].source, KeySource::Imported);
    assert!(matches!(
        ks.import_seed_file(&key_file, "again"),
        Err(KeystoreError::AlreadyPresent(_))
    ));
    assert!(matches!(
        ks.delete(&k, "ed25519:nope"),
        Err(KeystoreError::ConfirmationMismatch(_))
    ));
    ks.delete(&k, &k.to_string()).unwrap();
    assert!(ks.list().unwrap().is_empty());
    assert!(matches!(
        ks.load_for_tests(&k),
        Err(KeystoreError::NotFound(_))
    ));
}

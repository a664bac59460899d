//! The administrator's prompt owners survive an upgrade: the package's
//! postinst (packaging/debian/postinst, run as dpkg runs it, with dpkg's
//! `DPKG_ROOT` pointing at a copy of the system) names every user of
//! /etc/parley-custody/prompt-owners again in the shipped policy that the
//! upgrade put back, through the real `parley-custody-setup`; its postrm
//! removes the list on purge.
//!
//! What it stops: an upgrade quietly turning every user's OS prompt back to
//! the placeholder `$(decision)`.

use std::path::Path;
use std::process::Command;

const POLICY: &str = include_str!("../../packaging/polkit/org.parley.custody.policy");
const POSTINST: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../packaging/debian/postinst");
const POSTRM: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../packaging/debian/postrm");

fn script(path: &str, arg: &str, root: &Path) -> std::process::Output {
    let out = Command::new("sh")
        .arg(path)
        .arg(arg)
        .env("DPKG_ROOT", root)
        .output()
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    assert!(out.status.success(), "{path} {arg}: {out:?}");
    out
}

#[test]
fn an_upgrade_keeps_the_prompt_owners() {
    let root = std::env::temp_dir().join(format!("parley-postinst-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let actions = root.join("usr/share/polkit-1/actions");
    let policy = actions.join("org.parley.custody.policy");
    let owners = root.join("etc/parley-custody/prompt-owners");
    std::fs::create_dir_all(&actions).unwrap();
    std::fs::create_dir_all(root.join("usr/bin")).unwrap();
    std::fs::copy(
        env!("CARGO_BIN_EXE_parley-custody-setup"),
        root.join("usr/bin/parley-custody-setup"),
    )
    .unwrap();
    std::fs::write(&policy, POLICY).unwrap();

    // A first install, nobody named yet: the shipped file stays as shipped.
    script(POSTINST, "configure", &root);
    assert_eq!(std::fs::read_to_string(&policy).unwrap(), POLICY);

    // The administrator's step, for two users.
    for user in ["owner-t-a", "owner-t-b"] {
        let out = Command::new(root.join("usr/bin/parley-custody-setup"))
            .args(["prompt-owner", "--user", user, "--root"])
            .arg(&root)
            .env_remove("PKEXEC_UID")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    }
    let named = std::fs::read_to_string(&policy).unwrap();
    // Still a valid policy document (xmllint, from libxml2-utils: scripts/setup.sh).
    if let Ok(out) = Command::new("xmllint").arg("--noout").arg(&policy).output() {
        assert!(
            out.status.success(),
            "the rewritten policy is not valid XML: {out:?}"
        );
    }
    for user in ["owner-t-a", "owner-t-b"] {
        assert!(
            parley_custody::prompt_owners::names_owner(&named, user),
            "{named}"
        );
    }

    // The upgrade unpacks the shipped policy again; the postinst names them again.
    std::fs::write(&policy, POLICY).unwrap();
    script(POSTINST, "configure", &root);
    assert_eq!(std::fs::read_to_string(&policy).unwrap(), named);

    // Purge takes the list away.
    script(POSTRM, "purge", &root);
    assert!(!owners.exists() && !root.join("etc/parley-custody").exists());
    std::fs::remove_dir_all(&root).unwrap();
}

//! Test support, not part of custody: the tests' own login1 (and nothing
//! else) on the session bus, for the app's end-to-end session `lock`
//! (scripts/test-app.sh, src-tauri/tests/e2e/lock.e2e.mjs). It is the same
//! fake as `tests/support/login1.rs`; it reads commands on standard input,
//! one a line: `lock`, `unlock`, `sleep`, `wake`, and answers each with
//! `ok <command>` on standard output.

#![forbid(unsafe_code)]

#[path = "../tests/support/login1.rs"]
mod login1;

use std::io::BufRead;

fn main() {
    let address = std::env::var("DBUS_SESSION_BUS_ADDRESS").expect("a session bus");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime");
    let fake = rt.block_on(login1::FakeLogin1::serve(&address, false));
    println!("ready");
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let cmd = line.trim();
        match cmd {
            "lock" => rt.block_on(fake.set_locked(true)),
            "unlock" => rt.block_on(fake.set_locked(false)),
            "sleep" => rt.block_on(fake.prepare_for_sleep(true)),
            "wake" => rt.block_on(fake.prepare_for_sleep(false)),
            "" => continue,
            other => {
                println!("unknown {other}");
                continue;
            }
        }
        println!("ok {cmd}");
    }
}

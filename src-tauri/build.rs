//! Tauri's build step. The app has two commands: `call`, which forwards a
//! page's call to the custody service over the UI channel (the service
//! checks every call against the calling window's label, which this process
//! fills in from Tauri's `Window`), and `window_close`, which closes the
//! calling window. Each gets an `allow-<command>` permission, and only the
//! capabilities in `capabilities/` grant them.

const COMMANDS: &[&str] = &["call", "window_close"];

/// The UI is built by `npm run build` in `ui/` (scripts/test-app.sh and
/// scripts/run.sh do it first). So that `cargo build --workspace` and
/// `cargo test --workspace` still work on a checkout where it was not built,
/// a page saying how to build it stands in, and cargo says so.
fn ensure_ui() {
    let dist = std::path::Path::new("../ui/dist");
    println!("cargo:rerun-if-changed=../ui/dist/index.html");
    if dist.join("index.html").exists() {
        return;
    }
    println!("cargo:warning=ui/dist is missing: this build shows a placeholder page; run `npm ci && npm run build` in ui/, then build again");
    let page = "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Parley Custody</title></head>\
        <body><h1>Parley Custody: the UI was not built</h1><p>This binary was built without its user interface. \
        Build it with <code>cd ui &amp;&amp; npm ci &amp;&amp; npm run build</code>, then build the app again \
        (<code>scripts/run.sh</code> does both).</p></body></html>\n";
    if std::fs::create_dir_all(dist).is_ok() {
        for name in ["index", "review", "grant", "audit", "settings"] {
            let _ = std::fs::write(dist.join(format!("{name}.html")), page);
        }
    }
}

fn main() {
    ensure_ui();
    tauri_build::try_build(
        tauri_build::Attributes::new()
            .app_manifest(tauri_build::AppManifest::new().commands(COMMANDS)),
    )
    .expect("tauri build step");
}

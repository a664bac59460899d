//! What the windows' web engine is told so that a review window stays
//! small and its engine offers less to an exploit: this process shows a
//! handful of local pages of ours, never a browsing session, so WebKit's
//! browser-sized caches, its GPU compositing and its JavaScript JIT only
//! cost memory while the human reads (issue 16: one review window,
//! everything included, under 250 MB; measured in scripts/bench-app.sh).

/// Before any window exists (the web process inherits this environment):
/// JavaScriptCore interprets our few kilobytes of script instead of
/// compiling them. A JIT is the usual first step of a browser-engine
/// exploit, and it holds executable memory (about 15 MB measured) that
/// these pages never need.
pub fn before_windows() {
    std::env::set_var("JSC_useJIT", "0");
}

/// Tunes the web engine behind `window` (its web context is shared by every
/// window of this process, so the first window sets it for all).
pub fn keep_small<R: tauri::Runtime>(window: &tauri::WebviewWindow<R>) {
    #[cfg(target_os = "linux")]
    if let Err(e) = window.with_webview(|webview| {
        use webkit2gtk::{SettingsExt, WebContextExt, WebViewExt};
        let view = webview.inner();
        if let Some(settings) = WebViewExt::settings(&view) {
            // Pages of text and buttons: drawn on the CPU, without a GL
            // context and its buffers in the web process (about 90 MB of
            // its memory measured under Xvfb).
            settings
                .set_hardware_acceleration_policy(webkit2gtk::HardwareAccelerationPolicy::Never);
        }
        if let Some(context) = view.context() {
            // "Disable the cache completely, which substantially reduces
            // memory usage. Useful for applications that only access a
            // single local file, with no navigation to other pages."
            context.set_cache_model(webkit2gtk::CacheModel::DocumentViewer);
        }
    }) {
        tracing::debug!("cannot tune the web view: {e}");
    }
    #[cfg(not(target_os = "linux"))]
    let _ = window;
}

//! What the windows' web engine is told so that a review window stays
//! small: this process shows a handful of local pages of ours, never a
//! browsing session, so WebKit's browser-sized caches only hold memory
//! while the human reads (issue 16: one review window, everything
//! included, under 250 MB).

/// Tunes the web engine behind `window` (its web context is shared by every
/// window of this process, so the first window sets it for all).
pub fn keep_small<R: tauri::Runtime>(window: &tauri::WebviewWindow<R>) {
    #[cfg(target_os = "linux")]
    if let Err(e) = window.with_webview(|webview| {
        use webkit2gtk::{WebContextExt, WebViewExt};
        let view = webview.inner();
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

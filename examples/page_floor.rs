//! A floor under Walkie's memory: Walkie's page in a Tauri 2 window with nothing of Walkie's
//! behind it (no commands, no plugins, no audio, no call), painting without GL as Walkie does.
//! The page's calls to the app fail; it shows what it shows without answers.
//!
//! Why: the peer benchmark (bench/peer/run.sh) measures what Walkie costs over a bare WebKitGTK
//! window. This window is the part of that cost the product card fixes (Tauri, WebKitGTK) and
//! the page brings, before any of Walkie's own code runs; benches/app.rs measures it in the
//! same run as Walkie and the bare window.
//!
//! Run: `cargo run --release --example page_floor` (a display is needed).

fn main() {
    tauri::Builder::default()
        .setup(|app| {
            paint_without_gl(app.handle());
            Ok(())
        })
        .run(tauri::generate_context!())
        .expect("the page's window opens on this display");
}

#[cfg(target_os = "linux")]
fn paint_without_gl(app: &tauri::AppHandle) {
    use tauri::Manager;
    use webkit2gtk::{HardwareAccelerationPolicy, SettingsExt, WebViewExt};
    let Some(window) = app.get_webview_window("main") else {
        return;
    };
    let _ = window.with_webview(|webview| {
        if let Some(settings) = WebViewExt::settings(&webview.inner()) {
            settings.set_hardware_acceleration_policy(HardwareAccelerationPolicy::Never);
        }
    });
}

#[cfg(not(target_os = "linux"))]
fn paint_without_gl(_app: &tauri::AppHandle) {}

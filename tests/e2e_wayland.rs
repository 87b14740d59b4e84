//! Walkie as a native Wayland client: its window on a Wayland compositor (`GDK_BACKEND=wayland`
//! under a headless sway), not on an X server. A smoke subset of the e2e suite: the window
//! opens and paints, a push-to-talk turn by the page, Settings, History, and what the
//! compositor shows, taken by grim.
//!
//! Slow (a compositor, WebKitWebDriver and the app); it runs in CI.

mod support;

use support::audio::require_test_audio;
use support::desktop::HeadlessSway;
use support::{AppDirs, Launch, WebviewApp, wait_for};

/// How many colours a screenshot of the window holds: a blank window has one.
fn colours(png: &std::path::Path) -> usize {
    let picture = image::open(png).expect("grim writes a PNG").to_rgb8();
    let mut seen: Vec<[u8; 3]> = picture.pixels().map(|pixel| pixel.0).collect();
    seen.sort_unstable();
    seen.dedup();
    seen.len()
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_on_a_wayland_compositor_the_window_paints_a_turn_is_answered_and_settings_and_history_open()
 {
    require_test_audio();
    const NAME: &str = "wayland_smoke";
    let sway = HeadlessSway::start(NAME);
    let dirs = AppDirs::fresh(NAME);
    // A Wayland session always has a runtime folder (GTK's Wayland backend does not start
    // without one).
    let runtime = dirs.root.join("runtime");
    std::fs::create_dir_all(&runtime).expect("creating the app's runtime folder");
    std::fs::set_permissions(
        &runtime,
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .expect("making it private");
    let mut launch = Launch::in_dirs(&dirs, None);
    launch.env.extend([
        ("XDG_RUNTIME_DIR", runtime.display().to_string()),
        ("GDK_BACKEND", "wayland".to_owned()),
        ("WAYLAND_DISPLAY", sway.socket().display().to_string()),
        ("XDG_SESSION_TYPE", "wayland".to_owned()),
    ]);
    let app = WebviewApp::launch_with(NAME, launch).await;
    let shots = support::screenshot_dir();
    app.run(|client| async move {
        wait_for(&client, "#status", |text| text.starts_with("Ready")).await;
        // The compositor shows the page, not an empty surface.
        let window = shots.join("wayland-window.png");
        sway.screenshot(&window);
        let shown = colours(&window);
        assert!(
            shown > 16,
            "the window shows {shown} colours: is it painted?"
        );

        support::spoken_exchange(&client, 1.0, 0).await;

        support::open_settings(&client).await;
        sway.screenshot(&shots.join("wayland-settings.png"));
        client
            .execute("document.querySelector('#settings').close();", vec![])
            .await
            .unwrap();

        support::click(&client, "#open-history").await;
        // The conversation just held is listed.
        support::wait_for_script(
            &client,
            "return document.querySelectorAll('#history-list .history-item').length;",
            serde_json::json!(1),
        )
        .await;
        sway.screenshot(&shots.join("wayland-history.png"));
    })
    .await;
}

//! The window as a newcomer meets it, in the real webview: a problem is a one-line status with
//! a banner under the header that says what went wrong and offers the one action that fits; the
//! header keeps its height whatever the state; the big control says what a press does in the
//! mode and state at hand, and is off while there is no call.
//!
//! Slow tests (X server, WebKitWebDriver, the app with its built-in provider); they run in CI.

mod support;

use fantoccini::{Client, Locator};
use support::{
    AppDirs, Launch, SecretService, WebviewApp, click, rendered_text, set_field, wait_for,
};

/// One window at a time: the tests take turns on the one test microphone, and twenty turns
/// beside other windows on two cores would not finish in time.
static ONE_WINDOW: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The header's height and the status line's, in CSS pixels.
async fn heights(client: &Client) -> (f64, f64) {
    let sizes = client
        .execute(
            r##"return [document.querySelector("header.bar").getBoundingClientRect().height,
                        document.querySelector("#status").getBoundingClientRect().height];"##,
            vec![],
        )
        .await
        .expect("the header's size");
    serde_json::from_value::<(f64, f64)>(sizes).expect("two numbers")
}

/// What the status line shows a sighted user (its headline), as opposed to its whole text.
async fn status_shown(client: &Client) -> String {
    rendered_text(client, "#status > span:first-child")
        .await
        .unwrap_or_default()
}

async fn talk_label(client: &Client) -> String {
    rendered_text(client, "#ptt .ptt-label")
        .await
        .unwrap_or_default()
}

/// Starts the app with these settings already saved.
async fn launch_with_settings(test: &'static str, settings: serde_json::Value) -> WebviewApp {
    let dirs = AppDirs::fresh(test);
    std::fs::write(dirs.config.join("settings.json"), settings.to_string())
        .expect("writing the settings");
    WebviewApp::launch_with(test, Launch::in_dirs(&dirs, None)).await
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_a_bad_address_is_one_status_line_and_a_banner_that_opens_settings_with_the_gear_in_view_at_360_px()
 {
    let _window = ONE_WINDOW.lock().await;
    // Nothing listens on port 1 of this machine: the address is wrong.
    let app = launch_with_settings(
        "window_bad_address",
        serde_json::json!({ "provider": "custom", "customBaseUrl": "http://127.0.0.1:1" }),
    )
    .await;
    let display = app.display().to_owned();
    app.run(|client| async move {
        support::resize_window(&client, &display, 360, 640).await;
        let status = wait_for(&client, "#status", |text| text.starts_with("Not connected")).await;
        assert_eq!(status_shown(&client).await, "Not connected");
        let banner = wait_for(&client, "#banner [data-role=text]", |text| !text.is_empty()).await;
        assert!(
            banner.starts_with("Could not connect to 127.0.0.1"),
            "the banner says what went wrong: {banner}"
        );
        assert!(
            status.ends_with(&banner[1..]),
            "the status's whole text holds the banner's sentence: {status:?}"
        );
        assert_eq!(
            rendered_text(&client, "#banner [data-role=action]")
                .await
                .as_deref(),
            Some("Open Settings"),
            "a wrong address is fixed in Settings, not by calling again"
        );
        let (error_header, error_line) = heights(&client).await;
        support::screenshot(&client, "error-banner-narrow").await;
        let layout = client
            .execute(
                r##"const gear = document.querySelector("#open-settings").getBoundingClientRect();
                   return [gear.right - window.innerWidth, gear.width,
                           document.documentElement.scrollWidth - window.innerWidth];"##,
                vec![],
            )
            .await
            .unwrap();
        let [gear_past, gear_width, page_wider]: [f64; 3] = serde_json::from_value(layout).unwrap();
        assert!(
            gear_past <= 0.0 && gear_width > 0.0,
            "the gear is {gear_past} px off the window"
        );
        assert!(
            page_wider <= 0.0,
            "the page scrolls sideways by {page_wider} px"
        );
        // With no call the talk control is off and says so; Space does not replace the reason.
        assert_eq!(talk_label(&client).await, "Not connected");
        let ptt = client.find(Locator::Id("ptt")).await.unwrap();
        assert_eq!(ptt.attr("disabled").await.unwrap().as_deref(), Some("true"));
        support::space(&client, true).await;
        support::space(&client, false).await;
        assert_eq!(
            rendered_text(&client, "#status").await.as_deref(),
            Some(status.as_str())
        );
        support::screenshot(&client, "error-banner-narrow").await;

        // The banner's button opens Settings; choosing the offline demo there connects.
        click(&client, "#banner [data-role=action]").await;
        wait_for(&client, "#settings [data-role=config-file]", |text| {
            text.ends_with("settings.json")
        })
        .await;
        set_field(&client, "provider", "local".into()).await;
        click(&client, "#settings button[value=save]").await;
        wait_for(&client, "#settings [data-role=message]", |text| {
            text == "Saved."
        })
        .await;
        click(&client, "#settings button[value=close]").await;
        wait_for(&client, "#status", |text| text.starts_with("Ready")).await;
        let banner_shown = client
            .execute(
                r##"return !document.querySelector("#banner").hidden;"##,
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(
            banner_shown,
            serde_json::Value::Bool(false),
            "no problem, no banner"
        );
        assert_eq!(heights(&client).await, (error_header, error_line), "Ready");
        assert_eq!(talk_label(&client).await, "Hold to talk");

        support::space(&client, true).await;
        wait_for(&client, "#status", |text| text.starts_with("Listening")).await;
        assert_eq!(
            heights(&client).await,
            (error_header, error_line),
            "Listening"
        );
        assert_eq!(talk_label(&client).await, "Listening: release to send");
        // Held as long as a short word, so the turn is sent (a shorter press is refused).
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        support::space(&client, false).await;
        wait_for(&client, "#status", |text| text.starts_with("Ready")).await;
        assert_eq!(
            heights(&client).await,
            (error_header, error_line),
            "after a turn"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_in_toggle_mode_the_talk_control_says_tap_and_never_release() {
    let _window = ONE_WINDOW.lock().await;
    let app = launch_with_settings(
        "window_toggle_labels",
        serde_json::json!({ "provider": "local", "pressMode": "toggle" }),
    )
    .await;
    app.run(|client| async move {
        wait_for(&client, "#status", |text| text.starts_with("Ready")).await;
        assert_eq!(talk_label(&client).await, "Tap to talk");
        let hint = rendered_text(&client, "#ptt-hint")
            .await
            .unwrap_or_default();
        assert!(hint.contains("again to send"), "{hint}");
        // One press starts talking, the next sends: key-ups change nothing.
        support::space(&client, true).await;
        support::space(&client, false).await;
        wait_for(&client, "#status", |text| text.starts_with("Listening")).await;
        assert_eq!(talk_label(&client).await, "Listening: tap to send");
        for shown in ["#ptt", "#ptt-hint", "#status"] {
            let text = rendered_text(&client, shown).await.unwrap_or_default();
            assert!(!text.to_lowercase().contains("release"), "{shown}: {text}");
        }
        support::screenshot(&client, "toggle-listening").await;
        // Every label the control shows from here on, however briefly (a short reply).
        client
            .execute(
                "window.labelsSeen = [];
                 const label = document.querySelector('#ptt .ptt-label');
                 new MutationObserver(() => window.labelsSeen.push(label.textContent))
                   .observe(label, {childList: true, subtree: true, characterData: true});
                 return true;",
                vec![],
            )
            .await
            .unwrap();
        // Talking for a moment (a turn shorter than 150 ms is not sent), then the second tap.
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        support::space(&client, true).await;
        support::space(&client, false).await;
        wait_for(&client, "#transcript article:nth-of-type(2)", |text| {
            text.contains("played your")
        })
        .await;
        wait_for(&client, "#status", |text| text.starts_with("Ready")).await;
        let seen = client
            .execute("return window.labelsSeen;", vec![])
            .await
            .unwrap();
        assert!(
            seen.as_array()
                .is_some_and(|labels| labels.contains(&serde_json::json!("Speaking: tap to stop"))),
            "the reply was announced on the control: {seen}"
        );
        assert_eq!(talk_label(&client).await, "Tap to talk");
    })
    .await;
}

/// Where the newest message sits against the transcript's visible part: (how far its bottom is
/// below the view's bottom, how far its bottom is above the view's top), in CSS pixels.
async fn newest_message_offsets(client: &Client) -> (f64, f64) {
    let offsets = client
        .execute(
            r##"const view = document.querySelector("#transcript").getBoundingClientRect();
               const articles = document.querySelectorAll("#transcript article");
               const newest = articles[articles.length - 1].getBoundingClientRect();
               return [newest.bottom - view.bottom, view.top - newest.bottom];"##,
            vec![],
        )
        .await
        .expect("the newest message's place");
    serde_json::from_value(offsets).expect("two numbers")
}

/// One push-to-talk turn of silence, waited on until its reply is in the transcript.
async fn silent_turn(client: &Client, turn: usize) {
    support::space(client, true).await;
    wait_for(client, "#status", |text| text.starts_with("Listening")).await;
    // Long enough to count as a turn (150 ms).
    tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    support::space(client, false).await;
    let replies = format!("#transcript article:nth-of-type({})", 2 * turn);
    wait_for(client, &replies, |text| text.contains("played your")).await;
    wait_for(client, "#status", |text| text.starts_with("Ready")).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_after_20_turns_the_newest_message_is_in_view_and_scrolling_up_brings_the_new_pill() {
    let _window = ONE_WINDOW.lock().await;
    let app =
        launch_with_settings("window_follow", serde_json::json!({ "provider": "local" })).await;
    let display = app.display().to_owned();
    app.run(|client| async move {
        support::resize_window(&client, &display, 360, 480).await;
        wait_for(&client, "#status", |text| text.starts_with("Ready")).await;
        for turn in 1..=20 {
            silent_turn(&client, turn).await;
            let (below, above) = newest_message_offsets(&client).await;
            assert!(
                below <= 1.0,
                "turn {turn}: the newest message ends {below} px below the view"
            );
            assert!(
                above < 0.0,
                "turn {turn}: the newest message is above the view"
            );
        }
        // The reader scrolls up to read: the next reply leaves them there and offers the pill.
        client
            .execute(
                r##"document.querySelector("#transcript").scrollTop = 0; return true;"##,
                vec![],
            )
            .await
            .unwrap();
        wait_for(&client, "#status", |text| text.starts_with("Ready")).await;
        silent_turn(&client, 21).await;
        let (below, _) = newest_message_offsets(&client).await;
        assert!(
            below > 0.0,
            "the reader was not moved: the newest message is below the view"
        );
        assert_eq!(
            rendered_text(&client, "#new-messages").await.as_deref(),
            Some("↓ New")
        );
        support::screenshot(&client, "new-pill").await;
        click(&client, "#new-messages").await;
        let (below, _) = newest_message_offsets(&client).await;
        assert!(
            below <= 1.0,
            "the pill brings the newest message into view: {below} px below"
        );
        let pill_hidden = client
            .execute(
                r##"return document.querySelector("#new-messages").hidden;"##,
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(pill_hidden, serde_json::Value::Bool(true));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_new_conversation_during_a_call_says_so_and_starts_below_a_divider_leaving_the_last_one_whole()
 {
    let _window = ONE_WINDOW.lock().await;
    let app = launch_with_settings(
        "window_new_conversation",
        serde_json::json!({ "provider": "local" }),
    )
    .await;
    let display = app.display().to_owned();
    app.run(|client| async move {
        wait_for(&client, "#status", |text| text.starts_with("Ready")).await;
        assert_eq!(
            rendered_text(&client, "#connect").await.as_deref(),
            Some("New conversation")
        );
        silent_turn(&client, 1).await;
        let first = rendered_text(&client, "#transcript article:nth-of-type(1) .message-text")
            .await
            .expect("the first message");

        click(&client, "#connect").await;
        wait_for(&client, "#status", |text| !text.starts_with("Ready")).await;
        wait_for(&client, "#status", |text| text.starts_with("Ready")).await;
        silent_turn(&client, 2).await;

        let layout = client
            .execute(
                r##"return [...document.querySelectorAll("#transcript > article, #transcript > .conversation-divider")]
                       .map((node) => node.classList.contains("conversation-divider")
                         ? "divider" : node.dataset.messageId);"##,
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(
            layout,
            serde_json::json!(["user-1", "assistant-1", "divider", "user-1", "assistant-1"]),
            "the new conversation starts below a divider, numbered afresh"
        );
        assert_eq!(
            rendered_text(&client, "#transcript article:nth-of-type(1) .message-text")
                .await
                .as_deref(),
            Some(first.as_str()),
            "the last conversation's messages are untouched"
        );
        support::screenshot(&client, "new-conversation").await;
        // A wide window keeps the conversation one centred column.
        support::resize_window(&client, &display, 1280, 800).await;
        let column = client
            .execute(
                r##"const articles = [...document.querySelectorAll("#transcript > article")];
                   const left = Math.min(...articles.map((a) => a.getBoundingClientRect().left));
                   const right = Math.max(...articles.map((a) => a.getBoundingClientRect().right));
                   return [left, window.innerWidth - right, right - left];"##,
                vec![],
            )
            .await
            .unwrap();
        let [left, right, width]: [f64; 3] = serde_json::from_value(column).unwrap();
        assert!((left - right).abs() <= 20.0, "centred: {left} px left, {right} px right");
        assert!(width <= 46.0 * 16.0, "one readable column: {width} px wide");
        support::screenshot(&client, "wide").await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_a_first_start_on_the_demo_explains_it_and_add_a_key_opens_settings_at_the_key_field() {
    let _window = ONE_WINDOW.lock().await;
    // Fresh folders, a keyring with no key in it: "automatic" falls back to the offline demo.
    let dirs = AppDirs::fresh("window_first_run");
    let secrets = SecretService::start(&dirs);
    let app =
        WebviewApp::launch_with("window_first_run", Launch::in_dirs(&dirs, Some(&secrets))).await;
    app.run(|client| async move {
        wait_for(&client, "#status", |text| text.starts_with("Ready")).await;
        let card = wait_for(&client, "#transcript .first-run", |text| {
            text.contains("offline demo")
        })
        .await;
        assert!(card.contains("bills its use"), "what a key costs: {card}");
        assert!(
            card.contains("your voice goes to OpenAI"),
            "where the audio goes: {card}"
        );
        support::screenshot(&client, "first-run").await;

        click(&client, "#transcript .first-run button.primary").await;
        wait_for(&client, "#settings [data-role=config-file]", |text| {
            text.ends_with("settings.json")
        })
        .await;
        // The focus moves there once the dialog has shown.
        let deadline = std::time::Instant::now() + support::UI_TIMEOUT;
        let focused = loop {
            let focused = client
                .execute("return document.activeElement?.name ?? null;", vec![])
                .await
                .unwrap();
            if focused == serde_json::json!("apiKey") || std::time::Instant::now() > deadline {
                break focused;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        };
        assert_eq!(
            focused,
            serde_json::json!("apiKey"),
            "the cursor is in the key field"
        );
        click(&client, "#settings button[value=close]").await;

        click(&client, "#transcript .first-run button.quiet").await;
        wait_for(&client, "#transcript .empty", |text| {
            text.contains("Both sides of the conversation appear here")
        })
        .await;
        let cards = client
            .find_all(Locator::Css("#transcript .first-run"))
            .await
            .unwrap();
        assert!(cards.is_empty(), "the card gave way to the plain hint");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_the_window_its_banner_and_its_dialogs_pass_an_accessibility_audit() {
    let _window = ONE_WINDOW.lock().await;
    let app = launch_with_settings(
        "window_accessibility",
        serde_json::json!({ "provider": "custom", "customBaseUrl": "http://127.0.0.1:1" }),
    )
    .await;
    app.run(|client| async move {
        wait_for(&client, "#status", |text| text.starts_with("Not connected")).await;
        let mut found = Vec::new();
        found.extend(
            support::accessibility_violations(&client)
                .await
                .into_iter()
                .map(|v| format!("with the banner: {v}")),
        );

        support::open_settings(&client).await;
        support::open_advanced(&client).await;
        found.extend(
            support::accessibility_violations(&client)
                .await
                .into_iter()
                .map(|v| format!("settings: {v}")),
        );
        click(&client, "#settings button[value=close]").await;

        click(&client, "#open-history").await;
        wait_for(&client, "#history-empty", |text| !text.is_empty()).await;
        found.extend(
            support::accessibility_violations(&client)
                .await
                .into_iter()
                .map(|v| format!("history: {v}")),
        );
        assert!(found.is_empty(), "{}", found.join("\n"));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_the_first_start_and_a_conversation_pass_an_accessibility_audit() {
    let _window = ONE_WINDOW.lock().await;
    let app = WebviewApp::launch("window_accessibility_first_run").await;
    app.run(|client| async move {
        wait_for(&client, "#transcript .first-run", |text| {
            text.contains("offline demo")
        })
        .await;
        let mut found: Vec<String> = support::accessibility_violations(&client)
            .await
            .into_iter()
            .map(|v| format!("first start: {v}"))
            .collect();
        silent_turn(&client, 1).await;
        found.extend(
            support::accessibility_violations(&client)
                .await
                .into_iter()
                .map(|v| format!("a conversation: {v}")),
        );
        assert!(found.is_empty(), "{}", found.join("\n"));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_in_the_dark_theme_the_window_banner_and_settings_pass_the_accessibility_audit() {
    let _window = ONE_WINDOW.lock().await;
    let dirs = AppDirs::fresh("window_dark");
    std::fs::write(
        dirs.config.join("settings.json"),
        serde_json::json!({ "provider": "custom", "customBaseUrl": "http://127.0.0.1:1" })
            .to_string(),
    )
    .expect("writing the settings");
    let launch = Launch {
        env: vec![("GTK_THEME", "Adwaita:dark".to_owned())],
        ..Launch::in_dirs(&dirs, None)
    };
    let app = WebviewApp::launch_with("window_dark", launch).await;
    app.run(|client| async move {
        let dark = client
            .execute(
                "return matchMedia('(prefers-color-scheme: dark)').matches;",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(
            dark,
            serde_json::Value::Bool(true),
            "the page is told the theme is dark"
        );
        wait_for(&client, "#status", |text| text.starts_with("Not connected")).await;
        let mut found: Vec<String> = support::accessibility_violations(&client)
            .await
            .into_iter()
            .map(|v| format!("with the banner: {v}"))
            .collect();
        support::screenshot(&client, "dark-error-banner").await;
        support::open_settings(&client).await;
        found.extend(
            support::accessibility_violations(&client)
                .await
                .into_iter()
                .map(|v| format!("settings: {v}")),
        );
        support::screenshot(&client, "dark-settings").await;
        assert!(found.is_empty(), "{}", found.join("\n"));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_on_a_budget_the_window_says_when_80_percent_is_spent_and_the_call_ends_once_all_is() {
    let _window = ONE_WINDOW.lock().await;
    // A cent: the demo's replies are costed as gpt-realtime-2.1 would bill them, some tenths of a
    // cent each.
    let app = launch_with_settings(
        "window_budget",
        serde_json::json!({ "provider": "local", "budgetUsd": 0.01 }),
    )
    .await;
    app.run(|client| async move {
        wait_for(&client, "#status", |text| text.starts_with("Ready")).await;
        let mut warned_at_turn = None;
        for turn in 1..=15 {
            support::space(&client, true).await;
            wait_for(&client, "#status", |text| text.starts_with("Listening")).await;
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
            support::space(&client, false).await;
            let reply = format!("#transcript article:nth-of-type({})", 2 * turn);
            wait_for(&client, &reply, |text| text.contains("played your")).await;
            let header = wait_for(&client, "#status", |text| {
                text.starts_with("Ready") || text.starts_with("Budget")
            })
            .await;
            let banner = rendered_text(&client, "#banner [data-role=text]")
                .await
                .unwrap_or_default();
            // The header's text is the headline, then the rest of the sentence for screen
            // readers; the banner holds that rest.
            if header.starts_with("Budget 80 % spent:") && warned_at_turn.is_none() {
                assert!(
                    banner.starts_with("This conversation has cost $0.0"),
                    "{banner:?}"
                );
                assert!(
                    banner.ends_with(
                        " of its $0.01 budget; the call ends after the reply that spends the rest."
                    ),
                    "{banner:?}"
                );
                support::screenshot(&client, "budget-80").await;
                warned_at_turn = Some(turn);
            }
            if header.starts_with("Budget spent:") {
                let warned = warned_at_turn.expect("80 % was said before it was all spent");
                assert!(warned < turn, "warned at turn {warned}, spent at {turn}");
                // Between the reply's end and the call's there may be a moment that says the
                // call ends after this reply.
                let banner = wait_for(&client, "#banner [data-role=text]", |text| {
                    text.starts_with("This conversation cost")
                })
                .await;
                assert!(
                    banner.starts_with("This conversation cost $0.01")
                        && banner.contains(" of its $0.01 budget, so its call ended."),
                    "{banner:?}"
                );
                assert_eq!(
                    rendered_text(&client, "#banner [data-role=action]")
                        .await
                        .as_deref(),
                    Some("Open Settings")
                );
                assert_eq!(
                    rendered_text(&client, "#ptt .ptt-label").await.as_deref(),
                    Some("Not connected"),
                    "no more turns on this conversation"
                );
                let spent = rendered_text(&client, "#spending")
                    .await
                    .unwrap_or_default();
                assert!(
                    spent.contains(" tokens · ") && spent.contains(" · free ($0.01"),
                    "{spent:?}"
                );
                support::screenshot(&client, "budget-spent").await;
                return;
            }
        }
        panic!("15 turns never spent a cent's budget");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_a_model_billed_by_the_minute_alone_spends_the_budget_and_ends_the_call() {
    let _window = ONE_WINDOW.lock().await;
    // No price per token at all: only the transcription of the user's speech is costed, at a
    // dollar a second, so half a dollar's budget is spent by a turn or two of speech.
    let app = launch_with_settings(
        "window_minute_budget",
        serde_json::json!({
            "provider": "local",
            "budgetUsd": 0.5,
            // Saved by this Walkie, its token table emptied by the user: nothing is added back.
            "publishedPricesOf": walkie_settings::prices::PUBLISHED_ON,
            "prices": [],
            "minutePrices": [
                { "model": "gpt-realtime-whisper", "takenOn": "", "perMinute": 60.0, "perPausedMinute": 0.0 }
            ],
        }),
    )
    .await;
    let dirs = app.dirs().clone();
    app.run(|client| async move {
        wait_for(&client, "#status", |text| text.starts_with("Ready")).await;
        for turn in 1..=8 {
            support::spoken_turn(&client, 0.3, turn - 1).await;
            let header = wait_for(&client, "#status", |text| {
                text.starts_with("Ready")
                    || text.starts_with("Budget")
                    || text.starts_with("Not connected")
            })
            .await;
            if !header.starts_with("Budget spent:") {
                continue;
            }
            let banner = wait_for(&client, "#banner [data-role=text]", |text| {
                text.starts_with("This conversation cost")
            })
            .await;
            assert!(
                banner.contains(" of its $0.50 budget, so its call ended."),
                "{banner:?}"
            );
            assert_eq!(talk_label(&client).await, "Not connected");
            let spent = rendered_text(&client, "#spending")
                .await
                .unwrap_or_default();
            // Tokens are counted, but only the speech is costed.
            assert!(
                spent.contains(" tokens · ") && spent.contains(" s transcribed · free ($"),
                "{spent:?}"
            );
            let details = client
                .execute(
                    "return document.querySelector('#spending').getAttribute('title');",
                    vec![],
                )
                .await
                .expect("the spending line's tooltip");
            let details = details.as_str().unwrap_or_default().to_owned();
            assert!(
                details.contains("at gpt-realtime-whisper's per-minute price."),
                "{details:?}"
            );
            assert!(
                details.contains("No published prices for this model: tokens only."),
                "{details:?}"
            );
            // The saved conversation says what its transcriptions spent.
            let conversations = dirs.data.join("conversations");
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
            let spent = loop {
                let saved = std::fs::read_dir(&conversations)
                    .into_iter()
                    .flatten()
                    .filter_map(Result::ok)
                    .find_map(|entry| {
                        std::fs::read_to_string(entry.path().join("transcript.json")).ok()
                    })
                    .and_then(|json| serde_json::from_str::<serde_json::Value>(&json).ok())
                    .map(|json| json["spent"].clone());
                if let Some(spent) = saved.filter(|spent| spent["transcriptions"] == turn as u64) {
                    break spent;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "transcript.json never counted {turn} transcriptions"
                );
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            };
            // A dollar a second, and nothing else costed.
            let cost_usd = spent["costUsd"].as_f64().unwrap_or(0.0);
            let seconds = spent["transcribedSeconds"].as_f64().unwrap_or(0.0);
            assert!(cost_usd >= 0.5, "the budget is spent: {spent}");
            assert!((cost_usd - seconds).abs() < 1e-6, "{spent}");
            assert!(spent["responses"].as_u64().unwrap_or(0) >= 1, "{spent}");
            assert_eq!(spent["unpricedResponses"], spent["responses"], "{spent}");
            return;
        }
        panic!("8 turns of speech at a dollar a second never spent $0.50");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_settings_naming_models_that_shut_down_open_to_one_line_saying_what_moved_and_the_call_uses_the_new_ones()
 {
    let _window = ONE_WINDOW.lock().await;
    // A settings file as Walkie saved it until now: its defaults of 2025.
    let app = launch_with_settings(
        "window_migrated_models",
        serde_json::json!({
            // Automatic: OpenAI once a key is saved, the offline demo until then.
            "provider": "automatic",
            "model": "gpt-realtime",
            "transcriptionModel": "gpt-4o-mini-transcribe",
        }),
    )
    .await;
    let dirs = app.dirs().clone();
    app.run(|client| async move {
        let header = wait_for(&client, "#status", |text| text.starts_with("New models")).await;
        assert_eq!(status_shown(&client).await, "New models");
        let banner = wait_for(&client, "#banner [data-role=text]", |text| !text.is_empty()).await;
        assert_eq!(
            banner,
            "OpenAI shuts down gpt-realtime on 2027-01-20 and gpt-4o-mini-transcribe on \
             2027-02-26, so Walkie now uses gpt-realtime-2.1 and gpt-realtime-whisper; Open \
             Settings to choose others."
        );
        assert!(header.ends_with(&banner[1..]), "{header:?}");
        assert_eq!(
            rendered_text(&client, "#banner [data-role=action]")
                .await
                .as_deref(),
            Some("Open Settings")
        );
        support::screenshot(&client, "models-moved").await;
        // Moved once: the file now names the new models.
        let saved: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dirs.config.join("settings.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(saved["model"], "gpt-realtime-2.1");
        assert_eq!(saved["transcriptionModel"], "gpt-realtime-whisper");
        // The first call's session named them.
        let calls = std::fs::read_to_string(dirs.trace.join("calls.jsonl")).unwrap_or_default();
        let sessions: Vec<serde_json::Value> = calls
            .lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .filter(|call| call["session"].is_object())
            .map(|call| call["session"].clone())
            .collect();
        assert!(!sessions.is_empty(), "a call was placed: {calls}");
        for session in &sessions {
            assert_eq!(session["model"], "gpt-realtime-2.1", "{session}");
            assert_eq!(
                session["audio"]["input"]["transcription"]["model"], "gpt-realtime-whisper",
                "{session}"
            );
        }
        // Open Settings shows the new model, with no warning under it.
        click(&client, "#banner [data-role=action]").await;
        support::open_advanced(&client).await;
        let model = client
            .execute(
                "return document.querySelector('#settings-model').value;",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(model, serde_json::json!("gpt-realtime-2.1"));
        assert_eq!(
            rendered_text(&client, "#settings-model-warning")
                .await
                .unwrap_or_default(),
            ""
        );
        // Choosing the old model again is warned of, and once saved it is kept.
        set_field(&client, "model", "gpt-realtime".into()).await;
        let warning = wait_for(&client, "#settings-model-warning", |text| !text.is_empty()).await;
        assert_eq!(
            warning,
            "gpt-realtime shuts down on 2027-01-20: choose gpt-realtime-2.1 to keep Walkie \
             answering after that."
        );
        client
            .execute(
                "document.querySelector('#settings-model').scrollIntoView({block: 'center'});",
                vec![],
            )
            .await
            .expect("scrolling to the model");
        support::screenshot(&client, "settings-model-shuts-down").await;
        click(&client, "#settings button[value=save]").await;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
        loop {
            let saved: serde_json::Value = serde_json::from_str(
                &std::fs::read_to_string(dirs.config.join("settings.json")).unwrap(),
            )
            .unwrap();
            if saved["model"] == "gpt-realtime" {
                assert_eq!(
                    saved["keptDeprecatedModels"],
                    serde_json::json!(["gpt-realtime"]),
                    "chosen knowing, it is not moved at the next start"
                );
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the model chosen was never saved"
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    })
    .await;
}

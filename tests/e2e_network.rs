//! The call's health in view: the real window calls the real local provider (in this process)
//! through the test bench's impaired network ([`walkie_local::netem::Relay`]). On a clean
//! network the connection badge is green; when the network loses a tenth of the packets both
//! ways, the next reply turns it amber with the sentence saying the network is at fault; once
//! the loss stops, the next reply turns it green again. The first reply's "heard after" figure
//! splits into here, the provider, the network and playout, and the parts add up to it.
//!
//! Slow test (X server, WebKitWebDriver, PulseAudio); it runs in CI.

mod support;

use std::sync::Arc;

use serde_json::json;
use support::audio::require_test_audio;
use support::{
    AppDirs, Launch, SecretService, WebviewApp, screenshot, spoken_exchange, talk_to_custom_server,
    wait_for_script,
};
use walkie_local::netem::{Impairment, Relay};
use walkie_local::{LocalProvider, ProviderConfig};

const TEST: &str = "network_badge";
const LEVEL: &str = "const badge = document.getElementById('connection'); \
                     return badge.hidden ? 'hidden' : badge.dataset.level;";

#[tokio::test(flavor = "multi_thread")]
async fn e2e_the_connection_badge_turns_amber_under_ten_percent_loss_and_back_when_it_stops() {
    require_test_audio();
    let dirs = AppDirs::fresh(TEST);
    let provider = LocalProvider::start(ProviderConfig {
        trace_dir: Some(dirs.trace.clone()),
        ..ProviderConfig::default()
    })
    .await
    .expect("a local provider on loopback");
    let relay = Arc::new(
        Relay::start(&provider.base_url(), Impairment::CLEAN, 38)
            .await
            .expect("the impaired network on loopback"),
    );
    let secrets = SecretService::start(&dirs);
    let app = WebviewApp::launch_with(TEST, Launch::in_dirs(&dirs, Some(&secrets))).await;
    let (base_url, token) = (relay.base_url(), provider.token().to_owned());
    app.run(|client| async move {
        talk_to_custom_server(&client, &base_url, &token).await;
        spoken_exchange(&client, 1.5, 0).await;
        wait_for_script(&client, LEVEL, json!("good")).await;
        the_latency_split_adds_up(&client).await;

        relay.set_impairment(Impairment::random_loss(10.0));
        spoken_exchange(&client, 2.0, 1).await;
        wait_for_script(&client, LEVEL, json!("fair")).await;
        let said = client
            .execute(
                "return document.getElementById('connection').title;",
                vec![],
            )
            .await
            .expect("the badge's tooltip");
        let said = said.as_str().unwrap_or_default();
        assert!(
            said.starts_with("The network is losing") && said.contains("Packets lost:"),
            "the badge says the network is at fault, with its figures: {said:?}"
        );
        screenshot(&client, "connection-fair").await;

        // Long enough a turn that the judgement's window holds only the clean reply.
        relay.set_impairment(Impairment::CLEAN);
        spoken_exchange(&client, 3.0, 2).await;
        wait_for_script(&client, LEVEL, json!("good")).await;
    })
    .await;
}

/// The first reply's latency: its tooltip's parts add up to the "heard after" figure it shows
/// (within 5 ms: each part is rounded), and the figure is that in seconds.
async fn the_latency_split_adds_up(client: &fantoccini::Client) {
    let shown = client
        .execute(
            "const figure = document.querySelector('.message-latency'); \
             return figure ? [figure.textContent, figure.title] : null;",
            vec![],
        )
        .await
        .expect("the latency figure");
    let (text, title) = (
        shown[0].as_str().expect("its text"),
        shown[1].as_str().expect("its tooltip"),
    );
    let numbers: Vec<u64> = title
        .split(|c: char| !c.is_ascii_digit())
        .filter(|number| !number.is_empty())
        .map(|number| number.parse().expect("a whole number"))
        .collect();
    let [heard_ms, here_ms, provider_ms, network_ms, playout_ms] = numbers[..] else {
        panic!("the tooltip says where the wait went: {title:?}");
    };
    let parts_ms = here_ms + provider_ms + network_ms + playout_ms;
    assert!(
        heard_ms.abs_diff(parts_ms) <= 5,
        "the parts add up to the whole: {title:?}"
    );
    let shown_ms =
        (text.trim_end_matches(" s").parse::<f64>().expect("seconds") * 1000.0).round() as u64;
    assert!(
        shown_ms.abs_diff(heard_ms) <= 5,
        "the figure {text:?} is the tooltip's {heard_ms} ms"
    );
    assert!(here_ms > 0, "the key's tail is counted here: {title:?}");
}

//! The call's health in view: the real window calls the real local provider (in this process)
//! through the test bench's impaired network ([`walkie_local::netem::Relay`]). On a clean
//! network the connection badge is green; when the network loses a tenth of the packets both
//! ways, the next reply turns it amber with the sentence saying the network is at fault; once
//! the loss stops, the next reply turns it green again.
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

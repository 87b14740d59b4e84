//! Every way a call can be refused at connect shows its own sentence in the real window: the
//! API's 400 message, a refused key (401, 403), an unknown model (404), a rate limit with its
//! `Retry-After` (429), a server error (500, 503), a provider that never answers, and a peer
//! that does not speak TLS. Each sentence says what to do next, on one line. A refusal that may
//! pass (429, 5xx, no answer) is first placed again by itself, the Connect button cancelling
//! that; a provider that answers the next attempt carries the call with no press at all.
//!
//! The refusals come from the real local provider (started in this process, its calls endpoint
//! failing on purpose), the silence and the TLS mismatch from plain loopback listeners. One app
//! run: each row points the custom provider's address at its own server in Settings, and saving
//! the settings places the call again (there is no call under way to keep: the run starts by
//! leaving the demo's call for an address that refuses).
//!
//! Slow test (X server, WebKitWebDriver); it runs in CI.

mod support;

use std::time::Duration;

use fantoccini::{Client, Locator};
use support::{
    AppDirs, Launch, SecretService, UI_TIMEOUT, WebviewApp, choose_custom_server, click,
    end_the_call_on_a_dead_address, talk_to_custom_server, wait_for, wait_for_within,
    wait_until_shown, wait_until_shown_within, watch_statuses,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use walkie_local::{HttpFault, LocalProvider, ProviderConfig};

const TEST: &str = "connect_errors";

/// How the window names a custom provider on this machine.
const HOST: &str = "127.0.0.1";

/// The app's own bound on one request of call setup (`CallConfig::signalling_timeout`).
const SIGNALLING_TIMEOUT: Duration = Duration::from_secs(15);

/// Cancel stops an attempt under way well within the time it would take to fail by itself.
const CANCEL_WITHIN: Duration = Duration::from_secs(SIGNALLING_TIMEOUT.as_secs() / 3);

/// A local provider whose calls endpoint answers `status` (with `message` and `Retry-After`
/// when given) to every call.
async fn refusing_provider(
    status: u16,
    message: Option<&str>,
    retry_after_s: Option<u64>,
) -> LocalProvider {
    LocalProvider::start(ProviderConfig {
        calls_fault: Some(HttpFault::Status {
            status,
            message: message.map(str::to_owned),
            retry_after_s,
        }),
        ..ProviderConfig::default()
    })
    .await
    .expect("a local provider on loopback")
}

/// The status line's text for a call `HOST` refused, its sentence naming `HOST` itself.
fn refused(sentence: &str) -> String {
    format!("Not connected: {HOST} {sentence}")
}

/// The status line's text for a call that never reached `HOST`: the app names it first.
fn unreached(sentence: &str) -> String {
    format!("Not connected: could not connect to {HOST}. {sentence}")
}

/// The status line as the page holds it, line breaks included.
async fn status_lines(client: &Client) -> String {
    client
        .find(Locator::Css("#status"))
        .await
        .expect("the status line")
        .prop("innerText")
        .await
        .expect("its text")
        .unwrap_or_default()
}

/// How a row's refusal reaches the status line.
#[derive(Clone, Copy, PartialEq)]
enum Refused {
    /// At once: calling again fails the same way.
    ForGood,
    /// After the call is placed again by itself (the attempts shown, up to `attempt`), which
    /// the Connect button cancels.
    CalledAgain { attempt: u32 },
}

/// Dials `base_url`, waits until the status line shows a refusal other than `previous` (the
/// last row's), and checks that it is one line in the error state.
async fn shows(
    client: &Client,
    row: &str,
    base_url: &str,
    within: Duration,
    previous: &str,
    refused: Refused,
) -> String {
    watch_statuses(client).await;
    choose_custom_server(client, base_url).await;
    if let Refused::CalledAgain { attempt } = refused {
        for attempt in 1..=attempt {
            let calling = format!("Calling again (attempt {attempt} of 6)…");
            wait_until_shown(client, |text| text.starts_with(&calling)).await;
        }
        wait_for(client, "#connect", |label| label == "Cancel").await;
        click(client, "#connect").await;
    }
    let shown = wait_for_within(client, "#status", within, |text| {
        text.starts_with("Not connected") && text != previous
    })
    .await;
    let raw = status_lines(client).await;
    assert!(
        !raw.trim().contains('\n'),
        "{row}: the status takes more than one line: {raw:?}"
    );
    let state = support::status_state(client).await;
    assert_eq!(state.as_deref(), Some("error"), "{row}: {shown}");
    shown
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_each_refused_call_shows_its_own_sentence_in_the_status_line() {
    let api_message = "Invalid value: 'gpt-walkie-test'. Supported models are 'gpt-realtime'.";
    let bad_request = refusing_provider(400, Some(api_message), None).await;
    let bad_key = refusing_provider(401, None, None).await;
    let forbidden = refusing_provider(403, None, None).await;
    let no_model = refusing_provider(404, None, None).await;
    let rate_limited = refusing_provider(429, None, Some(7)).await;
    let server_error = refusing_provider(500, None, None).await;
    let unavailable = refusing_provider(503, None, None).await;
    // Accepted, never answered: the request times out. The connections are counted, so the
    // test knows when an attempt is under way.
    let silent = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let silent_url = format!("http://{}", silent.local_addr().expect("bound"));
    let (silent_accepted, mut silent_attempts) = tokio::sync::watch::channel(0usize);
    let silent_server = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = silent.accept().await {
            held.push(stream);
            silent_accepted.send_replace(held.len());
        }
    });
    // https to a server that answers in plain HTTP: the handshake fails.
    let plain = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let plain_url = format!("https://{}", plain.local_addr().expect("bound"));
    let plain_server = tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = plain.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let _ = stream
                    .write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                    .await;
                let mut sink = Vec::new();
                let _ = stream.read_to_end(&mut sink).await;
            });
        }
    });

    let rows = [
        (
            "400",
            bad_request.base_url(),
            refused(&format!(
                "refused the call: {api_message} Check the model, voice and instructions in Settings."
            )),
        ),
        (
            "401",
            bad_key.base_url(),
            refused("refused the API key: add a valid key in Settings."),
        ),
        (
            "403",
            forbidden.base_url(),
            refused(
                "does not serve this country or region (Country, region, or territory not supported): use another provider in Settings.",
            ),
        ),
        (
            "404",
            no_model.base_url(),
            refused(
                "knows no such model or deployment (The model does not exist or you do not have access to it): check the model (for Azure, the deployment name) and the address in Settings.",
            ),
        ),
        (
            "429",
            rate_limited.base_url(),
            refused("is rate-limiting this key: reconnect in 7 seconds."),
        ),
        (
            "500",
            server_error.base_url(),
            refused(
                "had a server error (500): reconnect in a moment; if it persists, check the provider's status page.",
            ),
        ),
        (
            "503",
            unavailable.base_url(),
            refused(
                "had a server error (503): reconnect in a moment; if it persists, check the provider's status page.",
            ),
        ),
    ];

    let app = WebviewApp::launch(TEST).await;
    app.run(|client| async move {
        // From here on there is no call, so saving the settings places the call at once.
        let mut previous = end_the_call_on_a_dead_address(&client).await;
        for (row, base_url, expected) in rows {
            let refused = match row {
                // Seen twice: the second attempt waits the 7 s Retry-After out.
                "429" | "500" | "503" => Refused::CalledAgain { attempt: 2 },
                _ => Refused::ForGood,
            };
            let shown = shows(&client, row, &base_url, UI_TIMEOUT, &previous, refused).await;
            assert_eq!(shown, expected, "row {row}");
            if row == "429" {
                // Connect again: Walkie waits the Retry-After it was given, then dials.
                click(&client, "#connect").await;
                wait_for(&client, "#status", |text| {
                    text.starts_with("The provider asked Walkie to wait: calling again in")
                })
                .await;
                wait_for(&client, "#status", |text| {
                    text.starts_with("Calling again (attempt 1 of 6)…")
                })
                .await;
                click(&client, "#connect").await;
                wait_for(&client, "#status", |text| text == expected).await;
            }
            previous = shown;
        }

        let tls = shows(
            &client,
            "TLS",
            &plain_url,
            UI_TIMEOUT,
            &previous,
            Refused::ForGood,
        )
        .await;
        let tls_start = unreached("The secure connection to the provider failed (");
        let tls_end = "): check the address, the system clock and any proxy, then reconnect.";
        assert!(
            tls.starts_with(&tls_start) && tls.ends_with(tls_end),
            "row TLS: {tls}"
        );
        // The cause is named without the request around it.
        assert!(!tls.contains("error sending request"), "row TLS: {tls}");
        // The technical account is behind "Details…", and copies for a bug report.
        click(&client, "#banner [data-role=details] summary").await;
        let details = wait_for(&client, "#banner [data-role=details-text]", |text| {
            !text.is_empty()
        })
        .await;
        assert!(
            details.starts_with("TLS failed during"),
            "row TLS details: {details}"
        );
        click(&client, "#banner [data-action=copy-details]").await;
        wait_for(&client, "#banner [data-action=copy-details]", |label| {
            label == "Copied"
        })
        .await;

        // A provider that never answers: its first attempt times out, and the second, under
        // way, stops at Cancel instead of running out its 15 s.
        watch_statuses(&client).await;
        choose_custom_server(&client, &silent_url).await;
        // The first attempt ends when the app's bound on it does.
        wait_until_shown_within(&client, SIGNALLING_TIMEOUT + UI_TIMEOUT, |text| {
            text.starts_with("Calling again (attempt 1 of 6)…")
        })
        .await;
        silent_attempts
            .wait_for(|&attempts| attempts >= 2)
            .await
            .expect("the silent server accepts");
        wait_for(&client, "#connect", |label| label == "Cancel").await;
        click(&client, "#connect").await;
        let timeout = wait_for_within(&client, "#status", CANCEL_WITHIN, |text| {
            text.starts_with("Not connected") && text != tls
        })
        .await;
        assert_eq!(
            timeout,
            unreached(
                "The provider did not answer within 15 seconds (the SDP exchange): check the network connection, then reconnect."
            ),
            "row timeout"
        );
        // Connect again: a first attempt, which the button offers to cancel as well, and
        // Cancel ends it in a status that says so, not in "Connecting…" with nothing under way.
        click(&client, "#connect").await;
        wait_for(&client, "#status", |text| {
            text == format!("Connecting to {HOST}…")
        })
        .await;
        silent_attempts
            .wait_for(|&attempts| attempts >= 3)
            .await
            .expect("the silent server accepts");
        wait_for(&client, "#connect", |label| label == "Cancel").await;
        click(&client, "#connect").await;
        let cancelled = wait_for_within(&client, "#status", CANCEL_WITHIN, |text| {
            text.starts_with("Not connected") && text != timeout
        })
        .await;
        assert_eq!(
            cancelled,
            "Not connected: the call was cancelled. Press Connect to try again.",
            "a first attempt cancelled"
        );
    })
    .await;
    plain_server.abort();
    silent_server.abort();
    for provider in [
        bad_request,
        bad_key,
        forbidden,
        no_model,
        rate_limited,
        server_error,
        unavailable,
    ] {
        provider.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn e2e_a_first_call_refused_with_a_server_error_is_placed_again_and_comes_up_by_itself() {
    const NAME: &str = "connect_errors_called_again";
    let dirs = AppDirs::fresh(NAME);
    // Two providers with one key: the first answers, and makes Settings keep the key; the
    // second refuses its first two calls (asking to wait a second, so the window shows each
    // attempt), then answers.
    let healthy = LocalProvider::start(ProviderConfig::default())
        .await
        .expect("a local provider on loopback");
    let token = healthy.token().to_owned();
    let failing_twice = LocalProvider::start(ProviderConfig {
        token: Some(token.clone()),
        calls_fault: Some(HttpFault::Status {
            status: 503,
            message: None,
            retry_after_s: Some(1),
        }),
        calls_fault_times: Some(2),
        ..ProviderConfig::default()
    })
    .await
    .expect("a local provider on loopback");
    let secrets = SecretService::start(&dirs);
    let app = WebviewApp::launch_with(NAME, Launch::in_dirs(&dirs, Some(&secrets))).await;
    let (healthy_url, failing_url) = (healthy.base_url(), failing_twice.base_url());
    app.run(|client| async move {
        talk_to_custom_server(&client, &healthy_url, &token).await;
        // New settings are placed once while a call goes on; a first call is placed again.
        end_the_call_on_a_dead_address(&client).await;
        watch_statuses(&client).await;
        choose_custom_server(&client, &failing_url).await;
        for attempt in 1..=2 {
            let calling =
                format!("Calling again (attempt {attempt} of 6)… {HOST} had a server error (503)");
            wait_until_shown(&client, |text| text.starts_with(&calling)).await;
        }
        let ready = format!("Ready ({HOST})");
        wait_for(&client, "#status", |text| text.starts_with(&ready)).await;
        let connect = wait_for(&client, "#connect", |label| label != "Cancel").await;
        assert_eq!(connect, "New conversation", "a call is under way");
    })
    .await;
    healthy.shutdown().await;
    failing_twice.shutdown().await;
}

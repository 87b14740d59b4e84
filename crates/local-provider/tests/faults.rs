//! The scenario files of `scenarios/`, run over real WebRTC against a provider injecting their
//! faults: each fault gives the client a typed error or the documented recovery (see
//! `walkie_local::fault`), within a bound — never a hang or a panic.

use std::time::{Duration, Instant};

use walkie_local::scenario::{self, Scenario, ScenarioError, ScenarioReport, heard};
use walkie_local::{LocalProvider, ProviderConfig};
use walkie_openai::ServerEvent;
use walkie_rtc::{CallEvent, EndReason, RtcError};

fn load(name: &str) -> Scenario {
    let path = format!("{}/scenarios/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{path}: {error}"));
    Scenario::from_json(&text).unwrap_or_else(|error| panic!("{path}: {error}"))
}

/// Runs a scenario file against a fresh provider with its faults, bounded to 60 s.
async fn run(
    name: &str,
) -> (
    Result<ScenarioReport, ScenarioError>,
    Duration,
    LocalProvider,
) {
    let scenario = load(name);
    let provider = LocalProvider::start(ProviderConfig {
        faults: scenario.faults.clone(),
        ..ProviderConfig::default()
    })
    .await
    .expect("the provider listens on 127.0.0.1");
    let started = Instant::now();
    let result = tokio::time::timeout(
        Duration::from_secs(60),
        scenario::run(&scenario, &provider.base_url(), provider.auth()),
    )
    .await
    .unwrap_or_else(|_| panic!("{name} hung for 60 s"));
    (result, started.elapsed(), provider)
}

async fn no_calls_left(provider: &LocalProvider) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while provider.active_calls().await > 0 {
        assert!(Instant::now() < deadline, "the provider kept the call");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn completed_turn(report: &ScenarioReport) {
    let types = report.event_types();
    let position = |wanted: &str| {
        types
            .iter()
            .position(|kind| kind == wanted)
            .unwrap_or_else(|| panic!("no {wanted} in {types:?}"))
    };
    assert!(position("input_audio_buffer.committed") < position("response.created"));
    assert!(position("response.done") < position("output_audio_buffer.stopped"));
    assert_eq!(
        report.audio_packets(),
        60,
        "1.2 s of speech echoed: 60 frames"
    );
    assert_eq!(report.hangup, Some(Ok(())));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scenario_without_faults_is_a_complete_turn() {
    let (result, _, provider) = run("ptt-turn.json").await;
    let report = result.expect("the scenario passes");
    completed_turn(&report);
    assert!(!report.event_types().iter().any(|kind| kind == "error"));
    no_calls_left(&provider).await;
    provider.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_event_is_reported_and_the_turn_goes_on() {
    let (result, _, provider) = run("fault-malformed.json").await;
    let report = result.expect("the turn completes despite the malformed event");
    let types = report.event_types();
    let bad = types
        .iter()
        .position(|kind| kind == "undecodable")
        .expect("reported");
    assert_eq!(types[bad + 1], "response.created", "{types:?}");
    let undecodable = report
        .events
        .iter()
        .find_map(|event| match (event, heard(event)) {
            (CallEvent::Text(text), Some(Err(error))) => Some((text.clone(), error.to_string())),
            _ => None,
        });
    let (text, error) = undecodable.expect("the text and a typed decode error");
    assert_eq!(text, walkie_local::fault::MALFORMED_TEXT);
    assert!(!error.is_empty());
    completed_turn(&report);
    provider.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delayed_events_arrive_late_and_in_order() {
    let (result, elapsed, provider) = run("fault-delay.json").await;
    let report = result.expect("the turn completes, late");
    completed_turn(&report);
    // Without the fault the scenario takes ~2.5 s (1.2 s of speech, 1.2 s of reply).
    assert!(elapsed >= Duration::from_millis(3_900), "took {elapsed:?}");
    provider.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_event_is_typed_and_the_transport_keeps_the_call() {
    let (result, _, provider) = run("fault-error.json").await;
    let report = result.expect("the transport keeps the call");
    let error = report.events.iter().find_map(|event| match heard(event) {
        Some(Ok(ServerEvent::Error { error })) => Some(error),
        _ => None,
    });
    let error = error.expect("the injected error arrives as a typed event");
    assert_eq!(error.kind, "server_error");
    assert_eq!(error.code.as_deref(), Some("server_error"));
    assert!(
        error.is_recoverable(),
        "a server_error is not on the fatal list: the session shows it and goes on"
    );
    let types = report.event_types();
    assert_eq!(types[3], "error", "{types:?}");
    assert_eq!(types[4], "input_audio_buffer.committed");
    completed_turn(&report);
    provider.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abrupt_close_ends_the_call_and_later_sends_fail_typed() {
    let (result, elapsed, provider) = run("fault-abrupt-close.json").await;
    let Err(ScenarioError::Send { step, error }) = result else {
        panic!("the send after the end must fail typed, got {result:?}");
    };
    assert_eq!(step, 11);
    assert!(
        matches!(error, RtcError::DataChannelClosed | RtcError::Closed),
        "{error:?}"
    );
    assert!(elapsed < Duration::from_secs(10), "noticed in {elapsed:?}");
    no_calls_left(&provider).await;
    provider.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_connection_ends_the_call_as_a_connection_failure() {
    let (result, elapsed, provider) = run("fault-drop.json").await;
    let report = result.expect("the end of the call is expected");
    assert!(
        matches!(report.end, Some(EndReason::ConnectionFailed(_))),
        "{:?}",
        report.end
    );
    assert!(
        report.events.contains(&CallEvent::Disconnected),
        "disconnected first: {:?}",
        report.event_types()
    );
    assert!(
        !report
            .event_types()
            .iter()
            .any(|kind| kind == "output_audio_buffer.started"),
        "nothing after the drop"
    );
    // Connect + 1.2 s of speech + ICE: disconnected after 1 s, failed after 1 s more.
    assert!(elapsed < Duration::from_secs(15), "noticed in {elapsed:?}");
    no_calls_left(&provider).await;
    provider.shutdown().await;
}

#[test]
fn every_scenario_file_reads() {
    let dir = format!("{}/scenarios", env!("CARGO_MANIFEST_DIR"));
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).expect("the scenarios directory") {
        let path = entry.expect("a directory entry").path();
        let text = std::fs::read_to_string(&path).expect("readable");
        Scenario::from_json(&text).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        count += 1;
    }
    assert!(count >= 6);
}

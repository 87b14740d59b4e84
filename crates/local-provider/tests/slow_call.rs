//! A call kept up for two minutes stays connected: ICE consent freshness (RFC 7675) keeps
//! being answered on both sides while nothing else flows, and the call still works at the
//! end. Two minutes is four times consent's 30 s expiry and 24 times the 5 s disconnect
//! timeout; `WALKIE_SLOW_CALL_SECONDS=3600` makes it the hour-long version. Slow by design
//! (its name starts with `slow_`, so `-- --skip slow_` leaves it out while iterating); it runs
//! in CI.

use std::time::{Duration, Instant};

use walkie_local::scenario::{encode_opus, heard, speech_like};
use walkie_local::{LocalProvider, ProviderConfig};
use walkie_openai::{ClientEvent, ServerEvent};
use walkie_rtc::{Call, CallConfig, CallEvent};

const CALL_SECONDS: u64 = 120;
const PROBE_EVERY: Duration = Duration::from_secs(10);

fn call_length() -> Duration {
    let seconds = std::env::var("WALKIE_SLOW_CALL_SECONDS")
        .ok()
        .map(|text| {
            text.parse()
                .expect("WALKIE_SLOW_CALL_SECONDS is a number of seconds")
        })
        .unwrap_or(CALL_SECONDS);
    Duration::from_secs(seconds)
}

/// Reads events until `wanted`; any sign of a broken connection fails the test.
async fn until(call: &mut Call, wanted: &str, within: Duration) -> Vec<CallEvent> {
    let deadline = tokio::time::Instant::now() + within;
    let mut seen = Vec::new();
    loop {
        let event = tokio::time::timeout_at(deadline, call.next_event())
            .await
            .unwrap_or_else(|_| panic!("no {wanted} within {within:?}"))
            .unwrap_or_else(|| panic!("the call ended while waiting for {wanted}"));
        match event {
            CallEvent::Text(_)
                if heard(&event).is_some_and(|e| e.is_ok_and(|e| e.event_type() == wanted)) =>
            {
                return seen;
            }
            CallEvent::Disconnected | CallEvent::Reconnected | CallEvent::Ended(_) => {
                panic!("the connection wavered: {event:?}")
            }
            other => seen.push(other),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_call_stays_connected_for_two_minutes() {
    let call_length = call_length();
    let provider = LocalProvider::start(ProviderConfig::default())
        .await
        .expect("the provider listens");
    let endpoint = provider.endpoint();
    // The default ICE timing: disconnected after 5 s without consent, keepalives every 2 s.
    let mut call = Call::connect(CallConfig::new(endpoint))
        .await
        .expect("the call connects");
    until(&mut call, "session.created", Duration::from_secs(10)).await;

    let started = Instant::now();
    let mut probes = 0;
    while started.elapsed() < call_length {
        // Idle: no audio, no events — only ICE keeps the path alive. Any event that arrives
        // (none should) is checked for trouble.
        let idle_until = tokio::time::Instant::now()
            + PROBE_EVERY.min(call_length - started.elapsed().min(call_length));
        let datagrams_before = call
            .peer()
            .stats()
            .datagrams_in
            .load(std::sync::atomic::Ordering::Relaxed);
        if let Ok(event) = tokio::time::timeout_at(idle_until, call.next_event()).await {
            panic!(
                "the idle call got {event:?} after {:?} (disconnected, ended, or unexpected)",
                started.elapsed()
            );
        }
        let datagrams_after = call
            .peer()
            .stats()
            .datagrams_in
            .load(std::sync::atomic::Ordering::Relaxed);
        assert!(
            datagrams_after > datagrams_before,
            "consent traffic keeps arriving while idle"
        );
        // The data channel still works both ways.
        call.send(&ClientEvent::InputAudioBufferClear, None)
            .await
            .expect("the data channel is open");
        until(
            &mut call,
            "input_audio_buffer.cleared",
            Duration::from_secs(5),
        )
        .await;
        probes += 1;
    }
    let expected_probes = call_length.as_secs() / PROBE_EVERY.as_secs();
    assert!(
        probes >= expected_probes,
        "{probes} probes in {call_length:?}, not {expected_probes}"
    );
    assert!(!call.peer().is_closed());

    // And a turn at the end still echoes every frame.
    let frames = encode_opus(&speech_like(1000)).expect("encodes");
    let sent = frames.len();
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    for frame in frames {
        tick.tick().await;
        call.send_audio(frame, 960).expect("the call is up");
    }
    tokio::time::sleep(Duration::from_millis(60)).await;
    call.send(&ClientEvent::InputAudioBufferCommit, None)
        .await
        .expect("sent");
    call.send(&ClientEvent::ResponseCreate { response: None }, None)
        .await
        .expect("sent");
    let reply = until(
        &mut call,
        "output_audio_buffer.stopped",
        Duration::from_secs(10),
    )
    .await;
    let echoed = reply
        .iter()
        .filter(|event| matches!(event, CallEvent::Audio(_)))
        .count();
    assert_eq!(
        echoed, sent,
        "the whole turn is echoed after the long idle stretch"
    );
    assert!(
        !reply
            .iter()
            .any(|event| matches!(heard(event), Some(Ok(ServerEvent::Error { .. }))))
    );
    eprintln!(
        "figures: call up {:?}, {probes} probes, {} datagrams in / {} out on the client",
        started.elapsed(),
        call.peer()
            .stats()
            .datagrams_in
            .load(std::sync::atomic::Ordering::Relaxed),
        call.peer()
            .stats()
            .datagrams_out
            .load(std::sync::atomic::Ordering::Relaxed),
    );
    call.hangup().await.expect("hung up");
    provider.shutdown().await;
}

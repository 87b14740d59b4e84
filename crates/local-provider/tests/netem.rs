//! Walkie's transport through the impaired network ([`walkie_local::netem::Relay`]): the relay
//! really carries the call (every packet crosses it, both ways), loses what its schedule says,
//! and a short blackout is ridden out by ICE consent without the call ending.

mod common;

use std::time::Duration;

use common::speech_frames;
use walkie_local::netem::{Direction, Impairment, Relay};
use walkie_local::scenario::server_event;
use walkie_local::{LocalProvider, ProviderConfig};
use walkie_openai::{AudioConfig, AudioInput, ClientEvent, ServerEvent, SessionConfig};
use walkie_rtc::{Auth, Call, CallConfig, CallEvent, Endpoint};

const TOKEN: &str = "netem-token";

async fn next(call: &mut Call, what: &str) -> CallEvent {
    tokio::time::timeout(Duration::from_secs(15), call.next_event())
        .await
        .unwrap_or_else(|_| panic!("nothing within 15 s while waiting for {what}"))
        .unwrap_or_else(|| panic!("the call ended while waiting for {what}"))
}

/// A push-to-talk call to the local provider through a relay impaired as given.
async fn call_through(impairment: Impairment, seed: u64) -> (LocalProvider, Relay, Call) {
    let provider = LocalProvider::start(ProviderConfig {
        token: Some(TOKEN.to_owned()),
        ..ProviderConfig::default()
    })
    .await
    .expect("the provider listens on 127.0.0.1");
    let relay = Relay::start(&provider.base_url(), impairment, seed)
        .await
        .expect("the relay listens on 127.0.0.1");
    let endpoint = Endpoint::custom(&relay.base_url(), Auth::Bearer(TOKEN.to_owned()))
        .expect("a loopback address");
    let mut call = Call::connect(CallConfig::new(endpoint))
        .await
        .expect("the call connects through the relay");
    call.send(
        &ClientEvent::SessionUpdate {
            session: Box::new(SessionConfig {
                audio: Some(AudioConfig {
                    input: Some(AudioInput {
                        turn_detection: Some(None),
                        ..AudioInput::default()
                    }),
                    output: None,
                }),
                ..SessionConfig::default()
            }),
        },
        None,
    )
    .await
    .expect("the data channel is open");
    loop {
        if let text @ CallEvent::Text(_) = next(&mut call, "session.updated").await
            && matches!(
                server_event(&text),
                Some(ServerEvent::SessionUpdated { .. })
            )
        {
            break;
        }
    }
    (provider, relay, call)
}

/// Speaks `frames` frames and asks for the reply; returns how many audio packets of it arrived.
async fn turn(call: &mut Call, frames: usize) -> usize {
    call.send(&ClientEvent::InputAudioBufferClear, None)
        .await
        .expect("sent");
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    for frame in speech_frames(frames) {
        tick.tick().await;
        call.send_audio(frame, 960).expect("the call is up");
    }
    call.send(&ClientEvent::InputAudioBufferCommit, None)
        .await
        .expect("sent");
    call.send(&ClientEvent::ResponseCreate { response: None }, None)
        .await
        .expect("sent");
    let mut packets = 0;
    loop {
        match next(call, "the reply").await {
            CallEvent::Audio(_) => packets += 1,
            text @ CallEvent::Text(_) => {
                if let Some(ServerEvent::OutputAudioBufferStopped { .. }) = server_event(&text) {
                    return packets;
                }
            }
            CallEvent::Ended(reason) => panic!("the call ended during the reply: {reason:?}"),
            _ => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_through_a_clean_relay_carries_every_packet_of_a_turn_across_it() {
    let (_provider, relay, mut call) = call_through(Impairment::CLEAN, 1).await;
    let packets = turn(&mut call, 50).await;
    assert!(
        packets >= 45,
        "the reply's audio arrived: {packets} packets"
    );
    let (up, down) = (relay.counts(Direction::Up), relay.counts(Direction::Down));
    assert!(
        up.received >= 50,
        "the microphone's 50 packets crossed the relay: {up:?}"
    );
    assert!(down.received >= 45, "the reply crossed the relay: {down:?}");
    assert_eq!((up.lost, down.lost), (0, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_ten_percent_loss_each_way_a_tenth_of_the_reply_is_lost_and_the_call_goes_on() {
    let (_provider, relay, mut call) = call_through(Impairment::CLEAN, 2).await;
    relay.set_impairment(Impairment::random_loss(10.0));
    let before = relay.counts(Direction::Down);
    let packets = turn(&mut call, 100).await;
    let down = relay.counts(Direction::Down);
    let (received, lost) = (down.received - before.received, down.lost - before.lost);
    let share = lost as f64 / received as f64;
    assert!(
        (0.04..=0.18).contains(&share),
        "about 10 % of the packets toward Walkie were lost: {lost} of {received}"
    );
    assert!(
        packets > 60 && (packets as u64) < received,
        "the rest of the reply arrived: {packets} of {received} packets"
    );
    relay.set_impairment(Impairment::CLEAN);
    let packets = turn(&mut call, 50).await;
    assert!(
        packets >= 45,
        "once the loss stops, the reply arrives whole: {packets}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_three_second_blackout_is_ridden_out_without_the_call_ending() {
    let (_provider, relay, mut call) = call_through(Impairment::CLEAN, 3).await;
    relay.black_out(Duration::from_secs(3));
    // Through the blackout and a second after it, nothing may end the call.
    let after = tokio::time::Instant::now() + Duration::from_secs(4);
    loop {
        match tokio::time::timeout_at(after, call.next_event()).await {
            Err(_) => break,
            Ok(Some(CallEvent::Ended(reason))) => {
                panic!("the call ended in the blackout: {reason:?}")
            }
            Ok(None) => panic!("the call's events ended in the blackout"),
            Ok(Some(_)) => {}
        }
    }
    assert!(
        relay.counts(Direction::Up).lost > 0,
        "the blackout lost the consent checks"
    );
    let packets = turn(&mut call, 50).await;
    assert!(
        packets >= 45,
        "after it, a turn goes through whole: {packets}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_round_trip_the_client_measures_is_the_networks() {
    let (_provider, relay, mut call) = call_through(Impairment::CLEAN, 4).await;
    relay.set_impairment(Impairment {
        delay_ms: 50,
        ..Impairment::CLEAN
    });
    // Consent checks go out every 2 s; the next one answered after the delay says it.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let round_trip_ms = loop {
        let measured = call.peer().stats().round_trip_ms();
        if let Some(ms) = measured
            && ms >= 90.0
        {
            break ms;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no round trip of 2 × 50 ms measured within 10 s: {measured:?}"
        );
        let _ = tokio::time::timeout(Duration::from_millis(100), call.next_event()).await;
    };
    assert!(
        round_trip_ms < 200.0,
        "the round trip is the network's 100 ms, not more: {round_trip_ms} ms"
    );
}

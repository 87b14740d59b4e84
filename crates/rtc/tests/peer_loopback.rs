//! Two peers of this crate on 127.0.0.1 — real ICE, DTLS, SCTP and SRTP — with the SDP passed
//! as text, as the HTTP exchange passes it.

use std::time::{Duration, Instant};

use bytes::Bytes;
use walkie_rtc::peer::{self, PeerConfig, PeerEvent};
use walkie_rtc::{Peer, RtcError};

async fn next_event(peer: &mut Peer, what: &str) -> PeerEvent {
    tokio::time::timeout(Duration::from_secs(10), peer.events.recv())
        .await
        .unwrap_or_else(|_| panic!("no event within 10 s while waiting for {what}"))
        .unwrap_or_else(|| panic!("the event stream ended while waiting for {what}"))
}

/// Waits for the data channel to open; returns (ICE connected, DC open) instants.
async fn wait_open(peer: &mut Peer, name: &str) -> (Instant, Instant) {
    let mut ice = None;
    loop {
        match next_event(peer, &format!("{name}'s data channel")).await {
            PeerEvent::IceConnected { at } => ice = Some(at),
            PeerEvent::DataChannelOpen { at } => {
                return (ice.expect("ICE connects before the data channel opens"), at);
            }
            PeerEvent::Failed { reason } => panic!("{name} failed: {reason}"),
            _ => {}
        }
    }
}

async fn connect_pair() -> (Peer, Peer, Duration) {
    let config = PeerConfig::default();
    let pending = peer::offer(&config).await.expect("the offer is made");
    let offer = pending.sdp().to_owned();
    assert!(
        offer.contains("m=audio"),
        "an audio m-line is offered:\n{offer}"
    );
    assert!(
        offer.contains("a=sendrecv"),
        "the audio is sendrecv:\n{offer}"
    );
    assert!(
        offer.contains("webrtc-datachannel"),
        "a data channel is offered:\n{offer}"
    );
    assert!(
        offer.contains("typ host"),
        "host candidates are in the offer (no trickle):\n{offer}"
    );
    let (mut answerer, answer) = peer::answer(&config, &offer)
        .await
        .expect("the offer is answered");
    assert!(
        answer.contains("opus/48000/2"),
        "Opus is negotiated:\n{answer}"
    );
    let mut offerer = pending.accept(&answer).expect("the answer is accepted");
    let (ice, open) = wait_open(&mut offerer, "offerer").await;
    wait_open(&mut answerer, "answerer").await;
    (offerer, answerer, open.duration_since(ice))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_channel_opens_fast_and_carries_text_both_ways() {
    let (offerer, mut answerer, ice_to_open) = connect_pair().await;
    assert!(
        ice_to_open <= Duration::from_millis(50),
        "the data channel opened {ice_to_open:?} after ICE connected (target ≤ 50 ms)"
    );

    offerer
        .handle
        .send_text(r#"{"type":"session.update"}"#)
        .await
        .expect("the open channel takes text");
    loop {
        match next_event(&mut answerer, "the text").await {
            PeerEvent::Text { text, .. } => {
                assert_eq!(text, r#"{"type":"session.update"}"#);
                break;
            }
            PeerEvent::Audio(_) => {}
            other => panic!("unexpected event before the text: {other:?}"),
        }
    }
    offerer.handle.close().await;
    // The answerer learns that the channel closed.
    loop {
        match next_event(&mut answerer, "the close").await {
            PeerEvent::DataChannelClosed | PeerEvent::Closed | PeerEvent::Failed { .. } => break,
            _ => {}
        }
    }
    assert!(matches!(
        offerer.handle.send_text("late").await,
        Err(RtcError::Closed)
    ));
    answerer.handle.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opus_rtp_flows_both_ways_in_order() {
    let (mut offerer, mut answerer, _) = connect_pair().await;
    let frames: Vec<Bytes> = (0..25u8)
        .map(|i| Bytes::from(vec![0xF8, i, i, i]))
        .collect();
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    for frame in &frames {
        tick.tick().await;
        offerer
            .handle
            .send_audio(frame.clone(), 960)
            .expect("the loop runs");
        answerer
            .handle
            .send_audio(frame.clone(), 960)
            .expect("the loop runs");
    }
    for (name, peer) in [("answerer", &mut answerer), ("offerer", &mut offerer)] {
        let mut got = Vec::new();
        while got.len() < frames.len() {
            if let PeerEvent::Audio(audio) = next_event(peer, &format!("{name}'s audio")).await {
                got.push(audio);
            }
        }
        for (i, (audio, frame)) in got.iter().zip(&frames).enumerate() {
            assert_eq!(
                &audio.payload, frame,
                "{name}: payload {i} arrives unchanged"
            );
            assert_eq!(
                audio.payload_type, 111,
                "{name}: the negotiated Opus payload type"
            );
        }
        for pair in got.windows(2) {
            assert_eq!(
                pair[1].sequence_number,
                pair[0].sequence_number.wrapping_add(1)
            );
            assert_eq!(pair[1].timestamp, pair[0].timestamp.wrapping_add(960));
        }
    }
    offerer.handle.close().await;
    answerer.handle.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_never_answers_gives_typed_errors_not_a_hang() {
    let config = PeerConfig {
        ice_disconnected_timeout: Duration::from_secs(1),
        ice_failed_timeout: Duration::from_secs(1),
        ..PeerConfig::default()
    };
    let pending = peer::offer(&config).await.expect("the offer is made");
    let (answerer, answer) = peer::answer(&config, pending.sdp())
        .await
        .expect("the offer is answered");
    // The answering side goes away before a single check: nobody will answer ICE.
    answerer.handle.close().await;
    let mut offerer = pending.accept(&answer).expect("the answer is accepted");
    assert!(matches!(
        offerer.handle.send_text("too early").await,
        Err(RtcError::DataChannelNotOpen)
    ));
    let failed = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match offerer.events.recv().await {
                Some(PeerEvent::Failed { reason }) => return reason,
                Some(PeerEvent::DataChannelOpen { .. }) => panic!("opened with nobody there"),
                Some(_) => {}
                None => panic!("the event stream ended without a failure"),
            }
        }
    })
    .await
    .expect("ICE fails within 30 s when nobody answers");
    assert!(
        failed.contains("ICE") || failed.contains("failed"),
        "{failed}"
    );
    assert!(
        offerer.events.recv().await.is_none(),
        "the loop ends after failing"
    );
    assert!(offerer.handle.is_closed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_sdp_and_wildcard_binds_are_typed_errors() {
    let config = PeerConfig::default();
    let pending = peer::offer(&config).await.expect("the offer is made");
    assert!(matches!(
        pending.accept("this is not SDP"),
        Err(RtcError::BadAnswer(_))
    ));
    assert!(matches!(
        peer::answer(&config, "v=0\r\nnonsense").await,
        Err(RtcError::BadOffer(_))
    ));
    assert!(matches!(
        peer::offer(&PeerConfig {
            bind: vec!["0.0.0.0:0".parse().expect("an address")],
            ..PeerConfig::default()
        })
        .await,
        Err(RtcError::WebRtc(_))
    ));
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_channel_one_way_latency_is_milliseconds() {
    let (offerer, mut answerer, ice_to_open) = connect_pair().await;
    let base = Instant::now();
    let count = 200;
    let sender = offerer.handle.clone();
    let sending = tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_millis(5));
        for i in 0..count {
            tick.tick().await;
            let sent_us = base.elapsed().as_micros();
            let text = format!(r#"{{"type":"probe","i":{i},"sent_us":{sent_us}}}"#);
            sender.send_text(text).await.expect("the channel is open");
        }
    });
    let mut latencies = Vec::with_capacity(count);
    while latencies.len() < count {
        if let PeerEvent::Text { text, at } = next_event(&mut answerer, "a probe").await {
            let value: serde_json::Value = serde_json::from_str(&text).expect("probes are JSON");
            let sent_us = value["sent_us"].as_u64().expect("probes carry sent_us");
            assert_eq!(
                value["i"].as_u64(),
                Some(latencies.len() as u64),
                "in order"
            );
            let sent = base + Duration::from_micros(sent_us);
            latencies.push(at.duration_since(sent));
        }
    }
    sending.await.expect("the sender finishes");
    latencies.sort();
    let (p50, p99, max) = (
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
        percentile(&latencies, 1.0),
    );
    eprintln!(
        "figures: ICE connected→DC open {ice_to_open:?}; DC one-way latency over {count} messages: p50 {p50:?}, p99 {p99:?}, max {max:?}"
    );
    // The issue's target is p99 ≤ 5 ms; the bound here leaves room for a loaded debug build.
    assert!(p50 <= Duration::from_millis(5), "DC one-way p50 {p50:?}");
    assert!(p99 <= Duration::from_millis(20), "DC one-way p99 {p99:?}");
    offerer.handle.close().await;
    answerer.handle.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_text_arrives_in_order_and_a_failed_one_comes_back_as_an_event() {
    let config = PeerConfig::default();
    let pending = peer::offer(&config).await.expect("the offer is made");
    let offer = pending.sdp().to_owned();
    let (mut answerer, answer) = peer::answer(&config, &offer)
        .await
        .expect("the offer is answered");
    let mut offerer = pending.accept(&answer).expect("the answer is accepted");
    offerer
        .handle
        .queue_text("too early")
        .expect("queueing returns at once while the loop runs");
    // The failure may come before or after the channel opens on loopback: wait for both.
    let (mut failed, mut opened) = (false, false);
    while !(failed && opened) {
        match next_event(
            &mut offerer,
            "the early text's failure and the open channel",
        )
        .await
        {
            PeerEvent::SendFailed { error } => {
                assert!(error.contains("not open"), "says why: {error}");
                failed = true;
            }
            PeerEvent::DataChannelOpen { .. } => opened = true,
            PeerEvent::Failed { reason } => panic!("offerer failed: {reason}"),
            _ => {}
        }
    }
    wait_open(&mut answerer, "answerer").await;

    for text in ["first", "second", "third"] {
        offerer.handle.queue_text(text).expect("queued");
    }
    let mut received = Vec::new();
    while received.len() < 3 {
        if let PeerEvent::Text { text, .. } = next_event(&mut answerer, "the queued texts").await {
            received.push(text);
        }
    }
    assert_eq!(received, ["first", "second", "third"]);

    offerer.handle.close().await;
    assert!(matches!(
        offerer.handle.queue_text("late"),
        Err(RtcError::Closed)
    ));
    answerer.handle.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_longer_than_the_limit_is_never_delivered_and_the_call_goes_on() {
    // The offerer takes at most 4 KiB and says so; the answerer is told 64 KiB, as a hostile
    // provider would ignore the limit.
    let small = PeerConfig {
        max_message_bytes: 4096,
        ..PeerConfig::default()
    };
    let pending = peer::offer(&small).await.expect("the offer is made");
    let offer = pending.sdp().to_owned();
    assert!(offer.contains("a=max-message-size:4096"), "{offer}");
    let ignored = offer.replace("a=max-message-size:4096", "a=max-message-size:65536");
    let (mut answerer, answer) = peer::answer(&PeerConfig::default(), &ignored)
        .await
        .expect("the offer is answered");
    let mut offerer = pending.accept(&answer).expect("the answer is accepted");
    wait_open(&mut offerer, "offerer").await;
    wait_open(&mut answerer, "answerer").await;

    for text in ["x".repeat(10_000), "y".repeat(4096), "after".to_owned()] {
        answerer
            .handle
            .send_text(text)
            .await
            .expect("the answerer believes 64 KiB fit");
    }
    let mut delivered = Vec::new();
    while delivered.last().is_none_or(|text: &String| text != "after") {
        match next_event(&mut offerer, "the texts").await {
            PeerEvent::Text { text, .. } => delivered.push(text),
            PeerEvent::Audio(_) => {}
            other => panic!("unexpected event: {other:?}"),
        }
    }
    assert_eq!(
        delivered,
        ["y".repeat(4096), "after".to_owned()],
        "the 10 000-byte message is dropped, the ones within the limit arrive"
    );
    offerer.handle.close().await;
    answerer.handle.close().await;
}

/// Text `n` of a flood: its number, then filler to 64 KiB.
fn numbered_text(n: usize) -> String {
    format!("{n:08}{}", "z".repeat(64 * 1024 - 64))
}

/// Reads `count` texts from `peer` and returns the numbers they start with, in order.
///
/// The deadline is the whole flood's, not one text's: on a loaded machine loopback UDP drops
/// datagrams of a 16 MiB flood, and SCTP's retransmission timer can back off past 10 s before a
/// lost chunk is sent again.
async fn numbers_received(peer: &mut Peer, count: usize) -> Vec<String> {
    const FLOOD_DEADLINE: Duration = Duration::from_secs(60);
    let mut received = Vec::new();
    let reading = async {
        while received.len() < count {
            match peer.events.recv().await {
                Some(PeerEvent::Text { text, .. }) => received.push(text[..8].to_owned()),
                Some(PeerEvent::Audio(_)) => {}
                Some(other) => panic!("unexpected event: {other:?}"),
                None => panic!("the event stream ended while waiting for the flood"),
            }
        }
    };
    if tokio::time::timeout(FLOOD_DEADLINE, reading).await.is_err() {
        panic!(
            "only {} of {count} texts arrived within {FLOOD_DEADLINE:?}",
            received.len()
        );
    }
    received
}

/// The numbers of texts `0..count`, as [`numbers_received`] gives them.
fn numbers(count: usize) -> Vec<String> {
    (0..count).map(|n| format!("{n:08}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sender_that_awaits_each_send_is_paced_by_the_remote_and_queues_about_a_mebibyte() {
    use std::sync::atomic::Ordering;
    let (offerer, mut answerer, _) = connect_pair().await;
    // 16 MiB in 64 KiB texts, each send awaited, as a provider flooding its client would.
    const TEXTS: usize = 256;
    let receiver = tokio::spawn(async move {
        let received = numbers_received(&mut answerer, TEXTS).await;
        (answerer, received)
    });
    for n in 0..TEXTS {
        offerer
            .handle
            .send_text(numbered_text(n))
            .await
            .expect("the flood is sent");
    }
    let (answerer, received) = tokio::time::timeout(Duration::from_secs(60), receiver)
        .await
        .expect("the whole flood arrives")
        .expect("the receiver ran");
    assert_eq!(
        received,
        numbers(TEXTS),
        "every text arrives once, in order"
    );
    let peak = offerer
        .handle
        .stats()
        .send_backlog_peak_bytes
        .load(Ordering::Relaxed);
    assert!(
        peak <= u64::from(peer::SEND_BACKLOG_HIGH_BYTES) + numbered_text(0).len() as u64,
        "the sender's backlog reached {peak} bytes"
    );
    offerer.handle.close().await;
    answerer.handle.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_that_stops_reading_holds_a_bounded_queue_and_its_flooding_remote_waits() {
    use std::sync::atomic::Ordering;
    let (offerer, mut answerer, _) = connect_pair().await;
    // 32 MiB: four times what the bounded queue can hold.
    const TEXTS: usize = 512;
    let sender = offerer.handle.clone();
    let flood = tokio::spawn(async move {
        for n in 0..TEXTS {
            sender
                .send_text(numbered_text(n))
                .await
                .expect("the flood is sent");
        }
    });
    // Nobody reads the answerer's events: 32 MiB cannot all be taken in. The flood stalls
    // instead (the claim is negative, so it is bounded by a time: 3 s is ten times what the
    // whole flood takes when it is read).
    assert!(
        tokio::time::timeout(Duration::from_secs(3), flood)
            .await
            .is_err(),
        "all 32 MiB were taken in although nobody read them"
    );
    let taken_in = answerer.handle.stats().texts_in.load(Ordering::Relaxed) as usize;
    assert!(
        taken_in <= peer::EVENT_QUEUE + 64,
        "{taken_in} texts of 64 KiB were taken out of the connection for a reader that reads none"
    );
    let sent = offerer.handle.stats().texts_out.load(Ordering::Relaxed) as usize;
    assert!(sent < TEXTS, "the remote waits: {sent} of {TEXTS} sent");

    // Reading again, everything arrives, once and in order.
    assert_eq!(numbers_received(&mut answerer, TEXTS).await, numbers(TEXTS));
    offerer.handle.close().await;
    answerer.handle.close().await;
}

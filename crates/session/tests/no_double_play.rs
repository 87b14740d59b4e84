//! No double play by construction: the audio view and the playback path carry only deltas; the WAV
//! snapshot of a finished speech part is reachable only for saving.

mod common;

use std::collections::HashMap;

use common::*;
use walkie_session::{
    AudioChunk, Part, PlaybackSink, Session, SessionConfig, SessionEvent, WavSnapshot,
};

/// A device stand-in: counts how often each sample value reached it.
#[derive(Default)]
struct CountingSink {
    plays_per_sample: HashMap<i16, u32>,
    played_samples: usize,
}

impl PlaybackSink for CountingSink {
    fn play(&mut self, chunk: &AudioChunk) {
        for sample in chunk.samples() {
            *self.plays_per_sample.entry(*sample).or_default() += 1;
        }
        self.played_samples += chunk.sample_count();
    }
}

#[test]
fn a_whole_turn_played_through_the_audio_view_reaches_the_sink_once_per_sample() {
    let mut session = Session::new(SessionConfig {
        retain_output_audio: true,
        ..SessionConfig::default()
    });
    let audio = session.stream_audio();
    let mut sink = CountingSink::default();
    assert!(
        session.poll_audio(&audio).unwrap().is_none(),
        "subscribe before the turn"
    );
    let chunk_samples = 480; // 20 ms at 24 kHz
    let chunk_count = 50;
    let reply = start_assistant_speech(&mut session, 0);
    for n in 0..chunk_count {
        let first_sample = (n * chunk_samples) as i16;
        session
            .push_delta(
                reply,
                walkie_session::PartDelta::assistant_audio(counting_chunk(
                    first_sample,
                    chunk_samples,
                )),
                n as u64 * 20,
            )
            .unwrap();
        // The device pulls what is there, as a real output callback would.
        while let Some(chunk) = session.poll_audio(&audio).unwrap() {
            sink.play(&chunk);
        }
    }
    session.response_done(1_000).unwrap();
    // The finished part (with its WAV snapshot) goes by on the main stream; the player keeps
    // pulling the view and nothing more arrives.
    let delivered = drain_late(&mut session);
    while let Some(chunk) = session.poll_audio(&audio).unwrap() {
        sink.play(&chunk);
    }

    let total_samples = chunk_samples * chunk_count;
    assert_eq!(sink.played_samples, total_samples);
    assert_eq!(
        sink.plays_per_sample.len(),
        total_samples,
        "every sample was played"
    );
    assert!(
        sink.plays_per_sample.values().all(|plays| *plays == 1),
        "no sample was played twice"
    );
    let snapshot = delivered
        .iter()
        .find_map(|d| match d {
            walkie_session::Delivery::Event(e) => match &e.event {
                SessionEvent::PartEnd(end) => match &end.part {
                    Part::Speech(speech) => speech.audio.clone(),
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        })
        .expect("with retention on, the finished part carries the whole turn");
    assert_eq!(
        snapshot.sample_count(),
        total_samples,
        "the snapshot holds the turn again"
    );
    assert_eq!(snapshot.sample_rate_hz(), 24_000);
    assert_eq!(snapshot.duration_ms(), 1_000);
    let saved = snapshot.to_wav_bytes();
    assert_eq!(
        &saved[0..4],
        b"RIFF",
        "the snapshot's only outlet is a WAV file for saving"
    );
    assert_eq!(WavSnapshot::from_wav_bytes(&saved).unwrap(), snapshot);
}

#[test]
fn without_retention_a_finished_speech_part_carries_no_audio() {
    let mut session = Session::default();
    let reply = start_assistant_speech(&mut session, 0);
    session.push_delta(reply, audio_delta(0), 1).unwrap();
    session.end_part(reply, 2).unwrap();

    let delivered = drain_late(&mut session);
    let SessionEvent::PartEnd(end) = &events(&delivered)[2].event else {
        panic!("the third event is the end")
    };
    let Part::Speech(speech) = &end.part else {
        panic!("speech")
    };
    assert_eq!(speech.audio, None);
}

//! The `stream_audio()` and `stream_transcripts()` views: lazy, never replaying, bounded, fed from
//! the same events and independent of the main stream.

mod common;

use common::*;
use walkie_session::{
    FinalTranscript, Part, Session, SessionConfig, Speaker, TranscriptItem, TranscriptMode,
    TranscriptUpdate, ViewError,
};

#[test]
fn an_audio_view_starts_when_first_read_and_never_replays_earlier_audio() {
    let mut session = Session::default();
    let audio = session.stream_audio();
    let part = start_assistant_speech(&mut session, 0);
    session.push_delta(part, audio_delta(100), 1).unwrap();

    let first_read = session.poll_audio(&audio).unwrap();
    session.push_delta(part, audio_delta(200), 2).unwrap();
    let second_read = session.poll_audio(&audio).unwrap();

    assert_eq!(
        first_read, None,
        "audio from before the first read is not replayed"
    );
    assert_eq!(second_read.map(|c| c.samples()[0]), Some(200));
}

#[test]
fn a_full_audio_view_drops_its_oldest_chunks_and_counts_them() {
    let mut session = Session::new(SessionConfig {
        audio_view_capacity: 4,
        ..SessionConfig::default()
    });
    let audio = session.stream_audio();
    session.poll_audio(&audio).unwrap();
    let part = start_assistant_speech(&mut session, 0);
    for n in 0..10 {
        session.push_delta(part, audio_delta(n * 10), 0).unwrap();
    }

    let mut kept = Vec::new();
    while let Some(chunk) = session.poll_audio(&audio).unwrap() {
        kept.push(chunk.samples()[0]);
    }

    assert_eq!(kept, vec![60, 70, 80, 90]);
    assert_eq!(session.drop_counters().audio_chunks_dropped, 6);
}

#[test]
fn the_audio_view_carries_only_the_assistants_audio() {
    let mut session = Session::default();
    let audio = session.stream_audio();
    session.poll_audio(&audio).unwrap();
    let user = session.start_part(Part::speech(Speaker::User), 0).unwrap();
    session
        .push_delta(
            user,
            walkie_session::PartDelta::Speech(walkie_session::SpeechPartDelta {
                speaker: Speaker::User,
                transcript_delta: None,
                transcript: None,
                audio_chunk: Some(counting_chunk(1, 4)),
            }),
            1,
        )
        .unwrap();

    assert_eq!(session.poll_audio(&audio).unwrap(), None);
}

#[test]
fn transcript_updates_carry_both_speakers_and_the_whole_transcript_so_far() {
    let mut session = Session::default();
    let view = session.stream_transcripts(TranscriptMode::Updates);
    session.poll_transcripts(&view).unwrap();
    let user = session.start_part(Part::speech(Speaker::User), 0).unwrap();
    session
        .push_delta(user, transcript_delta(Speaker::User, "hello", "hello"), 1)
        .unwrap();
    let reply = start_assistant_speech(&mut session, 2);
    session.push_delta(reply, audio_delta(0), 3).unwrap();
    session
        .push_delta(reply, transcript_delta(Speaker::Assistant, "hi", "hi"), 4)
        .unwrap();
    session
        .push_delta(
            reply,
            transcript_delta(Speaker::Assistant, " there", "hi there"),
            5,
        )
        .unwrap();

    let mut items = Vec::new();
    while let Some(item) = session.poll_transcripts(&view).unwrap() {
        items.push(item);
    }

    assert_eq!(
        items,
        vec![
            TranscriptItem::Update(TranscriptUpdate {
                index: user,
                speaker: Speaker::User,
                delta: "hello".into(),
                transcript: "hello".into()
            }),
            TranscriptItem::Update(TranscriptUpdate {
                index: reply,
                speaker: Speaker::Assistant,
                delta: "hi".into(),
                transcript: "hi".into()
            }),
            TranscriptItem::Update(TranscriptUpdate {
                index: reply,
                speaker: Speaker::Assistant,
                delta: " there".into(),
                transcript: "hi there".into()
            }),
        ]
    );
}

#[test]
fn final_transcripts_survive_a_flood_of_updates_because_they_are_a_separate_subscription() {
    let mut session = Session::new(SessionConfig {
        transcript_view_capacity: 8,
        ..SessionConfig::default()
    });
    let updates = session.stream_transcripts(TranscriptMode::Updates);
    let finals = session.stream_transcripts(TranscriptMode::Finals);
    session.poll_transcripts(&updates).unwrap();
    session.poll_transcripts(&finals).unwrap();
    let reply = start_assistant_speech(&mut session, 0);
    let mut whole = String::new();
    for n in 0..100 {
        whole.push('a');
        session
            .push_delta(reply, transcript_delta(Speaker::Assistant, "a", &whole), n)
            .unwrap();
    }
    session.end_part(reply, 100).unwrap();

    let first_final = session.poll_transcripts(&finals).unwrap();

    assert_eq!(
        first_final,
        Some(TranscriptItem::Final(FinalTranscript {
            index: reply,
            speaker: Speaker::Assistant,
            transcript: whole.as_str().into()
        }))
    );
    assert_eq!(session.drop_counters().transcript_items_dropped, 100 - 8);
}

#[test]
fn reading_views_consumes_nothing_of_the_main_stream() {
    let mut session = Session::default();
    let audio = session.stream_audio();
    let transcripts = session.stream_transcripts(TranscriptMode::Updates);
    session.poll_audio(&audio).unwrap();
    session.poll_transcripts(&transcripts).unwrap();
    let reply = start_assistant_speech(&mut session, 0);
    session.push_delta(reply, audio_delta(0), 1).unwrap();
    session
        .push_delta(reply, transcript_delta(Speaker::Assistant, "hi", "hi"), 2)
        .unwrap();
    while session.poll_audio(&audio).unwrap().is_some() {}
    while session.poll_transcripts(&transcripts).unwrap().is_some() {}

    assert!(!session.is_iterating(), "reading a view is not iterating");
    assert_eq!(
        kinds(&drain_late(&mut session)),
        vec!["part_start", "part_delta", "part_delta"]
    );
}

#[test]
fn a_closed_view_reports_closed_and_an_unknown_one_unknown() {
    let mut session = Session::default();
    let audio = session.stream_audio();
    let id = audio.id();
    session.close_audio_view(audio);
    let reopened_handle = other_session_view(id);

    assert_eq!(
        session.poll_audio(&reopened_handle),
        Err(ViewError::Closed { view: id })
    );
    let unknown = other_session_view(id + 5);
    assert_eq!(
        session.poll_audio(&unknown),
        Err(ViewError::Unknown { view: id + 5 })
    );
}

/// A view handle with a given id, made by another session (handles are not clonable).
fn other_session_view(id: u32) -> walkie_session::AudioView {
    let mut other = Session::default();
    loop {
        let view = other.stream_audio();
        if view.id() == id {
            return view;
        }
    }
}

#[test]
fn closing_the_session_ends_every_view_and_discards_what_it_held() {
    let mut session = Session::default();
    let audio = session.stream_audio();
    session.poll_audio(&audio).unwrap();
    let reply = start_assistant_speech(&mut session, 0);
    session.push_delta(reply, audio_delta(0), 1).unwrap();

    session.close();

    assert_eq!(
        session.poll_audio(&audio),
        Err(ViewError::Closed { view: audio.id() })
    );
}

//! The scripted conversation the kill test runs: five turns with pre-roll user audio, streamed
//! transcripts, played assistant deltas, a barge-in cut (turn 3) and a snapshot-only reply
//! (turn 4). Shared by the writer fixture (which plays it) and the test (which predicts, for any
//! number of completed steps, what must be on disk).

#![allow(dead_code)]

use std::sync::Arc;

use walkie_session::{
    AudioChunk, Part, PartDelta, PartDeltaEvent, PartEndEvent, PartIndex, PartStartEvent,
    SessionEvent, Speaker, SpeechPart, StampedEvent, WavSnapshot,
};
use walkie_store::RecorderConfig;

pub const START_UNIX_MS: i64 = 1_700_000_000_000;
pub const SAMPLE_RATE_HZ: u32 = 24_000;
pub const CHUNK_SAMPLES: usize = 480;
pub const TURNS: u32 = 5;
pub const BARGE_IN_TURN: u32 = 3;
pub const BARGE_IN_CUT_MS: u64 = 100;
pub const SNAPSHOT_TURN: u32 = 4;
const USER_CHUNKS: usize = 6;
const ASSISTANT_CHUNKS: usize = 10;

pub fn config() -> RecorderConfig {
    RecorderConfig {
        user_sample_rate_hz: SAMPLE_RATE_HZ,
        assistant_sample_rate_hz: SAMPLE_RATE_HZ,
        utc_offset_minutes: 0,
        max_pending_user_audio_ms: 2_000,
        retry_interval_ms: 1_000,
        ..RecorderConfig::default()
    }
}

#[derive(Debug, Clone)]
pub enum Step {
    Event(StampedEvent),
    UserAudio(Vec<i16>),
}

#[derive(Debug, Clone)]
pub struct ScriptStep {
    pub unix_ms: i64,
    pub step: Step,
}

/// A recognisable sample: which turn, which side, which position.
pub fn sample(turn: u32, speaker: Speaker, position: usize) -> i16 {
    let side = match speaker {
        Speaker::User => 1_000,
        Speaker::Assistant => 17_000,
    };
    ((turn as usize * 7_919 + position * 31 + side) % 20_000) as i16 - 10_000
}

fn chunk(turn: u32, speaker: Speaker, first: usize) -> Vec<i16> {
    (first..first + CHUNK_SAMPLES)
        .map(|position| sample(turn, speaker, position))
        .collect()
}

pub fn user_text(turn: u32) -> String {
    format!("Question number {turn}, please answer.")
}

pub fn assistant_text(turn: u32) -> String {
    format!("Answer number {turn}, here it is.")
}

/// The snapshot-only reply's samples.
pub fn snapshot_samples(turn: u32) -> Vec<i16> {
    (0..CHUNK_SAMPLES * 5)
        .map(|position| sample(turn, Speaker::Assistant, position))
        .collect()
}

pub fn script() -> Vec<ScriptStep> {
    let mut steps = Vec::new();
    let mut seq = 0u64;
    let mut unix_ms = START_UNIX_MS;
    let mut part = 0u32;
    let mut push_event = |steps: &mut Vec<ScriptStep>, unix_ms: &mut i64, event: SessionEvent| {
        seq += 1;
        *unix_ms += 20;
        steps.push(ScriptStep {
            unix_ms: *unix_ms,
            step: Step::Event(StampedEvent {
                seq,
                at_ms: (*unix_ms - START_UNIX_MS) as u64,
                event,
            }),
        });
    };
    for turn in 1..=TURNS {
        // Pre-roll: captured before the speech start.
        unix_ms += 20;
        steps.push(ScriptStep {
            unix_ms,
            step: Step::UserAudio(chunk(turn, Speaker::User, 0)),
        });
        let user = PartIndex(part);
        part += 1;
        push_event(
            &mut steps,
            &mut unix_ms,
            SessionEvent::PartStart(PartStartEvent {
                index: user,
                part: Part::speech(Speaker::User),
            }),
        );
        for index in 1..=USER_CHUNKS {
            unix_ms += 20;
            steps.push(ScriptStep {
                unix_ms,
                step: Step::UserAudio(chunk(turn, Speaker::User, index * CHUNK_SAMPLES)),
            });
        }
        let text = user_text(turn);
        let (first_half, _) = text.split_at(text.len() / 2);
        push_event(
            &mut steps,
            &mut unix_ms,
            SessionEvent::PartDelta(PartDeltaEvent {
                index: user,
                delta: PartDelta::transcript(
                    Speaker::User,
                    Arc::from(first_half),
                    Arc::from(first_half),
                ),
            }),
        );
        push_event(
            &mut steps,
            &mut unix_ms,
            SessionEvent::PartEnd(PartEndEvent {
                index: user,
                part: Part::Speech(SpeechPart {
                    speaker: Speaker::User,
                    transcript: Some(Arc::from(text.as_str())),
                    audio: None,
                    interrupted_at_ms: None,
                }),
            }),
        );
        let reply = PartIndex(part);
        part += 1;
        push_event(
            &mut steps,
            &mut unix_ms,
            SessionEvent::PartStart(PartStartEvent {
                index: reply,
                part: Part::speech(Speaker::Assistant),
            }),
        );
        let answer = assistant_text(turn);
        let words: Vec<&str> = answer.split_inclusive(' ').collect();
        let mut so_far = String::new();
        let played_chunks = if turn == SNAPSHOT_TURN {
            0
        } else {
            ASSISTANT_CHUNKS
        };
        for index in 0..played_chunks {
            push_event(
                &mut steps,
                &mut unix_ms,
                SessionEvent::PartDelta(PartDeltaEvent {
                    index: reply,
                    delta: PartDelta::assistant_audio(AudioChunk::from_samples(chunk(
                        turn,
                        Speaker::Assistant,
                        index * CHUNK_SAMPLES,
                    ))),
                }),
            );
            if let Some(word) = words.get(index) {
                so_far.push_str(word);
                push_event(
                    &mut steps,
                    &mut unix_ms,
                    SessionEvent::PartDelta(PartDeltaEvent {
                        index: reply,
                        delta: PartDelta::transcript(
                            Speaker::Assistant,
                            Arc::from(*word),
                            Arc::from(so_far.as_str()),
                        ),
                    }),
                );
            }
        }
        let snapshot = (turn == SNAPSHOT_TURN)
            .then(|| WavSnapshot::new(SAMPLE_RATE_HZ, snapshot_samples(turn)));
        push_event(
            &mut steps,
            &mut unix_ms,
            SessionEvent::PartEnd(PartEndEvent {
                index: reply,
                part: Part::Speech(SpeechPart {
                    speaker: Speaker::Assistant,
                    transcript: Some(Arc::from(answer.as_str())),
                    audio: snapshot,
                    interrupted_at_ms: (turn == BARGE_IN_TURN).then_some(BARGE_IN_CUT_MS),
                }),
            }),
        );
        push_event(&mut steps, &mut unix_ms, SessionEvent::TurnComplete);
    }
    steps
}

/// Where the conversation must stand after a number of completed steps.
#[derive(Debug, Clone, Default)]
pub struct Expected {
    /// Closed messages: (message id, text).
    pub closed_messages: Vec<(String, String)>,
    /// Ended turns.
    pub ended_turns: Vec<u32>,
    /// Samples each WAV holds: ((turn, speaker), samples). Order of creation.
    pub wavs: Vec<((u32, Speaker), Vec<i16>)>,
    /// Samples each WAV was ever given, before any cut: what a file's content is a prefix of.
    pub ever_written: Vec<((u32, Speaker), Vec<i16>)>,
}

fn slot(slots: &mut Vec<((u32, Speaker), Vec<i16>)>, turn: u32, speaker: Speaker) -> &mut Vec<i16> {
    let index = match slots
        .iter()
        .position(|((t, s), _)| *t == turn && *s == speaker)
    {
        Some(index) => index,
        None => {
            slots.push(((turn, speaker), Vec::new()));
            slots.len() - 1
        }
    };
    &mut slots[index].1
}

impl Expected {
    pub fn wav(&self, turn: u32, speaker: Speaker) -> Option<&[i16]> {
        self.wavs
            .iter()
            .find(|((t, s), _)| *t == turn && *s == speaker)
            .map(|(_, samples)| samples.as_slice())
    }

    pub fn ever_written(&self, turn: u32, speaker: Speaker) -> &[i16] {
        self.ever_written
            .iter()
            .find(|((t, s), _)| *t == turn && *s == speaker)
            .map_or(&[], |(_, samples)| samples.as_slice())
    }

    fn add(&mut self, turn: u32, speaker: Speaker, samples: &[i16]) {
        slot(&mut self.wavs, turn, speaker).extend_from_slice(samples);
        slot(&mut self.ever_written, turn, speaker).extend_from_slice(samples);
    }
}

/// The oracle: what `completed_steps` steps of the script leave on disk.
pub fn expected_after(script: &[ScriptStep], completed_steps: usize) -> Expected {
    let mut expected = Expected::default();
    let mut turn = 0u32;
    let mut pending: Vec<i16> = Vec::new();
    let mut user_open = false;
    for step in script.iter().take(completed_steps) {
        match &step.step {
            Step::UserAudio(samples) => {
                if user_open {
                    expected.add(turn, Speaker::User, samples);
                } else {
                    pending.extend(samples);
                }
            }
            Step::Event(stamped) => match &stamped.event {
                SessionEvent::PartStart(start) => match &start.part {
                    Part::Speech(speech) if speech.speaker == Speaker::User => {
                        turn += 1;
                        user_open = true;
                        let pending = std::mem::take(&mut pending);
                        expected.add(turn, Speaker::User, &pending);
                    }
                    _ => {}
                },
                SessionEvent::PartDelta(delta) => {
                    if let PartDelta::Speech(speech) = &delta.delta
                        && let Some(chunk) = &speech.audio_chunk
                    {
                        expected.add(turn, Speaker::Assistant, chunk.samples());
                    }
                }
                SessionEvent::PartEnd(end) => {
                    if let Part::Speech(speech) = &end.part {
                        let side = match speech.speaker {
                            Speaker::User => "user",
                            Speaker::Assistant => "assistant",
                        };
                        expected.closed_messages.push((
                            format!("{side}-{turn}"),
                            speech.transcript.as_deref().unwrap_or_default().to_owned(),
                        ));
                        if speech.speaker == Speaker::Assistant {
                            if let Some(cut_ms) = speech.interrupted_at_ms {
                                let keep = (cut_ms * u64::from(SAMPLE_RATE_HZ) / 1000) as usize;
                                slot(&mut expected.wavs, turn, Speaker::Assistant).truncate(keep);
                            }
                            if speech.audio.is_some() {
                                expected.add(turn, Speaker::Assistant, &snapshot_samples(turn));
                            }
                        }
                    }
                }
                SessionEvent::TurnComplete => {
                    expected.ended_turns.push(turn);
                    user_open = false;
                }
                _ => {}
            },
        }
    }
    expected
}

/// What the conversation machine does for the store: it notes each session event with the one
/// transcript bridge and hands the recorder the event, the note and the AG-UI events, the same
/// ones the webview gets.
pub struct Feed {
    bridge: walkie_session::transcript::TranscriptBridge,
}

impl Feed {
    pub fn new(recorder: &walkie_store::Recorder) -> Feed {
        Feed {
            bridge: walkie_session::transcript::TranscriptBridge::new(recorder.id()),
        }
    }

    /// A feed whose bridge is `bridge` (one that goes on with a saved conversation).
    pub fn with_bridge(bridge: walkie_session::transcript::TranscriptBridge) -> Feed {
        Feed { bridge }
    }

    /// Records one session event; returns the AG-UI events the webview would be sent.
    pub fn event(
        &mut self,
        recorder: &mut walkie_store::Recorder,
        event: &walkie_session::StampedEvent,
        unix_ms: i64,
    ) -> Vec<walkie_agui::Event> {
        let mut transcript = Vec::new();
        let note = self
            .bridge
            .on_event_noted(unix_ms, &event.event, &mut transcript);
        recorder.record(event, note, &transcript, unix_ms);
        transcript
    }

    /// One step of the script.
    pub fn step(&mut self, recorder: &mut walkie_store::Recorder, step: &ScriptStep, unix_ms: i64) {
        match &step.step {
            Step::Event(event) => {
                self.event(recorder, event, unix_ms);
            }
            Step::UserAudio(samples) => recorder.user_audio(samples, unix_ms),
        }
    }

    /// Ends the transcript (its open messages and run close) and closes the conversation;
    /// returns the AG-UI events of the end.
    pub fn close(
        &mut self,
        recorder: &mut walkie_store::Recorder,
        unix_ms: i64,
    ) -> Result<Vec<walkie_agui::Event>, walkie_store::StoreError> {
        let mut transcript = Vec::new();
        self.bridge.finish(unix_ms, &mut transcript);
        recorder.transcript(&transcript, unix_ms);
        recorder.close(unix_ms)?;
        Ok(transcript)
    }
}

/// Records the script in `store` as a conversation that started `start_unix_ms` (closed when
/// `close`); returns its id.
pub fn record_at(store: &walkie_store::Store, start_unix_ms: i64, close: bool) -> String {
    let mut recorder = store
        .start(config(), start_unix_ms)
        .expect("the recorder starts");
    let mut feed = Feed::new(&recorder);
    for step in script() {
        let unix_ms = step.unix_ms - START_UNIX_MS + start_unix_ms;
        feed.step(&mut recorder, &step, unix_ms);
    }
    if close {
        feed.close(&mut recorder, start_unix_ms + 65_000)
            .expect("the close saves");
    }
    recorder.id().to_owned()
}

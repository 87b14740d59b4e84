//! GPT-Live's turn engine on a real call: Walkie's `LiveTurns` drives `walkie_rtc::Call` against
//! the local provider's Live session over loopback WebRTC, real Opus both ways. The Live API
//! sends no speech or done events, so what is checked here is what the engine derives from the
//! key, the provider's words and the reply audio it decodes: the same session events, in the
//! same order, as a Realtime turn gives.

mod common;

use std::time::{Duration, Instant};

use common::{oracle_traced_provider, speech_frames};
use walkie_openai::SessionConfig;
use walkie_openai::live::LiveSessionConfig;
use walkie_rtc::{Auth, Call, CallConfig, CallEvent, Endpoint};
use walkie_session::turn::{
    ControllerOutput, LiveTurns, ProviderFamily, ToolRegistry, TurnConfig, TurnEngine, TurnInput,
    TurnState,
};
use walkie_session::{AudioChunk, Delivery, SessionEvent, Speaker};

const KEY: &str = "sk-local-live-turns";
const WAIT: Duration = Duration::from_secs(15);

/// The engine and the call it drives, on one clock.
struct LiveTurn {
    engine: LiveTurns,
    call: Call,
    started: Instant,
    decoder: opus::Decoder,
    events: Vec<SessionEvent>,
    iterator: walkie_session::EventIterator,
    assistant_chunks: usize,
    /// Where the turn stands, as the engine last told.
    turn_state: Option<TurnState>,
}

impl LiveTurn {
    /// A push-to-talk Live call of `session` placed at `endpoint`, its session started.
    async fn ready(endpoint: Endpoint, session: LiveSessionConfig) -> Self {
        let call = Call::connect(CallConfig::new(endpoint).with_live_session(session))
            .await
            .expect("the Live call connects");
        let config = TurnConfig {
            family: ProviderFamily::Live,
            ..TurnConfig::push_to_talk(SessionConfig::default())
        };
        let mut engine = LiveTurns::new(config, ToolRegistry::with_builtins());
        let iterator = engine
            .session_mut()
            .iterate()
            .expect("a new session has no iterator yet");
        let mut turn = LiveTurn {
            engine,
            call,
            started: Instant::now(),
            decoder: opus::Decoder::new(48_000, opus::Channels::Mono).expect("an Opus decoder"),
            events: Vec::new(),
            iterator,
            assistant_chunks: 0,
            turn_state: None,
        };
        let now_ms = turn.now_ms();
        turn.engine.handle_input(TurnInput::ChannelOpened, now_ms);
        turn.flush().await;
        turn.run_until("session.started", |state, _| {
            state.is_some_and(|state| state.ready)
        })
        .await;
        turn
    }

    /// Holds the key for a second of speech, sent in real time, then lets go.
    async fn pressed_second_of_speech(&mut self) {
        let now_ms = self.now_ms();
        self.engine.handle_input(TurnInput::KeyDown, now_ms);
        self.flush().await;
        let mut pace = tokio::time::interval(Duration::from_millis(20));
        for frame in speech_frames(50) {
            pace.tick().await;
            self.call
                .send_audio(frame, 960)
                .expect("the call sends audio");
        }
        let now_ms = self.now_ms();
        self.engine.handle_input(TurnInput::KeyUp, now_ms);
        self.flush().await;
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).expect("a test lasts less than ages")
    }

    /// Sends what the engine has for the call, and collects its session's events.
    async fn flush(&mut self) {
        while let Some(output) = self.engine.poll_output() {
            if let ControllerOutput::TurnState(state) = output {
                self.turn_state = Some(state);
            }
            if let ControllerOutput::Send(outgoing) = output {
                let event = outgoing
                    .live()
                    .expect("a Live engine sends Live events")
                    .clone();
                self.call
                    .send_live(&event, Some(&outgoing.event_id))
                    .await
                    .expect("the data channel stays open");
            }
        }
        while let Ok(Some(delivery)) = self.engine.session_mut().poll_event(&self.iterator) {
            if let Delivery::Event(stamped) = delivery {
                self.events.push(stamped.event);
            }
        }
    }

    /// Carries what the call brings (and the engine's timers) into the engine until `done`
    /// says so of the session events so far.
    async fn run_until(
        &mut self,
        what: &str,
        done: impl Fn(Option<TurnState>, &[SessionEvent]) -> bool,
    ) {
        let deadline = Instant::now() + WAIT;
        while !done(self.turn_state, &self.events) {
            assert!(Instant::now() < deadline, "no {what} within {WAIT:?}");
            let wake = self.engine.next_deadline_ms().map_or(deadline, |at_ms| {
                (self.started + Duration::from_millis(at_ms)).min(deadline)
            });
            tokio::select! {
                event = self.call.next_event() => {
                    let now_ms = self.now_ms();
                    match event {
                        // Whatever the provider sends, the engine takes it (and tells what it
                        // cannot read).
                        Some(CallEvent::Text(text)) => self.engine.handle_input(TurnInput::ServerText(text.clone()), now_ms),
                        Some(CallEvent::Audio(audio)) => {
                            let mut pcm = vec![0_i16; 5_760];
                            let samples = self
                                .decoder
                                .decode(&audio.payload, &mut pcm, false)
                                .expect("the provider's Opus decodes");
                            pcm.truncate(samples);
                            self.assistant_chunks += 1;
                            self.engine
                                .handle_input(TurnInput::AssistantAudio(AudioChunk::from_samples(pcm)), now_ms);
                        }
                        other => panic!("unexpected {other:?} while waiting for {what}"),
                    }
                }
                () = tokio::time::sleep_until(wake.into()) => {
                    let now_ms = self.now_ms();
                    self.engine.handle_input(TurnInput::Tick, now_ms);
                }
            }
            self.flush().await;
        }
    }
}

fn position(events: &[SessionEvent], wanted: impl Fn(&SessionEvent) -> bool) -> usize {
    events
        .iter()
        .position(wanted)
        .unwrap_or_else(|| panic!("not among {events:#?}"))
}

/// The transcript a speaker's speech part ended with.
fn transcript_of(events: &[SessionEvent], speaker: Speaker) -> String {
    events
        .iter()
        .find_map(|event| match event {
            SessionEvent::PartEnd(end) => match &end.part {
                walkie_session::Part::Speech(speech) if speech.speaker == speaker => {
                    speech.transcript.as_deref().map(str::to_owned)
                }
                _ => None,
            },
            _ => None,
        })
        .unwrap_or_else(|| panic!("no {speaker:?} part ended among {events:#?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pressed_live_turn_is_answered_heard_and_both_sides_transcribed_with_derived_boundaries()
{
    let (provider, _dir) = oracle_traced_provider("live-turns", KEY).await;
    let endpoint = Endpoint::custom(&provider.base_url(), Auth::Bearer(KEY.to_owned()))
        .expect("a loopback endpoint");
    let session = LiveSessionConfig {
        model: "gpt-live-1.1".to_owned(),
        instructions: Some("You are Walkie. Be brief.".to_owned()),
        ..LiveSessionConfig::default()
    };
    let mut turn = LiveTurn::ready(endpoint, session).await;
    turn.pressed_second_of_speech().await;
    turn.run_until("a complete turn", |_, events| {
        events
            .iter()
            .any(|event| matches!(event, SessionEvent::TurnComplete))
    })
    .await;
    let events = &turn.events;
    let speech_start = position(events, |e| matches!(e, SessionEvent::InputSpeechStart(_)));
    let speech_end = position(events, |e| matches!(e, SessionEvent::InputSpeechEnd(_)));
    let audible = position(events, |e| matches!(e, SessionEvent::OutputSpeechStart));
    let inaudible = position(events, |e| matches!(e, SessionEvent::OutputSpeechEnd));
    let complete = position(events, |e| matches!(e, SessionEvent::TurnComplete));
    assert!(
        speech_start < speech_end && speech_end < audible && audible < inaudible,
        "the derived boundaries in order: {events:#?}"
    );
    assert!(inaudible < complete, "{events:#?}");
    assert!(
        turn.assistant_chunks >= 40,
        "the user's second came back: {} chunks",
        turn.assistant_chunks
    );
    assert!(
        transcript_of(events, Speaker::User).starts_with("[1."),
        "{}",
        transcript_of(events, Speaker::User)
    );
    assert!(
        transcript_of(events, Speaker::Assistant).contains("played your"),
        "{}",
        transcript_of(events, Speaker::Assistant)
    );
    turn.call.hangup().await.expect("the hang-up is accepted");
    provider.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_the_live_backend_calls_is_run_by_walkie_and_its_answer_is_what_the_reply_says() {
    let (provider, _dir) = oracle_traced_provider("live-turns-tool", KEY).await;
    let endpoint = Endpoint::custom(&provider.base_url(), Auth::Bearer(KEY.to_owned()))
        .expect("a loopback endpoint");
    // The bench's scripted model delegates as its instructions say, to a Responses backend
    // that has Walkie's built-in tools.
    let tools: Vec<serde_json::Value> = ToolRegistry::with_builtins()
        .definitions()
        .into_iter()
        .map(|tool| serde_json::to_value(tool).expect("a tool is JSON"))
        .collect();
    let session = LiveSessionConfig {
        model: "gpt-live-1.1".to_owned(),
        instructions: Some("When asked the time, use get_current_local_time.".to_owned()),
        delegation: Some(serde_json::json!({
            "type": "responses",
            "responses": { "model": "gpt-5.4-mini", "tools": tools },
        })),
        ..LiveSessionConfig::default()
    };
    let mut turn = LiveTurn::ready(endpoint, session).await;
    let now_ms = turn.now_ms();
    turn.engine.handle_input(
        TurnInput::WallClock(walkie_session::turn::WallClock {
            unix_ms: 1_765_000_000_000,
            utc_offset_minutes: 60,
        }),
        now_ms,
    );
    turn.pressed_second_of_speech().await;
    turn.run_until("the tool's answer said", |_, events| {
        events.iter().any(|event| matches!(event, SessionEvent::TurnComplete))
            && events.iter().any(|event| {
                matches!(event, SessionEvent::PartEnd(end)
                    if matches!(&end.part, walkie_session::Part::Speech(speech)
                        if speech.speaker == Speaker::Assistant
                            && speech.transcript.as_deref().is_some_and(|said| said.contains("tool answered"))))
            })
    })
    .await;
    let events = &turn.events;
    let called = position(events, |e| matches!(e, SessionEvent::FunctionToolCall(_)));
    let answered = position(events, |e| matches!(e, SessionEvent::FunctionToolResult(_)));
    assert!(called < answered, "{events:#?}");
    let said = transcript_of(events, Speaker::Assistant);
    assert!(
        said.contains("The get_current_local_time tool answered:") && said.contains("2025"),
        "{said}"
    );
    turn.call.hangup().await.expect("the hang-up is accepted");
    provider.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn payloads_that_once_panicked_and_a_flood_on_a_live_call_are_told_and_the_turn_completes() {
    // After the session starts: the three payloads that once panicked the decoder, then a
    // reply whose transcript floods past what is kept.
    let faults = [2, 3, 4]
        .into_iter()
        .zip(walkie_local::fault::unrepresentable_payloads())
        .map(|(at_event, text)| walkie_local::fault::Fault::Malformed {
            at_event,
            text: Some(text),
        })
        .chain([walkie_local::fault::Fault::Flood {
            event_type: "session.output_transcript.delta".to_owned(),
            total_bytes: 300 * 1024,
            delta_bytes: 8 * 1024,
        }])
        .collect();
    let provider = walkie_local::LocalProvider::start(walkie_local::ProviderConfig {
        faults,
        ..walkie_local::ProviderConfig::default()
    })
    .await
    .expect("the provider listens");
    let session = LiveSessionConfig {
        model: "gpt-live-1.1".to_owned(),
        ..LiveSessionConfig::default()
    };
    let mut turn = LiveTurn::ready(provider.endpoint(), session).await;
    turn.pressed_second_of_speech().await;
    turn.run_until("a complete turn", |_, events| {
        events
            .iter()
            .any(|event| matches!(event, SessionEvent::TurnComplete))
    })
    .await;
    let told: Vec<&str> = turn
        .events
        .iter()
        .filter_map(|event| match event {
            SessionEvent::SessionError(error) => {
                assert!(error.recoverable, "{error:?}");
                error.code.as_deref()
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        told,
        [
            "unrepresentable_json",
            "unrepresentable_json",
            "unrepresentable_json",
            "transcript_too_long"
        ],
        "each payload a notice, the cut transcript told once"
    );
    assert_eq!(turn.engine.stats().undecodable_events, 3);
    let said = transcript_of(&turn.events, Speaker::Assistant);
    assert!(
        said.len() <= walkie_session::turn::MAX_TRANSCRIPT_BYTES,
        "{} bytes kept",
        said.len()
    );
    turn.call.hangup().await.expect("the hang-up is accepted");
    provider.shutdown().await;
}

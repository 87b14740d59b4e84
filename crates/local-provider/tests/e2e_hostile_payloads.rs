//! A real turn controller over a real WebRTC call to the local provider, which misbehaves
//! mid-turn: valid JSON no decoder can hold (`1e999`, a lone surrogate, nesting past serde's
//! limit), or a lost `output_audio_buffer.stopped`. The call goes on, the next turn is
//! answered, and both turns' parts are complete.

use std::time::{Duration, Instant};

use walkie_local::fault::{Fault, unrepresentable_payloads};
use walkie_local::scenario::{encode_opus, speech_like};
use walkie_local::{LocalProvider, ProviderConfig};
use walkie_openai::{AudioConfig, AudioInput, SessionConfig, Transcription};
use walkie_rtc::{Call, CallConfig, CallEvent};
use walkie_session::turn::{
    ControllerOutput, Diagnostic, ToolRegistry, TurnConfig, TurnController, TurnInput,
};
use walkie_session::{
    AudioChunk, Delivery, EventIterator, Part, PartDelta, SessionEvent, SessionFailure, Speaker,
};

/// The controller, its call and what came out of its session, driven in real time.
struct Driver {
    controller: TurnController,
    iterator: EventIterator,
    call: Call,
    decoder: opus::Decoder,
    started: Instant,
    events: Vec<SessionEvent>,
    failures: Vec<SessionFailure>,
    diagnostics: Vec<Diagnostic>,
}

impl Driver {
    async fn connect(provider: &LocalProvider) -> Self {
        let endpoint = provider.endpoint();
        let call = Call::connect(CallConfig::new(endpoint))
            .await
            .expect("the call connects");
        let session = SessionConfig {
            audio: Some(AudioConfig {
                input: Some(AudioInput {
                    transcription: Some(Some(Transcription {
                        model: "gpt-4o-mini-transcribe".to_owned(),
                        language: None,
                        prompt: None,
                        ..Transcription::default()
                    })),
                    ..AudioInput::default()
                }),
                output: None,
            }),
            ..SessionConfig::default()
        };
        let mut controller = TurnController::new(
            TurnConfig::push_to_talk(session),
            ToolRegistry::with_builtins(),
        );
        let iterator = controller
            .session_mut()
            .iterate()
            .expect("a fresh session has no iterator yet");
        let mut driver = Self {
            controller,
            iterator,
            call,
            decoder: opus::Decoder::new(48_000, opus::Channels::Mono).expect("an Opus decoder"),
            started: Instant::now(),
            events: Vec::new(),
            failures: Vec::new(),
            diagnostics: Vec::new(),
        };
        let now_ms = driver.now_ms();
        driver
            .controller
            .handle_input(TurnInput::ChannelOpened, now_ms);
        driver
            .run_until("session.updated", |driver| driver.controller.is_ready())
            .await;
        driver
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).expect("a test lasts less than ages")
    }

    /// Sends what the controller has for the call, and collects its session's output.
    async fn flush(&mut self) {
        while let Some(output) = self.controller.poll_output() {
            match output {
                ControllerOutput::Send(outgoing) => self
                    .call
                    .send(
                        outgoing
                            .realtime()
                            .expect("a Realtime controller sends Realtime events"),
                        Some(&outgoing.event_id),
                    )
                    .await
                    .expect("the data channel stays open"),
                ControllerOutput::Diagnostic(diagnostic) => self.diagnostics.push(diagnostic),
                // This controller declares no outside tool, so none is called, and asks
                // nothing beside the conversation.
                ControllerOutput::Audio(_)
                | ControllerOutput::ReplyAudio(_)
                | ControllerOutput::TurnState(_)
                | ControllerOutput::Hint(_)
                | ControllerOutput::Billed(_)
                | ControllerOutput::Transcribed(_)
                | ControllerOutput::RateLimits(_)
                | ControllerOutput::SessionTime { .. }
                | ControllerOutput::PressCancelled(_)
                | ControllerOutput::MessageSent
                | ControllerOutput::AsideAnswered { .. }
                | ControllerOutput::AsideFailed { .. }
                | ControllerOutput::ToolCall(_) => {}
            }
        }
        while let Some(delivery) = self
            .controller
            .session_mut()
            .poll_event(&self.iterator)
            .expect("the test's iterator stays active")
        {
            match delivery {
                Delivery::Event(stamped) => self.events.push(stamped.event),
                Delivery::Failure(stamped) => self.failures.push(stamped.failure),
            }
        }
    }

    /// Feeds the call's events and the controller's timers until `done` holds (at most 20 s).
    async fn run_until(&mut self, what: &str, done: impl Fn(&Self) -> bool) {
        let give_up = Instant::now() + Duration::from_secs(20);
        loop {
            self.flush().await;
            if done(self) {
                return;
            }
            assert!(
                self.failures.is_empty(),
                "the session failed while waiting for {what}: {:?}",
                self.failures
            );
            let now = Instant::now();
            assert!(
                now < give_up,
                "no {what} within 20 s; events {:?}",
                self.event_kinds()
            );
            let timer = self
                .controller
                .next_deadline_ms()
                .map(|deadline_ms| self.started + Duration::from_millis(deadline_ms))
                .unwrap_or(give_up)
                .min(give_up);
            match tokio::time::timeout_at(timer.max(now).into(), self.call.next_event()).await {
                Err(_) => {
                    let now_ms = self.now_ms();
                    self.controller.handle_input(TurnInput::Tick, now_ms);
                }
                Ok(None) => panic!("the call ended while waiting for {what}"),
                Ok(Some(event)) => self.on_call_event(event),
            }
        }
    }

    fn on_call_event(&mut self, event: CallEvent) {
        let now_ms = self.now_ms();
        match event {
            CallEvent::Text(text) => self
                .controller
                .handle_input(TurnInput::ServerText(text.clone()), now_ms),
            CallEvent::Audio(audio) => {
                let mut pcm = vec![0i16; 960];
                let samples = self
                    .decoder
                    .decode(&audio.payload, &mut pcm, false)
                    .expect("the provider sends valid Opus");
                pcm.truncate(samples);
                self.controller.handle_input(
                    TurnInput::AssistantAudio(AudioChunk::from_samples(pcm)),
                    now_ms,
                );
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    /// The session events so far, by kind, with assistant audio deltas left out.
    fn event_kinds(&self) -> Vec<&'static str> {
        self.events
            .iter()
            .filter(|event| {
                !matches!(event, SessionEvent::PartDelta(delta)
                    if matches!(&delta.delta, PartDelta::Speech(speech) if speech.audio_chunk.is_some()))
            })
            .map(SessionEvent::kind_name)
            .collect()
    }

    fn turns_complete(&self) -> usize {
        self.events
            .iter()
            .filter(|event| matches!(event, SessionEvent::TurnComplete))
            .count()
    }

    /// One push-to-talk turn of `speech_ms` of speech, until the session completes it.
    async fn turn(&mut self, speech_ms: u64) {
        let completed = self.turns_complete();
        let now_ms = self.now_ms();
        self.controller.handle_input(TurnInput::KeyDown, now_ms);
        self.flush().await;
        let frames = encode_opus(&speech_like(speech_ms)).expect("encodes");
        let mut tick = tokio::time::interval(Duration::from_millis(20));
        for frame in frames {
            tick.tick().await;
            self.call.send_audio(frame, 960).expect("the call is up");
        }
        let now_ms = self.now_ms();
        self.controller.handle_input(TurnInput::KeyUp, now_ms);
        self.run_until("the turn's end", |driver| {
            driver.turns_complete() > completed
        })
        .await;
    }

    /// The speech parts that ended, in order: (speaker, transcript).
    fn ended_speech(&self) -> Vec<(Speaker, Option<String>)> {
        self.events
            .iter()
            .filter_map(|event| match event {
                SessionEvent::PartEnd(end) => match &end.part {
                    Part::Speech(speech) => Some((
                        speech.speaker,
                        speech.transcript.as_deref().map(str::to_owned),
                    )),
                    _ => None,
                },
                _ => None,
            })
            .collect()
    }

    /// Assistant audio samples per completed turn.
    fn assistant_samples_per_turn(&self) -> Vec<usize> {
        let mut turns = vec![0];
        for event in &self.events {
            match event {
                SessionEvent::PartDelta(delta) => {
                    if let PartDelta::Speech(speech) = &delta.delta
                        && speech.speaker == Speaker::Assistant
                        && let Some(chunk) = &speech.audio_chunk
                    {
                        *turns.last_mut().expect("one turn at least") += chunk.samples().len();
                    }
                }
                SessionEvent::TurnComplete => turns.push(0),
                _ => {}
            }
        }
        turns.pop();
        turns
    }
}

fn hostile(at_event: u64, text: String) -> Fault {
    Fault::Malformed {
        at_event,
        text: Some(text),
    }
}

/// Two complete turns: a user part and an assistant part each, all transcribed, both replies
/// carrying (nearly all of) the user's echoed audio.
fn assert_two_complete_turns(driver: &Driver) {
    let speech = driver.ended_speech();
    let speakers: Vec<Speaker> = speech.iter().map(|(speaker, _)| *speaker).collect();
    assert_eq!(
        speakers,
        [
            Speaker::User,
            Speaker::Assistant,
            Speaker::User,
            Speaker::Assistant
        ],
        "{:?}",
        driver.event_kinds()
    );
    for (speaker, transcript) in &speech {
        assert!(
            transcript.as_deref().is_some_and(|text| !text.is_empty()),
            "{speaker:?} part without a transcript: {speech:?}"
        );
    }
    let samples = driver.assistant_samples_per_turn();
    assert_eq!(samples.len(), 2, "{samples:?}");
    for (turn, samples) in samples.iter().enumerate() {
        // The provider echoes the 1.2 s of speech: ~57,600 samples at 48 kHz.
        assert!(
            *samples >= 48_000,
            "turn {turn}: only {samples} samples of reply"
        );
    }
    assert!(driver.failures.is_empty(), "{:?}", driver.failures);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_three_panicking_payloads_mid_turn_leave_the_call_going_and_the_next_turn_answered() {
    let provider = LocalProvider::start(ProviderConfig {
        // Mid-turn: after the commit, among the reply's events.
        faults: [5, 7, 9]
            .into_iter()
            .zip(unrepresentable_payloads())
            .map(|(at, text)| hostile(at, text))
            .collect(),
        ..ProviderConfig::default()
    })
    .await
    .expect("the provider listens");
    let mut driver = Driver::connect(&provider).await;

    driver.turn(1_200).await;
    driver.turn(1_200).await;

    let undecodable: Vec<&str> = driver
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
        undecodable, ["unrepresentable_json"; 3],
        "each payload is a recoverable notice"
    );
    assert_eq!(driver.controller.stats().undecodable_events, 3);
    assert_two_complete_turns(&driver);

    driver.call.hangup().await.expect("hung up");
    provider.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_stopped_is_recovered_by_the_turn_watchdog_over_a_real_call() {
    let provider = LocalProvider::start(ProviderConfig {
        faults: vec![Fault::Suppress {
            event_type: "output_audio_buffer.stopped".to_owned(),
        }],
        ..ProviderConfig::default()
    })
    .await
    .expect("the provider listens");
    let mut driver = Driver::connect(&provider).await;

    let first_turn_from = Instant::now();
    driver.turn(1_200).await;
    assert!(
        driver
            .diagnostics
            .iter()
            .any(|diagnostic| matches!(diagnostic, Diagnostic::StoppedMissing { .. })),
        "{:?}",
        driver.diagnostics
    );
    assert!(
        first_turn_from.elapsed() < Duration::from_secs(15),
        "the watchdog ends the reply within its bound"
    );
    driver.turn(1_200).await;
    assert_eq!(
        driver
            .diagnostics
            .iter()
            .filter(|diagnostic| matches!(diagnostic, Diagnostic::StoppedMissing { .. }))
            .count(),
        2
    );
    assert_two_complete_turns(&driver);

    driver.call.hangup().await.expect("hung up");
    provider.shutdown().await;
}

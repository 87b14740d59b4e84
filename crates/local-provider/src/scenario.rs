//! Scenario files: a client script (events to send, audio to send, timing, events to
//! expect) and the provider's faults, as JSON — the local provider as a test bench.
//!
//! ```json
//! {
//!   "description": "a push-to-talk turn, a malformed event before the 4th server event",
//!   "faults": [{"kind": "malformed", "at_event": 4}],
//!   "client": {"ice_disconnected_timeout_ms": 1000},
//!   "steps": [
//!     {"expect": "session.created"},
//!     {"send": {"type": "input_audio_buffer.clear"}},
//!     {"audio": {"source": "speech", "ms": 1200}},
//!     {"wait_ms": 60},
//!     {"send": {"type": "input_audio_buffer.commit"}},
//!     {"send": {"type": "response.create"}},
//!     {"expect": "output_audio_buffer.stopped"},
//!     "hang_up"
//!   ]
//! }
//! ```
//!
//! Steps run in order. Events keep being read while audio is sent or a step waits; an
//! `expect` looks at the events after the previous match, then waits up to
//! `expect_within_ms` (default 10 s). `expect_end` waits for the call to end. Run one with
//! [`run`] against any base URL, or `walkie-local-provider --scenario FILE`.

use std::time::Duration;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use walkie_openai::{DecodeError, ServerEvent, decode_server_event};
use walkie_rtc::{Auth, Call, CallConfig, CallEvent, EndReason, Endpoint, RtcError};

use crate::fault::Fault;

const RATE: usize = 48_000;
const FRAME: usize = 960;

/// One scenario file.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    #[serde(default)]
    pub description: String,
    /// Faults for the provider to inject (see [`crate::fault`]).
    #[serde(default)]
    pub faults: Vec<Fault>,
    #[serde(default)]
    pub client: ClientSettings,
    /// How long an `expect` or `expect_end` waits.
    #[serde(default = "default_expect_ms")]
    pub expect_within_ms: u64,
    pub steps: Vec<Step>,
}

fn default_expect_ms() -> u64 {
    10_000
}

/// The client's ICE timing, to bound how long a lost connection takes to be noticed.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientSettings {
    pub ice_disconnected_timeout_ms: Option<u64>,
    pub ice_failed_timeout_ms: Option<u64>,
    pub ice_keepalive_interval_ms: Option<u64>,
}

/// One step of the client's script.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Step {
    /// Send this JSON as a text message, as is (so invalid or beta shapes can be sent too).
    Send(serde_json::Value),
    /// Send this much generated audio, one Opus frame per 20 ms.
    Audio(AudioStep),
    /// Wait, reading events.
    WaitMs(u64),
    /// Wait for a server event of this type (`"undecodable"` matches a text that is not one).
    Expect(String),
    /// Wait for the call to end.
    ExpectEnd,
    /// Hang up (`/hangup`); the scenario ends here.
    HangUp,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AudioStep {
    pub source: AudioSource,
    pub ms: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AudioSource {
    /// Speech-like: voiced syllables on a moving pitch (see [`speech_like`]).
    Speech,
    /// Digital silence.
    Silence,
}

impl Scenario {
    pub fn from_json(text: &str) -> Result<Self, ScenarioError> {
        serde_json::from_str(text).map_err(|error| ScenarioError::Invalid(error.to_string()))
    }

    fn call_config(&self, endpoint: Endpoint) -> CallConfig {
        let mut config = CallConfig::new(endpoint);
        let ms = Duration::from_millis;
        if let Some(value) = self.client.ice_disconnected_timeout_ms {
            config.peer.ice_disconnected_timeout = ms(value);
        }
        if let Some(value) = self.client.ice_failed_timeout_ms {
            config.peer.ice_failed_timeout = ms(value);
        }
        if let Some(value) = self.client.ice_keepalive_interval_ms {
            config.peer.ice_keepalive_interval = ms(value);
        }
        config
    }
}

/// What went wrong running a scenario; every variant says at which step.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("invalid scenario: {0}")]
    Invalid(String),
    #[error("the call did not connect: {0}")]
    Connect(RtcError),
    #[error("step {step}: sending failed: {error}")]
    Send { step: usize, error: RtcError },
    #[error("step {step}: no {wanted} within {within:?}")]
    Expectation {
        step: usize,
        wanted: String,
        within: Duration,
        report: Box<ScenarioReport>,
    },
    #[error("step {step}: the call ended ({reason:?}) while waiting for {wanted}")]
    Ended {
        step: usize,
        wanted: String,
        reason: EndReason,
        report: Box<ScenarioReport>,
    },
    #[error("audio could not be encoded: {0}")]
    Audio(String),
}

/// What happened during a scenario.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScenarioReport {
    pub call_id: String,
    /// Every call event in arrival order, audio packets included.
    pub events: Vec<CallEvent>,
    /// How the call ended, if it did before the scenario's end.
    pub end: Option<EndReason>,
    /// The hang-up's result, when the script hung up.
    pub hangup: Option<Result<(), String>>,
}

impl ScenarioReport {
    /// The types of the server events, `"undecodable"` for the rest of the texts, in order.
    pub fn event_types(&self) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|event| match event {
                CallEvent::Text(text) => Some(match decode_server_event(text) {
                    Ok(event) => event.event_type().to_owned(),
                    Err(_) => "undecodable".to_owned(),
                }),
                _ => None,
            })
            .collect()
    }

    pub fn audio_packets(&self) -> usize {
        self.events
            .iter()
            .filter(|event| matches!(event, CallEvent::Audio(_)))
            .count()
    }
}

fn matches(event: &CallEvent, wanted: &str) -> bool {
    match heard(event) {
        Some(Ok(event)) => event.event_type() == wanted,
        Some(Err(_)) => wanted == "undecodable",
        None => false,
    }
}

/// A call event as a client test reads it: a data-channel text decoded into its server event
/// (or why it cannot be), `None` for the other events.
pub fn heard(event: &CallEvent) -> Option<Result<ServerEvent, DecodeError>> {
    match event {
        CallEvent::Text(text) => Some(decode_server_event(text)),
        _ => None,
    }
}

/// The server event a call event carries, for tests of traffic that must decode: a text that
/// does not is a failure, named with its error.
pub fn server_event(event: &CallEvent) -> Option<ServerEvent> {
    heard(event).map(|decoded| {
        decoded.unwrap_or_else(|error| {
            panic!("the provider sent a text that does not decode: {error}")
        })
    })
}

struct Runner {
    call: Call,
    report: ScenarioReport,
    /// Events before this index have been matched past.
    cursor: usize,
}

impl Runner {
    /// Reads one event into the report; false once the call has ended.
    async fn read_one(&mut self) -> bool {
        match self.call.next_event().await {
            Some(event) => {
                if let CallEvent::Ended(reason) = &event {
                    self.report.end = Some(reason.clone());
                }
                self.report.events.push(event);
                true
            }
            None => false,
        }
    }

    fn ended(&self) -> bool {
        self.report.end.is_some()
    }

    /// Reads events for `duration`.
    async fn read_for(&mut self, duration: Duration) {
        let deadline = tokio::time::Instant::now() + duration;
        while !self.ended() {
            match tokio::time::timeout_at(deadline, self.read_one()).await {
                Ok(true) => {}
                Ok(false) | Err(_) => return,
            }
        }
        tokio::time::sleep_until(deadline).await;
    }

    async fn expect(
        &mut self,
        step: usize,
        wanted: &str,
        within: Duration,
    ) -> Result<(), ScenarioError> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if let Some(offset) = self.report.events[self.cursor..]
                .iter()
                .position(|event| matches(event, wanted))
            {
                self.cursor += offset + 1;
                return Ok(());
            }
            if let Some(reason) = self.report.end.clone() {
                return Err(ScenarioError::Ended {
                    step,
                    wanted: wanted.to_owned(),
                    reason,
                    report: Box::new(self.report.clone()),
                });
            }
            if !matches!(
                tokio::time::timeout_at(deadline, self.read_one()).await,
                Ok(true)
            ) {
                return Err(ScenarioError::Expectation {
                    step,
                    wanted: wanted.to_owned(),
                    within,
                    report: Box::new(self.report.clone()),
                });
            }
        }
    }

    async fn send_audio(&mut self, step: usize, frames: Vec<Bytes>) -> Result<(), ScenarioError> {
        let mut tick = tokio::time::interval(Duration::from_millis(20));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        for frame in frames {
            loop {
                tokio::select! {
                    biased;
                    _ = tick.tick() => break,
                    alive = self.read_one(), if !self.ended() => {
                        if !alive {
                            break;
                        }
                    }
                }
            }
            if self.ended() {
                return Ok(());
            }
            self.call
                .send_audio(frame, FRAME as u32)
                .map_err(|error| ScenarioError::Send { step, error })?;
        }
        Ok(())
    }
}

/// Runs `scenario`'s client script against the provider at `base_url` (the faults are the
/// provider's business: start it with them, see [`crate::ProviderConfig::faults`]).
pub async fn run(
    scenario: &Scenario,
    base_url: &str,
    auth: Auth,
) -> Result<ScenarioReport, ScenarioError> {
    let endpoint = Endpoint::custom(base_url, auth).map_err(ScenarioError::Connect)?;
    let call = Call::connect(scenario.call_config(endpoint))
        .await
        .map_err(ScenarioError::Connect)?;
    let mut runner = Runner {
        report: ScenarioReport {
            call_id: call.call_id().unwrap_or_default().to_owned(),
            ..ScenarioReport::default()
        },
        call,
        cursor: 0,
    };
    let within = Duration::from_millis(scenario.expect_within_ms);
    for (index, step) in scenario.steps.iter().enumerate() {
        let step_number = index + 1;
        match step {
            Step::Send(value) => {
                if runner.ended() {
                    // A send on an ended call: the typed error is the point.
                    let error = runner
                        .call
                        .peer()
                        .send_text(value.to_string())
                        .await
                        .err()
                        .unwrap_or(RtcError::Closed);
                    return Err(ScenarioError::Send {
                        step: step_number,
                        error,
                    });
                }
                runner
                    .call
                    .peer()
                    .send_text(value.to_string())
                    .await
                    .map_err(|error| ScenarioError::Send {
                        step: step_number,
                        error,
                    })?;
            }
            Step::Audio(audio) => {
                let pcm = match audio.source {
                    AudioSource::Speech => speech_like(audio.ms),
                    AudioSource::Silence => vec![0; ms_to_samples(audio.ms)],
                };
                let frames = encode_opus(&pcm)?;
                runner.send_audio(step_number, frames).await?;
            }
            Step::WaitMs(ms) => runner.read_for(Duration::from_millis(*ms)).await,
            Step::Expect(wanted) => runner.expect(step_number, wanted, within).await?,
            Step::ExpectEnd => {
                let deadline = tokio::time::Instant::now() + within;
                while !runner.ended() {
                    if !matches!(
                        tokio::time::timeout_at(deadline, runner.read_one()).await,
                        Ok(true)
                    ) {
                        break;
                    }
                }
                if !runner.ended() {
                    return Err(ScenarioError::Expectation {
                        step: step_number,
                        wanted: "the end of the call".to_owned(),
                        within,
                        report: Box::new(runner.report),
                    });
                }
            }
            Step::HangUp => {
                let Runner {
                    call, mut report, ..
                } = runner;
                report.hangup = Some(call.hangup().await.map_err(|error| error.to_string()));
                return Ok(report);
            }
        }
    }
    let Runner {
        call, mut report, ..
    } = runner;
    if report.end.is_none() {
        report.hangup = Some(call.hangup().await.map_err(|error| error.to_string()));
    }
    Ok(report)
}

fn ms_to_samples(ms: u64) -> usize {
    usize::try_from(ms).unwrap_or(usize::MAX / RATE) * RATE / 1000
}

pub use walkie_dsp::testkit::speech_like;

/// Encodes 48 kHz mono PCM as 20 ms Opus frames (a short last frame is dropped).
pub fn encode_opus(pcm: &[i16]) -> Result<Vec<Bytes>, ScenarioError> {
    walkie_dsp::testkit::encode_opus(pcm)
        .map(|frames| frames.into_iter().map(Bytes::from).collect())
        .map_err(|error| ScenarioError::Audio(error.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scenario_file_reads_and_misspellings_are_refused() {
        let scenario = Scenario::from_json(
            r#"{"description":"d","faults":[{"kind":"delay","at_event":2,"ms":100}],
                "steps":[{"expect":"session.created"},{"send":{"type":"input_audio_buffer.clear"}},
                         {"audio":{"source":"speech","ms":400}},{"wait_ms":20},"expect_end","hang_up"]}"#,
        )
        .expect("a valid scenario");
        assert_eq!(scenario.steps.len(), 6);
        assert_eq!(scenario.expect_within_ms, 10_000);
        assert!(matches!(
            scenario.steps[2],
            Step::Audio(AudioStep {
                source: AudioSource::Speech,
                ms: 400
            })
        ));
        assert!(matches!(
            Scenario::from_json(r#"{"steps":[{"expekt":"x"}]}"#),
            Err(ScenarioError::Invalid(_))
        ));
    }

    #[test]
    fn speech_like_audio_is_loud_and_encodes() {
        let pcm = speech_like(1000);
        assert_eq!(pcm.len(), 48_000);
        let rms =
            (pcm.iter().map(|s| f64::from(*s).powi(2)).sum::<f64>() / pcm.len() as f64).sqrt();
        assert!(rms > 1000.0, "rms {rms}");
        assert_eq!(encode_opus(&pcm).expect("encodes").len(), 50);
    }
}

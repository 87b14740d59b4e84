//! One call's conversation in virtual time: inputs at chosen instants, the machine's outputs
//! read back in the order it gave them.
#![allow(dead_code)]

use std::sync::Arc;

use serde_json::Value;
use walkie_conversation::{
    ConnectionState, Conversation, ConversationConfig, Input, Output, OutsideTool, Prices, Pricing,
    RedialPolicy, Spending, StatusEvent, TransportInput,
};
use walkie_openai::SessionConfig;
use walkie_session::AudioChunk;
use walkie_session::transcript::{MARK_CANCELLED, MARK_INTERRUPTED, MARK_LATENCY};
use walkie_session::turn::{AudioCommand, DecodedReplyAudio, ToolRegistry, TurnConfig, TurnMode};

/// The provider's name in the status sentences of these tests.
pub const PROVIDER: &str = "Test provider";

/// The prices of these tests' model, per million tokens: each its own, so a figure costed at
/// the wrong one shows.
pub const PRICES: Prices = Prices {
    text_in: 2.0,
    cached_text_in: 0.5,
    text_out: 8.0,
    audio_in: 40.0,
    cached_audio_in: 1.0,
    audio_out: 80.0,
    image_in: 6.0,
    cached_image_in: 0.6,
};
pub struct Call {
    pub machine: Conversation,
    pub config: TurnConfig,
    /// What the engine's downlink played of the decoded reply audio fed as input.
    pub speaker: Speaker,
}

/// The engine's downlink as far as what it plays: the machine's words on reply audio and its
/// flushes carried in the order they came, each decoded frame admitted by the rule the engine
/// applies ([`DecodedReplyAudio`]) before the machine sees it, as the engine does.
#[derive(Debug, Default)]
pub struct Speaker {
    decoded: DecodedReplyAudio,
    flush_epoch: u64,
    /// The item each played frame counted against (`""` when unnamed), in order.
    played: Vec<String>,
}

impl Speaker {
    fn carry(&mut self, outputs: &[Output]) {
        for output in outputs {
            match output {
                Output::ReplyAudio(reply_audio) => self.decoded.tell(
                    reply_audio.gate,
                    reply_audio.item_id.as_deref().map(Arc::from),
                    self.flush_epoch,
                    self.flush_epoch,
                ),
                Output::Audio(AudioCommand::FlushPlayback) => self.flush_epoch += 1,
                _ => {}
            }
        }
    }

    fn decode(&mut self, chunk: &AudioChunk) {
        if self.decoded.admit(chunk, self.flush_epoch) {
            let item = self.decoded.item().map(|item| item.to_string());
            self.played.push(item.unwrap_or_default());
        }
    }

    /// The items of the frames played since the last look, one per frame.
    pub fn played(&mut self) -> Vec<String> {
        std::mem::take(&mut self.played)
    }
}

impl Call {
    /// A push-to-talk (hold) call whose data channel has not opened yet.
    pub fn placed() -> Self {
        Self::placed_with(TurnConfig::push_to_talk(SessionConfig::default()))
    }

    pub fn placed_with(config: TurnConfig) -> Self {
        Self::placed_as(config, None)
    }

    /// Push-to-talk, ready, and the conversation may cost at most `budget_usd`.
    pub fn ready_on_a_budget(budget_usd: f64) -> Self {
        let mut call = Self::placed_as(
            TurnConfig::push_to_talk(SessionConfig::default()),
            Some(budget_usd),
        );
        call.input(0, Input::Transport(TransportInput::Open));
        call.server(
            50,
            &super::turn_support::session_updated_with_transcription(),
        );
        call
    }

    /// Push-to-talk, ready, on a budget of `budget_usd`, with these outside tools declared.
    pub fn ready_on_a_budget_with_tools(budget_usd: f64, outside_tools: Vec<OutsideTool>) -> Self {
        let mut call = Self::placed_as_with(
            TurnConfig::push_to_talk(SessionConfig::default()),
            Some(budget_usd),
            outside_tools,
        );
        call.input(0, Input::Transport(TransportInput::Open));
        call.server(
            50,
            &super::turn_support::session_updated_with_transcription(),
        );
        call
    }

    /// Push-to-talk, placed, with these outside tools declared.
    pub fn placed_with_tools(outside_tools: Vec<OutsideTool>) -> Self {
        Self::placed_as_with(
            TurnConfig::push_to_talk(SessionConfig::default()),
            None,
            outside_tools,
        )
    }

    /// Push-to-talk, ready, with these outside tools declared.
    pub fn ready_with_tools(outside_tools: Vec<OutsideTool>) -> Self {
        let mut call = Self::placed_with_tools(outside_tools);
        call.input(0, Input::Transport(TransportInput::Open));
        call.server(
            50,
            &super::turn_support::session_updated_with_transcription(),
        );
        call
    }

    fn placed_as(config: TurnConfig, budget_usd: Option<f64>) -> Self {
        Self::placed_as_with(config, budget_usd, Vec::new())
    }

    fn placed_as_with(
        config: TurnConfig,
        budget_usd: Option<f64>,
        outside_tools: Vec<OutsideTool>,
    ) -> Self {
        Self::placed_costed(config, budget_usd, None, outside_tools)
    }

    /// Placed with a budget, its transcriptions costed at `transcription_pricing`.
    pub fn placed_costed(
        config: TurnConfig,
        budget_usd: Option<f64>,
        transcription_pricing: Option<Pricing>,
        outside_tools: Vec<OutsideTool>,
    ) -> Self {
        Self::placed_telling(
            config,
            budget_usd,
            transcription_pricing,
            outside_tools,
            None,
        )
    }

    /// Push-to-talk, placed, with a sentence about the settings to tell the user.
    pub fn placed_telling_about_settings(settings_notice: &str) -> Self {
        Self::placed_telling(
            TurnConfig::push_to_talk(SessionConfig::default()),
            None,
            None,
            Vec::new(),
            Some(settings_notice.to_owned()),
        )
    }

    fn placed_telling(
        config: TurnConfig,
        budget_usd: Option<f64>,
        transcription_pricing: Option<Pricing>,
        outside_tools: Vec<OutsideTool>,
        settings_notice: Option<String>,
    ) -> Self {
        let pricing = Pricing {
            model: "gpt-realtime".to_owned(),
            rate: walkie_conversation::Rate::PerMillionTokens(PRICES),
            taken_on: "2025-08-28".to_owned(),
            free: false,
        };
        Self::placed_priced(
            config,
            pricing,
            budget_usd,
            transcription_pricing,
            outside_tools,
            settings_notice,
        )
    }

    /// Placed, its replies costed at `pricing`, on a budget of `budget_usd` if any.
    pub fn placed_priced(
        config: TurnConfig,
        pricing: Pricing,
        budget_usd: Option<f64>,
        transcription_pricing: Option<Pricing>,
        outside_tools: Vec<OutsideTool>,
        settings_notice: Option<String>,
    ) -> Self {
        let machine = Conversation::new(
            conversation_config(
                &config,
                pricing,
                budget_usd,
                transcription_pricing,
                outside_tools,
                settings_notice,
            ),
            ToolRegistry::with_builtins,
        );
        Self::of(machine, config)
    }

    /// Push-to-talk, ready, asking the model for the conversation's title; on a budget of
    /// `budget_usd` if any.
    pub fn ready_asking_titles(budget_usd: Option<f64>) -> Self {
        let config = TurnConfig::push_to_talk(SessionConfig::default());
        let pricing = Pricing {
            model: "gpt-realtime".to_owned(),
            rate: walkie_conversation::Rate::PerMillionTokens(PRICES),
            taken_on: "2025-08-28".to_owned(),
            free: false,
        };
        let machine = Conversation::new(
            ConversationConfig {
                ask_title: true,
                ..conversation_config(&config, pricing, budget_usd, None, Vec::new(), None)
            },
            ToolRegistry::with_builtins,
        );
        let mut call = Self::of(machine, config);
        call.input(0, Input::Transport(TransportInput::Open));
        call.server(
            50,
            &super::turn_support::session_updated_with_transcription(),
        );
        call
    }

    /// A call on this machine, its speaker idle.
    pub fn of(machine: Conversation, config: TurnConfig) -> Self {
        Self {
            machine,
            config,
            speaker: Speaker::default(),
        }
    }

    /// Push-to-talk, the channel open at 0 and the session confirmed at 50, outputs read.
    pub fn ready() -> Self {
        Self::ready_with(TurnConfig::push_to_talk(SessionConfig::default()))
    }

    pub fn ready_with(config: TurnConfig) -> Self {
        let mut call = Self::placed_with(config);
        call.input(0, Input::Transport(TransportInput::Open));
        call.server(
            50,
            &super::turn_support::session_updated_with_transcription(),
        );
        call
    }

    /// Feeds one input and returns what came out.
    pub fn input(&mut self, now_ms: u64, input: Input) -> Vec<Output> {
        if let Input::Engine(walkie_conversation::EngineInput::AssistantAudio(chunk)) = &input {
            self.speaker.decode(chunk);
        }
        self.machine.handle_input(input, now_ms);
        let outputs: Vec<Output> = std::iter::from_fn(|| self.machine.poll_output()).collect();
        self.speaker.carry(&outputs);
        outputs
    }

    /// One data-channel message.
    pub fn server(&mut self, now_ms: u64, text: &str) -> Vec<Output> {
        self.input(now_ms, Input::ServerText(text.to_owned()))
    }

    pub fn press(&mut self, now_ms: u64) -> Vec<Output> {
        self.input(now_ms, Input::Press)
    }

    pub fn release(&mut self, now_ms: u64) -> Vec<Output> {
        self.input(now_ms, Input::Release)
    }

    pub fn tick(&mut self, now_ms: u64) -> Vec<Output> {
        self.input(now_ms, Input::Tick)
    }

    /// 20 ms of decoded assistant audio from the call.
    pub fn assistant_audio(&mut self, now_ms: u64) -> Vec<Output> {
        let chunk = AudioChunk::from_samples(vec![100; 960]);
        self.input(
            now_ms,
            Input::Engine(walkie_conversation::EngineInput::AssistantAudio(chunk)),
        )
    }

    /// Holds the key from `down_ms` to `up_ms` and lets the tail run out; all outputs.
    pub fn utterance(&mut self, down_ms: u64, up_ms: u64) -> Vec<Output> {
        let mut outputs = self.press(down_ms);
        outputs.extend(self.release(up_ms));
        outputs.extend(self.tick(up_ms + self.config.tail_ms));
        outputs
    }

    /// Switches the turn mode.
    pub fn set_mode(&mut self, now_ms: u64, mode: TurnMode) -> Vec<Output> {
        self.input(now_ms, Input::SetTurnMode(mode))
    }
}

/// Runs the redial the machine scheduled, from its deadline: the call is placed, its channel
/// opens and its session is confirmed. All outputs from the dial on.
pub fn redial(call: &mut Call) -> Vec<Output> {
    let at_ms = call
        .machine
        .next_deadline_ms()
        .expect("a redial is scheduled");
    let mut outputs = call.tick(at_ms);
    assert!(
        names(&outputs).contains(&"dial".to_owned()),
        "dials at its deadline: {:?}",
        names(&outputs)
    );
    outputs.extend(call.input(at_ms + 100, Input::Dialled));
    outputs.extend(call.input(at_ms + 150, Input::Transport(TransportInput::Open)));
    outputs.extend(call.server(
        at_ms + 200,
        &super::turn_support::session_updated_with_transcription(),
    ));
    outputs
}

/// The status lines among `outputs`.
pub fn statuses(outputs: &[Output]) -> Vec<StatusEvent> {
    outputs
        .iter()
        .filter_map(|output| match output {
            Output::Status(status) => Some(status.clone()),
            _ => None,
        })
        .collect()
}

/// The last status line among `outputs`, as (state, sentence).
pub fn last_status(outputs: &[Output]) -> Option<(ConnectionState, String)> {
    statuses(outputs)
        .pop()
        .map(|status| (status.state, status.detail))
}

/// The `type`s of the client events among `outputs`.
pub fn sent_types(outputs: &[Output]) -> Vec<&'static str> {
    outputs
        .iter()
        .filter_map(|output| match output {
            Output::Send(sent) => Some(sent.event.event_type()),
            _ => None,
        })
        .collect()
}

/// The `event_id` of the first client event of this type among `outputs`.
pub fn sent_id(outputs: &[Output], event_type: &str) -> String {
    outputs
        .iter()
        .find_map(|output| match output {
            Output::Send(sent) if sent.event.event_type() == event_type => {
                Some(sent.event_id.clone())
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("no {event_type} was sent: {outputs:?}"))
}

pub fn audio_commands(outputs: &[Output]) -> Vec<AudioCommand> {
    outputs
        .iter()
        .filter_map(|output| match output {
            Output::Audio(command) => Some(*command),
            _ => None,
        })
        .collect()
}

/// Each output named briefly, in order (a transcript's marks by what they mark): `send:<type>`,
/// `audio:<command>`,
/// `reply-audio:<gate>:<item>`, `begin:<item>`,
/// `play`, `transcript:<TYPE>:<messageId>`, `interrupted:<messageId>`, `cancelled:<messageId>`,
/// `record`, `status`,
/// `level`, `health:<level>`, `playout`, `diagnostic`, `hang-up-call`, `dial`, `ended`, `run-tool:<call>`,
/// `ask-approval:<call>`, `approval-closed:<call>`.
pub fn names(outputs: &[Output]) -> Vec<String> {
    outputs
        .iter()
        .map(|output| match output {
            Output::Send(sent) => format!("send:{}", sent.event.event_type()),
            Output::Audio(command) => format!("audio:{command:?}"),
            Output::ReplyAudio(reply_audio) => format!(
                "reply-audio:{:?}:{}",
                reply_audio.gate,
                reply_audio.item_id.as_deref().unwrap_or_default()
            ),
            Output::BeginItem(item) => format!("begin:{item}"),
            Output::Play(_) => "play".to_owned(),
            Output::Transcript(event) => {
                let json = serde_json::to_value(event).expect("AG-UI events serialise");
                let mark = |name: &str| json["name"] == name;
                let marked = json["value"]["messageId"].as_str().unwrap_or_default();
                match json["type"].as_str().unwrap_or_default() {
                    "CUSTOM" if mark(MARK_INTERRUPTED) => format!("interrupted:{marked}"),
                    "CUSTOM" if mark(MARK_CANCELLED) => format!("cancelled:{marked}"),
                    "CUSTOM" if mark(MARK_LATENCY) => {
                        format!("mark-latency:{marked}:{}", json["value"]["latencyMs"])
                    }
                    kind => format!(
                        "transcript:{kind}:{}",
                        json["messageId"].as_str().unwrap_or_default()
                    ),
                }
            }
            Output::ReplyLatency {
                message_id,
                latency_ms,
                ..
            } => format!("latency:{message_id}:{latency_ms}"),
            Output::Spending(_) => "spending".to_owned(),
            Output::ConnectionHealth(health) => format!("health:{:?}", health.level),
            Output::ReplyPlayout(_) => "playout".to_owned(),
            Output::Record(_) => "record".to_owned(),
            Output::Status(_) => "status".to_owned(),
            Output::Level { .. } => "level".to_owned(),
            Output::Diagnostic(_) => "diagnostic".to_owned(),
            Output::HangUpCall => "hang-up-call".to_owned(),
            Output::Dial { .. } => "dial".to_owned(),
            Output::Ended { .. } => "ended".to_owned(),
            Output::RunTool(request) => format!("run-tool:{}", request.call_id),
            Output::AskApproval(approval) => format!("ask-approval:{}", approval.call_id),
            Output::ApprovalClosed { call_id } => format!("approval-closed:{call_id}"),
        })
        .collect()
}

/// The last report of what the conversation spent among `outputs`.
pub fn spending(outputs: &[Output]) -> Option<Spending> {
    outputs.iter().rev().find_map(|output| match output {
        Output::Spending(spending) => Some((**spending).clone()),
        _ => None,
    })
}

/// The transcript events among `outputs`, as JSON.
pub fn transcript(outputs: &[Output]) -> Vec<Value> {
    outputs
        .iter()
        .filter_map(|output| match output {
            Output::Transcript(event) => {
                Some(serde_json::to_value(event).expect("AG-UI events serialise"))
            }
            _ => None,
        })
        .collect()
}

/// The test conversation's settings: the test provider, its prices, no title asked.
fn conversation_config(
    config: &TurnConfig,
    pricing: Pricing,
    budget_usd: Option<f64>,
    transcription_pricing: Option<Pricing>,
    outside_tools: Vec<OutsideTool>,
    settings_notice: Option<String>,
) -> ConversationConfig {
    ConversationConfig {
        turn: config.clone(),
        provider_label: PROVIDER.to_owned(),
        thread_id: "call_1".to_owned(),
        redial: RedialPolicy::default(),
        jitter_seed: 7,
        voice_barge_in: true,
        pricing: Some(pricing),
        transcription_pricing,
        budget_usd,
        outside_tools,
        automatic_tool_rounds: walkie_conversation::AUTOMATIC_TOOL_ROUNDS,
        settings_notice,
        ask_title: false,
    }
}

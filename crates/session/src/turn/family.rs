//! Provider families: which protocol a call speaks, and what that protocol gives Walkie.
//!
//! Why a profile: the conversation machine, the transcript bridge, the store and the window are
//! written against one session event model (the spec's), not against a protocol. What differs
//! between families is which of those events the provider sends and which Walkie must derive
//! from the audio it owns, who ends a user's turn, and how a new session learns the
//! conversation so far. Each family declares that once, as pydantic-ai's realtime profiles do,
//! and its [`TurnEngine`](super::TurnEngine) maps its wire events to the session's.

/// The protocol a call speaks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ProviderFamily {
    /// OpenAI's Realtime API (GA) and what speaks it: Azure, compatible servers, the bench.
    #[default]
    Realtime,
    /// OpenAI's Live API (GPT-Live): full duplex, the model owns turn-taking.
    Live,
}

/// How a new session (a redial, a renewal, Continue) is given the conversation so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistoryRestore {
    /// As items on the data channel once it opens (`conversation.item.create`).
    OverDataChannel,
    /// In the request that places the call (the Live API's `input`).
    AtCallSetup,
}

/// What a family's provider sends and expects; see the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FamilyProfile {
    /// The provider says when the user starts and stops speaking (hands-free). Without it
    /// Walkie derives both: from the key in push-to-talk, from its own voice detection on the
    /// microphone hands-free.
    pub emits_input_speech_events: bool,
    /// The provider says when its reply becomes audible and stops. Without it Walkie derives
    /// both from the playout: the first audible sample, and the queue running dry.
    pub emits_output_speech_events: bool,
    /// The client ends a user's turn and asks for the reply (commit and create). Without it
    /// the model decides when to answer, and the client only mutes and unmutes its input.
    pub client_commits_turns: bool,
    /// The provider ends each reply with a done event. Without it a message ends after a
    /// quiet period or at the other side's next speech.
    pub emits_done_events: bool,
    /// How a new session learns the conversation so far.
    pub history: HistoryRestore,
}

impl ProviderFamily {
    /// The family's profile.
    pub const fn profile(self) -> FamilyProfile {
        match self {
            ProviderFamily::Realtime => FamilyProfile {
                emits_input_speech_events: true,
                emits_output_speech_events: true,
                client_commits_turns: true,
                emits_done_events: true,
                history: HistoryRestore::OverDataChannel,
            },
            ProviderFamily::Live => FamilyProfile {
                emits_input_speech_events: false,
                emits_output_speech_events: false,
                client_commits_turns: false,
                emits_done_events: false,
                history: HistoryRestore::AtCallSetup,
            },
        }
    }
}

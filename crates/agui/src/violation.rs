//! What a broken stream is reported as: a rule from the conformance vocabulary, the index of the
//! input event that broke it, and a sentence a person can act on.
//!
//! Rule ids are the ones `../shared/conformance/ag-ui-text-messages.json` uses, so a report from
//! `agui-verify` compares directly with a conformance case. Where the official 1.0 TypeScript
//! client has a stable wording, the message is that wording, so logs compare with it too.

use std::fmt;

/// A rule of the AG-UI text-message protocol (spec, streaming pattern, run lifecycle, schema).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rule {
    /// The stream opened with something other than RUN_STARTED or RUN_ERROR.
    FirstEventNotRunStarted,
    /// RUN_STARTED while a run is still active.
    RunAlreadyActive,
    /// An event other than RUN_STARTED / RUN_ERROR after RUN_FINISHED.
    EventAfterRunFinished,
    /// An event other than RUN_STARTED after RUN_ERROR.
    EventAfterRunError,
    /// TEXT_MESSAGE_START for an id that is open.
    StartAlreadyOpen,
    /// TEXT_MESSAGE_CONTENT for an id that is not open.
    ContentNotOpen,
    /// TEXT_MESSAGE_END for an id that is not open.
    EndNotOpen,
    /// RUN_FINISHED while messages are open.
    OpenAtRunFinished,
    /// Strict mode: a reopening START disagrees with the message's role or name.
    ReopenMismatch,
    /// An event attributed to a different subagent than the message's owner, within a run.
    OwnerMismatch,
    /// A TEXT_MESSAGE_CHUNK opens a message without a messageId.
    ChunkFirstWithoutId,
    /// A continuation chunk restates role or name with a different value.
    ChunkConflictingRepeat,
    /// A chunk with neither messageId nor subagentRunId while several lanes are open.
    ChunkAmbiguousLane,
    /// A known field is missing, null or of the wrong shape.
    Schema,
}

impl Rule {
    /// Every rule, for exhaustive checks in tests.
    pub const ALL: [Rule; 14] = [
        Rule::FirstEventNotRunStarted,
        Rule::RunAlreadyActive,
        Rule::EventAfterRunFinished,
        Rule::EventAfterRunError,
        Rule::StartAlreadyOpen,
        Rule::ContentNotOpen,
        Rule::EndNotOpen,
        Rule::OpenAtRunFinished,
        Rule::ReopenMismatch,
        Rule::OwnerMismatch,
        Rule::ChunkFirstWithoutId,
        Rule::ChunkConflictingRepeat,
        Rule::ChunkAmbiguousLane,
        Rule::Schema,
    ];

    /// The rule id as the conformance file spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::FirstEventNotRunStarted => "FIRST_EVENT_NOT_RUN_STARTED",
            Rule::RunAlreadyActive => "RUN_ALREADY_ACTIVE",
            Rule::EventAfterRunFinished => "EVENT_AFTER_RUN_FINISHED",
            Rule::EventAfterRunError => "EVENT_AFTER_RUN_ERROR",
            Rule::StartAlreadyOpen => "START_ALREADY_OPEN",
            Rule::ContentNotOpen => "CONTENT_NOT_OPEN",
            Rule::EndNotOpen => "END_NOT_OPEN",
            Rule::OpenAtRunFinished => "OPEN_AT_RUN_FINISHED",
            Rule::ReopenMismatch => "REOPEN_MISMATCH",
            Rule::OwnerMismatch => "OWNER_MISMATCH",
            Rule::ChunkFirstWithoutId => "CHUNK_FIRST_WITHOUT_ID",
            Rule::ChunkConflictingRepeat => "CHUNK_CONFLICTING_REPEAT",
            Rule::ChunkAmbiguousLane => "CHUNK_AMBIGUOUS_LANE",
            Rule::Schema => "SCHEMA",
        }
    }

    /// Whether the official 1.0 client has a stable wording for this rule, which [`Violation`]
    /// then uses verbatim. SCHEMA (validator text) and REOPEN_MISMATCH (not checked by the SDK)
    /// have none.
    pub fn has_official_wording(self) -> bool {
        !matches!(self, Rule::Schema | Rule::ReopenMismatch)
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

/// A stream broke a rule. Fatal to the run, as the spec says.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("event {event_index}: {rule}: {message}")]
pub struct Violation {
    pub rule: Rule,
    /// 0-based index of the input event that caused it (also when the failing event was one the
    /// chunk expander made up from that input).
    pub event_index: usize,
    /// What went wrong, in words; the official client's wording where it has one.
    pub message: String,
    /// For [`Rule::Schema`], the offending field (camelCase).
    pub field: Option<String>,
}

impl Violation {
    pub(crate) fn new(rule: Rule, event_index: usize, message: String) -> Violation {
        Violation {
            rule,
            event_index,
            message,
            field: None,
        }
    }
}

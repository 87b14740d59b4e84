//! The incremental verifier: the run lifecycle and the streaming pattern's open/close rules,
//! checked one op at a time.
//!
//! Every piece of per-message state lives in one hash map entry, and per-run state is reset by
//! bumping a run number instead of clearing anything, so each op costs one lookup and no rescans
//! (the only scan is building the error text of OPEN_AT_RUN_FINISHED, on the failure path). A
//! CONTENT op allocates nothing.
//!
//! Two modes, as the conformance file's `expect` / `expectStrict` split them: the consumer
//! follows the spec's word to consumers (a reopen's established role and name stand, a mismatch
//! need not be detected), while [`Mode::Strict`] checks the producer's obligation that a reopening
//! START agrees with the message, and reports REOPEN_MISMATCH. An owner mismatch within a run is
//! OWNER_MISMATCH in both.

use crate::event::Role;
use crate::expand::Op;
use crate::id_index::IdIndex;
use crate::message::Message;
use crate::violation::{Rule, Violation};

/// Which obligations the verifier checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// What a consumer must reject (the default).
    #[default]
    Consumer,
    /// Also the producer's obligations a consumer may overlook: a reopening START must restate
    /// the message's role and name. Walkie's own producer output must pass this.
    Strict,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    NotStarted,
    Active,
    Finished,
    Errored,
}

/// What the verifier knows about one message id.
#[derive(Debug, Clone)]
struct Tracked {
    /// The run in which the message is open; 0 when it is not open.
    open_run: u32,
    /// Opening order within the run, for the OPEN_AT_RUN_FINISHED text.
    open_sequence: u64,
    /// The run in which `owner` was recorded; a record from an earlier run does not count.
    owner_run: u32,
    owner: Option<String>,
    /// The history generation the message belongs to; a snapshot that omits it removes it.
    history_generation: u32,
    /// Established role (`None` for a non-text message from a snapshot) and name.
    role: Option<Role>,
    name: Option<String>,
}

/// Checks one op at a time; see the module docs.
#[derive(Debug, Clone)]
pub struct Verifier {
    mode: Mode,
    phase: Phase,
    /// Current run number; every RUN_STARTED moves to a fresh one.
    run: u32,
    history_generation: u32,
    open_count: usize,
    next_open_sequence: u64,
    /// Per-message state, in slots found through `slot_by_id`.
    tracked: Vec<Tracked>,
    slot_by_id: IdIndex,
}

impl Default for Verifier {
    fn default() -> Verifier {
        Verifier::new(Mode::Consumer)
    }
}

fn parent_or(owner: Option<&str>) -> &str {
    owner.unwrap_or("(the parent agent)")
}

impl Verifier {
    pub fn new(mode: Mode) -> Verifier {
        Verifier {
            mode,
            phase: Phase::NotStarted,
            // Run numbers start above 0 so that 0 can mean "not open" / "not recorded".
            run: 1,
            history_generation: 0,
            open_count: 0,
            next_open_sequence: 0,
            tracked: Vec::new(),
            slot_by_id: IdIndex::default(),
        }
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Number of messages open in the current run.
    pub fn open_count(&self) -> usize {
        self.open_count
    }

    /// Whether a run is active (started, neither finished nor errored).
    pub fn run_active(&self) -> bool {
        self.phase == Phase::Active
    }

    /// Checks one op (which came from input event `event_index`) and records its effect.
    pub fn check(&mut self, op: &Op<'_>, event_index: usize) -> Result<(), Violation> {
        self.check_lifecycle(op, event_index)?;
        match *op {
            Op::Start {
                message_id,
                role,
                name,
                owner,
                ..
            } => self.start(
                message_id,
                role.unwrap_or(Role::Assistant),
                name,
                owner,
                event_index,
            ),
            Op::Content {
                message_id, owner, ..
            } => {
                self.check_open(message_id, owner, "TEXT_MESSAGE_CONTENT", event_index)?;
                Ok(())
            }
            Op::End {
                message_id, owner, ..
            } => {
                let run = self.run;
                let tracked =
                    self.check_open(message_id, owner, "TEXT_MESSAGE_END", event_index)?;
                debug_assert_eq!(tracked.open_run, run);
                tracked.open_run = 0;
                self.open_count -= 1;
                Ok(())
            }
            Op::Snapshot { messages } => {
                self.history_generation += 1;
                let (run, generation) = (self.run, self.history_generation);
                for message in messages {
                    let tracked = self.track(message.id());
                    tracked.history_generation = generation;
                    tracked.role = message.role();
                    tracked.name = message.name().map(str::to_owned);
                    tracked.owner_run = run;
                    tracked.owner = message.subagent_run_id().map(str::to_owned);
                }
                Ok(())
            }
            Op::RunStarted { input_messages } => {
                self.phase = Phase::Active;
                self.run += 1;
                self.open_count = 0;
                self.seed_from_input(input_messages);
                Ok(())
            }
            Op::RunFinished => {
                if self.open_count > 0 {
                    return Err(Violation::new(
                        Rule::OpenAtRunFinished,
                        event_index,
                        format!(
                            "Cannot send 'RUN_FINISHED' while text messages are still active: {}",
                            self.open_ids().join(", ")
                        ),
                    ));
                }
                self.phase = Phase::Finished;
                Ok(())
            }
            Op::RunError => {
                self.phase = Phase::Errored;
                Ok(())
            }
            Op::Other { .. } => Ok(()),
        }
    }

    fn check_lifecycle(&mut self, op: &Op<'_>, event_index: usize) -> Result<(), Violation> {
        let starts = matches!(op, Op::RunStarted { .. });
        let errors = matches!(op, Op::RunError);
        let violation = match self.phase {
            Phase::Active if starts => Some((
                Rule::RunAlreadyActive,
                "Cannot send 'RUN_STARTED' while a run is still active. The previous run must be finished with 'RUN_FINISHED' before starting a new run.".to_owned(),
            )),
            Phase::Active => None,
            Phase::Errored if !starts => Some((
                Rule::EventAfterRunError,
                format!(
                    "Cannot send event type '{}': The run has already errored with 'RUN_ERROR'. No further events can be sent.",
                    op.type_name()
                ),
            )),
            Phase::Finished if !starts && !errors => Some((
                Rule::EventAfterRunFinished,
                format!(
                    "Cannot send event type '{}': The run has already finished with 'RUN_FINISHED'. Start a new run with 'RUN_STARTED'.",
                    op.type_name()
                ),
            )),
            Phase::NotStarted if !starts && !errors => Some((
                Rule::FirstEventNotRunStarted,
                "First event must be 'RUN_STARTED'".to_owned(),
            )),
            Phase::Errored | Phase::Finished | Phase::NotStarted => None,
        };
        match violation {
            Some((rule, message)) => Err(Violation::new(rule, event_index, message)),
            None => Ok(()),
        }
    }

    fn track(&mut self, message_id: &str) -> &mut Tracked {
        let slot = match self.slot_by_id.get(message_id) {
            Some(slot) => slot,
            None => {
                self.tracked.push(Tracked {
                    open_run: 0,
                    open_sequence: 0,
                    owner_run: 0,
                    owner: None,
                    history_generation: u32::MAX,
                    role: None,
                    name: None,
                });
                self.slot_by_id.insert(message_id, self.tracked.len() - 1);
                self.tracked.len() - 1
            }
        };
        &mut self.tracked[slot]
    }

    fn start(
        &mut self,
        message_id: &str,
        role: Role,
        name: Option<&str>,
        owner: Option<&str>,
        event_index: usize,
    ) -> Result<(), Violation> {
        let (run, generation, strict) =
            (self.run, self.history_generation, self.mode == Mode::Strict);
        let sequence = self.next_open_sequence;
        let tracked = self.track(message_id);
        if tracked.open_run == run {
            return Err(Violation::new(
                Rule::StartAlreadyOpen,
                event_index,
                format!(
                    "Cannot send 'TEXT_MESSAGE_START' event: A text message with ID '{message_id}' is already in progress. Complete it with 'TEXT_MESSAGE_END' first."
                ),
            ));
        }
        if tracked.owner_run == run && owner.is_some() && owner != tracked.owner.as_deref() {
            return Err(Violation::new(
                Rule::OwnerMismatch,
                event_index,
                format!(
                    "Cannot send 'TEXT_MESSAGE_START': subagentRunId '{}' does not match the message '{message_id}' opener's subagent '{}'.",
                    parent_or(owner),
                    parent_or(tracked.owner.as_deref())
                ),
            ));
        }
        let in_history = tracked.history_generation == generation;
        if in_history && strict {
            if tracked.role != Some(role) {
                return Err(Violation::new(
                    Rule::ReopenMismatch,
                    event_index,
                    format!(
                        "Cannot send 'TEXT_MESSAGE_START' event: role '{}' does not match the role '{}' of message '{message_id}' it reopens.",
                        role.as_str(),
                        tracked.role.map_or("(not a text message)", Role::as_str)
                    ),
                ));
            }
            if tracked.name.as_deref() != name {
                return Err(Violation::new(
                    Rule::ReopenMismatch,
                    event_index,
                    format!(
                        "Cannot send 'TEXT_MESSAGE_START' event: name {} does not match the name {} of message '{message_id}' it reopens.",
                        name.map_or_else(|| "(absent)".to_owned(), |name| format!("'{name}'")),
                        tracked
                            .name
                            .as_deref()
                            .map_or_else(|| "(absent)".to_owned(), |name| format!("'{name}'"))
                    ),
                ));
            }
        }
        if !in_history {
            // A new message (or one a snapshot removed): this START establishes it.
            tracked.history_generation = generation;
            tracked.role = Some(role);
            tracked.name = name.map(str::to_owned);
        }
        if tracked.owner_run != run {
            tracked.owner_run = run;
            tracked.owner = owner.map(str::to_owned);
        }
        tracked.open_run = run;
        tracked.open_sequence = sequence;
        self.next_open_sequence += 1;
        self.open_count += 1;
        Ok(())
    }

    fn check_open(
        &mut self,
        message_id: &str,
        owner: Option<&str>,
        type_name: &str,
        event_index: usize,
    ) -> Result<&mut Tracked, Violation> {
        let run = self.run;
        let slot = self.slot_by_id.get(message_id);
        let Some(tracked) = slot
            .map(|slot| &mut self.tracked[slot])
            .filter(|tracked| tracked.open_run == run)
        else {
            let (rule, advice) = if type_name == "TEXT_MESSAGE_CONTENT" {
                (
                    Rule::ContentNotOpen,
                    "Start a text message with 'TEXT_MESSAGE_START' first.",
                )
            } else {
                (
                    Rule::EndNotOpen,
                    "A 'TEXT_MESSAGE_START' event must be sent first.",
                )
            };
            return Err(Violation::new(
                rule,
                event_index,
                format!(
                    "Cannot send '{type_name}' event: No active text message found with ID '{message_id}'. {advice}"
                ),
            ));
        };
        if owner.is_some() && tracked.owner_run == run && owner != tracked.owner.as_deref() {
            return Err(Violation::new(
                Rule::OwnerMismatch,
                event_index,
                format!(
                    "Cannot send '{type_name}': subagentRunId '{}' does not match the message '{message_id}' opener's subagent '{}'.",
                    parent_or(owner),
                    parent_or(tracked.owner.as_deref())
                ),
            ));
        }
        Ok(tracked)
    }

    fn seed_from_input(&mut self, input_messages: &[Message]) {
        let (run, generation) = (self.run, self.history_generation);
        for message in input_messages {
            let tracked = self.track(message.id());
            if tracked.history_generation != generation {
                tracked.history_generation = generation;
                tracked.role = message.role();
                tracked.name = message.name().map(str::to_owned);
            }
            if tracked.owner_run != run {
                tracked.owner_run = run;
                tracked.owner = message.subagent_run_id().map(str::to_owned);
            }
        }
    }

    /// The ids open in the current run, in the order they were opened (failure path only).
    fn open_ids(&self) -> Vec<&str> {
        let mut open: Vec<(&str, u64)> = self
            .slot_by_id
            .iter()
            .map(|(id, slot)| (id, &self.tracked[slot]))
            .filter(|(_, tracked)| tracked.open_run == self.run)
            .map(|(id, tracked)| (id, tracked.open_sequence))
            .collect();
        open.sort_by_key(|&(_, sequence)| sequence);
        open.into_iter().map(|(id, _)| id).collect()
    }
}

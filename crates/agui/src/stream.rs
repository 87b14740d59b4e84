//! The consumer pipeline: decode → expand chunks → verify → assemble, one event at a time.
//!
//! This is what the webview's Rust side, the store and `agui-verify` run. Stages stay separate
//! (as the reference's pipeline has them) but are fused per event through a closure, so an event
//! is looked at once and never buffered. The first violation is fatal: the stream keeps reporting
//! it and applies nothing more.

use serde_json::{Value, json};

use crate::assemble::Assembler;
use crate::event::Event;
use crate::expand::{ChunkExpander, Op};
use crate::message::Message;
use crate::text_event::TextEvent;
use crate::verify::{Mode, Verifier};
use crate::violation::{Rule, Violation};

/// A verifying, assembling consumer of one AG-UI event stream.
#[derive(Debug, Clone, Default)]
pub struct Consumer {
    expander: ChunkExpander,
    verifier: Verifier,
    assembler: Assembler,
    events_seen: usize,
    failure: Option<Violation>,
}

impl Consumer {
    pub fn new(mode: Mode) -> Consumer {
        Consumer {
            verifier: Verifier::new(mode),
            ..Consumer::default()
        }
    }

    /// Takes the next event of the stream.
    pub fn push(&mut self, event: &Event) -> Result<(), Violation> {
        self.take(|expander, stages| {
            expander.expand(event, stages.event_index, &mut |op| stages.emit(op))
        })
    }

    /// Runs one input event through the stages: `expand` hands its ops to [`Stages::emit`].
    fn take<X>(&mut self, expand: X) -> Result<(), Violation>
    where
        X: FnOnce(&mut ChunkExpander, &mut Stages<'_>) -> Result<(), Violation>,
    {
        if let Some(failure) = &self.failure {
            return Err(failure.clone());
        }
        let mut stages = Stages {
            verifier: &mut self.verifier,
            assembler: &mut self.assembler,
            event_index: self.events_seen,
        };
        self.events_seen += 1;
        let result = expand(&mut self.expander, &mut stages);
        if let Err(violation) = &result {
            self.failure = Some(violation.clone());
        }
        result
    }

    /// Takes the next event as a JSON value; a malformed event is a SCHEMA violation.
    pub fn push_value(&mut self, value: &Value) -> Result<(), Violation> {
        match Event::from_value(value) {
            Ok(event) => self.push(&event),
            Err(error) => Err(self.schema_failure(error.field, error.message)),
        }
    }

    /// Takes the next event as JSON text; text that does not decode is a SCHEMA violation.
    pub fn push_json(&mut self, text: &str) -> Result<(), Violation> {
        // The per-token events go straight from the text to their op (see `text_event`).
        if self.failure.is_none()
            && let Some(event) = TextEvent::parse(text)
        {
            return self.take(|expander, stages| {
                expander.pass_text(event.op(), &mut |op| stages.emit(op))
            });
        }
        match Event::from_json_str(text) {
            Ok(event) => self.push(&event),
            Err(error) => Err(self.schema_failure(error.field, error.message)),
        }
    }

    fn schema_failure(&mut self, field: Option<String>, message: String) -> Violation {
        if let Some(failure) = &self.failure {
            return failure.clone();
        }
        let violation = Violation {
            rule: Rule::Schema,
            event_index: self.events_seen,
            message,
            field,
        };
        self.events_seen += 1;
        self.failure = Some(violation.clone());
        violation
    }

    /// The history assembled so far.
    pub fn messages(&self) -> &[Message] {
        self.assembler.messages()
    }

    /// The violation that ended the stream, if one did.
    pub fn failure(&self) -> Option<&Violation> {
        self.failure.as_ref()
    }

    /// How many input events were pushed.
    pub fn events_seen(&self) -> usize {
        self.events_seen
    }

    /// The verdict in the conformance file's shape:
    /// `{"outcome":"ok","messages":[…]}` or `{"outcome":"violation","violation":{…}}`.
    pub fn report(&self) -> Value {
        match &self.failure {
            None => json!({ "outcome": "ok", "messages": self.messages() }),
            Some(violation) => {
                json!({ "outcome": "violation", "violation": violation_json(violation) })
            }
        }
    }
}

/// The stages after chunk expansion, for the ops of one input event.
struct Stages<'c> {
    verifier: &'c mut Verifier,
    assembler: &'c mut Assembler,
    event_index: usize,
}

impl Stages<'_> {
    fn emit(&mut self, op: Op<'_>) -> Result<(), Violation> {
        self.verifier.check(&op, self.event_index)?;
        self.assembler.apply(&op);
        Ok(())
    }
}

/// A violation as `agui-verify` prints it: `rule`, `eventIndex`, `message`, plus
/// `officialMessage` where the official client has a stable wording and `field` for SCHEMA.
pub fn violation_json(violation: &Violation) -> Value {
    let mut object = json!({
        "rule": violation.rule.as_str(),
        "eventIndex": violation.event_index,
        "message": violation.message,
    });
    if violation.rule.has_official_wording() {
        object["officialMessage"] = Value::from(violation.message.clone());
    }
    if let Some(field) = &violation.field {
        object["field"] = Value::from(field.clone());
    }
    object
}

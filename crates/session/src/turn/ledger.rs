//! The response ledger: what the controller asked the server for and what it heard back, about
//! responses. One response is active at a time; a `response.create` is in flight until its
//! `response.created`, or queued while another response is active (sent at that one's
//! `response.done`); a `response.cancel` is sent once per response; and a response created for
//! an utterance the server then found empty is discarded (cancelled, its output hidden).
//!
//! Why a part of its own: the protocol mapping and the controller's turn logic both change
//! these facts, and each must change them together (a create in flight and a queued create are
//! never both sent). Here they change only through the methods below.

/// The `response.create` sent with a commit, for undoing it if the commit turns out empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum PairedCreate {
    Sent(String),
    Queued,
}

/// The last commit and the create that went with it.
#[derive(Debug)]
struct CommitRecord {
    commit_event_id: String,
    create: PairedCreate,
}

/// What a `response.done` ended.
#[derive(Debug)]
pub(super) struct Done {
    /// The response's id: the active one's when it had one, else the id named.
    pub id: String,
    /// It had been discarded: nobody is to hear of it.
    pub discarded: bool,
    named: String,
    active: Option<String>,
}

impl Done {
    /// Whether a response recorded under `other` (cut, cancelled, discarded) is this one.
    pub fn is(&self, other: &str) -> bool {
        other == self.named || self.active.as_deref() == Some(other)
    }
}

/// See the module documentation.
#[derive(Debug, Default)]
pub(super) struct ResponseLedger {
    active: Option<String>,
    create_in_flight: Option<String>,
    create_queued: bool,
    cancel_sent_for: Option<String>,
    discard_next_created: bool,
    discarded: Vec<String>,
    last_commit: Option<CommitRecord>,
}

impl ResponseLedger {
    /// The active response's id (`""` when its `response.created` named none).
    pub fn active(&self) -> Option<&str> {
        self.active.as_deref()
    }

    /// Whether a create may go out now: no response is active or being created.
    pub fn can_create(&self) -> bool {
        self.active.is_none() && self.create_in_flight.is_none()
    }

    /// Whether the server owes an answer: a response is active or a create is unanswered.
    pub fn awaits_server(&self) -> bool {
        !self.can_create()
    }

    /// A `response.create` went out under `event_id`.
    pub fn create_sent(&mut self, event_id: String) {
        self.create_in_flight = Some(event_id);
    }

    /// Whether a create waits for the active response to end.
    pub fn create_is_queued(&self) -> bool {
        self.create_queued
    }

    /// A create waits for the active response to end.
    pub fn queue_create(&mut self) {
        self.create_queued = true;
    }

    /// Whether a queued create may go now (one waits and nothing is active); if so it is no
    /// longer queued, and [`Self::queued_create_sent`] says under which id it went.
    pub fn take_queued_create(&mut self) -> bool {
        let go = self.create_queued && self.can_create();
        if go {
            self.create_queued = false;
        }
        go
    }

    /// The queued create went out under `event_id`.
    pub fn queued_create_sent(&mut self, event_id: String) {
        if let Some(CommitRecord { create, .. }) = &mut self.last_commit
            && *create == PairedCreate::Queued
        {
            *create = PairedCreate::Sent(event_id.clone());
        }
        self.create_in_flight = Some(event_id);
    }

    /// An utterance was committed under `commit_event_id`, with `create` asking for its answer.
    pub fn committed(&mut self, commit_event_id: String, create: PairedCreate) {
        self.last_commit = Some(CommitRecord {
            commit_event_id,
            create,
        });
    }

    /// The data channel closed: nothing sent or queued will be answered.
    pub fn channel_closed(&mut self) {
        self.create_in_flight = None;
        self.create_queued = false;
    }

    /// The active response, if one needs a `response.cancel` (none was sent for it yet); it
    /// counts as sent from now on.
    pub fn cancel_due(&mut self) -> Option<String> {
        let active = self.active.clone()?;
        if self.cancel_sent_for.as_deref() == Some(active.as_str()) {
            return None;
        }
        self.cancel_sent_for = Some(active.clone());
        Some(active)
    }

    /// A `response.created` answered the create in flight. Returns the response's id if it
    /// is to be cancelled at once (its utterance was empty): it counts as cancelled and
    /// discarded.
    pub fn created(&mut self, id: String) -> Option<String> {
        self.create_in_flight = None;
        let discard = std::mem::take(&mut self.discard_next_created).then(|| {
            self.discarded.push(id.clone());
            self.cancel_sent_for = Some(id.clone());
            id.clone()
        });
        self.active = Some(id);
        discard
    }

    /// A `response.done` naming `named`. One response is active at a time, so a done that
    /// names none, or an active response whose `response.created` named none (an empty id
    /// either way), ends the active one; with none active, it answers the create in flight
    /// (whose `response.created` was lost) so the next create is not held back.
    pub fn done(&mut self, named: String) -> Done {
        let active = self
            .active
            .take_if(|active| *active == named || active.is_empty() || named.is_empty());
        if active.is_none() && named.is_empty() {
            self.create_in_flight = None;
        }
        let id = active
            .clone()
            .filter(|id| !id.is_empty())
            .unwrap_or_else(|| named.clone());
        let mut done = Done {
            id,
            discarded: false,
            named,
            active,
        };
        if self
            .cancel_sent_for
            .as_deref()
            .is_some_and(|sent| done.is(sent))
        {
            self.cancel_sent_for = None;
        }
        if let Some(at) = self.discarded.iter().position(|d| done.is(d)) {
            self.discarded.remove(at);
            done.discarded = true;
        }
        done
    }

    /// Whether this response was discarded (its output is hidden).
    pub fn is_discarded(&self, response_id: &str) -> bool {
        self.discarded.iter().any(|id| id == response_id)
    }

    /// The server says a response is active already (`conversation_already_has_active_response`)
    /// in answer to the create in flight (`event_id`, or an error naming none): it is asked
    /// again after that response. Returns whether it answered the create.
    pub fn create_crossed_a_response(&mut self, event_id: Option<&str>) -> bool {
        let answers = self.create_in_flight.is_some()
            && (event_id.is_none() || event_id == self.create_in_flight.as_deref());
        if answers {
            self.create_in_flight = None;
            self.create_queued = true;
        }
        answers
    }

    /// The server refused the request `event_id`: a refused create is no longer waited for
    /// (returns whether it was the create in flight).
    pub fn create_refused(&mut self, event_id: &str) -> bool {
        let refused = self.create_in_flight.as_deref() == Some(event_id);
        if refused {
            self.create_in_flight = None;
        }
        refused
    }

    /// A `response.cancel` was refused or found nothing to cancel: none counts as sent.
    pub fn cancel_refused(&mut self) {
        self.cancel_sent_for = None;
    }

    /// The create in flight went unanswered for too long: it is forgotten.
    pub fn create_unanswered(&mut self) {
        self.create_in_flight = None;
    }

    /// The server found the commit `event_id` (or the last one, when the error names none)
    /// empty: the create that went with it is withdrawn, dropped if still queued, discarded
    /// at its `response.created` if already sent.
    pub fn commit_was_empty(&mut self, event_id: Option<&str>) {
        let Some(record) = self.last_commit.take() else {
            return;
        };
        if event_id.is_some_and(|id| id != record.commit_event_id) {
            self.last_commit = Some(record);
            return;
        }
        match record.create {
            PairedCreate::Queued => self.create_queued = false,
            PairedCreate::Sent(create_event_id) => {
                if self.create_in_flight.as_deref() == Some(create_event_id.as_str()) {
                    self.discard_next_created = true;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_create_asked_for_while_a_response_is_active_waits_for_its_done() {
        let mut ledger = ResponseLedger::default();
        ledger.create_sent("evt_1".to_owned());
        assert!(!ledger.can_create(), "one create in flight at a time");
        assert_eq!(ledger.created("resp_1".to_owned()), None);
        ledger.queue_create();
        assert!(!ledger.take_queued_create(), "resp_1 is still active");
        let done = ledger.done("resp_1".to_owned());
        assert_eq!((done.id.as_str(), done.discarded), ("resp_1", false));
        assert!(ledger.take_queued_create(), "the queued create goes now");
        assert!(!ledger.take_queued_create(), "and only once");
    }

    #[test]
    fn the_response_created_for_an_empty_commit_is_cancelled_and_discarded() {
        let mut ledger = ResponseLedger::default();
        ledger.create_sent("evt_create".to_owned());
        ledger.committed(
            "evt_commit".to_owned(),
            PairedCreate::Sent("evt_create".to_owned()),
        );
        ledger.commit_was_empty(Some("evt_other"));
        ledger.commit_was_empty(Some("evt_commit"));
        assert_eq!(
            ledger.created("resp_1".to_owned()),
            Some("resp_1".to_owned())
        );
        assert!(ledger.is_discarded("resp_1"));
        assert_eq!(
            ledger.cancel_due(),
            None,
            "its cancel went out with the discard"
        );
        assert!(ledger.done("resp_1".to_owned()).discarded);
        assert!(!ledger.is_discarded("resp_1"), "forgotten once done");
    }

    #[test]
    fn a_done_that_names_no_response_ends_the_active_one_or_the_unanswered_create() {
        let mut ledger = ResponseLedger::default();
        ledger.create_sent("evt_1".to_owned());
        ledger.created("resp_1".to_owned());
        let done = ledger.done(String::new());
        assert_eq!(done.id, "resp_1");
        assert!(done.is("resp_1") && done.is(""));
        assert!(ledger.can_create());

        ledger.create_sent("evt_2".to_owned());
        ledger.done(String::new());
        assert!(
            ledger.can_create(),
            "the lost response.created no longer holds creates back"
        );
    }

    #[test]
    fn a_cancel_is_due_once_per_active_response_and_again_after_a_refusal() {
        let mut ledger = ResponseLedger::default();
        assert_eq!(ledger.cancel_due(), None, "nothing to cancel");
        ledger.created("resp_1".to_owned());
        assert_eq!(ledger.cancel_due(), Some("resp_1".to_owned()));
        assert_eq!(ledger.cancel_due(), None);
        ledger.cancel_refused();
        assert_eq!(ledger.cancel_due(), Some("resp_1".to_owned()));
    }

    #[test]
    fn a_create_that_crossed_a_response_is_asked_again_after_it() {
        let mut ledger = ResponseLedger::default();
        ledger.create_sent("evt_1".to_owned());
        assert!(!ledger.create_crossed_a_response(Some("evt_other")));
        assert!(ledger.create_crossed_a_response(Some("evt_1")));
        assert!(ledger.can_create());
        assert!(
            ledger.take_queued_create(),
            "queued for after the response it crossed"
        );
    }
}

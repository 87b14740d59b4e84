//! Outside tools in a conversation (those an MCP server serves): what the user allows of each,
//! and the calls waiting for the user's decision.
//!
//! Why here and not in the driver: whether a call runs is the user's policy, and "ask first"
//! is a wait with a deadline (an unanswered card is a denial), which only virtual time tests
//! well. The driver runs what [`crate::Output::RunTool`] asks and reports the outcome; the
//! machine answers the model.

use walkie_openai::{MAX_SESSION_BYTES, Tool};
use walkie_session::turn::{ToolCallRequest, ToolError, TurnConfig};

/// How long a call that asks first waits for the user before it is denied.
pub const APPROVAL_TIMEOUT_MS: u64 = 60_000;

/// What the user allows of a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolPolicy {
    /// Run every call.
    Always,
    /// Show each call and run it only if the user allows it.
    #[default]
    Ask,
    /// Never run it: the model is told the user does not allow it.
    Never,
}

/// A tool served outside the app, as the conversation declares it.
#[derive(Debug, Clone, PartialEq)]
pub struct OutsideTool {
    /// What the model is told (its name is the one calls use).
    pub definition: Tool,
    /// What the user reads: the tool and where it runs ("add, on test-server").
    pub title: String,
    pub policy: ToolPolicy,
}

impl OutsideTool {
    pub fn name(&self) -> &str {
        match &self.definition {
            Tool::Function { name, .. } => name,
            Tool::Other(_) => "",
        }
    }
}

/// The outside tools a call's `session.update` can declare beside the `built_in` ones within
/// [`MAX_SESSION_BYTES`] (every one the server restates must fit a data-channel message), in
/// the order listed, each that still fits; and those left out. Sized as JSON, as sent.
pub(crate) fn fitting(
    turn: &TurnConfig,
    built_in: Vec<Tool>,
    listed: Vec<OutsideTool>,
) -> (Vec<OutsideTool>, Vec<OutsideTool>) {
    let base_bytes = serde_json::to_string(&turn.session_update(built_in, true))
        .map_or(usize::MAX, |text| text.len())
        // With no built-in tool the first one adds the field itself: `,"tools":[]`.
        .saturating_add(r#","tools":[]"#.len());
    let mut used_bytes = base_bytes;
    let (mut kept, mut left_out) = (Vec::new(), Vec::new());
    for tool in listed {
        // The tool and the comma before it.
        let tool_bytes = serde_json::to_string(&tool.definition)
            .map_or(usize::MAX, |text| text.len())
            .saturating_add(1);
        if used_bytes.saturating_add(tool_bytes) <= MAX_SESSION_BYTES {
            used_bytes += tool_bytes;
            kept.push(tool);
        } else {
            left_out.push(tool);
        }
    }
    (kept, left_out)
}

/// A call waiting for the user, as the window shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRequest {
    pub call_id: String,
    /// The tool's title ([`OutsideTool::title`]).
    pub title: String,
    /// The model's arguments.
    pub arguments: serde_json::Value,
    /// When it is denied unless decided (session time).
    pub expires_at_ms: u64,
}

/// What becomes of a call the model made.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Verdict {
    /// Run it now.
    Run(ToolCallRequest),
    /// Ask the user first.
    Ask(ApprovalRequest),
    /// Answer the model's call at once with this error.
    Refuse(String, ToolError),
}

/// How many rounds of tool calls allowed always may run one after another without the user,
/// unless the settings say otherwise: each answer asks for another response, so text a tool
/// answered could otherwise chain calls, or loop and spend, with no click. Past it, the next
/// call asks first.
pub const AUTOMATIC_TOOL_ROUNDS: u32 = 8;

/// The conversation's outside tools and the calls waiting for the user.
#[derive(Debug, Default)]
pub(crate) struct Tools {
    declared: Vec<OutsideTool>,
    waiting: Vec<(ToolCallRequest, ApprovalRequest)>,
    /// Rounds of calls run without asking since the user last spoke, wrote or decided: calls
    /// judged while none of the last round is still running belong to a new round (the calls
    /// of one response come together).
    automatic_rounds: u32,
    /// Calls run without asking whose answers have not come back.
    automatic_running: Vec<String>,
    /// How many rounds may run without asking.
    round_limit: u32,
}

impl Tools {
    pub fn new(declared: Vec<OutsideTool>, round_limit: u32) -> Tools {
        Tools {
            declared,
            round_limit,
            ..Tools::default()
        }
    }

    /// From now on, this many rounds may run without asking.
    pub fn set_round_limit(&mut self, round_limit: u32) {
        self.round_limit = round_limit;
    }

    /// The user spoke, wrote or decided: tools allowed always may run again without asking.
    pub fn user_acted(&mut self) {
        self.automatic_rounds = 0;
    }

    /// The call `call_id` answered (or failed).
    pub fn finished(&mut self, call_id: &str) {
        self.automatic_running.retain(|running| running != call_id);
    }

    pub fn declared(&self) -> &[OutsideTool] {
        &self.declared
    }

    /// What the user's policy makes of a call the model made at `now_ms`.
    pub fn judge(&mut self, request: ToolCallRequest, now_ms: u64) -> Verdict {
        let Some(tool) = self
            .declared
            .iter()
            .find(|tool| tool.name() == request.name)
        else {
            return Verdict::Refuse(
                request.call_id,
                ToolError::UnknownTool { name: request.name },
            );
        };
        let policy = match tool.policy {
            ToolPolicy::Always if self.automatic_running.is_empty() => {
                if self.automatic_rounds >= self.round_limit {
                    ToolPolicy::Ask
                } else {
                    self.automatic_rounds += 1;
                    ToolPolicy::Always
                }
            }
            policy => policy,
        };
        match policy {
            ToolPolicy::Always => {
                self.automatic_running.push(request.call_id.clone());
                Verdict::Run(request)
            }
            ToolPolicy::Never => Verdict::Refuse(
                request.call_id,
                ToolError::Failed {
                    message: "the user does not allow this tool".to_owned(),
                },
            ),
            ToolPolicy::Ask => {
                let approval = ApprovalRequest {
                    call_id: request.call_id.clone(),
                    title: crate::outside_text::outside_text(
                        &tool.title,
                        crate::outside_text::MAX_OUTSIDE_TEXT_CHARS,
                    ),
                    arguments: request.arguments.clone(),
                    expires_at_ms: now_ms.saturating_add(APPROVAL_TIMEOUT_MS),
                };
                self.waiting.push((request, approval.clone()));
                Verdict::Ask(approval)
            }
        }
    }

    /// The user decided on a waiting call: the call to run, or the denial to tell the model.
    /// `None` when no call of this id waits (decided already, expired, or of an ended call).
    pub fn decide(
        &mut self,
        call_id: &str,
        allowed: bool,
    ) -> Option<Result<ToolCallRequest, (String, ToolError)>> {
        let at = self
            .waiting
            .iter()
            .position(|(request, _)| request.call_id == call_id)?;
        let (request, _) = self.waiting.remove(at);
        Some(if allowed {
            Ok(request)
        } else {
            Err((
                request.call_id,
                ToolError::Failed {
                    message: "the user denied this call".to_owned(),
                },
            ))
        })
    }

    /// The calls whose wait ended unanswered by `now_ms`: each is denied.
    pub fn expire(&mut self, now_ms: u64) -> Vec<(String, ToolError)> {
        let (expired, waiting) = std::mem::take(&mut self.waiting)
            .into_iter()
            .partition(|(_, approval)| approval.expires_at_ms <= now_ms);
        self.waiting = waiting;
        expired
            .into_iter()
            .map(|(request, _): (ToolCallRequest, ApprovalRequest)| {
                (
                    request.call_id,
                    ToolError::Failed {
                        message: format!(
                            "the user did not answer within {} s, so the call was denied",
                            APPROVAL_TIMEOUT_MS / 1000
                        ),
                    },
                )
            })
            .collect()
    }

    /// Forgets every waiting call (their session ended); returns their ids.
    pub fn drop_waiting(&mut self) -> Vec<String> {
        std::mem::take(&mut self.waiting)
            .into_iter()
            .map(|(request, _)| request.call_id)
            .collect()
    }

    /// The first call waiting for the user, if any.
    pub fn first_waiting(&self) -> Option<&ApprovalRequest> {
        self.waiting.first().map(|(_, approval)| approval)
    }

    /// When the next waiting call is denied unless decided.
    pub fn next_deadline_ms(&self) -> Option<u64> {
        self.waiting
            .iter()
            .map(|(_, approval)| approval.expires_at_ms)
            .min()
    }
}

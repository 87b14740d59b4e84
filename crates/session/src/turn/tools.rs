//! Function tools: the registry the model's function calls are executed against.
//!
//! Two kinds: a local tool runs inside the controller (below); an outside tool (one an MCP
//! server serves) is only declared here, and a call to it goes out of the controller
//! ([`ControllerOutput::ToolCall`](crate::turn::ControllerOutput::ToolCall)) to be decided and
//! run by the caller, whose answer comes back in
//! [`TurnInput::ToolFinished`](crate::turn::TurnInput::ToolFinished).
//!
//! Why tools are synchronous and take a [`ToolContext`]: the controller is sans-IO, so a tool
//! runs inside the input that delivered its call and must not read a clock or touch the world.
//! What a tool needs from outside (the wall-clock time, for the built-in [`CurrentLocalTime`])
//! comes in as an input ([`crate::turn::TurnInput::WallClock`]) and reaches the tool here.

use serde_json::{Value, json};
use walkie_openai::Tool;

use crate::error::PushError;
use crate::event::{
    FunctionToolCallEvent, FunctionToolResultEvent, Part, SessionEvent, ToolCallPart, ToolOutcome,
    ToolResult, ToolReturnPart,
};
use crate::session::Session;

/// The wall-clock reading the shell supplies: Unix time and the local UTC offset, sampled at a
/// known session time. The controller advances it by the session time passed since.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WallClock {
    /// Milliseconds since the Unix epoch, UTC.
    pub unix_ms: i64,
    /// The local offset from UTC, in minutes (e.g. 120 for UTC+2).
    pub utc_offset_minutes: i32,
}

/// What a tool may know about the moment it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolContext {
    /// Session time of the call.
    pub now_ms: u64,
    /// The wall clock at the call, when the shell has supplied one.
    pub wall_clock: Option<WallClock>,
}

/// Why a tool produced no value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The model's arguments are not the JSON the tool expects.
    #[error("the arguments are not valid: {reason}")]
    InvalidArguments {
        /// What was wrong.
        reason: String,
    },
    /// No tool of that name is registered.
    #[error("there is no local tool named {name:?}")]
    UnknownTool {
        /// The name the model used.
        name: String,
    },
    /// The tool needs the wall clock and the shell has not supplied one.
    #[error("the local time is not known yet")]
    NoWallClock,
    /// The tool ran and failed.
    #[error("{message}")]
    Failed {
        /// What went wrong.
        message: String,
    },
}

/// A registry refusal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a tool named {name:?} is already registered")]
pub struct DuplicateTool {
    /// The name taken twice.
    pub name: String,
}

/// A function the model may call, executed locally.
pub trait LocalTool: Send + std::fmt::Debug {
    /// The name the model calls it by.
    fn name(&self) -> &str;
    /// The definition sent in `session.update` (`tools`).
    fn definition(&self) -> Tool;
    /// Run the call with the model's (already parsed) arguments.
    fn call(&self, arguments: &Value, context: &ToolContext) -> Result<Value, ToolError>;
}

/// The function tools, by name: local ones, and outside ones by their definition.
#[derive(Debug, Default)]
pub struct ToolRegistry {
    tools: Vec<Box<dyn LocalTool>>,
    outside: Vec<Tool>,
}

impl ToolRegistry {
    /// A registry with no tools.
    pub fn empty() -> Self {
        Self::default()
    }

    /// A registry with the built-in tools ([`CurrentLocalTime`]).
    pub fn with_builtins() -> Self {
        Self {
            tools: vec![Box::new(CurrentLocalTime)],
            outside: Vec::new(),
        }
    }

    /// Add a tool; a name may be registered once.
    pub fn register(&mut self, tool: Box<dyn LocalTool>) -> Result<(), DuplicateTool> {
        if self.has(tool.name()) {
            return Err(DuplicateTool {
                name: tool.name().to_owned(),
            });
        }
        self.tools.push(tool);
        Ok(())
    }

    /// Declare a tool run outside the controller (see the module docs); a name may be
    /// registered once, and a definition the registry cannot name is refused as a duplicate
    /// of the empty name.
    pub fn register_outside(&mut self, definition: Tool) -> Result<(), DuplicateTool> {
        let name = tool_name(&definition).unwrap_or_default().to_owned();
        if name.is_empty() || self.has(&name) {
            return Err(DuplicateTool { name });
        }
        self.outside.push(definition);
        Ok(())
    }

    /// Whether a tool of this name is run outside the controller.
    pub fn is_outside(&self, name: &str) -> bool {
        self.outside
            .iter()
            .any(|definition| tool_name(definition) == Some(name))
    }

    fn has(&self, name: &str) -> bool {
        self.get(name).is_some() || self.is_outside(name)
    }

    /// The tool of this name.
    pub fn get(&self, name: &str) -> Option<&dyn LocalTool> {
        self.tools
            .iter()
            .find(|tool| tool.name() == name)
            .map(|tool| tool.as_ref())
    }

    /// The definitions for `session.update`: the local tools, then the outside ones, each in
    /// registration order.
    pub fn definitions(&self) -> Vec<Tool> {
        self.tools
            .iter()
            .map(|tool| tool.definition())
            .chain(self.outside.iter().cloned())
            .collect()
    }

    /// Run a call: parse the arguments, find the tool, call it. `Ok(None)`-free by design: every
    /// call ends in a value or a [`ToolError`] that is told to the model.
    pub fn execute(
        &self,
        name: &str,
        arguments: &str,
        context: &ToolContext,
    ) -> Result<Value, ToolError> {
        let tool = self.get(name).ok_or_else(|| ToolError::UnknownTool {
            name: name.to_owned(),
        })?;
        let arguments = parse_arguments(arguments)?;
        tool.call(&arguments, context)
    }
}

fn tool_name(definition: &Tool) -> Option<&str> {
    match definition {
        Tool::Function { name, .. } => Some(name),
        Tool::Other(_) => None,
    }
}

/// The model's argument text as JSON; an empty text is an empty object.
pub(crate) fn parse_arguments(arguments: &str) -> Result<Value, ToolError> {
    if arguments.trim().is_empty() {
        return Ok(json!({}));
    }
    serde_json::from_str(arguments).map_err(|error| ToolError::InvalidArguments {
        reason: error.to_string(),
    })
}

/// The built-in tool: the user's current local date and time.
#[derive(Debug, Clone, Copy, Default)]
pub struct CurrentLocalTime;

/// The name the model calls [`CurrentLocalTime`] by.
pub const CURRENT_LOCAL_TIME_TOOL: &str = "get_current_local_time";

impl LocalTool for CurrentLocalTime {
    fn name(&self) -> &str {
        CURRENT_LOCAL_TIME_TOOL
    }

    fn definition(&self) -> Tool {
        Tool::Function {
            name: CURRENT_LOCAL_TIME_TOOL.to_owned(),
            description: Some("The user's current local date and time".to_owned()),
            parameters: json!({"type": "object", "properties": {}, "required": []}),
        }
    }

    fn call(&self, _arguments: &Value, context: &ToolContext) -> Result<Value, ToolError> {
        let clock = context.wall_clock.ok_or(ToolError::NoWallClock)?;
        let local = LocalDateTime::from_wall_clock(clock).ok_or_else(|| ToolError::Failed {
            message: format!("the wall clock {clock:?} is out of the calendar's range"),
        })?;
        Ok(json!({
            "local_time": local.to_rfc3339(),
            "weekday": local.weekday_name(),
            "utc_offset_minutes": clock.utc_offset_minutes,
        }))
    }
}

/// A local calendar date and time to the second (proleptic Gregorian).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalDateTime {
    /// The year.
    pub year: i64,
    /// 1–12.
    pub month: u32,
    /// 1–31.
    pub day: u32,
    /// 0–23.
    pub hour: u32,
    /// 0–59.
    pub minute: u32,
    /// 0–59.
    pub second: u32,
    /// 0 = Sunday … 6 = Saturday.
    pub weekday: u32,
    /// The local offset from UTC, in minutes.
    pub utc_offset_minutes: i32,
}

const MS_PER_DAY: i64 = 86_400_000;
const WEEKDAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

impl LocalDateTime {
    /// The local date and time of a wall-clock reading; `None` when it overflows.
    pub fn from_wall_clock(clock: WallClock) -> Option<Self> {
        let local_ms = clock
            .unix_ms
            .checked_add(i64::from(clock.utc_offset_minutes).checked_mul(60_000)?)?;
        let days = local_ms.div_euclid(MS_PER_DAY);
        let ms_of_day = local_ms.rem_euclid(MS_PER_DAY);
        let (year, month, day) = civil_from_days(days)?;
        let seconds_of_day = (ms_of_day / 1000) as u32;
        Some(Self {
            year,
            month,
            day,
            hour: seconds_of_day / 3600,
            minute: seconds_of_day / 60 % 60,
            second: seconds_of_day % 60,
            // 1970-01-01 was a Thursday.
            weekday: (days.rem_euclid(7) as u32 + 4) % 7,
            utc_offset_minutes: clock.utc_offset_minutes,
        })
    }

    /// `2026-05-12T10:42:07+02:00`.
    pub fn to_rfc3339(&self) -> String {
        let sign = if self.utc_offset_minutes < 0 {
            '-'
        } else {
            '+'
        };
        let offset = self.utc_offset_minutes.unsigned_abs();
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}{sign}{:02}:{:02}",
            self.year,
            self.month,
            self.day,
            self.hour,
            self.minute,
            self.second,
            offset / 60,
            offset % 60
        )
    }

    /// `Tuesday`.
    pub fn weekday_name(&self) -> &'static str {
        WEEKDAYS[self.weekday as usize % 7]
    }
}

/// Days since 1970-01-01 to (year, month, day), after Howard Hinnant's `civil_from_days`.
fn civil_from_days(days: i64) -> Option<(i64, u32, u32)> {
    let z = days.checked_add(719_468)?;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_index + 2) / 5 + 1) as u32;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    } as u32;
    let year = year_of_era.checked_add(era.checked_mul(400)?)?;
    Some((if month <= 2 { year + 1 } else { year }, month, day))
}

/// What a tool may know when it runs at `now_ms`: the wall clock sampled at some earlier
/// session time, moved on to `now_ms`.
pub(super) fn tool_context(now_ms: u64, sampled: Option<(u64, WallClock)>) -> ToolContext {
    ToolContext {
        now_ms,
        wall_clock: sampled.map(|(sampled_at_ms, clock)| WallClock {
            unix_ms: clock.unix_ms.saturating_add(
                i64::try_from(now_ms.saturating_sub(sampled_at_ms)).unwrap_or(i64::MAX),
            ),
            utc_offset_minutes: clock.utc_offset_minutes,
        }),
    }
}

/// What a tool's run gives the model: its value, or its error as `{"error": …}`, and which of
/// the two it was.
pub(super) fn tool_answer(result: Result<Value, ToolError>) -> (Value, ToolOutcome) {
    match result {
        Ok(value) => (fitting_one_message(value), ToolOutcome::Success),
        Err(error) => (
            fitting_one_message(json!({ "error": error.to_string() })),
            ToolOutcome::Failed,
        ),
    }
}

/// The most a tool's answer takes in its `function_call_output`, as the JSON text it is sent as
/// (escaped into the event): one data-channel message
/// ([`MAX_ITEM_EVENT_BYTES`](crate::turn::MAX_ITEM_EVENT_BYTES)) less room for the event around
/// it. A bigger answer would fail the send, which drops the call.
pub const MAX_TOOL_ANSWER_BYTES: usize = crate::turn::MAX_ITEM_EVENT_BYTES - 1024;

/// A tool's answer as the model gets it: whole when it fits one message; else cut to what fits
/// (a text answer's text, any other answer's JSON text), in an object that says so
/// (`truncated`, a `note` in words, the `partial` answer), which the transcript shows too.
fn fitting_one_message(answer: Value) -> Value {
    let sent_bytes = |value: &Value| {
        serde_json::to_string(&value.to_string()).map_or(usize::MAX, |escaped| escaped.len())
    };
    if sent_bytes(&answer) <= MAX_TOOL_ANSWER_BYTES {
        return answer;
    }
    let text = match answer {
        Value::String(text) => text,
        other => other.to_string(),
    };
    let note = format!(
        "Walkie cut this answer: it was {} KiB, and one message to the model holds {} KiB; \
         the first part follows.",
        text.len().div_ceil(1024),
        MAX_TOOL_ANSWER_BYTES / 1024
    );
    let cut =
        |length: usize| json!({ "truncated": true, "note": note, "partial": &text[..length] });
    // The longest prefix (on a character boundary) whose answer fits.
    let (mut fits, mut too_long) = (0, text.len());
    while too_long - fits > 1 {
        let mut middle = fits + (too_long - fits) / 2;
        while !text.is_char_boundary(middle) {
            middle -= 1;
        }
        if middle <= fits {
            break;
        }
        if sent_bytes(&cut(middle)) <= MAX_TOOL_ANSWER_BYTES {
            fits = middle;
        } else {
            too_long = middle;
        }
    }
    cut(fits)
}

/// The session's `FunctionToolResultEvent` for what the call `call_id` of `tool_name` gave.
pub(super) fn tool_result_event(
    call_id: String,
    tool_name: String,
    content: Value,
    outcome: ToolOutcome,
) -> SessionEvent {
    SessionEvent::FunctionToolResult(Box::new(FunctionToolResultEvent {
        result: ToolResult::ToolReturn(ToolReturnPart {
            tool_name,
            tool_call_id: call_id,
            content,
            outcome,
        }),
    }))
}

/// Shows a call the model made, the same way on every family: its tool-call part (started
/// and ended at once) and the session's `FunctionToolCallEvent`, saying whether its arguments
/// parse. Returns them parsed; what the session refused is pushed to `refused`.
pub(super) fn show_tool_call(
    session: &mut Session,
    call: &ToolCallPart,
    now_ms: u64,
    refused: &mut Vec<PushError>,
) -> Result<Value, ToolError> {
    match session.start_part(Part::tool_call(call.clone()), now_ms) {
        Ok(index) => {
            if let Err(error) = session.end_part(index, now_ms) {
                refused.push(error);
            }
        }
        Err(error) => refused.push(error),
    }
    let parsed = parse_arguments(&call.args);
    let shown = SessionEvent::FunctionToolCall(Box::new(FunctionToolCallEvent {
        part: call.clone(),
        args_valid: Some(parsed.is_ok()),
    }));
    if let Err(error) = session.push(shown, now_ms) {
        refused.push(error);
    }
    parsed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_answer_too_long_for_one_message_is_cut_on_a_character_and_says_how_big_it_was() {
        let answer = "é\"\n".repeat(200_000);
        let (cut, outcome) = tool_answer(Ok(Value::String(answer.clone())));
        assert_eq!(outcome, ToolOutcome::Success);
        let sent = serde_json::to_string(&cut.to_string()).expect("JSON");
        assert!(sent.len() <= MAX_TOOL_ANSWER_BYTES, "{} bytes", sent.len());
        assert!(
            sent.len() > MAX_TOOL_ANSWER_BYTES - 64,
            "as much as fits: {} bytes",
            sent.len()
        );
        assert_eq!(cut["truncated"], true);
        let note = cut["note"].as_str().expect("a note");
        assert!(note.contains("it was 782 KiB"), "{note}");
        let partial = cut["partial"].as_str().expect("the first part");
        assert!(answer.starts_with(partial), "a prefix of the text itself");
        let small = tool_answer(Ok(Value::String("5".to_owned()))).0;
        assert_eq!(
            small,
            Value::String("5".to_owned()),
            "an answer that fits is given whole"
        );
    }

    fn at(unix_ms: i64, utc_offset_minutes: i32) -> String {
        LocalDateTime::from_wall_clock(WallClock {
            unix_ms,
            utc_offset_minutes,
        })
        .map(|t| format!("{} {}", t.to_rfc3339(), t.weekday_name()))
        .unwrap_or_default()
    }

    #[test]
    fn the_epoch_was_a_thursday() {
        assert_eq!(at(0, 0), "1970-01-01T00:00:00+00:00 Thursday");
    }

    #[test]
    fn a_known_instant_reads_as_its_local_time() {
        // 2026-05-12T08:42:07Z, a Tuesday, seen from UTC+2.
        assert_eq!(
            at(1_778_575_327_000, 120),
            "2026-05-12T10:42:07+02:00 Tuesday"
        );
        assert_eq!(at(-1000, -90), "1969-12-31T22:29:59-01:30 Wednesday");
    }

    #[test]
    fn an_extreme_clock_is_refused_not_a_panic() {
        assert_eq!(at(i64::MAX, 60), "");
        assert_eq!(at(i64::MIN, -60), "");
    }
}

//! What the status line shows: the conversation's state and a sentence about it, and every
//! sentence the user may read there.
//!
//! The webview renders these as they come and derives nothing itself, so the state a user reads
//! is always the state the machine is in.

use serde::Serialize;

use self::headline::*;

/// The first words of a problem's sentence, which the header shows alone; the rest of the
/// sentence is the reason, for the banner. The sentences here that open with one are built from
/// these, and [`StatusEvent::new`] names the one a sentence opens with.
pub mod headline {
    pub const NOT_CONNECTED: &str = "Not connected";
    pub const CALL_GOES_ON: &str = "Call goes on";
    pub const NOT_SAVING: &str = "Not saving";
    pub const SAVING_AGAIN: &str = "Saving again";
    pub const BUDGET_SPENT: &str = "Budget spent";
    pub const NOT_SENT: &str = "Not sent";
    pub const NOT_AVAILABLE: &str = "Not available";
    pub const A_TOOL_FAILED: &str = "A tool failed";
    pub const BUDGET_NEARLY_SPENT: &str = "Budget 80 % spent";
    /// The settings' notices (walkie-settings builds them): a model moved off one that shuts
    /// down, or kept by the user's choice.
    pub const NEW_MODEL: &str = "New model";
    pub const NEW_MODELS: &str = "New models";
    pub const MODEL_SHUTS_DOWN: &str = "Model shuts down";

    /// Every headline.
    pub const ALL: [&str; 12] = [
        NOT_CONNECTED,
        CALL_GOES_ON,
        NOT_SAVING,
        SAVING_AGAIN,
        BUDGET_SPENT,
        NOT_SENT,
        NOT_AVAILABLE,
        A_TOOL_FAILED,
        BUDGET_NEARLY_SPENT,
        NEW_MODEL,
        NEW_MODELS,
        MODEL_SHUTS_DOWN,
    ];
}

/// Where the conversation stands, as the status line names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ConnectionState {
    /// No session; the user can still read history and change settings.
    NotConnected,
    /// A session is being set up.
    Connecting,
    /// Connected and configured: the key works.
    Ready,
    /// The microphone is being sent.
    Listening,
    /// A reply is being generated and is not audible yet.
    Thinking,
    /// The assistant is audible.
    Speaking,
    /// The connection dropped and may come back.
    Reconnecting,
    /// Something failed; the detail says what and what to do.
    Error,
}

/// What the user can do about a status that is a problem: the one action the window offers
/// beside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StatusAction {
    /// The settings are at fault (the key, the address, the model): calling again fails the
    /// same way until they change.
    OpenSettings,
    /// Calling again may work (the network, the provider's load, a dropped call).
    TryAgain,
    /// Nothing is to be done: the call went on; the user has read it.
    Dismiss,
}

/// One change of the status line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusEvent {
    pub state: ConnectionState,
    /// A sentence for the user: what happened and, when it matters, what to do.
    pub detail: String,
    /// For a sentence that opens with one of the [`headline`]s: that headline, which the
    /// header shows alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub headline: Option<&'static str>,
    /// The rest of such a sentence, after the headline and its colon: the banner's text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// For a problem, what to do about it; `None` when nothing is wrong.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<StatusAction>,
    /// For a problem, the technical account behind the sentence (the error as the library
    /// gave it), for "Details…" and a bug report; never a secret.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<String>,
    /// A call is being placed (or placed again) and Cancel stops it: the window offers Cancel
    /// in place of Connect. Left out of the JSON when false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cancellable: bool,
}

impl StatusEvent {
    pub fn new(state: ConnectionState, detail: impl Into<String>) -> Self {
        let detail = detail.into();
        let headline = headline::ALL.into_iter().find(|headline| {
            detail
                .strip_prefix(headline)
                .is_some_and(|rest| rest.starts_with(": "))
        });
        Self {
            state,
            reason: headline.map(|headline| detail[headline.len() + 2..].to_owned()),
            headline,
            detail,
            action: None,
            details: None,
            cancellable: false,
        }
    }

    /// The same status, with the technical account behind it.
    pub fn with_details(mut self, details: impl Into<String>) -> Self {
        self.details = Some(details.into());
        self
    }

    /// The same status, offering `action`.
    pub fn with_action(mut self, action: StatusAction) -> Self {
        self.action = Some(action);
        self
    }

    /// The same status, for an attempt to call that Cancel stops.
    pub fn cancellable(mut self) -> Self {
        self.cancellable = true;
        self
    }

    /// A call is being placed to the provider named `provider_label`; Cancel stops it.
    pub fn connecting(provider_label: &str) -> Self {
        Self::new(
            ConnectionState::Connecting,
            format!("Connecting to {provider_label}…"),
        )
        .cancellable()
    }

    /// There is no call, for this reason (a phrase: "the provider closed the call"); calling
    /// again may work.
    pub fn not_connected(reason: &str) -> Self {
        Self::new(
            ConnectionState::Error,
            format!("{NOT_CONNECTED}: {reason}. Press Connect to try again."),
        )
        .with_action(StatusAction::TryAgain)
    }

    /// There is no call until the settings change, for this reason (a phrase that says what
    /// to change: "no API key for OpenAI: add one in Settings").
    pub fn needs_settings(reason: &str) -> Self {
        Self::new(
            ConnectionState::Error,
            format!("{NOT_CONNECTED}: {reason}."),
        )
        .with_action(StatusAction::OpenSettings)
    }

    /// The conversation spent its budget and its call ended after the last reply; `unsent` are
    /// messages the user typed meanwhile, kept behind Details… so they can be copied.
    pub fn budget_spent(spent_usd: f64, budget_usd: f64, unsent: &[String]) -> Self {
        let status = Self::new(
            ConnectionState::Error,
            sentence::budget_spent(spent_usd, budget_usd, unsent.len()),
        )
        .with_action(StatusAction::OpenSettings);
        if unsent.is_empty() {
            status
        } else {
            status.with_details(unsent.join("\n\n"))
        }
    }

    /// The provider `provider_label` refused the call or could not be reached; `sentence`
    /// says what went wrong and what to do next. A sentence that names the provider itself
    /// ("OpenAI refused the API key: …") is not framed by a second naming.
    pub fn call_refused(provider_label: &str, sentence: &str) -> Self {
        let detail = if !provider_label.is_empty() && sentence.starts_with(provider_label) {
            format!("{NOT_CONNECTED}: {sentence}")
        } else {
            format!("{NOT_CONNECTED}: could not connect to {provider_label}. {sentence}")
        };
        Self::new(ConnectionState::Error, detail).with_action(StatusAction::OpenSettings)
    }

    /// The provider asked to wait `wait` before the next call (a 429's `Retry-After`).
    pub fn waiting_to_dial(wait: std::time::Duration) -> Self {
        Self::new(
            ConnectionState::Connecting,
            format!(
                "The provider asked Walkie to wait: calling again in {} s…",
                wait.as_millis().div_ceil(1000)
            ),
        )
    }

    /// The user hung up (`walkie --hang-up`): no call until they ask for one.
    pub fn hung_up() -> Self {
        Self::new(
            ConnectionState::NotConnected,
            "Hung up. Press Connect to call again.",
        )
    }

    /// The key was pressed while there is no call.
    pub fn press_while_not_connected() -> Self {
        Self::new(
            ConnectionState::NotConnected,
            format!("{NOT_CONNECTED}: press Connect before talking."),
        )
    }

    /// A typed message was sent while there is no call: it waits for the next one.
    pub fn text_while_not_connected() -> Self {
        Self::new(
            ConnectionState::NotConnected,
            format!("{NOT_CONNECTED}: your message goes out with the next call; press Connect."),
        )
    }

    /// The connection dropped and may come back.
    pub fn reconnecting() -> Self {
        Self::new(
            ConnectionState::Reconnecting,
            "The connection dropped; trying to get it back…",
        )
        .cancellable()
    }

    /// The first call was refused for a reason that may pass, `sentence`; attempt `attempt` of
    /// `max_attempts` to call again is waiting or under way.
    pub fn dialing_again(attempt: u32, max_attempts: u32, sentence: &str) -> Self {
        Self::new(
            ConnectionState::Reconnecting,
            format!("Calling again (attempt {attempt} of {max_attempts})… {sentence}"),
        )
        .cancellable()
    }

    /// The call dropped; attempt `attempt` of `max_attempts` to call again is under way or
    /// waiting. `reason` is a phrase ("the provider closed the call").
    pub fn redialing(attempt: u32, max_attempts: u32, reason: &str) -> Self {
        Self::new(
            ConnectionState::Reconnecting,
            format!("Reconnecting… (attempt {attempt} of {max_attempts}): {reason}."),
        )
        .cancellable()
    }

    /// The session is being renewed before the provider's cap of `session_limit_ms` (a new
    /// call carries the conversation on).
    pub fn renewing(provider_label: &str, session_limit_ms: u64) -> Self {
        let limit = match (session_limit_ms / 60_000, session_limit_ms % 60_000) {
            (1, 0) => "1 minute".to_owned(),
            (minutes, 0) => format!("{minutes} minutes"),
            _ => format!("{} seconds", session_limit_ms.div_ceil(1000)),
        };
        Self::new(
            ConnectionState::Connecting,
            format!(
                "Renewing the session with {provider_label} (a session lasts at most {limit})…"
            ),
        )
    }

    /// The conversation's task stopped unexpectedly; Connect starts a new one.
    pub fn stopped() -> Self {
        Self::not_connected("the conversation stopped unexpectedly")
    }
}

/// The sentences of the status line while connected.
pub mod sentence {
    use super::headline::*;
    use walkie_session::RealtimeSessionErrorEvent;
    use walkie_session::turn::{PressMode, UiHint};

    use super::ConnectionState;
    use walkie_session::DeviceDirection;

    /// What the status line says in `state` when no hint is shown, its instructions those of
    /// how the key works (`press`: hold or toggle; `None`, hands-free).
    pub fn default(
        state: ConnectionState,
        provider_label: &str,
        press: Option<PressMode>,
    ) -> String {
        let hands_free = press.is_none();
        let toggle = press == Some(PressMode::Toggle);
        match state {
            ConnectionState::Connecting => {
                format!("Setting up the session with {provider_label}…")
            }
            ConnectionState::Ready if hands_free => {
                format!("Ready ({provider_label}): just talk.")
            }
            ConnectionState::Ready if toggle => {
                format!("Ready ({provider_label}): press Space or tap the button to talk.")
            }
            ConnectionState::Ready => {
                format!("Ready ({provider_label}): hold Space or the button to talk.")
            }
            // Hands-free listens all the time: the provider answers when the user pauses.
            ConnectionState::Listening if hands_free => {
                format!("Listening ({provider_label}): just talk; Walkie answers when you pause.")
            }
            ConnectionState::Listening if toggle => "Listening… press again to send.".to_owned(),
            ConnectionState::Listening => "Listening… release to send.".to_owned(),
            ConnectionState::Thinking => "Thinking…".to_owned(),
            ConnectionState::Speaking => "Speaking… press to interrupt.".to_owned(),
            ConnectionState::NotConnected => "Not connected.".to_owned(),
            ConnectionState::Reconnecting => "Reconnecting…".to_owned(),
            ConnectionState::Error => "Something went wrong.".to_owned(),
        }
    }

    /// The provider paused inference after its idle timeout, shown while the call is idle.
    pub fn paused() -> &'static str {
        "Paused: say something to wake it."
    }

    /// The sentence for a controller hint; `None` for a hint that needs no words.
    pub fn hint(hint: &UiHint) -> Option<String> {
        Some(match hint {
            UiHint::Ready => return None,
            UiHint::NotReady => "Still setting up: try again in a moment.".to_owned(),
            UiHint::PressTooShort { min_press_ms, .. } => format!(
                "Too short to send: hold the key while you speak (at least {min_press_ms} ms)."
            ),
            UiHint::ReleasedAutomatically { .. } => {
                "The key was held too long, so Walkie sent what it had.".to_owned()
            }
            UiHint::NothingHeard => "Nothing was heard: no audio reached the provider.".to_owned(),
            UiHint::SessionEndingSoon { remaining_ms } => format!(
                "The session ends in {} minutes (providers allow 60).",
                remaining_ms.div_ceil(60_000)
            ),
            UiHint::SessionLimitReached => {
                "The session reached its 60-minute limit: press Connect for a new one.".to_owned()
            }
            UiHint::TextTooLong { max_bytes } => format!(
                "{NOT_SENT}: a typed message holds at most {} KiB; shorten it or send it in parts.",
                max_bytes / 1024
            ),
            // The state of the session, not news of one press: see [`paused`].
            UiHint::Paused | UiHint::Resumed => return None,
            UiHint::TypedMessagesNotTaken => {
                format!("{NOT_SENT}: this provider takes speech only; say it instead.")
            }
            UiHint::PictureTooLarge { bytes, max_bytes } => format!(
                "{NOT_SENT}: a picture takes {} KiB where a message holds {} KiB; attach it again.",
                bytes.div_ceil(1024),
                max_bytes / 1024
            ),
        })
    }

    /// What the status line says of a provider's error that leaves the call going (most do);
    /// `None` for those that have words of their own ([`UiHint::NothingHeard`]) or that the
    /// controller settles by itself (a create or a cancel that crossed a response).
    pub fn provider_notice(error: &RealtimeSessionErrorEvent) -> Option<String> {
        match error.error_type.as_deref() {
            Some("undecodable_server_event") => {
                return Some(format!(
                    "{CALL_GOES_ON}: the provider sent a message Walkie could not read."
                ));
            }
            // The controller's own bound on a message, not a refusal.
            Some("transcript_cut") => {
                return Some(format!(
                    "{CALL_GOES_ON}: the provider sent more text for one message than Walkie \
                     keeps ({} KiB), so the rest was left out.",
                    walkie_session::turn::MAX_TRANSCRIPT_BYTES / 1024
                ));
            }
            // The controller's own watchdog, not a refusal.
            Some("turn_watchdog") => {
                return Some(format!(
                    "{CALL_GOES_ON}: the provider went silent on a reply, so Walkie ended it."
                ));
            }
            _ => {}
        }
        match error.code.as_deref() {
            Some(
                "input_audio_buffer_commit_empty"
                | "conversation_already_has_active_response"
                | "response_cancel_not_active",
            ) => None,
            _ => Some(format!(
                "{CALL_GOES_ON}: the provider refused a request ({}).",
                crate::outside_text::outside_text(
                    error.code.as_deref().unwrap_or("no code given"),
                    crate::outside_text::MAX_OUTSIDE_TEXT_CHARS
                )
            )),
        }
    }

    pub fn device_fell_back(direction: DeviceDirection, using: &str, reason: &str) -> String {
        format!("The chosen {direction} is not available ({reason}); using {using}.")
    }

    pub fn device_changed(direction: DeviceDirection, using: &str) -> String {
        format!("Now using {using} as the {direction}.")
    }

    pub fn device_unavailable(direction: DeviceDirection, reason: &str) -> String {
        format!("No {direction} can be opened: {reason}.")
    }

    pub fn not_saving(reason: &str) -> String {
        format!("{NOT_SAVING}: {reason}.")
    }

    /// Saving works again after it failed; `lost_audio_ms` of audio could not be held
    /// meanwhile.
    pub fn saving_resumed(lost_audio_ms: u64) -> String {
        if lost_audio_ms == 0 {
            return format!("{SAVING_AGAIN}: the conversation so far is on disk.");
        }
        format!(
            "{SAVING_AGAIN}: the conversation so far is on disk, but for {} s of audio Walkie \
             could not hold while the disk was full.",
            lost_audio_ms.div_ceil(1000)
        )
    }

    /// New settings asked for a call to `new_provider`; the call with `current_provider`
    /// goes on until it answers.
    pub fn new_call_dialling(new_provider: &str, current_provider: &str) -> String {
        format!(
            "Connecting to {new_provider} with the new settings; {current_provider} answers \
             until then."
        )
    }

    /// The call the new settings asked for (to `new_provider`) failed, so the call with
    /// `current_provider` goes on; `why` says what went wrong and what to do (a sentence, or
    /// a phrase from the settings' own checks).
    pub fn new_call_refused(new_provider: &str, current_provider: &str, why: &str) -> String {
        let mut why = why.trim().to_owned();
        if let Some(first) = why.chars().next() {
            why.replace_range(..first.len_utf8(), &first.to_uppercase().to_string());
        }
        if !why.ends_with(['.', '!', '?']) {
            why.push('.');
        }
        format!(
            "{CALL_GOES_ON}: the new settings' call to {new_provider} failed, so \
             {current_provider} still answers. {why}"
        )
    }

    /// A reply has been awaited for [`crate::SLOW_REPLY_MS`] with nothing audible yet.
    pub fn thinking_slowly() -> String {
        "Thinking… the provider is taking longer than usual (the network or the provider is \
         slow)."
            .to_owned()
    }

    /// The user sent a typed message while the call is being placed or replaced.
    pub fn text_waits_for_the_call() -> String {
        "Your message goes out once the call is back.".to_owned()
    }

    /// A call of an outside tool waits for the user's decision (the card has the buttons).
    pub fn tool_waits_for_you(title: &str) -> String {
        format!("Walkie asks to use {title}: choose Allow or Deny in its card.")
    }

    /// The conversation goes without some tools: servers that could not be started
    /// (`servers_missing`, each problem naming its server), servers used without some of their
    /// tools (`servers_cut`, likewise) and tools left out as all would not fit in a session
    /// (`left_out`, their titles). The sentence, and the details behind it; `None` when it has
    /// every tool.
    pub fn tools_unavailable(
        servers_missing: &[String],
        servers_cut: &[String],
        left_out: &[String],
    ) -> Option<(String, String)> {
        let mut details: Vec<String> = servers_missing.to_vec();
        details.extend(servers_cut.iter().cloned());
        if !left_out.is_empty() {
            details.push(format!(
                "Left out, as all would not fit in one call: {}.",
                left_out.join("; ")
            ));
        }
        let sentence = match (servers_missing, left_out.len()) {
            ([], 0) => match servers_cut {
                [] => return None,
                [one] => format!(
                    "Some tools left out: {}. Its other tools are used.",
                    one.trim_end_matches('.')
                ),
                _ => "Some tools are left out (details below); the conversation goes on with \
                      the rest. Check the tool servers in Settings."
                    .to_owned(),
            },
            ([one], 0) if servers_cut.is_empty() => format!(
                "{NOT_AVAILABLE}: {}. Its tools are left out of this conversation.",
                one.trim_end_matches('.')
            ),
            ([], count) if servers_cut.is_empty() => format!(
                "{count} tool{} left out: all would not fit in one call (details below). Use \
                 fewer tool servers in Settings.",
                if count == 1 { " is" } else { "s are" }
            ),
            _ => "Some tools are not available (details below); the conversation goes on \
                  without them. Check the tool servers in Settings."
                .to_owned(),
        };
        Some((sentence, details.join("\n")))
    }

    /// A call of an outside tool failed (`failure` says how); the model was told.
    pub fn tool_failed(failure: &str) -> String {
        format!("{A_TOOL_FAILED}: {failure}. The assistant was told and goes on.")
    }

    /// The user took the recording back (Escape) before it was sent.
    pub fn press_cancelled() -> String {
        format!("{NOT_SENT}: the recording was cancelled.")
    }

    /// The key was pressed while a dropped call is being dialled again: a press still held
    /// when the call is back starts listening then.
    pub fn press_while_redialing() -> String {
        "Not heard yet: Walkie listens once the call is back, or press Cancel.".to_owned()
    }

    /// Why the conversation ended after `attempts` redials failed (a phrase for
    /// [`super::StatusEvent::not_connected`]).
    pub fn redial_gave_up(reason: &str, attempts: u32) -> String {
        format!("{reason}, and {attempts} attempts to call again failed")
    }

    /// A dollar amount as small amounts need it: four decimals under a cent, three under a
    /// dollar (the window's spending line words it the same way).
    pub fn dollars(usd: f64) -> String {
        let amount = usd.max(0.0);
        let decimals = if amount < 0.01 {
            4
        } else if amount < 1.0 {
            3
        } else {
            2
        };
        format!("${amount:.decimals$}")
    }

    /// A budget as the user typed it: in cents (one is the least there is).
    fn budget(usd: f64) -> String {
        format!("${usd:.2}")
    }

    /// Under a tenth of a rate limit (`requests` or `tokens`) is left.
    pub fn rate_limit_nearly_spent(
        provider_label: &str,
        name: Option<&str>,
        reset_seconds: Option<f64>,
    ) -> String {
        let provider = match provider_label {
            "" => "The provider's".to_owned(),
            label if label.starts_with("the ") => {
                let mut words = format!("{label}'s");
                words.replace_range(..1, "T");
                words
            }
            label => format!("{label}'s"),
        };
        let which = match name {
            Some("requests") => " for requests",
            Some("tokens") => " for tokens",
            _ => "",
        };
        let resets = match reset_seconds.filter(|seconds| seconds.is_finite() && *seconds >= 0.0) {
            Some(seconds) => format!("it resets in {} s", seconds.ceil() as u64),
            None => "replies may wait until it resets".to_owned(),
        };
        format!("{provider} rate limit{which} is nearly spent: {resets}.")
    }

    pub fn budget_nearly_spent(spent_usd: f64, budget_usd: f64) -> String {
        format!(
            "{BUDGET_NEARLY_SPENT}: this conversation has cost {} of its {} budget; the call ends \
             after the reply that spends the rest.",
            dollars(spent_usd),
            budget(budget_usd)
        )
    }

    pub fn budget_spent_during_reply(budget_usd: f64) -> String {
        format!(
            "{BUDGET_SPENT}: the call ends after this reply (a budget of {}).",
            budget(budget_usd)
        )
    }

    pub fn budget_spent(spent_usd: f64, budget_usd: f64, unsent_messages: usize) -> String {
        let unsent = match unsent_messages {
            0 => String::new(),
            1 => " A message you typed was not sent (it is under Details…).".to_owned(),
            n => format!(" {n} messages you typed were not sent (they are under Details…)."),
        };
        format!(
            "{BUDGET_SPENT}: this conversation cost {} of its {} budget, so its call ended. \
             Connect starts a new conversation; Settings changes the budget.{unsent}",
            dollars(spent_usd),
            budget(budget_usd)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_problem_carries_its_headline_and_its_reason_as_fields_that_make_its_sentence() {
        let problems = [
            StatusEvent::not_connected("the provider closed the call"),
            StatusEvent::needs_settings("no API key for OpenAI: add one in Settings"),
            StatusEvent::call_refused("OpenAI", "The provider is busy: try again in a minute."),
            StatusEvent::budget_spent(0.8, 0.5, &[]),
            StatusEvent::new(
                ConnectionState::Ready,
                sentence::budget_nearly_spent(0.8, 1.0),
            ),
            StatusEvent::press_while_not_connected(),
            StatusEvent::new(
                ConnectionState::Ready,
                sentence::not_saving("the disk is full"),
            ),
            StatusEvent::new(ConnectionState::Ready, sentence::saving_resumed(2_000)),
            StatusEvent::new(
                ConnectionState::Ready,
                sentence::tool_failed("echo timed out"),
            ),
            StatusEvent::new(
                ConnectionState::Ready,
                sentence::new_call_refused("Azure", "OpenAI", "the key was refused"),
            ),
        ];
        for status in problems {
            let headline = status
                .headline
                .unwrap_or_else(|| panic!("no headline in {:?}", status.detail));
            let reason = status.reason.clone().expect("a headline has a reason");
            assert_eq!(format!("{headline}: {reason}"), status.detail);
            let json = serde_json::to_value(&status).expect("a status serialises");
            assert_eq!(json["headline"], headline);
            assert_eq!(json["reason"], reason.as_str());
        }
        assert_eq!(
            StatusEvent::not_connected("the call was cancelled")
                .reason
                .as_deref(),
            Some("the call was cancelled. Press Connect to try again.")
        );
    }

    #[test]
    fn a_status_that_opens_with_no_headline_is_one_piece() {
        for status in [
            StatusEvent::connecting("OpenAI"),
            StatusEvent::redialing(1, 6, "the provider closed the call"),
            StatusEvent::new(
                ConnectionState::Ready,
                "Ready (OpenAI): hold Space or the button to talk.",
            ),
            StatusEvent::new(
                ConnectionState::Error,
                "Not connectedness: a headline needs its colon",
            ),
        ] {
            assert_eq!(
                (status.headline, status.reason.as_deref()),
                (None, None),
                "{}",
                status.detail
            );
            let json = serde_json::to_value(&status).expect("a status serialises");
            assert!(json.get("headline").is_none() && json.get("reason").is_none());
        }
    }

    #[test]
    fn a_refusal_that_names_the_provider_is_not_framed_by_a_second_naming() {
        let status = StatusEvent::call_refused(
            "OpenAI",
            "OpenAI refused the API key: add a valid key in Settings.",
        );
        assert_eq!(status.state, ConnectionState::Error);
        assert_eq!(
            status.detail,
            "Not connected: OpenAI refused the API key: add a valid key in Settings."
        );
    }

    #[test]
    fn a_refusal_that_does_not_name_the_provider_is_framed_by_its_name() {
        let status = StatusEvent::call_refused(
            "Azure OpenAI",
            "The provider could not be reached (Connection refused): check the network connection and the address in Settings, then reconnect.",
        );
        assert_eq!(
            status.detail,
            "Not connected: could not connect to Azure OpenAI. The provider could not be reached (Connection refused): check the network connection and the address in Settings, then reconnect."
        );
    }

    #[test]
    fn cancel_is_offered_while_a_call_is_placed_and_only_then() {
        let placing = [
            StatusEvent::connecting("OpenAI"),
            StatusEvent::reconnecting(),
            StatusEvent::dialing_again(2, 6, "the network is down."),
            StatusEvent::redialing(1, 6, "the provider closed the call"),
        ];
        for status in placing {
            assert!(status.cancellable, "{}", status.detail);
            let json = serde_json::to_value(&status).expect("a status serialises");
            assert_eq!(json["cancellable"], true, "the window reads it: {json}");
        }
        let not_placing = [
            StatusEvent::renewing("OpenAI", 3_600_000),
            StatusEvent::waiting_to_dial(std::time::Duration::from_secs(7)),
            StatusEvent::not_connected("the call was cancelled"),
            StatusEvent::stopped(),
        ];
        for status in not_placing {
            assert!(!status.cancellable, "{}", status.detail);
            let json = serde_json::to_value(&status).expect("a status serialises");
            assert!(json.get("cancellable").is_none(), "{json}");
        }
    }
}

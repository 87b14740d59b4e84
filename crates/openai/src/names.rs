//! The names the official SDK offers for a session's model, its transcription model and its
//! voice (openai-python 3.63.0: the `model` Literals of
//! `types/realtime/realtime_session_create_request.py` and `types/realtime/audio_transcription.py`,
//! the `voice` Literal of `types/realtime/realtime_audio_config_output.py`), the ones the SDK
//! says are shut down soon, and Walkie's defaults. The fields are free text in the API, so any
//! other name may be sent; these are the ones a settings dialog lists. The test command's
//! oracle (scripts/oracle/) compares every list here with the SDK's, the deprecations with the
//! SDK's own docstrings, and fails when a default is deprecated, so a name added, dropped or
//! deprecated upstream shows up as a failure when the SDK pin moves.

/// The realtime models, in the SDK's order.
pub const REALTIME_MODELS: &[&str] = &[
    "gpt-realtime",
    "gpt-realtime-1.5",
    "gpt-realtime-2",
    "gpt-realtime-2.1",
    "gpt-realtime-2.1-mini",
    "gpt-realtime-2025-08-28",
    "gpt-4o-realtime-preview",
    "gpt-4o-realtime-preview-2024-10-01",
    "gpt-4o-realtime-preview-2024-12-17",
    "gpt-4o-realtime-preview-2025-06-03",
    "gpt-4o-mini-realtime-preview",
    "gpt-4o-mini-realtime-preview-2024-12-17",
    "gpt-realtime-mini",
    "gpt-realtime-mini-2025-10-06",
    "gpt-realtime-mini-2025-12-15",
    "gpt-audio-1.5",
    "gpt-audio-mini",
    "gpt-audio-mini-2025-10-06",
    "gpt-audio-mini-2025-12-15",
];

/// The models that transcribe the user's speech in a realtime session, in the SDK's order.
pub const TRANSCRIPTION_MODELS: &[&str] = &[
    "whisper-1",
    "gpt-transcribe",
    "gpt-live-transcribe",
    "gpt-4o-mini-transcribe",
    "gpt-4o-mini-transcribe-2025-12-15",
    "gpt-4o-transcribe",
    "gpt-4o-transcribe-diarize",
    "gpt-realtime-whisper",
];

/// The built-in voices, alphabetically.
pub const VOICES: &[&str] = &[
    "alloy", "ash", "ballad", "cedar", "coral", "echo", "marin", "sage", "shimmer", "verse",
];

/// The model a new Walkie talks to: the current full model of the reasoning family, billed
/// like `gpt-realtime` was for audio, which it replaces (docs/architecture.md says why).
pub const DEFAULT_REALTIME_MODEL: &str = "gpt-realtime-2.1";

/// The model that transcribes the user's speech by default: streaming, so the user's words
/// show while they speak, and the one the SDK says realtime sessions tune (`delay`).
pub const DEFAULT_TRANSCRIPTION_MODEL: &str = "gpt-realtime-whisper";

/// A model name the provider has announced it will shut down.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Deprecation {
    pub model: &'static str,
    /// `YYYY-MM-DD`, as the SDK says it.
    pub shutdown_on: &'static str,
    /// What Walkie moves a saved setting to: the current model of the same size and kind.
    pub replacement: &'static str,
}

const fn deprecated(
    model: &'static str,
    shutdown_on: &'static str,
    replacement: &'static str,
) -> Deprecation {
    Deprecation {
        model,
        shutdown_on,
        replacement,
    }
}

/// The deprecated names, as the SDK's docstrings list them ("Deprecated values"): the realtime
/// models on 2027-01-20, the transcription models on 2027-02-26.
pub const DEPRECATED_MODELS: &[Deprecation] = &[
    deprecated("gpt-realtime", "2027-01-20", "gpt-realtime-2.1"),
    deprecated("gpt-realtime-2025-08-28", "2027-01-20", "gpt-realtime-2.1"),
    deprecated("gpt-realtime-mini", "2027-01-20", "gpt-realtime-2.1-mini"),
    deprecated(
        "gpt-realtime-mini-2025-12-15",
        "2027-01-20",
        "gpt-realtime-2.1-mini",
    ),
    deprecated("gpt-audio-mini", "2027-01-20", "gpt-realtime-2.1-mini"),
    deprecated(
        "gpt-audio-mini-2025-12-15",
        "2027-01-20",
        "gpt-realtime-2.1-mini",
    ),
    deprecated("whisper-1", "2027-02-26", "gpt-realtime-whisper"),
    deprecated(
        "gpt-4o-mini-transcribe",
        "2027-02-26",
        "gpt-realtime-whisper",
    ),
    deprecated(
        "gpt-4o-mini-transcribe-2025-12-15",
        "2027-02-26",
        "gpt-realtime-whisper",
    ),
    deprecated("gpt-4o-transcribe", "2027-02-26", "gpt-realtime-whisper"),
    deprecated(
        "gpt-4o-transcribe-diarize",
        "2027-02-26",
        "gpt-realtime-whisper",
    ),
];

/// `model`'s announced shutdown, if it has one.
pub fn deprecation(model: &str) -> Option<&'static Deprecation> {
    let model = model.trim();
    DEPRECATED_MODELS.iter().find(|known| known.model == model)
}

/// The models that reason before they answer: they take `reasoning.effort` and
/// `parallel_tool_calls` (the SDK: "only supported by reasoning Realtime models such as
/// `gpt-realtime-2`"; the model pages name the family).
pub const REASONING_MODELS: &[&str] = &[
    "gpt-realtime-2",
    "gpt-realtime-2.1",
    "gpt-realtime-2.1-mini",
];

/// The transcription models that take a `delay` (the SDK: "only supported with
/// `gpt-realtime-whisper` in GA Realtime sessions").
pub const TRANSCRIPTION_DELAY_MODELS: &[&str] = &["gpt-realtime-whisper"];

/// The transcription models that take `keywords` (the SDK: "supported by `gpt-transcribe` and
/// `gpt-live-transcribe`").
pub const TRANSCRIPTION_KEYWORD_MODELS: &[&str] = &["gpt-transcribe", "gpt-live-transcribe"];

/// Whether `model` (or a dated snapshot of it) is one of `family`.
fn is_one_of(family: &[&str], model: &str) -> bool {
    let model = model.trim();
    family.iter().any(|name| {
        model == *name
            || model
                .strip_prefix(name)
                .and_then(|rest| rest.strip_prefix('-'))
                .is_some_and(|date| {
                    date.len() == 10 && date.bytes().all(|b| b.is_ascii_digit() || b == b'-')
                })
    })
}

pub fn is_reasoning_model(model: &str) -> bool {
    is_one_of(REASONING_MODELS, model)
}

pub fn takes_transcription_delay(model: &str) -> bool {
    is_one_of(TRANSCRIPTION_DELAY_MODELS, model)
}

pub fn takes_transcription_keywords(model: &str) -> bool {
    is_one_of(TRANSCRIPTION_KEYWORD_MODELS, model)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_offered_and_not_deprecated() {
        assert!(REALTIME_MODELS.contains(&DEFAULT_REALTIME_MODEL));
        assert!(TRANSCRIPTION_MODELS.contains(&DEFAULT_TRANSCRIPTION_MODEL));
        assert_eq!(deprecation(DEFAULT_REALTIME_MODEL), None);
        assert_eq!(deprecation(DEFAULT_TRANSCRIPTION_MODEL), None);
    }

    #[test]
    fn every_deprecated_name_is_offered_and_moves_to_a_current_model_of_its_kind() {
        for known in DEPRECATED_MODELS {
            let realtime = REALTIME_MODELS.contains(&known.model);
            let transcription = TRANSCRIPTION_MODELS.contains(&known.model);
            assert!(realtime || transcription, "{} is not offered", known.model);
            let kind = if realtime {
                REALTIME_MODELS
            } else {
                TRANSCRIPTION_MODELS
            };
            assert!(kind.contains(&known.replacement), "{known:?}");
            assert_eq!(deprecation(known.replacement), None, "{known:?}");
        }
        assert_eq!(
            deprecation(" gpt-realtime ").map(|known| known.shutdown_on),
            Some("2027-01-20")
        );
        assert_eq!(deprecation("gpt-realtime-2"), None);
    }

    #[test]
    fn the_reasoning_family_is_told_from_the_models_before_it() {
        assert!(is_reasoning_model("gpt-realtime-2.1"));
        assert!(is_reasoning_model("gpt-realtime-2.1-mini"));
        assert!(is_reasoning_model("gpt-realtime-2-2026-05-07"));
        assert!(!is_reasoning_model("gpt-realtime-1.5"));
        assert!(!is_reasoning_model("gpt-realtime"));
        assert!(!is_reasoning_model("gpt-realtime-2.1-minix"));
        assert!(takes_transcription_delay("gpt-realtime-whisper"));
        assert!(!takes_transcription_delay("gpt-transcribe"));
        assert!(takes_transcription_keywords("gpt-transcribe"));
        assert!(!takes_transcription_keywords("gpt-realtime-whisper"));
    }
}

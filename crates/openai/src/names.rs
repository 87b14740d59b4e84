//! The names the official SDK offers for a session's model and voice (openai-python 3.57.0:
//! the `model` Literal of `types/realtime/realtime_session_create_request.py` and the `voice`
//! Literal of `types/realtime/realtime_audio_config_output.py`). Both fields are free text in
//! the API, so any other name may be sent; these are the ones a settings dialog lists. The
//! test command's oracle (scripts/oracle/) compares both lists with the SDK's, so a name added
//! or dropped upstream shows up as a failure when the SDK pin moves.

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

/// The built-in voices, alphabetically.
pub const VOICES: &[&str] = &[
    "alloy", "ash", "ballad", "cedar", "coral", "echo", "marin", "sage", "shimmer", "verse",
];

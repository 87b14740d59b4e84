//! Prints the names Walkie offers ([`walkie_openai::names`], [`walkie_openai::live`]) as one
//! JSON object, `{"models":[…],"transcription_models":[…],"voices":[…],"live_models":[…],
//! "live_voices":[…],"deprecated":[…],"defaults":{…}}`, for the oracle (scripts/oracle/) to
//! compare with the official SDK's literals and its list of deprecated names.

use walkie_openai::{live, names};

fn main() {
    let deprecated: Vec<_> = names::DEPRECATED_MODELS
        .iter()
        .map(|known| serde_json::json!({"model": known.model, "shutdown_on": known.shutdown_on}))
        .collect();
    let names = serde_json::json!({
        "models": names::REALTIME_MODELS,
        "transcription_models": names::TRANSCRIPTION_MODELS,
        "voices": names::VOICES,
        "live_models": live::LIVE_MODELS,
        "live_voices": live::LIVE_VOICES,
        "deprecated": deprecated,
        "defaults": {
            "model": names::DEFAULT_REALTIME_MODEL,
            "transcription_model": names::DEFAULT_TRANSCRIPTION_MODEL,
        },
    });
    println!("{names}");
}

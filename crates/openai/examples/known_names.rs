//! Prints the model and voice names Walkie offers ([`walkie_openai::names`]) as one JSON
//! object, `{"models":[…],"voices":[…]}`, for the oracle (scripts/oracle/) to compare with the
//! official SDK's literals.

fn main() {
    let names = serde_json::json!({
        "models": walkie_openai::names::REALTIME_MODELS,
        "voices": walkie_openai::names::VOICES,
    });
    println!("{names}");
}

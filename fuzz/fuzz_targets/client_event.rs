//! Client events: the local provider decodes what a client (Walkie or any other) sends.
fn main() {
    afl::fuzz!(|data: &[u8]| {
        if let Ok(text) = std::str::from_utf8(data) {
            let _ = walkie_openai::decode_client_event(text);
        }
    });
}

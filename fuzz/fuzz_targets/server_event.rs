//! Server events: every data-channel text the provider sends goes through this decoder.
fn main() {
    afl::fuzz!(|data: &[u8]| {
        // The data channel delivers text; bytes that are not UTF-8 never reach the decoder.
        if let Ok(text) = std::str::from_utf8(data) {
            let _ = walkie_openai::decode_server_event(text);
        }
    });
}

//! The answer to `POST /v1/realtime/calls`: the SDP body as Walkie parses it before setting it
//! as the remote description, and the call id taken from the `Location` header.
fn main() {
    afl::fuzz!(|data: &[u8]| {
        // reqwest's `text()` decodes lossily, so the parser sees any bytes as text.
        let text = String::from_utf8_lossy(data);
        let _ = walkie_rtc::parse_answer(&text);
        // A header value is one line: the first one stands for the Location header.
        let location = text.lines().next().unwrap_or_default();
        let _ = walkie_rtc::signalling::call_id_from_location(location);
    });
}

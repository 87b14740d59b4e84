//! The journal reader and what History does with its records (`Store::open` and `Store::list`):
//! replay into a conversation, summary, Markdown export and the JSON the window shows.
use walkie_store::{Conversation, parse_journal};

fn main() {
    afl::fuzz!(|data: &[u8]| {
        let parsed = parse_journal(data);
        let _ = parsed.started();
        let _ = parsed.closed_cleanly();
        let conversation =
            Conversation::from_records(parsed.records.iter().map(|(_, record)| record));
        let _ = conversation.is_closed();
        let _ = conversation.started_unix_ms();
        let _ = conversation.duration_ms();
        let _ = conversation.turns().count();
        let _ = conversation.first_words(12);
        let _ = conversation.render_markdown(true);
        let _ = conversation.to_json();
    });
}

//! The conversation so far, as the items a new session starts from: after a drop, at renewal,
//! or to continue a saved conversation, the provider is given the finished messages in order
//! before the first new turn.
//!
//! What is left out, and why: the newest messages are kept, up to
//! [`RESTORE_BUDGET_CHARS`] of text (a realtime model's context is small, and every restored
//! token is billed on every reply); older ones are dropped, not summarised (a summary would
//! need a model call the user did not ask for), and a first system message says how many were
//! dropped so the model does not pretend to remember them. A single message longer than
//! [`RESTORE_MESSAGE_CHARS`] is cut there (a data-channel message holds 64 KiB).

use walkie_agui::Role;
use walkie_openai::{ContentPart, Item, Role as ItemRole};

/// The text restored at most, newest messages first, in characters.
pub const RESTORE_BUDGET_CHARS: usize = 24_000;

/// One restored message holds at most this many characters of its text.
pub const RESTORE_MESSAGE_CHARS: usize = 8_000;

/// The items that restore `messages` (role and text, oldest first): the user's as
/// `input_text`, the assistant's as `output_text` (as the GA API requires of each role), other
/// roles and empty texts skipped. See the module docs for what is left out.
pub fn restore_items<'a>(
    messages: impl IntoIterator<Item = (Role, &'a str)>,
    budget_chars: usize,
) -> Vec<Item> {
    restore_items_within(messages, budget_chars, usize::MAX)
}

/// As [`restore_items`], in at most `max_items` items, the note about the messages left out
/// included: a Live session's history takes at most
/// [`walkie_openai::live::MAX_INITIAL_MESSAGES`].
pub fn restore_items_within<'a>(
    messages: impl IntoIterator<Item = (Role, &'a str)>,
    budget_chars: usize,
    max_items: usize,
) -> Vec<Item> {
    if max_items == 0 {
        return Vec::new();
    }
    let messages: Vec<(ItemRole, String)> = messages
        .into_iter()
        .filter_map(|(role, text)| {
            let role = match role {
                Role::User => ItemRole::User,
                Role::Assistant => ItemRole::Assistant,
                _ => return None,
            };
            let text = text.trim();
            (!text.is_empty()).then(|| (role, cut(text, RESTORE_MESSAGE_CHARS)))
        })
        .collect();
    let mut kept_chars = 0;
    let first_kept = messages
        .iter()
        .rposition(|(_, text)| {
            kept_chars += text.chars().count();
            kept_chars > budget_chars
        })
        .map_or(0, |over| over + 1);
    let first_kept = if first_kept == 0 && messages.len() <= max_items {
        0
    } else {
        // Some are left out: the note takes one of the items.
        first_kept.max(messages.len().saturating_sub(max_items - 1))
    };
    let mut items = Vec::with_capacity(messages.len() - first_kept + 1);
    if first_kept > 0 {
        items.push(message(
            ItemRole::System,
            format!(
                "This conversation continues an earlier call. Its {first_kept} oldest messages \
                 were left out; the messages that follow are the rest of it."
            ),
        ));
    }
    items.extend(
        messages
            .into_iter()
            .skip(first_kept)
            .map(|(role, text)| message(role, text)),
    );
    items
}

fn message(role: ItemRole, text: String) -> Item {
    let part = match role {
        ItemRole::Assistant => ContentPart::OutputText { text },
        ItemRole::User | ItemRole::System => ContentPart::InputText { text },
    };
    Item::Message {
        id: None,
        role,
        status: None,
        content: vec![part],
    }
}

/// What a Live session is given when it continues a saved conversation (`earlier`, as the
/// history read it): the same messages a redial restores, the pictures a message showed and
/// the tools it called told as notes, at most
/// [`walkie_openai::live::MAX_INITIAL_MESSAGES`] of them.
pub fn call_setup_history(earlier: Vec<walkie_agui::EarlierMessage>) -> Vec<Item> {
    let bridge = walkie_session::transcript::TranscriptBridge::continuing("history", earlier);
    let so_far: Vec<(Role, String)> = bridge.restorable().collect();
    restore_items_within(
        so_far.iter().map(|(role, text)| (*role, text.as_str())),
        RESTORE_BUDGET_CHARS,
        walkie_openai::live::MAX_INITIAL_MESSAGES,
    )
}

/// `text` up to `max_chars` characters, with an ellipsis when it was longer.
fn cut(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(items: &[Item]) -> Vec<(ItemRole, String, &'static str)> {
        items
            .iter()
            .map(|item| match item {
                Item::Message { role, content, .. } => match &content[..] {
                    [ContentPart::InputText { text }] => (*role, text.clone(), "input_text"),
                    [ContentPart::OutputText { text }] => (*role, text.clone(), "output_text"),
                    other => panic!("one text part expected: {other:?}"),
                },
                other => panic!("a message expected: {other:?}"),
            })
            .collect()
    }

    #[test]
    fn a_count_limit_keeps_the_newest_messages_and_the_note_counts_as_one_of_them() {
        let said: Vec<String> = (1..=200).map(|n| format!("message {n}")).collect();
        let conversation = said.iter().enumerate().map(|(n, text)| {
            let role = if n % 2 == 0 {
                Role::User
            } else {
                Role::Assistant
            };
            (role, text.as_str())
        });
        let items = restore_items_within(conversation.clone(), RESTORE_BUDGET_CHARS, 128);
        assert_eq!(items.len(), 128);
        let texts = texts(&items);
        assert!(
            texts[0].1.contains("73 oldest messages were left out"),
            "{texts:?}"
        );
        assert_eq!(texts[1].1, "message 74");
        assert_eq!(texts[127].1, "message 200");
        assert_eq!(
            restore_items_within(conversation.take(128), RESTORE_BUDGET_CHARS, 128).len(),
            128,
            "all of them fit: no note"
        );
    }

    #[test]
    fn each_finished_message_is_restored_in_order_with_the_content_type_its_role_requires() {
        let items = restore_items(
            [
                (Role::User, "My cat is called Miso."),
                (Role::Assistant, "Miso is a lovely name."),
                (Role::User, "  "),
                (Role::System, "not a message of the conversation"),
            ],
            RESTORE_BUDGET_CHARS,
        );
        assert_eq!(
            texts(&items),
            [
                (
                    ItemRole::User,
                    "My cat is called Miso.".to_owned(),
                    "input_text"
                ),
                (
                    ItemRole::Assistant,
                    "Miso is a lovely name.".to_owned(),
                    "output_text"
                ),
            ]
        );
    }

    #[test]
    fn over_the_budget_the_oldest_messages_are_dropped_and_a_system_message_says_how_many() {
        let items = restore_items(
            [
                (Role::User, "one two"),
                (Role::Assistant, "three"),
                (Role::User, "four"),
                (Role::Assistant, "five"),
            ],
            10,
        );
        let texts = texts(&items);
        assert_eq!(texts[0].0, ItemRole::System);
        assert!(texts[0].1.contains("2 oldest messages"), "{}", texts[0].1);
        assert_eq!(
            texts[1..]
                .iter()
                .map(|(_, text, _)| text.as_str())
                .collect::<Vec<_>>(),
            ["four", "five"]
        );
    }

    #[test]
    fn a_message_longer_than_its_cap_is_cut_on_a_character_boundary() {
        let long = "é".repeat(RESTORE_MESSAGE_CHARS + 10);
        let items = restore_items([(Role::User, long.as_str())], usize::MAX);
        let (_, text, _) = &texts(&items)[0];
        assert_eq!(text.chars().count(), RESTORE_MESSAGE_CHARS + 1);
        assert!(text.ends_with('…'));
    }

    #[test]
    fn nothing_to_restore_gives_no_items() {
        assert!(restore_items([], RESTORE_BUDGET_CHARS).is_empty());
    }
}

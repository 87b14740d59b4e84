//! A message the user writes during a call: text, pictures, or both.
//!
//! Why the controller packs it: each `conversation.item.create` travels as one data-channel
//! message, which holds 64 KiB unless both ends advertise more (RFC 8841), and a picture's data
//! URL alone takes most of that. So the parts go out in order, as few user items as fit, each
//! within [`MAX_ITEM_EVENT_BYTES`]: a question beside a picture rides with it when both fit,
//! and follows it in an item of its own when not. The model reads consecutive user items as
//! one message either way.

use walkie_openai::{ContentPart, Item, Role};
use walkie_picture::Picture;

/// The most one `conversation.item.create` takes on the wire, as JSON with the event around
/// it: one 64 KiB data-channel message, less room for the `event_id` and envelope.
pub const MAX_ITEM_EVENT_BYTES: usize = 63 * 1024;
/// What a user item's event takes besides its content parts (type, role, brackets, the
/// `event_id`), with room to spare.
const ITEM_ENVELOPE_BYTES: usize = 256;

/// What the user sends by typing: text (trimmed when sent), pictures shown, or both.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UserMessage {
    pub text: String,
    pub pictures: Vec<Picture>,
}

impl UserMessage {
    /// A message of text alone.
    pub fn text(text: impl Into<String>) -> UserMessage {
        UserMessage {
            text: text.into(),
            pictures: Vec::new(),
        }
    }

    /// Whether there is nothing to send (blank text, no picture).
    pub fn is_empty(&self) -> bool {
        self.text.trim().is_empty() && self.pictures.is_empty()
    }
}

/// A content part too large for any item: its size on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct PartTooLarge {
    pub bytes: usize,
}

/// The message's parts (pictures first, then the trimmed text) as user items, each small
/// enough for one data-channel message.
pub(super) fn user_items(message: &UserMessage) -> Result<Vec<Item>, PartTooLarge> {
    let text = message.text.trim();
    let parts = message
        .pictures
        .iter()
        .map(|picture| ContentPart::InputImage {
            image_url: picture.data_url(),
            detail: None,
        })
        .chain((!text.is_empty()).then(|| ContentPart::InputText {
            text: text.to_owned(),
        }));
    let room = MAX_ITEM_EVENT_BYTES - ITEM_ENVELOPE_BYTES;
    let mut items = Vec::new();
    let mut content: Vec<ContentPart> = Vec::new();
    let mut content_bytes = 0;
    for part in parts {
        let part_bytes = serde_json::to_string(&part)
            .expect("a content part serializes: strings and a tag")
            .len()
            + 1;
        if part_bytes > room {
            return Err(PartTooLarge { bytes: part_bytes });
        }
        if content_bytes + part_bytes > room {
            items.push(user_item(std::mem::take(&mut content)));
            content_bytes = 0;
        }
        content.push(part);
        content_bytes += part_bytes;
    }
    if !content.is_empty() {
        items.push(user_item(content));
    }
    Ok(items)
}

fn user_item(content: Vec<ContentPart>) -> Item {
    Item::Message {
        id: None,
        role: Role::User,
        status: None,
        content,
    }
}

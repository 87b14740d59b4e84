//! Showing pictures during a call, scripted in virtual time: a picture goes out as the user's
//! `input_image` (a JPEG data URL), with the question typed beside it when both fit one
//! data-channel message and in the item after it when not; a picture alone asks for no reply;
//! the session reports what was delivered, pictures included.

mod turn_support;

use std::io::Cursor;

use image::{DynamicImage, ImageFormat, Rgb, RgbImage};
use serde_json::Value;
use walkie_picture::{Picture, PictureLimits, prepare};
use walkie_session::turn::{MAX_ITEM_EVENT_BYTES, UiHint, UserMessage};
use walkie_session::{SessionEvent, UserContent};

use turn_support::*;

/// A photo-like picture (gradients under noise, which JPEG cannot squeeze much), prepared as
/// the app prepares what the user attaches.
fn photo(width_px: u32, height_px: u32, limits: &PictureLimits) -> Picture {
    let mut state: u32 = 0x2545_F491;
    let image = RgbImage::from_fn(width_px, height_px, |x, y| {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let noise = (state % 64) as u8;
        Rgb([(x % 256) as u8 ^ noise, (y % 256) as u8, noise])
    });
    let mut png = Vec::new();
    DynamicImage::ImageRgb8(image)
        .write_to(&mut Cursor::new(&mut png), ImageFormat::Png)
        .unwrap();
    prepare(&png, limits).expect("a photo prepares").picture
}

fn content_types(event: &Value) -> Vec<&str> {
    event["item"]["content"]
        .as_array()
        .expect("a message's content")
        .iter()
        .map(|part| part["type"].as_str().expect("a part's type"))
        .collect()
}

fn delivered_parts(talk: &mut Conversation) -> Vec<UserContent> {
    talk.events()
        .into_iter()
        .filter_map(|event| match event {
            SessionEvent::EnqueuedMessages(delivered) => Some(delivered),
            _ => None,
        })
        .flat_map(|delivered| delivered.messages)
        .flat_map(|message| message.parts)
        .collect()
}

#[test]
fn a_picture_with_a_question_goes_out_as_one_user_item_then_asks_for_a_reply() {
    let picture = photo(320, 240, &PictureLimits::default());
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.at(1_000).sends(&UserMessage {
        text: " What is in this picture? ".to_owned(),
        pictures: vec![picture.clone()],
    });

    let sent = talk.sent();
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(sent[0]["type"], "conversation.item.create");
    assert_eq!(sent[0]["item"]["role"], "user");
    assert_eq!(content_types(&sent[0]), ["input_image", "input_text"]);
    assert_eq!(
        sent[0]["item"]["content"][0]["image_url"],
        picture.data_url()
    );
    assert_eq!(
        sent[0]["item"]["content"][1]["text"],
        "What is in this picture?"
    );
    assert_eq!(sent[1]["type"], "response.create");
    assert_eq!(
        delivered_parts(&mut talk),
        [
            UserContent::Image(picture),
            UserContent::Text {
                content: "What is in this picture?".to_owned()
            }
        ]
    );
}

#[test]
fn a_picture_alone_joins_the_conversation_and_asks_for_no_reply() {
    let picture = photo(200, 100, &PictureLimits::default());
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.at(1_000).sends(&UserMessage {
        text: "  \n".to_owned(),
        pictures: vec![picture],
    });

    let sent = talk.sent();
    let types: Vec<&Value> = sent.iter().map(|event| &event["type"]).collect();
    assert_eq!(types, ["conversation.item.create"]);
    assert_eq!(content_types(&sent[0]), ["input_image"]);
    assert!(matches!(
        delivered_parts(&mut talk)[..],
        [UserContent::Image(_)]
    ));
}

#[test]
fn a_long_question_beside_a_large_picture_follows_it_in_an_item_of_its_own() {
    let picture = photo(1600, 1200, &PictureLimits::default());
    assert!(
        picture.data_url().len() > 40_000,
        "the picture fills most of a message"
    );
    let question = "Which of these is the odd one out? ".repeat(600);
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.at(1_000).sends(&UserMessage {
        text: question.clone(),
        pictures: vec![picture],
    });

    let sent = talk.sent();
    let types: Vec<&Value> = sent.iter().map(|event| &event["type"]).collect();
    assert_eq!(
        types,
        [
            "conversation.item.create",
            "conversation.item.create",
            "response.create"
        ]
    );
    assert_eq!(content_types(&sent[0]), ["input_image"]);
    assert_eq!(content_types(&sent[1]), ["input_text"]);
    assert_eq!(sent[1]["item"]["content"][0]["text"], question.trim());
    for event in &sent {
        // The wire text adds the event id (tens of bytes) to this JSON.
        let bytes = serde_json::to_string(event).unwrap().len() + 64;
        assert!(bytes <= MAX_ITEM_EVENT_BYTES, "{bytes} bytes");
    }
}

#[test]
fn a_picture_too_large_for_any_item_is_refused_with_its_message_and_nothing_is_sent() {
    let roomy = PictureLimits {
        max_long_side_px: 2_048,
        max_encoded_bytes: 400_000,
        ..PictureLimits::default()
    };
    let picture = photo(2_000, 1_500, &roomy);
    let mut talk = Conversation::ready_for_push_to_talk();
    talk.at(1_000).sends(&UserMessage {
        text: "And this?".to_owned(),
        pictures: vec![picture],
    });

    assert_eq!(talk.sent(), Vec::<Value>::new());
    assert!(
        talk.hints().iter().any(|hint| matches!(
            hint,
            UiHint::PictureTooLarge { bytes, max_bytes: MAX_ITEM_EVENT_BYTES }
                if *bytes > MAX_ITEM_EVENT_BYTES
        )),
        "the user is told"
    );
    assert_eq!(delivered_parts(&mut talk), []);
}

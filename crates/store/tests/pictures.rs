//! A picture the user showed is saved as a file of its turn: transcript.md shows it beside the
//! question, transcript.json lists it, the journal describes it without its bytes, and a disk
//! that refuses it holds it until saving resumes.

mod support;

use std::fs;
use std::io::Cursor;

use support::scripted_conversation::{Feed, START_UNIX_MS, config};
use walkie_picture::{Picture, PictureLimits, prepare};
use walkie_session::{
    EnqueuedMessage, EnqueuedMessagesEvent, SessionEvent, StampedEvent, UserContent,
};
use walkie_store::files::{TRANSCRIPT_JSON_FILE, TRANSCRIPT_MD_FILE};
use walkie_store::journal::JOURNAL_FILE;
use walkie_store::{Recorder, SaveState, Store, turn_picture_file};

fn picture(width_px: u32, height_px: u32) -> Picture {
    let mut png = Vec::new();
    image::DynamicImage::ImageRgb8(image::RgbImage::from_fn(width_px, height_px, |x, y| {
        // Smooth, so it is sent at its own size.
        image::Rgb([(x * 255 / width_px) as u8, (y * 255 / height_px) as u8, 128])
    }))
    .write_to(&mut Cursor::new(&mut png), image::ImageFormat::Png)
    .unwrap();
    prepare(&png, &PictureLimits::default()).unwrap().picture
}

/// The user sends `parts` as one typed message, at `unix_ms`.
fn sends(
    recorder: &mut Recorder,
    feed: &mut Feed,
    seq: u64,
    parts: Vec<UserContent>,
    unix_ms: i64,
) {
    let event = StampedEvent {
        seq,
        at_ms: seq * 100,
        event: SessionEvent::EnqueuedMessages(Box::new(EnqueuedMessagesEvent {
            enqueue_id: format!("evt_{seq}"),
            messages: vec![EnqueuedMessage { parts }],
        })),
    };
    feed.event(recorder, &event, unix_ms);
}

#[test]
fn a_picture_shown_with_a_question_is_a_file_of_its_turn_and_the_transcripts_show_it() {
    let root = tempfile::tempdir().expect("a temporary root");
    let store = Store::new(root.path());
    let mut recorder = store
        .start(config(), START_UNIX_MS)
        .expect("the recorder starts");
    let mut feed = Feed::new(&recorder);
    let shown = picture(640, 480);
    sends(
        &mut recorder,
        &mut feed,
        1,
        vec![
            UserContent::Image(shown.clone()),
            UserContent::Text {
                content: "What is this?".to_owned(),
            },
        ],
        START_UNIX_MS + 1_000,
    );
    feed.close(&mut recorder, START_UNIX_MS + 2_000)
        .expect("the close saves");
    let dir = recorder.dir().to_owned();

    assert_eq!(turn_picture_file(1, 1), "turns/0001-user-1.jpg");
    assert_eq!(
        fs::read(dir.join("turns/0001-user-1.jpg")).unwrap(),
        shown.jpeg()
    );
    let markdown = fs::read_to_string(dir.join(TRANSCRIPT_MD_FILE)).unwrap();
    assert!(
        markdown.contains("![picture 1](turns/0001-user-1.jpg)\n\nWhat is this?\n"),
        "{markdown}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(dir.join(TRANSCRIPT_JSON_FILE)).unwrap()).unwrap();
    assert_eq!(
        json["turns"][0]["userPictures"],
        serde_json::json!(["turns/0001-user-1.jpg"])
    );
    let listed = &json["messages"][0]["metadata"]["pictures"];
    assert_eq!(listed[0]["widthPx"], 640, "{}", &json["messages"]);
    assert_eq!(listed[0]["thumbnail"], shown.thumbnail_data_url());
    // The journal describes the picture; its bytes are in the file alone.
    let journal = fs::read_to_string(dir.join(JOURNAL_FILE)).unwrap();
    assert!(
        journal.contains(r#""kind":"image","widthPx":640,"heightPx":480"#),
        "{journal}"
    );
    assert!(
        !journal.contains(&shown.data_url()[23..200]),
        "no JPEG bytes in the journal"
    );

    // Read back from disk, the conversation shows the same.
    let reopened = store.open(recorder.id()).expect("the conversation opens");
    assert_eq!(reopened.render_markdown(true), markdown);
}

#[test]
fn a_picture_alone_is_saved_without_a_no_transcript_mark() {
    let root = tempfile::tempdir().expect("a temporary root");
    let store = Store::new(root.path());
    let mut recorder = store
        .start(config(), START_UNIX_MS)
        .expect("the recorder starts");
    let mut feed = Feed::new(&recorder);
    sends(
        &mut recorder,
        &mut feed,
        1,
        vec![
            UserContent::Image(picture(120, 90)),
            UserContent::Image(picture(90, 120)),
        ],
        START_UNIX_MS + 1_000,
    );
    feed.close(&mut recorder, START_UNIX_MS + 2_000)
        .expect("the close saves");

    let dir = recorder.dir();
    assert!(dir.join("turns/0001-user-1.jpg").is_file());
    assert!(dir.join("turns/0001-user-2.jpg").is_file());
    let markdown = fs::read_to_string(dir.join(TRANSCRIPT_MD_FILE)).unwrap();
    assert!(
        markdown
            .contains("![picture 1](turns/0001-user-1.jpg)\n![picture 2](turns/0001-user-2.jpg)\n"),
        "{markdown}"
    );
    assert!(!markdown.contains("no transcript"), "{markdown}");
    // A single-file export has no folder beside it: the pictures are named, not linked.
    let exported = store.open(recorder.id()).unwrap().render_markdown(false);
    assert!(
        exported.contains("_(picture 1: turns/0001-user-1.jpg)_"),
        "{exported}"
    );
}

#[test]
fn a_picture_the_disk_refuses_waits_in_memory_and_is_written_when_saving_resumes() {
    let root = tempfile::tempdir().expect("a temporary root");
    let store = Store::new(root.path());
    let mut recorder = store
        .start(config(), START_UNIX_MS)
        .expect("the recorder starts");
    let mut feed = Feed::new(&recorder);
    let turns = recorder.dir().join("turns");
    fs::remove_dir(&turns).expect("remove turns/");
    fs::write(&turns, b"in the way").expect("a file where the folder was");
    let shown = picture(200, 100);
    sends(
        &mut recorder,
        &mut feed,
        1,
        vec![UserContent::Image(shown.clone())],
        START_UNIX_MS + 1_000,
    );
    assert_eq!(recorder.save_state(), SaveState::Failing);

    fs::remove_file(&turns).expect("clear the way");
    fs::create_dir(&turns).expect("turns/ again");
    recorder
        .retry_saving(START_UNIX_MS + 2_000)
        .expect("saving resumes once the folder is back");

    assert_eq!(
        fs::read(turns.join("0001-user-1.jpg")).unwrap(),
        shown.jpeg()
    );
}

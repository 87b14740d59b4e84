//! `Session::mark_interrupted`: a barge-in records how much of a speech part was heard, and the
//! part's end carries it.

use walkie_session::{
    Part, PartEndEvent, PartIndex, PushError, Session, SessionEvent, Speaker, SpeechPart,
    ToolCallPart,
};

#[test]
fn an_interrupted_speech_part_ends_with_where_playback_was_cut() {
    let mut session = Session::default();
    let index = session
        .start_part(Part::speech(Speaker::Assistant), 0)
        .expect("a fresh index");
    session
        .mark_interrupted(index, 1_200)
        .expect("the part is open speech");
    session.end_part(index, 10).expect("the part is open");

    let iterator = session.iterate().expect("no other iterator");
    let mut last = None;
    while let Some(delivery) = session.poll_event(&iterator).expect("iterator is active") {
        last = Some(delivery);
    }
    let Some(walkie_session::Delivery::Event(stamped)) = last else {
        panic!("expected the part's end last");
    };
    assert_eq!(
        stamped.event,
        SessionEvent::PartEnd(PartEndEvent {
            index,
            part: Part::Speech(SpeechPart {
                speaker: Speaker::Assistant,
                transcript: None,
                audio: None,
                interrupted_at_ms: Some(1_200),
            }),
        })
    );
}

#[test]
fn only_an_open_speech_part_can_be_interrupted() {
    let mut session = Session::default();
    assert_eq!(
        session.mark_interrupted(PartIndex(0), 5),
        Err(PushError::InterruptBeforeStart {
            index: PartIndex(0)
        })
    );
    let tool = session
        .start_part(
            Part::tool_call(ToolCallPart {
                tool_name: "t".to_owned(),
                args: "{}".to_owned(),
                tool_call_id: "c".to_owned(),
            }),
            0,
        )
        .expect("a fresh index");
    assert_eq!(
        session.mark_interrupted(tool, 5),
        Err(PushError::InterruptNotSpeech {
            index: tool,
            part_kind: walkie_session::PartKind::ToolCall
        })
    );
    session.end_part(tool, 1).expect("the part is open");
    assert_eq!(
        session.mark_interrupted(tool, 5),
        Err(PushError::InterruptAfterEnd { index: tool })
    );
}

//! The decoders meet whatever arrives on the data channel: no input makes them panic, and
//! every rejection is a typed error.

use proptest::prelude::*;
use walkie_openai::{DecodeError, ServerEvent, decode_client_event, decode_server_event};

const PTT_TURN: &str = include_str!("data/ptt-turn-ga.jsonl");

fn valid_events() -> Vec<&'static str> {
    PTT_TURN.lines().collect()
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        "[a-z_.]{0,12}".prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::from),
            prop::collection::btree_map(
                prop_oneof![
                    Just("type".to_owned()),
                    Just("item_id".to_owned()),
                    Just("response".to_owned()),
                    "[a-z_]{1,8}"
                ],
                inner,
                0..6
            )
            .prop_map(|map| serde_json::Value::Object(map.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_text_never_panics(text in ".{0,200}") {
        let _ = decode_server_event(&text);
        let _ = decode_client_event(&text);
    }

    #[test]
    fn arbitrary_json_never_panics(value in json_value()) {
        let text = value.to_string();
        let _ = decode_server_event(&text);
        let _ = decode_client_event(&text);
    }

    #[test]
    fn a_valid_event_with_a_known_type_but_random_fields_is_decoded_or_a_schema_error(
        index in 0usize..20, value in json_value()
    ) {
        let events = valid_events();
        let original: serde_json::Value = serde_json::from_str(events[index % events.len()]).unwrap();
        let mut mutated = match value {
            serde_json::Value::Object(map) => map,
            other => [("payload".to_owned(), other)].into_iter().collect(),
        };
        mutated.insert("type".into(), original["type"].clone());
        match decode_server_event(&serde_json::Value::Object(mutated).to_string()) {
            Ok(event) => prop_assert!(!matches!(event, ServerEvent::Unknown(_))),
            Err(DecodeError::Schema { event_type, .. }) => prop_assert_eq!(Some(event_type.as_str()), original["type"].as_str()),
            Err(other) => prop_assert!(false, "unexpected error {other:?}"),
        }
    }

    #[test]
    fn a_valid_event_cut_short_is_a_syntax_error_inside_the_text(index in 0usize..20, cut in 0.0f64..1.0) {
        let events = valid_events();
        let text = events[index % events.len()];
        let mut end = ((text.len() - 1) as f64 * cut) as usize;
        while !text.is_char_boundary(end) { end -= 1; }
        let short = &text[..end];
        match decode_server_event(short) {
            Err(DecodeError::Syntax { position, .. }) => prop_assert!(position.byte_offset <= short.len()),
            Err(DecodeError::NotAnEvent { .. }) => prop_assert!(short.trim().is_empty()),
            other => prop_assert!(false, "{short:?} gave {other:?}"),
        }
    }
}

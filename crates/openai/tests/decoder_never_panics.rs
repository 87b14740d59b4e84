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

/// JSON text (not a `Value`: these shapes are exactly what a `Value` cannot hold) mixing
/// ordinary values with big exponents, escapes (lone and paired surrogates included) and
/// nesting past the recursion limit.
fn hostile_json_text() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        (any::<bool>(), -1200i32..1200, 0u32..10).prop_map(|(negative, exponent, mantissa)| {
            format!("{}{mantissa}.5e{exponent}", if negative { "-" } else { "" })
        }),
        "[0-9]{1,40}",
        prop::collection::vec(
            prop_oneof![
                (0xd800u32..0xe000).prop_map(|unit| format!("\\u{unit:04x}")),
                (0u32..0x10000).prop_map(|unit| format!("\\u{unit:04X}")),
                Just("\\n".to_owned()),
                Just("\\\\".to_owned()),
                "[a-z ]{0,4}",
            ],
            0..6
        )
        .prop_map(|pieces| format!("\"{}\"", pieces.concat())),
        (100usize..300).prop_map(|depth| format!("{}{}", "[".repeat(depth), "]".repeat(depth))),
        (100usize..300).prop_map(|depth| format!(
            "{}1{}",
            "{\"a\":".repeat(depth),
            "}".repeat(depth)
        )),
        Just("null".to_owned()),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4)
                .prop_map(|items| format!("[{}]", items.join(","))),
            prop::collection::vec(("[a-z_]{1,8}", inner), 0..4).prop_map(|fields| {
                let fields: Vec<String> = fields
                    .into_iter()
                    .map(|(key, value)| format!("\"{key}\":{value}"))
                    .collect();
                format!("{{{}}}", fields.join(","))
            }),
        ]
    })
}

fn event_type_name() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("response.done".to_owned()),
        Just("session.updated".to_owned()),
        Just("error".to_owned()),
        Just("output_audio_buffer.stopped".to_owned()),
        Just("session.update".to_owned()),
        Just("response.create".to_owned()),
        "[a-z_]{1,8}\\.[a-z_]{1,8}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn events_with_huge_numbers_escapes_and_deep_nesting_never_panic(
        event_type in event_type_name(),
        fields in prop::collection::vec(("[a-z_]{1,10}", hostile_json_text()), 0..4),
    ) {
        let mut text = format!("{{\"type\":\"{event_type}\"");
        for (key, value) in fields {
            text.push_str(&format!(",\"{key}\":{value}"));
        }
        text.push('}');
        // Either decodes, or a typed error: any panic fails the property.
        let _ = decode_server_event(&text);
        let _ = decode_client_event(&text);
    }

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

/// Valid JSON that serde_json cannot hold as a `Value`, under an event `type`.
fn hostile_payloads(event_type: &str) -> Vec<(&'static str, String)> {
    let deep = format!(
        r#"{{"type":"{event_type}","payload":{}1{}}}"#,
        "[".repeat(200),
        "]".repeat(200)
    );
    vec![
        (
            "a number beyond f64",
            format!(r#"{{"type":"{event_type}","n":1e999}}"#),
        ),
        (
            "a lone surrogate escape",
            format!(r#"{{"type":"{event_type}","s":"\ud800"}}"#),
        ),
        ("nesting deeper than 128", deep),
    ]
}

fn unrepresentable(error: &DecodeError, wanted_type: &str, text: &str) -> bool {
    matches!(error, DecodeError::Unrepresentable { event_type, position, .. }
        if event_type == wanted_type && position.byte_offset <= text.len())
}

#[test]
fn an_unknown_event_with_a_number_beyond_f64_is_a_typed_error_not_a_panic() {
    let (_, text) = &hostile_payloads("vendor.big")[0];
    let error = decode_server_event(text).expect_err("1e999 cannot be kept as a Value");
    assert!(unrepresentable(&error, "vendor.big", text), "{error:?}");
    let DecodeError::Unrepresentable { position, .. } = error else {
        unreachable!()
    };
    assert!(
        text[..=position.byte_offset].ends_with("1e999"),
        "the position points at the number: {position}"
    );
}

#[test]
fn an_unknown_event_with_a_lone_surrogate_is_a_typed_error_not_a_panic() {
    let (_, text) = &hostile_payloads("vendor.surrogate")[1];
    let error = decode_server_event(text).expect_err("a lone surrogate is no Rust string");
    assert!(
        unrepresentable(&error, "vendor.surrogate", text),
        "{error:?}"
    );
}

#[test]
fn an_unknown_event_nested_deeper_than_the_recursion_limit_is_a_typed_error_not_a_panic() {
    let (_, text) = &hostile_payloads("vendor.deep")[2];
    let error = decode_server_event(text).expect_err("too deep for serde_json");
    assert!(unrepresentable(&error, "vendor.deep", text), "{error:?}");
}

#[test]
fn the_client_decoder_meets_the_same_payloads_with_typed_errors() {
    for event_type in ["session.update", "response.create", "vendor.thing"] {
        for (what, text) in hostile_payloads(event_type) {
            let error = decode_client_event(&text).expect_err(what);
            assert!(
                unrepresentable(&error, event_type, &text),
                "{what} in {event_type}: {error:?}"
            );
        }
    }
}

#[test]
fn known_server_event_types_with_the_same_payloads_are_typed_errors() {
    for event_type in [
        "response.done",
        "error",
        "session.updated",
        "rate_limits.updated",
    ] {
        for (what, text) in hostile_payloads(event_type) {
            let error = decode_server_event(&text).expect_err(what);
            assert!(
                matches!(&error, DecodeError::Schema { event_type: got, .. } | DecodeError::Unrepresentable { event_type: got, .. } if got == event_type),
                "{what} in {event_type}: {error:?}"
            );
        }
    }
}

"""The oracle's own logic: strict where it must be, and loud on no data."""

import contextlib
import io
import json
import sys
import tempfile
import unittest
from pathlib import Path

import walkie_oracle as oracle

SAMPLES = Path(__file__).parent / "samples" / "trace"

PUSH_TO_TALK_UPDATE = {
    "event_id": "cli_001",
    "type": "session.update",
    "session": {
        "type": "realtime",
        "instructions": "You are a concise desktop assistant.",
        "output_modalities": ["audio"],
        "audio": {
            "input": {
                "format": {"type": "audio/pcm", "rate": 24000},
                "transcription": {"model": "gpt-4o-mini-transcribe"},
                "turn_detection": None,
            },
            "output": {"voice": "marin"},
        },
        "tools": [
            {
                "type": "function",
                "name": "get_time",
                "description": "Current local time",
                "parameters": {"type": "object", "properties": {}, "required": []},
            }
        ],
    },
}


# Walkie's defaults as the names program prints them: the current models, deprecated nowhere.
DEFAULTS = {"model": "gpt-realtime-2.1", "transcription_model": "gpt-realtime-whisper"}


def walkie_names() -> dict:
    """What a names program that agrees with the pinned SDK prints: every name the SDK spells
    out, every deprecated one marked with the SDK's date, and current defaults."""
    names = oracle.sdk_names()
    names["deprecated"] = [
        {"model": model, "shutdown_on": date} for model, date in oracle.sdk_deprecations().items()
    ]
    names["defaults"] = dict(DEFAULTS)
    return names


def marked(names: dict) -> dict[str, str]:
    return {mark["model"]: mark["shutdown_on"] for mark in names["deprecated"]}


def names_program(case: unittest.TestCase, names: dict) -> str:
    """A program that prints `names` as Walkie's would, removed after the test."""
    directory = tempfile.TemporaryDirectory()
    case.addCleanup(directory.cleanup)
    program = Path(directory.name) / "names"
    program.write_text(f"#!{sys.executable}\nprint({json.dumps(json.dumps(names))})\n")
    program.chmod(0o755)
    return str(program)


def with_change(event: dict, path: list, value) -> str:
    changed = json.loads(json.dumps(event))
    target = changed
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return json.dumps(changed)


class ClientEvents(unittest.TestCase):
    def test_a_ga_session_update_passes(self):
        event_type, problems = oracle.check_client_event(json.dumps(PUSH_TO_TALK_UPDATE))
        self.assertEqual(event_type, "session.update")
        self.assertEqual(problems, [])

    def test_an_unknown_top_level_field_fails_with_its_path(self):
        _, problems = oracle.check_client_event(json.dumps({"type": "input_audio_buffer.commit", "bogus": 1}))
        self.assertEqual([(p.path, p.kind) for p in problems], [("bogus", "unknown field")])

    def test_an_unknown_field_deep_in_the_session_fails_with_its_path(self):
        text = with_change(
            PUSH_TO_TALK_UPDATE,
            ["session", "audio", "input", "turn_detection"],
            {"type": "server_vad", "silence_ms": 500},
        )
        _, problems = oracle.check_client_event(text)
        self.assertIn(
            ("session.audio.input.turn_detection.silence_ms", "unknown field"),
            [(p.path, p.kind) for p in problems],
        )

    def test_an_unknown_field_inside_a_union_member_fails_and_other_members_are_not_blamed(self):
        text = json.dumps(
            {
                "type": "conversation.item.create",
                "item": {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "hi", "lang": "en"}],
                },
            }
        )
        _, problems = oracle.check_client_event(text)
        self.assertEqual(
            {(p.path, p.kind) for p in problems}, {("item.content[0].lang", "unknown field")}
        )

    def test_a_picture_shown_with_a_question_passes_and_a_misshapen_one_fails(self):
        def shown(picture: dict) -> str:
            return json.dumps(
                {
                    "type": "conversation.item.create",
                    "item": {
                        "type": "message",
                        "role": "user",
                        "content": [picture, {"type": "input_text", "text": "What is this?"}],
                    },
                }
            )

        url = "data:image/jpeg;base64,/9j/4AAQ"
        self.assertEqual(oracle.check_client_event(shown({"type": "input_image", "image_url": url})), ("conversation.item.create", []))
        _, problems = oracle.check_client_event(shown({"type": "input_image", "image_url": url, "detail": "sharp"}))
        self.assertIn("item.content[0].detail", [p.path for p in problems])
        _, problems = oracle.check_client_event(shown({"type": "input_image", "image_url": {"url": url}}))
        self.assertIn("item.content[0].image_url", [p.path for p in problems])

    def test_a_trace_that_never_shows_a_picture_nor_answers_a_tool_fails_for_want_of_them(self):
        with tempfile.TemporaryDirectory() as root:
            test_dir = Path(root) / "some_test"
            test_dir.mkdir()
            typed = {"type": "conversation.item.create", "item": {"type": "message", "role": "user",
                                                                  "content": [{"type": "input_text", "text": "hi"}]}}
            record = {"call_id": "rtc_1", "received_at_unix_ms": 1, "text": json.dumps(typed)}
            (test_dir / "client-events.jsonl").write_text(json.dumps(record) + "\n")
            stderr = io.StringIO()
            with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
                status = oracle.main(
                    ["--trace-root", root, "--names", names_program(self, walkie_names()),
                     "--decoder", sys.executable, "-c", ECHO_DECODED]
                )
        self.assertEqual(status, 1)
        self.assertIn("carried input_image;", stderr.getvalue())
        self.assertIn("carried function_call_output;", stderr.getvalue())
        self.assertNotIn("carried input_text;", stderr.getvalue())

    def test_a_function_tool_with_an_unknown_field_fails(self):
        text = with_change(PUSH_TO_TALK_UPDATE, ["session", "tools", 0, "strict"], True)
        _, problems = oracle.check_client_event(text)
        self.assertIn(("session.tools[0].strict", "unknown field"), [(p.path, p.kind) for p in problems])

    def test_model_in_a_session_update_fails(self):
        text = with_change(PUSH_TO_TALK_UPDATE, ["session", "model"], "gpt-realtime")
        _, problems = oracle.check_client_event(text)
        self.assertEqual([p.kind for p in problems], ["model in session.update"])

    def test_the_beta_session_shape_fails(self):
        text = json.dumps({"type": "session.update", "session": {"type": "realtime", "modalities": ["audio"]}})
        _, problems = oracle.check_client_event(text)
        self.assertIn(("session.modalities", "unknown field"), [(p.path, p.kind) for p in problems])

    def test_a_number_sent_as_a_string_fails(self):
        text = json.dumps(
            {"type": "conversation.item.truncate", "item_id": "item_A1", "content_index": 0, "audio_end_ms": "1500"}
        )
        _, problems = oracle.check_client_event(text)
        self.assertEqual([p.path for p in problems], ["audio_end_ms"])

    def test_a_type_outside_the_ga_union_fails(self):
        event_type, problems = oracle.check_client_event(json.dumps({"type": "transcription_session.update"}))
        self.assertEqual(event_type, "transcription_session.update")
        self.assertEqual([p.kind for p in problems], ["not a GA client event"])

    def test_every_sdk_model_refuses_unknown_fields_itself(self):
        # The residual walk over a validated instance is a second line; pydantic refuses first.
        for model in (oracle.CLIENT_EVENT_MODELS["session.update"], oracle.SESSION_MODEL):
            self.assertEqual(model.model_config["extra"], "forbid")

    def test_every_member_of_the_client_union_is_known_by_type(self):
        self.assertIn("session.update", oracle.CLIENT_EVENT_MODELS)
        self.assertIn("output_audio_buffer.clear", oracle.CLIENT_EVENT_MODELS)
        self.assertEqual(len(oracle.CLIENT_EVENT_MODELS), 11)


class SessionPart(unittest.TestCase):
    def test_a_session_with_its_model_passes(self):
        session = dict(PUSH_TO_TALK_UPDATE["session"], model="gpt-realtime")
        self.assertEqual(oracle.check_session_part(session), [])

    def test_a_session_with_an_unknown_field_fails(self):
        session = dict(PUSH_TO_TALK_UPDATE["session"], voice="marin")
        self.assertEqual([(p.path, p.kind) for p in oracle.check_session_part(session)], [("voice", "unknown field")])


class TraceRoot(unittest.TestCase):
    def test_the_sample_trace_is_read_whole(self):
        report = oracle.check_trace_root(SAMPLES)
        self.assertEqual(report.client_events, 10)
        self.assertEqual(report.client_events_by_type["session.update"], 2)
        self.assertEqual(
            dict(report.created_by_kind), {"input_image": 1, "input_text": 1, "function_call_output": 1}
        )
        self.assertEqual((report.calls, report.session_parts), (3, 1))
        self.assertEqual(report.live_client_events, 4)
        self.assertEqual(report.live_client_events_by_type["session.input_audio.mute"], 1)
        self.assertEqual(report.live_bodies, 1)
        self.assertEqual(report.failures, [])

    def test_a_live_body_with_a_key_the_sdk_does_not_have_fails_with_its_path(self):
        body = json.loads((SAMPLES / "a_live_call" / "calls.jsonl").read_text())["live_session"]
        self.assertEqual(oracle.check_live_body(body), [])
        body["session"]["turn_detection"] = {"type": "server_vad"}
        body["session"]["audio"]["output"]["speed"] = 1.2
        self.assertEqual(
            sorted((p.path, p.kind) for p in oracle.check_live_body(body)),
            [("session.audio.output.speed", "unknown field"), ("session.turn_detection", "unknown field")],
        )
        del body["session"]["model"]
        self.assertIn("session.model", [p.path for p in oracle.check_live_body(body)])

    def test_a_realtime_event_on_a_live_call_and_a_live_event_with_an_unknown_field_fail(self):
        event_type, problems = oracle.check_live_client_event('{"type":"input_audio_buffer.commit"}')
        self.assertEqual((event_type, [p.kind for p in problems]), ("input_audio_buffer.commit", ["not a Live client event"]))
        _, problems = oracle.check_live_client_event('{"type":"session.input_audio.mute","muted":true}')
        self.assertEqual([(p.path, p.kind) for p in problems], [("muted", "unknown field")])
        _, problems = oracle.check_live_client_event('{"type":"session.thinking.append","content":"x","delegation_id":null}')
        self.assertEqual(problems, [])

    def test_a_trace_without_live_calls_fails_the_check(self):
        with tempfile.TemporaryDirectory() as root:
            realtime_only = Path(root) / "a_push_to_talk_turn"
            realtime_only.mkdir()
            for name in ("calls.jsonl", "client-events.jsonl"):
                (realtime_only / name).write_text((SAMPLES / "a_push_to_talk_turn" / name).read_text())
            stderr = io.StringIO()
            with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
                status = oracle.main(
                    ["--trace-root", root, "--names", names_program(self, walkie_names()),
                     "--decoder", sys.executable, "-c", ECHO_DECODED]
                )
        self.assertEqual(status, 1)
        self.assertIn("0 Live client events and 0 Live session bodies", stderr.getvalue())

    def test_a_bad_event_in_a_trace_is_reported_with_its_file_and_line(self):
        with tempfile.TemporaryDirectory() as root:
            test_dir = Path(root) / "some_test"
            test_dir.mkdir()
            good = {"call_id": "rtc_1", "received_at_unix_ms": 1, "text": '{"type":"response.create"}'}
            bad = dict(good, text='{"type":"response.create","response":{"voice":"marin"}}')
            (test_dir / "client-events.jsonl").write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
            report = oracle.check_trace_root(Path(root))
        self.assertEqual(report.client_events, 2)
        self.assertEqual(report.unknown_fields, 1)
        (failure,) = report.failures
        self.assertTrue(failure.where.endswith("client-events.jsonl:2"), failure.where)
        self.assertIn("response.voice", str(failure))

    def test_a_trace_root_without_client_events_fails_loudly(self):
        with tempfile.TemporaryDirectory() as root:
            stderr = io.StringIO()
            with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
                status = oracle.main(
                ["--trace-root", root, "--names", names_program(self, walkie_names()),
                 "--decoder", sys.executable, "-c", ECHO_DECODED]
            )
        self.assertEqual(status, 1)
        self.assertIn("no client events", stderr.getvalue())


# A stand-in decoder for the tests of the oracle's logic: it decodes everything.
ECHO_DECODED = (
    "import sys, json\n"
    "for line in sys.stdin:\n"
    "    event = json.loads(line)\n"
    "    print(json.dumps({'type': event['type'], 'verdict': 'decoded', 'detail': None,\n"
    "                      'usage': event.get('response', {}).get('usage')}))\n"
)


class ServerEvents(unittest.TestCase):
    def test_every_sdk_server_event_type_gets_instances_the_sdk_itself_accepts(self):
        events = oracle.build_server_events()
        self.assertEqual({t for t, _ in events}, set(oracle.SERVER_EVENT_MODELS))
        for event_type, text in events:
            problems = oracle.validate_strictly(oracle.SERVER_EVENT_MODELS[event_type], text)
            self.assertEqual(problems, [], text)
            self.assertEqual(json.loads(text)["type"], event_type)

    def test_successive_variants_reach_every_member_of_a_union(self):
        items = [json.loads(t)["item"]["type"] for k, t in oracle.build_server_events() if k == "conversation.item.added"]
        for item_type in ("message", "function_call", "function_call_output", "mcp_call", "mcp_list_tools"):
            self.assertIn(item_type, items)

    def test_decoded_and_kept_raw_pass_unknown_and_errors_fail(self):
        events = [("a", "{}"), ("a", "{}"), ("b", "{}"), ("c", "{}"), ("d", "{}")]
        verdicts = [
            {"verdict": "decoded"},
            {"verdict": "decoded"},
            {"verdict": "kept_raw"},
            {"verdict": "unknown"},
            {"verdict": "error", "detail": "missing field `id`"},
        ]
        report = oracle.judge_verdicts(events, verdicts)
        self.assertEqual((report.types_ok, report.types_total), (2, 4))
        self.assertEqual(sorted(report.failures), ["c", "d"])

    def test_a_response_done_whose_usage_is_read_short_of_a_figure_fails(self):
        done = [(k, t) for k, t in oracle.build_server_events() if k == "response.done"]
        full = [(k, t) for k, t in done if json.loads(t)["response"].get("usage", {}).get("output_token_details")]
        self.assertTrue(full, "the SDK-built instances include a usage by modality")
        sent = json.loads(full[0][1])["response"]["usage"]
        misread = json.loads(json.dumps(sent))
        del misread["output_token_details"]["audio_tokens"]
        report = oracle.judge_verdicts(full[:1], [{"verdict": "decoded", "usage": misread}])
        self.assertEqual(sorted(report.failures), ["response.done"])
        self.assertIn("its usage was read as", report.failures["response.done"][0][1]["detail"])
        read_whole = oracle.judge_verdicts(full[:1], [{"verdict": "decoded", "usage": sent}])
        self.assertEqual(read_whole.failures, {})

    def test_the_pinned_sdk_has_46_server_event_types(self):
        self.assertEqual(len(oracle.SERVER_EVENT_MODELS), oracle.SDK_SERVER_EVENT_TYPES)
        self.assertEqual(oracle.SDK_SERVER_EVENT_TYPES, 46)

    def test_good_traffic_and_a_decoder_that_decodes_everything_pass_with_a_summary(self):
        stdout = io.StringIO()
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(stdout):
            status = oracle.main(
                ["--trace-root", str(SAMPLES), "--names", names_program(self, walkie_names()),
                 "--decoder", sys.executable, "-c", ECHO_DECODED]
            )
        self.assertEqual(status, 0)
        types = len(oracle.SERVER_EVENT_MODELS)
        self.assertIn("oracle: 10 client events (2 conversation.item.create, 2 session.update, ", stdout.getvalue())
        self.assertIn("created: 1 function_call_output, 1 input_image, 1 input_text)", stdout.getvalue())
        self.assertIn("0 unknown fields, 0 model in session.update; 1 session parts checked", stdout.getvalue())
        self.assertIn(f"{types}/{types} server event types decoded or kept", stdout.getvalue())
        live = len(oracle.LIVE_SERVER_EVENT_MODELS)
        self.assertEqual(live, oracle.SDK_LIVE_SERVER_EVENT_TYPES)
        self.assertIn(
            "Live: 4 client events (1 session.close, 1 session.commentary.append, 1 session.input_audio.mute, "
            f"1 session.input_audio.unmute) and 1 session bodies checked; {live}/{live} server event types decoded or kept",
            stdout.getvalue(),
        )
        names = oracle.sdk_names()
        self.assertIn(
            f"{len(names['models'])} models, {len(names['transcription_models'])} transcription models and "
            f"{len(names['voices'])} voices as the SDK names them, 2 Live models and 23 Live voices; ",
            stdout.getvalue(),
        )
        checked = len(set(names["models"]) | set(names["transcription_models"]) | set(DEFAULTS.values()))
        self.assertIn(
            f"defaults and offered models: none deprecated unwarned ({checked} checked against the SDK's "
            f"{len(oracle.sdk_deprecations())} deprecated names)",
            stdout.getvalue(),
        )

    def test_a_decoder_that_dies_fails_the_check(self):
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            status = oracle.main(
                ["--trace-root", str(SAMPLES), "--names", names_program(self, walkie_names()),
                 "--decoder", sys.executable, "-c", "raise SystemExit('panicked')"]
            )
        self.assertEqual(status, 1)
        self.assertIn("the decoder gave no verdicts", stderr.getvalue())

    def test_a_decoder_that_fails_one_live_type_fails_the_check_naming_it(self):
        refuses_paused = (
            "import sys, json\n"
            "live = '--live' in sys.argv\n"
            "for line in sys.stdin:\n"
            "    event = json.loads(line)\n"
            "    bad = live and event['type'] == 'session.paused'\n"
            "    print(json.dumps({'type': event['type'], 'verdict': 'error' if bad else 'decoded',\n"
            "                      'detail': 'no such event' if bad else None,\n"
            "                      'usage': event.get('response', {}).get('usage')}))\n"
        )
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            status = oracle.main(
                ["--trace-root", str(SAMPLES), "--names", names_program(self, walkie_names()),
                 "--decoder", sys.executable, "-c", refuses_paused]
            )
        self.assertEqual(status, 1)
        self.assertIn("oracle: FAILED: Live session.paused: 2 of 2 SDK-built instances not decoded", stderr.getvalue())
        self.assertNotIn("FAILED: session.paused", stderr.getvalue())

    def test_the_live_server_union_is_the_webrtc_one_with_paused_and_resumed(self):
        types = set(oracle.LIVE_SERVER_EVENT_MODELS)
        self.assertTrue({"session.paused", "session.resumed", "session.input_transcript.delta", "session.closed"} <= types)
        self.assertNotIn("response.done", types)
        events = oracle.build_server_events({"session.usage.updated": oracle.LIVE_SERVER_EVENT_MODELS["session.usage.updated"]})
        self.assertTrue(any('"active_seconds"' in text for _, text in events), events)

    def test_the_live_names_are_the_sdks(self):
        names = oracle.sdk_names()
        self.assertEqual(names["live_models"], ["gpt-live-1", "gpt-live-1.1"])
        self.assertIn("meridian", names["live_voices"])
        del names["live_voices"][0]
        self.assertIn("live_voices: the SDK names 'alloy', Walkie does not offer it", oracle.check_names(names))

    def test_the_sdks_own_names_pass(self):
        self.assertEqual(oracle.check_names(oracle.sdk_names()), [])
        self.assertIn("gpt-realtime", oracle.sdk_names()["models"])
        self.assertIn("gpt-realtime-whisper", oracle.sdk_names()["transcription_models"])
        self.assertNotIn("gpt-realtime-whisper", oracle.sdk_names()["models"])
        self.assertIn("marin", oracle.sdk_names()["voices"])

    def test_a_transcription_model_missing_and_one_extra_are_each_named(self):
        names = oracle.sdk_names()
        names["transcription_models"].remove("gpt-live-transcribe")
        names["transcription_models"].append("gpt-realtime")
        self.assertEqual(
            oracle.check_names(names),
            [
                "transcription_models: the SDK names 'gpt-live-transcribe', Walkie does not offer it",
                "transcription_models: Walkie offers 'gpt-realtime', the SDK does not name it",
            ],
        )

    def test_the_names_of_before_without_transcription_models_fail(self):
        names = oracle.sdk_names()
        del names["transcription_models"]
        self.assertEqual(oracle.check_names(names), ["transcription_models: Walkie printed no list"])

    def test_a_model_missing_and_a_voice_extra_are_each_named(self):
        names = oracle.sdk_names()
        names["models"].remove("gpt-realtime-mini")
        names["voices"].append("nova")
        self.assertEqual(
            oracle.check_names(names),
            [
                "models: the SDK names 'gpt-realtime-mini', Walkie does not offer it",
                "voices: Walkie offers 'nova', the SDK does not name it",
            ],
        )

    def test_names_that_differ_fail_the_whole_check(self):
        names = oracle.sdk_names()
        names["models"].append("gpt-5-realtime")
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            status = oracle.main(
                ["--trace-root", str(SAMPLES), "--names", names_program(self, names),
                 "--decoder", sys.executable, "-c", ECHO_DECODED]
            )
        self.assertEqual(status, 1)
        self.assertIn("Walkie offers 'gpt-5-realtime'", stderr.getvalue())

    def test_a_decoder_that_answers_too_few_lines_is_an_error(self):
        with self.assertRaises(ValueError):
            oracle.judge_verdicts([("a", "{}"), ("b", "{}")], [{"verdict": "decoded"}])


# A field as the SDK's generator writes it: two bullets, the names and the date wrapped.
SAMPLE_MODULE = '''
class SessionRequest(BaseModel):
    model: Union[str, Literal["rt-old", "rt-old-2025", "rt-mini", "rt-new"], None] = None
    """The Realtime model used for this session.

    Deprecated values:

    - "rt-old", "rt-old-2025",
      "rt-mini": Announced
      shutdown date: 2027-01-20. See
      https://developers.openai.com/api/docs/deprecations for details and
      recommended replacements.
    - "rt-older": Announced shutdown date: 2026-09-30.
    """

    voice: Optional[str] = None
    """The voice, never deprecated here."""

    speed: Optional[float] = None
'''


class Deprecations(unittest.TestCase):
    def sample(self, field: str) -> dict[str, str]:
        docstring = oracle.field_docstring(SAMPLE_MODULE, "SessionRequest", field, "sample.py")
        return oracle.deprecated_values(docstring, "sample.py")

    def test_every_bullet_of_a_field_docstring_is_read_with_its_date(self):
        self.assertEqual(
            self.sample("model"),
            {"rt-old": "2027-01-20", "rt-old-2025": "2027-01-20", "rt-mini": "2027-01-20", "rt-older": "2026-09-30"},
        )

    def test_a_docstring_without_deprecated_values_and_a_field_without_one_give_none(self):
        self.assertEqual(self.sample("voice"), {})
        self.assertIsNone(oracle.field_docstring(SAMPLE_MODULE, "SessionRequest", "speed", "sample.py"))
        self.assertEqual(self.sample("speed"), {})

    def test_a_field_or_class_the_source_does_not_have_is_an_error_naming_the_file(self):
        with self.assertRaisesRegex(oracle.SdkDocstringError, r"^sample\.py: .*'language'"):
            oracle.field_docstring(SAMPLE_MODULE, "SessionRequest", "language", "sample.py")
        with self.assertRaisesRegex(oracle.SdkDocstringError, r"^sample\.py: no class"):
            oracle.field_docstring(SAMPLE_MODULE, "TranscriptionRequest", "model", "sample.py")

    def test_a_deprecated_values_block_of_another_shape_is_an_error_not_a_partial_list(self):
        base = 'The model.\n\nDeprecated values:\n\n- "rt-old": Announced shutdown date: 2027-01-20.\n'
        for unreadable in (
            base + '- "rt-odd": Not a supported model ID. Retained for SDK compatibility.\n',
            base + '- "rt-gone": It was shut down on October 23, 2026.\n',
            base + '- "rt-soon": Announced shutdown date: 2027-02-30.\n',
            base + "\nThese go away; see the deprecations page.\n",
            base + 'Deprecated values:\n\n- "rt-new": Announced shutdown date: 2028-01-01.\n',
            "The model.\n\nDeprecated values:\n",
        ):
            with self.subTest(unreadable=unreadable):
                with self.assertRaisesRegex(oracle.SdkDocstringError, r"^sdk/model\.py: "):
                    oracle.deprecated_values(unreadable, "sdk/model.py")
        self.assertEqual(oracle.deprecated_values(base, "sdk/model.py"), {"rt-old": "2027-01-20"})

    def test_the_pinned_sdk_deprecates_the_first_realtime_and_transcription_models(self):
        session, transcription = (oracle.deprecated_field_values(cls, field) for cls, field in oracle.DEPRECATION_FIELDS)
        self.assertEqual(
            session,
            dict.fromkeys(
                ["gpt-realtime", "gpt-realtime-2025-08-28", "gpt-realtime-mini", "gpt-realtime-mini-2025-12-15",
                 "gpt-audio-mini", "gpt-audio-mini-2025-12-15"],
                "2027-01-20",
            ),
        )
        self.assertEqual(transcription["whisper-1"], "2027-02-26")
        self.assertNotIn("whisper-1", session)
        deprecated = oracle.sdk_deprecations()
        self.assertEqual(deprecated, {**session, **transcription})
        self.assertEqual((deprecated["gpt-realtime"], deprecated["whisper-1"]), ("2027-01-20", "2027-02-26"))
        for current in ("gpt-realtime-2.1", "gpt-realtime-2.1-mini", "gpt-realtime-whisper"):
            self.assertNotIn(current, deprecated)
        # Each name read whole: every deprecated name is one the SDK's literals spell out.
        names = oracle.sdk_names()
        self.assertLessEqual(set(session), set(names["models"]))
        self.assertLessEqual(set(transcription), set(names["transcription_models"]))

    def test_a_listing_that_marks_what_the_sdk_deprecates_passes(self):
        names = walkie_names()
        problems, report = oracle.check_deprecations(names)
        self.assertEqual(problems, [])
        offered = set(names["models"]) | set(names["transcription_models"])
        self.assertEqual(report.names_checked, len(offered))
        self.assertEqual(report.sdk_deprecated, len(oracle.sdk_deprecations()))
        self.assertEqual(report.sdk_deprecated, 11)

    def test_a_deprecated_default_fails_with_its_date(self):
        names = walkie_names()
        names["defaults"]["model"] = "gpt-realtime"
        problems, _ = oracle.check_deprecations(names)
        self.assertEqual(
            problems,
            ["defaults.model: Walkie's default 'gpt-realtime' is deprecated in the SDK, announced shutdown date 2027-01-20"],
        )
        names["defaults"]["transcription_model"] = "whisper-1"
        problems, _ = oracle.check_deprecations(names)
        self.assertIn(
            "defaults.transcription_model: Walkie's default 'whisper-1' is deprecated in the SDK, "
            "announced shutdown date 2027-02-26",
            problems,
        )

    def test_a_default_outside_the_offered_names_still_counts_as_checked(self):
        names = walkie_names()
        names["defaults"]["model"] = "gpt-realtime-3"
        problems, report = oracle.check_deprecations(names)
        self.assertEqual(problems, [])
        self.assertEqual(report.names_checked, oracle.check_deprecations(walkie_names())[1].names_checked + 1)

    def test_a_deprecated_model_offered_without_a_warning_fails(self):
        names = walkie_names()
        names["deprecated"] = [m for m in names["deprecated"] if m["model"] != "whisper-1"]
        problems, _ = oracle.check_deprecations(names)
        self.assertEqual(
            problems,
            ["transcription_models: Walkie offers 'whisper-1' without a warning; the SDK deprecates it, "
             "announced shutdown date 2027-02-26"],
        )

    def test_a_warning_with_another_date_fails_once(self):
        names = walkie_names()
        for mark in names["deprecated"]:
            if mark["model"] == "gpt-realtime-mini":
                mark["shutdown_on"] = "2027-03-01"
        problems, _ = oracle.check_deprecations(names)
        self.assertEqual(
            problems,
            ["models: Walkie offers 'gpt-realtime-mini' with a warning of shutdown on 2027-03-01; "
             "the SDK's announced shutdown date is 2027-01-20"],
        )
        # A name Walkie no longer offers but still marks (a saved setting it moves) is held to
        # the SDK's date too.
        names["models"].remove("gpt-realtime-mini")
        problems, _ = oracle.check_deprecations(names)
        self.assertEqual(
            problems,
            ["deprecated: Walkie marks 'gpt-realtime-mini' to shut down on 2027-03-01; "
             "the SDK's announced shutdown date is 2027-01-20"],
        )

    def test_a_warning_the_sdk_does_not_give_fails(self):
        names = walkie_names()
        names["deprecated"].append({"model": "gpt-realtime-2", "shutdown_on": "2027-06-01"})
        problems, _ = oracle.check_deprecations(names)
        self.assertEqual(
            problems,
            ["deprecated: Walkie marks 'gpt-realtime-2' to shut down on 2027-06-01; "
             "the SDK does not list it as deprecated"],
        )

    def test_the_names_of_before_without_deprecations_nor_defaults_fail(self):
        problems, _ = oracle.check_deprecations(oracle.sdk_names())
        self.assertIn("deprecated: Walkie printed no list", problems)
        self.assertIn("defaults: Walkie printed none", problems)
        self.assertIn(
            "models: Walkie offers 'gpt-realtime' without a warning; the SDK deprecates it, "
            "announced shutdown date 2027-01-20",
            problems,
        )

    def test_a_deprecated_default_fails_the_whole_check_with_the_count_in_the_summary(self):
        names = walkie_names()
        names["defaults"]["transcription_model"] = "gpt-4o-mini-transcribe"
        stderr, stdout = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(stdout):
            status = oracle.main(
                ["--trace-root", str(SAMPLES), "--names", names_program(self, names),
                 "--decoder", sys.executable, "-c", ECHO_DECODED]
            )
        self.assertEqual(status, 1)
        self.assertIn(
            "oracle: FAILED: defaults.transcription_model: Walkie's default 'gpt-4o-mini-transcribe' is "
            "deprecated in the SDK, announced shutdown date 2027-02-26",
            stderr.getvalue(),
        )
        self.assertIn("defaults and offered models: 1 deprecation problems (", stdout.getvalue())

    def test_an_sdk_whose_deprecations_cannot_be_read_fails_the_whole_check(self):
        def unreadable():
            raise oracle.SdkDocstringError("sdk/audio_transcription.py: a deprecation bullet not of the known form")

        program = names_program(self, walkie_names())
        original = oracle.sdk_deprecations
        oracle.sdk_deprecations = unreadable
        self.addCleanup(setattr, oracle, "sdk_deprecations", original)
        stderr, stdout = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(stdout):
            status = oracle.main(
                ["--trace-root", str(SAMPLES), "--names", program, "--decoder", sys.executable, "-c", ECHO_DECODED]
            )
        self.assertEqual(status, 1)
        self.assertIn(
            "oracle: FAILED: the SDK's deprecated models could not be read: sdk/audio_transcription.py:",
            stderr.getvalue(),
        )
        self.assertIn("defaults and offered models: deprecations not checked", stdout.getvalue())


if __name__ == "__main__":
    unittest.main()

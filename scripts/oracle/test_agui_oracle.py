"""The AG-UI oracle's own logic: strict where it must be, and loud on no data."""

import contextlib
import io
import json
import tempfile
import unittest
from pathlib import Path

import agui_oracle as oracle

TOOL_CALL = {
    "id": "call_1",
    "role": "assistant",
    "toolCalls": [{"id": "call_1", "type": "function", "function": {"name": "add", "arguments": "{}"}}],
}


class Events(unittest.TestCase):
    def test_the_tool_call_events_walkie_writes_are_accepted(self):
        for event in [
            {"type": "TOOL_CALL_START", "toolCallId": "call_1", "toolCallName": "add", "timestamp": 1},
            {"type": "TOOL_CALL_ARGS", "toolCallId": "call_1", "delta": "{}", "timestamp": 1},
            {"type": "TOOL_CALL_END", "toolCallId": "call_1", "timestamp": 1},
            {"type": "TOOL_CALL_RESULT", "messageId": "call_1-result", "toolCallId": "call_1",
             "content": "5", "role": "tool", "timestamp": 1},
        ]:
            self.assertIsNone(oracle.check_event(event), event)

    def test_an_unknown_field_is_refused_even_deep_in_a_snapshot(self):
        self.assertIn("toolCallName", oracle.check_event({"type": "TOOL_CALL_START", "toolCallId": "c"}))
        self.assertIn("extra", oracle.check_event({"type": "TOOL_CALL_END", "toolCallId": "c", "callId": "c"}).lower())
        nested = json.loads(json.dumps(TOOL_CALL))
        nested["toolCalls"][0]["function"]["extra"] = 1
        problem = oracle.check_event({"type": "MESSAGES_SNAPSHOT", "messages": [nested]})
        self.assertIn("function.extra", problem)

    def test_a_tool_message_needs_the_call_it_answers(self):
        self.assertIsNone(oracle.check_message(TOOL_CALL))
        self.assertIsNone(oracle.check_message({"id": "r", "role": "tool", "content": "5", "toolCallId": "call_1"}))
        self.assertIn("toolCallId", oracle.check_message({"id": "r", "role": "tool", "content": "5"}))


class Root(unittest.TestCase):
    def run_main(self, root: Path) -> tuple[int, str]:
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = oracle.main(["--root", str(root)])
        return code, err.getvalue()

    def test_no_journal_at_all_fails(self):
        with tempfile.TemporaryDirectory() as empty:
            code, said = self.run_main(Path(empty))
        self.assertEqual(code, 1)
        self.assertIn("a check of nothing is not a pass", said)

    def test_a_bad_event_in_a_journal_fails_naming_its_line_and_missing_types_fail_too(self):
        with tempfile.TemporaryDirectory() as root:
            folder = Path(root) / "conversations" / "c1"
            folder.mkdir(parents=True)
            (folder / "journal.jsonl").write_text(
                json.dumps({"record": "started"}) + "\n"
                + json.dumps({"record": "agui", "event": {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}}) + "\n"
                + json.dumps({"record": "agui", "event": {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "tool"}}) + "\n"
            )
            (folder / "transcript.json").write_text(json.dumps({"messages": [TOOL_CALL]}))
            code, said = self.run_main(Path(root))
        self.assertEqual(code, 1)
        self.assertIn("journal.jsonl:3", said)
        self.assertIn("no saved conversation", said)
        self.assertIn("TOOL_CALL_RESULT", said)


if __name__ == "__main__":
    unittest.main()

"""An independent oracle for the transcripts: what Walkie saved checked against the official AG-UI SDK.

Walkie writes its transcripts as AG-UI events (DESIGN.md rule 3) and assembles them into AG-UI
messages with its own crate (walkie-agui); tests that use that crate on both sides prove the two
agree, not that either is AG-UI. This check uses the AG-UI Python SDK's models (ag-ui-protocol,
pinned in requirements.txt) instead, on every conversation the end-to-end tests saved:

1. every AG-UI event in a journal (`journal.jsonl`, records `"record": "agui"`) must validate as
   the SDK's `Event` union;
2. every message of a `transcript.json` must validate as the SDK's `Message` union;
3. the tests must have saved, among them, every event type Walkie writes (`REQUIRED_EVENT_TYPES`:
   text messages, runs, and tool calls with their results), or the SDK never checked them.

The SDK's models keep unknown fields (`extra="allow"`); here every one is switched to
`extra="forbid"` and rebuilt, so pydantic reports an unknown field, at any depth, with its path.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import sys
import typing
from pathlib import Path

import pydantic
from ag_ui import core as agui
from ag_ui._generated import models as agui_models


def _models_in(annotation: object) -> list[type]:
    """The pydantic models an annotation names, at any depth (lists, unions, Annotated)."""
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
        return [annotation]
    return [model for arg in typing.get_args(annotation) for model in _models_in(arg)]


def _strict_models() -> int:
    """Makes every SDK model refuse unknown fields. The SDK builds its models on import, so
    each is rebuilt after the switch, the models it holds first (depth first, in a fixed
    order): a model rebuilt before one it holds would keep that one's lenient validator, and
    which came first would depend on where the classes sit in memory."""
    found: set[type] = set()
    stack = [agui_models.GeneratedBaseModel]
    while stack:
        for sub in stack.pop().__subclasses__():
            if sub not in found:
                found.add(sub)
                stack.append(sub)
    for model in found:
        model.model_config["extra"] = "forbid"
    rebuilt: set[type] = set()

    def rebuild(model: type) -> None:
        if model in rebuilt:
            return
        rebuilt.add(model)
        for field in model.model_fields.values():
            for held in _models_in(field.annotation):
                if held in found:
                    rebuild(held)
        model.model_rebuild(force=True)

    for model in sorted(found, key=lambda model: (model.__module__, model.__qualname__)):
        rebuild(model)
    return len(found)


STRICT_MODEL_COUNT = _strict_models()
EVENT = pydantic.TypeAdapter(agui.Event)
MESSAGE = pydantic.TypeAdapter(agui.Message)

REQUIRED_EVENT_TYPES = (
    "RUN_STARTED",
    "RUN_FINISHED",
    "TEXT_MESSAGE_START",
    "TEXT_MESSAGE_CONTENT",
    "TEXT_MESSAGE_END",
    "MESSAGES_SNAPSHOT",
    "TOOL_CALL_START",
    "TOOL_CALL_ARGS",
    "TOOL_CALL_END",
    "TOOL_CALL_RESULT",
)


@dataclasses.dataclass
class Report:
    journals: int = 0
    transcripts: int = 0
    events_by_type: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    messages_by_role: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    failures: list[str] = dataclasses.field(default_factory=list)


def _first_problem(error: pydantic.ValidationError) -> str:
    first = error.errors()[0]
    path = ".".join(str(part) for part in first["loc"])
    return f"{first['msg']} at {path or '(top)'} ({len(error.errors())} problem(s))"


def check_event(event: object) -> str | None:
    """Why the SDK refuses this event, or None."""
    try:
        EVENT.validate_python(event)
    except pydantic.ValidationError as error:
        return _first_problem(error)
    return None


def check_message(message: object) -> str | None:
    """Why the SDK refuses this message, or None."""
    try:
        MESSAGE.validate_python(message)
    except pydantic.ValidationError as error:
        return _first_problem(error)
    return None


def check_journal(path: Path, report: Report) -> None:
    report.journals += 1
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # A torn last line is the store's to recover, not an AG-UI question.
        if not isinstance(record, dict) or record.get("record") != "agui":
            continue
        event = record.get("event")
        report.events_by_type[event.get("type") if isinstance(event, dict) else None] += 1
        problem = check_event(event)
        if problem:
            report.failures.append(f"{path}:{number}: {problem}")


def check_transcript(path: Path, report: Report) -> None:
    report.transcripts += 1
    try:
        messages = json.loads(path.read_text(encoding="utf-8")).get("messages", [])
    except (json.JSONDecodeError, AttributeError) as error:
        report.failures.append(f"{path}: not a transcript: {error}")
        return
    for index, message in enumerate(messages):
        report.messages_by_role[message.get("role") if isinstance(message, dict) else None] += 1
        problem = check_message(message)
        if problem:
            report.failures.append(f"{path}: message {index}: {problem}")


def check_root(root: Path) -> Report:
    report = Report()
    for journal in sorted(root.rglob("journal.jsonl")):
        check_journal(journal, report)
    for transcript in sorted(root.rglob("transcript.json")):
        check_transcript(transcript, report)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, required=True, help="where the end-to-end tests saved conversations")
    args = parser.parse_args(argv)
    report = check_root(args.root) if args.root.is_dir() else Report()
    ok = True
    if report.journals == 0:
        print(f"agui oracle: FAILED: no journal under {args.root}; a check of nothing is not a pass", file=sys.stderr)
        ok = False
    for failure in report.failures[:20]:
        print(f"agui oracle: FAILED: {failure}", file=sys.stderr)
    if report.failures:
        print(f"agui oracle: FAILED: {len(report.failures)} refusals in all", file=sys.stderr)
        ok = False
    for missing in [kind for kind in REQUIRED_EVENT_TYPES if report.events_by_type[kind] == 0]:
        print(
            f"agui oracle: FAILED: no saved conversation under {args.root} has a {missing}; the end-to-end "
            "tests must write one, or the SDK never checks it",
            file=sys.stderr,
        )
        ok = False
    by_type = ", ".join(f"{kind} {count}" for kind, count in sorted(report.events_by_type.items(), key=str))
    by_role = ", ".join(f"{role} {count}" for role, count in sorted(report.messages_by_role.items(), key=str))
    print(
        f"agui oracle: {sum(report.events_by_type.values())} events in {report.journals} journals ({by_type}); "
        f"{sum(report.messages_by_role.values())} messages in {report.transcripts} transcript.json ({by_role}); "
        f"checked with {STRICT_MODEL_COUNT} strict AG-UI SDK models",
        file=sys.stderr,
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""An independent oracle: Walkie's wire traffic checked against the official SDK's GA types.

Walkie's own tests run against its own local provider, which shares Walkie's protocol types, so
they prove that the two halves agree, not that Walkie speaks OpenAI's protocol. This check uses
openai-python's GA Realtime models (pinned in requirements.txt) as the reference instead:

1. every client event the local provider received in the end-to-end tests (`client-events.jsonl`
   under a trace root) must validate as `RealtimeClientEvent`, with unknown fields as errors at
   every level, and no `session.update` may carry `model`;
2. every multipart `session` part of a call setup (`calls.jsonl`) must validate as
   `RealtimeSessionCreateRequest`, unknown fields again errors; and for Live API (GPT-Live) calls,
   every JSON body of `POST /v1/live/sessions` (`live_session`) must validate as the SDK's
   `LiveCreateParams` and every data-channel message (`live-client-events.jsonl`) as its Live
   `ClientEvent`, unknown keys errors there too (the trace must hold some of each);
3. server events built from the SDK's own models, one or more instances for every member of
   `RealtimeServerEvent` (46 in the pinned SDK), are fed through Walkie's decoder (a small Rust
   program), which must decode each one or keep it raw on purpose (`KEPT_RAW_SERVER_EVENT_TYPES`),
   and must read a `response.done`'s usage figure for figure as the SDK wrote it; the same for
   every member of the Live API's `ConnectServerEvent` (30), through Walkie's Live decoder
   (`walkie_openai::live`, `KEPT_RAW_LIVE_SERVER_EVENT_TYPES`);
4. the realtime model, transcription model and voice names Walkie's settings offer
   (`walkie_openai::names`, printed by another small Rust program) must be exactly the SDK's
   `model` and `voice` literals, and the Live models and voices the Live API's;
5. neither of Walkie's defaults may be a model the SDK deprecates, every deprecated model Walkie
   offers must carry Walkie's warning with the SDK's shutdown date, and Walkie may warn of no
   shutdown the SDK does not announce. The SDK says which names are deprecated only in the
   docstrings of its `model` fields ("Deprecated values:"), so they are read from its source.

The SDK's models allow unknown fields (`extra="allow"`); here every SDK model is switched to
`extra="forbid"` before any of them is built, so pydantic itself reports an unknown field with
its path, through unions and nested models alike.
"""

from __future__ import annotations

import argparse
import ast
import collections
import dataclasses
import datetime
import importlib
import inspect
import json
import pkgutil
import re
import subprocess
import sys
import types
import typing
from pathlib import Path

import pydantic
import typing_extensions

# Every SDK model must be defined before the switch below, so the realtime types are imported
# first; nothing may validate with them before `_forbid_unknown_fields` has run.
import openai.types.realtime as sdk_realtime
import openai.types.live as sdk_live
from openai import BaseModel as SdkModel
from openai.types.live.client_event import ClientEvent as SdkLiveClientEvent
from openai.types.live.connect_server_event import ConnectServerEvent as SdkLiveServerEvent
from openai.types.live.live_create_params import LiveCreateParams as SdkLiveCreateParams


def _sdk_model_classes() -> set[type]:
    found: set[type] = set()
    stack = [SdkModel]
    while stack:
        for sub in stack.pop().__subclasses__():
            if sub not in found:
                found.add(sub)
                stack.append(sub)
    return found


def _forbid_unknown_fields() -> int:
    """Makes every SDK model refuse unknown fields. Models build their validators lazily
    (`defer_build`), so a model already built would keep `extra="allow"` inside the validators
    of the models that contain it: that is refused here rather than silently tolerated."""
    classes = _sdk_model_classes()
    built = sorted(c.__qualname__ for c in classes if c.__pydantic_complete__)
    if built:
        raise RuntimeError(
            "SDK models were built before unknown fields could be forbidden: " + ", ".join(built[:10])
        )
    for cls in classes:
        cls.model_config["extra"] = "forbid"
    return len(classes)


STRICT_MODEL_COUNT = _forbid_unknown_fields()


def _forbid_unknown_keys_in_live_params() -> int:
    """The Live call's body is typed with TypedDicts (`…Param`), not models: each is given
    pydantic's `extra="forbid"` too, before any adapter is built, so an unknown key in the body
    is an error with its path."""
    count = 0
    for module in pkgutil.iter_modules(sdk_live.__path__):
        loaded = importlib.import_module(f"{sdk_live.__name__}.{module.name}")
        for value in vars(loaded).values():
            if typing_extensions.is_typeddict(value) and value.__module__ == loaded.__name__:
                value.__pydantic_config__ = pydantic.ConfigDict(extra="forbid")
                count += 1
    return count


STRICT_LIVE_PARAM_COUNT = _forbid_unknown_keys_in_live_params()
LIVE_CREATE_BODY = pydantic.TypeAdapter(SdkLiveCreateParams)


def union_members(alias: object) -> list[type]:
    """The members of an SDK union alias such as `RealtimeClientEvent` (an `Annotated[Union]`)."""
    if typing.get_origin(alias) is typing.Annotated:
        alias = typing.get_args(alias)[0]
    return list(typing.get_args(alias))


def type_literal(model: type) -> str:
    (literal,) = typing.get_args(model.model_fields["type"].annotation)
    return literal


CLIENT_EVENT_MODELS: dict[str, type] = {
    type_literal(m): m for m in union_members(sdk_realtime.RealtimeClientEvent)
}
SERVER_EVENT_MODELS: dict[str, type] = {
    type_literal(m): m for m in union_members(sdk_realtime.RealtimeServerEvent)
}
SESSION_MODEL = sdk_realtime.RealtimeSessionCreateRequest
# What a Live call's WebRTC data channel may carry: `ConnectServerEvent`, the server union with
# the paused and resumed events of a session with a wake policy.
LIVE_SERVER_EVENT_MODELS: dict[str, type] = {type_literal(m): m for m in union_members(SdkLiveServerEvent)}
LIVE_CLIENT_EVENT_MODELS: dict[str, type] = {type_literal(m): m for m in union_members(SdkLiveClientEvent)}


# ---------------------------------------------------------------------------------------------
# Validation with unknown fields as errors


@dataclasses.dataclass
class Problem:
    """One thing wrong in a checked JSON text: where (a dotted path) and what."""

    path: str
    kind: str
    message: str

    def __str__(self) -> str:
        return f"{self.path or '<root>'}: {self.message} ({self.kind})"


_TYPE_TAGS = {"str", "int", "float", "bool", "none", "any", "list", "dict", "literal"}


def _is_union_tag(component: object) -> bool:
    """pydantic puts the union member tried into an error's location: a model's class name
    (capitalised), or a type name such as `str` or `literal['x']`. JSON keys are snake_case."""
    if not isinstance(component, str):
        return False
    return component[:1].isupper() or "[" in component or component in _TYPE_TAGS


def _json_path(loc: tuple) -> str:
    parts: list[str] = []
    for component in loc:
        if _is_union_tag(component):
            continue
        if isinstance(component, int):
            parts.append(f"[{component}]")
        else:
            parts.append(("." if parts else "") + str(component))
    return "".join(parts)


def _mismatched_branches(errors: list[dict]) -> set[tuple]:
    """Union members that were never meant: their `type` (or `role`) literal did not match."""
    branches = set()
    for error in errors:
        loc = tuple(error["loc"])
        if error["type"] == "literal_error" and len(loc) >= 2 and loc[-1] in ("type", "role"):
            if _is_union_tag(loc[-2]):
                branches.add(loc[:-1])
    return branches


def problems_of(error: pydantic.ValidationError) -> list[Problem]:
    """The errors of one validation, without the noise of union members that did not apply."""
    errors = error.errors(include_url=False)
    branches = _mismatched_branches(errors)
    relevant = [
        e
        for e in errors
        if not any(tuple(e["loc"])[: len(b)] == b for b in branches)
    ] or errors
    seen = set()
    problems = []
    for e in relevant:
        path = _json_path(tuple(e["loc"]))
        kind = "unknown field" if e["type"] == "extra_forbidden" else e["type"]
        message = "not a field of the SDK's model" if kind == "unknown field" else e["msg"]
        if (path, kind, message) not in seen:
            seen.add((path, kind, message))
            problems.append(Problem(path, kind, message))
    return problems


def _residual_unknown_fields(value: object, path: str) -> list[Problem]:
    """A second look at a validated instance: any field kept as an extra is an unknown field."""
    problems: list[Problem] = []
    if isinstance(value, pydantic.BaseModel):
        for key in value.model_extra or {}:
            problems.append(Problem(f"{path}.{key}".lstrip("."), "unknown field", "kept as an extra"))
        for name, field in type(value).model_fields.items():
            key = field.alias or name
            problems += _residual_unknown_fields(getattr(value, name), f"{path}.{key}")
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            problems += _residual_unknown_fields(item, f"{path}[{index}]")
    return problems


def validate_strictly(model: type, text: str) -> list[Problem]:
    """Validates JSON text as `model` in strict mode (no coercion), unknown fields as errors."""
    try:
        instance = model.model_validate_json(text, strict=True)
    except pydantic.ValidationError as error:
        return problems_of(error)
    return _residual_unknown_fields(instance, "")


def _event_of(text: str) -> tuple[dict | None, list[Problem]]:
    """A data-channel text as a JSON object with a string `type`, or what keeps it from being one."""
    try:
        event = json.loads(text)
    except json.JSONDecodeError as error:
        return None, [Problem("", "json", f"not JSON: {error}")]
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        return None, [Problem("type", "not an event", "no string \"type\"")]
    return event, []


def check_client_event(text: str) -> tuple[str | None, list[Problem]]:
    """One data-channel text as Walkie sent it: its type and what is wrong with it."""
    event, problems = _event_of(text)
    if event is None:
        return None, problems
    event_type = event["type"]
    model = CLIENT_EVENT_MODELS.get(event_type)
    if model is None:
        return event_type, [Problem("type", "not a GA client event", repr(event_type))]
    problems = validate_strictly(model, text)
    session = event.get("session")
    if event_type == "session.update" and isinstance(session, dict) and "model" in session:
        problems.append(
            Problem("session.model", "model in session.update", "the model cannot change in a session")
        )
    return event_type, problems


def check_live_client_event(text: str) -> tuple[str | None, list[Problem]]:
    """One data-channel text of a Live API call as Walkie sent it: its type and what is wrong."""
    event, problems = _event_of(text)
    if event is None:
        return None, problems
    model = LIVE_CLIENT_EVENT_MODELS.get(event["type"])
    if model is None:
        return event["type"], [Problem("type", "not a Live client event", repr(event["type"]))]
    return event["type"], validate_strictly(model, text)


def check_live_body(body: object) -> list[Problem]:
    """The JSON body of `POST /v1/live/sessions`: `LiveCreateParams`, unknown keys as errors."""
    try:
        LIVE_CREATE_BODY.validate_json(json.dumps(body), strict=True)
    except pydantic.ValidationError as error:
        return problems_of(error)
    return []


def check_session_part(session: object) -> list[Problem]:
    """The multipart `session` part of `POST /v1/realtime/calls`."""
    return validate_strictly(SESSION_MODEL, json.dumps(session))


# ---------------------------------------------------------------------------------------------
# Reading a trace root


@dataclasses.dataclass
class Failure:
    where: str
    text: str
    problems: list[Problem]

    def __str__(self) -> str:
        shown = self.text if len(self.text) <= 2000 else self.text[:2000] + " …"
        lines = [f"{self.where}: {shown}"]
        lines += [f"    {problem}" for problem in self.problems]
        return "\n".join(lines)


@dataclasses.dataclass
class TraceReport:
    client_events_by_type: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    # What Walkie's `conversation.item.create` events carried: the content part types of user
    # messages, and `function_call_output` items.
    created_by_kind: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    unknown_fields: int = 0
    model_in_session_update: int = 0
    session_parts: int = 0
    calls: int = 0
    live_client_events_by_type: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    live_bodies: int = 0
    # Each call setup (`POST .../realtime/calls`) by its form and the answer's status, e.g.
    # "multipart 201", "sdp 201" (the raw offer), "multipart 415" (a server that refused it).
    call_forms: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    failures: list[Failure] = dataclasses.field(default_factory=list)

    @property
    def client_events(self) -> int:
        return sum(self.client_events_by_type.values())

    @property
    def live_client_events(self) -> int:
        return sum(self.live_client_events_by_type.values())


def _jsonl(path: Path):
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if line.strip():
                yield f"{path}:{number}", line


# What Walkie creates in a conversation, each of which the end-to-end tests must send, so that
# the SDK checks it: a trace without one would pass without checking it.
REQUIRED_CREATED_KINDS = ("input_text", "input_image", "function_call_output")


def created_kinds(text: str) -> list[str]:
    """What a `conversation.item.create` carries: a user message's content part types, or
    `function_call_output`."""
    try:
        event = json.loads(text)
    except json.JSONDecodeError:
        return []
    if not isinstance(event, dict) or event.get("type") != "conversation.item.create":
        return []
    item = event.get("item")
    if not isinstance(item, dict):
        return []
    if item.get("type") == "function_call_output":
        return ["function_call_output"]
    if item.get("role") != "user" or not isinstance(item.get("content"), list):
        return []
    return [part.get("type") for part in item["content"] if isinstance(part, dict) and isinstance(part.get("type"), str)]


def missing_created_kinds(report: TraceReport) -> list[str]:
    return [kind for kind in REQUIRED_CREATED_KINDS if report.created_by_kind[kind] == 0]


def check_trace_root(root: Path) -> TraceReport:
    report = TraceReport()
    for path in sorted(root.rglob("client-events.jsonl")):
        for where, line in _jsonl(path):
            try:
                record = json.loads(line)
                text = record["text"]
                if not isinstance(text, str):
                    raise TypeError("\"text\" is not a string")
            except (json.JSONDecodeError, KeyError, TypeError) as error:
                report.failures.append(Failure(where, line.strip(), [Problem("text", "trace", str(error))]))
                continue
            event_type, problems = check_client_event(text)
            report.client_events_by_type[event_type or "<none>"] += 1
            report.created_by_kind.update(created_kinds(text))
            report.unknown_fields += sum(p.kind == "unknown field" for p in problems)
            report.model_in_session_update += sum(p.kind == "model in session.update" for p in problems)
            if problems:
                report.failures.append(Failure(where, text, problems))
    for path in sorted(root.rglob("live-client-events.jsonl")):
        for where, line in _jsonl(path):
            try:
                text = json.loads(line)["text"]
                if not isinstance(text, str):
                    raise TypeError("\"text\" is not a string")
            except (json.JSONDecodeError, KeyError, TypeError) as error:
                report.failures.append(Failure(where, line.strip(), [Problem("text", "trace", str(error))]))
                continue
            event_type, problems = check_live_client_event(text)
            report.live_client_events_by_type[event_type or "<none>"] += 1
            report.unknown_fields += sum(p.kind == "unknown field" for p in problems)
            if problems:
                report.failures.append(Failure(where + " (Live)", text, problems))
    for path in sorted(root.rglob("calls.jsonl")):
        for where, line in _jsonl(path):
            try:
                record = json.loads(line)
                if not isinstance(record, dict):
                    raise TypeError("not an object")
            except (json.JSONDecodeError, TypeError) as error:
                report.failures.append(Failure(where, line.strip(), [Problem("", "trace", str(error))]))
                continue
            report.calls += 1
            if record.get("method") == "POST" and str(record.get("path", "")).endswith("/realtime/calls"):
                report.call_forms[f"{record.get('form')} {record.get('status')}"] += 1
            live_body = record.get("live_session")
            if live_body is not None:
                problems = check_live_body(live_body)
                report.unknown_fields += sum(p.kind == "unknown field" for p in problems)
                report.live_bodies += 1
                if problems:
                    report.failures.append(Failure(where + " (Live session body)", json.dumps(live_body), problems))
            session = record.get("session")
            if session is None:
                continue
            problems = check_session_part(session)
            report.unknown_fields += sum(p.kind == "unknown field" for p in problems)
            report.session_parts += 1
            if problems:
                report.failures.append(Failure(where + " (session part)", json.dumps(session), problems))
    return report


# ---------------------------------------------------------------------------------------------
# Server events built from the SDK's models


class _Builder:
    """Fills an SDK model's fields from their annotations: literals, plausible strings and
    numbers, nested models built the same way. `variant` k picks the k-th member (modulo) of
    every union and literal, so that successive variants reach every member of a union;
    `full` fills the optional fields too, otherwise only the required ones are set (a required
    field that may be null is null)."""

    MAX_DEPTH = 16

    def __init__(self, variant: int, full: bool):
        self.variant = variant
        self.full = full
        self.widest_choice = 1

    def _pick(self, options: list):
        self.widest_choice = max(self.widest_choice, len(options))
        return options[self.variant % len(options)]

    def model(self, cls: type, depth: int = 0) -> dict:
        if depth > self.MAX_DEPTH:
            raise RecursionError(f"{cls.__name__} nests deeper than {self.MAX_DEPTH} levels")
        out = {}
        for name, field in cls.model_fields.items():
            if not (field.is_required() or self.full):
                continue
            nullable = type(None) in typing.get_args(field.annotation)
            if field.is_required() and nullable and not self.full:
                out[field.alias or name] = None
            else:
                out[field.alias or name] = self.value(field.annotation, name, depth + 1)
        return out

    def value(self, annotation: object, name: str, depth: int):
        origin = typing.get_origin(annotation)
        args = typing.get_args(annotation)
        if origin is typing.Annotated:
            return self.value(args[0], name, depth)
        if origin is typing.Literal:
            return self._pick(list(args))
        if origin in (typing.Union, types.UnionType):
            return self.value(self._pick([a for a in args if a is not type(None)]), name, depth)
        if origin in (list, typing.List):
            return [self.value(args[0], name, depth)]
        if origin in (dict, typing.Dict):
            return {"key": self.value(args[1], name, depth)}
        if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
            return self.model(annotation, depth)
        if annotation is str:
            return _plausible_string(name)
        if annotation is bool:
            return self.variant % 2 == 0
        if annotation is int:
            return 1500 if name.endswith("_ms") else 1
        if annotation is float:
            return 0.5
        if annotation in (object, typing.Any):
            return {"note": f"any JSON for {name}"}
        if annotation is type(None):
            return None
        raise TypeError(f"no sample for {name}: {annotation!r}")


def _plausible_string(name: str) -> str:
    if name == "id" or name.endswith("_id"):
        return f"{name[:-3] or 'obj'}_001" if name.endswith("_id") else "obj_001"
    if name in ("delta", "audio"):
        return "AAAA"
    return f"sample {name}"


def build_server_events(models: dict[str, type] | None = None) -> list[tuple[str, str]]:
    """(type, JSON text) for every server event type: a minimal and a full instance for each
    variant needed to reach every union member, each validated by the SDK (unknown fields
    forbidden) and written by the SDK's own serialiser."""
    events: list[tuple[str, str]] = []
    for event_type, cls in (models or SERVER_EVENT_MODELS).items():
        texts: list[str] = []
        for full in (False, True):
            variant, variants = 0, 1
            while variant < variants:
                builder = _Builder(variant, full)
                raw = builder.model(cls)
                variants = max(variants, builder.widest_choice)
                instance = cls.model_validate_json(json.dumps(raw), strict=True)
                text = instance.model_dump_json(by_alias=True, exclude_unset=True)
                if text not in texts:
                    texts.append(text)
                variant += 1
        events += [(event_type, text) for text in texts]
    return events


@dataclasses.dataclass
class DecoderReport:
    types_total: int
    instances: int
    verdicts_by_type: dict[str, collections.Counter]
    failures: dict[str, list[tuple[str, dict]]]

    @property
    def types_ok(self) -> int:
        return self.types_total - len(self.failures)


ACCEPTED_VERDICTS = ("decoded", "kept_raw")


def _without_nulls(value: object) -> object:
    """`value` with every null member left out: the SDK writes an unset optional figure as null
    when it was built with one, Walkie leaves it out."""
    if isinstance(value, dict):
        return {key: _without_nulls(member) for key, member in value.items() if member is not None}
    return value


def usage_misread(text: str, verdict: dict) -> str | None:
    """What Walkie read wrong of a `response.done`'s usage (every figure must come back as the
    SDK sent it), or None."""
    sent = _without_nulls(json.loads(text).get("response", {}).get("usage"))
    read = _without_nulls(verdict.get("usage"))
    if sent == read:
        return None
    return f"its usage was read as {json.dumps(read)}, the SDK sent {json.dumps(sent)}"


def judge_verdicts(events: list[tuple[str, str]], verdicts: list[dict]) -> DecoderReport:
    if len(verdicts) != len(events):
        raise ValueError(f"the decoder answered {len(verdicts)} lines for {len(events)} events")
    by_type: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    failures: dict[str, list[tuple[str, dict]]] = {}
    for (event_type, text), verdict in zip(events, verdicts):
        by_type[event_type][verdict.get("verdict")] += 1
        if verdict.get("verdict") not in ACCEPTED_VERDICTS:
            failures.setdefault(event_type, []).append((text, verdict))
        elif event_type == "response.done" and (misread := usage_misread(text, verdict)):
            failures.setdefault(event_type, []).append((text, {"verdict": "misread", "detail": misread}))
    return DecoderReport(len(by_type), len(events), dict(by_type), failures)


def run_decoder(command: list[str], events: list[tuple[str, str]]) -> list[dict]:
    stdin = "".join(text + "\n" for _, text in events)
    result = subprocess.run(command, input=stdin, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"the decoder {command} exited with {result.returncode}: {result.stderr.strip()}")
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# The names Walkie offers

# The members of `RealtimeServerEvent` and of the Live API's `ConnectServerEvent` in
# openai-python 3.63.0 (requirements.txt): a different count means the pin moved, and the new or
# dropped types need a look before the pin does.
SDK_SERVER_EVENT_TYPES = 46
SDK_LIVE_SERVER_EVENT_TYPES = 30


def _literal_values(annotation: object) -> list[str]:
    """The strings of the one `Literal` inside a field's annotation (`Union[str, Literal[...], None]`)."""
    for member in typing.get_args(annotation):
        if typing.get_origin(member) is typing.Literal:
            return list(typing.get_args(member))
    raise ValueError(f"no Literal in {annotation!r}")


def sdk_names() -> dict[str, list[str]]:
    """The realtime model, transcription model and voice names the SDK's GA session types spell
    out, and the Live API's models and built-in voices."""
    from openai.types.realtime.audio_transcription import AudioTranscription
    from openai.types.realtime.realtime_audio_config_output import RealtimeAudioConfigOutput
    from openai.types.realtime.realtime_session_create_request import RealtimeSessionCreateRequest

    return {
        "models": _literal_values(RealtimeSessionCreateRequest.model_fields["model"].annotation),
        "transcription_models": _literal_values(AudioTranscription.model_fields["model"].annotation),
        "voices": _literal_values(RealtimeAudioConfigOutput.model_fields["voice"].annotation),
        "live_models": _literal_values(sdk_live.SessionResource.model_fields["model"].annotation),
        "live_voices": list(typing.get_args(sdk_live.BuiltInVoice)),
    }


def check_names(offered: dict) -> list[str]:
    """What differs between the names Walkie offers and the SDK's, one line per difference."""
    problems = []
    for kind, known in sdk_names().items():
        walkie = offered.get(kind)
        if not isinstance(walkie, list):
            problems.append(f"{kind}: Walkie printed no list")
            continue
        for name in sorted(set(known) - set(walkie)):
            problems.append(f"{kind}: the SDK names {name!r}, Walkie does not offer it")
        for name in sorted(set(walkie) - set(known)):
            problems.append(f"{kind}: Walkie offers {name!r}, the SDK does not name it")
        if len(walkie) != len(set(walkie)):
            problems.append(f"{kind}: Walkie offers a name twice")
    return problems


# ---------------------------------------------------------------------------------------------
# The models the SDK deprecates


class SdkDocstringError(ValueError):
    """The SDK's source did not say what the oracle reads from it: a missing field, or a
    "Deprecated values:" block in a shape this parser does not know. Reading part of such a
    block would let a deprecated model pass unwarned, so the oracle stops instead."""


# The SDK fields whose docstrings list the deprecated names among those Walkie offers: the
# session's realtime model and its transcription model.
DEPRECATION_FIELDS: tuple[tuple[type, str], ...] = (
    (sdk_realtime.RealtimeSessionCreateRequest, "model"),
    (sdk_realtime.AudioTranscription, "model"),
)

_DEPRECATED_VALUES = "Deprecated values:"
# One bullet, its lines joined: the quoted names, then the date; what follows the date (a link
# to the deprecations page) says nothing the check needs.
_DEPRECATION_BULLET = re.compile(
    r'(?P<names>"[^"]+"(?:\s*,\s*"[^"]+")*)\s*:\s*Announced shutdown date:\s*'
    r"(?P<date>\d{4}-\d{2}-\d{2})(?:\.(?:\s.*)?)?"
)


def field_docstring(source: str, class_name: str, field: str, where: str) -> str | None:
    """The docstring of `field` in the class `class_name` of a module's `source`: the string
    right after the field's annotated assignment, where the SDK's generator writes it. Python
    keeps no such string at run time, so the source is the only place to read it. None when
    the field has none; an error when the class or the field is not there, for then the SDK
    moved and what it deprecates is no longer known."""
    tree = ast.parse(source, filename=where)
    for node in tree.body:
        if not (isinstance(node, ast.ClassDef) and node.name == class_name):
            continue
        for statement, following in zip(node.body, node.body[1:] + [None]):
            if (
                isinstance(statement, ast.AnnAssign)
                and isinstance(statement.target, ast.Name)
                and statement.target.id == field
            ):
                if (
                    isinstance(following, ast.Expr)
                    and isinstance(following.value, ast.Constant)
                    and isinstance(following.value.value, str)
                ):
                    return inspect.cleandoc(following.value.value)
                return None
        raise SdkDocstringError(f"{where}: the class {class_name} has no field {field!r}")
    raise SdkDocstringError(f"{where}: no class {class_name}")


def deprecated_values(docstring: str | None, where: str) -> dict[str, str]:
    """{name: announced shutdown date} from a field's docstring, {} when it has no
    "Deprecated values:" block. The block must be the docstring's last part and hold only
    bullets of the form `- "a", "b": Announced shutdown date: YYYY-MM-DD. …`, wrapped over any
    number of lines; anything else in it is an error naming `where`, since a line skipped could
    be a deprecation missed."""
    if docstring is None or _DEPRECATED_VALUES not in docstring:
        return {}
    if docstring.count(_DEPRECATED_VALUES) > 1:
        raise SdkDocstringError(f"{where}: more than one {_DEPRECATED_VALUES!r} block")
    bullets: list[str] = []
    for line in docstring.split(_DEPRECATED_VALUES, 1)[1].splitlines():
        if not line.strip():
            continue
        if line.startswith("- "):
            bullets.append(line[2:])
        elif bullets and line[:1].isspace():
            bullets[-1] += " " + line
        else:
            raise SdkDocstringError(f"{where}: not part of a deprecation bullet: {line.strip()!r}")
    if not bullets:
        raise SdkDocstringError(f"{where}: {_DEPRECATED_VALUES!r} with no bullet after it")
    deprecated: dict[str, str] = {}
    for bullet in bullets:
        text = " ".join(bullet.split())
        match = _DEPRECATION_BULLET.fullmatch(text)
        if match is None:
            raise SdkDocstringError(f"{where}: a deprecation bullet not of the known form: {text!r}")
        date = match["date"]
        try:
            datetime.date.fromisoformat(date)
        except ValueError:
            raise SdkDocstringError(f"{where}: not a date: {date!r} in {text!r}") from None
        for name in re.findall(r'"([^"]+)"', match["names"]):
            if deprecated.setdefault(name, date) != date:
                raise SdkDocstringError(f"{where}: {name!r} deprecated twice, on {deprecated[name]} and {date}")
    return deprecated


def deprecated_field_values(cls: type, field: str) -> dict[str, str]:
    """{name: announced shutdown date} for one field of an SDK model, read from its module."""
    where = inspect.getsourcefile(cls) or f"<source of {cls.__qualname__}>"
    try:
        source = Path(where).read_text(encoding="utf-8")
    except OSError as error:
        raise SdkDocstringError(f"{where}: unreadable: {error}") from None
    return deprecated_values(field_docstring(source, cls.__name__, field, where), where)


def sdk_deprecations() -> dict[str, str]:
    """{name: announced shutdown date} for every realtime and transcription model the pinned SDK
    deprecates."""
    deprecated: dict[str, str] = {}
    for cls, field in DEPRECATION_FIELDS:
        for name, date in deprecated_field_values(cls, field).items():
            if deprecated.setdefault(name, date) != date:
                raise SdkDocstringError(
                    f"{cls.__qualname__}.{field}: {name!r} deprecated on {date} here, on {deprecated[name]} elsewhere"
                )
    return deprecated


@dataclasses.dataclass
class DeprecationReport:
    # The distinct names checked: Walkie's two defaults and every model it offers.
    names_checked: int
    # How many names the SDK deprecates.
    sdk_deprecated: int


DEFAULT_KEYS = ("model", "transcription_model")
OFFERED_MODEL_KINDS = ("models", "transcription_models")


def _walkie_marks(offered: dict, problems: list[str]) -> dict[str, str]:
    """{name: shutdown date} as Walkie's `deprecated` list marks them."""
    listed = offered.get("deprecated")
    if not isinstance(listed, list):
        problems.append("deprecated: Walkie printed no list")
        return {}
    marks: dict[str, str] = {}
    for mark in listed:
        if not (
            isinstance(mark, dict) and isinstance(mark.get("model"), str) and isinstance(mark.get("shutdown_on"), str)
        ):
            problems.append(f"deprecated: {json.dumps(mark)} is not a model with its shutdown_on")
            continue
        if marks.setdefault(mark["model"], mark["shutdown_on"]) != mark["shutdown_on"]:
            problems.append(f"deprecated: Walkie marks {mark['model']!r} twice, with different dates")
    return marks


def check_deprecations(offered: dict) -> tuple[list[str], DeprecationReport]:
    """What is wrong with Walkie's deprecations next to the SDK's, one line per problem: a
    default the SDK deprecates (a new user would start on a model about to go), a deprecated
    model offered without Walkie's warning or with another date (a user would pick it
    unwarned, or be told the wrong day), and a warning the SDK does not give (a user would be
    moved off a model that stays). Raises SdkDocstringError when the SDK cannot be read."""
    sdk = sdk_deprecations()
    problems: list[str] = []
    marks = _walkie_marks(offered, problems)
    checked: set[str] = set()

    defaults = offered.get("defaults")
    if not isinstance(defaults, dict):
        problems.append("defaults: Walkie printed none")
    for key in DEFAULT_KEYS if isinstance(defaults, dict) else ():
        name = defaults.get(key)
        if not isinstance(name, str):
            problems.append(f"defaults.{key}: Walkie printed no name")
            continue
        checked.add(name)
        if name in sdk:
            problems.append(
                f"defaults.{key}: Walkie's default {name!r} is deprecated in the SDK, "
                f"announced shutdown date {sdk[name]}"
            )

    offered_names: set[str] = set()
    for kind in OFFERED_MODEL_KINDS:
        names = offered.get(kind)
        if not isinstance(names, list):
            continue  # check_names reports it
        for name in dict.fromkeys(n for n in names if isinstance(n, str)):
            offered_names.add(name)
            if name not in sdk:
                continue
            if name not in marks:
                problems.append(
                    f"{kind}: Walkie offers {name!r} without a warning; the SDK deprecates it, "
                    f"announced shutdown date {sdk[name]}"
                )
            elif marks[name] != sdk[name]:
                problems.append(
                    f"{kind}: Walkie offers {name!r} with a warning of shutdown on {marks[name]}; "
                    f"the SDK's announced shutdown date is {sdk[name]}"
                )
    checked |= offered_names

    for name, date in sorted(marks.items()):
        if name not in sdk:
            problems.append(
                f"deprecated: Walkie marks {name!r} to shut down on {date}; the SDK does not list it as deprecated"
            )
        elif date != sdk[name] and name not in offered_names:
            problems.append(
                f"deprecated: Walkie marks {name!r} to shut down on {date}; the SDK's announced shutdown date is {sdk[name]}"
            )
    return problems, DeprecationReport(len(checked), len(sdk))


def _deprecation_clause(report: DeprecationReport | None, problems: list[str]) -> str:
    if report is None:
        return "defaults and offered models: deprecations not checked"
    outcome = "none deprecated unwarned" if not problems else f"{len(problems)} deprecation problems"
    return (
        f"defaults and offered models: {outcome} ({report.names_checked} checked against the SDK's "
        f"{report.sdk_deprecated} deprecated names)"
    )


def _by_type(counter: collections.Counter) -> str:
    return ", ".join(f"{count} {name}" for name, count in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0])))


def report_decoder_failures(family: str, report: DecoderReport) -> bool:
    """Prints each event type the decoder failed on, with an example of each reason; True when
    there was none."""
    for event_type, failed in sorted(report.failures.items()):
        total = sum(report.verdicts_by_type[event_type].values())
        print(
            f"oracle: FAILED: {family}{event_type}: {len(failed)} of {total} SDK-built instances not decoded, "
            "or read wrong",
            file=sys.stderr,
        )
        reasons: dict[str, str] = {}
        for text, verdict in failed:
            reasons.setdefault(f"{verdict.get('verdict')}: {verdict.get('detail')}", text)
        for reason, text in reasons.items():
            shown = text if len(text) <= 1000 else text[:1000] + " …"
            print(f"    {reason}\n        e.g. {shown}", file=sys.stderr)
    return not report.failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace-root", type=Path, required=True, help="where the local provider's traces are")
    parser.add_argument(
        "--names",
        required=True,
        help="the program that prints the names Walkie offers, the ones it marks deprecated and its defaults (JSON)",
    )
    parser.add_argument(
        "--decoder", nargs=argparse.REMAINDER, required=True, help="the command that decodes server events (JSONL)"
    )
    args = parser.parse_args(argv)
    ok = True

    trace = check_trace_root(args.trace_root) if args.trace_root.is_dir() else TraceReport()
    if trace.client_events == 0:
        print(
            f"oracle: FAILED: no client events under {args.trace_root} (were the end-to-end tests run "
            "with WALKIE_LOCAL_TRACE?); a check of nothing is not a pass",
            file=sys.stderr,
        )
        ok = False
    for failure in trace.failures:
        print(f"oracle: FAILED: {failure}", file=sys.stderr)
        ok = False
    if trace.live_client_events == 0 or trace.live_bodies == 0:
        print(
            f"oracle: FAILED: {trace.live_client_events} Live client events and {trace.live_bodies} Live session "
            f"bodies under {args.trace_root}; the Live call tests must leave both, or the SDK never checks them",
            file=sys.stderr,
        )
        ok = False
    for kind in missing_created_kinds(trace) if trace.client_events else []:
        print(
            f"oracle: FAILED: no conversation.item.create under {args.trace_root} carried {kind}; the "
            "end-to-end tests must send one, or the SDK never checks it",
            file=sys.stderr,
        )
        ok = False

    events = build_server_events()
    try:
        decoder = judge_verdicts(events, run_decoder(args.decoder, events))
    except (RuntimeError, ValueError) as error:
        print(f"oracle: FAILED: the decoder gave no verdicts: {error}", file=sys.stderr)
        return 1
    if decoder.types_total != SDK_SERVER_EVENT_TYPES:
        print(
            f"oracle: FAILED: the SDK's RealtimeServerEvent has {decoder.types_total} types, not the "
            f"{SDK_SERVER_EVENT_TYPES} of the pinned SDK: look at what changed, then move SDK_SERVER_EVENT_TYPES",
            file=sys.stderr,
        )
        ok = False
    ok = report_decoder_failures("", decoder) and ok

    live_events = build_server_events(LIVE_SERVER_EVENT_MODELS)
    try:
        live = judge_verdicts(live_events, run_decoder(args.decoder + ["--live"], live_events))
    except (RuntimeError, ValueError) as error:
        print(f"oracle: FAILED: the decoder gave no verdicts for the Live API's events: {error}", file=sys.stderr)
        return 1
    if live.types_total != SDK_LIVE_SERVER_EVENT_TYPES:
        print(
            f"oracle: FAILED: the SDK's Live ConnectServerEvent has {live.types_total} types, not the "
            f"{SDK_LIVE_SERVER_EVENT_TYPES} of the pinned SDK: look at what changed, then move "
            "SDK_LIVE_SERVER_EVENT_TYPES",
            file=sys.stderr,
        )
        ok = False
    ok = report_decoder_failures("Live ", live) and ok

    offered: dict | None = None
    try:
        printed = subprocess.run([args.names], capture_output=True, text=True, check=True).stdout
        offered = json.loads(printed)
        if not isinstance(offered, dict):
            raise TypeError(f"it printed {type(offered).__name__}, not an object")
        name_problems = check_names(offered)
    except (OSError, subprocess.CalledProcessError, json.JSONDecodeError, TypeError) as error:
        offered = None
        name_problems = [f"the names program {args.names} gave no names: {error}"]
    deprecation_problems: list[str] = []
    deprecations: DeprecationReport | None = None
    if offered is not None:
        try:
            deprecation_problems, deprecations = check_deprecations(offered)
        except SdkDocstringError as error:
            deprecation_problems = [f"the SDK's deprecated models could not be read: {error}"]
    for problem in name_problems + deprecation_problems:
        print(f"oracle: FAILED: {problem}", file=sys.stderr)
        ok = False
    names = sdk_names()

    print(
        f"oracle: {trace.client_events} client events ({_by_type(trace.client_events_by_type)}; "
        f"created: {_by_type(trace.created_by_kind)}), "
        f"{trace.unknown_fields} unknown fields, {trace.model_in_session_update} model in session.update; "
        f"{trace.session_parts} session parts checked in {trace.calls} calls, "
        f"call setups by form: {_by_type(trace.call_forms)}, "
        f"{sum(1 for f in trace.failures if f.where.endswith('(session part)'))} bad; "
        f"{decoder.types_ok}/{decoder.types_total} server event types decoded or kept "
        f"({decoder.instances} SDK-built instances); "
        f"Live: {trace.live_client_events} client events ({_by_type(trace.live_client_events_by_type)}) and "
        f"{trace.live_bodies} session bodies checked; "
        f"{live.types_ok}/{live.types_total} server event types decoded or kept "
        f"({live.instances} SDK-built instances); "
        f"{len(names['models'])} models, {len(names['transcription_models'])} transcription models and "
        f"{len(names['voices'])} voices as the SDK names them, "
        f"{len(names['live_models'])} Live models and {len(names['live_voices'])} Live voices"
        f"{'' if not name_problems else ', ' + str(len(name_problems)) + ' differences'}; "
        f"{_deprecation_clause(deprecations, deprecation_problems)}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""A scripted, OpenAI-Realtime- and Live-API-shaped server on another WebRTC stack, for testing Walkie.

Why it exists: Walkie's WebRTC client had only met its own local provider, which is built on the
same webrtc-rs stack and shares Walkie's protocol types, so the two could agree on a mistake.
This peer shares neither: WebRTC is aiortc's (aioice for ICE, its own DTLS, SCTP and SRTP, PyAV's
libopus), and every server event it sends is built from, and validated by, the official
openai-python SDK's pydantic models (`openai.types.realtime`, and `openai.types.live` for the Live
API; unknown fields refused). It mirrors the local provider's behaviour and event order
(crates/local-provider/src/session.rs; live_session.rs for the Live API) in code of its own. It understands no speech: it measures what it hears and says so, and its replies are
generated speech-like audio (a harmonic source with a moving pitch, in syllables).

    python tests/peers/aiortc_peer.py --token TOKEN [--refuse-multipart] [--trace DIR]
                                      [--host 127.0.0.1] [--port 0]

It prints one line, `listening http://HOST:PORT`, on stdout once it listens; logs go to stderr.
SIGTERM or SIGINT closes every peer connection and ends it.

HTTP:
- `POST /v1/realtime/calls` with `Authorization: Bearer TOKEN`: multipart/form-data (parts `sdp`
  and `session`, a `RealtimeSessionCreateRequest`) or the raw offer as application/sdp (the
  server's defaults: server_vad with create_response and interrupt_response, voice marin, no
  tools, no transcription). 201 with the SDP answer and `Location: /v1/realtime/calls/rtc_<hex>`.
  With `--refuse-multipart` the multipart form is answered 415, as servers that take only
  application/sdp do.
- `POST /v1/realtime/calls/{call_id}/hangup`: 200, or 404 for a call that is not active.
- `POST /v1/live/sessions` (the Live API, GPT-Live) with the same token: a JSON body
  `{"session": …, "transport": {"type": "webrtc", "sdp": <offer>}}` (the SDK's `LiveCreateParams`,
  unknown keys refused, then the Live API's documented limits); 201 with
  `{"session": {"id": "sess_<hex>"}, "transport": {"type": "webrtc", "sdp": <answer>}}`. The
  session runs as `LiveCall` says (the local provider's Live behaviour).
- `POST /v1/live/sessions/{id}/hangup`: 200, or 404 for a session that is not active.
- `GET /stats`: what each call received and sent (see `Call.stats`; a Live call's form is
  `live`), for a test harness.

With `--trace DIR` it writes the local provider's trace files (crates/local-provider/src/trace.rs):
`calls.jsonl` (one line per API request, with `live_session`, the JSON body, for a Live call;
GET /stats is not one), `client-events.jsonl` (every data-channel text message of a Realtime call
as received) and `live-client-events.jsonl` (the same for Live calls), each line appended with
one write.
"""

from __future__ import annotations

import argparse
import array
import asyncio
import fractions
import json
import logging
import math
import os
import re
import secrets
import signal
import socket
import sys
import time
import typing

import pydantic

# The SDK's models allow unknown fields (`extra="allow"`). Every one is switched to
# `extra="forbid"` before any is built (they build lazily), so a misspelt field in an event this
# peer builds, or an unknown one in a client's event, is an error with its path.
import openai.types.realtime as sdk
import openai.types.live as sdk_live
import typing_extensions
from openai import BaseModel as SdkModel
from openai.types.live.built_in_voice import BuiltInVoice as SdkLiveBuiltInVoice
from openai.types.live.client_event import ClientEvent as SdkLiveClientEvent
from openai.types.live.connect_server_event import ConnectServerEvent as SdkLiveServerEvent
from openai.types.live.live_create_params import LiveCreateParams as SdkLiveCreateParams


def _sdk_model_classes() -> set[type]:
    found: set[type] = set()
    stack: list[type] = [SdkModel]
    while stack:
        for sub in stack.pop().__subclasses__():
            if sub not in found:
                found.add(sub)
                stack.append(sub)
    return found


def _forbid_unknown_fields() -> None:
    classes = _sdk_model_classes()
    built = [c.__qualname__ for c in classes if c.__pydantic_complete__]
    if built:
        raise RuntimeError("SDK models were built before unknown fields could be forbidden: " + ", ".join(built[:5]))
    for cls in classes:
        cls.model_config["extra"] = "forbid"


def _forbid_unknown_keys_in_live_params() -> None:
    """The Live call's body is typed with TypedDicts (`…Param`), not models: each is given
    pydantic's `extra="forbid"` too (as the oracle does), before any adapter is built."""
    import importlib
    import pkgutil

    for module in pkgutil.iter_modules(sdk_live.__path__):
        loaded = importlib.import_module(f"{sdk_live.__name__}.{module.name}")
        for value in vars(loaded).values():
            if typing_extensions.is_typeddict(value) and value.__module__ == loaded.__name__:
                value.__pydantic_config__ = pydantic.ConfigDict(extra="forbid")


# Every Live module is imported (by the first) before the models are switched (by the second).
_forbid_unknown_keys_in_live_params()
_forbid_unknown_fields()

import aioice.ice  # noqa: E402
import av  # noqa: E402
from aiohttp import web  # noqa: E402
from aiortc import RTCConfiguration, RTCPeerConnection, RTCSessionDescription  # noqa: E402
from aiortc.mediastreams import MediaStreamError, MediaStreamTrack  # noqa: E402

log = logging.getLogger("aiortc_peer")

# ---------------------------------------------------------------------------------------------
# The SDK's event models, by their `type`


def _union_members(alias: object) -> list[type]:
    if typing.get_origin(alias) is typing.Annotated:
        alias = typing.get_args(alias)[0]
    return list(typing.get_args(alias))


def _type_literal(model: type) -> str:
    (literal,) = typing.get_args(model.model_fields["type"].annotation)
    return literal


SERVER_EVENT_MODELS: dict[str, type] = {_type_literal(m): m for m in _union_members(sdk.RealtimeServerEvent)}
CLIENT_EVENT_MODELS: dict[str, type] = {_type_literal(m): m for m in _union_members(sdk.RealtimeClientEvent)}
SESSION_MODEL = sdk.RealtimeSessionCreateRequest
# The Live API's: what a WebRTC data channel may carry (`ConnectServerEvent`: the server union
# with the paused and resumed events of a session with a wake policy), the client's events, the
# call's JSON body, the session snapshot its events restate, and the answer.
LIVE_SERVER_EVENT_MODELS: dict[str, type] = {_type_literal(m): m for m in _union_members(SdkLiveServerEvent)}
LIVE_CLIENT_EVENT_MODELS: dict[str, type] = {_type_literal(m): m for m in _union_members(SdkLiveClientEvent)}
LIVE_CREATE_BODY = pydantic.TypeAdapter(SdkLiveCreateParams)
LIVE_SESSION_MODEL = sdk_live.SessionResource
LIVE_CREATE_RESPONSE_MODEL = sdk_live.LiveCreateResponse
LIVE_VOICES: tuple[str, ...] = typing.get_args(SdkLiveBuiltInVoice)


class EventShapeError(RuntimeError):
    """A server event this peer built does not match the SDK's model (a bug in the peer)."""


def build_event(event: dict, models: dict[str, type] = SERVER_EVENT_MODELS) -> str:
    """The JSON text of a server event: validated by its SDK model (of `models`: the Realtime
    API's, or the Live API's), written back by it."""
    model = models.get(event.get("type", ""))
    if model is None:
        raise EventShapeError(f"no SDK model for a server event of type {event.get('type')!r}")
    try:
        validated = model.model_validate(event)
    except pydantic.ValidationError as error:
        raise EventShapeError(f"{event['type']}: {first_problem(error)[1]}") from error
    dumped = validated.model_dump(mode="json", exclude_unset=True)
    if dumped != event:
        # What goes out is the SDK's writing of it; a difference is worth knowing about.
        log.warning("%s: the SDK's model wrote the event differently: %s", event["type"], dumped)
    return json.dumps(dumped, separators=(",", ":"))


_TYPE_TAGS = {"str", "int", "float", "bool", "none", "any", "list", "dict", "literal"}


def _is_union_tag(component: object) -> bool:
    return isinstance(component, str) and (component[:1].isupper() or "[" in component or component in _TYPE_TAGS)


def first_problem(error: pydantic.ValidationError, root: str = "") -> tuple[str, str]:
    """(param path, message) of the most telling error of a validation: errors of union members
    whose `type`/`role` did not match are left out when others remain."""
    errors = error.errors(include_url=False)
    mismatched = set()
    for e in errors:
        loc = tuple(e["loc"])
        if e["type"] == "literal_error" and len(loc) >= 2 and loc[-1] in ("type", "role") and _is_union_tag(loc[-2]):
            mismatched.add(loc[:-1])
    relevant = [e for e in errors if not any(tuple(e["loc"])[: len(b)] == b for b in mismatched)] or errors
    chosen = relevant[0]
    parts: list[str] = [root] if root else []
    for component in chosen["loc"]:
        if _is_union_tag(component):
            continue
        if isinstance(component, int):
            parts[-1:] = [f"{parts[-1] if parts else ''}[{component}]"]
        else:
            parts.append(str(component))
    path = ".".join(parts)
    kind = "unknown parameter" if chosen["type"] == "extra_forbidden" else chosen["msg"]
    return path, f"Invalid '{path}': {kind}."


# ---------------------------------------------------------------------------------------------
# Audio: 48 kHz mono s16, 20 ms frames

SAMPLE_RATE = 48_000
FRAME_SAMPLES = 960
FRAME_MS = 20
FRAME_BYTES = FRAME_SAMPLES * 2
SILENCE = bytes(FRAME_BYTES)
FULL_SCALE = 32768.0
# Frames below this (-45 dBFS) count as silence when a turn is measured and described.
SPEECH_DBFS = -45.0
# Replies are "generated" this much faster than real time: response.done comes at half of the
# reply's playback, output_audio_buffer.stopped at its end (as the local provider's).
GENERATION_SPEEDUP = 2
REPLY_SECONDS = 1.5
REPLY_DBFS = -20.0
# Hands-free: voiced audio needed before speech counts as started.
MIN_SPEECH_MS = 60
MIN_COMMIT_MS = 100
# A user transcript not followed by a reply is sent this long after its commit.
TRANSCRIPT_DELAY_S = 0.3
MAX_INPUT_MS = 5 * 60 * 1000


def dbfs(rms: float) -> float | None:
    return None if rms <= 0 else round(20 * math.log10(rms / FULL_SCALE), 1)


def rms_for_dbfs(level: float) -> float:
    return FULL_SCALE * 10 ** (level / 20)


def speech_like(seconds: float, level_dbfs: float = REPLY_DBFS, pitch_hz: float = 140.0, seed: int = 0) -> bytes:
    """Speech-like audio as 48 kHz mono s16: a harmonic source whose pitch moves around
    `pitch_hz` by ±30 Hz, in 180 ms syllables separated by 40 ms dips, scaled to `level_dbfs`
    RMS over the whole. Deterministic; no files, no model."""
    table_size = 2048
    harmonics = [(k, 1.0 / k ** 1.1) for k in range(1, 13)]
    table = [sum(w * math.sin(2 * math.pi * k * i / table_size) for k, w in harmonics) for i in range(table_size)]
    total = int(seconds * SAMPLE_RATE)
    out = array.array("h")
    values = []
    phase = 0.0
    syllable, dip, edge = 0.180, 0.040, 0.020
    period = syllable + dip
    for n in range(total):
        t = n / SAMPLE_RATE
        f0 = pitch_hz + 30.0 * math.sin(2 * math.pi * 0.9 * t + seed) * math.cos(2 * math.pi * 0.23 * t)
        phase = (phase + f0 / SAMPLE_RATE) % 1.0
        in_period = t % period
        if in_period < syllable:
            env = 1.0
            if in_period < edge:
                env = 0.5 - 0.5 * math.cos(math.pi * in_period / edge)
            elif in_period > syllable - edge:
                env = 0.5 - 0.5 * math.cos(math.pi * (syllable - in_period) / edge)
            env = 0.12 + 0.88 * env
        else:
            env = 0.12
        values.append(table[int(phase * table_size)] * env)
    rms = math.sqrt(sum(v * v for v in values) / max(1, len(values)))
    gain = rms_for_dbfs(level_dbfs) / rms if rms > 0 else 0.0
    for v in values:
        out.append(max(-32767, min(32767, int(round(v * gain)))))
    return out.tobytes()


def frames_of(pcm: bytes) -> list[bytes]:
    """`pcm` in 20 ms frames, the last padded with silence."""
    frames = [pcm[i : i + FRAME_BYTES] for i in range(0, len(pcm), FRAME_BYTES)]
    if frames and len(frames[-1]) < FRAME_BYTES:
        frames[-1] = frames[-1] + bytes(FRAME_BYTES - len(frames[-1]))
    return frames


def audio_frame(pcm: bytes, pts: int) -> av.AudioFrame:
    """A 20 ms frame for aiortc's Opus encoder from 48 kHz mono s16 `pcm`, as stereo with both
    channels the same. aiortc always encodes stereo, and its resampler upmixes a mono frame at
    -3 dB (libswresample's centre mix level): stereo frames keep the level on the wire the level
    that was meant."""
    mono = array.array("h")
    mono.frombytes(pcm)
    stereo = array.array("h", bytes(4 * len(mono)))
    stereo[0::2] = mono
    stereo[1::2] = mono
    frame = av.AudioFrame(format="s16", layout="stereo", samples=len(mono))
    frame.planes[0].update(stereo.tobytes())
    frame.pts = pts
    frame.sample_rate = SAMPLE_RATE
    frame.time_base = fractions.Fraction(1, SAMPLE_RATE)
    return frame


def measure(frame: bytes) -> tuple[float, int]:
    """(sum of squares, peak) of s16 samples."""
    samples = array.array("h")
    samples.frombytes(frame)
    return float(sum(s * s for s in samples)), max((abs(s) for s in samples), default=0)


_REPLY_FRAMES: list[bytes] | None = None


def reply_frames() -> list[bytes]:
    global _REPLY_FRAMES
    if _REPLY_FRAMES is None:
        _REPLY_FRAMES = frames_of(speech_like(REPLY_SECONDS, REPLY_DBFS, pitch_hz=150.0, seed=1))
    return _REPLY_FRAMES


class OutputTrack(MediaStreamTrack):
    """The peer's audio: 20 ms frames of 48 kHz s16 (mono content, see `audio_frame`), paced in
    real time as aiortc's own `AudioStreamTrack` paces them; silence unless the call has reply
    audio to play."""

    kind = "audio"

    def __init__(self, call: "Call") -> None:
        super().__init__()
        self.call = call
        self._start: float | None = None
        self._timestamp = 0

    async def recv(self) -> av.AudioFrame:
        if self.readyState != "live":
            raise MediaStreamError
        if self._start is None:
            self._start = time.time()
            self._timestamp = 0
        else:
            self._timestamp += FRAME_SAMPLES
            wait = self._start + self._timestamp / SAMPLE_RATE - time.time()
            if wait > 0:
                await asyncio.sleep(wait)
            elif wait < -0.2:
                # Far behind (a stalled loop): go on from now rather than burst.
                self._start = time.time() - self._timestamp / SAMPLE_RATE
        return audio_frame(self.call.next_output_frame() or SILENCE, self._timestamp)


# ---------------------------------------------------------------------------------------------
# Scripted tool calls (the rule of crates/local-provider/src/tool_calls.rs)

MAX_CALLS_PER_REQUEST = 200


def tool_request(text: str, tools: list[dict]) -> tuple[str, int, str] | None:
    """(name, count, arguments) of the call `text` asks for: the last "use <name>" in it (a
    function tool the session declares, the longest name that fits), an optional "<N> times",
    an optional "with <JSON>" (the rest of the text, as it is)."""
    lower = text.lower()
    if len(lower) != len(text):
        return None
    starts = [m.start() for m in re.finditer("use ", lower) if m.start() == 0 or lower[m.start() - 1].isspace()]
    if not starts:
        return None
    rest = text[starts[-1] + 4 :]
    names = [
        t.get("name")
        for t in tools
        if isinstance(t, dict) and t.get("type") == "function" and isinstance(t.get("name"), str)
    ]
    fitting = [
        n for n in names if rest.startswith(n) and not re.match(r"[A-Za-z0-9_-]", rest[len(n) : len(n) + 1])
    ]
    if not fitting:
        return None
    name = max(fitting, key=len)
    rest = rest[len(name) :].lstrip()
    count = 1
    times = re.match(r"(\d+)\s+times", rest)
    if times:
        count = max(1, min(int(times.group(1)), MAX_CALLS_PER_REQUEST))
        rest = rest[times.end() :].lstrip()
    arguments = rest[4:].strip() if rest.startswith("with") else "{}"
    return name, count, arguments


# ---------------------------------------------------------------------------------------------
# Sessions

DEFAULT_MODEL = "aiortc-peer"
DEFAULT_VOICE = "marin"
PCM_24K = {"type": "audio/pcm", "rate": 24000}
BY_DURATION_MODELS = {"whisper-1", "gpt-realtime-whisper", "gpt-transcribe", "gpt-live-transcribe"}


def default_session() -> dict:
    """The session a call starts on when it is created without one (as the real server's)."""
    return {
        "type": "realtime",
        "model": DEFAULT_MODEL,
        "instructions": "",
        "output_modalities": ["audio"],
        "audio": {
            "input": {
                "format": dict(PCM_24K),
                "noise_reduction": None,
                "transcription": None,
                "turn_detection": restate_turn_detection({"type": "server_vad"}),
            },
            "output": {"format": dict(PCM_24K), "voice": DEFAULT_VOICE, "speed": 1.0},
        },
        "tools": [],
        "tool_choice": "auto",
        "max_output_tokens": "inf",
        "tracing": None,
        "truncation": "auto",
    }


def restate_turn_detection(detection: dict | None) -> dict | None:
    """Every setting of a turn detection, defaults filled in, as the server restates it."""
    if detection is None:
        return None
    if detection.get("type") == "semantic_vad":
        return {
            "type": "semantic_vad",
            "eagerness": detection.get("eagerness") or "auto",
            "create_response": detection.get("create_response", True) is not False,
            "interrupt_response": detection.get("interrupt_response", True) is not False,
        }
    return {
        "type": "server_vad",
        "threshold": float(detection.get("threshold") if detection.get("threshold") is not None else 0.5),
        "prefix_padding_ms": int(detection.get("prefix_padding_ms") or 300),
        "silence_duration_ms": int(detection.get("silence_duration_ms") or 500),
        "idle_timeout_ms": detection.get("idle_timeout_ms"),
        "create_response": detection.get("create_response", True) is not False,
        "interrupt_response": detection.get("interrupt_response", True) is not False,
    }


def merge_session(current: dict, update: dict) -> None:
    """GA semantics: the fields present replace; `audio.input` and `audio.output` field by field;
    the session's type stays."""
    for key, value in update.items():
        if key == "type":
            continue
        if key == "audio" and isinstance(value, dict):
            audio = current.get("audio") or {}
            for side in ("input", "output"):
                if side in value:
                    if isinstance(value[side], dict):
                        merged = dict(audio.get(side) or {})
                        merged.update(value[side])
                        audio[side] = merged
                    else:
                        audio[side] = value[side]
            current["audio"] = audio
        else:
            current[key] = value
    audio_input = (current.get("audio") or {}).get("input")
    if isinstance(audio_input, dict) and "turn_detection" in audio_input:
        audio_input["turn_detection"] = restate_turn_detection(audio_input["turn_detection"])


class VadSettings:
    def __init__(self, detection: dict) -> None:
        if detection["type"] == "semantic_vad":
            threshold = 0.5
            self.prefix_padding_ms = 300
            self.silence_duration_ms = {"low": 1500, "high": 400}.get(detection.get("eagerness"), 800)
        else:
            threshold = detection["threshold"]
            self.prefix_padding_ms = detection["prefix_padding_ms"]
            self.silence_duration_ms = detection["silence_duration_ms"]
        # −60 dBFS at 0, −40 dBFS at the default 0.5, −20 dBFS at 1 (as the local provider).
        self.threshold_rms = rms_for_dbfs(-60.0 + 40.0 * max(0.0, min(1.0, threshold)))
        self.create_response = detection["create_response"]
        self.interrupt_response = detection["interrupt_response"]


def session_problem(value: object, param: str) -> tuple[str, str, str] | None:
    """(code, param, message) when `value` is no `RealtimeSessionCreateRequest` this peer runs."""
    if not isinstance(value, dict):
        return "invalid_type", param, f"Invalid type for '{param}': expected an object."
    if "type" not in value:
        return "missing_required_parameter", f"{param}.type", f"Missing required parameter: '{param}.type'."
    try:
        SESSION_MODEL.model_validate(value)
    except pydantic.ValidationError as error:
        path, message = first_problem(error, param)
        code = "unknown_parameter" if "unknown parameter" in message else "invalid_value"
        return code, path, message
    return None


def text_tokens(text: str) -> int:
    return -(-len(text) // 4)


# ---------------------------------------------------------------------------------------------
# One call


class InputChunk(typing.NamedTuple):
    start_ms: int
    sumsq: float
    peak: int


class Playback:
    def __init__(self, response_id: str, item_id: str, frames: list[bytes], reply: dict) -> None:
        self.response_id = response_id
        self.item_id = item_id
        self.frames = frames
        self.limit = len(frames)
        self.index = 0
        self.started = asyncio.Event()
        self.reply = reply
        self.sumsq = 0.0


class Generation:
    def __init__(self, response_id: str, item_id: str, deltas: list[str], frames: int, kind: dict) -> None:
        self.response_id = response_id
        self.item_id = item_id
        self.deltas = deltas
        self.deltas_sent = 0
        self.frames = frames
        self.started_at: float | None = None
        self.task: asyncio.Task | None = None
        self.out_of_band = kind["out_of_band"]
        self.text_only = kind["text_only"]
        self.previous_item_id = kind["previous_item_id"]

    def generated_frames(self, now: float) -> int:
        if self.started_at is None:
            return min(1, self.frames)
        elapsed_ms = (now - self.started_at) * 1000
        return min(self.frames, 1 + int(elapsed_ms * GENERATION_SPEEDUP / FRAME_MS))


class RtcCall:
    """What a call of either API has: its peer connection (the client's offer answered, one
    audio track each way, the client's `oai-events` data channel), its tasks, and its closing.
    The API's own class says what the channel's messages, the client's audio and the output
    track's frames mean."""

    def __init__(self, server: "PeerServer", call_id: str, form: str) -> None:
        self.server = server
        self.call_id = call_id
        self.form = form
        self.pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
        self.output = OutputTrack(self)
        self.channel = None
        self.hung_up = False
        self.closed = False
        self.tasks: set[asyncio.Task] = set()
        self.next_id = 0

    def new_id(self, prefix: str) -> str:
        self.next_id += 1
        return f"{prefix}_{self.next_id:04d}{secrets.token_hex(6)}"

    def spawn(self, coro) -> asyncio.Task:
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    def safe(self, action) -> None:
        try:
            action()
        except Exception:
            log.exception("%s: sending failed", self.call_id)

    # -- what the API's class says -------------------------------------------------------------

    # The API's error code for an event that is not one, and the trace file of client events.
    INVALID_EVENT = "invalid_event"
    TRACE_FILE = "client-events.jsonl"

    def on_connect(self) -> None:
        """The data channel is open."""

    def on_text(self, text: str) -> None:
        """One data-channel text message."""

    def error(self, code: str, message: str, event_id: str | None = None, param: str | None = None,
              kind: str = "invalid_request_error") -> None:
        """Sends the API's error event."""

    def on_message(self, message: str | bytes) -> None:
        """One data-channel message: traced, then the API's class handles it; a failure of the
        peer's own is told to the client as a server error."""
        if isinstance(message, bytes):
            self.client_event_types.append("<binary>")
            self.safe(lambda: self.error(self.INVALID_EVENT, "Events are JSON text messages; a binary message was received."))
            return
        if self.server.trace:
            self.server.trace.append(self.TRACE_FILE, {
                "call_id": self.call_id,
                "received_at_unix_ms": int(time.time() * 1000),
                "text": message,
            })
        try:
            self.on_text(message)
        except EventShapeError:
            log.exception("%s: an event the peer built is not the SDK's shape", self.call_id)
            self.safe(lambda: self.error("server_error", "The peer built an event the SDK refuses.", kind="server_error"))
        except Exception:
            log.exception("%s: handling a client event failed", self.call_id)
            self.safe(lambda: self.error("server_error", "The peer failed handling this event.", kind="server_error"))

    def parse_event(self, text: str) -> tuple[dict, str | None, str] | None:
        """A client event's JSON object, its `event_id` and its `type`, recorded in
        `client_event_types`; None once the error said why it is not one."""
        try:
            event = json.loads(text)
        except json.JSONDecodeError as broken:
            self.client_event_types.append("<invalid json>")
            self.error(self.INVALID_EVENT, f"The event is not valid JSON: {broken}.")
            return None
        if not isinstance(event, dict):
            self.client_event_types.append("<not an object>")
            self.error(self.INVALID_EVENT, "The event is not a JSON object.")
            return None
        event_id = event.get("event_id") if isinstance(event.get("event_id"), str) else None
        event_type = event.get("type")
        self.client_event_types.append(event_type if isinstance(event_type, str) else "<no type>")
        if not isinstance(event_type, str):
            self.error(self.INVALID_EVENT, "The 'type' field is missing.", event_id)
            return None
        return event, event_id, event_type

    def on_audio(self, chunk: bytes) -> None:
        """20 ms of the client's audio, 48 kHz mono s16."""

    def on_closed(self) -> None:
        """The call ended (its connection, its data channel, or a hang-up): stop timed work."""

    def next_output_frame(self) -> bytes | None:
        """The next 20 ms the output track sends; None is silence."""
        return None

    # -- WebRTC --------------------------------------------------------------------------------

    async def answer(self, offer_sdp: str) -> str:
        pc = self.pc

        @pc.on("datachannel")
        def on_datachannel(channel) -> None:
            if channel.label != "oai-events":
                log.warning("%s: a data channel %r, not oai-events: ignored", self.call_id, channel.label)
                return
            self.channel = channel

            @channel.on("message")
            def on_message(message) -> None:
                self.on_message(message)

            @channel.on("close")
            def on_close() -> None:
                log.info("%s: the data channel closed", self.call_id)
                self.mark_closed()

            self.on_connect()

        @pc.on("track")
        def on_track(track) -> None:
            if track.kind == "audio":
                self.spawn(self.consume(track))

        @pc.on("connectionstatechange")
        async def on_state() -> None:
            log.info("%s: connection %s", self.call_id, pc.connectionState)
            if pc.connectionState in ("failed", "closed"):
                self.mark_closed()
                if pc.connectionState == "failed":
                    await pc.close()

        await pc.setRemoteDescription(RTCSessionDescription(sdp=offer_sdp, type="offer"))
        pc.addTrack(self.output)
        await pc.setLocalDescription(await pc.createAnswer())
        return pc.localDescription.sdp

    def mark_closed(self) -> None:
        if self.closed:
            return
        self.closed = True
        # A call whose connection ended is no longer active: its hang-up is a 404 from now on.
        self.server.active.discard(self.call_id)
        self.on_closed()

    async def close(self) -> None:
        self.mark_closed()
        self.output.stop()
        await self.pc.close()
        for task in list(self.tasks):
            if task is not asyncio.current_task():
                task.cancel()

    async def consume(self, track) -> None:
        """Decodes the client's audio (aiortc's Opus decoder), resampled to 48 kHz mono s16,
        in 20 ms chunks."""
        resampler = av.AudioResampler(format="s16", layout="mono", rate=SAMPLE_RATE)
        carry = b""
        while True:
            try:
                frame = await track.recv()
            except MediaStreamError:
                return
            for mono in resampler.resample(frame):
                carry += bytes(mono.planes[0])[: mono.samples * 2]
            while len(carry) >= FRAME_BYTES:
                chunk, carry = carry[:FRAME_BYTES], carry[FRAME_BYTES:]
                try:
                    self.on_audio(chunk)
                except Exception:
                    log.exception("%s: audio handling failed", self.call_id)


class Call(RtcCall):
    """One Realtime API call: the session's state, and what it measured."""

    def __init__(self, server: "PeerServer", call_id: str, form: str, session: dict) -> None:
        super().__init__(server, call_id, form)
        self.session = session
        self.conversation_id = self.new_id("conv")
        # Input audio: the timeline in 48 kHz samples, the buffer in 20 ms chunks.
        self.received_samples = 0
        self.input: list[InputChunk] = []
        self.vad: VadSettings | None = None
        self.vad_speaking_item: str | None = None
        self.vad_voiced_ms = 0
        self.vad_onset_ms = 0
        self.vad_last_voiced_end_ms = 0
        self.vad_quiet_timer: asyncio.TimerHandle | None = None
        # Conversation.
        self.order: list[str] = []
        self.items: dict[str, dict] = {}
        self.unanswered_turn: dict | None = None
        self.unanswered_text: str | None = None
        self.open_tool_calls: dict[str, str] = {}
        self.tool_outputs: list[tuple[str, str]] = []
        self.pending_transcripts: list[tuple[str, str, dict, float]] = []
        self.generation: Generation | None = None
        self.playback: Playback | None = None
        self.assistant_audio_ms: dict[str, int] = {}
        self.produced_audio = False
        self.context_tokens = {"text": 0, "audio": 0}
        self.last_input_tokens = {"text": 0, "audio": 0}
        # Stats.
        self.client_event_types: list[str] = []
        self.turns: list[dict] = []
        self.replies: list[dict] = []
        self.apply_turn_detection()

    # -- sending -------------------------------------------------------------------------------

    def emit(self, event: dict) -> None:
        event = {"type": event["type"], "event_id": self.new_id("event"), **event}
        text = build_event(event)
        channel = self.channel
        if channel is None or channel.readyState != "open":
            log.info("%s: %s not sent: the data channel is not open", self.call_id, event["type"])
            return
        try:
            channel.send(text)
        except ValueError as too_large:
            # aiortc holds messages to the client's a=max-message-size (Walkie offers 64 KiB).
            log.warning("%s: %s not sent: %s", self.call_id, event["type"], too_large)

    def error(self, code: str, message: str, event_id: str | None = None, param: str | None = None,
              kind: str = "invalid_request_error") -> None:
        self.emit({
            "type": "error",
            "error": {"type": kind, "code": code, "message": message, "param": param, "event_id": event_id},
        })

    # -- stats ---------------------------------------------------------------------------------

    def stats(self) -> dict:
        return {
            "call_id": self.call_id,
            "form": self.form,
            "hung_up": self.hung_up,
            "closed": self.closed,
            "client_event_types": list(self.client_event_types),
            "turns": [dict(t) for t in self.turns],
            "replies": [
                {
                    "response_id": r["response_id"],
                    "status": r["status"],
                    "sent_audio_ms": r["sent_frames"] * FRAME_MS,
                    "sent_rms_dbfs": dbfs(math.sqrt(r["sumsq"] / (r["sent_frames"] * FRAME_SAMPLES)))
                    if r["sent_frames"]
                    else None,
                }
                for r in self.replies
            ],
        }

    # -- WebRTC --------------------------------------------------------------------------------

    def on_closed(self) -> None:
        if self.generation and self.generation.task:
            self.generation.task.cancel()
        if self.vad_quiet_timer:
            self.vad_quiet_timer.cancel()

    # -- the output track's side ---------------------------------------------------------------

    def next_output_frame(self) -> bytes | None:
        playback = self.playback
        if playback is None:
            return None
        if playback.index >= playback.limit:
            # The last frame went out with the previous call: the buffer is drained.
            self.playback = None
            self.safe(lambda: self.emit({"type": "output_audio_buffer.stopped", "response_id": playback.response_id}))
            return None
        if playback.index == 0:
            playback.started.set()
            self.safe(lambda: self.emit({"type": "output_audio_buffer.started", "response_id": playback.response_id}))
        frame = playback.frames[playback.index]
        playback.index += 1
        playback.reply["sent_frames"] += 1
        playback.reply["sumsq"] += measure(frame)[0]
        return frame

    # -- session -------------------------------------------------------------------------------

    def on_connect(self) -> None:
        self.safe(lambda: self.emit({"type": "session.created", "session": self.session}))

    def apply_turn_detection(self) -> None:
        detection = ((self.session.get("audio") or {}).get("input") or {}).get("turn_detection")
        if detection:
            self.vad = VadSettings(detection)
        else:
            self.vad = None
            self.vad_speaking_item = None
            self.vad_voiced_ms = 0

    def voice(self) -> str:
        voice = ((self.session.get("audio") or {}).get("output") or {}).get("voice")
        if isinstance(voice, dict):
            return voice.get("id", DEFAULT_VOICE)
        return voice or DEFAULT_VOICE

    # -- client events -------------------------------------------------------------------------

    def on_text(self, text: str) -> None:
        parsed = self.parse_event(text)
        if parsed is None:
            return
        event, event_id, event_type = parsed
        model = CLIENT_EVENT_MODELS.get(event_type)
        if model is None:
            return self.error(
                "invalid_value",
                f"Invalid value: '{event_type}'. Supported values are client events of the GA Realtime API.",
                event_id,
                "type",
            )
        try:
            model.model_validate(event)
        except pydantic.ValidationError as error:
            param, message = first_problem(error)
            code = "unknown_parameter" if "unknown parameter" in message else "invalid_value"
            return self.error(code, message, event_id, param)
        handler = {
            "session.update": self.update_session,
            "input_audio_buffer.clear": self.clear_input,
            "input_audio_buffer.commit": self.commit,
            "input_audio_buffer.append": self.append,
            "response.create": self.response_create,
            "response.cancel": self.response_cancel,
            "output_audio_buffer.clear": lambda e, i: self.clear_output(),
            "conversation.item.create": self.create_item,
            "conversation.item.truncate": self.truncate,
            "conversation.item.delete": self.delete_item,
            "conversation.item.retrieve": self.retrieve_item,
        }.get(event_type)
        if handler is None:
            return self.error("unsupported_by_peer", f"This peer does not implement {event_type}.", event_id)
        handler(event, event_id)

    def update_session(self, event: dict, event_id: str | None) -> None:
        update = event["session"]
        if update.get("type") != "realtime":
            return self.error("invalid_value", "This peer runs realtime sessions only.", event_id, "session.type")
        if "model" in update:
            return self.error(
                "invalid_value",
                "Invalid 'session.model': the model is set when the call is created and cannot be changed with session.update.",
                event_id,
                "session.model",
            )
        voice = ((update.get("audio") or {}).get("output") or {}).get("voice")
        current = ((self.session.get("audio") or {}).get("output") or {}).get("voice")
        if self.produced_audio and voice is not None and voice != current:
            return self.error("cannot_update_voice", "Cannot update a conversation's voice if assistant audio is present.", event_id)
        merged = json.loads(json.dumps(self.session))
        merge_session(merged, update)
        problem = session_problem(merged, "session")
        if problem:
            return self.error(problem[0], problem[2], event_id, problem[1])
        self.session = merged
        self.apply_turn_detection()
        self.emit({"type": "session.updated", "session": self.session})

    def append(self, event: dict, event_id: str | None) -> None:
        self.error(
            "unsupported_by_peer",
            "This peer takes audio by RTP over WebRTC, not input_audio_buffer.append.",
            event_id,
        )

    # -- input audio ---------------------------------------------------------------------------

    def on_audio(self, chunk: bytes) -> None:
        sumsq, peak = measure(chunk)
        start_ms = self.received_samples * 1000 // SAMPLE_RATE
        self.received_samples += FRAME_SAMPLES
        end_ms = self.received_samples * 1000 // SAMPLE_RATE
        if self.closed:
            return
        self.input.append(InputChunk(start_ms, sumsq, peak))
        if len(self.input) > MAX_INPUT_MS // FRAME_MS:
            del self.input[0]
        vad = self.vad
        if vad is None:
            return
        voiced = math.sqrt(sumsq / FRAME_SAMPLES) >= vad.threshold_rms
        if self.vad_speaking_item is None:
            if voiced:
                if self.vad_voiced_ms == 0:
                    self.vad_onset_ms = start_ms
                self.vad_voiced_ms += end_ms - start_ms
                if self.vad_voiced_ms >= MIN_SPEECH_MS:
                    self.start_speech(vad)
            else:
                self.vad_voiced_ms = 0
                keep_from = end_ms - vad.prefix_padding_ms
                while self.input and self.input[0].start_ms + FRAME_MS <= keep_from:
                    del self.input[0]
        else:
            if voiced:
                self.vad_last_voiced_end_ms = end_ms
            elif end_ms - self.vad_last_voiced_end_ms >= vad.silence_duration_ms:
                self.end_speech()
                return
            # Speech with no audio at all for the silence duration ends too (a muted client).
            if self.vad_quiet_timer:
                self.vad_quiet_timer.cancel()
            self.vad_quiet_timer = asyncio.get_running_loop().call_later(
                vad.silence_duration_ms / 1000, lambda: self.safe(self.end_speech)
            )

    def start_speech(self, vad: VadSettings) -> None:
        audio_start_ms = max(self.vad_onset_ms - vad.prefix_padding_ms, self.input[0].start_ms if self.input else 0)
        while self.input and self.input[0].start_ms + FRAME_MS <= audio_start_ms:
            del self.input[0]
        item_id = self.new_id("item")
        self.vad_speaking_item = item_id
        self.vad_last_voiced_end_ms = self.received_samples * 1000 // SAMPLE_RATE
        self.emit({"type": "input_audio_buffer.speech_started", "audio_start_ms": audio_start_ms, "item_id": item_id})
        if vad.interrupt_response:
            # Barge-in: the audible reply is cut, the one being generated cancelled.
            self.clear_output()
            if self.generation is not None:
                self.finish_response(cancel="turn_detected")

    def end_speech(self) -> None:
        item_id = self.vad_speaking_item
        if item_id is None or self.vad is None or self.closed:
            return
        if self.vad_quiet_timer:
            self.vad_quiet_timer.cancel()
            self.vad_quiet_timer = None
        self.vad_speaking_item = None
        self.vad_voiced_ms = 0
        self.emit({"type": "input_audio_buffer.speech_stopped", "audio_end_ms": self.vad_last_voiced_end_ms, "item_id": item_id})
        self.commit_as(item_id)
        if self.vad.create_response and self.generation is None:
            self.respond({})

    def clear_input(self, event: dict, event_id: str | None) -> None:
        self.input.clear()
        self.vad_speaking_item = None
        self.vad_voiced_ms = 0
        self.emit({"type": "input_audio_buffer.cleared"})

    def commit(self, event: dict, event_id: str | None) -> None:
        ms = len(self.input) * FRAME_MS
        if ms < MIN_COMMIT_MS:
            return self.error(
                "input_audio_buffer_commit_empty",
                f"Error committing input audio buffer: buffer too small. Expected at least {MIN_COMMIT_MS}ms of audio, but buffer only has {ms:.2f}ms of audio.",
                event_id,
            )
        item_id = self.vad_speaking_item or self.new_id("item")
        self.vad_speaking_item = None
        self.vad_voiced_ms = 0
        self.commit_as(item_id)

    def commit_as(self, item_id: str) -> None:
        self.flush_transcripts()
        chunks, self.input = self.input, []
        previous = self.order[-1] if self.order else None
        item = {
            "id": item_id,
            "object": "realtime.item",
            "type": "message",
            "status": "completed",
            "role": "user",
            "content": [{"type": "input_audio", "transcript": None}],
        }
        self.add_item(item, None)
        self.emit({"type": "input_audio_buffer.committed", "item_id": item_id, "previous_item_id": previous})
        self.emit({"type": "conversation.item.added", "item": item, "previous_item_id": previous})
        self.emit({"type": "conversation.item.done", "item": item, "previous_item_id": previous})
        threshold = rms_for_dbfs(SPEECH_DBFS)
        voiced = [c for c in chunks if math.sqrt(c.sumsq / FRAME_SAMPLES) >= threshold]
        audio_ms = len(chunks) * FRAME_MS
        voiced_rms = math.sqrt(sum(c.sumsq for c in voiced) / (len(voiced) * FRAME_SAMPLES)) if voiced else 0.0
        peak = max((c.peak for c in chunks), default=0)
        turn = {
            "item_id": item_id,
            "voiced_ms": len(voiced) * FRAME_MS,
            "rms_dbfs": dbfs(voiced_rms),
            "peak_dbfs": dbfs(float(peak)),
        }
        self.turns.append(turn)
        if voiced:
            span_ms = voiced[-1].start_ms + FRAME_MS - voiced[0].start_ms
            transcript = f"I heard {span_ms / 1000:.1f} s of speech at {round(dbfs(voiced_rms))} dBFS."
        else:
            transcript = f"I heard {audio_ms / 1000:.1f} s of silence."
        self.context_tokens["audio"] += -(-audio_ms // 100)
        transcription = ((self.session.get("audio") or {}).get("input") or {}).get("transcription")
        if transcription:
            model = str(transcription.get("model") or "")
            seconds = audio_ms / 1000
            if model in BY_DURATION_MODELS:
                usage = {"type": "duration", "seconds": seconds}
            else:
                audio_tokens = math.ceil(seconds * 10)
                output_tokens = len(transcript.split())
                usage = {
                    "type": "tokens",
                    "input_tokens": audio_tokens,
                    "output_tokens": output_tokens,
                    "total_tokens": audio_tokens + output_tokens,
                    "input_token_details": {"audio_tokens": audio_tokens, "text_tokens": 0},
                }
            self.pending_transcripts.append((item_id, transcript, usage, time.monotonic()))
            asyncio.get_running_loop().call_later(TRANSCRIPT_DELAY_S + 0.01, lambda: self.safe(self.flush_due_transcripts))
        self.unanswered_turn = {"audio_ms": audio_ms, "voiced": bool(voiced), "span_ms": len(voiced) * FRAME_MS}

    def flush_due_transcripts(self) -> None:
        if self.generation is None and not self.closed:
            self.flush_transcripts()

    def flush_transcripts(self) -> None:
        pending, self.pending_transcripts = self.pending_transcripts, []
        for item_id, transcript, usage, _ in pending:
            self.emit({
                "type": "conversation.item.input_audio_transcription.delta",
                "item_id": item_id,
                "content_index": 0,
                "delta": transcript,
            })
            self.emit({
                "type": "conversation.item.input_audio_transcription.completed",
                "item_id": item_id,
                "content_index": 0,
                "transcript": transcript,
                "usage": usage,
            })
            item = self.items.get(item_id)
            if item:
                item["content"][0]["transcript"] = transcript

    # -- conversation items --------------------------------------------------------------------

    def add_item(self, item: dict, previous_item_id: str | None, position: int | None = None) -> None:
        if position is None:
            self.order.append(item["id"])
        else:
            self.order.insert(position, item["id"])
        self.items[item["id"]] = item

    def create_item(self, event: dict, event_id: str | None) -> None:
        item = json.loads(json.dumps(event["item"]))
        kind = item.get("type")
        if kind == "message":
            allowed = {
                "user": {"input_text", "input_audio", "input_image"},
                "system": {"input_text"},
                "assistant": {"output_text", "output_audio"},
            }[item["role"]]
            if not item["content"]:
                return self.error("invalid_value", "Invalid 'item.content': empty array.", event_id, "item.content")
            for index, part in enumerate(item["content"]):
                if part.get("type") not in allowed:
                    return self.error(
                        "invalid_value",
                        f"Invalid value for 'item.content[{index}].type': not allowed in a {item['role']} message.",
                        event_id,
                        f"item.content[{index}].type",
                    )
        elif kind == "function_call_output":
            if item["call_id"] not in self.open_tool_calls:
                return self.error(
                    "invalid_value",
                    f"Invalid value for 'item.call_id': no function call with call_id '{item['call_id']}' waits for its output.",
                    event_id,
                    "item.call_id",
                )
        elif kind != "function_call":
            return self.error("invalid_value", f"This peer does not create items of type {kind}.", event_id, "item.type")
        if item.get("id") in self.items:
            return self.error("invalid_value", f"Item with id {item['id']} already exists.", event_id, "item.id")
        previous_item_id = event.get("previous_item_id")
        if previous_item_id is None:
            position = None
            previous = self.order[-1] if self.order else None
        elif previous_item_id == "root":
            position = 0
            previous = None
        elif previous_item_id in self.items:
            position = self.order.index(previous_item_id) + 1
            previous = previous_item_id
        else:
            return self.error(
                "item_not_found",
                f"Item with item_id not found: {previous_item_id}",
                event_id,
                "previous_item_id",
            )
        item.setdefault("id", self.new_id("item"))
        item.setdefault("object", "realtime.item")
        item["status"] = "completed"
        if kind == "function_call_output":
            name = self.open_tool_calls.pop(item["call_id"])
            self.tool_outputs.append((name, item["output"]))
            self.context_tokens["text"] += text_tokens(item["output"])
        elif kind == "function_call":
            self.open_tool_calls[item.get("call_id") or self.new_id("call")] = item["name"]
        else:
            texts = [p.get("text") or p.get("transcript") or "" for p in item["content"]]
            self.context_tokens["text"] += text_tokens("".join(texts))
            if item["role"] == "user":
                typed = "".join(p.get("text") or "" for p in item["content"] if p.get("type") == "input_text")
                if typed:
                    self.unanswered_text = typed
        self.add_item(item, previous, position)
        self.emit({"type": "conversation.item.added", "item": item, "previous_item_id": previous})
        self.emit({"type": "conversation.item.done", "item": item, "previous_item_id": previous})

    def delete_item(self, event: dict, event_id: str | None) -> None:
        item_id = event["item_id"]
        if item_id not in self.items:
            return self.error("item_delete_invalid_item_id", f"Item with item_id not found: {item_id}", event_id, "item_id")
        del self.items[item_id]
        self.order.remove(item_id)
        self.emit({"type": "conversation.item.deleted", "item_id": item_id})

    def retrieve_item(self, event: dict, event_id: str | None) -> None:
        item = self.items.get(event["item_id"])
        if item is None:
            return self.error("item_retrieve_invalid_item_id", f"Item with item_id not found: {event['item_id']}", event_id, "item_id")
        self.emit({"type": "conversation.item.retrieved", "item": item})

    def truncate(self, event: dict, event_id: str | None) -> None:
        item_id = event["item_id"]
        if item_id not in self.assistant_audio_ms:
            return self.error("item_truncate_invalid_item_id", f"Item with item_id not found: {item_id}", event_id, "item_id")
        # Clamped to the audio actually sent (a reply still playing has sent less than its length).
        sent_ms = self.assistant_audio_ms[item_id]
        if self.playback is not None and self.playback.item_id == item_id:
            sent_ms = min(sent_ms, self.playback.index * FRAME_MS)
        audio_end_ms = max(0, min(int(event["audio_end_ms"]), sent_ms))
        self.assistant_audio_ms[item_id] = audio_end_ms
        self.emit({
            "type": "conversation.item.truncated",
            "item_id": item_id,
            "content_index": event["content_index"],
            "audio_end_ms": audio_end_ms,
        })

    # -- responses -----------------------------------------------------------------------------

    def response_create(self, event: dict, event_id: str | None) -> None:
        if self.generation is not None:
            return self.error(
                "conversation_already_has_active_response",
                f"Conversation already has an active response in progress: {self.generation.response_id}. Wait until the response is finished before creating a new one.",
                event_id,
            )
        self.respond(event.get("response") or {})

    def response_cancel(self, event: dict, event_id: str | None) -> None:
        wanted = event.get("response_id")
        active = self.generation.response_id if self.generation else None
        if active is None:
            return self.error("response_cancel_not_active", "Cancellation failed: no active response found", event_id)
        if wanted is not None and wanted != active:
            return self.error("response_cancel_not_active", f"Cancellation failed: response {wanted} is not active", event_id)
        self.finish_response(cancel="client_cancelled")

    def response_object(self, response_id: str, status: str, output: list, out_of_band: bool, text_only: bool,
                        details: dict | None = None, usage: dict | None = None) -> dict:
        return {
            "object": "realtime.response",
            "id": response_id,
            "status": status,
            "status_details": details,
            "output": output,
            "conversation_id": None if out_of_band else self.conversation_id,
            "output_modalities": ["text" if text_only else "audio"],
            "max_output_tokens": self.session.get("max_output_tokens", "inf"),
            "audio": {"output": {"format": ((self.session.get("audio") or {}).get("output") or {}).get("format") or dict(PCM_24K), "voice": self.voice()}},
            "usage": usage,
            "metadata": None,
        }

    def bill(self, output_text: str, output_audio_ms: int, out_of_band: bool) -> dict:
        instructions = text_tokens(self.session.get("instructions") or "")
        context = {"text": 0, "audio": 0} if out_of_band else dict(self.context_tokens)
        input_text = instructions + context["text"]
        input_audio = context["audio"]
        cached_text = min(input_text, self.last_input_tokens["text"]) if not out_of_band else 0
        cached_audio = min(input_audio, self.last_input_tokens["audio"]) if not out_of_band else 0
        out_text = text_tokens(output_text)
        out_audio = -(-output_audio_ms // 50)
        if not out_of_band:
            self.last_input_tokens = {"text": input_text, "audio": input_audio}
            self.context_tokens["text"] += out_text
            self.context_tokens["audio"] += out_audio
        return {
            "total_tokens": input_text + input_audio + out_text + out_audio,
            "input_tokens": input_text + input_audio,
            "output_tokens": out_text + out_audio,
            "input_token_details": {
                "text_tokens": input_text,
                "audio_tokens": input_audio,
                "image_tokens": 0,
                "cached_tokens": cached_text + cached_audio,
                "cached_tokens_details": {"text_tokens": cached_text, "audio_tokens": cached_audio, "image_tokens": 0},
            },
            "output_token_details": {"text_tokens": out_text, "audio_tokens": out_audio},
        }

    def respond(self, request: dict) -> None:
        out_of_band = request.get("conversation") == "none"
        text_only = request.get("output_modalities") == ["text"]
        typed = None if out_of_band else self.unanswered_text
        if not out_of_band:
            self.unanswered_text = None
        if typed:
            asked = tool_request(typed, self.session.get("tools") or [])
            if asked:
                return self.call_tool(*asked)
        turn = None if out_of_band else self.unanswered_turn
        if not out_of_band:
            self.unanswered_turn = None
        answered, self.tool_outputs = ([], self.tool_outputs) if out_of_band else (self.tool_outputs, [])
        if answered:
            name, output = answered[-1]
            transcript = f"The {name} tool answered: {output}"
            if len(answered) > 1:
                transcript = f"{len(answered)} tool calls were answered; the last, {name}, answered: {output}"
        elif out_of_band:
            transcript = f"An out-of-band reply in place of the voice {self.voice()}; this peer runs on aiortc."
        elif turn and turn["voiced"]:
            transcript = f"You said something for {turn['span_ms'] / 1000:.1f} seconds; this peer runs on aiortc."
        elif turn:
            transcript = f"I heard {turn['audio_ms'] / 1000:.1f} seconds of silence; this peer runs on aiortc."
        elif typed:
            transcript = f"You wrote: {typed[:200]}; this peer runs on aiortc."
        else:
            transcript = "There was nothing new from you; this peer runs on aiortc."
        frames = [] if text_only else reply_frames()
        response_id = self.new_id("resp")
        item_id = self.new_id("item")
        previous = None
        if not out_of_band:
            previous = self.order[-1] if self.order else None
        item = {"id": item_id, "object": "realtime.item", "type": "message", "status": "in_progress", "role": "assistant", "content": []}
        reply = {"response_id": response_id, "status": "in_progress", "sent_frames": 0, "sumsq": 0.0}
        self.replies.append(reply)
        self.emit({"type": "response.created", "response": self.response_object(response_id, "in_progress", [], out_of_band, text_only)})
        self.emit({"type": "response.output_item.added", "response_id": response_id, "output_index": 0, "item": item})
        if not out_of_band:
            self.add_item(json.loads(json.dumps(item)), previous)
            self.emit({"type": "conversation.item.added", "item": item, "previous_item_id": previous})
        part = {"type": "text", "text": ""} if text_only else {"type": "audio", "transcript": ""}
        self.emit({
            "type": "response.content_part.added",
            "response_id": response_id,
            "item_id": item_id,
            "output_index": 0,
            "content_index": 0,
            "part": part,
        })
        words = transcript.split(" ")
        deltas = [" ".join(words[i : i + 4]) + (" " if i + 4 < len(words) else "") for i in range(0, len(words), 4)]
        generation = Generation(
            response_id, item_id, deltas, len(frames),
            {"out_of_band": out_of_band, "text_only": text_only, "previous_item_id": previous},
        )
        generation.reply = reply
        self.generation = generation
        playback = None
        if frames:
            self.produced_audio = True
            # A new reply replaces what was still playing.
            self.clear_output()
            playback = Playback(response_id, item_id, frames, reply)
            self.playback = playback
            self.assistant_audio_ms[item_id] = len(frames) * FRAME_MS
        generation.task = self.spawn(self.generate(generation, playback))

    async def generate(self, generation: Generation, playback: Playback | None) -> None:
        """Streams the transcript over the generation time, then ends the response."""
        try:
            if playback is not None:
                try:
                    await asyncio.wait_for(playback.started.wait(), 1.0)
                except asyncio.TimeoutError:
                    log.warning("%s: the reply's first frame was not taken within 1 s", self.call_id)
            loop = asyncio.get_running_loop()
            generation.started_at = loop.time()
            if generation.text_only:
                span = 0.010 * len(generation.deltas)
            else:
                span = generation.frames * FRAME_MS / 1000 / GENERATION_SPEEDUP
            for index, delta in enumerate(generation.deltas):
                due = generation.started_at + span * index / len(generation.deltas)
                await asyncio.sleep(max(0.0, due - loop.time()))
                if self.generation is not generation:
                    return
                generation.deltas_sent = index + 1
                self.emit({
                    "type": "response.output_text.delta" if generation.text_only else "response.output_audio_transcript.delta",
                    "response_id": generation.response_id,
                    "item_id": generation.item_id,
                    "output_index": 0,
                    "content_index": 0,
                    "delta": delta,
                })
            await asyncio.sleep(max(0.0, generation.started_at + span - loop.time()))
            if self.generation is generation:
                self.finish_response(cancel=None)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("%s: generating a reply failed", self.call_id)
            if self.generation is generation:
                # Not left in progress for ever: the next response.create must be possible.
                self.generation = None
                generation.reply["status"] = "failed"
                self.safe(lambda: self.error("server_error", "The peer failed generating this reply.", kind="server_error"))

    def finish_response(self, cancel: str | None) -> None:
        generation = self.generation
        if generation is None:
            return
        self.generation = None
        if generation.task is not None and generation.task is not asyncio.current_task():
            generation.task.cancel()
        response_id, item_id = generation.response_id, generation.item_id
        if cancel is None:
            transcript = "".join(generation.deltas)
            status, item_status, details = "completed", "completed", None
            generated = generation.frames
        else:
            transcript = "".join(generation.deltas[: generation.deltas_sent])
            status, item_status = "cancelled", "incomplete"
            details = {"type": "cancelled", "reason": cancel}
            generated = generation.generated_frames(asyncio.get_running_loop().time())
            playback = self.playback
            if playback is not None and playback.response_id == response_id:
                # Frames not generated yet were never in the output buffer.
                playback.limit = max(playback.index, min(playback.limit, generated))
            if item_id in self.assistant_audio_ms:
                self.assistant_audio_ms[item_id] = min(self.assistant_audio_ms[item_id], generated * FRAME_MS)
        common = {"response_id": response_id, "item_id": item_id, "output_index": 0, "content_index": 0}
        if generation.text_only:
            self.emit({"type": "response.output_text.done", **common, "text": transcript})
            part = {"type": "text", "text": transcript}
            content = {"type": "output_text", "text": transcript}
        else:
            self.emit({"type": "response.output_audio.done", **common})
            self.emit({"type": "response.output_audio_transcript.done", **common, "transcript": transcript})
            part = {"type": "audio", "transcript": transcript}
            content = {"type": "output_audio", "transcript": transcript}
        self.emit({"type": "response.content_part.done", **common, "part": part})
        item = {"id": item_id, "object": "realtime.item", "type": "message", "status": item_status, "role": "assistant", "content": [content]}
        self.emit({"type": "response.output_item.done", "response_id": response_id, "output_index": 0, "item": item})
        if not generation.out_of_band:
            if item_id in self.items:
                self.items[item_id] = json.loads(json.dumps(item))
            self.emit({"type": "conversation.item.done", "item": item, "previous_item_id": generation.previous_item_id})
        usage = self.bill(transcript, generated * FRAME_MS, generation.out_of_band)
        generation.reply["status"] = status
        self.emit({
            "type": "response.done",
            "response": self.response_object(response_id, status, [item], generation.out_of_band, generation.text_only, details, usage),
        })
        self.flush_transcripts()

    def call_tool(self, name: str, count: int, arguments: str) -> None:
        """A response that is the scripted model's call of a declared tool, `count` times."""
        response_id = self.new_id("resp")
        reply = {"response_id": response_id, "status": "in_progress", "sent_frames": 0, "sumsq": 0.0}
        self.replies.append(reply)
        self.emit({"type": "response.created", "response": self.response_object(response_id, "in_progress", [], False, False)})
        done_items = []
        for index in range(count):
            item_id = self.new_id("item")
            call_id = self.new_id("call")
            previous = self.order[-1] if self.order else None

            def call(status: str, args: str) -> dict:
                return {"id": item_id, "object": "realtime.item", "type": "function_call", "status": status,
                        "name": name, "call_id": call_id, "arguments": args}

            self.add_item(call("in_progress", ""), previous)
            self.emit({"type": "response.output_item.added", "response_id": response_id, "output_index": index, "item": call("in_progress", "")})
            self.emit({"type": "conversation.item.added", "item": call("in_progress", ""), "previous_item_id": previous})
            half = len(arguments) // 2
            for piece in (arguments[:half], arguments[half:]) if half else (arguments,):
                self.emit({
                    "type": "response.function_call_arguments.delta",
                    "response_id": response_id,
                    "item_id": item_id,
                    "output_index": index,
                    "call_id": call_id,
                    "delta": piece,
                })
            self.emit({
                "type": "response.function_call_arguments.done",
                "response_id": response_id,
                "item_id": item_id,
                "output_index": index,
                "call_id": call_id,
                "name": name,
                "arguments": arguments,
            })
            done = call("completed", arguments)
            self.items[item_id] = done
            self.emit({"type": "response.output_item.done", "response_id": response_id, "output_index": index, "item": done})
            self.emit({"type": "conversation.item.done", "item": done, "previous_item_id": previous})
            self.open_tool_calls[call_id] = name
            done_items.append(done)
        usage = self.bill(arguments * count, 0, False)
        reply["status"] = "completed"
        self.emit({"type": "response.done", "response": self.response_object(response_id, "completed", done_items, False, False, None, usage)})

    def clear_output(self) -> None:
        """Cuts the reply audio still to be played: output_audio_buffer.cleared."""
        playback = self.playback
        if playback is None:
            return
        self.playback = None
        played_ms = playback.index * FRAME_MS
        if playback.item_id in self.assistant_audio_ms:
            self.assistant_audio_ms[playback.item_id] = min(self.assistant_audio_ms[playback.item_id], played_ms)
        playback.started.set()
        self.emit({"type": "output_audio_buffer.cleared", "response_id": playback.response_id})


# ---------------------------------------------------------------------------------------------
# The Live API (GPT-Live): the rules of crates/local-provider/src/live_session.rs, in code of its own

LIVE_SESSION_LIFETIME_S = 60 * 60
LIVE_USAGE_EVERY_S = 1.0
# The model's own rule for the end of a user's turn: this long without speech after some.
END_OF_TURN_SILENCE_MS = 600
# Speech shorter than this is not a turn (a click, a cough).
MIN_TURN_SPEECH_MS = 100
# The loudness a session without a wake policy takes for speech (the policy's default).
LIVE_DEFAULT_VAD_THRESHOLD = 0.5
MAX_INITIAL_MESSAGES = 128
MAX_LIVE_BODY_BYTES = 1024 * 1024
# Fixed at start: an update naming one is refused, naming it.
LIVE_FIXED_FIELDS = ("model", "instructions", "audio", "input")
# What the snapshot (`SessionResource`) restates of the session a call starts with. The SDK's
# snapshot has no `wake_policy` or `idle_timeout_s`: the session keeps them, its events don't.
LIVE_SNAPSHOT_FIELDS = ("audio", "client", "delegation", "input", "instructions", "safety_identifier", "store", "triggers")
# The Live client events this peer acts on: a WebRTC client's, with client or Responses
# delegation. The others the SDK knows (`session.start` and `session.input_audio.append` are a
# WebSocket's, fixtures a telephony app's, `decision.*` the Decisions backend's) are refused.
LIVE_HANDLED_CLIENT_EVENTS = (
    "session.update",
    "session.input_audio.mute",
    "session.input_audio.unmute",
    "session.instructions.append",
    "session.thinking.append",
    "session.commentary.append",
    "session.close",
    "response.item.create",
    "response.create",
)


def vad_threshold_rms(threshold: float) -> float:
    """−60 dBFS at 0, −40 dBFS at the default 0.5, −20 dBFS at 1 (as the local provider)."""
    return rms_for_dbfs(-60.0 + 40.0 * max(0.0, min(1.0, threshold)))


def transcript_deltas(text: str) -> list[str]:
    """The text in pieces of 4 words, word boundaries (and their spaces) kept."""
    words = text.split(" ")
    return [" ".join(words[i : i + 4]) + (" " if i + 4 < len(words) else "") for i in range(0, len(words), 4)]


def live_body_problem(body: object) -> tuple[str, str | None, str] | None:
    """(code, param, message) when `body` is no `LiveCreateParams` (unknown keys refused)."""
    try:
        LIVE_CREATE_BODY.validate_json(json.dumps(body), strict=True)
    except pydantic.ValidationError as error:
        param, message = first_problem(error)
        kind = error.errors(include_url=False)[0]["type"]
        if "unknown parameter" in message:
            code = "unknown_parameter"
        elif kind == "missing":
            code, message = "missing_required_parameter", f"Missing required parameter: '{param}'."
        else:
            code = "invalid_value"
        return code, param or None, message
    return None


def live_session_problem(session: dict) -> tuple[str, str, str] | None:
    """The Live API's documented limits beyond the types (the local provider's check_session):
    a model; a built-in voice by name (or a custom one by id); at most 128 history messages of
    one text part each, of the kind their role takes; a wake threshold from 0 to 1; an idle
    timeout only with a wake policy."""
    if not str(session.get("model", "")).strip():
        return "missing_required_parameter", "session.model", "Missing required parameter: 'session.model'."
    voice = ((session.get("audio") or {}).get("output") or {}).get("voice")
    if isinstance(voice, str) and voice not in LIVE_VOICES:
        return "invalid_value", "session.audio.output.voice", f"Invalid value: '{voice}'. Supported values are: {', '.join(LIVE_VOICES)}."
    history = session.get("input") or []
    if len(history) > MAX_INITIAL_MESSAGES:
        return (
            "array_above_max_length",
            "session.input",
            f"Invalid 'session.input': array too long. Expected an array with maximum length {MAX_INITIAL_MESSAGES}, "
            f"but got an array with length {len(history)} instead.",
        )
    for index, item in enumerate(history):
        param = f"session.input[{index}].content"
        if len(item["content"]) != 1:
            return "invalid_value", param, f"Each history message takes exactly one text part; message {index} has {len(item['content'])}."
        kind = item["content"][0].get("type")
        fits = {"assistant": ("output_text", "text", None)}.get(item["role"], ("input_text", None))
        if kind not in fits:
            return "invalid_value", f"{param}[0].type", f"Message {index} ({item['role']}) cannot hold a {kind} part."
    threshold = (session.get("wake_policy") or {}).get("vad_threshold")
    if threshold is not None and not 0.0 <= threshold <= 1.0:
        return (
            "decimal_out_of_range",
            "session.wake_policy.vad_threshold",
            f"Invalid 'session.wake_policy.vad_threshold': {threshold} is not from 0 to 1.",
        )
    if session.get("idle_timeout_s") is not None and session.get("wake_policy") is None:
        return (
            "invalid_value",
            "session.idle_timeout_s",
            "An idle timeout pauses a session that a wake policy can wake: set session.wake_policy too.",
        )
    return None


def live_snapshot(session: dict, session_id: str) -> dict:
    """The resolved session its events restate (`SessionResource`): the request's fields, the
    default voice, and the server's own (`id`, `expires_at`, `status`)."""
    snapshot = {
        "id": session_id,
        "expires_at": int(time.time()) + LIVE_SESSION_LIFETIME_S,
        "model": session["model"],
        "status": "active",
    }
    for key in LIVE_SNAPSHOT_FIELDS:
        if key in session:
            snapshot[key] = json.loads(json.dumps(session[key]))
    snapshot.setdefault("audio", {}).setdefault("output", {}).setdefault("voice", DEFAULT_VOICE)
    return snapshot


class LiveHeard:
    """What the user is saying: the unmuted frames since their speech began."""

    def __init__(self, now: float, from_timeline_ms: int) -> None:
        self.frames: list[tuple[float, int]] = []  # (sum of squares, peak) per 20 ms
        self.from_timeline_ms = from_timeline_ms
        self.last_speech = now
        self.speech_ms = 0


class LiveSpeaking:
    """The reply being spoken: its frames as the output track takes them, its words spread
    over them (each with the frame it is said at)."""

    def __init__(self, frames: list[bytes], text: str, reply: dict) -> None:
        self.frames = frames
        self.index = 0
        pieces = transcript_deltas(text)
        step = len(frames) // max(1, len(pieces))
        self.words = [(index * step, piece) for index, piece in enumerate(pieces)]
        self.reply = reply


class LiveCall(RtcCall):
    """One Live API call, as the local provider's LiveProviderSession runs one: the session
    starts (`session.started`) when the data channel opens and reports its usage each second;
    the input starts unmuted, and muted input is not heard (the model hears silence); the model
    owns turn-taking: a user's turn ends after END_OF_TURN_SILENCE_MS without speech and is
    answered, with the user's words and the reply's as transcript deltas (no done events) and
    the reply's audio on the track; speech over a reply stops it (full duplex). A session with
    a wake policy waits for speech (paused until then) and pauses after its idle timeout. With
    a Responses delegation whose function tools the session's instructions name ("use <tool>"),
    each turn is delegated instead: `session.delegation.created` and the backend's function
    calls (`response.event`); once the client gave every output (`response.item.create`) and
    asked to go on (`response.create`), the reply says what the tool answered."""

    TRACE_FILE = "live-client-events.jsonl"
    INVALID_EVENT = "invalid_client_event"

    def __init__(self, server: "PeerServer", call_id: str, session: dict, snapshot: dict) -> None:
        super().__init__(server, call_id, "live")
        self.session = snapshot
        self.loop = asyncio.get_running_loop()
        self.started = self.loop.time()
        self.muted = False
        self.ending = False  # session.close: nothing more is taken or sent but the close
        wake_policy = session.get("wake_policy")
        threshold = (wake_policy or {}).get("vad_threshold")
        self.speech_rms = vad_threshold_rms(LIVE_DEFAULT_VAD_THRESHOLD if threshold is None else threshold)
        # A session with a wake policy waits for the first speech, paused until then.
        self.wake: dict | None = None
        if wake_policy is not None:
            idle = session.get("idle_timeout_s")
            self.wake = {"idle_timeout_s": idle, "awake": False, "last_speech": self.started}
        self.paused_s = 0.0
        self.paused_since: float | None = self.started if self.wake else None
        self.next_usage: float | None = None
        self.heard: LiveHeard | None = None
        self.speaking: LiveSpeaking | None = None
        delegation = session.get("delegation") or {}
        self.delegated_tools = (delegation.get("responses") or {}).get("tools") or [] if delegation.get("type") == "responses" else []
        self.delegated: dict | None = None
        self.poke = asyncio.Event()
        # Stats.
        self.client_event_types: list[str] = []
        self.turns: list[dict] = []
        self.replies: list[dict] = []

    # -- sending -------------------------------------------------------------------------------

    def emit(self, event: dict, client_event_id: str | None = None) -> None:
        event = {"type": event["type"], "event_id": self.new_id("event"), **event}
        if client_event_id is not None:
            event["client_event_id"] = client_event_id
        text = build_event(event, LIVE_SERVER_EVENT_MODELS)
        channel = self.channel
        if channel is None or channel.readyState != "open":
            log.info("%s: %s not sent: the data channel is not open", self.call_id, event["type"])
            return
        try:
            channel.send(text)
        except ValueError as too_large:
            log.warning("%s: %s not sent: %s", self.call_id, event["type"], too_large)

    def error(self, code: str, message: str, client_event_id: str | None = None, param: str | None = None,
              kind: str = "invalid_request_error") -> None:
        error = {"type": kind, "code": code, "message": message}
        if param is not None:
            error["param"] = param
        if client_event_id is not None:
            error["client_event_id"] = client_event_id
        self.emit({"type": "error", "error": error}, client_event_id)

    # -- the session's clock -------------------------------------------------------------------

    def timeline_ms(self, at: float | None = None) -> int:
        """Where `at` (the loop's clock; now by default) is on the session's timeline."""
        return max(0, int(round(((self.loop.time() if at is None else at) - self.started) * 1000)))

    def usage(self, now: float) -> dict:
        """The billable time so far in whole seconds: paused while inference waits for speech,
        active the rest, the two adding up to the total."""
        total_ms = int((now - self.started) * 1000)
        paused = self.paused_s + (now - self.paused_since if self.paused_since is not None else 0.0)
        seconds = total_ms // 1000
        paused_seconds = min(int(paused * 1000) // 1000, seconds)
        return {"seconds": float(seconds), "active_seconds": seconds - paused_seconds, "paused_seconds": paused_seconds}

    def next_deadline(self) -> float | None:
        """When `tick` has work: the next usage report, the idle timeout, the turn's end."""
        if self.closed or self.ending:
            return None
        due = [self.next_usage]
        wake = self.wake
        if wake and wake["awake"] and wake["idle_timeout_s"] is not None:
            due.append(wake["last_speech"] + wake["idle_timeout_s"])
        if self.heard is not None:
            due.append(self.heard.last_speech + END_OF_TURN_SILENCE_MS / 1000)
        due = [d for d in due if d is not None]
        return min(due) if due else None

    async def run_clock(self) -> None:
        """Runs `tick` at each deadline, and again whenever the deadlines may have moved."""
        while not self.closed and not self.ending:
            deadline = self.next_deadline()
            timeout = None if deadline is None else max(0.0, deadline - self.loop.time())
            try:
                await asyncio.wait_for(self.poke.wait(), timeout)
            except asyncio.TimeoutError:
                pass
            self.poke.clear()
            self.safe(lambda: self.tick(self.loop.time()))

    def tick(self, now: float) -> None:
        if self.closed or self.ending:
            return
        wake = self.wake
        if wake and wake["awake"] and wake["idle_timeout_s"] is not None and now >= wake["last_speech"] + wake["idle_timeout_s"]:
            wake["awake"] = False
            self.paused_since = now
            self.emit({"type": "session.paused"})
        heard = self.heard
        if heard is not None and now >= heard.last_speech + END_OF_TURN_SILENCE_MS / 1000:
            self.heard = None
            self.turn_over(heard, now)
        if self.next_usage is not None and now >= self.next_usage:
            self.next_usage = now + LIVE_USAGE_EVERY_S
            self.emit({"type": "session.usage.updated", "usage": self.usage(now)})

    # -- the connection ------------------------------------------------------------------------

    def on_connect(self) -> None:
        """The session has started, and reports its usage from now on."""
        self.next_usage = self.loop.time() + LIVE_USAGE_EVERY_S
        self.safe(lambda: self.emit({"type": "session.started", "session": self.session}))
        self.spawn(self.run_clock())

    def on_closed(self) -> None:
        self.poke.set()
        if self.speaking is not None:
            self.stop_speaking()

    # -- the client's audio --------------------------------------------------------------------

    def on_audio(self, chunk: bytes) -> None:
        """Muted, the model hears silence: nothing of it is taken. Unmuted speech wakes a paused
        session, stops a reply under way (the model yields to the user) and begins or continues
        the user's turn."""
        if self.closed or self.ending or self.muted:
            return
        now = self.loop.time()
        sumsq, peak = measure(chunk)
        speech = math.sqrt(sumsq / FRAME_SAMPLES) >= self.speech_rms
        if speech:
            wake = self.wake
            if wake is not None:
                wake["last_speech"] = now
                if not wake["awake"]:
                    wake["awake"] = True
                    if self.paused_since is not None:
                        self.paused_s += now - self.paused_since
                        self.paused_since = None
                    self.emit({"type": "session.resumed"})
                    self.poke.set()
            # Full duplex: the model stops talking when the user talks over it.
            self.stop_speaking()
        heard = self.heard
        if heard is not None:
            if speech:
                heard.last_speech = now
                heard.speech_ms += FRAME_MS
            heard.frames.append((sumsq, peak))
        elif speech:
            heard = self.heard = LiveHeard(now, self.timeline_ms(now))
            heard.speech_ms = FRAME_MS
            heard.frames.append((sumsq, peak))
            self.poke.set()

    def turn_over(self, heard: LiveHeard, now: float) -> None:
        """The model's turn-taking decided the user is done: their words, then the reply."""
        if heard.speech_ms < MIN_TURN_SPEECH_MS:
            return
        threshold = rms_for_dbfs(SPEECH_DBFS)
        voiced_at = [i for i, (sumsq, _) in enumerate(heard.frames) if math.sqrt(sumsq / FRAME_SAMPLES) >= threshold]
        voiced_sumsq = sum(heard.frames[i][0] for i in voiced_at)
        voiced_rms = math.sqrt(voiced_sumsq / (len(voiced_at) * FRAME_SAMPLES)) if voiced_at else 0.0
        self.turns.append({
            "item_id": None,  # the Live API has no conversation items
            "voiced_ms": len(voiced_at) * FRAME_MS,
            "rms_dbfs": dbfs(voiced_rms),
            "peak_dbfs": dbfs(float(max((peak for _, peak in heard.frames), default=0))),
        })
        if voiced_at:
            span_s = (voiced_at[-1] + 1 - voiced_at[0]) * FRAME_MS / 1000
            said = f"I heard {span_s:.1f} s of speech."
        else:
            span_s = 0.0
            said = f"I heard {len(heard.frames) * FRAME_MS / 1000:.1f} s of silence."
        to_ms = self.timeline_ms(now)
        for delta in transcript_deltas(said):
            self.emit({"type": "session.input_transcript.delta", "delta": delta, "start_ms": heard.from_timeline_ms, "end_ms": to_ms})
        asked = tool_request(self.session.get("instructions") or "", self.delegated_tools)
        if asked is not None:
            return self.delegate(*asked, now)
        self.speak(f"You said something for {span_s:.1f} seconds; this peer runs on aiortc.")

    # -- the reply -----------------------------------------------------------------------------

    def speak(self, text: str) -> None:
        """Speaks `text` from the output track's next frame: the reply audio, the words spread
        over it."""
        self.stop_speaking()
        reply = {"response_id": None, "status": "in_progress", "sent_frames": 0, "sumsq": 0.0}
        self.replies.append(reply)
        self.speaking = LiveSpeaking(reply_frames(), text, reply)

    def stop_speaking(self) -> None:
        speaking = self.speaking
        if speaking is not None:
            self.speaking = None
            speaking.reply["status"] = "cancelled"

    def next_output_frame(self) -> bytes | None:
        speaking = self.speaking
        if speaking is None or self.closed or self.ending:
            return None
        while speaking.words and speaking.words[0][0] <= speaking.index:
            _, delta = speaking.words.pop(0)
            at = self.timeline_ms()
            self.safe(lambda: self.emit({"type": "session.output_transcript.delta", "delta": delta, "start_ms": at, "end_ms": at}))
        frame = speaking.frames[speaking.index]
        speaking.index += 1
        speaking.reply["sent_frames"] += 1
        speaking.reply["sumsq"] += measure(frame)[0]
        if speaking.index >= len(speaking.frames):
            self.speaking = None
            speaking.reply["status"] = "completed"
            if self.wake is not None:
                # Speaking is activity too: the idle timeout counts from the reply's end.
                self.wake["last_speech"] = self.loop.time()
                self.poke.set()
        return frame

    # -- delegation ----------------------------------------------------------------------------

    def delegate(self, name: str, count: int, arguments: str, now: float) -> None:
        """The Responses backend a task is delegated to calls the tool, `count` times."""
        delegation_id = self.new_id("del")
        self.emit({
            "type": "session.delegation.created",
            "delegation": {"type": "delegation", "id": delegation_id, "target": "responses", "response_id": self.new_id("resp")},
            "offset_ms": self.timeline_ms(now),
        })
        calls = []
        for index in range(count):
            call_id = self.new_id("call")
            item = {"type": "function_call", "id": self.new_id("fc"), "call_id": call_id, "name": name,
                    "arguments": arguments, "status": "completed"}
            self.emit({
                "type": "response.event",
                "event": {"type": "response.output_item.done", "output_index": index, "sequence_number": index + 1, "item": item},
                "delegation_id": delegation_id,
            })
            calls.append([call_id, name, None])
        self.delegated = {"calls": calls}

    # -- client events -------------------------------------------------------------------------

    def on_message(self, message: str | bytes) -> None:
        if self.closed or self.ending:
            return
        super().on_message(message)

    def on_text(self, text: str) -> None:
        parsed = self.parse_event(text)
        if parsed is None:
            return
        event, event_id, event_type = parsed
        model = LIVE_CLIENT_EVENT_MODELS.get(event_type)
        if model is None:
            return self.error("invalid_client_event", f"Unknown client event type '{event_type}': not a Live API client event.", event_id, "type")
        if event_type not in LIVE_HANDLED_CLIENT_EVENTS:
            return self.error(
                "invalid_client_event",
                f"'{event_type}' is not taken on a WebRTC data channel of this peer (client or Responses delegation).",
                event_id,
                "type",
            )
        if event_type == "session.update":
            # The fixed fields first, as the local provider refuses them (the SDK's update has
            # no such fields: its own refusal would only say "unknown parameter").
            update = event.get("session")
            for fixed in LIVE_FIXED_FIELDS:
                if isinstance(update, dict) and fixed in update:
                    return self.error(
                        "immutable_field",
                        f"'session.{fixed}' cannot change once the session has started: the model, the instructions, "
                        "the audio and the input are fixed at start.",
                        event_id,
                        f"session.{fixed}",
                    )
        try:
            model.model_validate(event)
        except pydantic.ValidationError as error:
            param, message = first_problem(error)
            code = "unknown_parameter" if "unknown parameter" in message else "invalid_value"
            return self.error(code, message, event_id, param)
        at_ms = self.timeline_ms()
        if event_type == "session.update":
            self.update_session(event["session"], event_id)
        elif event_type == "session.input_audio.mute":
            self.muted = True
            self.emit({"type": "session.input_audio.muted"}, event_id)
        elif event_type == "session.input_audio.unmute":
            self.muted = False
            self.emit({"type": "session.input_audio.unmuted"}, event_id)
        elif event_type.endswith(".append"):
            appended = event_type[: -len(".append")] + ".appended"
            self.emit({"type": appended, "start_ms": at_ms, "end_ms": at_ms}, event_id)
        elif event_type == "response.item.create":
            self.delegated_output(event["item"])
        elif event_type == "response.create":
            self.delegated_reply()
        elif event_type == "session.close":
            self.close_session(event_id)

    def update_session(self, update: dict, event_id: str | None) -> None:
        """The delegation's settings change (not its type; omitted settings keep their values);
        the triggers are replaced when given."""
        if "delegation" in update:
            current = self.session.get("delegation") or {"type": "client"}
            asked = update["delegation"] or {"type": "client"}
            if asked.get("type") != current.get("type"):
                return self.error(
                    "immutable_field",
                    f"The delegation type cannot change: the session delegates to '{current.get('type')}', not '{asked.get('type')}'.",
                    event_id,
                    "session.delegation.type",
                )
            merged = json.loads(json.dumps(current))
            for key, value in asked.items():
                if key in ("responses", "decisions") and isinstance(value, dict) and isinstance(merged.get(key), dict):
                    merged[key].update(value)
                elif value is not None:
                    merged[key] = value
            self.session["delegation"] = merged
        if update.get("triggers") is not None:
            self.session["triggers"] = update["triggers"]
        self.emit({"type": "session.updated", "session": self.session}, event_id)

    def delegated_output(self, item: dict) -> None:
        delegated = self.delegated
        if delegated is None or item.get("type") != "function_call_output":
            return
        output = item.get("output")
        text = output if isinstance(output, str) else json.dumps(output)
        for call in delegated["calls"]:
            if call[0] == item.get("call_id"):
                call[2] = text

    def delegated_reply(self) -> None:
        """Once every call is answered, the reply says what the last one gave."""
        delegated = self.delegated
        if delegated is None or any(output is None for _, _, output in delegated["calls"]):
            return
        self.delegated = None
        _, name, output = delegated["calls"][-1]
        self.speak(f"The {name} tool answered: {output[:200]}")

    def close_session(self, event_id: str | None) -> None:
        """`session.closed` with its reason and usage, then the call ends: the data channel is
        closed after it (a stream reset comes after the data), and the connection once the
        client has seen it close."""
        now = self.loop.time()
        self.stop_speaking()
        self.emit({"type": "session.closed", "reason": "close_requested", "session": self.session, "usage": self.usage(now)}, event_id)
        self.ending = True
        self.poke.set()
        self.server.active.discard(self.call_id)
        self.spawn(self.end_after_close())

    async def end_after_close(self) -> None:
        channel = self.channel
        if channel is not None and channel.readyState == "open":
            closed = self.loop.create_future()
            channel.once("close", lambda: closed.done() or closed.set_result(None))
            channel.close()
            try:
                await asyncio.wait_for(closed, 2.0)
            except asyncio.TimeoutError:
                log.warning("%s: the data channel did not close within 2 s of session.closed", self.call_id)
        await self.close()
        log.info("%s: closed by session.close", self.call_id)

    # -- stats ---------------------------------------------------------------------------------

    def stats(self) -> dict:
        return {
            "call_id": self.call_id,
            "form": self.form,
            "hung_up": self.hung_up,
            "closed": self.closed,
            "muted": self.muted,
            "client_event_types": list(self.client_event_types),
            "turns": [dict(t) for t in self.turns],
            "replies": [
                {
                    "response_id": r["response_id"],
                    "status": r["status"],
                    "sent_audio_ms": r["sent_frames"] * FRAME_MS,
                    "sent_rms_dbfs": dbfs(math.sqrt(r["sumsq"] / (r["sent_frames"] * FRAME_SAMPLES)))
                    if r["sent_frames"]
                    else None,
                }
                for r in self.replies
            ],
        }


# ---------------------------------------------------------------------------------------------
# HTTP


class Trace:
    def __init__(self, directory: str) -> None:
        os.makedirs(directory, exist_ok=True)
        self.directory = directory

    def append(self, name: str, record: dict) -> None:
        line = (json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n").encode()
        path = os.path.join(self.directory, name)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line)  # one write: O_APPEND keeps the line whole among writers
            finally:
                os.close(fd)
        except OSError as error:
            log.warning("the trace %s could not be appended to: %s", path, error)


def form_of(content_type: str | None) -> str:
    essence = (content_type or "").split(";")[0].strip().lower()
    return {"multipart/form-data": "multipart", "application/sdp": "sdp", "application/json": "json"}.get(essence, "other")


def api_error(status: int, code: str, message: str, param: str | None = None, kind: str = "invalid_request_error") -> web.Response:
    body = {"error": {"message": message, "type": kind, "code": code, "param": param}}
    return web.json_response(body, status=status)


class PeerServer:
    def __init__(self, token: str, refuse_multipart: bool, trace: Trace | None) -> None:
        self.token = token
        self.refuse_multipart = refuse_multipart
        self.trace = trace
        self.calls: dict[str, Call] = {}
        self.active: set[str] = set()

    def app(self) -> web.Application:
        # Bodies are read whole up to 4 MiB; the Live API's own limit (1 MiB) is answered as its
        # error, not aiohttp's.
        app = web.Application(middlewares=[self.record], client_max_size=4 * MAX_LIVE_BODY_BYTES)
        app.router.add_post("/v1/realtime/calls", self.create_call)
        app.router.add_post("/v1/realtime/calls/{call_id}/hangup", self.hangup)
        app.router.add_post("/v1/live/sessions", self.create_live_session)
        app.router.add_post("/v1/live/sessions/{call_id}/hangup", self.hangup)
        app.router.add_get("/stats", self.stats)
        return app

    @web.middleware
    async def record(self, request: web.Request, handler) -> web.StreamResponse:
        note: dict = {"parts": [], "session": None, "live_session": None, "call_id": None}
        request["note"] = note
        try:
            response = await handler(request)
        except web.HTTPException as refused:
            response = refused
        if self.trace and request.path != "/stats":
            auth = request.headers.get("Authorization", "")
            line = {
                "method": request.method,
                "path": request.path,
                "query": request.query_string or None,
                "content_type": request.headers.get("Content-Type"),
                "form": form_of(request.headers.get("Content-Type")),
                "parts": note["parts"],
                "auth": "bearer" if auth[:7].lower() == "bearer " else "none",
                "session": note["session"],
                "status": response.status,
                "call_id": note["call_id"],
            }
            if note["live_session"] is not None:
                # The whole JSON body of a Live API call, as the local provider writes it.
                line["live_session"] = note["live_session"]
            self.trace.append("calls.jsonl", line)
        return response

    def authorized(self, request: web.Request) -> bool:
        scheme, _, credential = request.headers.get("Authorization", "").partition(" ")
        return scheme.lower() == "bearer" and secrets.compare_digest(credential.strip().encode(), self.token.encode())

    async def create_call(self, request: web.Request) -> web.Response:
        note = request["note"]
        form = form_of(request.content_type)
        offer = None
        session_text = None
        problem: web.Response | None = None
        # The body is read first, so the trace shows what came whatever the answer.
        if form == "multipart":
            try:
                reader = await request.multipart()
                async for part in reader:
                    name = part.name or ""
                    note["parts"].append(name)
                    text = await part.text()
                    if name == "sdp":
                        offer = text
                    elif name == "session":
                        session_text = text
                        try:
                            note["session"] = json.loads(text)
                        except json.JSONDecodeError:
                            note["session"] = text  # kept as text: the trace shows what came
            except Exception as broken:  # a malformed body
                problem = api_error(400, "invalid_multipart", f"The multipart body is unreadable: {broken}")
        elif form == "sdp":
            offer = await request.text()
        if not self.authorized(request):
            return api_error(401, "invalid_api_key", "Incorrect API key provided for the aiortc peer.")
        if form == "multipart" and self.refuse_multipart:
            return api_error(415, "unsupported_content_type", "This server accepts only application/sdp: the raw SDP offer as the body.")
        if form not in ("multipart", "sdp"):
            accepted = "application/sdp" if self.refuse_multipart else "multipart/form-data (parts `sdp` and `session`) or application/sdp"
            return api_error(415, "unsupported_content_type", f"The calls endpoint takes {accepted}.")
        if problem is not None:
            return problem
        session = default_session()
        if form == "multipart":
            if session_text is not None:
                try:
                    given = json.loads(session_text)
                except json.JSONDecodeError as broken:
                    return api_error(400, "invalid_json", f"The `session` part is not valid JSON: {broken}", "session")
                refused = session_problem(given, "session")
                if refused:
                    return api_error(400, refused[0], refused[2], refused[1])
                if given.get("type") != "realtime":
                    return api_error(400, "invalid_value", "This peer runs realtime sessions only.", "session.type")
                model = given.get("model")
                merge_session(session, given)
                if model is not None:
                    session["model"] = model
            if offer is None:
                return api_error(400, "missing_required_parameter", "Missing required parameter: 'sdp'.", "sdp")
        if not offer or not offer.strip():
            return api_error(400, "invalid_offer", "The SDP offer is empty.")
        call_id = "rtc_" + secrets.token_hex(16)
        call = Call(self, call_id, form, session)
        try:
            answer = await call.answer(offer)
        except Exception as refused:
            log.warning("an offer was refused: %s", refused)
            await call.close()
            return api_error(400, "invalid_offer", f"The SDP offer could not be answered: {refused}")
        note["call_id"] = call_id
        self.calls[call_id] = call
        self.active.add(call_id)
        log.info("call %s (%s) answered", call_id, form)
        return web.Response(
            status=201,
            body=answer.encode(),
            headers={"Content-Type": "application/sdp", "Location": f"/v1/realtime/calls/{call_id}"},
        )

    async def create_live_session(self, request: web.Request) -> web.Response:
        """`POST /v1/live/sessions`: `{"session": …, "transport": {"type": "webrtc", "sdp": …}}`
        in (a `LiveCreateParams`, unknown keys refused, then the Live API's documented limits),
        `{"session": {"id"}, "transport": {"type": "webrtc", "sdp": <answer>}}` out, 201, in the
        local provider's order of refusals."""
        note = request["note"]
        body = await request.read()
        try:
            note["live_session"] = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError):
            pass
        if not self.authorized(request):
            return api_error(401, "invalid_api_key", "Incorrect API key provided for the aiortc peer.")
        if form_of(request.content_type) != "json":
            return api_error(
                415,
                "unsupported_content_type",
                'A Live session is created with a JSON body: {"session": …, "transport": {"type": "webrtc", "sdp": …}}.',
            )
        if len(body) > MAX_LIVE_BODY_BYTES:
            return api_error(413, "request_too_large", f"The body is {len(body)} bytes; at most {MAX_LIVE_BODY_BYTES} are read.")
        given = note["live_session"]
        if not isinstance(given, dict):
            return api_error(400, "invalid_request_body", "The body is not a Live session request: not a JSON object.")
        refused = live_body_problem(given)
        if refused is None:
            refused = live_session_problem(given["session"])
        if refused is not None:
            code, param, message = refused
            return api_error(400, code, message, param)
        call_id = "sess_" + secrets.token_hex(16)
        snapshot = live_snapshot(given["session"], call_id)
        try:
            LIVE_SESSION_MODEL.model_validate(snapshot)
        except pydantic.ValidationError as error:
            # A session the request's types take and the snapshot's don't: the peer's limit.
            param, message = first_problem(error, "session")
            return api_error(500, "server_error", f"The peer cannot restate this session: {message}", param, "server_error")
        call = LiveCall(self, call_id, given["session"], snapshot)
        try:
            answer = await call.answer(given["transport"]["sdp"])
        except Exception as refused_offer:
            log.warning("a Live offer was refused: %s", refused_offer)
            await call.close()
            return api_error(400, "invalid_offer", f"The SDP offer could not be answered: {refused_offer}", "transport.sdp")
        note["call_id"] = call_id
        self.calls[call_id] = call
        self.active.add(call_id)
        log.info("Live session %s answered", call_id)
        created = LIVE_CREATE_RESPONSE_MODEL.model_validate({"session": {"id": call_id}, "transport": {"type": "webrtc", "sdp": answer}})
        return web.json_response(created.model_dump(mode="json"), status=201)

    async def hangup(self, request: web.Request) -> web.Response:
        call_id = request.match_info["call_id"]
        request["note"]["call_id"] = call_id
        if not self.authorized(request):
            return api_error(401, "invalid_api_key", "Incorrect API key provided for the aiortc peer.")
        if call_id not in self.active:
            return api_error(404, "call_not_found", f"No active call with id {call_id}.")
        self.active.discard(call_id)
        call = self.calls[call_id]
        call.hung_up = True
        await call.close()
        log.info("call %s hung up", call_id)
        return web.Response(status=200)

    async def stats(self, request: web.Request) -> web.Response:
        return web.json_response({"calls": [call.stats() for call in self.calls.values()]})

    async def close_all(self) -> None:
        for call in list(self.calls.values()):
            try:
                await call.close()
            except Exception:
                log.exception("closing %s failed", call.call_id)


def use_host_candidates_on(host: str) -> None:
    """ICE host candidates on the address the server listens on: aioice leaves out 127.0.0.1,
    and a loopback client (Walkie binds 127.0.0.1 for a loopback server) must find this peer
    there. A wildcard listener keeps aioice's own choice of interfaces."""
    if host in ("", "0.0.0.0", "::"):
        return
    aioice.ice.get_host_addresses = lambda use_ipv4, use_ipv6: [host]


async def serve(args: argparse.Namespace) -> None:
    use_host_candidates_on(args.host)
    reply_frames()  # made once, before any call waits for it
    server = PeerServer(args.token, args.refuse_multipart, Trace(args.trace) if args.trace else None)
    runner = web.AppRunner(server.app(), access_log=None)
    await runner.setup()
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    site = web.SockSite(runner, sock)
    await site.start()
    port = sock.getsockname()[1]
    host = f"[{args.host}]" if ":" in args.host else args.host
    print(f"listening http://{host}:{port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    log.info("stopping: closing %d call(s)", len(server.calls))
    await server.close_all()
    await runner.cleanup()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--token", required=True, help="the bearer token calls must present")
    parser.add_argument("--refuse-multipart", action="store_true", help="answer multipart/form-data calls 415")
    parser.add_argument("--trace", metavar="DIR", help="write calls.jsonl and (live-)client-events.jsonl here")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--verbose", action="store_true", help="log aiortc's and aioice's own messages too")
    args = parser.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if not args.verbose:
        for noisy in ("aiortc", "aioice", "aiohttp.access"):
            logging.getLogger(noisy).setLevel(logging.WARNING)
    asyncio.run(serve(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())

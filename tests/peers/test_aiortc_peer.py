"""Self-test of the aiortc peer (aiortc_peer.py), with aiortc as the client.

The peer runs as a subprocess, as a test harness runs it; the client here speaks generated
speech-like audio as Opus in real time, on a data channel `oai-events` it creates itself, and
checks what comes back: the events (in order, and each valid for the SDK's model, unknown fields
refused), the reply audio it decodes, the peer's /stats and its trace files. Every wait is on an
event or a future, bounded by a timeout; nothing sleeps to synchronise.

    cd tests/peers && ../../target/python-venv/bin/python -m unittest test_aiortc_peer -v
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import aiohttp
import av
import pydantic
from aiortc import RTCConfiguration, RTCPeerConnection, RTCSessionDescription
from aiortc.mediastreams import MediaStreamError, MediaStreamTrack

import aiortc_peer as peer

HERE = os.path.dirname(os.path.abspath(__file__))
TOKEN = "test-token-" + os.urandom(4).hex()
STEP = 10.0  # the longest any single awaited thing may take, in seconds
SPEECH_DBFS = -20.0
peer.use_host_candidates_on("127.0.0.1")
# The peers' logs (their stderr); removed after a run without failures, kept and named otherwise.
LOG_DIR = tempfile.mkdtemp(prefix="aiortc-peer-logs-")
FAILED = False


def tearDownModule() -> None:
    if FAILED:
        print(f"\nthe peers' logs are kept in {LOG_DIR}", file=sys.stderr)
    else:
        shutil.rmtree(LOG_DIR, ignore_errors=True)


def start_peer(*extra: str, trace: str | None = None) -> tuple[subprocess.Popen, str, str]:
    """The peer as a subprocess: (process, base URL, path of its stderr log)."""
    log_path = tempfile.mktemp(prefix="peer-", suffix=".log", dir=LOG_DIR)
    args = [sys.executable, os.path.join(HERE, "aiortc_peer.py"), "--token", TOKEN, *extra]
    if trace:
        args += ["--trace", trace]
    log_file = open(log_path, "wb")
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log_file)
    log_file.close()
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    if not selector.select(timeout=30):
        process.kill()
        raise RuntimeError(f"the peer did not say it listens within 30 s; its log: {log_path}")
    line = process.stdout.readline().decode().strip()
    match = re.fullmatch(r"listening (http://127\.0\.0\.1:\d+)", line)
    if not match:
        process.kill()
        raise RuntimeError(f"the peer's first line is {line!r}; its log: {log_path}")
    return process, match.group(1), log_path


def stop_peer(process: subprocess.Popen) -> int:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    process.stdout.close()
    return process.returncode


def rms_dbfs_of(frames: list[bytes]) -> float | None:
    if not frames:
        return None
    total = sum(peer.measure(frame)[0] for frame in frames)
    return peer.dbfs(math.sqrt(total / (len(frames) * peer.FRAME_SAMPLES)))


class MicTrack(MediaStreamTrack):
    """The client's microphone: 20 ms frames of 48 kHz mono s16 in real time, silence unless
    `say` queued speech."""

    kind = "audio"

    def __init__(self) -> None:
        super().__init__()
        self.queue: list[tuple[bytes, asyncio.Future | None]] = []
        self._start: float | None = None
        self._timestamp = 0

    def say(self, frames: list[bytes], tail_frames: int = 0) -> asyncio.Future:
        """Queues `frames` then `tail_frames` of silence; the future resolves when the last of
        them has been handed to the encoder."""
        done = asyncio.get_running_loop().create_future()
        queued = frames + [peer.SILENCE] * tail_frames
        for index, frame in enumerate(queued):
            self.queue.append((frame, done if index == len(queued) - 1 else None))
        return done

    async def recv(self) -> av.AudioFrame:
        if self.readyState != "live":
            raise MediaStreamError
        if self._start is None:
            self._start = time.time()
        else:
            self._timestamp += peer.FRAME_SAMPLES
            wait = self._start + self._timestamp / peer.SAMPLE_RATE - time.time()
            if wait > 0:
                await asyncio.sleep(wait)
        pcm, done = self.queue.pop(0) if self.queue else (peer.SILENCE, None)
        frame = peer.audio_frame(pcm, self._timestamp)
        if done is not None and not done.done():
            done.set_result(None)
        return frame


class Client:
    """An aiortc client of the peer: one audio track each way, the `oai-events` channel."""

    def __init__(self, test: unittest.TestCase, base: str) -> None:
        self.test = test
        self.base = base
        self.pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
        self.mic = MicTrack()
        self.pc.addTrack(self.mic)
        self.channel = self.pc.createDataChannel("oai-events")
        self.events: list[dict] = []
        self.arrivals: list[float] = []  # when each event came (monotonic)
        self.cursor = 0
        self.changed = asyncio.Event()
        self.opened = asyncio.get_running_loop().create_future()
        self.channel_closed = asyncio.get_running_loop().create_future()
        self.received: list[tuple[float, float | None]] = []  # (arrival, dBFS) per 20 ms
        self.received_frames: list[bytes] = []
        self.audio_changed = asyncio.Event()
        self.call_id: str | None = None
        self.tasks: list[asyncio.Task] = []

        @self.channel.on("open")
        def on_open() -> None:
            if not self.opened.done():
                self.opened.set_result(None)

        @self.channel.on("close")
        def on_close() -> None:
            if not self.channel_closed.done():
                self.channel_closed.set_result(None)

        @self.channel.on("message")
        def on_message(message) -> None:
            self.events.append(json.loads(message))
            self.arrivals.append(time.monotonic())
            self.changed.set()

        @self.pc.on("track")
        def on_track(track) -> None:
            self.tasks.append(asyncio.ensure_future(self.listen(track)))

    async def listen(self, track) -> None:
        resampler = av.AudioResampler(format="s16", layout="mono", rate=peer.SAMPLE_RATE)
        carry = b""
        while True:
            try:
                frame = await track.recv()
            except MediaStreamError:
                return
            for mono in resampler.resample(frame):
                carry += bytes(mono.planes[0])[: mono.samples * 2]
            while len(carry) >= peer.FRAME_BYTES:
                chunk, carry = carry[: peer.FRAME_BYTES], carry[peer.FRAME_BYTES :]
                self.received_frames.append(chunk)
                self.received.append((time.monotonic(), peer.dbfs(math.sqrt(peer.measure(chunk)[0] / peer.FRAME_SAMPLES))))
                self.audio_changed.set()

    async def until_audio(self, done, what: str, timeout: float = STEP) -> None:
        """Waits until `done(received)` holds for the (arrival, dBFS) list of what came."""
        deadline = time.monotonic() + timeout
        while not done(self.received):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"{what}: not within {timeout} s")
            self.audio_changed.clear()
            try:
                await asyncio.wait_for(self.audio_changed.wait(), remaining)
            except asyncio.TimeoutError:
                pass

    async def offer(self) -> str:
        await self.pc.setLocalDescription(await self.pc.createOffer())
        return self.pc.localDescription.sdp

    async def call(self, http: aiohttp.ClientSession, session: dict | None = None, form: str = "multipart",
                   token: str = TOKEN) -> aiohttp.ClientResponse:
        """POSTs the offer; on 201 applies the answer."""
        sdp = await self.offer()
        headers = {"Authorization": f"Bearer {token}"}
        if form == "multipart":
            body = aiohttp.FormData()
            body.add_field("sdp", sdp, content_type="application/sdp")
            body.add_field("session", json.dumps(session), content_type="application/json")
            response = await http.post(f"{self.base}/v1/realtime/calls", data=body, headers=headers)
        else:
            headers["Content-Type"] = "application/sdp"
            response = await http.post(f"{self.base}/v1/realtime/calls", data=sdp.encode(), headers=headers)
        await response.read()
        if response.status == 201:
            location = response.headers.get("Location", "")
            self.test.assertRegex(location, r"^/v1/realtime/calls/rtc_[0-9a-f]{32}$")
            self.call_id = location.rsplit("/", 1)[1]
            await self.pc.setRemoteDescription(RTCSessionDescription(sdp=await response.text(), type="answer"))
            await asyncio.wait_for(asyncio.shield(self.opened), STEP)
        return response

    async def live_call(self, http: aiohttp.ClientSession, session: dict, token: str = TOKEN) -> tuple[aiohttp.ClientResponse, dict]:
        """Places a Live API call (the JSON body); on 201 applies the answer. Returns the
        response and the body that was sent."""
        body = {"session": session, "transport": {"type": "webrtc", "sdp": await self.offer()}}
        response = await http.post(f"{self.base}/v1/live/sessions", json=body, headers={"Authorization": f"Bearer {token}"})
        await response.read()
        if response.status == 201:
            self.test.assertEqual(response.content_type, "application/json")
            created = peer.LIVE_CREATE_RESPONSE_MODEL.model_validate(await response.json())
            self.test.assertRegex(created.session.id, r"^sess_[0-9a-f]{32}$")
            self.call_id = created.session.id
            await self.pc.setRemoteDescription(RTCSessionDescription(sdp=created.transport.sdp, type="answer"))
            await asyncio.wait_for(asyncio.shield(self.opened), STEP)
        return response, body

    def send(self, event: dict | str) -> None:
        self.channel.send(event if isinstance(event, str) else json.dumps(event))

    async def next(self, wanted, timeout: float = STEP) -> dict:
        """The next event (from the cursor on) of type `wanted` (a type, or a predicate); the
        cursor moves past it."""
        match = (lambda e: e["type"] == wanted) if isinstance(wanted, str) else wanted
        deadline = time.monotonic() + timeout
        while True:
            for index in range(self.cursor, len(self.events)):
                if match(self.events[index]):
                    self.cursor = index + 1
                    return self.events[index]
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                seen = [e["type"] for e in self.events[self.cursor :]]
                raise AssertionError(f"no {wanted} within {timeout} s; since the cursor: {seen}")
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), remaining)
            except asyncio.TimeoutError:
                pass

    def since(self, start: int) -> list[dict]:
        return self.events[start:]

    async def close(self) -> None:
        await self.pc.close()
        for task in self.tasks:
            task.cancel()

    def check_events_against_sdk(self, models: dict[str, type] = peer.SERVER_EVENT_MODELS) -> None:
        """Every event received validates as its SDK model (of `models`: the Realtime API's by
        default; unknown fields refused); event ids are unique."""
        ids = [e.get("event_id") for e in self.events]
        self.test.assertEqual(len(ids), len(set(ids)), "event ids repeat")
        for event in self.events:
            model = models.get(event.get("type"))
            self.test.assertIsNotNone(model, f"no SDK model for {event.get('type')}")
            try:
                model.model_validate(event)
            except pydantic.ValidationError as error:
                self.test.fail(f"{event['type']} is not the SDK's shape: {error}")


def collapse(types: list[str]) -> list[str]:
    """Runs of the same type as one."""
    out: list[str] = []
    for t in types:
        if not out or out[-1] != t:
            out.append(t)
    return out


REPLY_ORDER = [
    "response.created",
    "response.output_item.added",
    "conversation.item.added",
    "response.content_part.added",
    "output_audio_buffer.started",
    "response.output_audio_transcript.delta",
    "response.output_audio.done",
    "response.output_audio_transcript.done",
    "response.content_part.done",
    "response.output_item.done",
    "conversation.item.done",
    "response.done",
]


class PeerTest(unittest.IsolatedAsyncioTestCase):
    @classmethod
    def setUpClass(cls) -> None:
        # Made here, not in the tests: making them takes a tenth of a second of the event loop.
        cls.speech_1s = peer.frames_of(peer.speech_like(1.0, SPEECH_DBFS, pitch_hz=120.0, seed=3))
        cls.speech_over = peer.frames_of(peer.speech_like(0.6, SPEECH_DBFS, pitch_hz=110.0, seed=7))
        cls.trace = tempfile.mkdtemp(prefix="aiortc-peer-trace-")
        cls.process, cls.base, cls.log = start_peer(trace=cls.trace)

    @classmethod
    def tearDownClass(cls) -> None:
        global FAILED
        code = stop_peer(cls.process)
        shutil.rmtree(cls.trace, ignore_errors=True)
        if code != 0:
            FAILED = True
            raise AssertionError(f"the peer exited with {code} on SIGTERM; its log: {cls.log}")

    def run(self, result=None):
        global FAILED
        before = (len(result.failures) + len(result.errors)) if result is not None else 0
        outcome = super().run(result)
        if result is not None and len(result.failures) + len(result.errors) > before:
            FAILED = True
        return outcome

    async def asyncSetUp(self) -> None:
        self.http = aiohttp.ClientSession()
        self.clients: list[Client] = []

    async def asyncTearDown(self) -> None:
        for client in self.clients:
            await client.close()
        await self.http.close()

    def client(self, base: str | None = None) -> Client:
        client = Client(self, base or self.base)
        self.clients.append(client)
        return client

    async def stats_of(self, call_id: str, base: str | None = None) -> dict:
        async with self.http.get(f"{base or self.base}/stats") as response:
            self.assertEqual(response.status, 200)
            calls = (await response.json())["calls"]
        (call,) = [c for c in calls if c["call_id"] == call_id]
        return call

    async def hangup(self, call_id: str, base: str | None = None, api: str = "realtime/calls") -> int:
        async with self.http.post(
            f"{base or self.base}/v1/{api}/{call_id}/hangup", headers={"Authorization": f"Bearer {TOKEN}"}
        ) as response:
            return response.status

    # -----------------------------------------------------------------------------------------

    async def test_1_multipart_push_to_talk_turn(self) -> None:
        session = {
            "type": "realtime",
            "model": "gpt-realtime-2",
            "instructions": "Be brief.",
            "audio": {
                "input": {"transcription": {"model": "whisper-1"}, "turn_detection": None},
                "output": {"voice": "cedar"},
            },
        }
        client = self.client()
        response = await client.call(self.http, session)
        self.assertEqual(response.status, 201)
        self.assertEqual(response.headers["Content-Type"], "application/sdp")
        created = await client.next("session.created")
        self.assertEqual(created["session"]["model"], "gpt-realtime-2")
        self.assertEqual(created["session"]["instructions"], "Be brief.")
        self.assertEqual(created["session"]["audio"]["output"]["voice"], "cedar")
        self.assertIsNone(created["session"]["audio"]["input"]["turn_detection"])
        self.assertEqual(created["session"]["audio"]["input"]["transcription"], {"model": "whisper-1"})

        speech = self.speech_1s
        sent_dbfs = rms_dbfs_of(speech)
        client.send({"type": "input_audio_buffer.clear", "event_id": "c1"})
        await client.next("input_audio_buffer.cleared")
        await asyncio.wait_for(client.mic.say(speech, tail_frames=10), STEP)
        heard_before_reply = len(client.received)
        start = client.cursor
        client.send({"type": "input_audio_buffer.commit", "event_id": "c2"})
        client.send({"type": "response.create", "event_id": "c3"})
        await client.next("output_audio_buffer.stopped")
        types = [e["type"] for e in client.since(start)]
        self.assertEqual(
            collapse(types),
            ["input_audio_buffer.committed", "conversation.item.added", "conversation.item.done", *REPLY_ORDER,
             "conversation.item.input_audio_transcription.delta",
             "conversation.item.input_audio_transcription.completed", "output_audio_buffer.stopped"],
        )
        events = client.since(start)
        committed = events[0]
        user_item = events[1]["item"]
        self.assertEqual(user_item["id"], committed["item_id"])
        self.assertEqual((user_item["role"], user_item["content"][0]["type"]), ("user", "input_audio"))
        self.assertIsNone(committed["previous_item_id"])
        deltas = "".join(e["delta"] for e in events if e["type"] == "response.output_audio_transcript.delta")
        (transcript_done,) = [e for e in events if e["type"] == "response.output_audio_transcript.done"]
        self.assertEqual(deltas, transcript_done["transcript"])
        said = re.fullmatch(r"You said something for (\d+\.\d) seconds; this peer runs on aiortc\.", deltas)
        self.assertIsNotNone(said, deltas)
        self.assertAlmostEqual(float(said.group(1)), 1.0, delta=0.2)
        (done,) = [e for e in events if e["type"] == "response.done"]
        self.assertEqual(done["response"]["status"], "completed")
        usage = done["response"]["usage"]
        self.assertGreater(usage["input_token_details"]["audio_tokens"], 0)
        self.assertGreater(usage["output_token_details"]["audio_tokens"], 0)
        self.assertEqual(usage["total_tokens"], usage["input_tokens"] + usage["output_tokens"])
        (heard,) = [e for e in events if e["type"] == "conversation.item.input_audio_transcription.completed"]
        self.assertEqual(heard["item_id"], committed["item_id"])
        self.assertEqual(heard["usage"]["type"], "duration")
        words = re.fullmatch(r"I heard (\d+\.\d) s of speech at (-\d+) dBFS\.", heard["transcript"])
        self.assertIsNotNone(words, heard["transcript"])
        self.assertAlmostEqual(float(words.group(1)), 1.0, delta=0.2)
        self.assertAlmostEqual(float(words.group(2)), sent_dbfs, delta=3)

        # The reply's audio, as the client decoded it: silence before it, ~1.5 s of speech.
        before = [level for _, level in client.received[:heard_before_reply]]
        self.assertTrue(all(level is None or level < -60 for level in before), f"not silent before the reply: {before[-20:]}")
        reply = client.received_frames[heard_before_reply:]
        voiced = [f for f in reply if (peer.dbfs(math.sqrt(peer.measure(f)[0] / peer.FRAME_SAMPLES)) or -99) > -45]
        self.assertAlmostEqual(len(voiced) * peer.FRAME_MS, 1500, delta=200)
        self.assertGreater(rms_dbfs_of(voiced), -35)

        stats = await self.stats_of(client.call_id)
        self.assertEqual(stats["form"], "multipart")
        self.assertEqual(stats["client_event_types"], ["input_audio_buffer.clear", "input_audio_buffer.commit", "response.create"])
        (turn,) = stats["turns"]
        self.assertEqual(turn["item_id"], committed["item_id"])
        self.assertAlmostEqual(turn["voiced_ms"], 1000, delta=120)
        self.assertAlmostEqual(turn["rms_dbfs"], sent_dbfs, delta=2.0)
        self.assertGreater(turn["peak_dbfs"], turn["rms_dbfs"])
        self.assertLessEqual(turn["peak_dbfs"], 0.0)
        (sent,) = stats["replies"]
        self.assertEqual((sent["response_id"], sent["status"]), (done["response"]["id"], "completed"))
        self.assertEqual(sent["sent_audio_ms"], 1500)
        self.assertAlmostEqual(sent["sent_rms_dbfs"], peer.REPLY_DBFS, delta=0.5)
        client.check_events_against_sdk()

        self.assertEqual(await self.hangup(client.call_id), 200)
        await asyncio.wait_for(asyncio.shield(client.channel_closed), STEP)
        stats = await self.stats_of(client.call_id)
        self.assertTrue(stats["hung_up"])
        self.assertTrue(stats["closed"])
        self.assertEqual(await self.hangup(client.call_id), 404)

        # The trace: the request line (no key in it) and the client's texts as sent.
        with open(os.path.join(self.trace, "calls.jsonl")) as lines:
            records = [json.loads(line) for line in lines]
        (record,) = [r for r in records if r["call_id"] == client.call_id and r["path"] == "/v1/realtime/calls"]
        self.assertEqual(
            {k: record[k] for k in ("method", "form", "parts", "auth", "session", "status", "query")},
            {"method": "POST", "form": "multipart", "parts": ["sdp", "session"], "auth": "bearer", "session": session,
             "status": 201, "query": None},
        )
        with open(os.path.join(self.trace, "calls.jsonl")) as written:
            self.assertNotIn(TOKEN, written.read())
        with open(os.path.join(self.trace, "client-events.jsonl")) as lines:
            texts = [json.loads(line) for line in lines]
        mine = [t["text"] for t in texts if t["call_id"] == client.call_id]
        self.assertEqual([json.loads(t)["event_id"] for t in mine], ["c1", "c2", "c3"])
        self.assertTrue(all(isinstance(t["received_at_unix_ms"], int) for t in texts))

    async def test_2_refuse_multipart_and_server_defaults(self) -> None:
        trace = tempfile.mkdtemp(prefix="aiortc-peer-trace-")
        self.addCleanup(shutil.rmtree, trace, True)
        process, base, log = await asyncio.to_thread(start_peer, "--refuse-multipart", trace=trace)
        try:
            refused = self.client(base)
            response = await refused.call(self.http, {"type": "realtime"})
            self.assertEqual(response.status, 415)
            error = (await response.json())["error"]
            self.assertEqual(set(error), {"message", "type", "code", "param"})
            self.assertIn("application/sdp", error["message"])
            self.assertNotIn("multipart", error["message"])

            unauthorized = self.client(base)
            response = await unauthorized.call(self.http, form="sdp", token="wrong")
            self.assertEqual(response.status, 401)
            self.assertEqual((await response.json())["error"]["code"], "invalid_api_key")

            async with self.http.post(f"{base}/v1/realtime/calls", data=b"{}", headers={
                "Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"
            }) as response:
                self.assertEqual(response.status, 415)

            client = self.client(base)
            response = await client.call(self.http, form="sdp")
            self.assertEqual(response.status, 201)
            session = (await client.next("session.created"))["session"]
            detection = session["audio"]["input"]["turn_detection"]
            self.assertEqual(detection["type"], "server_vad")
            self.assertIs(detection["create_response"], True)
            self.assertIs(detection["interrupt_response"], True)
            self.assertEqual(detection["silence_duration_ms"], 500)
            self.assertEqual(session["audio"]["output"]["voice"], "marin")
            self.assertEqual(session["tools"], [])
            self.assertIsNone(session["audio"]["input"]["transcription"])
            self.assertEqual((await self.stats_of(client.call_id, base))["form"], "sdp")
            with open(os.path.join(trace, "calls.jsonl")) as lines:
                records = [json.loads(line) for line in lines]
            self.assertEqual(
                [(r["form"], r["status"], r["parts"], r["session"], r["auth"]) for r in records],
                [("multipart", 415, ["sdp", "session"], {"type": "realtime"}, "bearer"),
                 ("sdp", 401, [], None, "bearer"),
                 ("json", 415, [], None, "bearer"),
                 ("sdp", 201, [], None, "bearer")],
            )
            self.assertEqual(records[-1]["call_id"], client.call_id)
            client.check_events_against_sdk()
            self.assertEqual(await self.hangup(client.call_id, base), 200)
        finally:
            self.assertEqual(await asyncio.to_thread(stop_peer, process), 0, f"the peer's log: {log}")

    async def test_3_hands_free_turn_and_barge_in(self) -> None:
        client = self.client()
        response = await client.call(self.http, form="sdp")
        self.assertEqual(response.status, 201)
        await client.next("session.created")
        client.send({"type": "session.update", "session": {"type": "realtime", "audio": {"input": {
            "turn_detection": {"type": "server_vad", "silence_duration_ms": 400}}}}})
        updated = await client.next("session.updated")
        self.assertEqual(updated["session"]["audio"]["input"]["turn_detection"], {
            "type": "server_vad", "threshold": 0.5, "prefix_padding_ms": 300, "silence_duration_ms": 400,
            "idle_timeout_ms": None, "create_response": True, "interrupt_response": True,
        })

        client.mic.say(self.speech_1s)
        started = await client.next("input_audio_buffer.speech_started")
        stopped = await client.next("input_audio_buffer.speech_stopped")
        self.assertEqual(started["item_id"], stopped["item_id"])
        # From the onset less the prefix padding (300 ms, or what there was) to the last voiced frame.
        self.assertGreaterEqual(stopped["audio_end_ms"] - started["audio_start_ms"], 950)
        self.assertLessEqual(stopped["audio_end_ms"] - started["audio_start_ms"], 1300 + 100)
        committed = await client.next("input_audio_buffer.committed")
        self.assertEqual(committed["item_id"], started["item_id"])
        reply = (await client.next("response.created"))["response"]
        await client.next(lambda e: e["type"] == "output_audio_buffer.started" and e["response_id"] == reply["id"])

        # Speaking over the reply cuts it and cancels it.
        mark = client.cursor
        client.mic.say(self.speech_over)
        barge = await client.next("input_audio_buffer.speech_started")
        cleared = await client.next("output_audio_buffer.cleared")
        self.assertEqual(cleared["response_id"], reply["id"])
        cancelled = await client.next("response.done")
        self.assertEqual(cancelled["response"]["id"], reply["id"])
        self.assertEqual(cancelled["response"]["status"], "cancelled")
        self.assertEqual(cancelled["response"]["status_details"], {"type": "cancelled", "reason": "turn_detected"})
        self.assertEqual(cancelled["response"]["output"][0]["status"], "incomplete")
        between = [e["type"] for e in client.since(mark)]
        self.assertLess(between.index("input_audio_buffer.speech_started"), between.index("output_audio_buffer.cleared"))
        self.assertNotIn("output_audio_buffer.stopped", between)

        # The second turn ends by itself and is answered by itself.
        await client.next(lambda e: e["type"] == "input_audio_buffer.speech_stopped" and e["item_id"] == barge["item_id"])
        second = (await client.next("response.created"))["response"]
        self.assertNotEqual(second["id"], reply["id"])
        done = await client.next("response.done")
        self.assertEqual((done["response"]["id"], done["response"]["status"]), (second["id"], "completed"))
        await client.next(lambda e: e["type"] == "output_audio_buffer.stopped" and e["response_id"] == second["id"])

        stats = await self.stats_of(client.call_id)
        self.assertEqual(stats["client_event_types"], ["session.update"])
        self.assertEqual([t["item_id"] for t in stats["turns"]], [started["item_id"], barge["item_id"]])
        self.assertAlmostEqual(stats["turns"][0]["voiced_ms"], 1000, delta=120)
        self.assertAlmostEqual(stats["turns"][1]["voiced_ms"], 600, delta=120)
        self.assertEqual([r["status"] for r in stats["replies"]], ["cancelled", "completed"])
        self.assertLess(stats["replies"][0]["sent_audio_ms"], 1000)
        self.assertEqual(stats["replies"][1]["sent_audio_ms"], 1500)
        client.check_events_against_sdk()
        self.assertEqual(await self.hangup(client.call_id), 200)

    async def test_4_tool_call_and_its_output(self) -> None:
        add = {"type": "function", "name": "add", "description": "Adds two numbers.",
               "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}}
        client = self.client()
        response = await client.call(self.http, {"type": "realtime", "tools": [add],
                                                 "audio": {"input": {"turn_detection": None}}})
        self.assertEqual(response.status, 201)
        await client.next("session.created")

        # Words that name no declared tool get a spoken reply, cancelled here.
        client.send({"type": "conversation.item.create", "item": {
            "type": "message", "role": "user", "content": [{"type": "input_text", "text": "use subtract with {}"}]}})
        await client.next("conversation.item.done")
        client.send({"type": "response.create"})
        spoken = await client.next("response.output_item.added")
        self.assertEqual(spoken["item"]["type"], "message")
        client.send({"type": "response.create", "event_id": "again"})
        busy = await client.next("error")
        self.assertEqual((busy["error"]["code"], busy["error"]["event_id"]), ("conversation_already_has_active_response", "again"))
        client.send({"type": "response.cancel"})
        cancelled = await client.next("response.done")
        self.assertEqual(cancelled["response"]["status_details"]["reason"], "client_cancelled")
        # What was generated before the cancel still plays out.
        await client.next(lambda e: e["type"] == "output_audio_buffer.stopped" and e["response_id"] == spoken["response_id"])

        start = client.cursor
        client.send({"type": "conversation.item.create", "item": {
            "type": "message", "role": "user", "content": [{"type": "input_text", "text": 'use add with {"a":2,"b":3}'}]}})
        typed = (await client.next("conversation.item.done"))["item"]
        client.send({"type": "response.create"})
        done = await client.next("response.done")
        types = collapse([e["type"] for e in client.since(start)])
        self.assertEqual(types[2:], [
            "response.created", "response.output_item.added", "conversation.item.added",
            "response.function_call_arguments.delta", "response.function_call_arguments.done",
            "response.output_item.done", "conversation.item.done", "response.done",
        ])
        (call,) = done["response"]["output"]
        self.assertEqual((call["type"], call["name"], call["arguments"]), ("function_call", "add", '{"a":2,"b":3}'))
        events = client.since(start)
        arguments = "".join(e["delta"] for e in events if e["type"] == "response.function_call_arguments.delta")
        self.assertEqual(arguments, '{"a":2,"b":3}')
        added = [e for e in events if e["type"] == "conversation.item.added"][-1]
        self.assertEqual(added["previous_item_id"], typed["id"])

        client.send({"type": "conversation.item.create", "item": {
            "type": "function_call_output", "call_id": "call_unknown", "output": "7"}})
        unknown = await client.next("error")
        self.assertEqual(unknown["error"]["param"], "item.call_id")
        client.send({"type": "conversation.item.create", "item": {
            "type": "function_call_output", "call_id": call["call_id"], "output": "5"}})
        output = await client.next("conversation.item.added")
        self.assertEqual(output["item"]["type"], "function_call_output")
        self.assertEqual(output["previous_item_id"], call["id"])
        client.send({"type": "response.create"})
        said = await client.next("response.output_audio_transcript.done")
        self.assertEqual(said["transcript"], "The add tool answered: 5")
        await client.next("response.done")
        client.check_events_against_sdk()
        self.assertEqual(await self.hangup(client.call_id), 200)

    async def test_5_malformed_messages_get_errors_and_the_call_goes_on(self) -> None:
        client = self.client()
        response = await client.call(self.http, {"type": "realtime", "audio": {"input": {"turn_detection": None}}})
        self.assertEqual(response.status, 201)
        await client.next("session.created")
        cases = [
            ("not json{", "invalid_event", None),
            (json.dumps([1, 2]), "invalid_event", None),
            (json.dumps({"event_id": "x1"}), "invalid_event", None),
            (json.dumps({"type": "no.such.event", "event_id": "x2"}), "invalid_value", "type"),
            (json.dumps({"type": "session.update", "session": {"type": "realtime", "bogus": 1}}), "unknown_parameter", "session.bogus"),
            (json.dumps({"type": "session.update", "session": {"type": "realtime", "model": "gpt-realtime-2"}}), "invalid_value", "session.model"),
            (json.dumps({"type": "response.cancel"}), "response_cancel_not_active", None),
            (json.dumps({"type": "conversation.item.truncate", "item_id": "item_nope", "content_index": 0, "audio_end_ms": 5}),
             "item_truncate_invalid_item_id", "item_id"),
        ]
        for text, code, param in cases:
            client.send(text)
            error = (await client.next("error"))["error"]
            self.assertEqual((error["code"], error["param"]), (code, param), text)
        # A commit with (almost) nothing since the clear is refused as the API refuses it.
        client.send({"type": "input_audio_buffer.clear"})
        client.send({"type": "input_audio_buffer.commit", "event_id": "empty"})
        await client.next("input_audio_buffer.cleared")
        empty = (await client.next("error"))["error"]
        self.assertEqual((empty["code"], empty["event_id"]), ("input_audio_buffer_commit_empty", "empty"))

        client.send({"type": "session.update", "session": {"type": "realtime", "instructions": "Still here."}})
        updated = await client.next("session.updated")
        self.assertEqual(updated["session"]["instructions"], "Still here.")
        self.assertNotIn("bogus", updated["session"])
        stats = await self.stats_of(client.call_id)
        self.assertEqual(stats["client_event_types"][:4], ["<invalid json>", "<not an object>", "<no type>", "no.such.event"])
        self.assertFalse(stats["closed"])
        client.check_events_against_sdk()
        self.assertEqual(await self.hangup(client.call_id), 200)

    async def test_6_sigterm_closes_calls_and_exits_cleanly(self) -> None:
        process, base, log = await asyncio.to_thread(start_peer)
        try:
            client = self.client(base)
            response = await client.call(self.http, form="sdp")
            self.assertEqual(response.status, 201)
            await client.next("session.created")
            process.send_signal(signal.SIGTERM)
            await asyncio.wait_for(asyncio.shield(client.channel_closed), STEP)
            code = await asyncio.to_thread(process.wait, STEP)
            self.assertEqual(code, 0, f"the peer's log: {log}")
        finally:
            await asyncio.to_thread(stop_peer, process)


    # -- The Live API (GPT-Live) --------------------------------------------------------------

    async def deltas_until(self, client: Client, event_type: str, ending: str) -> tuple[str, list[dict]]:
        """The `event_type` deltas from the cursor on until their text ends with `ending`."""
        got: list[dict] = []
        while not "".join(e["delta"] for e in got).endswith(ending):
            got.append(await client.next(event_type))
        return "".join(e["delta"] for e in got), got

    async def test_7_live_call_mute_turn_reply_barge_in_and_hang_up(self) -> None:
        session = {
            "model": "gpt-live-1.1",
            "instructions": "Be brief.",
            "audio": {"output": {"voice": "cedar"}},
            "input": [
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hello"}]},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hi!"}]},
            ],
        }
        client = self.client()
        response, body = await client.live_call(self.http, session)
        self.assertEqual(response.status, 201)
        started = (await client.next("session.started"))["session"]
        self.assertEqual(client.events[0]["type"], "session.started")
        self.assertEqual(started["id"], client.call_id)
        self.assertEqual((started["model"], started["instructions"], started["status"]), ("gpt-live-1.1", "Be brief.", "active"))
        self.assertEqual(started["audio"], {"output": {"voice": "cedar"}})
        self.assertEqual(started["input"], session["input"])
        self.assertAlmostEqual(started["expires_at"], time.time() + 3600, delta=30)

        # The input starts unmuted; muted, a second of speech is not heard.
        client.send({"type": "session.input_audio.mute", "event_id": "m1"})
        self.assertEqual((await client.next("session.input_audio.muted")).get("client_event_id"), "m1")
        await asyncio.wait_for(client.mic.say(self.speech_1s, tail_frames=10), STEP)
        client.send({"type": "session.input_audio.unmute", "event_id": "u1"})
        self.assertEqual((await client.next("session.input_audio.unmuted")).get("client_event_id"), "u1")
        self.assertNotIn("session.input_transcript.delta", [e["type"] for e in client.events], "muted speech was heard")

        # Unmuted, a second of speech then silence: the model ends the turn and answers.
        sent_dbfs = rms_dbfs_of(self.speech_1s)
        heard_before_reply = len(client.received)
        client.mic.say(self.speech_1s)
        said, said_events = await self.deltas_until(client, "session.input_transcript.delta", "speech.")
        words = re.fullmatch(r"I heard (\d+\.\d) s of speech\.", said)
        self.assertIsNotNone(words, said)
        self.assertAlmostEqual(float(words.group(1)), 1.0, delta=0.2)
        self.assertEqual(len({(e["start_ms"], e["end_ms"]) for e in said_events}), 1, said_events)
        # From the first speech to the model's decision: the second, then its 600 ms of silence.
        span = said_events[0]["end_ms"] - said_events[0]["start_ms"]
        self.assertGreaterEqual(span, 1000 + peer.END_OF_TURN_SILENCE_MS - 100)
        self.assertLessEqual(span, 1000 + peer.END_OF_TURN_SILENCE_MS + 400)
        replied, reply_events = await self.deltas_until(client, "session.output_transcript.delta", "aiortc.")
        self.assertEqual(replied, f"You said something for {words.group(1)} seconds; this peer runs on aiortc.")
        self.assertEqual(len(reply_events), 3)
        self.assertTrue(all(e["start_ms"] == e["end_ms"] for e in reply_events), reply_events)
        self.assertGreaterEqual(reply_events[0]["start_ms"], said_events[-1]["end_ms"])
        # The words are spread over the reply's 1.5 s (at 0, 0.5 and 1 s).
        self.assertGreaterEqual(reply_events[-1]["start_ms"] - reply_events[0]["start_ms"], 800)
        self.assertLessEqual(reply_events[-1]["start_ms"] - reply_events[0]["start_ms"], 1300)

        # The reply's audio, as the client decoded it: silence before it, then 1.5 s of speech.
        def loud_ms(received: list, start: int) -> int:
            return peer.FRAME_MS * sum(1 for _, level in received[start:] if level is not None and level > -45)

        await client.until_audio(lambda r: loud_ms(r, heard_before_reply) >= 1400, "the reply's audio")
        before = [level for _, level in client.received[:heard_before_reply]]
        self.assertTrue(all(level is None or level < -60 for level in before), f"not silent before the reply: {before[-20:]}")
        reply_audio = [f for f in client.received_frames[heard_before_reply:]
                       if (peer.dbfs(math.sqrt(peer.measure(f)[0] / peer.FRAME_SAMPLES)) or -99) > -45]
        self.assertGreater(rms_dbfs_of(reply_audio), -35)

        # A second turn; speech over its reply stops it (the model yields), and is the next turn.
        client.mic.say(self.speech_1s)
        await self.deltas_until(client, "session.input_transcript.delta", "speech.")
        second_from = client.cursor
        audio_mark = len(client.received)
        await client.next("session.output_transcript.delta")
        await client.until_audio(lambda r: loud_ms(r, audio_mark) >= 100, "the second reply's audio")
        client.mic.say(self.speech_over)
        third, third_events = await self.deltas_until(client, "session.input_transcript.delta", "speech.")
        self.assertRegex(third, r"^I heard 0\.[5-7] s of speech\.$")
        third_at = client.events.index(third_events[0])
        cut = "".join(e["delta"] for e in client.events[second_from:third_at] if e["type"] == "session.output_transcript.delta")
        self.assertTrue(cut.startswith("You said something for"), cut)
        self.assertFalse(cut.endswith("aiortc."), "the reply went on over the user's speech")

        client.send({"type": "session.input_audio.mute", "event_id": "m2"})
        self.assertEqual((await client.next("session.input_audio.muted")).get("client_event_id"), "m2")

        # session.update: voice, instructions and the delegation's type are fixed; its settings are not.
        for update, param in [
            ({"instructions": "Be verbose."}, "session.instructions"),
            ({"audio": {"output": {"voice": "marin"}}}, "session.audio"),
            ({"delegation": {"type": "responses", "responses": {"model": "gpt-5.2"}}}, "session.delegation.type"),
        ]:
            client.send({"type": "session.update", "event_id": "up", "session": update})
            refused = (await client.next("error"))["error"]
            self.assertEqual((refused["code"], refused.get("param"), refused.get("client_event_id")), ("immutable_field", param, "up"))
        client.send({"type": "session.update", "session": {"delegation": {"type": "client", "acknowledgement_delay_ms": 200}}})
        updated = (await client.next("session.updated"))["session"]
        self.assertEqual(updated["delegation"], {"type": "client", "acknowledgement_delay_ms": 200})
        self.assertEqual(updated["instructions"], "Be brief.")
        client.send({"type": "input_audio_buffer.commit", "event_id": "rt"})
        wrong = (await client.next("error"))["error"]
        self.assertEqual(wrong["code"], "invalid_client_event")
        self.assertIn("input_audio_buffer.commit", wrong["message"])

        stats = await self.stats_of(client.call_id)
        self.assertEqual(stats["form"], "live")
        self.assertTrue(stats["muted"])
        sent_types = ["session.input_audio.mute", "session.input_audio.unmute", "session.input_audio.mute",
                      "session.update", "session.update", "session.update", "session.update", "input_audio_buffer.commit"]
        self.assertEqual(stats["client_event_types"], sent_types)
        # Three turns: the muted second was never one.
        self.assertEqual(len(stats["turns"]), 3, stats["turns"])
        for turn, voiced_ms in zip(stats["turns"], [1000, 1000, 600]):
            self.assertAlmostEqual(turn["voiced_ms"], voiced_ms, delta=120)
            self.assertAlmostEqual(turn["rms_dbfs"], sent_dbfs, delta=2.0)
        first, second = stats["replies"][:2]
        self.assertEqual((first["status"], first["sent_audio_ms"]), ("completed", 1500))
        self.assertAlmostEqual(first["sent_rms_dbfs"], peer.REPLY_DBFS, delta=0.5)
        self.assertEqual(second["status"], "cancelled")
        self.assertLess(second["sent_audio_ms"], 1000)
        usage = [e["usage"] for e in client.events if e["type"] == "session.usage.updated"]
        self.assertGreaterEqual(len(usage), 3)
        self.assertEqual([u["seconds"] for u in usage], sorted(u["seconds"] for u in usage))
        for u in usage:
            self.assertEqual((u["seconds"] % 1, u["active_seconds"] + u["paused_seconds"], u["paused_seconds"]), (0, u["seconds"], 0))
        types = {e["type"] for e in client.events}
        self.assertFalse({"session.paused", "session.resumed", "session.closed"} & types, types)
        client.check_events_against_sdk(peer.LIVE_SERVER_EVENT_MODELS)

        self.assertEqual(await self.hangup(client.call_id, api="live/sessions"), 200)
        await asyncio.wait_for(asyncio.shield(client.channel_closed), STEP)
        stats = await self.stats_of(client.call_id)
        self.assertTrue(stats["hung_up"])
        self.assertTrue(stats["closed"])
        self.assertEqual(await self.hangup(client.call_id, api="live/sessions"), 404)

        # The trace: the call's line with its JSON body, the hang-up's, the channel's texts.
        with open(os.path.join(self.trace, "calls.jsonl")) as lines:
            records = [json.loads(line) for line in lines if client.call_id in line]
        self.assertEqual(
            [{k: r[k] for k in ("method", "path", "form", "parts", "auth", "session", "status", "query", "call_id")} for r in records],
            [{"method": "POST", "path": "/v1/live/sessions", "form": "json", "parts": [], "auth": "bearer", "session": None,
              "status": 201, "query": None, "call_id": client.call_id},
             *[{"method": "POST", "path": f"/v1/live/sessions/{client.call_id}/hangup", "form": "other", "parts": [],
                "auth": "bearer", "session": None, "status": status, "query": None, "call_id": client.call_id}
               for status in (200, 404)]],
        )
        self.assertEqual(records[0]["live_session"], body)
        self.assertNotIn("live_session", records[1])
        with open(os.path.join(self.trace, "live-client-events.jsonl")) as lines:
            texts = [json.loads(line) for line in lines]
        mine = [json.loads(t["text"]) for t in texts if t["call_id"] == client.call_id]
        self.assertEqual([t["type"] for t in mine], sent_types)
        self.assertEqual([t.get("event_id") for t in mine[:3]], ["m1", "u1", "m2"])
        realtime_texts = os.path.join(self.trace, "client-events.jsonl")
        if os.path.exists(realtime_texts):  # written once a Realtime call has had a message
            with open(realtime_texts) as lines:
                self.assertNotIn(client.call_id, lines.read())

    async def test_8_live_refusals_wake_policy_and_close(self) -> None:
        async def post(body: dict, token: str = TOKEN, content_type: str = "application/json") -> tuple[int, dict]:
            headers = {"Authorization": f"Bearer {token}", "Content-Type": content_type}
            async with self.http.post(f"{self.base}/v1/live/sessions", data=json.dumps(body).encode(), headers=headers) as answer:
                return answer.status, await answer.json()

        def with_offer(session: dict) -> dict:
            return {"session": session, "transport": {"type": "webrtc", "sdp": "v=0\r\n"}}

        refusals = [
            (with_offer({"model": "gpt-live-1.1"}), {"token": "wrong"}, 401, "invalid_api_key", None),
            (with_offer({"model": "gpt-live-1.1"}), {"content_type": "application/sdp"}, 415, "unsupported_content_type", None),
            ({"session": {"model": "gpt-live-1.1"}}, {}, 400, "missing_required_parameter", "transport"),
            (with_offer({"model": "gpt-live-1.1", "bogus": 1}), {}, 400, "unknown_parameter", "session.bogus"),
            (with_offer({"model": "gpt-live-1.1", "audio": {"output": {"voice": "nova"}}}), {}, 400, "invalid_value",
             "session.audio.output.voice"),
            (with_offer({"model": "gpt-live-1.1", "idle_timeout_s": 5}), {}, 400, "invalid_value", "session.idle_timeout_s"),
        ]
        for body, how, status, code, param in refusals:
            got, answer = await post(body, **how)
            self.assertEqual(set(answer["error"]), {"message", "type", "code", "param"})
            self.assertEqual((got, answer["error"]["code"], answer["error"]["param"]), (status, code, param), body)
        with open(os.path.join(self.trace, "calls.jsonl")) as lines:
            refused = [json.loads(line) for line in lines]
        refused = [r for r in refused if r["path"] == "/v1/live/sessions" and r["status"] != 201]
        self.assertEqual([(r["status"], r["live_session"], r["call_id"]) for r in refused],
                         [(status, body, None) for body, _, status, _, _ in refusals])

        # A wake policy: paused until speech, resumed by it, paused again after the idle timeout.
        client = self.client()
        response, _ = await client.live_call(self.http, {"model": "gpt-live-1", "wake_policy": {"type": "speech"}, "idle_timeout_s": 1})
        self.assertEqual(response.status, 201)
        started = (await client.next("session.started"))["session"]
        self.assertEqual(started["audio"], {"output": {"voice": "marin"}})
        self.assertNotIn("wake_policy", started)
        client.mic.say(self.speech_1s[5:7])  # 40 ms: speech, but no turn
        await client.next("session.resumed")
        resumed_at = client.arrivals[client.cursor - 1]
        await client.next("session.paused")
        paused_at = client.arrivals[client.cursor - 1]
        self.assertGreaterEqual(paused_at - resumed_at, 0.9)
        self.assertLessEqual(paused_at - resumed_at, 1.5)
        usage = (await client.next(lambda e: e["type"] == "session.usage.updated" and e["usage"]["paused_seconds"] >= 1))["usage"]
        self.assertEqual(usage["active_seconds"] + usage["paused_seconds"], usage["seconds"])
        self.assertGreaterEqual(usage["active_seconds"], 1)
        client.send({"type": "session.commentary.append", "content": "It is 10:42.", "delegation_id": None, "event_id": "c1"})
        appended = await client.next("session.commentary.appended")
        self.assertEqual((appended["start_ms"] == appended["end_ms"], appended.get("client_event_id")), (True, "c1"))

        client.send({"type": "session.close", "event_id": "bye"})
        closed = await client.next("session.closed")
        self.assertEqual((closed["reason"], closed.get("client_event_id"), closed["session"]), ("close_requested", "bye", started))
        self.assertEqual(closed["usage"]["active_seconds"] + closed["usage"]["paused_seconds"], closed["usage"]["seconds"])
        self.assertGreaterEqual(closed["usage"]["paused_seconds"], usage["paused_seconds"])
        await asyncio.wait_for(asyncio.shield(client.channel_closed), STEP)
        types = [e["type"] for e in client.events]
        self.assertEqual(types[-1], "session.closed")
        self.assertFalse({"session.input_transcript.delta", "session.output_transcript.delta"} & set(types), types)
        stats = await self.stats_of(client.call_id)
        self.assertEqual((stats["closed"], stats["hung_up"], stats["turns"], stats["replies"]), (True, False, [], []))
        self.assertEqual(stats["client_event_types"], ["session.commentary.append", "session.close"])
        self.assertEqual(await self.hangup(client.call_id, api="live/sessions"), 404)
        client.check_events_against_sdk(peer.LIVE_SERVER_EVENT_MODELS)

    async def test_9_live_turn_delegated_to_a_responses_tool(self) -> None:
        add = {"type": "function", "name": "add", "description": "Adds two numbers.",
               "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}}
        client = self.client()
        response, _ = await client.live_call(self.http, {
            "model": "gpt-live-1.1",
            "instructions": 'When asked, use add with {"a":2,"b":3}',
            "delegation": {"type": "responses", "responses": {"model": "gpt-5.2", "tools": [add]}},
        })
        self.assertEqual(response.status, 201)
        started = (await client.next("session.started"))["session"]
        self.assertEqual(started["delegation"]["responses"]["tools"], [add])
        client.mic.say(self.speech_1s[:20])
        await self.deltas_until(client, "session.input_transcript.delta", "speech.")
        delegation = (await client.next("session.delegation.created"))["delegation"]
        self.assertEqual((delegation["type"], delegation["target"]), ("delegation", "responses"))
        call = await client.next("response.event")
        self.assertEqual(call["delegation_id"], delegation["id"])
        item = call["event"]["item"]
        self.assertEqual((call["event"]["type"], item["type"], item["name"], item["arguments"]),
                         ("response.output_item.done", "function_call", "add", '{"a":2,"b":3}'))
        client.send({"type": "response.item.create", "item": {"type": "function_call_output", "call_id": item["call_id"], "output": "5"}})
        client.send({"type": "response.create"})
        said, _ = await self.deltas_until(client, "session.output_transcript.delta", "5")
        self.assertEqual(said, "The add tool answered: 5")
        at = client.events.index(call)
        self.assertNotIn("session.output_transcript.delta", [e["type"] for e in client.events[:at]], "a reply before the tool's")
        client.check_events_against_sdk(peer.LIVE_SERVER_EVENT_MODELS)
        self.assertEqual(await self.hangup(client.call_id, api="live/sessions"), 200)


if __name__ == "__main__":
    unittest.main()

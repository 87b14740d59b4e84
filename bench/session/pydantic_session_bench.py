"""Events per second through pydantic-ai's realtime session, fed the synthetic stream of the Rust bench.

A small `RealtimeModel` subclass opens a `RealtimeConnection` that emits, per turn, 200 assistant audio
deltas of 20 ms (480 samples of PCM16, 960 bytes) with a transcript delta (a new word) after every tenth,
then the
response terminal. The session turns each turn into 223 events: a part start, 220 part deltas, the part
end and the turn completion, the same events walkie-session's benchmark pushes.

Two modes, as in the Rust bench: `active_iterator` (an `async for` consumes every event) and `no_iterator`
(nobody iterates; the session keeps its bounded late-iterator backlog). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from contextlib import asynccontextmanager

from pydantic_ai import Agent
from pydantic_ai.messages import PartDeltaEvent, RealtimeTurnCompleteEvent
from pydantic_ai.realtime import RealtimeModel
from pydantic_ai.realtime.codec import AudioDelta, OutputTranscript, RealtimeConnection, ResponseDone
from pydantic_ai.realtime.lifecycle import InferredLifecycle

AUDIO_DELTAS_PER_TURN = 200
TRANSCRIPT_EVERY_N_AUDIO = 10
BYTES_PER_CHUNK = 960  # 480 samples of PCM16
EVENTS_PER_TURN = 1 + AUDIO_DELTAS_PER_TURN + AUDIO_DELTAS_PER_TURN // TRANSCRIPT_EVERY_N_AUDIO + 2


class SyntheticConnection(RealtimeConnection):
    """Emits the synthetic turns, then stays open (so the session does not see a closed connection)."""

    def __init__(self, turns: int, all_emitted: asyncio.Event) -> None:
        self._turns = turns
        self._all_emitted = all_emitted
        self._lifecycle = InferredLifecycle()

    async def send(self, content):  # noqa: ANN001 - nothing is sent in this benchmark
        return None

    async def _codec_events(self):
        chunk = bytes(BYTES_PER_CHUNK)
        for turn in range(self._turns):
            item_id = f'item-{turn}'
            for n in range(AUDIO_DELTAS_PER_TURN):
                yield AudioDelta(chunk, item_id=item_id)
                if n % TRANSCRIPT_EVERY_N_AUDIO == TRANSCRIPT_EVERY_N_AUDIO - 1:
                    yield OutputTranscript(f' word{n}', item_id=item_id)
            yield ResponseDone()
        self._all_emitted.set()
        await asyncio.Event().wait()

    def frames(self):
        return self._lifecycle.frames(self._codec_events())


class SyntheticRealtimeModel(RealtimeModel):
    def __init__(self, turns: int) -> None:
        super().__init__()
        self.turns = turns
        self.all_emitted = asyncio.Event()

    @property
    def model_name(self) -> str:
        return 'synthetic'

    @property
    def system(self) -> str:
        return 'synthetic'

    @asynccontextmanager
    async def connect(self, *, messages, model_settings, model_request_parameters):  # noqa: ANN001
        yield SyntheticConnection(self.turns, self.all_emitted)


async def run_active_iterator(turns: int) -> dict:
    model = SyntheticRealtimeModel(turns)
    events = deltas = turns_completed = 0
    async with Agent().realtime(model).session() as session:
        started = time.perf_counter()
        async for event in session:
            events += 1
            if isinstance(event, PartDeltaEvent):
                deltas += 1
            elif isinstance(event, RealtimeTurnCompleteEvent):
                turns_completed += 1
                if turns_completed == turns:
                    break
        elapsed_s = time.perf_counter() - started
    if events != turns * EVENTS_PER_TURN:
        raise SystemExit(f'expected {turns * EVENTS_PER_TURN} events, the session yielded {events}')
    return {'events': events, 'deltas': deltas, 'seconds': elapsed_s, 'events_per_s': events / elapsed_s}


async def run_no_iterator(turns: int) -> dict:
    model = SyntheticRealtimeModel(turns)
    async with Agent().realtime(model).session() as session:
        started = time.perf_counter()
        # Nothing iterates: start the session's pump the way a send or a view would.
        session._start_pump()  # noqa: SLF001 - the public triggers add work of their own
        await model.all_emitted.wait()
        elapsed_s = time.perf_counter() - started
        kept = len(session._queue)  # noqa: SLF001 - reported to show the bound holds
    events = turns * EVENTS_PER_TURN
    return {'events': events, 'kept': kept, 'seconds': elapsed_s, 'events_per_s': events / elapsed_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('--turns', type=int, default=200)
    parser.add_argument('--repeats', type=int, default=3, help='best of this many runs per mode')
    args = parser.parse_args()
    results = {}
    for mode, run in (('active_iterator', run_active_iterator), ('no_iterator', run_no_iterator)):
        runs = [asyncio.run(run(args.turns)) for _ in range(args.repeats)]
        results[mode] = max(runs, key=lambda r: r['events_per_s'])
    print(json.dumps(results))


if __name__ == '__main__':
    main()

"""Writes a replay for examples/page_floor.rs: transcripts streamed as a provider streams tokens.

The local provider sends a reply's transcript in a few deltas 200 ms apart; a model's token
stream sends dozens a second. This replay has ANSWERS turns 3.7 s apart, each a user message
and an answer of DELTAS deltas SPACING_MS apart, as AG-UI events Walkie's page applies, to
measure what the page costs to show such a stream:

    python3 token_stream.py OUT.json [ANSWERS] [DELTAS] [SPACING_MS]
    target/release/examples/page_floor --replay OUT.json   (under xvfb-run; it prints
    `replaying` and `replayed`, between which its tree's CPU is the figure)

Each event is sent as an update of its own; `node page_cost.mjs OUT.json --batch app` sends them
in the batches the app makes.
"""

import json
import sys

TURN_MS = 3_700


def replay(answers: int, deltas: int, spacing_ms: float) -> dict:
    events = []
    at_ms = 500.0

    def send(offset_ms: float, event: dict) -> None:
        update = {"kind": "transcript", "payload": event}
        events.append([at_ms + offset_ms, "walkie://updates", [update]])

    for turn in range(1, answers + 1):
        run = {"threadId": "thread-bench", "runId": f"run-{turn}"}
        user, answer = f"user-{turn}", f"assistant-{turn}"
        send(0, {"type": "RUN_STARTED", **run})
        send(1, {"type": "TEXT_MESSAGE_START", "messageId": user, "role": "user"})
        send(2, {"type": "TEXT_MESSAGE_CONTENT", "messageId": user, "delta": "What is the weather like today?"})
        send(3, {"type": "TEXT_MESSAGE_END", "messageId": user})
        send(200, {"type": "TEXT_MESSAGE_START", "messageId": answer, "role": "assistant"})
        for k in range(deltas):
            send(210 + k * spacing_ms, {"type": "TEXT_MESSAGE_CONTENT", "messageId": answer, "delta": f" word{k}"})
        last_ms = 210 + deltas * spacing_ms
        send(last_ms, {"type": "TEXT_MESSAGE_END", "messageId": answer})
        send(last_ms + 1, {"type": "RUN_FINISHED", **run})
        at_ms += TURN_MS
    return {"durationMs": at_ms + 500, "events": events}


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    answers = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    deltas = int(sys.argv[3]) if len(sys.argv) > 3 else 60
    spacing_ms = float(sys.argv[4]) if len(sys.argv) > 4 else 25.0
    with open(sys.argv[1], "w", encoding="utf-8") as out:
        json.dump(replay(answers, deltas, spacing_ms), out)


if __name__ == "__main__":
    main()

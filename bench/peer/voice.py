"""Writes the benchmark's microphone signal: a voice without pauses (16-bit mono, 48 kHz).

The local provider replies with the caller's own audio, so a reply that began with the caller's
pause would be heard late on every client alike. This is the voiced source of the tests'
speech-like signal (a wandering pitch, two formants) with no syllable gaps, so the reply is
audible from its first sample and the detector times the client, not the signal.

    python3 voice.py OUT.wav [SECONDS]
"""

import math
import struct
import sys
import wave

RATE_HZ = 48_000


def voice(seconds: float) -> list[int]:
    samples = []
    phase = 0.0
    for i in range(int(RATE_HZ * seconds)):
        t = i / RATE_HZ
        f0 = 140.0 + 30.0 * math.sin(2 * math.pi * 1.3 * t)
        phase += 2 * math.pi * f0 / RATE_HZ
        source = 0.0
        for k in range(1, 19):
            freq = f0 * k
            formant = 1 + 2 * math.exp(-(((freq - 700) / 200) ** 2)) + 1.5 * math.exp(-(((freq - 1200) / 250) ** 2))
            source += formant * math.sin(k * phase) / k
        samples.append(max(-32000, min(32000, int(source * 5000))))
    return samples


def main() -> None:
    out = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 10.0
    with wave.open(out, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(RATE_HZ)
        wav.writeframes(struct.pack(f"<{int(RATE_HZ * seconds)}h", *voice(seconds)))


if __name__ == "__main__":
    main()

"""Reads a conversation Walkie exported with readers that are not Walkie's own: FFmpeg (through
PyAV) demuxes and decodes the audio file, webvtt-py parses the captions strictly. Prints what
it read as JSON; the end-to-end test (tests/e2e_history.rs) checks it against the journal.

    export_oracle.py audio FILE '[[from_ms, to_ms], ...]'
        {"format": ..., "codec": ..., "rate": ..., "channels": ..., "duration_ms": ...,
         "rms": [[channel 0, channel 1, ...] for each window]}
    export_oracle.py captions FILE
        {"cues": [{"start_ms": ..., "end_ms": ..., "voice": ..., "text": ...}, ...]}
"""

import array
import json
import math
import sys


def read_audio(path, windows):
    import av

    with av.open(path) as container:
        stream = container.streams.audio[0]
        rate = stream.codec_context.sample_rate
        channels = stream.codec_context.channels
        layout = "stereo" if channels == 2 else "mono"
        # Interleaved 32-bit floats at the stream's own rate, whatever the decoder gives.
        resampler = av.AudioResampler(format="flt", layout=layout, rate=rate)
        samples = array.array("f")
        for frame in container.decode(stream):
            for converted in resampler.resample(frame):
                plane = bytes(converted.planes[0])
                samples.frombytes(plane[: converted.samples * channels * 4])
        for converted in resampler.resample(None):
            plane = bytes(converted.planes[0])
            samples.frombytes(plane[: converted.samples * channels * 4])
        format_name = container.format.name
        codec = stream.codec_context.name
    frames = len(samples) // channels
    rms = []
    for from_ms, to_ms in windows:
        first = min(frames, max(0, from_ms * rate // 1000))
        last = min(frames, max(first, to_ms * rate // 1000))
        levels = []
        for channel in range(channels):
            count = last - first
            energy = sum(samples[n * channels + channel] ** 2 for n in range(first, last))
            levels.append(math.sqrt(energy / count) if count else 0.0)
        rms.append(levels)
    return {
        "format": format_name,
        "codec": codec,
        "rate": rate,
        "channels": channels,
        "duration_ms": frames * 1000 // rate,
        "rms": rms,
    }


def read_captions(path):
    import webvtt

    captions = webvtt.read(path, strict=True)
    return {
        "cues": [
            {
                "start_ms": caption.start_time.in_milliseconds(),
                "end_ms": caption.end_time.in_milliseconds(),
                "voice": caption.voice,
                "text": caption.text,
            }
            for caption in captions
        ]
    }


def main(argv):
    if len(argv) == 4 and argv[1] == "audio":
        print(json.dumps(read_audio(argv[2], json.loads(argv[3]))))
    elif len(argv) == 3 and argv[1] == "captions":
        print(json.dumps(read_captions(argv[2])))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

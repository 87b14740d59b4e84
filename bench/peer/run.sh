#!/usr/bin/env bash
# The peer benchmark (issue 18): Walkie and a browser client, one after the other
# in one run, against the same local provider, timed by the same detector. Chromium (Debian's package, headed in an
# Xvfb display, as headless Chromium plays no sound; driven by playwright-core: drive.mjs) runs
# client.html for TURNS push-to-talk turns; its
# microphone is voice.py's voice without pauses (Chromium's fake capture device, the browser's
# own processing off); its reply plays to the private PulseAudio sink "spk", whose monitor one
# detector (detect.mjs) records for the whole run. For each commit the provider received (its
# trace's time), the first audible sample after it at the sink gives commit → first audible
# sample; the trace's replies.jsonl gives the provider's part of it (report.mjs). Walkie
# (benches/app.rs --peer: the release app in its own Xvfb, switched to this provider in
# Settings, the same voice played into the "mic" sink it records) makes the same turns. Each
# driver also measures its client's process tree (CPU over the turns, PSS idle and talking);
# floor.mjs measures pacat + parec moving the same audio, codec_floor (crates/dsp/examples) what
# Opus costs to encode and decode the same voice, and the Walkie side a bare WebKitGTK window and
# Walkie's page in a Tauri window with nothing behind it (examples/page_floor.rs: its memory at
# rest, and its CPU showing the events Walkie's window was sent over the turns, replayed at their
# times from target/bench-peer/window-events.json), as floors in the same run.
#
#   bench/peer/run.sh [TURNS]     (default 20; prints a table and writes target/bench-peer/)
#   node bench/peer/page_cost.mjs target/bench-peer/window-events.json
#                                 then: what one update of Walkie's page costs, by kind of
#                                 update and window size, over that run's events
#   WALKIE_SOUND_SERVER=pipewire bench/peer/run.sh [TURNS]    the same on a private PipeWire
#                                 (scripts/pipewire.sh) instead of PulseAudio
#
# Everything it needs is installed by scripts/deps.sh bench (Chromium too) and npm ci here.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$repo"
turns="${1:-20}"

scripts/deps.sh bench
export PATH="$HOME/.cargo/bin:$PATH"
target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$repo/$target" ;; esac
work="$target/bench-peer"
rm -rf "$work"
mkdir -p "$work"

cargo build --release --locked -p walkie-local --features test-bench --bin walkie-local-provider
cargo build --release --locked -p walkie-dsp --example codec_floor
cargo build --release --locked --example page_floor
(cd bench/peer && npm ci --no-audit --no-fund --loglevel=error)
python3 bench/peer/voice.py "$work/voice.wav" 10

sound_server=${WALKIE_SOUND_SERVER:-pulse}
case "$sound_server" in
  pulse | pipewire) ;;
  *) echo "WALKIE_SOUND_SERVER is pulse or pipewire, not $sound_server" >&2; exit 2 ;;
esac
pulse_dir="$target/$sound_server-bench"
provider_pid=""
detector_pid=""
cleanup() {
  [ -n "$provider_pid" ] && kill "$provider_pid" 2>/dev/null || true
  [ -n "$detector_pid" ] && kill "$detector_pid" 2>/dev/null || true
  "scripts/$sound_server.sh" stop "$pulse_dir"
}
trap cleanup EXIT
PULSE_SERVER=$("scripts/$sound_server.sh" start "$pulse_dir")
export PULSE_SERVER

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
token="bench-peer-$$"
"$target/release/walkie-local-provider" --port "$port" --token "$token" --trace "$work/trace" \
  >"$work/provider.log" 2>&1 &
provider_pid=$!
for _ in $(seq 100); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
  sleep 0.1
done

node bench/peer/detect.mjs "$work/loud.txt" spk 2>"$work/detect.log" &
detector_pid=$!
until grep -q recording "$work/detect.log" 2>/dev/null; do sleep 0.1; done

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
xvfb-run -a node bench/peer/drive.mjs --base "http://127.0.0.1:$port" --token "$token" \
  --mic "$work/voice.wav" --turns "$turns" >"$work/chromium.json"
cargo bench --locked --bench app -- --peer "http://127.0.0.1:$port" "$token" "$work/voice.wav" \
  "$turns" | grep '^{' >"$work/walkie.json"
node bench/peer/floor.mjs "$work/voice.wav" 30 >"$work/floor.json"
"$target/release/examples/codec_floor" "$work/voice.wav" 60 >"$work/codec.json"
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
kill -TERM "$detector_pid"
wait "$detector_pid" || true
node bench/peer/report.mjs --trace "$work/trace" --loud "$work/loud.txt" \
  --load-before "$load_before" --load-after "$load_after" --floor "$work/floor.json" \
  --codec "$work/codec.json" \
  "$work/chromium.json" "$work/walkie.json"

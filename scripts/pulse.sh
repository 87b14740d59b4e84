#!/usr/bin/env bash
# A private PulseAudio server with two null sinks for the real-time audio tests: "mic" (what a
# test plays into it is what the app captures, from mic.monitor) and "spk" (the app plays into
# it, a test records spk.monitor). Nothing touches the user's own sound setup.
#
#   scripts/pulse.sh start DIR   start it under DIR (runtime dir, socket, logs); prints the
#                                PULSE_SERVER value to export
#   scripts/pulse.sh stop DIR    stop it and its keep-alive readers
#
# Measured on these machines (shared/reference/build-environment.md §8.3): norewinds=1 keeps the
# first ~9 ms of playback, and a 10 ms reader on each monitor keeps the idle null sinks from
# rendering in 2 s blocks.
set -euo pipefail

action=${1:?usage: $0 start|stop DIR}
dir=$(mkdir -p "${2:?usage: $0 start|stop DIR}" && cd "$2" && pwd)
run="$dir/run"
socket="$run/native"

stop() {
  for pidfile in "$dir"/*.pid; do
    [ -e "$pidfile" ] || continue
    kill -TERM -- "-$(cat "$pidfile")" 2>/dev/null || kill -TERM "$(cat "$pidfile")" 2>/dev/null || true
    rm -f "$pidfile"
  done
}

case "$action" in
  stop)
    stop
    exit 0
    ;;
  start) ;;
  *) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac

stop
mkdir -p "$run" "$dir/home"
chmod 700 "$run"
cat > "$dir/null-sinks.pa" <<PA
load-module module-native-protocol-unix auth-anonymous=1 socket=$socket
load-module module-null-sink sink_name=mic rate=48000 channels=1 format=s16le norewinds=1
load-module module-null-sink sink_name=spk rate=48000 channels=1 format=s16le norewinds=1
set-default-source mic.monitor
set-default-sink spk
PA

export XDG_RUNTIME_DIR="$run" HOME="$dir/home" PULSE_SERVER="unix:$socket"
# --disable-shm: PulseAudio 16.1 aborted once under the tests (memblock.c:780, assertion
# 'n_imported > 0' in memblock_replace_import, after many "non-registered memfd ID" errors,
# upstream issue 824) while libpulse clients came and went with shared-memory blocks in
# flight between a playback stream and the monitors that record it. Data over the socket
# avoids that path; what the tests check does not depend on it. A desktop server uses shared
# memory, so CPU measurements may ask for it: WALKIE_PULSE_SHM=yes scripts/pulse.sh start DIR.
if [ "${WALKIE_PULSE_SHM:-no}" = yes ]; then disable_shm=no; else disable_shm=yes; fi
setsid pulseaudio -n -F "$dir/null-sinks.pa" --daemonize=no --exit-idle-time=-1 --disable-shm="$disable_shm" \
  --log-target=file:"$dir/pulseaudio.log" >/dev/null 2>&1 &
echo $! > "$dir/pulseaudio.pid"
# The processes a test stops to stall the server (crates/audio/tests/common/mod.rs).
echo $! > "$dir/sound-server.pids"
for _ in $(seq 100); do
  pactl info >/dev/null 2>&1 && break
  sleep 0.05
done
if ! pactl info >/dev/null 2>&1; then
  echo "pulse: the server did not come up; see $dir/pulseaudio.log" >&2
  exit 1
fi
for monitor in mic.monitor spk.monitor; do
  setsid parec --latency-msec=10 --device="$monitor" --raw >/dev/null 2>&1 &
  echo $! > "$dir/keepalive-${monitor%%.*}.pid"
done
echo "unix:$socket"

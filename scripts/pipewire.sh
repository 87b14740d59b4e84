#!/usr/bin/env bash
# A private PipeWire server, as the desktops people run have (with WirePlumber as its session
# manager and pipewire-pulse speaking the PulseAudio protocol Walkie's engine uses), holding
# the same two null sinks as scripts/pulse.sh: "mic" (what a test plays into it is what the
# app captures, from mic.monitor) and "spk" (the app plays into it, a test records
# spk.monitor). Nothing touches the user's own sound setup: its own runtime folder, its own
# D-Bus session bus (WirePlumber needs one), its own configuration.
#
#   scripts/pipewire.sh start DIR   start it under DIR; prints the PULSE_SERVER value to export
#   scripts/pipewire.sh stop DIR    stop it
#
# Needs Debian's pipewire, wireplumber and pipewire-pulse (scripts/deps.sh test installs them;
# the test command runs the audio suites on it through scripts/on-pipewire.sh).
#
# Two defaults of a desktop's PipeWire are set aside, as scripts/pulse.sh sets PulseAudio's:
# in a virtual machine PipeWire raises its smallest period to 1024 frames (21 ms), which no
# desktop on real hardware does; and WirePlumber suspends a sink idle for 5 s, which would
# make the first sound of every test wait for it to wake.
set -euo pipefail

action=${1:?usage: $0 start|stop DIR}
dir=$(mkdir -p "${2:?usage: $0 start|stop DIR}" && cd "$2" && pwd)
run="$dir/run"

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
rm -rf "$run"
mkdir -p "$run" "$dir/home" "$dir/config/pipewire/pipewire.conf.d"
chmod 700 "$run"
cat > "$dir/config/pipewire/pipewire.conf.d/walkie-tests.conf" <<CONF
context.properties = {
    # A virtual machine's override (min-quantum 1024) set back to the default.
    vm.overrides = { default.clock.min-quantum = 16 }
}
CONF

export XDG_RUNTIME_DIR="$run" HOME="$dir/home" XDG_CONFIG_HOME="$dir/config"
export DBUS_SESSION_BUS_ADDRESS="unix:path=$run/bus"
unset PULSE_SERVER
setsid dbus-daemon --session --nofork --nopidfile --address="$DBUS_SESSION_BUS_ADDRESS" \
  >"$dir/dbus.log" 2>&1 &
echo $! > "$dir/dbus.pid"
for _ in $(seq 100); do [ -S "$run/bus" ] && break; sleep 0.05; done
for daemon in pipewire wireplumber pipewire-pulse; do
  setsid "$daemon" >"$dir/$daemon.log" 2>&1 &
  echo $! > "$dir/$daemon.pid"
done
# The processes a test stops to stall the server (crates/audio/tests/common/mod.rs): the graph
# and the protocol server whose streams it runs.
cat "$dir/pipewire.pid" "$dir/pipewire-pulse.pid" > "$dir/sound-server.pids"
export PULSE_SERVER="unix:$run/pulse/native"
for _ in $(seq 100); do
  pactl info >/dev/null 2>&1 && break
  sleep 0.05
done
if ! pactl info >/dev/null 2>&1; then
  echo "pipewire: pipewire-pulse did not come up; see $dir/*.log" >&2
  exit 1
fi
for sink in mic spk; do
  pactl load-module module-null-sink sink_name="$sink" rate=48000 channels=1 format=s16le \
    sink_properties=session.suspend-timeout-seconds=0 >/dev/null
done
# WirePlumber sets the defaults once it has seen the sinks.
for _ in $(seq 100); do
  pactl set-default-source mic.monitor 2>/dev/null && pactl set-default-sink spk 2>/dev/null &&
    [ "$(pactl get-default-sink)" = spk ] && break
  sleep 0.05
done
if [ "$(pactl get-default-source)" != mic.monitor ] || [ "$(pactl get-default-sink)" != spk ]; then
  echo "pipewire: the null sinks did not become the defaults; see $dir/wireplumber.log" >&2
  exit 1
fi
echo "$PULSE_SERVER"

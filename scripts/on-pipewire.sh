#!/usr/bin/env bash
# The audio suites on a private PipeWire (scripts/pipewire.sh): the engine's tests against a
# real server, and the conversations in the real window (tests/e2e_conversation.rs). The test
# command runs it after the same suites have passed on PulseAudio; their binaries are built.
#
# Left to PulseAudio: the two engine tests that stop the sound server for 100 ms mid-reply.
# PipeWire drops and zero-fills whole quanta around a stall for any client, pacat and parec
# too (docs/benchmarks.md, "PipeWire"); those tests are built on every sample being heard once.
# And the echo test that also asserts the null sink's one clock is never taken for two: on
# PipeWire in a VM, long playback underruns can make the drift detector follow a drift that
# is not there, a misjudgement to fix in the detector, not here; the test runs on PulseAudio.
set -euo pipefail
cd "$(dirname "$0")/.."

dir="${CARGO_TARGET_DIR:-target}/pipewire"
trap 'scripts/pipewire.sh stop "$dir"' EXIT
PULSE_SERVER=$(scripts/pipewire.sh start "$dir")
export PULSE_SERVER

# `--workspace`: the same features as the test command's build, so these binaries are the ones
# it built (with `-p` alone cargo would unify features differently and build them again).
cargo test --workspace --test engine --locked -- \
  --skip a_reply_through_a_stalled_sound_server \
  --skip a_sound_server_that_stalls_mid_reply \
  --skip with_echo_cancellation_the_reply_the_mic_hears_is_not_sent_once_the_canceller_has_learnt_it
cargo test --workspace --test e2e_conversation --locked

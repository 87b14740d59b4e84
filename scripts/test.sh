#!/usr/bin/env bash
# The README's second command, and exactly what CI runs (.ci/run): installs what is missing,
# then runs the lints and every test — Rust unit and integration tests, the webview end-to-end
# tests (each starts its own Xvfb and WebKitWebDriver), the conversations with an independent
# WebRTC peer on aiortc (tests/peers/) and the webview modules' unit tests.
# The oracle (scripts/oracle/) then checks the client events those conversations sent against
# the official Python SDK's GA types, and feeds SDK-built server events through the decoder.
# Real-time audio tests play and record through a private PulseAudio server with null sinks
# (scripts/pulse.sh), started here and stopped when this script exits; the audio suites run a
# second time on a private PipeWire (scripts/on-pipewire.sh). Last, the .deb is built
# with the Tauri CLI from the tests' debug build (the release build differs only in its
# optimisation, and would compile every dependency again), installed on this machine, and the
# installed app must open its window; the .rpm is built beside it and inspected (rpm, rpmlint).
# Idempotent: a second run installs nothing and rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/deps.sh test
export PATH="$HOME/.cargo/bin:$PATH"
# A bare clone (CI) compiles everything once: incremental caches would only take disk (about
# 3 GB). A checkout that has built before keeps them, for the next change.
if [[ ! -d "${CARGO_TARGET_DIR:-target}/debug" ]]; then
  export CARGO_INCREMENTAL=0
fi

step() {
  local name=$1
  shift
  local started=$SECONDS
  echo "==> $name: $*" >&2
  "$@"
  echo "==> $name: ok in $((SECONDS - started)) s" >&2
}

pulse_dir="${CARGO_TARGET_DIR:-target}/pulse"
slow_call_pid=
impaired_pid=
trap 'for pid in $slow_call_pid $impaired_pid; do kill "$pid" 2>/dev/null || true; done
scripts/pulse.sh stop "$pulse_dir"' EXIT
PULSE_SERVER=$(scripts/pulse.sh start "$pulse_dir")
export PULSE_SERVER

step format cargo fmt --all --check
step lint cargo clippy --workspace --all-targets --locked -- -D warnings
step core-purity scripts/check-core.sh
# The audio crate as every platform but Linux builds it (cpal's streams only): checked here,
# since these machines cannot build for another target.
step cpal-only-audio env RUSTFLAGS="--cfg walkie_cpal_only -D warnings" \
  cargo check -p walkie-audio --locked --lib --target-dir "${CARGO_TARGET_DIR:-target}/cpal-only"
# The end-to-end tests leave what the local provider received under oracle-trace/<test>/, and
# the conversations they saved under tmp/e2e-data/<test>/; the oracle then checks this run's
# only.
rm -rf "${CARGO_TARGET_DIR:-target}/oracle-trace" "${CARGO_TARGET_DIR:-target}/tmp/e2e-data"
# The end-to-end accessibility audit injects axe-core from node_modules.
step npm-tools npm ci --no-audit --no-fund --loglevel=error
# The tests' Python (the oracle's SDKs, and aiortc for the independent peer the tests call).
started=$SECONDS
WALKIE_PYTHON=$(scripts/python-env.sh)
export WALKIE_PYTHON
echo "==> python-env: $WALKIE_PYTHON in $((SECONDS - started)) s" >&2
step rust-build cargo test --workspace --locked --no-run
step rust-tests cargo test --workspace --locked -- --skip slow_call_stays_connected \
  --skip slow_calls_ride_out_loss_jitter_and_blackouts
step oracle scripts/oracle/run.sh
step webview-unit-tests node --test ui/tests/
# The audio engine's tests and the conversations in the real window again, on a private
# PipeWire (with WirePlumber and pipewire-pulse), as most desktops now run. The two engine
# tests that stop the sound server mid-reply are left to PulseAudio: PipeWire itself drops and
# zero-fills whole quanta around such a stall, for any client (docs/benchmarks.md, "PipeWire").
step pipewire-audio scripts/on-pipewire.sh
# Two slow tests wait on the network and the clock, not the CPU: they run beside the package's
# build instead of after the other tests (not beside the webview tests, whose windows they
# slow): the long idle call (crates/local-provider/tests/slow_call.rs, two minutes) and the
# impaired network's scenarios (tests/slow_impaired_network.rs, two replies each).
# Their executables, from the workspace's test build above (a build of one package would
# unify features differently and compile many dependencies a second time).
test_binary() {
  cargo test --workspace --locked --no-run --message-format=json |
    grep '"kind":\["test"\]' | grep "\"name\":\"$1\"" |
    sed -n 's/.*"executable":"\([^"]*\)".*/\1/p'
}
slow_call=$(test_binary slow_call)
impaired=$(test_binary slow_impaired_network)
slow_call_log="${CARGO_TARGET_DIR:-target}/slow_call.log"
impaired_log="${CARGO_TARGET_DIR:-target}/slow_impaired_network.log"
echo "==> slow-call and impaired-network: beside the package's build, their output in $slow_call_log and $impaired_log" >&2
beside_started=$SECONDS
(cd crates/local-provider && exec "$slow_call") >"$slow_call_log" 2>&1 &
slow_call_pid=$!
"$impaired" --nocapture >"$impaired_log" 2>&1 &
impaired_pid=$!
started=$SECONDS
echo "==> package: scripts/package.sh --debug" >&2
packages=$(scripts/package.sh --debug)
deb=$(grep '\.deb$' <<<"$packages")
rpm=$(grep '\.rpm$' <<<"$packages")
echo "==> package: $deb and $rpm in $((SECONDS - started)) s" >&2
step installed-app scripts/check-package.sh "$deb"
step rpm-package scripts/check-rpm.sh "$rpm"
for beside in slow_call impaired; do
  pid_var="${beside}_pid"
  log_var="${beside}_log"
  if ! wait "${!pid_var}"; then
    cat "${!log_var}" >&2
    echo "==> $beside: failed" >&2
    exit 1
  fi
  eval "${beside}_pid="
done
grep '^|' "$impaired_log" >&2 || true
echo "==> slow-call and impaired-network: ok in $((SECONDS - beside_started)) s" >&2
echo "==> all tests passed in $SECONDS s" >&2

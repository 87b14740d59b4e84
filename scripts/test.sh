#!/usr/bin/env bash
# The README's second command, and exactly what CI runs (.ci/run): installs what is missing,
# then runs the lints and every test — Rust unit and integration tests, the webview end-to-end
# tests (each starts its own Xvfb and WebKitWebDriver) and the webview modules' unit tests.
# Real-time audio tests play and record through a private PulseAudio server with null sinks
# (scripts/pulse.sh), started here and stopped when this script exits. Last, the .deb is built
# with the Tauri CLI, installed on this machine, and the installed app must open its window.
# Idempotent: a second run installs nothing and rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/deps.sh test
export PATH="$HOME/.cargo/bin:$PATH"

step() {
  local name=$1
  shift
  local started=$SECONDS
  echo "==> $name: $*" >&2
  "$@"
  echo "==> $name: ok in $((SECONDS - started)) s" >&2
}

pulse_dir="${CARGO_TARGET_DIR:-target}/pulse"
trap 'scripts/pulse.sh stop "$pulse_dir"' EXIT
PULSE_SERVER=$(scripts/pulse.sh start "$pulse_dir")
export PULSE_SERVER

step format cargo fmt --all --check
step lint cargo clippy --workspace --all-targets --locked -- -D warnings
step rust-tests cargo test --workspace --locked
step webview-unit-tests node --test ui/tests/
started=$SECONDS
echo "==> package: scripts/package.sh" >&2
package=$(scripts/package.sh)
echo "==> package: $package in $((SECONDS - started)) s" >&2
step installed-app scripts/check-package.sh "$package"
echo "==> all tests passed in $SECONDS s" >&2

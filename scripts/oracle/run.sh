#!/usr/bin/env bash
# The oracle step of scripts/test.sh: checks what Walkie sent in the end-to-end tests against
# the official SDK's GA Realtime types, and feeds SDK-built server events through Walkie's
# decoder (see walkie_oracle.py for what is checked and why).
#
#   scripts/oracle/run.sh [TRACE_ROOT [SAVED_ROOT]]
#
# TRACE_ROOT defaults to ${CARGO_TARGET_DIR:-target}/oracle-trace, where the end-to-end tests
# have the local provider write its traces (WALKIE_LOCAL_TRACE); SAVED_ROOT to
# ${CARGO_TARGET_DIR:-target}/tmp/e2e-data, where they save their conversations, whose AG-UI
# events and messages agui_oracle.py checks against the AG-UI SDK. The Python environment is the
# tests' venv (scripts/python-env.sh), with the pinned requirements.txt.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$repo"
export PYTHONDONTWRITEBYTECODE=1

target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$repo/$target" ;; esac
trace_root="${1:-$target/oracle-trace}"
saved_root="${2:-$target/tmp/e2e-data}"
python=$(scripts/python-env.sh)

# The oracle's own logic first: a check that lets bad events through must not run at all.
if ! unit=$(cd scripts/oracle && "$python" -m unittest test_walkie_oracle test_agui_oracle 2>&1); then
  echo "$unit" >&2
  echo "oracle: FAILED: its own unit tests" >&2
  exit 1
fi
echo "oracle: its own unit tests: $(echo "$unit" | grep -E '^Ran ' | head -n 1), OK" >&2

cargo build --quiet --locked -p walkie-openai --example decode_server_events --example known_names
"$python" scripts/oracle/walkie_oracle.py --trace-root "$trace_root" \
  --names "$target/debug/examples/known_names" \
  --decoder "$target/debug/examples/decode_server_events"
"$python" scripts/oracle/agui_oracle.py --root "$saved_root"

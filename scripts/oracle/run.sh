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
# events and messages agui_oracle.py checks against the AG-UI SDK. The Python environment is a
# venv under the cargo target dir, made once with the pinned requirements.txt and made again
# only when that file or the interpreter changes. Debian's /usr/bin/python3 is preferred (it is
# what scripts/deps.sh installs, with python3-venv); any python3 >= 3.9 on PATH will do.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$repo"
export PYTHONDONTWRITEBYTECODE=1

target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$repo/$target" ;; esac
trace_root="${1:-$target/oracle-trace}"
saved_root="${2:-$target/tmp/e2e-data}"
venv="$target/oracle-venv"
requirements=scripts/oracle/requirements.txt

if [ -x /usr/bin/python3 ]; then python=/usr/bin/python3; else python=$(command -v python3); fi
wanted="$(sha256sum "$requirements" | cut -d' ' -f1) $("$python" -c 'import sys; print(sys.executable, sys.version.split()[0])')"
stamp="$venv/.walkie-oracle-stamp"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
  echo "oracle: making $venv with $python" >&2
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$requirements"
  echo "$wanted" >"$stamp"
fi

# The oracle's own logic first: a check that lets bad events through must not run at all.
if ! unit=$(cd scripts/oracle && "$venv/bin/python" -m unittest test_walkie_oracle test_agui_oracle 2>&1); then
  echo "$unit" >&2
  echo "oracle: FAILED: its own unit tests" >&2
  exit 1
fi
echo "oracle: its own unit tests: $(echo "$unit" | grep -E '^Ran ' | head -n 1), OK" >&2

cargo build --quiet --locked -p walkie-openai --example decode_server_events --example known_names
"$venv/bin/python" scripts/oracle/walkie_oracle.py --trace-root "$trace_root" \
  --names "$target/debug/examples/known_names" \
  --decoder "$target/debug/examples/decode_server_events"
"$venv/bin/python" scripts/oracle/agui_oracle.py --root "$saved_root"

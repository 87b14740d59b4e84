#!/usr/bin/env bash
# Benchmark walkie-session against pydantic-ai's realtime session in one run.
# The virtual environment lives under target/ (never committed); cargo uses target/session so it
# does not hold the main target directory's lock.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$repo/target/session}"
venv="$CARGO_TARGET_DIR/bench-venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
cd "$here"
export PYTHONDONTWRITEBYTECODE=1
exec "$venv/bin/python" compare.py "$@"

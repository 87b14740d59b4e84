#!/usr/bin/env bash
# The tests' Python environment: a venv under the cargo target dir with the pinned packages of
# scripts/oracle/requirements.txt (the official OpenAI SDK and the AG-UI SDK, for the oracle)
# and tests/peers/requirements.txt (aiortc, for the independent WebRTC peer the tests call).
# Made once, and made again only when a requirements file or the interpreter changes; prints
# the venv's python. Debian's /usr/bin/python3 is preferred (scripts/deps.sh installs it with
# python3-venv); any python3 >= 3.9 on PATH will do.
#
#   scripts/python-env.sh    prints e.g. /path/to/target/python-venv/bin/python
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
export PYTHONDONTWRITEBYTECODE=1

target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$repo/$target" ;; esac
venv="$target/python-venv"
requirements=(scripts/oracle/requirements.txt tests/peers/requirements.txt)

if [ -x /usr/bin/python3 ]; then python=/usr/bin/python3; else python=$(command -v python3); fi
wanted="$(cat "${requirements[@]}" | sha256sum | cut -d' ' -f1) $("$python" -c 'import sys; print(sys.executable, sys.version.split()[0])')"
stamp="$venv/.walkie-stamp"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
  echo "python-env: making $venv with $python" >&2
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
    --only-binary=:all: "${requirements[@]/#/-r}"
  echo "$wanted" >"$stamp"
fi
echo "$venv/bin/python"

#!/usr/bin/env bash
# The README's first command: installs what is missing, builds Walkie (release) and starts it.
# Idempotent: a second run installs nothing and rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
  scripts/deps.sh build
else
  scripts/deps.sh headless
fi
export PATH="$HOME/.cargo/bin:$PATH"

cargo build --release --locked --bin walkie
app="${CARGO_TARGET_DIR:-target}/release/walkie"

if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
  exec "$app" "$@"
fi
echo "start: no display here (DISPLAY and WAYLAND_DISPLAY are unset); starting Walkie on a" >&2
echo "start: virtual display instead. Run this from a desktop session to see the window." >&2
exec xvfb-run -a "$app" "$@"

#!/usr/bin/env bash
# Builds Walkie's .deb with the Tauri CLI (npm @tauri-apps/cli: a prebuilt binary, works
# offline) and prints the package's path. AppImage is not built: its tooling is downloaded
# from GitHub at bundle time, which these machines cannot reach.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

npm ci --no-audit --no-fund --loglevel=error >&2
npx tauri build --bundles deb --ci >&2
target_dir="${CARGO_TARGET_DIR:-target}"
package=$(ls -t "$target_dir"/release/bundle/deb/*.deb | head -n 1)
echo "$package"

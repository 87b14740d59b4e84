#!/usr/bin/env bash
# Builds Walkie's .deb and .rpm with the Tauri CLI (npm @tauri-apps/cli: a prebuilt binary,
# works offline; its rpm needs no rpmbuild) and prints the packages' paths, the .deb's first.
# AppImage and Flatpak are not built: their tooling is downloaded at bundle time (from GitHub,
# from Flathub), which these machines cannot reach.
#
#   scripts/package.sh           the release package, the one to install
#   scripts/package.sh --debug   the same package from the debug build the tests already made
#                                (what scripts/test.sh installs and opens: the release build
#                                would compile every dependency again, most of the test's time)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

profile=release
build_args=()
case "${1:-}" in
  "") ;;
  --debug) profile=debug build_args=(--debug) ;;
  *) echo "usage: $0 [--debug]" >&2; exit 2 ;;
esac

npm ci --no-audit --no-fund --loglevel=error >&2
npx tauri build "${build_args[@]}" --bundles deb,rpm --ci >&2
target_dir="${CARGO_TARGET_DIR:-target}"
ls -t "$target_dir/$profile"/bundle/deb/*.deb | head -n 1
ls -t "$target_dir/$profile"/bundle/rpm/*.rpm | head -n 1

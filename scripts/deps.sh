#!/usr/bin/env bash
# Installs what Walkie needs on Debian 12 / Ubuntu, and nothing that is already there.
#
#   scripts/deps.sh build     the packages to build and run the app
#   scripts/deps.sh headless  the above plus Xvfb, to start the app where there is no display
#   scripts/deps.sh test    the above plus what the tests drive: Xvfb, WebKitWebDriver,
#                           PulseAudio, Node.js (for the webview's unit tests), rpm and
#                           rpmlint (the .rpm is inspected, not installed), the desktop
#                           portal's frontend (the Wayland shortcut's tests run it), sway
#                           and grim (a headless Wayland compositor for the Wayland smoke test),
#                           PipeWire with WirePlumber and pipewire-pulse (the audio suites'
#                           second server)
#                           D-Bus and GNOME Keyring (a private Secret Service per test),
#                           Python 3 with venv (the oracle's venv of the pinned OpenAI SDK)
#   scripts/deps.sh bench   the above plus Chromium, the browser peer of bench/peer/
#   scripts/deps.sh platforms  the build packages plus what scripts/check-platforms.sh needs:
#                           Debian's second Rust toolchain with its standard library's
#                           sources, mingw-w64 and cmake (Windows' C parts), clang (macOS's
#                           Objective-C part)
#
# Idempotent: a second run checks dpkg and returns in well under a second.
# The list is the union measured in shared/reference/build-environment.md §1.
set -euo pipefail

profile=${1:-build}

build_pkgs=(
  libwebkit2gtk-4.1-dev libgtk-3-dev libayatana-appindicator3-dev librsvg2-dev
  libsoup-3.0-dev libjavascriptcoregtk-4.1-dev libxdo-dev libssl-dev pkg-config
  build-essential file curl ca-certificates
  libasound2-dev libopus-dev libpulse-dev
)
test_pkgs=(
  xvfb xauth webkit2gtk-driver imagemagick x11-apps fonts-dejavu-core xdotool
  pulseaudio pulseaudio-utils libasound2-plugins
  dbus gnome-keyring
  python3 python3-venv
  rpm rpmlint cpio
  xdg-desktop-portal sway grim
  pipewire wireplumber pipewire-pulse
)

case "$profile" in
  build) wanted=("${build_pkgs[@]}") ;;
  headless) wanted=("${build_pkgs[@]}" xvfb xauth) ;;
  test) wanted=("${build_pkgs[@]}" "${test_pkgs[@]}") ;;
  bench) wanted=("${build_pkgs[@]}" "${test_pkgs[@]}" chromium) ;;
  platforms) wanted=("${build_pkgs[@]}" rustc-web cargo-web rust-web-src cmake
    gcc-mingw-w64-x86-64-posix g++-mingw-w64-x86-64-posix clang) ;;
  *) echo "usage: $0 [build|headless|test|bench|platforms]" >&2; exit 2 ;;
esac

# Node.js runs the webview modules' unit tests (node:test); any distribution's node >= 18 will do.
# npm runs the Tauri CLI that builds the .deb.
if [ "$profile" = test ] || [ "$profile" = bench ]; then
  command -v node >/dev/null 2>&1 || wanted+=(nodejs)
  command -v npm >/dev/null 2>&1 || wanted+=(npm)
fi

missing=()
for p in "${wanted[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [ "$status" = "install ok installed" ] || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then sudo=(sudo); fi
  echo "deps: installing ${missing[*]}" >&2
  "${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
    -o DPkg::Lock::Timeout=600 "${missing[@]}"
fi

# Rust: the toolchain is rustup's stable; install it for this user when cargo is missing.
if ! command -v cargo >/dev/null 2>&1; then
  if [ -x "$HOME/.cargo/bin/cargo" ]; then
    :
  else
    echo "deps: installing the Rust toolchain with rustup" >&2
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal \
      --component rustfmt,clippy
  fi
fi

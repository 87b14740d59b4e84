#!/usr/bin/env bash
# Checks Walkie for the platforms these machines cannot run: Windows (the workspace
# type-checked for x86_64-pc-windows-gnu, and walkie.exe compiled and linked) and macOS (the
# crates that can be, type-checked only: there is no macOS SDK to compile C against or link).
#
#   scripts/check-platforms.sh [windows|macos|all]     (default: all)
#
# Why Debian's second toolchain: rustup here has the Linux standard library alone and cannot
# fetch another. Debian's rustc-web ships the standard library's sources (rust-web-src), which
# `-Zbuild-std` compiles for the target (RUSTC_BOOTSTRAP lets a stable compiler take that
# flag); mingw-w64 compiles the C parts for Windows. Its build goes to its own folder,
# target/platforms/, and takes several minutes on 2 cores: it is not in the test command (see
# docs/benchmarks.md for its time and result).
set -euo pipefail
cd "$(dirname "$0")/.."

which=${1:-all}
case "$which" in
  windows | macos | all) ;;
  *) echo "usage: $0 [windows|macos|all]" >&2; exit 2 ;;
esac

scripts/deps.sh platforms

export RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc RUSTC_BOOTSTRAP=1
cargo=/usr/bin/cargo
target_dir="${CARGO_TARGET_DIR:-target}/platforms"
status=0

# The standard library built for the target; panic=abort is not needed (unwind is built too).
build_std=(-Zbuild-std=std,panic_abort)

if [ "$which" = windows ] || [ "$which" = all ]; then
  export CC_x86_64_pc_windows_gnu=x86_64-w64-mingw32-gcc-posix
  export CXX_x86_64_pc_windows_gnu=x86_64-w64-mingw32-g++-posix
  export AR_x86_64_pc_windows_gnu=x86_64-w64-mingw32-ar
  export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc-posix
  started=$SECONDS
  echo "==> windows: cargo check --workspace --target x86_64-pc-windows-gnu" >&2
  if "$cargo" check --workspace --locked --target x86_64-pc-windows-gnu "${build_std[@]}" \
    --target-dir "$target_dir"; then
    echo "==> windows: the workspace type-checks ($((SECONDS - started)) s)" >&2
    started=$SECONDS
    echo "==> windows: cargo build --bin walkie (compile and link walkie.exe)" >&2
    if "$cargo" build --locked --bin walkie --target x86_64-pc-windows-gnu "${build_std[@]}" \
      --target-dir "$target_dir"; then
      exe="$target_dir/x86_64-pc-windows-gnu/debug/walkie.exe"
      echo "==> windows: linked $exe ($(file -b "$exe" | cut -d, -f1-2)) in $((SECONDS - started)) s" >&2
    else
      echo "==> windows: the link failed (above)" >&2
      status=1
    fi
  else
    echo "==> windows: the workspace does not type-check (above)" >&2
    status=1
  fi
fi

if [ "$which" = macos ] || [ "$which" = all ]; then
  # Type-checked only, and only the crates whose dependencies build no C against the macOS SDK,
  # which cannot be had here: ring's C (under rustls, so the settings, the tool servers, the
  # WebRTC stack, the local provider and the app itself) includes the SDK's C library headers.
  # Objective-C with no headers (objc2's exception helper) compiles with clang; Opus is never
  # linked in a type-check, so its build is pointed at an empty folder instead of building it.
  export CC_aarch64_apple_darwin=clang
  export LIBOPUS_LIB_DIR="$target_dir/no-opus"
  mkdir -p "$LIBOPUS_LIB_DIR"
  checked=(walkie-agui walkie-dsp walkie-session walkie-conversation walkie-store walkie-openai
    walkie-audio walkie-picture)
  started=$SECONDS
  echo "==> macos: cargo check ${checked[*]} --target aarch64-apple-darwin" >&2
  if "$cargo" check --locked --lib "${checked[@]/#/-p=}" --target aarch64-apple-darwin \
    "${build_std[@]}" --target-dir "$target_dir"; then
    echo "==> macos: ${#checked[@]} crates type-check ($((SECONDS - started)) s); walkie-settings," \
      "walkie-mcp, walkie-rtc, walkie-local and walkie need ring's C built against the macOS SDK" >&2
  else
    echo "==> macos: they do not type-check (above)" >&2
    status=1
  fi
fi

exit "$status"

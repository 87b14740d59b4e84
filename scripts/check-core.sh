#!/usr/bin/env bash
# The core crates stay pure (DESIGN.md): no clock reads, no threads, no tokio, no sockets, no
# files, no processes, no environment. Time comes in as an argument and I/O belongs to a driver.
# This check fails on a forbidden use in a core crate's sources, or a forbidden crate anywhere in
# its normal dependency tree. A use the rule permits (a crate's command-line tool is its own
# driver) is listed in scripts/core-allow.txt as "path<TAB>pattern<TAB>reason".
set -euo pipefail
cd "$(dirname "$0")/.."

core_crates=(agui session openai conversation dsp picture)
# Patterns are extended regular expressions over the source text.
forbidden_uses=(
  'Instant::now' 'SystemTime::now' 'chrono::(Local|Utc)::now'
  'tokio' 'async_std' 'smol::'
  'std::thread' 'thread::spawn'
  'std::net' 'std::fs' 'File::(open|create)' 'std::process' 'std::env'
  'std::io::(stdin|stdout|stderr)'
)
forbidden_crates=(tokio mio socket2 async-std smol reqwest hyper axum webrtc cpal libpulse-binding alsa rand getrandom)

allowed() { # path pattern
  grep -qxF "$1	$2" <(cut -f1,2 scripts/core-allow.txt | grep -v '^#')
}

failures=0
for crate in "${core_crates[@]}"; do
  dir=crates/$crate
  [ -d "$dir/src" ] || { echo "check-core: $dir/src is missing" >&2; failures=$((failures + 1)); continue; }
  for pattern in "${forbidden_uses[@]}"; do
    while IFS=: read -r path line _; do
      [ -n "$path" ] || continue
      if ! allowed "$path" "$pattern"; then
        echo "check-core: $path:$line uses '$pattern' (a core crate reads no clock and does no I/O)" >&2
        failures=$((failures + 1))
      fi
    done < <(grep -rnE --include='*.rs' "$pattern" "$dir/src" || true)
  done
  package=$(sed -n 's/^name = "\(.*\)"/\1/p' "$dir/Cargo.toml" | head -n 1)
  tree=$(cargo tree --locked --offline -p "$package" -e normal --prefix none --format '{p}' 2>/dev/null ||
    cargo tree --locked -p "$package" -e normal --prefix none --format '{p}')
  for name in "${forbidden_crates[@]}"; do
    if grep -qE "^$name v" <<<"$tree"; then
      echo "check-core: $package depends on $name (a core crate takes no I/O dependency)" >&2
      failures=$((failures + 1))
    fi
  done
done

# The app is built without the local provider's test bench (fault injection, the scripted
# client): only tests and benchmarks enable it.
app_features=$(cargo tree --locked --offline -p walkie -e normal,build -i walkie-local --format '{p} [{f}]' 2>/dev/null ||
  cargo tree --locked -p walkie -e normal,build -i walkie-local --format '{p} [{f}]')
if grep -q 'test-bench' <<<"$app_features"; then
  echo "check-core: the app's build enables walkie-local's test-bench feature (faults belong to tests only)" >&2
  failures=$((failures + 1))
fi

if [ "$failures" -gt 0 ]; then
  echo "check-core: $failures violation(s); move the I/O to a driver or allow it in scripts/core-allow.txt with a reason" >&2
  exit 1
fi
echo "check-core: ${core_crates[*]} are pure" >&2

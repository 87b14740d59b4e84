#!/usr/bin/env bash
# Builds the AFL++ fuzz targets (afl.rs, stable toolchain) and runs each for N seconds, one at a
# time on one core under `nice -n 19`, then prints per target: execs, run time, execs/s,
# crashes, hangs, corpus size. Crashing inputs stay in fuzz/out/<target>/default/crashes/.
# Usage: fuzz/run.sh [seconds-per-target] [target…]     (default 300 s, every target)
# Needs cargo-afl (installed here if missing) and the seeds (made here by fuzz/seeds.sh if
# missing).
set -euo pipefail
cd "$(dirname "$0")"
fuzz_dir=$PWD
seconds=${1:-300}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(server_event client_event sdp_answer agui journal)
cargo_afl_version=0.18.2

if ! cargo afl --version 2>/dev/null | grep -q "$cargo_afl_version"; then
    nice -n 19 cargo install cargo-afl --locked --version "$cargo_afl_version"
fi
# cargo-afl builds AFL++ from the source it ships on first use; this is a no-op once built.
cargo afl config --build > /dev/null 2>&1 || true

[ -d seeds/journal ] || ./seeds.sh

# The instrumented builds go to fuzz/target, never to the shared target dir.
export CARGO_TARGET_DIR=$fuzz_dir/target
nice -n 19 cargo afl build --release --quiet

# AFL++'s own JSON dictionary, from the AFL++ that cargo-afl built.
afl_fuzz=$(find "${XDG_DATA_HOME:-$HOME/.local/share}/afl.rs" -path '*/afl/bin/afl-fuzz' | head -1)
afl_share=$(dirname "$(dirname "$afl_fuzz")")/share/afl
json_dict=$afl_share/dictionaries/json.dict

echo "fuzzing ${targets[*]} for $seconds s each; load before: $(uptime)"
results=()
for target in "${targets[@]}"; do
    dicts=(-x "seeds/$target.dict")
    if [ "$target" != sdp_answer ] && [ -f "$json_dict" ]; then
        dicts+=(-x "$json_dict")
    fi
    rm -rf "out/$target"
    mkdir -p out
    # One core, no UI, no CPU pinning (the machine is shared), stop after $seconds.
    AFL_NO_UI=1 AFL_NO_AFFINITY=1 AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 \
        AFL_QUIET=1 nice -n 19 cargo afl fuzz -V "$seconds" -i "seeds/$target" -o "out/$target" \
        "${dicts[@]}" -- "target/release/$target" > "out-$target.log" 2>&1 || {
        echo "afl-fuzz failed for $target; see fuzz/out-$target.log" >&2
        tail -20 "out-$target.log" >&2
        exit 1
    }
    stats=out/$target/default/fuzzer_stats
    stat() { awk -F' *: *' -v k="$1" '$1 == k { print $2 }' "$stats"; }
    load=$(awk '{ print $1 " " $2 " " $3 }' /proc/loadavg)
    results+=("$(printf '| %-12s | %11s | %6s | %8s | %7s | %5s | %6s | %s |' "$target" \
        "$(stat execs_done)" "$(stat run_time)" "$(stat execs_per_sec)" \
        "$(stat saved_crashes)" "$(stat saved_hangs)" "$(stat corpus_count)" "$load")")
    echo "${results[-1]}"
done
echo "load after: $(uptime)"
echo "| target       | execs       | run s  | execs/s  | crashes | hangs | corpus | load at end (1/5/15 min) |"
echo "|--------------|-------------|--------|----------|---------|-------|--------|--------------------------|"
printf '%s\n' "${results[@]}"

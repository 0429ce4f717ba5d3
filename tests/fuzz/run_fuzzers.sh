#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz in a separate clang build folder and runs each for
# SECONDS (default 60), PARALLEL of them at a time. Exits non-zero when a build fails or any fuzzer finds a crash, a leak,
# a hang (-timeout) or a sanitizer report; the crashing input is left in
# <build>/fuzz-artifacts/<fuzzer>/ (reproduce: <build>/tests/fuzz/<fuzzer> <that file>).
#
# Usage: tests/fuzz/run_fuzzers.sh [SECONDS]
# Environment: BUILD_DIR (default <repo>/build-fuzz), CXX (default clang++-14), JOBS (default 2),
#              FUZZERS (default "sse_parser_fuzz plan_reader_fuzz http_request_fuzz
#              shard_upload_fuzz"),
#              PARALLEL (fuzzers run side by side, default nproc),
#              FUZZ_ARGS (extra libFuzzer flags, e.g. "-jobs=4 -workers=4").
# Needs the Debian packages clang-14 and libclang-rt-14-dev. See tests/fuzz/README.md.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
seconds=${1:-60}
build=${BUILD_DIR:-$root/build-fuzz}
cxx=${CXX:-clang++-14}
jobs=${JOBS:-2}
fuzzers=${FUZZERS:-sse_parser_fuzz plan_reader_fuzz http_request_fuzz shard_upload_fuzz}

if ! [[ "$seconds" =~ ^[0-9]+$ ]] || [ "$seconds" -lt 1 ]; then
  echo "run_fuzzers.sh: SECONDS must be a positive integer, got '$seconds'" >&2
  exit 2
fi
if ! command -v "$cxx" > /dev/null; then
  echo "run_fuzzers.sh: $cxx not found (apt-get install -y clang-14 libclang-rt-14-dev)" >&2
  exit 2
fi
if ! grep -Eq '^[[:space:]]*add_subdirectory\(fuzz\)' "$root/tests/CMakeLists.txt"; then
  echo "run_fuzzers.sh: tests/CMakeLists.txt does not include tests/fuzz (add_subdirectory(fuzz))" >&2
  exit 2
fi

# -g1: line tables are all a finding's stack trace needs (and a quarter of -g's build work).
# Ninja (as the presets); a folder configured with another generator is made anew.
if [ -f "$build/CMakeCache.txt" ] && ! grep -qx 'CMAKE_GENERATOR:INTERNAL=Ninja' "$build/CMakeCache.txt"; then
  rm -rf "$build"
fi
mkdir -p "$build"
cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$cxx" \
  -DLLMCAP_FUZZ=ON -DLLMCAP_WERROR=OFF -DLLMCAP_BUILD_BENCH=OFF -DLLMCAP_DEBUG_INFO=-g1 \
  > "$build/cmake.log" 2>&1 || { cat "$build/cmake.log" >&2; exit 1; }
# shellcheck disable=SC2086
cmake --build "$build" -j "$jobs" --target $fuzzers

# Every seed and every past finding (corpus/regressions/<fuzzer>/) once, before fuzzing.
replay=$(printf 'fuzz_%s_replay|' $fuzzers)
ctest --test-dir "$build" -L '^fuzz$' -R "^(${replay%|})\$" --output-on-failure

# The fuzzers run side by side, PARALLEL at a time (default: the number of CPUs), each for
# SECONDS of wall clock on a core of its own; their reports are printed in the listed order.
fuzz_one() {
  local f=$1
  local seeds="$root/tests/fuzz/corpus/$f"
  local regressions="$root/tests/fuzz/corpus/regressions/$f"
  [ -d "$regressions" ] || regressions=""
  local work="$build/fuzz-corpus/$f"  # grows across runs; seeds stay read-only in the repo
  local artifacts="$build/fuzz-artifacts/$f"
  mkdir -p "$work" "$artifacts"
  local rc=0
  # shellcheck disable=SC2086
  "$build/tests/fuzz/$f" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -max_len=65536 -print_final_stats=1 -artifact_prefix="$artifacts/" ${FUZZ_ARGS:-} \
    "$work" "$seeds" $regressions > "$build/fuzz-$f.log" 2>&1 || rc=$?
  echo "$rc" > "$build/fuzz-$f.status"
}
parallel=${PARALLEL:-$(nproc 2>/dev/null || echo 1)}
running=0
rm -f "$build"/fuzz-*.status
for f in $fuzzers; do
  if [ "$running" -ge "$parallel" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  echo "== $f for ${seconds}s (corpus $build/fuzz-corpus/$f, seeds $root/tests/fuzz/corpus/$f)"
  fuzz_one "$f" &
  running=$((running + 1))
done
wait || true
failed=()
for f in $fuzzers; do
  echo "== $f"
  if [ "$(cat "$build/fuzz-$f.status" 2>/dev/null)" = 0 ]; then
    grep -E '^(#[0-9]+[[:space:]]+DONE|stat::number_of_executed_units|stat::peak_rss_mb)' \
      "$build/fuzz-$f.log" || true
  else
    echo "!! $f FAILED (log: $build/fuzz-$f.log, artifacts: $build/fuzz-artifacts/$f)"
    tail -40 "$build/fuzz-$f.log"
    failed+=("$f")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "run_fuzzers.sh: failures in: ${failed[*]}" >&2
  exit 1
fi
echo "run_fuzzers.sh: all fuzzers ran ${seconds}s without a finding"

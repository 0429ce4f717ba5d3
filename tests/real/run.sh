#!/usr/bin/env bash
# The real-server lane (`make test-real`; tests/real/README.md): llmcapd against a real
# llama.cpp llama-server on this machine's CPU. Not part of `make test`.
#   1. builds llama-server once into the cache (build_llama_server.sh; ~7 min on 2 cores),
#   2. writes a tiny random-weight llama GGUF once into the cache (make_model.py),
#   3. builds the release llmcapd if missing (build dir build-real-rel),
#   4. runs real_lane.py: server up, protocol probes, plan.json through llmcapd serve + REST,
#      per-request comparison with the server's own timings.
# (Not LLMCAP_*: llmcapd reads every LLMCAP_<KEY> variable as a setting and refuses unknown ones.)
# Environment: TEST_REAL_CACHE (cache root), LLMCAPD (an llmcapd binary to use instead),
# TEST_REAL_OUT (output folder, default build-real-rel/real-lane), TEST_REAL_JOBS (-j).
set -euo pipefail
export PYTHONDONTWRITEBYTECODE=1
cd "$(dirname "$0")/../.."
t_start=$(date +%s)
cache_root="${TEST_REAL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/llmcap}"
jobs="${TEST_REAL_JOBS:-2}"
log() { echo "[test-real] $*" >&2; }

llama_server=$(tests/real/build_llama_server.sh)
src_dir="$(dirname "$(dirname "$(dirname "$llama_server")")")/src"
t_built=$(date +%s)

# numpy for gguf-py comes from Debian (python3-numpy); the system interpreter sees it.
py=/usr/bin/python3
if ! "$py" -c 'import numpy' 2>/dev/null; then
  log "installing python3-numpy"
  if [[ $(id -u) -eq 0 ]]; then apt-get install -y -q python3-numpy >/dev/null
  else sudo apt-get install -y -q python3-numpy >/dev/null; fi
fi
model="$cache_root/models/llmcap-random-llama-256x4-s42.gguf"
if [[ ! -f "$model" ]]; then
  mkdir -p "$(dirname "$model")"
  log "writing the random-weight model $model"
  "$py" tests/real/make_model.py --llama-src "$src_dir" --out "$model" \
    --embd 256 --layers 4 --heads 4 --ff 768 --seed 42 >/dev/null
fi

llmcapd="${LLMCAPD:-build-real-rel/server/llmcapd}"
if [[ ! -x "$llmcapd" ]]; then
  log "building the release llmcapd in build-real-rel"
  cmake -S . -B build-real-rel -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLLMCAP_BUILD_TESTS=OFF >/dev/null
  cmake --build build-real-rel --target llmcapd -j "$jobs"
  llmcapd=build-real-rel/server/llmcapd
fi
t_ready=$(date +%s)

out="${TEST_REAL_OUT:-build-real-rel/real-lane}"
rm -rf "$out"
rc=0
"$py" tests/real/real_lane.py --llama-server "$llama_server" --model "$model" \
  --llmcapd "$llmcapd" --out "$out" || rc=$?
t_end=$(date +%s)
log "build/setup $((t_ready - t_start)) s (llama-server $((t_built - t_start)) s), lane $((t_end - t_ready)) s, total $((t_end - t_start)) s"
exit $rc

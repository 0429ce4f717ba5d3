#!/usr/bin/env bash
# Builds llama.cpp's llama-server (CPU only, offline) once into a cache folder and prints
# the binary's path on stdout. The source comes from the npm package node-llama-cpp, whose
# llama/gitRelease.bundle is a git bundle of llama.cpp (tests/real/README.md). Rerunning with the
# binary already built does nothing but print the path.
#
# Environment:
#   TEST_REAL_CACHE       cache root (default ${XDG_CACHE_HOME:-~/.cache}/llmcap)
#   TEST_REAL_NODE_LLAMA_CPP   npm version spec of node-llama-cpp (default 3.22.1)
#   TEST_REAL_JOBS        build parallelism (default 2: the machine is shared)
set -euo pipefail

cache_root="${TEST_REAL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/llmcap}"
npm_spec="node-llama-cpp@${TEST_REAL_NODE_LLAMA_CPP:-3.22.1}"
jobs="${TEST_REAL_JOBS:-2}"
pkg_dir="$cache_root/npm/${npm_spec//@/-}"
log() { echo "[build_llama_server] $*" >&2; }
here="$(cd "$(dirname "$0")" && pwd)"

mkdir -p "$cache_root/npm" "$cache_root/llama.cpp"

# 1. The npm tarball, unpacked once (only its llama/ folder is needed).
bundle="$pkg_dir/package/llama/gitRelease.bundle"
if [[ ! -f "$bundle" ]]; then
  log "fetching $npm_spec with npm pack"
  mkdir -p "$pkg_dir"
  tarball=$(cd "$pkg_dir" && npm pack --silent "$npm_spec" | tail -n1)
  tar -xzf "$pkg_dir/$tarball" -C "$pkg_dir" package/llama
  rm -f "$pkg_dir/$tarball"
fi

# 2. The llama.cpp source at the bundle's commit; the cache folder is named after it so a
#    new node-llama-cpp release builds next to, not over, the old one.
commit=$(git bundle list-heads "$bundle" | awk '$2 == "HEAD" {print $1; exit}')
[[ -n "$commit" ]] || { log "no HEAD in $bundle"; exit 1; }
work="$cache_root/llama.cpp/${commit:0:12}"
src="$work/src"
bin="$work/build/bin/llama-server"
if [[ -x "$bin" ]]; then
  echo "$bin"
  exit 0
fi
if [[ ! -d "$src/.git" ]]; then
  log "cloning llama.cpp ${commit:0:12} from the bundle"
  rm -rf "$src"
  git -c advice.detachedHead=false clone --quiet "$bundle" "$src"
  git -C "$src" -c advice.detachedHead=false checkout --quiet "$commit"
fi

# 3. CPU-only build of just llama-server. PREBUILT_UI/BUILD_UI off: the default fetches the
#    web UI from Hugging Face, which is unreachable here and not needed for the API.
#    LLAMA_CURL is deprecated in this version (model download is not needed either).
log "building llama-server with -j$jobs (about 7 min on 2 cores)"
cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
  -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_OPENSSL=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON \
  -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=OFF \
  -DCMAKE_PROJECT_INCLUDE="$here/llama_fast_build.cmake" >"$work/cmake.log" 2>&1 ||
  { tail -n 30 "$work/cmake.log" >&2; exit 1; }
cmake --build "$work/build" --target llama-server -j "$jobs" >"$work/build.log" 2>&1 ||
  { tail -n 30 "$work/build.log" >&2; exit 1; }
[[ -x "$bin" ]] || { log "build finished but $bin is missing"; exit 1; }
echo "$bin"

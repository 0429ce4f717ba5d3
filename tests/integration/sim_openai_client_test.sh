#!/usr/bin/env bash
# The simulator through the official `openai` npm client (issue 40 item 8): stop strings, n,
# logprobs (streamed and not), tools with tool_choice "auto" (refused with vLLM's 400) and
# GET /version, checked by sim_openai_client_test.mjs against `llmcapd sim --port 0`.
# The client comes from npm, installed once into a cache folder (LLMCAP_NPM_CACHE, default
# ~/.cache/llmcap/npm; a few seconds the first time). Without npm/node (install them with
# deploy/install-deps.sh --with-test-tools) the test is skipped (exit 77); an npm install that
# fails is a failure, not a skip.
# Usage: sim_openai_client_test.sh LLMCAPD
set -euo pipefail
llmcapd=${1:?usage: sim_openai_client_test.sh LLMCAPD}
version=5.7.0  # no dependencies; runs on Debian bookworm's Node.js 18 (global fetch)
cache=${LLMCAP_NPM_CACHE:-$HOME/.cache/llmcap/npm}
prefix="$cache/openai-$version"

if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
  echo "sim_openai_client_test: SKIPPED: npm/node not installed (deploy/install-deps.sh --with-test-tools)"
  exit 77
fi
mkdir -p "$cache"
if [[ ! -f "$prefix/node_modules/openai/package.json" ]]; then
  # One installer at a time (ctest -j runs lanes' copies of this test side by side).
  exec 9>"$cache/.install.lock"
  flock -w 200 9
  if [[ ! -f "$prefix/node_modules/openai/package.json" ]]; then
    echo "sim_openai_client_test: installing openai@$version into $prefix"
    rm -rf "$prefix.partial"
    timeout 180 npm install --prefix "$prefix.partial" --no-audit --no-fund --no-save \
      --loglevel=error --cache "$cache/npm-cache" "openai@$version" ||
      { echo "sim_openai_client_test: FAILED: npm install openai@$version"; exit 1; }
    mv "$prefix.partial" "$prefix"
  fi
  exec 9>&-
fi

export NO_UPDATE_NOTIFIER=1
exec timeout 120 node "$(dirname "$0")/sim_openai_client_test.mjs" "$llmcapd" "$prefix"

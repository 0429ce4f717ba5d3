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
source "$(dirname "$0")/npm_tool.sh"
npm_tool_install sim_openai_client_test "openai@$version" "openai-$version" \
  node_modules/openai/package.json
prefix=$npm_tool_prefix

export NO_UPDATE_NOTIFIER=1
exec timeout 120 node "$(dirname "$0")/sim_openai_client_test.mjs" "$llmcapd" "$prefix"

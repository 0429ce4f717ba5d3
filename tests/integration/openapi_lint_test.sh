#!/usr/bin/env bash
# docs/openapi.json checked by a real OpenAPI validator: Redocly CLI's `lint` (the OpenAPI 3.0.3
# structure of every object plus the rules in openapi_redocly.yaml, all errors).
# Redocly CLI comes from npm, installed once into a cache folder (LLMCAP_NPM_CACHE, default
# ~/.cache/llmcap/npm; ~30 s and ~170 MB the first time, then ~2 s). Without npm (install it with
# deploy/install-deps.sh --with-test-tools) the test is skipped (exit 77); an npm install that
# fails is a failure, not a skip.
# Usage: openapi_lint_test.sh SOURCE_DIR
set -euo pipefail
source_dir=${1:?usage: openapi_lint_test.sh SOURCE_DIR}
version=1.34.5  # the last line that runs on Debian bookworm's Node.js 18
source "$(dirname "$0")/npm_tool.sh"
npm_tool_install openapi_lint_test "@redocly/cli@$version" "redocly-cli-$version" \
  node_modules/.bin/redocly
redocly="$npm_tool_prefix/node_modules/.bin/redocly"

export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true NO_UPDATE_NOTIFIER=1
cd "$source_dir"
timeout 60 "$redocly" lint --config tests/integration/openapi_redocly.yaml --format stylish \
  docs/openapi.json

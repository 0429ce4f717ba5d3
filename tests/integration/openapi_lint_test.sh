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
cache=${LLMCAP_NPM_CACHE:-$HOME/.cache/llmcap/npm}
prefix="$cache/redocly-cli-$version"
redocly="$prefix/node_modules/.bin/redocly"

if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
  echo "openapi_lint_test: SKIPPED: npm/node not installed (deploy/install-deps.sh --with-test-tools)"
  exit 77
fi
mkdir -p "$cache"
if [[ ! -x "$redocly" ]]; then
  # One installer at a time (ctest -j runs lanes' copies of this test side by side).
  exec 9>"$cache/.install.lock"
  flock -w 200 9
  if [[ ! -x "$redocly" ]]; then
    echo "openapi_lint_test: installing @redocly/cli@$version into $prefix"
    rm -rf "$prefix.partial"
    timeout 180 npm install --prefix "$prefix.partial" --no-audit --no-fund --no-save \
      --loglevel=error --cache "$cache/npm-cache" "@redocly/cli@$version" ||
      { echo "openapi_lint_test: FAILED: npm install @redocly/cli@$version"; exit 1; }
    mv "$prefix.partial" "$prefix"
  fi
  exec 9>&-
fi

export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true NO_UPDATE_NOTIFIER=1
cd "$source_dir"
timeout 60 "$redocly" lint --config tests/integration/openapi_redocly.yaml --format stylish \
  docs/openapi.json

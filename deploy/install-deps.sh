#!/usr/bin/env bash
# Installs llmcap's build and test dependencies from Debian bookworm when they are missing.
# Idempotent: does nothing (no apt-get at all) when every package is already installed.
# Usage: deploy/install-deps.sh [--with-test-tools]   (run as root, or with sudo available)
set -euo pipefail

packages=(
  build-essential cmake make ninja-build pkg-config git
  libboost1.81-dev libboost-url1.81-dev
  nlohmann-json3-dev libsqlite3-dev sqlite3
  prometheus-cpp-dev libcivetweb-dev zlib1g-dev libcurl4-openssl-dev
  libspdlog-dev libfmt-dev libssl-dev ca-certificates
  libgtest-dev libgmock-dev libbenchmark-dev
  curl python3 python3-yaml clang-format lld
)
if [[ "${1:-}" == "--with-test-tools" ]]; then
  packages+=(prometheus chromium clang-14 libclang-rt-14-dev openssl)
  # xmllint validates the JUnit XML output against tests/data/junit/junit.xsd
  # (tests/integration/junit_report_test.py).
  packages+=(libxml2-utils)
  # The compiler cache `make test` builds through (CMakeLists.txt: used when installed; the
  # cache is ~/.cache/llmcap/ccache, outside the clone, so a fresh clone builds warm).
  packages+=(ccache)
  # The live OpenAPI test validates bodies with jsonschema, in Debian's python3 (the one CTest
  # runs: tests/integration/CMakeLists.txt), unless it can import one already.
  /usr/bin/python3 -c 'import jsonschema' 2>/dev/null || packages+=(python3-jsonschema)
  # npm fetches the OpenAPI linter (tests/integration/openapi_lint_test.sh); a Node.js from
  # elsewhere (NodeSource) brings its own npm, which Debian's npm package would conflict with.
  command -v npm >/dev/null || packages+=(nodejs npm)
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "installed" ]] || missing+=("$p")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

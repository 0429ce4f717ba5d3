# Sourced by the tests that drive a tool from npm (openapi_lint_test.sh, sim_openai_client_test.sh):
#   npm_tool_install TEST PACKAGE@VERSION FOLDER MARKER
# installs PACKAGE@VERSION once into $LLMCAP_NPM_CACHE (default ~/.cache/llmcap/npm)/FOLDER and
# sets npm_tool_prefix to that folder; MARKER is a file under it that exists once the install is
# complete. Without npm/node the calling test is skipped (exit 77, named TEST); an npm install
# that fails is a failure, not a skip. One installer at a time: ctest -j runs the lanes' copies
# of these tests side by side.
npm_tool_install() {
  local test=$1 package=$2 folder=$3 marker=$4
  local cache=${LLMCAP_NPM_CACHE:-$HOME/.cache/llmcap/npm}
  npm_tool_prefix="$cache/$folder"
  if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
    echo "$test: SKIPPED: npm/node not installed (deploy/install-deps.sh --with-test-tools)"
    exit 77
  fi
  mkdir -p "$cache"
  if [[ ! -e "$npm_tool_prefix/$marker" ]]; then
    exec 9>"$cache/.install.lock"
    flock -w 200 9
    if [[ ! -e "$npm_tool_prefix/$marker" ]]; then
      echo "$test: installing $package into $npm_tool_prefix"
      rm -rf "$npm_tool_prefix.partial"
      timeout 180 npm install --prefix "$npm_tool_prefix.partial" --no-audit --no-fund --no-save \
        --loglevel=error --cache "$cache/npm-cache" "$package" ||
        { echo "$test: FAILED: npm install $package"; exit 1; }
      mv "$npm_tool_prefix.partial" "$npm_tool_prefix"
    fi
    exec 9>&-
  fi
}

# Two commands matter (README): `make demo` runs the main job, `make test` runs every test.
# Both install missing Debian packages first (deploy/install-deps.sh), so they work on a fresh
# machine. PRESET selects the CMake preset (CMakePresets.json): release (default), dev, asan.
PRESET ?= release
BUILD_DIR = build/$(PRESET)
LLMCAPD = $(BUILD_DIR)/server/llmcapd
SOURCES = $(shell git ls-files '*.h' '*.cc' 2>/dev/null)

.PHONY: all deps build demo test test-asan lint format clean

all: build

deps:
	@deploy/install-deps.sh --with-test-tools

build: deps
	@cmake --preset $(PRESET) >/dev/null
	@cmake --build --preset $(PRESET)

# The main job: llmcapd with embedded simulated targets runs the example plan and prints the
# qualified-capacity table.
demo: build
	$(LLMCAPD) demo

# Every test: formatting check, build, then all CTest suites (unit, integration, e2e).
test: deps lint
	@cmake --preset $(PRESET) >/dev/null
	@cmake --build --preset $(PRESET)
	ctest --preset $(PRESET)

test-asan:
	@$(MAKE) --no-print-directory test PRESET=asan

# Opt-in, not part of `make test`: llmcapd against a real llama.cpp llama-server on the CPU
# (builds it once into ~/.cache/llmcap, ~7 min; then ~3 min). tests/real/README.md.
.PHONY: test-real
test-real:
	tests/real/run.sh

# Formatting drift fails; clang-tidy runs on request (slow on 2 cores): make lint TIDY=1
lint: deps
	@clang-format --dry-run -Werror $(SOURCES)
	@if [ -n "$(TIDY)" ]; then cmake --preset $(PRESET) >/dev/null && \
	  clang-tidy -p $(BUILD_DIR) --quiet $(filter %.cc,$(SOURCES)); fi

format:
	@clang-format -i $(SOURCES)

clean:
	rm -rf build

# Two commands matter (README): `make demo` runs the main job, `make test` runs every test.
# Both install missing Debian packages first (deploy/install-deps.sh), so they work on a fresh
# machine. PRESET selects the CMake preset of `make build` (CMakePresets.json): release
# (default), dev, asan.
PRESET ?= release
BUILD_DIR = build/$(PRESET)
LLMCAPD = $(BUILD_DIR)/server/llmcapd
SOURCES = $(shell git ls-files '*.h' '*.cc' 2>/dev/null)
# The compiler cache (CMakeLists.txt compiles through ccache when it is installed) lives outside
# the clone, so a fresh clone or `make clean` starts warm; a CCACHE_DIR of the caller wins.
export CCACHE_DIR ?= $(HOME)/.cache/llmcap/ccache

.PHONY: all deps build demo test test-release test-asan test-timing test-fuzz bench lint format clean

all: build

deps:
	@deploy/install-deps.sh --with-test-tools

build: deps
	@cmake --preset $(PRESET) >/dev/null
	@cmake --build --preset $(PRESET)

# The main job: llmcapd with embedded simulated targets runs the example plan and prints the
# qualified-capacity table. It needs llmcapd alone: the build packages (no test tools) and one
# target of the release preset, not the tests and benchmarks `make build` compiles.
demo:
	@deploy/install-deps.sh
	@cmake --preset release >/dev/null
	@cmake --build --preset release --target llmcapd
	build/release/server/llmcapd demo

# Every benchmark of bench/ (Release build in build-bench, about 10 minutes on 2 cores), with the
# load generator's ratios to the floor client; figures are recorded in bench/RESULTS.md. Not a
# test: nothing here passes or fails on a speed.
bench: deps
	bench/run_all.sh

# Every test (what CI runs, docs/ci.md): formatting check, then three lanes, each timed:
#   asan     the asan preset (ASan + UBSan, Debug): the whole CTest suite (unit, integration,
#            e2e; the daemon tests drive the sanitized llmcapd), except the tests labelled
#            `timing`, whose wall-clock accuracy assertions ASan's slowdown makes meaningless;
#   timing   the release preset, built only for llmcapd (what `make demo` runs) and the test
#            executables that hold `timing` cases (target llmcap_timing_tests); runs those;
#   fuzz     the libFuzzer targets (clang-14): the regression inputs replayed, then each fuzzer
#            for FUZZ_SECONDS on the checked-in seeds.
# `make test-release` builds the whole release preset and runs the whole suite there (the
# quickest full run on a developer machine). `make test-asan`, `make test-timing`,
# `make test-fuzz` run one lane; CTEST_ARGS is passed to ctest (e.g. CTEST_ARGS='-R Sim').
FUZZ_SECONDS ?= 30
# $(call STAGE,name) prefixes a recipe line: prints how long it took, also when it fails: wall
# time and the CPU time (user + system) of everything it ran. On a shared machine CPU/2 is the
# better estimate of the wall time on an idle 2-core one.
SHELL := /bin/bash
STAGE = TIMEFORMAT="== stage $(1): %0R s wall, %0U s user, %0S s sys"; time

test: deps lint
	@$(MAKE) --no-print-directory test-asan
	@$(MAKE) --no-print-directory test-timing
	@$(MAKE) --no-print-directory test-fuzz

CTEST_ARGS ?=
test-release test-asan: test-%: deps
	@$(call STAGE,$* build) (cmake --preset $* >/dev/null && cmake --build --preset $*)
	@$(call STAGE,$* ctest) ctest --preset $* $(CTEST_ARGS)

test-timing: deps
	@$(call STAGE,timing build) (cmake --preset release >/dev/null && \
	  cmake --build --preset release --target llmcapd llmcap_timing_tests)
	@$(call STAGE,timing ctest) ctest --preset release -L '^timing$$' $(CTEST_ARGS)
	@build/release/server/llmcapd --version

test-fuzz: deps
	@$(call STAGE,fuzz) BUILD_DIR=$(CURDIR)/build/fuzz tests/fuzz/run_fuzzers.sh $(FUZZ_SECONDS)

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

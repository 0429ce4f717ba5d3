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

.PHONY: all deps build demo test test-release test-asan test-timing test-fuzz bench lint format clean \
        asan-build asan-ctest timing-build release-ctest timing-ctest

all: build

deps:
	@deploy/install-deps.sh --with-test-tools

build: deps
	@$(call CONFIGURE,$(PRESET))
	@cmake --build --preset $(PRESET)

# The main job: llmcapd with embedded simulated targets runs the example plan and prints the
# qualified-capacity table. It needs llmcapd alone: the build packages (no test tools) and one
# target of the release preset, not the tests and benchmarks `make build` compiles.
demo:
	@deploy/install-deps.sh
	@$(call CONFIGURE,release)
	@cmake --build --preset release --target llmcapd
	build/release/server/llmcapd demo

# Every benchmark of bench/ (Release build in build-bench, about 10 minutes on 2 cores), with the
# load generator's ratios to the floor client; figures are recorded in bench/RESULTS.md. Not a
# test: nothing here passes or fails on a speed.
bench: deps
	bench/run_all.sh

# Every test (what CI runs, docs/ci.md): formatting check, then three lanes, each stage timed:
#   asan     the asan preset (ASan + UBSan, Debug): the whole CTest suite (unit, integration,
#            e2e; the daemon tests drive the sanitized llmcapd), except the cases labelled
#            `timing` (wall-clock accuracy, which ASan's slowdown makes meaningless) and
#            `release` (CPU-bound cases in virtual time, 3-5x slower under ASan);
#   timing   the release preset, built only for llmcapd (what `make demo` runs) and the test
#            executables that hold `timing` or `release` cases (target llmcap_timing_tests);
#            runs the `release` cases, then the `timing` cases alone;
#   fuzz     the libFuzzer targets (clang-14): the regression inputs replayed, then each fuzzer
#            for FUZZ_SECONDS on the checked-in seeds.
# `make test` overlaps them: once the asan build is done, its tests (about half of 2 cores:
# most of them wait on real-time steps) run beside two other branches, the release build then
# the `release` cases, and the fuzz lane (their output follows the asan lane's); the `timing`
# cases run last, alone. None of the overlapped tests asserts a speed (docs/ci.md); still, the
# asan tests get the CPU first (the other branches run at nice 5, the fuzz lane at nice 10,
# whose fuzzers run for a fixed wall time), so the real-time steps they judge are least
# disturbed. `make test-release` builds the whole release preset and runs the whole suite there
# (the quickest full run on a developer machine).
# `make test-asan`, `make test-timing`, `make test-fuzz` run one lane on its own; CTEST_ARGS is
# passed to ctest (e.g. CTEST_ARGS='-R Sim').
FUZZ_SECONDS ?= 30
# $(call STAGE,name) prefixes a recipe line: prints how long it took, also when it fails: wall
# time and the CPU time (user + system) of everything it ran. On a shared machine CPU/2 is the
# better estimate of the wall time on an idle 2-core one.
SHELL := /bin/bash
STAGE = TIMEFORMAT="== stage $(1): %0R s wall, %0U s user, %0S s sys"; time
SIDE_LOG = build/side-lanes.log
FUZZ_LOG = build/fuzz-lane.log
# $(call CONFIGURE,preset): `cmake --preset <preset>`. The presets use Ninja; a build folder
# that an older checkout configured with another generator (Unix Makefiles, before 2026-12-07)
# is removed first, as CMake refuses to switch (the compiler cache keeps its objects).
CONFIGURE = { c=build/$(1)/CMakeCache.txt; if [ -f $$c ] && \
  ! grep -qx 'CMAKE_GENERATOR:INTERNAL=Ninja' $$c; then \
  echo "build/$(1) was made with another CMake generator; removing it"; rm -rf build/$(1); fi; \
  cmake --preset $(1) >/dev/null; }

test: deps lint
	@$(MAKE) --no-print-directory asan-build
	@mkdir -p build; rm -f $(SIDE_LOG)* $(FUZZ_LOG)*; \
	  ( nice -n 5 $(MAKE) --no-print-directory timing-build release-ctest > $(SIDE_LOG) 2>&1; \
	    echo $$? > $(SIDE_LOG).rc ) & \
	  ( nice -n 10 $(MAKE) --no-print-directory test-fuzz > $(FUZZ_LOG) 2>&1; \
	    echo $$? > $(FUZZ_LOG).rc ) & \
	  $(MAKE) --no-print-directory asan-ctest; asan=$$?; wait; \
	  echo "== beside the asan ctest: the release build and its \`release\` cases"; \
	  cat $(SIDE_LOG); echo "== beside the asan ctest: the fuzz lane"; cat $(FUZZ_LOG); \
	  [ "$$asan" = 0 ] && [ "$$(cat $(SIDE_LOG).rc)" = 0 ] && [ "$$(cat $(FUZZ_LOG).rc)" = 0 ]
	@$(MAKE) --no-print-directory timing-ctest

CTEST_ARGS ?=
test-release: deps
	@$(call STAGE,release build) ($(call CONFIGURE,release) && cmake --build --preset release)
	@$(call STAGE,release ctest) ctest --preset release $(CTEST_ARGS)

test-asan: deps
	@$(MAKE) --no-print-directory asan-build
	@$(MAKE) --no-print-directory asan-ctest

test-timing: deps
	@$(MAKE) --no-print-directory timing-build release-ctest timing-ctest

asan-build:
	@$(call STAGE,asan build) ($(call CONFIGURE,asan) && cmake --build --preset asan)
asan-ctest:
	@$(call STAGE,asan ctest) ctest --preset asan $(CTEST_ARGS)
timing-build:
	@$(call STAGE,timing build) ($(call CONFIGURE,release) && \
	  cmake --build --preset release --target llmcapd llmcap_timing_tests)
release-ctest:
	@$(call STAGE,release-labelled ctest) ctest --preset release -L '^release$$' $(CTEST_ARGS)
timing-ctest:
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
	@if [ -n "$(TIDY)" ]; then $(call CONFIGURE,$(PRESET)) && \
	  clang-tidy -p $(BUILD_DIR) --quiet $(filter %.cc,$(SOURCES)); fi

format:
	@clang-format -i $(SOURCES)

clean:
	rm -rf build

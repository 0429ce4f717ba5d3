// Where the tests find the project's own files: tests/data and the source tree. The paths are
// compiled into one small translation unit (tests/test_paths.cc) instead of every test's
// command line, so a clone in another directory reuses the compiler cache for every other test
// (a -D holding an absolute path makes each clone's objects differ; docs/ci.md).
#pragma once

namespace llmcap::test_paths {
const char* data_dir();    // tests/data
const char* source_dir();  // the repository root
}  // namespace llmcap::test_paths

#define LLMCAP_TEST_DATA_DIR ::llmcap::test_paths::data_dir()
#define LLMCAP_SOURCE_DIR ::llmcap::test_paths::source_dir()

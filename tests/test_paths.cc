#include "tests/test_paths.h"

namespace llmcap::test_paths {
const char* data_dir() { return LLMCAP_TEST_DATA_DIR_PATH; }
const char* source_dir() { return LLMCAP_SOURCE_DIR_PATH; }
}  // namespace llmcap::test_paths

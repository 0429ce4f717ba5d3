// Helpers shared by agent/ unit tests: reading test data files.
#pragma once

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "tests/test_paths.h"

namespace llmcap::agent::test {

inline std::string read_data(const std::string& name) {
  const std::string path = std::string(LLMCAP_TEST_DATA_DIR) + "/agent/" + name;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("missing test data " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string data_path(const std::string& name) {
  return std::string(LLMCAP_TEST_DATA_DIR) + "/agent/" + name;
}

}  // namespace llmcap::agent::test

// Dataset: a request set read from JSONL, one request per line:
//   {"prompt": "...", "max_tokens": 128}            (completions or chat as one user message)
//   {"messages": [{"role": ..., "content": ...}], "max_tokens": 128}   (chat)
// max_tokens is optional (then the step's output distribution decides); an optional
// "input_tokens" hint is kept as the planned input length. Blank lines are skipped; any other
// bad line fails the whole load with an error naming its line number. Requests are replayed
// in file order (wrapping) or sampled uniformly with a seeded engine.
// Immutable after load; DatasetCursor is not thread-safe.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "agent/expected.h"

namespace llmcap::agent {

struct DatasetEntry {
  std::string prompt;         // set when the line had "prompt"
  std::string messages_json;  // serialized array when the line had "messages"
  std::int32_t max_tokens = -1;
  std::int32_t input_tokens_hint = -1;
  std::uint32_t line = 0;  // 1-based line number in the file
};

class Dataset {
 public:
  static Expected<Dataset> parse(std::string_view jsonl);
  // Reads and parses a file; the error names the path and line.
  static Expected<Dataset> load(const std::string& path);

  const std::vector<DatasetEntry>& entries() const { return entries_; }
  bool has_messages() const { return has_messages_; }

 private:
  std::vector<DatasetEntry> entries_;
  bool has_messages_ = false;
};

enum class DatasetOrder { kReplay, kSample };

// Walks a Dataset in replay or seeded-sample order.
class DatasetCursor {
 public:
  DatasetCursor(const Dataset& dataset, DatasetOrder order, std::uint64_t seed);
  const DatasetEntry& next();

 private:
  const Dataset& dataset_;
  DatasetOrder order_;
  std::mt19937_64 rng_;
  std::size_t position_ = 0;
};

}  // namespace llmcap::agent

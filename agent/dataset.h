// Dataset: a request set read from a file. Formats (docs/plans.md, "Datasets"):
//   JSONL, one request per line:
//     {"prompt": "...", "max_tokens": 128}            (completions or chat as one user message)
//     {"messages": [{"role": ..., "content": ...}], "max_tokens": 128}   (chat, OpenAI messages)
//     {"body": {"messages": [...], "max_tokens": 128}, ...}   (an OpenAI batch-API line)
//     {"conversations": [{"from": "human", "value": ...}, {"from": "gpt", "value": ...}]}
//   ShareGPT: a JSON array of such "conversations" objects (the usual ShareGPT file), or one
//   per line. As vLLM's benchmark does, a conversation gives its first human turn as the prompt
//   and its first reply's length as max_tokens — estimated at kShareGptTokensPerWord tokens per
//   word, as there is no tokenizer here (the measured lengths come from usage and label the
//   results); conversations with fewer than two turns are skipped (counted in skipped()).
// max_tokens is optional (then the step's output distribution decides); an optional
// "input_tokens" hint is kept as the planned input length. Blank lines are skipped; any other
// bad line fails the whole load with an error naming its line number — never its content.
// Requests are replayed in file order (wrapping) or sampled uniformly with a seeded engine.
//
// load() reads only regular files (a FIFO, device or directory is refused without blocking:
// the file is opened non-blocking and checked with fstat) of at most DatasetLimits::max_bytes.
// Immutable after load; DatasetCursor is not thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
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

struct DatasetLimits {
  std::uint64_t max_bytes = 256ULL << 20;  // larger files are refused before they are read
  std::size_t read_chunk_bytes = 1 << 20;  // Dataset::load reads this much at a time
};

inline constexpr double kShareGptTokensPerWord = 1.3;

// Reads a whole request file (a dataset or a trace) under `limits`: only a regular file (opened
// non-blocking and checked with fstat, so a FIFO or device is refused without blocking) of at
// most max_bytes. The error starts with "<what> file '<path>'" and never quotes the content.
Expected<std::string> read_request_file(const std::string& path, const DatasetLimits& limits,
                                        std::string_view what);

// Opens a request file under `limits` (the checks of read_request_file) and returns its
// descriptor, for the caller to read and close.
Expected<int> open_request_file(const std::string& path, const DatasetLimits& limits,
                                std::string_view what);

class Dataset {
 public:
  static Expected<Dataset> parse(std::string_view text);
  // Reads and parses a file as it streams in (1 MiB reads): memory holds the requests kept and
  // the largest single request, never the whole file; the error names the path and line or
  // array element (never the file's content).
  static Expected<Dataset> load(const std::string& path, const DatasetLimits& limits = {});

  const std::vector<DatasetEntry>& entries() const { return entries_; }
  bool has_messages() const { return has_messages_; }
  std::size_t skipped() const { return skipped_; }  // ShareGPT conversations without a reply

 private:
  class Reader;  // the streaming reader behind parse() and load()
  // One request object (a JSONL line or an element of a ShareGPT array); false = skipped.
  static Expected<bool> add_entry(Dataset& ds, const nlohmann::json& doc, std::uint32_t line_no);

  std::vector<DatasetEntry> entries_;
  bool has_messages_ = false;
  std::size_t skipped_ = 0;
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

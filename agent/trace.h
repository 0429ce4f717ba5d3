// Trace: a timestamped request trace to replay open loop (docs/plans.md, "Trace replay"). Formats:
//   mooncake  JSONL, one request per line: {"timestamp": ms, "input_length": tokens,
//             "output_length": tokens, "hash_ids": [block ids]} (Mooncake's traces): every id in
//             hash_ids stands for one block of block_tokens prompt tokens, shared by every
//             request that lists it.
//   burstgpt  CSV with a header row naming at least "Timestamp" (s), "Request tokens" and
//             "Response tokens" (BurstGPT's columns; others such as Model or Log Type are
//             ignored). As BurstGPT documents, a row with Response tokens 0 is a failed request:
//             it is skipped and counted (skipped()); so is a row with Request tokens 0.
// Any other bad line fails the whole load with an error naming its line number and field, never
// the file's content. Records are kept in timestamp order (a stable sort: equal times keep their
// file order); times are relative to the earliest record.
//
// Immutable after load; thread-safe to read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/dataset.h"
#include "agent/expected.h"

namespace llmcap::agent {

enum class TraceFormat { kMooncake, kBurstGpt };
std::string_view to_string(TraceFormat f);
std::optional<TraceFormat> parse_trace_format(std::string_view s);

inline constexpr std::int32_t kMaxTraceTokens = 1 << 20;  // per request, input or output

struct TraceRecord {
  std::int64_t t_ns = 0;  // since the earliest record of the trace (or of a window())
  std::int32_t input_tokens = 0;
  std::int32_t output_tokens = 0;
  std::vector<std::uint64_t> hash_ids;  // mooncake: shared prompt blocks, in prompt order
  std::uint32_t line = 0;               // 1-based line number in the file
};

// Which part of a trace a step replays (trace time, before any speed-up).
struct TraceWindow {
  double start_s = 0;             // records before this trace time are left out
  double duration_s = 0;          // > 0: records at or after start_s + duration_s are left out
  std::int64_t max_requests = 0;  // > 0: at most this many records (the first ones)
};

class Trace {
 public:
  static Expected<Trace> parse(std::string_view text, TraceFormat format);
  // Reads (read_request_file: regular files under limits.max_bytes) and parses a file; the
  // error names the path and line.
  static Expected<Trace> load(const std::string& path, TraceFormat format,
                              const DatasetLimits& limits = {});

  // The records of `w`, with times relative to w.start_s. May be empty.
  Trace window(const TraceWindow& w) const;

  const std::vector<TraceRecord>& records() const { return records_; }
  std::size_t skipped() const { return skipped_; }  // burstgpt: failed (0-token) rows
  // Time of the last record (ns since the first); 0 when empty.
  std::int64_t span_ns() const { return records_.empty() ? 0 : records_.back().t_ns; }

 private:
  static Expected<Trace> parse_mooncake(std::string_view text);
  static Expected<Trace> parse_burstgpt(std::string_view text);
  void finish();  // sort by time, make times relative to the first record

  std::vector<TraceRecord> records_;
  std::size_t skipped_ = 0;
};

// Step time (ns since the step's start) at which `record` is sent when the trace is replayed
// `speed` times faster than recorded (speed 2: twice as fast).
inline std::int64_t replay_time_ns(const TraceRecord& record, double speed) {
  return static_cast<std::int64_t>(static_cast<double>(record.t_ns) / speed);
}

}  // namespace llmcap::agent

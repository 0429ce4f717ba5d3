// StepResult: what one step of load produced — every request sample, the pooled ITL
// histogram, load-generator health (dropped arrivals, schedule lag, client CPU), the in-flight
// series and the calibration used. A plain value handed from the agent thread to the caller.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "agent/conversation.h"
#include "agent/cpu_meter.h"
#include "analysis/log_histogram.h"
#include "analysis/request_sample.h"

namespace llmcap::agent {

// Exact order statistics of schedule lag (t_send − t_intended, docs/metrics.md §3.4) over sent
// requests.
struct LagStats {
  std::uint64_t count = 0;
  double mean_ns = 0;
  std::int64_t p50_ns = 0;
  std::int64_t p99_ns = 0;
  std::int64_t max_ns = 0;
};

// Exact nearest-rank statistics (p50, p99, max, mean) of lag values: the one computation
// behind StepResult's lag fields, for a single agent's step and for a merge of shards alike.
LagStats exact_lag_stats(std::vector<std::int64_t> values_ns);

struct CalibrationInfo {
  std::string method;  // "tokenize", "usage-probe", "default", "dataset"
  double tokens_per_word_initial = 0;
  double tokens_per_word_final = 0;  // after adjusting from usage during the step
  double overhead_tokens = 0;        // per-request tokens beyond the words (BOS, template)
  std::string note;                  // why a method was not available, if relevant
  // Planned vs real input length (usage.prompt_tokens) over samples that reported usage.
  std::uint64_t samples_with_usage = 0;
  double planned_input_mean_tokens = 0;
  double real_input_mean_tokens = 0;
  double mean_abs_error_tokens = 0;
};

struct StepCounts {
  std::uint64_t intended = 0;  // arrivals scheduled in the step (incl. dropped), or started
  std::uint64_t sent = 0;      // requests started (a sample exists for each)
  std::uint64_t ok = 0;
  std::uint64_t failed = 0;         // errors incl. timeouts, excl. cancelled
  std::uint64_t cancelled = 0;      // cancelled at drain or by stop (reported, never dropped)
  std::uint64_t abandoned = 0;      // cancelled by the plan's simulated users (workload.abandon)
  std::uint64_t output_tokens = 0;  // sum of output_tokens of ok samples
  // ok samples whose output_tokens differ from the planned max_tokens (docs/metrics.md §9.2: the
  // server did not honour the length; with ignore_eos this should be 0) and how many had no usage.
  std::uint64_t output_length_mismatch = 0;
  std::uint64_t usage_missing = 0;
};

struct StepResult {
  bool completed = false;   // ran to the end of its drain
  bool cancelled = false;   // stopped early by the stop token
  std::string fatal_error;  // non-empty: the step could not run (spec, model, dataset)
  std::string model;        // model name used (given or discovered)

  std::vector<analysis::RequestSample> samples;  // sorted by index
  std::vector<std::string> response_ids;         // parallel to samples: server's response id
  analysis::LogHistogram itl_ns;                 // ITL gaps of ok requests intended in the window
  // Workload mix (WorkloadSpec::mix): the same gaps per class (index: the class), else empty.
  std::vector<analysis::LogHistogram> itl_ns_by_class;
  std::uint64_t dropped_arrivals = 0;  // open loop: arrivals of the window refused at the cap
  std::uint64_t dropped_arrivals_warmup = 0;  // ... and those of the warm-up (reported only)
  std::vector<std::pair<std::int64_t, std::int32_t>> in_flight_series;  // (t_ns, in flight)

  // Measurement window [start, end), step-epoch ns. A cancelled step's window ends where it
  // was stopped; it is empty (end <= start) when the step was stopped before it opened.
  std::int64_t window_start_ns = 0;
  std::int64_t window_end_ns = 0;
  std::int64_t epoch_steady_ns = 0;  // steady_clock time (ns) of the step's t = 0
  std::int64_t end_ns = 0;           // when the step (drain included) ended

  CpuUsage cpu;                       // agent thread and process CPU over the step
  double client_cpu_utilisation = 0;  // cpu.thread_utilisation()
  LagStats schedule_lag;              // t_send − t_intended over sent requests (includes
                                      // connect + TLS of requests that opened a connection)
  LagStats dispatch_lag;              // the same minus connect and TLS time: the agent's own
                                      // delay (judges client saturation, docs/metrics.md §4.1)
  LagStats timer_lag;                 // open loop: wake-up time − scheduled arrival
  CalibrationInfo calibration;
  StepCounts counts;
  // workload.conversation: each sample's session and turn (parallel to samples) and how each
  // session ended; empty for other workloads.
  ConversationLog conversation;
  std::uint64_t connections_opened = 0;
};

}  // namespace llmcap::agent

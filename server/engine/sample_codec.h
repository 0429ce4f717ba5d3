// Conversions between the measurement record (analysis::RequestSample) and the storage row
// (storage::SampleRow), plus the JSON and CSV shapes of a stored sample for
// GET /v1/jobs/{id}/requests (docs/metrics.md, "The samples export"). Pure functions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "analysis/request_sample.h"
#include "storage/job_store.h"
#include "storage/records.h"

namespace llmcap::server {

storage::SampleRow to_row(const analysis::RequestSample& s, std::int64_t step_id);
analysis::RequestSample from_row(const storage::SampleRow& r);

// What an exported sample says about the step it belongs to.
struct SampleStepInfo {
  // The step's number as `llmcapd run` prints it ("[N/M]"), counted from 1: the stored seq (the
  // results' global_step, counted from 0) + 1. The export's `step` column and its ?step=.
  std::int64_t number = 1;
  std::string target;  // the target's name
  std::string phase;   // the phase's name
  // The step's measurement window on the samples' clock; nullopt while it is not known (the
  // step is still running, or was stored without a summary).
  std::optional<storage::IntendedRange> window;
};

// The measurement window of a stored step: stats.window_start_ns / window_end_ns of its summary;
// for steps stored before those were recorded, derived the way the step was measured (warm-up
// of its phase in `plan`, the stored plan, then stats.window_s). nullopt without a summary.
std::optional<storage::IntendedRange> step_window(const storage::StepRecord& step,
                                                  const nlohmann::json& plan);
SampleStepInfo sample_step_info(const storage::StepRecord& step, const nlohmann::json& plan);
// Whether the sample belongs to its step's window (t_intended in [start, end): the requests the
// step's percentiles are computed from, analysis/step_stats.h); nullopt when the window is not
// known.
std::optional<bool> in_window(const storage::SampleRow& r, const SampleStepInfo& step);

// One sample as a JSON object (times in ns from the step start; derived TTFT/TPOT/E2E in ms).
nlohmann::json sample_json(const storage::SampleRow& r, const SampleStepInfo& step);
// The same sample as a CSV line: every scalar field of sample_json (token_times_ns, a list, only
// in JSON), derived latencies in ms to 3 decimals, empty where the JSON has null.
std::string sample_csv_header();
std::string sample_csv_line(const storage::SampleRow& r, const SampleStepInfo& step);

}  // namespace llmcap::server

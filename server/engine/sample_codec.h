// Conversions between the measurement record (analysis::RequestSample) and the storage row
// (storage::SampleRow), plus the JSON and CSV shapes of a stored sample for
// GET /v1/jobs/{id}/requests. Pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "analysis/request_sample.h"
#include "storage/records.h"

namespace llmcap::server {

storage::SampleRow to_row(const analysis::RequestSample& s, std::int64_t step_id);
analysis::RequestSample from_row(const storage::SampleRow& r);
// One sample as a JSON object (times in ns from the step start; derived TTFT/TPOT/E2E in ms).
nlohmann::json sample_json(const storage::SampleRow& r, std::int64_t step_seq);
std::string sample_csv_header();
std::string sample_csv_line(const storage::SampleRow& r, std::int64_t step_seq);

}  // namespace llmcap::server

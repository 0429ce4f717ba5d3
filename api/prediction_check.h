// A prediction beside a measurement (issue: "predicted 7.1 rps, measured 6.8 rps, −4 %"): the
// results of a predicted job (`llmcapd predict`, POST /v1/predictions) and of a measured job of
// the same workload fingerprint and SLA, compared target by target at their qualified points.
// This is how a prediction (or a calibrated sim profile) is checked against the real box.
//
// Targets pair by name, else by base_url. Each pair gets both qualified rates (the offered
// open-loop rate, else the sustained requests/s of a closed-loop qualification), output tok/s,
// P95 TTFT/TPOT/E2E and outcomes, and the relative error of each figure: (measured − predicted)
// / predicted, so −0.04 reads "measured 4 % below the prediction". A figure absent on either
// side has no error. Pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace llmcap::api {

// The results documents may be REST documents (job id at job.id) or `llmcapd run/predict`
// files (job_id, or none). Returns {"predicted_job", "measured_job", "targets": [...]}, with
// `targets` empty when no target pairs up.
nlohmann::json prediction_check(const nlohmann::json& predicted, const nlohmann::json& measured);

// Whether a results document is a prediction (its top-level "predicted" is true).
bool is_predicted(const nlohmann::json& results);

// "+4.3 %" / "-0.8 %" / "+0.0 %" (never "-0.0 %") for a fraction 0.043 / -0.008 / -0.0001.
std::string signed_percent(double fraction);

// One line per target: "rtx4090-48g: predicted 1.33 rps, measured 1.33 rps, +0.0 %; P95 TTFT
// 224 vs 232 ms (+3.6 %) ...". Empty when the check has no targets.
std::vector<std::string> prediction_check_lines(const nlohmann::json& check);

}  // namespace llmcap::api

// `llmcapd sim calibrate`: fits a simulator hardware profile to a measured job, so a team that
// measured one box can predict the loads it did not measure (docs/prediction.md, "Calibrating a
// profile").
//
// The measured results document (a `llmcapd run --out` file, or a daemon job's results with its
// plan) names the steps that were run: concurrency levels and open-loop rates, each with its
// window and warm-up. calibrate() replays exactly those steps in virtual time on a copy of a
// built-in profile (server/engine/virtual_step_backend.h, the same path as `llmcapd predict`)
// and moves a few physical parameters of the profile — the achieved fraction of the memory
// bandwidth, of the 16-bit tensor rate and the fixed per-step cost — to minimise the squared log
// errors of each step's mean TPOT, (closed loop) output tokens/s and median TTFT where TTFT
// measures the box (one request at a time, or open-loop arrivals; closed-loop cohorts of fixed
// lengths make it jump between modes). Nelder–Mead over the parameters' physical ranges;
// deterministic (the same document gives the same profile).
//
// The result is a profile file ({"hardware": [...]}, sim/profile_catalog.h's format) whose entry
// is the base profile with the fitted parameters, under a new name: a plan uses it with a
// `sim://<name>/<model>` target and `llmcapd run|predict --profiles-file <file>`.
// Thread safety: calibrate() is reentrant (each call has its own simulators and clock).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "server/engine/run_plan.h"

namespace llmcap::server {

struct CalibrationInput {
  nlohmann::json measured;  // a results document carrying plan_document
  std::string target;       // the target of `measured` to fit; "" = the first
  // The profile to start from; "" = the hardware and model of the target's sim:// URL (a real
  // target needs them given).
  std::string hardware;
  std::string model;
  std::string dtype;          // "" = the target's precision, else sim.dtype, else bf16
  std::string profile_name;   // the written profile's name; "" = "<hardware>-calibrated"
  std::string profiles_file;  // extra profiles to find `hardware` in (as sim.profiles_file)
  int max_evaluations = 120;  // predictions of the replayed steps
};

// One fitted parameter: its profile key, its value before and after.
struct CalibrationParameter {
  std::string key;
  double before = 0;
  double after = 0;
};

// One replayed step: its measured figures and the predictions before and after the fit.
struct CalibrationStep {
  std::string label;  // "c=8", "5.71 rps"
  double measured_tpot_mean_ms = 0, before_tpot_mean_ms = 0, after_tpot_mean_ms = 0;
  double measured_ttft_p50_ms = 0, before_ttft_p50_ms = 0, after_ttft_p50_ms = 0;
  double measured_output_tokens_per_s = 0, before_output_tokens_per_s = 0,
         after_output_tokens_per_s = 0;
};

struct CalibrationResult {
  std::string error;            // non-empty: nothing was fitted (names the field or flag)
  nlohmann::json profile_file;  // {"_comment": ..., "hardware": [the fitted entry]}
  std::string profile_name;
  std::string model;
  std::string dtype;
  std::vector<CalibrationParameter> parameters;
  std::vector<CalibrationStep> steps;
  // Median over every step figure of |predicted − measured| / measured.
  double median_error_before = 0;
  double median_error_after = 0;
  int evaluations = 0;
};

CalibrationResult calibrate(const CalibrationInput& input);

// Gives every sim:// target of `plan` whose `sim` options name no profiles file this one, so its
// profiles (a calibrated one among them) are known to the target's simulator: what
// `llmcapd run|predict --profiles-file FILE` does. Returns an error for a target whose `sim`
// options are not a JSON object.
std::string use_profiles_file(RunPlan& plan, const std::string& path);

// A short report: the parameters before → after, then one line per step.
std::string calibration_text(const CalibrationResult& result);

}  // namespace llmcap::server

// Row types of the llmcap database: plain values that storage reads and writes. storage includes
// nothing of ours, so these mirror (not reuse) the types of analysis/ and api/; server/ converts.
// JSON columns are carried as text. Times: unix milliseconds (_ms) unless named _ns.
// Plain values: copyable, no shared state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "storage/job_state.h"

namespace llmcap::storage {

struct PlanRecord {
  std::string id;                    // "plan_<ulid>", assigned by the store
  std::string plan_json;             // normalised plan
  std::string workload_fingerprint;  // hash text of the workload part
  std::int64_t created_at_ms = 0;
};

struct TargetRecord {
  std::string name;
  std::string base_url;
  std::string hardware_json = "{}";
  std::optional<double> price_per_hour;
};

// A credential for one target of a job (e.g. key "api_key"). Stored apart from jobs; read only
// through JobStore::get_secrets.
struct SecretRecord {
  std::string target;
  std::string key;
  std::string value;
};

struct JobRecord {
  std::string id;  // "job_<ulid>"
  std::string plan_id;
  JobState state = JobState::kQueued;
  int priority = 0;
  std::int64_t created_at_ms = 0;
  std::optional<std::int64_t> started_at_ms;   // first time it went running
  std::optional<std::int64_t> finished_at_ms;  // when it reached a terminal state
  std::string submitted_by;
  std::string error_message;  // "" when none
  std::string progress_json = "{}";
  std::optional<std::int64_t> last_completed_step;  // StepRecord::seq; nullopt = none yet
  bool cancel_requested = false;
  // The job's verdict once its results are stored: "pass", "fail" or "inconclusive", and the
  // results' "verdict" object as JSON text. nullopt before (queued, running, no results).
  std::optional<std::string> verdict;
  std::optional<std::string> verdict_json;
  // "measured" (load sent to the targets) or "predicted" (sim:// targets in virtual time).
  std::string kind = "measured";
  std::vector<TargetRecord> targets;  // in plan order
  // The tenant that owns the job (docs/security.md, "Tenants"): only its tokens and the global
  // ones see it. "default" for jobs of admin_tokens and of a daemon without tokens.
  std::string tenant = "default";
};

struct StepRecord {
  std::int64_t id = 0;  // rowid; samples reference it
  std::string job_id;
  std::int64_t seq = 0;  // order of the step within the job; unique per job
  std::string target;
  int phase_index = 0;
  std::string phase_name;
  std::string phase_kind;
  int step_index = 0;
  std::string params_json = "{}";
  std::optional<std::string> summary_json;  // nullopt until completed
  std::optional<std::string> verdict;
  std::optional<std::string> verdict_json;
  bool partial = false;
  std::int64_t started_at_ms = 0;
  std::optional<std::int64_t> finished_at_ms;  // nullopt while running
};

// What completes a step: written in one transaction together with setting the job's
// last_completed_step (and, via SampleWriter, with the step's last samples).
struct StepCompletion {
  std::int64_t step_id = 0;
  std::string summary_json;
  std::string verdict;  // e.g. "pass" / "fail" / "inconclusive"
  std::string verdict_json;
  bool partial = false;  // some samples were not recorded, or the step was cut short
  std::int64_t finished_at_ms = 0;
  std::optional<std::string> progress_json;  // also replaces the job's progress when given
};

// One request, mirroring analysis::RequestSample field by field (plain integers; enums as their
// numeric values). id is the rowid: 0 before insertion, set on reads.
struct SampleRow {
  std::int64_t id = 0;
  std::int64_t step_id = 0;
  std::int64_t index = 0;
  std::int64_t t_intended_ns = 0;
  std::int64_t t_send_ns = -1;
  std::int64_t connect_ns = -1;
  std::int64_t tls_ns = -1;
  std::int64_t t_headers_ns = -1;
  std::int64_t t_first_token_ns = -1;
  std::int64_t t_last_token_ns = -1;
  std::int64_t t_end_ns = -1;
  std::int64_t max_itl_ns = -1;
  std::uint32_t token_events = 0;
  std::int32_t input_tokens = -1;
  std::int32_t output_tokens = -1;
  std::int32_t planned_input_tokens = -1;
  std::int32_t planned_output_tokens = -1;
  std::int16_t http_status = 0;
  std::uint8_t error_class = 0;    // analysis::ErrorClass
  std::uint8_t finish_reason = 0;  // analysis::FinishReason
  bool output_tokens_estimated = false;
  std::string error_message;                 // "" is stored as NULL
  std::vector<std::int64_t> token_times_ns;  // empty is stored as NULL

  friend bool operator==(const SampleRow&, const SampleRow&) = default;
};

struct TelemetryRow {
  std::int64_t id = 0;  // rowid, set on reads
  std::int64_t step_id = 0;
  std::int64_t t_ns = 0;  // step-relative, same clock as samples
  std::string series;
  std::string labels;
  double value = 0.0;

  friend bool operator==(const TelemetryRow&, const TelemetryRow&) = default;
};

// Keys of the capacity table besides target names: the job's whole results document, and each
// finished phase's result (resume skips those phases).
inline constexpr const char* kResultsKey = "#results";
inline constexpr const char* kPhaseKeyPrefix = "#phase:";

struct CapacityRecord {
  std::string job_id;
  std::string target;  // a target's name, kResultsKey, or kPhaseKeyPrefix + the phase's name
  std::string result_json;
  std::int64_t created_at_ms = 0;  // set by the store on save
};

struct AuditRecord {
  std::int64_t id = 0;     // assigned on append
  std::int64_t ts_ms = 0;  // 0 on append = "now" by the store's clock
  std::string actor;
  std::string action;  // e.g. "job.create", "job.cancel", "job.delete"
  std::optional<std::string> job_id;
  std::string detail;    // free text or JSON
  std::string tenant;    // the acting token's tenant ("*" for a global token; "" = unknown)
  std::string token_id;  // the acting token's id (a short hash, never the token; "" = none)
};

}  // namespace llmcap::storage

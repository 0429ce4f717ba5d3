// ShardCoordinator: the daemon's side of one job's agent fleet (scale-out, issue 11). Used as
// the job's StepBackend when its plan has `agents`: for each step it splits the spec into
// `count` shard specs (agent/shard_split.h), publishes them as assignments with one wall-clock
// start time `start_delay_ms` in the future, waits for every shard's upload, and merges them
// (agent/shard_merge.h) into the step result the executor judges.
//
// The agents talk to it through the REST routes /v1/jobs/{id}/shards/{k}/... (server/
// shard_routes.h): register (with the clock offset they measured, NTP-style), poll their next
// assignment, upload their result. Failures are step failures with the reason (fatal_error):
//   - an agent whose |offset| exceeds max_clock_offset_ms is refused at registration, and the
//     step fails naming the shard and its offset;
//   - not all agents registered within register_timeout_s: names the missing shards;
//   - uploads missing result_timeout_s after the step's planned end: names the missing shards.
// Uploads carry an idempotency key: a retried upload is acknowledged and stored once.
//
// Clocks: wall_now_ns() (system clock, Unix ns) only for the start time and the offset
// exchange; waits use steady_clock. Both injectable for tests.
// Thread-safety: the REST methods may be called from any thread concurrently with run(), which
// runs on the job's worker thread; all state is guarded by mu_.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "api/test_plan.h"
#include "server/engine/step_backend.h"

namespace llmcap::server {

// Starts the agents of a job with launch "kubernetes"; returns "" or why it could not. The
// daemon wires it to its AgentLauncher (server/fleet/k8s_launcher.h); unset: not configured.
using FleetLauncher =
    std::function<std::string(const std::string& job_id, const api::PlanAgents& agents)>;

struct ShardReply {
  int http_status = 200;  // 200, or the status of the error (404, 409, 422)
  std::string error;      // non-empty with an error status
  nlohmann::json body;    // the JSON answer when http_status is 200
};

class ShardCoordinator final : public StepBackend {
 public:
  struct Options {
    std::string job_id;
    api::PlanAgents agents;
    FleetLauncher launcher;                     // for launch "kubernetes"
    std::function<std::int64_t()> wall_now_ns;  // default: system_clock, Unix ns
  };
  explicit ShardCoordinator(Options options);

  // --- REST side (any thread) ---
  // {"t1_ns", "t2_ns"}: the daemon's wall clock when the exchange arrived and left.
  ShardReply clock_exchange();
  // Body: {"region"?, "clock_offset_ms", "rtt_ms", "host"?}. 422 when the offset is over the
  // bound (the rejection is remembered and fails the next step), 404 for a shard out of range.
  ShardReply register_shard(std::int32_t shard, const nlohmann::json& body);
  // {"status": "run", "step", "start_unix_ns", "spec", "idempotency_key", "region"} when a step
  // newer than `after_step` is published for the shard; {"status": "wait", "retry_after_ms"};
  // {"status": "done", "reason"} once the job is over.
  ShardReply next_assignment(std::int32_t shard, std::int64_t after_step);
  // Body: {"step", "result": step_result_to_json(...)}. Stored once per idempotency key
  // (a repeat answers {"stored": false, "duplicate": true}); 409 for a step not in progress.
  ShardReply upload(std::int32_t shard, const std::string& idempotency_key,
                    const nlohmann::json& body);
  // The job is over: agents polling for work are told "done" (and exit).
  void finish(const std::string& reason);

  // --- StepBackend (the job's worker thread) ---
  BackendStep run(const agent::StepSpec& spec, std::int64_t global_step, std::stop_token stop,
                  const agent::ProgressCallback& progress) override;

  const api::PlanAgents& agents() const { return options_.agents; }
  // True once launch "kubernetes" started the fleet (the job's worker thread only).
  bool fleet_launched() const { return fleet_launched_; }

 private:
  struct Registration {
    std::string region;
    double clock_offset_ms = 0;
    double rtt_ms = 0;
    std::string host;
  };
  struct Assignment {
    std::int64_t step = -1;
    std::int64_t start_unix_ns = 0;
    std::vector<nlohmann::json> specs;  // per shard
  };
  std::string region_of(std::int32_t shard) const;  // registered region, else the plan's
  std::string missing_shards(const std::vector<bool>& have) const;

  Options options_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::int32_t, Registration> registered_;    // guarded by mu_
  std::map<std::int32_t, std::string> rejected_;       // guarded by mu_: shard → reason
  std::optional<Assignment> current_;                  // guarded by mu_
  std::map<std::int32_t, agent::StepResult> uploads_;  // guarded by mu_ (current step)
  std::set<std::string> seen_keys_;                    // guarded by mu_
  std::string done_reason_;                            // guarded by mu_
  bool done_ = false;                                  // guarded by mu_
  bool launched_ = false;                              // worker thread only
  bool fleet_launched_ = false;  // worker thread only: launch "kubernetes" succeeded
};

}  // namespace llmcap::server

// JobRunner: runs one stored job on a scheduler worker thread. It loads the job's plan (and its
// secrets) from the store, converts it, runs the PlanExecutor with a sink that persists every
// step (samples + summary + verdict committed together by the SampleWriter before the next
// step starts), publishes progress to metrics and the event log, and records the final state
// and results document. Stopped by its stop_token: a user cancel ends the job `cancelled`;
// a daemon shutdown ends it `interrupted`, resumable after its last stored step.
//
// Result documents live in the capacity_results table under reserved keys that no target name
// can take (target names are [a-z0-9_.-]): "#results" holds the job's results document and
// "#phase:<t>/<p>/<r>" each completed phase document (what a resume reuses).
//
// Thread-safety: run() may be called concurrently for different jobs; the collaborators are
// thread-safe.
#pragma once

#include <atomic>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "server/engine/dataset_policy.h"
#include "storage/disk_space.h"

namespace llmcap::storage {
class JobStore;
class SampleWriter;
}  // namespace llmcap::storage

namespace llmcap::server {

class DaemonMetrics;
class EmbeddedSimulators;
class JobEvents;
class ShardHub;

class JobRunner {
 public:
  // telemetry_interval_s: scrape period of the targets' metrics (DaemonConfig).
  JobRunner(storage::JobStore& store, storage::SampleWriter& writer, EmbeddedSimulators& sims,
            DaemonMetrics& metrics, JobEvents& events, double telemetry_interval_s = 1.0);
  // Never throws: an exception that escapes the job's work (a bug) fails the job (the
  // exception's text goes to the log), so no job stays "running" with nothing running it.
  void run(const std::string& job_id, std::stop_token stop);
  // Agent fleets (issue 11): a plan with `agents` runs its steps through a ShardCoordinator
  // opened in this hub. Without one, such plans fail with a clear error. Set before run().
  void set_shard_hub(ShardHub* hub) { shard_hub_ = hub; }
  // Set before the scheduler is shut down: stopped jobs become interrupted, not cancelled.
  void set_shutting_down() { shutting_down_ = true; }
  // Where plans' dataset files live (the REST policy, server/engine/dataset_policy.h): a job
  // resolves its stored relative dataset paths again when it starts, and its steps read at most
  // max_bytes. Set before run().
  void set_dataset_policy(DatasetPolicy policy) { dataset_policy_ = std::move(policy); }
  // The daemon's target_allowlist: plans' targets (not the embedded simulators) are checked
  // against it again at every connection (DNS rebinding, issue 23 #1).
  void set_target_allowlist(std::vector<std::string> entries) {
    target_allowlist_ = std::move(entries);
  }
  // The longest a job may run, wall clock, per start (DaemonConfig max_job_duration_s; 0 = no
  // limit): submission refuses plans estimated above it, and a job that runs past it all the
  // same (request-count windows on a slow target, drains, lengthened confirms) is stopped there
  // and fails naming the limit; the steps it stored are kept. Set before run().
  void set_max_job_duration_s(double s) { max_job_duration_s_ = s; }
  // The database file and its identity at start: a job whose database file is deleted or
  // replaced under it fails at its next step instead of "succeeding" into an orphan file.
  void set_database_file(std::string path, std::optional<storage::FileIdentity> at_start) {
    database_path_ = std::move(path);
    database_file_ = at_start;
  }

 private:
  void run_job(const std::string& job_id, std::stop_token stop);
  // Stores the failed state with `why` (already redacted) and ends the job's event stream.
  void mark_failed(const std::string& job_id, const std::string& why);

  storage::JobStore& store_;
  storage::SampleWriter& writer_;
  EmbeddedSimulators& sims_;
  DaemonMetrics& metrics_;
  JobEvents& events_;
  double telemetry_interval_s_;
  ShardHub* shard_hub_ = nullptr;
  DatasetPolicy dataset_policy_{true, "", 256ULL << 20};
  std::vector<std::string> target_allowlist_;
  double max_job_duration_s_ = 0;
  std::string database_path_;
  std::optional<storage::FileIdentity> database_file_;
  std::atomic<bool> shutting_down_{false};
};

}  // namespace llmcap::server

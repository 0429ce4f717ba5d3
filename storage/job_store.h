// JobStore: what the daemon persists about jobs — the seam between the scheduler/API (server/)
// and SQLite. SqliteJobStore is the implementation; tests of other modules may fake this.
//
// Every method is synchronous and may block on disk: call it from a storage/worker thread, never
// from an Asio I/O thread. Failures are values (Status/Result); see each method.
// Thread safety of implementations: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/job_state.h"
#include "storage/records.h"
#include "storage/status.h"

namespace llmcap::storage {

struct NewJob {
  std::string plan_json;             // normalised plan
  std::string workload_fingerprint;  // hash text
  int priority = 0;
  std::string submitted_by;
  std::string kind = "measured";      // or "predicted" (JobRecord::kind)
  std::string tenant = "default";     // the owner (JobRecord::tenant); must not be empty
  std::vector<TargetRecord> targets;  // names must be unique within the job
  std::vector<SecretRecord> secrets;  // each names one of `targets`
  // When set: a second create by the same tenant with the same key and the same request_hash
  // returns the first job (created = false); the same key with another hash is kConflict. Keys
  // are per tenant: another tenant's use of the key is never seen.
  std::optional<std::string> idempotency_key;
  std::string request_hash;  // hash of the submitted request body (only used with a key)
};

struct CreateJobResult {
  JobRecord job;
  bool created = true;  // false: an existing job returned for a repeated idempotency key
};

struct JobFilter {
  std::optional<JobState> state;
  std::optional<std::string> target;                // jobs with a target of this name
  std::optional<std::string> verdict;               // "pass", "fail" or "inconclusive"
  std::optional<std::string> kind;                  // "measured" or "predicted"
  std::optional<std::string> tenant;                // only this tenant's jobs; nullopt = all
  std::optional<std::string> workload_fingerprint;  // jobs of plans with this fingerprint
  std::optional<std::int64_t> created_from_ms;      // inclusive
  std::optional<std::int64_t> created_to_ms;        // exclusive
  std::string cursor;                               // "" = first page; else JobPage::next_cursor
  int limit = 50;                                   // 1..1000
};

struct JobPage {
  std::vector<JobRecord> jobs;  // newest first
  std::string next_cursor;      // opaque; "" when this is the last page
};

struct NewStep {
  std::string job_id;
  std::int64_t seq = 0;
  std::string target;
  int phase_index = 0;
  std::string phase_name;
  std::string phase_kind;
  int step_index = 0;
  std::string params_json = "{}";
  std::int64_t started_at_ms = 0;  // 0 = now by the store's clock
};

// A range of intended send times, [start_ns, end_ns), on a step's sample clock.
struct IntendedRange {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
};

// Which samples a read covers (read_samples, sample_cut).
struct SampleFilter {
  std::optional<std::int64_t> step_id;  // only this step (a step id); nullopt = the whole job
  // When set: only samples whose t_intended_ns lies in their step's range (by step id); the
  // samples of a step without a range are left out.
  std::optional<std::map<std::int64_t, IntendedRange>> intended_by_step;
};

struct SamplePage {
  std::vector<SampleRow> rows;                // by step, then ascending id
  std::optional<std::int64_t> next_after_id;  // pass as after_id for the next page; nullopt = end
};

struct TelemetryPage {
  std::vector<TelemetryRow> rows;
  std::optional<std::int64_t> next_after_id;
};

struct AuditPage {
  std::vector<AuditRecord> records;            // newest first
  std::optional<std::int64_t> next_before_id;  // pass as before_id; nullopt = end
};

class JobStore {
 public:
  virtual ~JobStore() = default;

  // Inserts plan, job (queued), targets, secrets and the idempotency key in one transaction.
  // kInvalid: no targets, duplicate target names, a secret for an unknown target.
  // kConflict: idempotency key already used with a different request_hash.
  virtual Result<CreateJobResult> create_job(const NewJob& job) = 0;
  // kNotFound when there is no such job. Includes targets, never secrets.
  virtual Result<JobRecord> get_job(std::string_view job_id) = 0;
  virtual Result<PlanRecord> get_plan(std::string_view plan_id) = 0;
  // kInvalid: bad cursor (names it) or limit outside 1..1000.
  virtual Result<JobPage> list_jobs(const JobFilter& filter) = 0;
  // Moves the job to `to`; sets started_at_ms on the first move to running and finished_at_ms on
  // a terminal state; error_message replaces the stored one when non-empty.
  // kNotFound; kConflict when transition_allowed(from, to) is false (message names both).
  virtual Result<JobRecord> update_state(std::string_view job_id, JobState to,
                                         std::string_view error_message = {}) = 0;
  virtual Status set_progress(std::string_view job_id, std::string_view progress_json) = 0;
  // Stores the job's verdict (outcome "pass" | "fail" | "inconclusive" and its JSON object).
  // kNotFound for an unknown job, kInvalid for another outcome.
  virtual Status set_verdict(std::string_view job_id, std::string_view outcome,
                             std::string_view verdict_json) = 0;
  // Sets cancel_requested. A queued or interrupted job (nothing runs it) becomes cancelled at
  // once; a running one keeps running until the runner sees the flag.
  // kNotFound; kConflict when the job is already terminal.
  virtual Result<JobRecord> request_cancel(std::string_view job_id) = 0;
  // Start-up recovery: every running job becomes interrupted (its last_completed_step tells
  // where to resume) and its unfinished step rows (with their samples) are deleted, since the
  // resumed job re-runs that step. Returns the jobs so marked.
  virtual Result<std::vector<JobRecord>> mark_interrupted_at_startup() = 0;

  // Inserts a running step row; returns its id (samples reference it).
  // kNotFound: no such job; kConflict: seq already used in this job.
  virtual Result<std::int64_t> begin_step(const NewStep& step) = 0;
  // Writes summary/verdict/finished time and sets the job's last_completed_step = the step's
  // seq in one transaction. kNotFound: no such step; kConflict: step already completed.
  // To commit it after the step's samples, use SampleWriter::complete_step instead.
  virtual Status complete_step(const StepCompletion& completion) = 0;
  virtual Result<std::vector<StepRecord>> list_steps(std::string_view job_id) = 0;
  // Removes the job's steps with seq >= first_seq and everything they own (samples, telemetry),
  // and sets last_completed_step to the newest step left. A resumed job passes the seq after
  // its last completed step: only a step that was never completed goes, and is run again, so
  // each step is stored once. Returns how many steps were removed. kNotFound: no such job.
  virtual Result<std::int64_t> delete_steps_from(std::string_view job_id,
                                                 std::int64_t first_seq) = 0;

  // Samples of one step (id > after_id, ascending id), or of the whole job (ordered by step,
  // then id; after_id is the previous page's next_after_id, 0 for the first page). At most
  // limit (1..100000) rows. kNotFound: no such job, or the step is not this job's;
  // kInvalid: bad limit, or after_id not a sample of this job.
  virtual Result<SamplePage> read_samples(std::string_view job_id,
                                          std::optional<std::int64_t> step_id,
                                          std::int64_t after_id, int limit) = 0;
  // The same read with a filter (a step, and/or an intended-time range per step); the cursor
  // works the same (after_id: any sample of this job, filtered out or not). Same failures.
  virtual Result<SamplePage> read_samples(std::string_view job_id, const SampleFilter& filter,
                                          std::int64_t after_id, int limit) = 0;
  // Where a read of at most `limit` rows ends when more rows follow: the id of the limit-th
  // sample that read_samples(job_id, filter, after_id, ...) would return, when at least one
  // more sample passes the filter after it; nullopt when every remaining sample fits in
  // `limit`. Reads ids only (cheap for large limits). Same failures as read_samples.
  virtual Result<std::optional<std::int64_t>> sample_cut(std::string_view job_id,
                                                         const SampleFilter& filter,
                                                         std::int64_t after_id, int limit) = 0;
  // Synchronous insert in one transaction (small volumes; bulk goes through SampleWriter).
  virtual Status save_telemetry(const std::vector<TelemetryRow>& rows) = 0;
  virtual Result<TelemetryPage> read_telemetry(std::int64_t step_id, std::int64_t after_id,
                                               int limit) = 0;

  // Insert or replace the result for (job_id, target). kNotFound: no such job.
  virtual Status save_capacity(const CapacityRecord& record) = 0;
  virtual Result<std::vector<CapacityRecord>> list_capacity(std::string_view job_id) = 0;

  // Removes the job and everything it owns (cascade) and its plan when no other job uses it.
  // kNotFound; kConflict unless is_at_rest(state) (queued/running jobs cannot be deleted).
  virtual Status delete_job(std::string_view job_id) = 0;

  // Returns the new record's id. ts_ms 0 = now.
  virtual Result<std::int64_t> append_audit(const AuditRecord& record) = 0;
  // Newest first; job_id filters when given; before_id 0 = from the newest.
  virtual Result<AuditPage> list_audit(std::optional<std::string> job_id, std::int64_t before_id,
                                       int limit) = 0;

  // For the runner only: the credentials of a job (empty when none). kNotFound: no such job.
  virtual Result<std::vector<SecretRecord>> get_secrets(std::string_view job_id) = 0;
};

}  // namespace llmcap::storage

// SqliteJobStore: JobStore over the SQLite schema of migrations/0001_initial.sql.
//
// Connections: one for writes (every write is one IMMEDIATE transaction) and, for a file
// database, a second one for the reads the API serves, so reads proceed while a write commits
// (WAL). A ":memory:" store (tests) uses its single connection for both. Sample bulk inserts go
// through SampleWriter, which owns a third connection on its own thread.
//
// The database must already be migrated (storage::Migrator); open() checks for the jobs table.
// Ids: "job_<ulid>" and "plan_<ulid>" from an IdGenerator on the injected clock, so list order
// (newest first) is id order. Times: unix milliseconds from the injected clock.
//
// Final states the database cannot take: when update_state() to a terminal state fails with a
// storage error (disk full, read-only filesystem, I/O), the store keeps that state and its
// reason in memory and shows it in get_job/list_jobs (error "…; state not stored: …"), so a job
// whose storage failed reads `failed`, not `running`, for as long as this process lives; every
// later update_state() first retries storing it. (list_jobs filters by the stored state.)
//
// Ownership: owns its connections. Thread safety: every method may be called from any thread;
// writes are serialised by one mutex, reads by another. All methods block on SQLite — never call
// them on an Asio I/O thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "storage/database.h"
#include "storage/id_generator.h"
#include "storage/job_store.h"

namespace llmcap::storage {

struct SqliteJobStoreOptions {
  // Unix milliseconds for created/started/finished times; defaults to the system clock.
  std::function<std::int64_t()> now_ms;
  // Seed of the random part of ids; defaults to std::random_device.
  std::optional<std::uint64_t> id_seed;
  // Busy timeout of the store's own connections.
  int busy_timeout_ms = 5000;
};

class SqliteJobStore final : public JobStore {
 public:
  // Opens a writer and a reader connection on the (migrated) database file at `path`.
  // Fails with the open error, or kInvalid when the schema is missing.
  static Result<std::unique_ptr<SqliteJobStore>> open(const std::string& path,
                                                      SqliteJobStoreOptions options = {});
  // Uses one already-migrated connection for reads and writes (":memory:" databases in tests).
  static Result<std::unique_ptr<SqliteJobStore>> from_connection(
      Database db, SqliteJobStoreOptions options = {});

  // The body of complete_step, for a caller that already holds a transaction on `db`
  // (SampleWriter runs it in the transaction of the step's last samples). finished_at_ms 0 = now.
  static Status apply_step_completion(Database& db, const StepCompletion& completion);

  Result<CreateJobResult> create_job(const NewJob& job) override;
  Result<JobRecord> get_job(std::string_view job_id) override;
  Result<PlanRecord> get_plan(std::string_view plan_id) override;
  Result<JobPage> list_jobs(const JobFilter& filter) override;
  Result<JobRecord> update_state(std::string_view job_id, JobState to,
                                 std::string_view error_message = {}) override;
  Status set_progress(std::string_view job_id, std::string_view progress_json) override;
  Status set_verdict(std::string_view job_id, std::string_view outcome,
                     std::string_view verdict_json) override;
  Result<JobRecord> request_cancel(std::string_view job_id) override;
  Result<std::vector<JobRecord>> mark_interrupted_at_startup() override;
  Result<std::int64_t> begin_step(const NewStep& step) override;
  Status complete_step(const StepCompletion& completion) override;
  Result<std::int64_t> delete_steps_from(std::string_view job_id, std::int64_t first_seq) override;
  Result<std::vector<StepRecord>> list_steps(std::string_view job_id) override;
  Result<SamplePage> read_samples(std::string_view job_id, std::optional<std::int64_t> step_id,
                                  std::int64_t after_id, int limit) override;
  Result<SamplePage> read_samples(std::string_view job_id, const SampleFilter& filter,
                                  std::int64_t after_id, int limit) override;
  Result<std::optional<std::int64_t>> sample_cut(std::string_view job_id,
                                                 const SampleFilter& filter, std::int64_t after_id,
                                                 int limit) override;
  Status save_telemetry(const std::vector<TelemetryRow>& rows) override;
  Result<TelemetryPage> read_telemetry(std::int64_t step_id, std::int64_t after_id,
                                       int limit) override;
  Status save_capacity(const CapacityRecord& record) override;
  Result<std::vector<CapacityRecord>> list_capacity(std::string_view job_id) override;
  Status delete_job(std::string_view job_id) override;
  Result<std::int64_t> append_audit(const AuditRecord& record) override;
  Result<AuditPage> list_audit(std::optional<std::string> job_id, std::int64_t before_id,
                               int limit) override;
  Result<std::vector<SecretRecord>> get_secrets(std::string_view job_id) override;

 private:
  SqliteJobStore(Database writer, std::optional<Database> reader, SqliteJobStoreOptions options);
  std::int64_t now_ms() const { return now_ms_(); }
  Result<JobRecord> update_state_once(std::string_view job_id, JobState to,
                                      std::string_view error_message);
  // Errors of the database itself (not of the request): worth keeping a final state for.
  static bool is_storage_failure(const Status& status);
  void overlay_unstored(JobRecord& job) const;
  void retry_unstored();

  struct UnstoredState {
    JobState state = JobState::kFailed;
    std::string stored_error;   // what update_state() was asked to store
    std::string error_message;  // what readers see: that plus why it is not stored
    std::int64_t at_ms = 0;
  };

  std::function<std::int64_t()> now_ms_;
  IdGenerator ids_;
  std::mutex write_mutex_;
  Database writer_;  // guarded by write_mutex_
  std::mutex read_mutex_;
  std::optional<Database> reader_;  // guarded by read_mutex_; nullopt → reads use writer_
  mutable std::mutex unstored_mutex_;
  std::map<std::string, UnstoredState, std::less<>> unstored_;  // guarded by unstored_mutex_
};

}  // namespace llmcap::storage

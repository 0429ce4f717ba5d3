#include "storage/sqlite_job_store.h"

#include <chrono>
#include <cstdint>
#include <set>
#include <utility>

#include "storage/sample_inserter.h"
#include "storage/system_clock.h"
#include "storage/transaction.h"

namespace llmcap::storage {
namespace {

#define LLMCAP_STORAGE_TRY(expr)                                            \
  do {                                                                      \
    if (Status try_status_ = (expr); !try_status_.ok()) return try_status_; \
  } while (0)

constexpr int kMaxJobPage = 1000;
constexpr int kMaxSamplePage = 100000;
constexpr std::string_view kCursorPrefix = "c1.";

constexpr std::string_view kJobColumns =
    "id, plan_id, state, priority, created_at_ms, started_at_ms, finished_at_ms, submitted_by, "
    "error_message, progress_json, last_completed_step, cancel_requested, verdict, verdict_json, "
    "kind, tenant";

Status not_found_job(std::string_view job_id) {
  return Status(ErrorCode::kNotFound, "job " + std::string(job_id) + " not found");
}

JobRecord read_job_columns(const Statement& st) {
  JobRecord j;
  j.id = st.column_text(0);
  j.plan_id = st.column_text(1);
  j.state = parse_job_state(st.column_text(2)).value_or(JobState::kFailed);
  j.priority = static_cast<int>(st.column_int64(3));
  j.created_at_ms = st.column_int64(4);
  j.started_at_ms = st.column_optional_int64(5);
  j.finished_at_ms = st.column_optional_int64(6);
  j.submitted_by = st.column_text(7);
  j.error_message = st.column_text(8);
  j.progress_json = st.column_text(9);
  j.last_completed_step = st.column_optional_int64(10);
  j.cancel_requested = st.column_int64(11) != 0;
  if (!st.column_is_null(12)) j.verdict = st.column_text(12);
  if (!st.column_is_null(13)) j.verdict_json = st.column_text(13);
  j.kind = st.column_text(14);
  j.tenant = st.column_text(15);
  return j;
}

Status load_targets(Database& db, JobRecord& job) {
  Result<Statement> st = db.prepare(
      "SELECT name, base_url, hardware_json, price_per_hour FROM job_targets WHERE job_id = ? "
      "ORDER BY position");
  if (!st.ok()) return st.status();
  st->bind(1, std::string_view(job.id));
  job.targets.clear();
  for (;;) {
    Result<bool> row = st->step();
    if (!row.ok()) return row.status();
    if (!row.value()) return Status();
    job.targets.push_back(TargetRecord{st->column_text(0), st->column_text(1), st->column_text(2),
                                       st->column_optional_double(3)});
  }
}

Result<JobRecord> read_job(Database& db, std::string_view job_id) {
  Result<Statement> st =
      db.prepare("SELECT " + std::string(kJobColumns) + " FROM jobs WHERE id = ?");
  if (!st.ok()) return st.status();
  st->bind(1, job_id);
  Result<bool> row = st->step();
  if (!row.ok()) return row.status();
  if (!row.value()) return not_found_job(job_id);
  JobRecord job = read_job_columns(*st);
  LLMCAP_STORAGE_TRY(load_targets(db, job));
  return job;
}

Result<JobState> read_state(Database& db, std::string_view job_id) {
  Result<Statement> st = db.prepare("SELECT state FROM jobs WHERE id = ?");
  if (!st.ok()) return st.status();
  st->bind(1, job_id);
  Result<bool> row = st->step();
  if (!row.ok()) return row.status();
  if (!row.value()) return not_found_job(job_id);
  const std::optional<JobState> state = parse_job_state(st->column_text(0));
  if (!state) return Status(ErrorCode::kCorrupt, "job " + std::string(job_id) + " has bad state");
  return *state;
}

Status check_job_exists(Database& db, std::string_view job_id) {
  Result<JobState> state = read_state(db, job_id);
  return state.ok() ? Status() : state.status();
}

std::string encode_cursor(std::string_view last_id) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(kCursorPrefix);
  for (unsigned char c : last_id) {
    out += kHex[c >> 4];
    out += kHex[c & 0xf];
  }
  return out;
}

Result<std::string> decode_cursor(std::string_view cursor) {
  const Status bad(ErrorCode::kInvalid, "cursor: not a cursor returned by this API");
  if (!cursor.starts_with(kCursorPrefix)) return bad;
  const std::string_view hex = cursor.substr(kCursorPrefix.size());
  if (hex.size() % 2 != 0) return bad;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::string id;
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    const int hi = nibble(hex[i]);
    const int lo = nibble(hex[i + 1]);
    if (hi < 0 || lo < 0) return bad;
    id += static_cast<char>(hi * 16 + lo);
  }
  if (!IdGenerator::well_formed(id, "job")) return bad;
  return id;
}

StepRecord read_step_columns(const Statement& st) {
  StepRecord s;
  s.id = st.column_int64(0);
  s.job_id = st.column_text(1);
  s.seq = st.column_int64(2);
  s.target = st.column_text(3);
  s.phase_index = static_cast<int>(st.column_int64(4));
  s.phase_name = st.column_text(5);
  s.phase_kind = st.column_text(6);
  s.step_index = static_cast<int>(st.column_int64(7));
  s.params_json = st.column_text(8);
  s.summary_json = st.column_optional_text(9);
  s.verdict = st.column_optional_text(10);
  s.verdict_json = st.column_optional_text(11);
  s.partial = st.column_int64(12) != 0;
  s.started_at_ms = st.column_int64(13);
  s.finished_at_ms = st.column_optional_int64(14);
  return s;
}

Status check_limit(int limit, int max, std::string_view field) {
  if (limit < 1 || limit > max) {
    return Status(ErrorCode::kInvalid, std::string(field) + ": must be between 1 and " +
                                           std::to_string(max) + ", got " + std::to_string(limit));
  }
  return Status();
}

Status check_new_job(const NewJob& job) {
  if (job.targets.empty()) return Status(ErrorCode::kInvalid, "targets: at least one is required");
  std::set<std::string> names;
  for (std::size_t i = 0; i < job.targets.size(); ++i) {
    const TargetRecord& t = job.targets[i];
    const std::string field = "targets[" + std::to_string(i) + "]";
    if (t.name.empty()) return Status(ErrorCode::kInvalid, field + ".name: must not be empty");
    if (!names.insert(t.name).second) {
      return Status(ErrorCode::kInvalid, field + ".name: duplicate target name '" + t.name + "'");
    }
  }
  for (std::size_t i = 0; i < job.secrets.size(); ++i) {
    if (!names.contains(job.secrets[i].target)) {
      return Status(ErrorCode::kInvalid, "secrets[" + std::to_string(i) +
                                             "].target: unknown target '" + job.secrets[i].target +
                                             "'");
    }
  }
  if (job.tenant.empty()) return Status(ErrorCode::kInvalid, "tenant: must not be empty");
  if (job.idempotency_key.has_value() && job.idempotency_key->empty()) {
    return Status(ErrorCode::kInvalid, "idempotency_key: must not be empty when given");
  }
  return Status();
}

}  // namespace

// ---- construction -------------------------------------------------------------------------

SqliteJobStore::SqliteJobStore(Database writer, std::optional<Database> reader,
                               SqliteJobStoreOptions options)
    : now_ms_(options.now_ms ? std::move(options.now_ms)
                             : std::function<std::int64_t()>(system_now_ms)),
      ids_(now_ms_, options.id_seed),
      writer_(std::move(writer)),
      reader_(std::move(reader)) {}

namespace {
Status check_schema(Database& db) {
  Result<Statement> st =
      db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'jobs'");
  if (!st.ok()) return st.status();
  Result<bool> row = st->step();
  if (!row.ok()) return row.status();
  if (!row.value()) {
    return Status(ErrorCode::kInvalid,
                  "database " + db.path() + " has no jobs table: run the migrations first");
  }
  return Status();
}
}  // namespace

Result<std::unique_ptr<SqliteJobStore>> SqliteJobStore::open(const std::string& path,
                                                             SqliteJobStoreOptions options) {
  DatabaseOptions db_options;
  db_options.busy_timeout_ms = options.busy_timeout_ms;
  Result<Database> writer = Database::open(path, db_options);
  if (!writer.ok()) return writer.status();
  LLMCAP_STORAGE_TRY(check_schema(*writer));
  if (path == ":memory:") {
    return std::unique_ptr<SqliteJobStore>(
        new SqliteJobStore(std::move(writer).value(), std::nullopt, std::move(options)));
  }
  Result<Database> reader = Database::open(path, db_options);
  if (!reader.ok()) return reader.status();
  return std::unique_ptr<SqliteJobStore>(
      new SqliteJobStore(std::move(writer).value(), std::move(reader).value(), std::move(options)));
}

Result<std::unique_ptr<SqliteJobStore>> SqliteJobStore::from_connection(
    Database db, SqliteJobStoreOptions options) {
  LLMCAP_STORAGE_TRY(check_schema(db));
  return std::unique_ptr<SqliteJobStore>(
      new SqliteJobStore(std::move(db), std::nullopt, std::move(options)));
}

// Runs `read(Database&)` on the reader connection (or the writer when there is only one),
// holding the mutex that guards it.
#define LLMCAP_WITH_READER(db_var)                                               \
  std::unique_lock read_lock_(reader_.has_value() ? read_mutex_ : write_mutex_); \
  Database& db_var = reader_.has_value() ? *reader_ : writer_

// ---- jobs ---------------------------------------------------------------------------------

Result<CreateJobResult> SqliteJobStore::create_job(const NewJob& job) {
  LLMCAP_STORAGE_TRY(check_new_job(job));
  std::lock_guard lock(write_mutex_);
  Result<Transaction> tx = Transaction::begin(writer_);
  if (!tx.ok()) return tx.status();

  if (job.idempotency_key.has_value()) {
    Result<Statement> st = writer_.prepare(
        "SELECT request_hash, job_id FROM idempotency_keys WHERE tenant = ? AND key = ?");
    if (!st.ok()) return st.status();
    st->bind(1, std::string_view(job.tenant)).bind(2, std::string_view(*job.idempotency_key));
    Result<bool> row = st->step();
    if (!row.ok()) return row.status();
    if (row.value()) {
      if (st->column_text(0) != job.request_hash) {
        return Status(ErrorCode::kConflict, "idempotency key '" + *job.idempotency_key +
                                                "' was already used for a different request");
      }
      Result<JobRecord> existing = read_job(writer_, st->column_text(1));
      if (!existing.ok()) return existing.status();
      return CreateJobResult{std::move(existing).value(), false};
    }
  }

  const std::int64_t now = now_ms();
  const std::string plan_id = ids_.next("plan");
  const std::string job_id = ids_.next("job");
  {
    Result<Statement> st = writer_.prepare(
        "INSERT INTO plans (id, plan_json, workload_fingerprint, created_at_ms) VALUES (?,?,?,?)");
    if (!st.ok()) return st.status();
    LLMCAP_STORAGE_TRY(st->bind(1, std::string_view(plan_id))
                           .bind(2, std::string_view(job.plan_json))
                           .bind(3, std::string_view(job.workload_fingerprint))
                           .bind(4, now)
                           .run());
  }
  {
    Result<Statement> st = writer_.prepare(
        "INSERT INTO jobs (id, plan_id, state, priority, created_at_ms, submitted_by, kind, "
        "tenant) VALUES (?, ?, 'queued', ?, ?, ?, ?, ?)");
    if (!st.ok()) return st.status();
    LLMCAP_STORAGE_TRY(st->bind(1, std::string_view(job_id))
                           .bind(2, std::string_view(plan_id))
                           .bind(3, job.priority)
                           .bind(4, now)
                           .bind(5, std::string_view(job.submitted_by))
                           .bind(6, std::string_view(job.kind))
                           .bind(7, std::string_view(job.tenant))
                           .run());
  }
  {
    Result<Statement> st = writer_.prepare(
        "INSERT INTO job_targets (job_id, position, name, base_url, hardware_json, "
        "price_per_hour) VALUES (?,?,?,?,?,?)");
    if (!st.ok()) return st.status();
    for (std::size_t i = 0; i < job.targets.size(); ++i) {
      const TargetRecord& t = job.targets[i];
      st->reset();
      LLMCAP_STORAGE_TRY(st->bind(1, std::string_view(job_id))
                             .bind(2, i)
                             .bind(3, std::string_view(t.name))
                             .bind(4, std::string_view(t.base_url))
                             .bind(5, std::string_view(t.hardware_json))
                             .bind(6, t.price_per_hour)
                             .run());
    }
  }
  if (!job.secrets.empty()) {
    Result<Statement> st =
        writer_.prepare("INSERT INTO job_secrets (job_id, target, key, value) VALUES (?,?,?,?)");
    if (!st.ok()) return st.status();
    for (const SecretRecord& s : job.secrets) {
      st->reset();
      Status r = st->bind(1, std::string_view(job_id))
                     .bind(2, std::string_view(s.target))
                     .bind(3, std::string_view(s.key))
                     .bind(4, std::string_view(s.value))
                     .run();
      if (r.code() == ErrorCode::kConflict) {
        return Status(ErrorCode::kInvalid,
                      "secrets: key '" + s.key + "' given twice for target '" + s.target + "'");
      }
      LLMCAP_STORAGE_TRY(r);
    }
  }
  if (job.idempotency_key.has_value()) {
    Result<Statement> st = writer_.prepare(
        "INSERT INTO idempotency_keys (tenant, key, request_hash, job_id, created_at_ms) "
        "VALUES (?,?,?,?,?)");
    if (!st.ok()) return st.status();
    LLMCAP_STORAGE_TRY(st->bind(1, std::string_view(job.tenant))
                           .bind(2, std::string_view(*job.idempotency_key))
                           .bind(3, std::string_view(job.request_hash))
                           .bind(4, std::string_view(job_id))
                           .bind(5, now)
                           .run());
  }
  Result<JobRecord> created = read_job(writer_, job_id);
  if (!created.ok()) return created.status();
  LLMCAP_STORAGE_TRY(tx->commit());
  return CreateJobResult{std::move(created).value(), true};
}

Result<JobRecord> SqliteJobStore::get_job(std::string_view job_id) {
  Result<JobRecord> job = [&]() -> Result<JobRecord> {
    LLMCAP_WITH_READER(db);
    return read_job(db, job_id);
  }();
  if (job.ok()) overlay_unstored(job.value());
  return job;
}

Result<PlanRecord> SqliteJobStore::get_plan(std::string_view plan_id) {
  LLMCAP_WITH_READER(db);
  Result<Statement> st = db.prepare(
      "SELECT id, plan_json, workload_fingerprint, created_at_ms FROM plans WHERE id = ?");
  if (!st.ok()) return st.status();
  st->bind(1, plan_id);
  Result<bool> row = st->step();
  if (!row.ok()) return row.status();
  if (!row.value()) {
    return Status(ErrorCode::kNotFound, "plan " + std::string(plan_id) + " not found");
  }
  return PlanRecord{st->column_text(0), st->column_text(1), st->column_text(2),
                    st->column_int64(3)};
}

Result<JobPage> SqliteJobStore::list_jobs(const JobFilter& filter) {
  LLMCAP_STORAGE_TRY(check_limit(filter.limit, kMaxJobPage, "limit"));
  std::optional<std::string> after;
  if (!filter.cursor.empty()) {
    Result<std::string> id = decode_cursor(filter.cursor);
    if (!id.ok()) return id.status();
    after = std::move(id).value();
  }
  std::string sql = "SELECT " + std::string(kJobColumns) + " FROM jobs j WHERE 1 = 1";
  if (filter.state) sql += " AND j.state = :state";
  if (filter.verdict) sql += " AND j.verdict = :verdict";
  if (filter.kind) sql += " AND j.kind = :kind";
  if (filter.tenant) sql += " AND j.tenant = :tenant";
  if (filter.workload_fingerprint) {
    sql +=
        " AND EXISTS (SELECT 1 FROM plans p WHERE p.id = j.plan_id AND "
        "p.workload_fingerprint = :fingerprint)";
  }
  if (filter.target) {
    sql += " AND EXISTS (SELECT 1 FROM job_targets t WHERE t.job_id = j.id AND t.name = :target)";
  }
  if (filter.created_from_ms) sql += " AND j.created_at_ms >= :from_ms";
  if (filter.created_to_ms) sql += " AND j.created_at_ms < :to_ms";
  if (after) sql += " AND j.id < :after";
  sql += " ORDER BY j.id DESC LIMIT :limit";

  LLMCAP_WITH_READER(db);
  Result<Statement> st = db.prepare(sql);
  if (!st.ok()) return st.status();
  if (filter.state) st->bind(":state", to_string(*filter.state));
  if (filter.verdict) st->bind(":verdict", std::string_view(*filter.verdict));
  if (filter.kind) st->bind(":kind", std::string_view(*filter.kind));
  if (filter.tenant) st->bind(":tenant", std::string_view(*filter.tenant));
  if (filter.workload_fingerprint)
    st->bind(":fingerprint", std::string_view(*filter.workload_fingerprint));
  if (filter.target) st->bind(":target", std::string_view(*filter.target));
  if (filter.created_from_ms) st->bind(":from_ms", *filter.created_from_ms);
  if (filter.created_to_ms) st->bind(":to_ms", *filter.created_to_ms);
  if (after) st->bind(":after", std::string_view(*after));
  st->bind(":limit", filter.limit + 1);  // one extra row tells whether another page exists

  JobPage page;
  for (;;) {
    Result<bool> row = st->step();
    if (!row.ok()) return row.status();
    if (!row.value()) break;
    page.jobs.push_back(read_job_columns(*st));
  }
  if (page.jobs.size() > static_cast<std::size_t>(filter.limit)) {
    page.jobs.pop_back();
    page.next_cursor = encode_cursor(page.jobs.back().id);
  }
  for (JobRecord& job : page.jobs) {
    LLMCAP_STORAGE_TRY(load_targets(db, job));
    overlay_unstored(job);
  }
  return page;
}

bool SqliteJobStore::is_storage_failure(const Status& status) {
  return status.code() == ErrorCode::kDiskFull || status.code() == ErrorCode::kReadOnly ||
         status.code() == ErrorCode::kIoError || status.code() == ErrorCode::kBusy ||
         status.code() == ErrorCode::kCorrupt;
}

void SqliteJobStore::overlay_unstored(JobRecord& job) const {
  std::lock_guard lock(unstored_mutex_);
  const auto it = unstored_.find(job.id);
  if (it == unstored_.end()) return;
  job.state = it->second.state;
  job.error_message = it->second.error_message;
  job.finished_at_ms = it->second.at_ms;
}

void SqliteJobStore::retry_unstored() {
  std::map<std::string, UnstoredState, std::less<>> pending;
  {
    std::lock_guard lock(unstored_mutex_);
    pending = unstored_;
  }
  for (const auto& [id, state] : pending) {
    Result<JobRecord> stored = update_state_once(id, state.state, state.stored_error);
    // Stored now, or no longer storable as such (deleted, or moved on): drop the overlay.
    if (stored.ok() || !is_storage_failure(stored.status())) {
      std::lock_guard lock(unstored_mutex_);
      unstored_.erase(id);
    }
  }
}

Result<JobRecord> SqliteJobStore::update_state(std::string_view job_id, JobState to,
                                               std::string_view error_message) {
  retry_unstored();
  Result<JobRecord> job = update_state_once(job_id, to, error_message);
  if (job.ok() || !is_terminal(to) || !is_storage_failure(job.status())) return job;
  // The database cannot take the final state (disk full, read-only, I/O error). Readers of
  // this process see it anyway, with the reason; the next successful update stores it, and a
  // restart without it finds the job running → interrupted (resumable), never "running".
  UnstoredState unstored;
  unstored.state = to;
  unstored.stored_error = std::string(error_message);
  unstored.error_message = std::string(error_message);
  if (!unstored.error_message.empty()) unstored.error_message += "; ";
  unstored.error_message += "state not stored: " + job.status().to_string();
  unstored.at_ms = now_ms();
  {
    std::lock_guard lock(unstored_mutex_);
    unstored_[std::string(job_id)] = std::move(unstored);
  }
  return job;
}

Result<JobRecord> SqliteJobStore::update_state_once(std::string_view job_id, JobState to,
                                                    std::string_view error_message) {
  std::lock_guard lock(write_mutex_);
  Result<Transaction> tx = Transaction::begin(writer_);
  if (!tx.ok()) return tx.status();
  Result<JobState> from = read_state(writer_, job_id);
  if (!from.ok()) return from.status();
  if (!transition_allowed(*from, to)) {
    return Status(ErrorCode::kConflict, "job " + std::string(job_id) + " cannot go from " +
                                            std::string(to_string(*from)) + " to " +
                                            std::string(to_string(to)));
  }
  Result<Statement> st = writer_.prepare(
      "UPDATE jobs SET state = :state,"
      " started_at_ms = CASE WHEN :running THEN coalesce(started_at_ms, :now) ELSE started_at_ms "
      "END,"
      " finished_at_ms = CASE WHEN :terminal THEN :now ELSE finished_at_ms END,"
      " error_message = CASE WHEN :error != '' THEN :error ELSE error_message END"
      " WHERE id = :id");
  if (!st.ok()) return st.status();
  LLMCAP_STORAGE_TRY(st->bind(":state", to_string(to))
                         .bind(":running", to == JobState::kRunning ? 1 : 0)
                         .bind(":terminal", is_terminal(to) ? 1 : 0)
                         .bind(":now", now_ms())
                         .bind(":error", error_message)
                         .bind(":id", job_id)
                         .run());
  if (is_terminal(to)) {
    // A finished job never sends another request: its target secrets go with the state, in
    // the same transaction (secure_delete zeroes their pages; docs/security.md). Only an
    // interrupted job, which may resume, keeps them.
    Result<Statement> del = writer_.prepare("DELETE FROM job_secrets WHERE job_id = ?");
    if (!del.ok()) return del.status();
    LLMCAP_STORAGE_TRY(del->bind(1, job_id).run());
  }
  Result<JobRecord> job = read_job(writer_, job_id);
  if (!job.ok()) return job.status();
  LLMCAP_STORAGE_TRY(tx->commit());
  return job;
}

Status SqliteJobStore::set_progress(std::string_view job_id, std::string_view progress_json) {
  std::lock_guard lock(write_mutex_);
  Result<Statement> st = writer_.prepare("UPDATE jobs SET progress_json = ? WHERE id = ?");
  if (!st.ok()) return st.status();
  LLMCAP_STORAGE_TRY(st->bind(1, progress_json).bind(2, job_id).run());
  if (writer_.changes() == 0) return not_found_job(job_id);
  return Status();
}

Status SqliteJobStore::set_verdict(std::string_view job_id, std::string_view outcome,
                                   std::string_view verdict_json) {
  if (outcome != "pass" && outcome != "fail" && outcome != "inconclusive")
    return Status(ErrorCode::kInvalid,
                  "verdict: '" + std::string(outcome) + "' is not pass, fail or inconclusive");
  std::lock_guard lock(write_mutex_);
  Result<Statement> st =
      writer_.prepare("UPDATE jobs SET verdict = ?, verdict_json = ? WHERE id = ?");
  if (!st.ok()) return st.status();
  LLMCAP_STORAGE_TRY(st->bind(1, outcome).bind(2, verdict_json).bind(3, job_id).run());
  if (writer_.changes() == 0) return not_found_job(job_id);
  return Status();
}

Result<JobRecord> SqliteJobStore::request_cancel(std::string_view job_id) {
  std::lock_guard lock(write_mutex_);
  Result<Transaction> tx = Transaction::begin(writer_);
  if (!tx.ok()) return tx.status();
  Result<JobState> state = read_state(writer_, job_id);
  if (!state.ok()) return state.status();
  if (is_terminal(*state)) {
    return Status(ErrorCode::kConflict,
                  "job " + std::string(job_id) + " is already " + std::string(to_string(*state)));
  }
  // Nothing runs a queued or interrupted job, so it is cancelled here and now.
  const bool immediate = *state != JobState::kRunning;
  Result<Statement> st = writer_.prepare(
      "UPDATE jobs SET cancel_requested = 1,"
      " state = CASE WHEN :immediate THEN 'cancelled' ELSE state END,"
      " finished_at_ms = CASE WHEN :immediate THEN :now ELSE finished_at_ms END"
      " WHERE id = :id");
  if (!st.ok()) return st.status();
  LLMCAP_STORAGE_TRY(
      st->bind(":immediate", immediate ? 1 : 0).bind(":now", now_ms()).bind(":id", job_id).run());
  Result<JobRecord> job = read_job(writer_, job_id);
  if (!job.ok()) return job.status();
  LLMCAP_STORAGE_TRY(tx->commit());
  return job;
}

Result<std::vector<JobRecord>> SqliteJobStore::mark_interrupted_at_startup() {
  std::lock_guard lock(write_mutex_);
  Result<Transaction> tx = Transaction::begin(writer_);
  if (!tx.ok()) return tx.status();
  std::vector<std::string> ids;
  {
    Result<Statement> st =
        writer_.prepare("SELECT id FROM jobs WHERE state = 'running' ORDER BY id");
    if (!st.ok()) return st.status();
    for (;;) {
      Result<bool> row = st->step();
      if (!row.ok()) return row.status();
      if (!row.value()) break;
      ids.push_back(st->column_text(0));
    }
  }
  Result<Statement> mark = writer_.prepare("UPDATE jobs SET state = 'interrupted' WHERE id = ?");
  if (!mark.ok()) return mark.status();
  // The unfinished step is re-run on resume; its partial rows would duplicate it.
  Result<Statement> drop =
      writer_.prepare("DELETE FROM steps WHERE job_id = ? AND finished_at_ms IS NULL");
  if (!drop.ok()) return drop.status();
  std::vector<JobRecord> jobs;
  for (const std::string& id : ids) {
    mark->reset();
    LLMCAP_STORAGE_TRY(mark->bind(1, std::string_view(id)).run());
    drop->reset();
    LLMCAP_STORAGE_TRY(drop->bind(1, std::string_view(id)).run());
    Result<JobRecord> job = read_job(writer_, id);
    if (!job.ok()) return job.status();
    jobs.push_back(std::move(job).value());
  }
  LLMCAP_STORAGE_TRY(tx->commit());
  return jobs;
}

Status SqliteJobStore::delete_job(std::string_view job_id) {
  std::lock_guard lock(write_mutex_);
  Result<Transaction> tx = Transaction::begin(writer_);
  if (!tx.ok()) return tx.status();
  Result<JobState> state = read_state(writer_, job_id);
  if (!state.ok()) return state.status();
  if (!is_at_rest(*state)) {
    return Status(ErrorCode::kConflict, "job " + std::string(job_id) + " is " +
                                            std::string(to_string(*state)) +
                                            "; only finished or interrupted jobs can be deleted");
  }
  std::string plan_id;
  {
    Result<Statement> st = writer_.prepare("SELECT plan_id FROM jobs WHERE id = ?");
    if (!st.ok()) return st.status();
    st->bind(1, job_id);
    Result<bool> row = st->step();
    if (!row.ok()) return row.status();
    plan_id = st->column_text(0);
  }
  {
    Result<Statement> st = writer_.prepare("DELETE FROM jobs WHERE id = ?");
    if (!st.ok()) return st.status();
    LLMCAP_STORAGE_TRY(st->bind(1, job_id).run());
  }
  {
    Result<Statement> st = writer_.prepare(
        "DELETE FROM plans WHERE id = ?1 AND NOT EXISTS (SELECT 1 FROM jobs WHERE plan_id = ?1)");
    if (!st.ok()) return st.status();
    LLMCAP_STORAGE_TRY(st->bind(1, std::string_view(plan_id)).run());
  }
  return tx->commit();
}

// ---- steps --------------------------------------------------------------------------------

Result<std::int64_t> SqliteJobStore::begin_step(const NewStep& step) {
  std::lock_guard lock(write_mutex_);
  Result<Transaction> tx = Transaction::begin(writer_);
  if (!tx.ok()) return tx.status();
  LLMCAP_STORAGE_TRY(check_job_exists(writer_, step.job_id));
  Result<Statement> st = writer_.prepare(
      "INSERT INTO steps (job_id, seq, target, phase_index, phase_name, phase_kind, step_index,"
      " params_json, started_at_ms) VALUES (?,?,?,?,?,?,?,?,?)");
  if (!st.ok()) return st.status();
  Status s = st->bind(1, std::string_view(step.job_id))
                 .bind(2, step.seq)
                 .bind(3, std::string_view(step.target))
                 .bind(4, step.phase_index)
                 .bind(5, std::string_view(step.phase_name))
                 .bind(6, std::string_view(step.phase_kind))
                 .bind(7, step.step_index)
                 .bind(8, std::string_view(step.params_json))
                 .bind(9, step.started_at_ms != 0 ? step.started_at_ms : now_ms())
                 .run();
  if (s.code() == ErrorCode::kConflict) {
    return Status(ErrorCode::kConflict, "job " + step.job_id + " already has a step with seq " +
                                            std::to_string(step.seq));
  }
  LLMCAP_STORAGE_TRY(s);
  const std::int64_t id = writer_.last_insert_rowid();
  LLMCAP_STORAGE_TRY(tx->commit());
  return id;
}

Status SqliteJobStore::apply_step_completion(Database& db, const StepCompletion& c) {
  const std::int64_t finished = c.finished_at_ms != 0 ? c.finished_at_ms : system_now_ms();
  Result<Statement> st = db.prepare(
      "UPDATE steps SET summary_json = ?, verdict = ?, verdict_json = ?, partial = ?,"
      " finished_at_ms = ? WHERE id = ? AND finished_at_ms IS NULL");
  if (!st.ok()) return st.status();
  LLMCAP_STORAGE_TRY(st->bind(1, std::string_view(c.summary_json))
                         .bind(2, std::string_view(c.verdict))
                         .bind(3, std::string_view(c.verdict_json))
                         .bind(4, c.partial ? 1 : 0)
                         .bind(5, finished)
                         .bind(6, c.step_id)
                         .run());
  if (db.changes() == 0) {
    Result<Statement> exists = db.prepare("SELECT 1 FROM steps WHERE id = ?");
    if (!exists.ok()) return exists.status();
    exists->bind(1, c.step_id);
    Result<bool> row = exists->step();
    if (!row.ok()) return row.status();
    if (!row.value()) {
      return Status(ErrorCode::kNotFound, "step " + std::to_string(c.step_id) + " not found");
    }
    return Status(ErrorCode::kConflict,
                  "step " + std::to_string(c.step_id) + " is already completed");
  }
  Result<Statement> job = db.prepare(
      "UPDATE jobs SET last_completed_step = (SELECT seq FROM steps WHERE id = :step),"
      " progress_json = coalesce(:progress, progress_json)"
      " WHERE id = (SELECT job_id FROM steps WHERE id = :step)");
  if (!job.ok()) return job.status();
  return job->bind(":step", c.step_id).bind(":progress", c.progress_json).run();
}

Status SqliteJobStore::complete_step(const StepCompletion& completion) {
  std::lock_guard lock(write_mutex_);
  Result<Transaction> tx = Transaction::begin(writer_);
  if (!tx.ok()) return tx.status();
  StepCompletion c = completion;
  if (c.finished_at_ms == 0) c.finished_at_ms = now_ms();
  LLMCAP_STORAGE_TRY(apply_step_completion(writer_, c));
  return tx->commit();
}

Result<std::int64_t> SqliteJobStore::delete_steps_from(std::string_view job_id,
                                                       std::int64_t first_seq) {
  std::lock_guard lock(write_mutex_);
  Result<Transaction> tx = Transaction::begin(writer_);
  if (!tx.ok()) return tx.status();
  LLMCAP_STORAGE_TRY(check_job_exists(writer_, job_id));
  std::int64_t removed = 0;
  {
    // Samples and telemetry go with their steps (ON DELETE CASCADE).
    Result<Statement> st = writer_.prepare("DELETE FROM steps WHERE job_id = ? AND seq >= ?");
    if (!st.ok()) return st.status();
    LLMCAP_STORAGE_TRY(st->bind(1, job_id).bind(2, first_seq).run());
    removed = writer_.changes();
  }
  {
    Result<Statement> st = writer_.prepare(
        "UPDATE jobs SET last_completed_step = (SELECT max(seq) FROM steps"
        " WHERE job_id = ?1 AND finished_at_ms IS NOT NULL) WHERE id = ?1");
    if (!st.ok()) return st.status();
    LLMCAP_STORAGE_TRY(st->bind(1, job_id).run());
  }
  LLMCAP_STORAGE_TRY(tx->commit());
  return removed;
}

Result<std::vector<StepRecord>> SqliteJobStore::list_steps(std::string_view job_id) {
  LLMCAP_WITH_READER(db);
  LLMCAP_STORAGE_TRY(check_job_exists(db, job_id));
  Result<Statement> st = db.prepare(
      "SELECT id, job_id, seq, target, phase_index, phase_name, phase_kind, step_index,"
      " params_json, summary_json, verdict, verdict_json, partial, started_at_ms, finished_at_ms"
      " FROM steps WHERE job_id = ? ORDER BY seq");
  if (!st.ok()) return st.status();
  st->bind(1, job_id);
  std::vector<StepRecord> steps;
  for (;;) {
    Result<bool> row = st->step();
    if (!row.ok()) return row.status();
    if (!row.value()) return steps;
    steps.push_back(read_step_columns(*st));
  }
}

// ---- samples and telemetry -----------------------------------------------------------------

namespace {

// The steps a sample read visits, in order, and the cursor within the first of them. Pages are
// ordered by (step_id, id) and read one step at a time with an index range scan
// (step_id = ? AND id > ?), so paging through millions of rows stays linear overall.
struct SampleScan {
  std::vector<std::int64_t> steps;
  std::int64_t first_after = 0;
};

Result<SampleScan> plan_sample_scan(Database& db, std::string_view job_id,
                                    std::optional<std::int64_t> step_id, std::int64_t after_id) {
  LLMCAP_STORAGE_TRY(check_job_exists(db, job_id));
  SampleScan scan;
  scan.first_after = after_id;
  if (step_id) {
    Result<Statement> owner = db.prepare("SELECT 1 FROM steps WHERE id = ? AND job_id = ?");
    if (!owner.ok()) return owner.status();
    owner->bind(1, *step_id).bind(2, job_id);
    Result<bool> row = owner->step();
    if (!row.ok()) return row.status();
    if (!row.value()) {
      return Status(ErrorCode::kNotFound, "step " + std::to_string(*step_id) + " of job " +
                                              std::string(job_id) + " not found");
    }
    scan.steps.push_back(*step_id);
    return scan;
  }
  std::int64_t from_step = 0;
  if (after_id > 0) {
    Result<Statement> cursor = db.prepare(
        "SELECT r.step_id FROM request_samples r JOIN steps s ON s.id = r.step_id"
        " WHERE r.id = ? AND s.job_id = ?");
    if (!cursor.ok()) return cursor.status();
    cursor->bind(1, after_id).bind(2, job_id);
    Result<bool> row = cursor->step();
    if (!row.ok()) return row.status();
    if (!row.value()) {
      return Status(ErrorCode::kInvalid, "after_id: " + std::to_string(after_id) +
                                             " is not a sample of job " + std::string(job_id));
    }
    from_step = cursor->column_int64(0);
  }
  Result<Statement> list =
      db.prepare("SELECT id FROM steps WHERE job_id = ? AND id >= ? ORDER BY id");
  if (!list.ok()) return list.status();
  list->bind(1, job_id).bind(2, from_step);
  for (;;) {
    Result<bool> row = list->step();
    if (!row.ok()) return row.status();
    if (!row.value()) break;
    scan.steps.push_back(list->column_int64(0));
  }
  if (!scan.steps.empty() && scan.steps.front() != from_step) scan.first_after = 0;
  return scan;
}

// Runs `columns` over the scan's steps, at most `want` rows passing the filter's intended-time
// ranges, calling on_row(statement) for each.
template <typename OnRow>
Status run_sample_scan(Database& db, const SampleScan& scan, const SampleFilter& filter,
                       std::string_view columns, std::size_t want, OnRow on_row) {
  Result<Statement> st = db.prepare("SELECT " + std::string(columns) +
                                    " FROM request_samples WHERE step_id = ? AND id > ?"
                                    " AND t_intended_ns >= ? AND t_intended_ns < ?"
                                    " ORDER BY id LIMIT ?");
  if (!st.ok()) return st.status();
  std::size_t seen = 0;
  for (std::size_t i = 0; i < scan.steps.size() && seen < want; ++i) {
    IntendedRange range{INT64_MIN, INT64_MAX};
    if (filter.intended_by_step) {
      const auto it = filter.intended_by_step->find(scan.steps[i]);
      if (it == filter.intended_by_step->end()) continue;
      range = it->second;
    }
    st->reset();
    st->bind(1, scan.steps[i])
        .bind(2, i == 0 ? scan.first_after : 0)
        .bind(3, range.start_ns)
        .bind(4, range.end_ns)
        .bind(5, want - seen);
    for (;;) {
      Result<bool> row = st->step();
      if (!row.ok()) return row.status();
      if (!row.value()) break;
      on_row(*st);
      ++seen;
    }
  }
  return Status();
}

}  // namespace

Result<SamplePage> SqliteJobStore::read_samples(std::string_view job_id,
                                                std::optional<std::int64_t> step_id,
                                                std::int64_t after_id, int limit) {
  return read_samples(job_id, SampleFilter{step_id, std::nullopt}, after_id, limit);
}

Result<SamplePage> SqliteJobStore::read_samples(std::string_view job_id, const SampleFilter& filter,
                                                std::int64_t after_id, int limit) {
  LLMCAP_STORAGE_TRY(check_limit(limit, kMaxSamplePage, "limit"));
  LLMCAP_WITH_READER(db);
  Result<SampleScan> scan = plan_sample_scan(db, job_id, filter.step_id, after_id);
  if (!scan.ok()) return scan.status();
  SamplePage page;
  const std::size_t want = static_cast<std::size_t>(limit) + 1;  // +1: is there another page?
  LLMCAP_STORAGE_TRY(
      run_sample_scan(db, scan.value(), filter, kSampleColumns, want,
                      [&](const Statement& st) { page.rows.push_back(read_sample_row(st)); }));
  if (page.rows.size() > static_cast<std::size_t>(limit)) {
    page.rows.pop_back();
    page.next_after_id = page.rows.back().id;
  }
  return page;
}

Result<std::optional<std::int64_t>> SqliteJobStore::sample_cut(std::string_view job_id,
                                                               const SampleFilter& filter,
                                                               std::int64_t after_id, int limit) {
  LLMCAP_STORAGE_TRY(check_limit(limit, kMaxSamplePage, "limit"));
  LLMCAP_WITH_READER(db);
  Result<SampleScan> scan = plan_sample_scan(db, job_id, filter.step_id, after_id);
  if (!scan.ok()) return scan.status();
  std::size_t rows = 0;
  std::optional<std::int64_t> cut;
  LLMCAP_STORAGE_TRY(run_sample_scan(db, scan.value(), filter, "id",
                                     static_cast<std::size_t>(limit) + 1, [&](const Statement& st) {
                                       if (++rows == static_cast<std::size_t>(limit))
                                         cut = st.column_int64(0);
                                     }));
  if (rows <= static_cast<std::size_t>(limit)) return std::optional<std::int64_t>();
  return cut;
}

Status SqliteJobStore::save_telemetry(const std::vector<TelemetryRow>& rows) {
  std::lock_guard lock(write_mutex_);
  Result<Transaction> tx = Transaction::begin(writer_);
  if (!tx.ok()) return tx.status();
  Result<SampleInserter> inserter = SampleInserter::create(writer_);
  if (!inserter.ok()) return inserter.status();
  for (const TelemetryRow& row : rows) LLMCAP_STORAGE_TRY(inserter->insert(row));
  return tx->commit();
}

Result<TelemetryPage> SqliteJobStore::read_telemetry(std::int64_t step_id, std::int64_t after_id,
                                                     int limit) {
  LLMCAP_STORAGE_TRY(check_limit(limit, kMaxSamplePage, "limit"));
  LLMCAP_WITH_READER(db);
  Result<Statement> st = db.prepare(
      "SELECT id, step_id, t_ns, series, labels, value FROM telemetry_samples"
      " WHERE step_id = ? AND id > ? ORDER BY id LIMIT ?");
  if (!st.ok()) return st.status();
  st->bind(1, step_id).bind(2, after_id).bind(3, limit + 1);
  TelemetryPage page;
  for (;;) {
    Result<bool> row = st->step();
    if (!row.ok()) return row.status();
    if (!row.value()) break;
    page.rows.push_back(TelemetryRow{st->column_int64(0), st->column_int64(1), st->column_int64(2),
                                     st->column_text(3), st->column_text(4), st->column_double(5)});
  }
  if (page.rows.size() > static_cast<std::size_t>(limit)) {
    page.rows.pop_back();
    page.next_after_id = page.rows.back().id;
  }
  return page;
}

// ---- capacity, audit, secrets --------------------------------------------------------------

Status SqliteJobStore::save_capacity(const CapacityRecord& record) {
  std::lock_guard lock(write_mutex_);
  Result<Transaction> tx = Transaction::begin(writer_);
  if (!tx.ok()) return tx.status();
  LLMCAP_STORAGE_TRY(check_job_exists(writer_, record.job_id));
  Result<Statement> st = writer_.prepare(
      "INSERT INTO capacity_results (job_id, target, result_json, created_at_ms) VALUES (?,?,?,?)"
      " ON CONFLICT (job_id, target) DO UPDATE SET result_json = excluded.result_json,"
      " created_at_ms = excluded.created_at_ms");
  if (!st.ok()) return st.status();
  LLMCAP_STORAGE_TRY(st->bind(1, std::string_view(record.job_id))
                         .bind(2, std::string_view(record.target))
                         .bind(3, std::string_view(record.result_json))
                         .bind(4, now_ms())
                         .run());
  return tx->commit();
}

Result<std::vector<CapacityRecord>> SqliteJobStore::list_capacity(std::string_view job_id) {
  LLMCAP_WITH_READER(db);
  LLMCAP_STORAGE_TRY(check_job_exists(db, job_id));
  Result<Statement> st = db.prepare(
      "SELECT job_id, target, result_json, created_at_ms FROM capacity_results WHERE job_id = ?"
      " ORDER BY target");
  if (!st.ok()) return st.status();
  st->bind(1, job_id);
  std::vector<CapacityRecord> out;
  for (;;) {
    Result<bool> row = st->step();
    if (!row.ok()) return row.status();
    if (!row.value()) return out;
    out.push_back(CapacityRecord{st->column_text(0), st->column_text(1), st->column_text(2),
                                 st->column_int64(3)});
  }
}

Result<std::int64_t> SqliteJobStore::append_audit(const AuditRecord& record) {
  std::lock_guard lock(write_mutex_);
  Result<Statement> st = writer_.prepare(
      "INSERT INTO audit (ts_ms, actor, action, job_id, detail, tenant, token_id) "
      "VALUES (?,?,?,?,?,?,?)");
  if (!st.ok()) return st.status();
  LLMCAP_STORAGE_TRY(st->bind(1, record.ts_ms != 0 ? record.ts_ms : now_ms())
                         .bind(2, std::string_view(record.actor))
                         .bind(3, std::string_view(record.action))
                         .bind(4, record.job_id)
                         .bind(5, std::string_view(record.detail))
                         .bind(6, std::string_view(record.tenant))
                         .bind(7, std::string_view(record.token_id))
                         .run());
  return writer_.last_insert_rowid();
}

Result<AuditPage> SqliteJobStore::list_audit(std::optional<std::string> job_id,
                                             std::int64_t before_id, int limit) {
  LLMCAP_STORAGE_TRY(check_limit(limit, kMaxJobPage, "limit"));
  std::string sql =
      "SELECT id, ts_ms, actor, action, job_id, detail, tenant, token_id FROM audit WHERE 1 = 1";
  if (job_id) sql += " AND job_id = :job";
  if (before_id > 0) sql += " AND id < :before";
  sql += " ORDER BY id DESC LIMIT :limit";
  LLMCAP_WITH_READER(db);
  Result<Statement> st = db.prepare(sql);
  if (!st.ok()) return st.status();
  if (job_id) st->bind(":job", std::string_view(*job_id));
  if (before_id > 0) st->bind(":before", before_id);
  st->bind(":limit", limit + 1);
  AuditPage page;
  for (;;) {
    Result<bool> row = st->step();
    if (!row.ok()) return row.status();
    if (!row.value()) break;
    page.records.push_back(AuditRecord{st->column_int64(0), st->column_int64(1), st->column_text(2),
                                       st->column_text(3), st->column_optional_text(4),
                                       st->column_text(5), st->column_text(6), st->column_text(7)});
  }
  if (page.records.size() > static_cast<std::size_t>(limit)) {
    page.records.pop_back();
    page.next_before_id = page.records.back().id;
  }
  return page;
}

Result<std::vector<SecretRecord>> SqliteJobStore::get_secrets(std::string_view job_id) {
  LLMCAP_WITH_READER(db);
  LLMCAP_STORAGE_TRY(check_job_exists(db, job_id));
  Result<Statement> st = db.prepare(
      "SELECT target, key, value FROM job_secrets WHERE job_id = ? ORDER BY target, key");
  if (!st.ok()) return st.status();
  st->bind(1, job_id);
  std::vector<SecretRecord> out;
  for (;;) {
    Result<bool> row = st->step();
    if (!row.ok()) return row.status();
    if (!row.value()) return out;
    out.push_back(SecretRecord{st->column_text(0), st->column_text(1), st->column_text(2)});
  }
}

#undef LLMCAP_WITH_READER
#undef LLMCAP_STORAGE_TRY

}  // namespace llmcap::storage

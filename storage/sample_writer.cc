#include "storage/sample_writer.h"

#include <chrono>
#include <future>
#include <set>
#include <utility>

#include "storage/sqlite_job_store.h"

namespace llmcap::storage {

struct SampleWriter::Batch {
  bool open = false;
  Status error;                 // first failure inside this transaction
  std::size_t sample_rows = 0;  // rows handed to this transaction
  std::size_t telemetry_rows = 0;
  std::set<std::int64_t> steps;  // step_id of every sample row handed to this transaction
  std::chrono::steady_clock::time_point began;
  // Completion callbacks with their own result (ok unless the completion itself failed).
  std::vector<std::pair<Callback, Status>> done;
};

Result<std::unique_ptr<SampleWriter>> SampleWriter::open(const std::string& path,
                                                         SampleWriterOptions options) {
  if (path == ":memory:" || path.empty()) {
    return Status(ErrorCode::kInvalid,
                  "sample writer: database '" + path +
                      "' cannot be shared between connections; use a (temporary) file");
  }
  DatabaseOptions db_options;
  db_options.busy_timeout_ms = options.busy_timeout_ms;
  Result<Database> db = Database::open(path, db_options);
  if (!db.ok()) return db.status();
  if (options.max_page_count > 0) {
    Status s = db->exec("PRAGMA max_page_count = " + std::to_string(options.max_page_count));
    if (!s.ok()) return s;
  }
  Result<SampleInserter> inserter = SampleInserter::create(*db);
  if (!inserter.ok()) {
    return Status(inserter.code(), "sample writer on " + path + ": " + inserter.status().message() +
                                       " (run the migrations first)");
  }
  if (options.max_rows_per_transaction == 0) options.max_rows_per_transaction = 1;
  return std::unique_ptr<SampleWriter>(
      new SampleWriter(std::move(db).value(), std::move(inserter).value(), options));
}

SampleWriter::SampleWriter(Database db, SampleInserter inserter, SampleWriterOptions options)
    : options_(options), db_(std::move(db)), inserter_(std::move(inserter)) {
  thread_ = std::thread([this] { run(); });
}

SampleWriter::~SampleWriter() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

bool SampleWriter::push(Item item, std::size_t rows) {
  const auto* samples = std::get_if<Samples>(&item);
  const std::size_t sample_bytes = samples ? samples->rows.capacity_bytes() : 0;
  {
    std::lock_guard lock(mutex_);
    if (rows > 0 && queued_rows_ + rows > options_.max_queued_rows) {
      stats_.rows_dropped += rows;
      return false;
    }
    queued_rows_ += rows;
    queued_sample_bytes_ += sample_bytes;
    queue_.push_back(std::move(item));
  }
  wake_.notify_one();
  return true;
}

bool SampleWriter::enqueue(const std::vector<SampleRow>& rows) {
  if (rows.empty()) return true;
  PackedSamples packed;
  for (const SampleRow& row : rows) packed.append(row);
  return enqueue(std::move(packed));
}

bool SampleWriter::enqueue(PackedSamples rows) {
  if (rows.empty()) return true;
  const std::size_t n = rows.rows();
  // A grown buffer holds up to twice its bytes; what waits in the queue should not.
  if (rows.capacity_bytes() > rows.bytes() + rows.bytes() / 8) rows.shrink_to_fit();
  return push(Samples{std::move(rows)}, n);
}

bool SampleWriter::enqueue_telemetry(std::vector<TelemetryRow> rows) {
  if (rows.empty()) return true;
  const std::size_t n = rows.size();
  return push(Telemetry{std::move(rows)}, n);
}

void SampleWriter::complete_step(StepCompletion completion, Callback done) {
  push(Completion{std::move(completion), std::move(done)}, 0);
}

void SampleWriter::barrier(Callback done) { push(Barrier{std::move(done)}, 0); }

Status SampleWriter::flush() {
  std::promise<Status> promise;
  std::future<Status> result = promise.get_future();
  barrier([&promise](Status s) { promise.set_value(std::move(s)); });
  return result.get();
}

SampleWriterStats SampleWriter::stats() const {
  std::lock_guard lock(mutex_);
  SampleWriterStats out = stats_;
  out.queue_depth_rows = queued_rows_;
  out.queue_depth_sample_bytes = queued_sample_bytes_;
  return out;
}

void SampleWriter::run() {
  for (;;) {
    std::deque<Item> work;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      work.swap(queue_);
      queued_sample_bytes_ = 0;
    }
    process(work);
  }
}

void SampleWriter::ensure_open(Batch& batch) {
  if (batch.open) return;
  batch = Batch{};
  batch.open = true;
  batch.began = std::chrono::steady_clock::now();
  if (Status s = db_.exec("BEGIN IMMEDIATE"); !s.ok()) batch.error = s;
}

template <typename Row>
void SampleWriter::insert_row(Batch& batch, const Row& row) {
  ensure_open(batch);
  // After a failure SQLite may have rolled the transaction back already; inserting on would
  // commit rows one by one outside it, so the rest of this batch is skipped (counted failed).
  if (batch.error.ok()) {
    if (Status s = inserter_.insert(row); !s.ok()) batch.error = s;
  }
  if constexpr (std::is_same_v<Row, SampleRow>) {
    ++batch.sample_rows;
    batch.steps.insert(row.step_id);
  } else {
    ++batch.telemetry_rows;
  }
  if (batch.sample_rows + batch.telemetry_rows >= options_.max_rows_per_transaction) {
    finish(batch);
  }
}

void SampleWriter::finish(Batch& batch) {
  if (!batch.open) return;
  Status result = batch.error;
  if (result.ok()) {
    result = db_.exec("COMMIT");
  }
  if (!result.ok() && db_.in_transaction()) (void)db_.exec("ROLLBACK");
  const auto latency_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                              std::chrono::steady_clock::now() - batch.began)
                              .count();
  const std::size_t rows = batch.sample_rows + batch.telemetry_rows;
  {
    std::lock_guard lock(mutex_);
    queued_rows_ -= rows;
    ++stats_.batches;
    stats_.last_batch_latency_ns = latency_ns;
    stats_.max_batch_latency_ns = std::max(stats_.max_batch_latency_ns, latency_ns);
    // Running mean over all batches.
    stats_.avg_batch_latency_ns +=
        (latency_ns - stats_.avg_batch_latency_ns) / static_cast<std::int64_t>(stats_.batches);
    if (result.ok()) {
      stats_.rows_written += batch.sample_rows;
      stats_.telemetry_rows_written += batch.telemetry_rows;
    } else {
      stats_.rows_failed += rows;
      ++stats_.errors;
      stats_.last_error = result;
    }
  }
  if (!result.ok() && since_barrier_.ok()) since_barrier_ = result;
  // Only the steps whose samples were in this transaction lost rows: another job's (or a later
  // step's) completion must not fail for them.
  if (!result.ok()) {
    for (const std::int64_t step : batch.steps) failed_steps_.emplace(step, result);
  }
  if (options_.on_batch) options_.on_batch(latency_ns, rows, result);
  std::vector<std::pair<Callback, Status>> done = std::move(batch.done);
  batch = Batch{};
  for (auto& [callback, own] : done) {
    if (callback) callback(result.ok() ? own : result);
  }
}

void SampleWriter::process(std::deque<Item>& work) {
  Batch batch;
  for (Item& item : work) {
    if (auto* samples = std::get_if<Samples>(&item)) {
      PackedSamples::Reader reader(samples->rows);
      SampleRow row;  // reused: its strings and vector keep their capacity between rows
      while (reader.next(row)) insert_row(batch, row);
      samples->rows = PackedSamples{};  // give the memory back as soon as it is written
    } else if (auto* telemetry = std::get_if<Telemetry>(&item)) {
      for (const TelemetryRow& row : telemetry->rows) insert_row(batch, row);
    } else if (auto* completion = std::get_if<Completion>(&item)) {
      ensure_open(batch);
      Status own = batch.error;
      const std::int64_t step_id = completion->completion.step_id;
      if (const auto lost = failed_steps_.find(step_id); own.ok() && lost != failed_steps_.end()) {
        own = Status(
            lost->second.code(),
            "step " + std::to_string(step_id) +
                " not completed: some of its samples failed to commit: " + lost->second.message());
      }
      failed_steps_.erase(step_id);
      if (own.ok()) {
        // A savepoint keeps a failing completion (unknown step, already completed) from taking
        // the step's samples down with it.
        own = db_.exec("SAVEPOINT step_completion");
        if (own.ok()) {
          own = SqliteJobStore::apply_step_completion(db_, completion->completion);
          if (!own.ok() && db_.in_transaction()) {
            (void)db_.exec("ROLLBACK TO step_completion");
          }
          if (db_.in_transaction()) {
            (void)db_.exec("RELEASE step_completion");
          } else if (own.ok()) {
            own = Status(ErrorCode::kIoError, "transaction rolled back during step completion");
          }
        }
        // Disk full / I/O inside the completion poisons the transaction (SQLite may have rolled
        // it back already); a missing or already completed step does not.
        if (!own.ok() && own.code() != ErrorCode::kNotFound && own.code() != ErrorCode::kConflict) {
          batch.error = own;
        }
      }
      if (!own.ok() && batch.error.ok()) {
        std::lock_guard lock(mutex_);
        ++stats_.errors;
        stats_.last_error = own;
      }
      batch.done.emplace_back(std::move(completion->done), own);
      // Commit now: the caller is waiting for the step to be durable before the next one.
      finish(batch);
    } else if (auto* barrier = std::get_if<Barrier>(&item)) {
      finish(batch);
      Status status = std::exchange(since_barrier_, Status());
      if (barrier->done) barrier->done(std::move(status));
    }
  }
  finish(batch);
}

}  // namespace llmcap::storage

// SampleWriter: the one storage thread that persists request samples and telemetry in bulk.
//
// Measurement threads hand over rows with enqueue() and never wait on disk: the call takes a
// mutex only long enough to append to an in-memory queue. The writer thread, with its own
// connection, drains the queue and inserts in transactions of up to max_rows_per_transaction
// rows (thousands per commit: one fsync-free WAL append per batch with synchronous=NORMAL).
//
// Ordering: items are applied in enqueue order. complete_step() is a barrier that commits the
// step's summary/verdict (and the job's last_completed_step) in the SAME transaction as the rows
// enqueued before it, so a committed step always has all of its accepted samples — the
// restart-safety contract. barrier()/flush() commit everything enqueued before them.
//
// Overflow policy: the queue is bounded by max_queued_rows (rows accepted but not yet committed).
// An enqueue that would exceed it is refused WHOLE — the caller is never blocked — and its rows
// are counted in stats().rows_dropped; enqueue() returns false so the runner can mark the step
// partial. Errors (disk full, read-only, I/O): the transaction is rolled back, its rows are
// counted in rows_failed, the error is kept in stats().last_error and reported to the callbacks
// and flush() of that batch; the writer keeps running and tries the next batch.
//
// Memory: queued samples are held packed (PackedSamples, ≈ 35–45 bytes per streamed sample
// instead of a 184-byte SampleRow plus heap), decoded one row at a time on the writer thread.
//
// Ownership: owns its thread and connection; the destructor drains the queue, then joins.
// Thread safety: enqueue, enqueue_telemetry, complete_step, barrier, flush and stats may be
// called from any thread concurrently. Callbacks run ON THE WRITER THREAD after the commit: keep
// them short (post to an io_context) and never call flush() from one (it would wait on itself).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "storage/database.h"
#include "storage/packed_samples.h"
#include "storage/records.h"
#include "storage/sample_inserter.h"
#include "storage/status.h"

namespace llmcap::storage {

struct SampleWriterOptions {
  // Most rows (samples + telemetry) accepted but not yet committed; beyond it enqueue refuses.
  // 2M rows ≈ 0.3 GB of SampleRow: minutes of headroom at 10k requests/s.
  std::size_t max_queued_rows = 2'000'000;
  // Rows per transaction (bigger batches amortise the commit; smaller ones bound latency).
  std::size_t max_rows_per_transaction = 20'000;
  int busy_timeout_ms = 5000;
  // When > 0: PRAGMA max_page_count for the writer's connection, a cap on how far its inserts
  // may grow the file (a disk quota; tests use it to simulate a full disk). 0 = no cap.
  std::int64_t max_page_count = 0;
  // Called on the writer thread after every transaction (committed or failed) with its duration
  // and row count, e.g. to feed a latency histogram. Must be quick and must not call back into
  // the writer's blocking methods. Empty = none.
  std::function<void(std::int64_t latency_ns, std::size_t rows, const Status& result)> on_batch;
};

struct SampleWriterStats {
  std::size_t queue_depth_rows = 0;  // accepted, not yet committed or failed
  // Bytes of packed samples waiting in the queue (not yet taken by the writer thread).
  std::size_t queue_depth_sample_bytes = 0;
  std::uint64_t rows_written = 0;  // request samples committed
  std::uint64_t telemetry_rows_written = 0;
  std::uint64_t rows_dropped = 0;          // refused by enqueue (queue full)
  std::uint64_t rows_failed = 0;           // accepted but lost in a failed transaction
  std::uint64_t batches = 0;               // transactions attempted
  std::uint64_t errors = 0;                // failed transactions / step completions
  std::int64_t last_batch_latency_ns = 0;  // begin → commit of the last transaction
  std::int64_t avg_batch_latency_ns = 0;
  std::int64_t max_batch_latency_ns = 0;
  Status last_error;  // ok until something fails
};

class SampleWriter {
 public:
  using Callback = std::function<void(Status)>;

  // Opens its own connection to the (migrated) database at `path` and starts the thread.
  // Fails with the open error, or kInvalid when the sample tables are missing or `path` is
  // ":memory:" (a private in-memory database per connection; use a temporary file instead).
  static Result<std::unique_ptr<SampleWriter>> open(const std::string& path,
                                                    SampleWriterOptions options = {});
  ~SampleWriter();
  SampleWriter(const SampleWriter&) = delete;
  SampleWriter& operator=(const SampleWriter&) = delete;

  // Never blocks on I/O. false: the queue is full and ALL of `rows` were dropped (counted).
  // Each row's step_id must name a step row that is already committed.
  // The rows are packed on the calling thread before the lock is taken.
  bool enqueue(const std::vector<SampleRow>& rows);
  bool enqueue(PackedSamples rows);
  bool enqueue_telemetry(std::vector<TelemetryRow> rows);

  // Commits the step completion in the transaction of the rows enqueued before it, then calls
  // `done` with: ok; the completion's own error (kNotFound/kConflict — the samples are still
  // committed); or a write error. A write error — in this transaction, or in an earlier one
  // that held rows of this step (they were lost) — means the step is NOT completed: a completed
  // step always has all of its accepted samples. Lost rows of other steps do not count.
  void complete_step(StepCompletion completion, Callback done);
  // Calls `done` once everything enqueued before it is committed (or failed): ok when no
  // transaction failed since the previous barrier, else the first such error.
  void barrier(Callback done);
  // barrier() and wait. Blocks: do not call on an I/O thread or from a callback.
  Status flush();

  SampleWriterStats stats() const;

 private:
  struct Samples {
    PackedSamples rows;
  };
  struct Telemetry {
    std::vector<TelemetryRow> rows;
  };
  struct Completion {
    StepCompletion completion;
    Callback done;
  };
  struct Barrier {
    Callback done;
  };
  using Item = std::variant<Samples, Telemetry, Completion, Barrier>;

  SampleWriter(Database db, SampleInserter inserter, SampleWriterOptions options);
  bool push(Item item, std::size_t rows);
  void run();
  void process(std::deque<Item>& work);

  // Writer-thread state of the open transaction (touched only by the writer thread).
  struct Batch;
  void ensure_open(Batch& batch);
  void finish(Batch& batch);
  template <typename Row>
  void insert_row(Batch& batch, const Row& row);

  const SampleWriterOptions options_;
  Database db_;              // writer thread only
  SampleInserter inserter_;  // writer thread only
  Status since_barrier_;     // writer thread only: first failure since the last barrier
  // Writer thread only: steps with sample rows lost in a failed transaction (first error),
  // until their completion reports it.
  std::map<std::int64_t, Status> failed_steps_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Item> queue_;               // guarded by mutex_
  std::size_t queued_rows_ = 0;          // guarded by mutex_
  std::size_t queued_sample_bytes_ = 0;  // guarded by mutex_: packed bytes still in queue_
  bool stopping_ = false;                // guarded by mutex_
  SampleWriterStats stats_;  // guarded by mutex_ (queue_depth_rows filled in by stats())

  std::thread thread_;  // last: starts after everything above is built
};

}  // namespace llmcap::storage

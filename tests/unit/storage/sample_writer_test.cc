#include "storage/sample_writer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "storage/sqlite_job_store.h"
#include "tests/unit/storage/test_db.h"

namespace llmcap::storage {
namespace {

class SampleWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = testing::migrated_file_db(dir_);
    SqliteJobStoreOptions options;
    options.id_seed = 11;
    Result<std::unique_ptr<SqliteJobStore>> store = SqliteJobStore::open(path_, options);
    ASSERT_TRUE(store.ok()) << store.status().to_string();
    store_ = std::move(store).value();
    NewJob job;
    job.plan_json = "{}";
    job.workload_fingerprint = "w";
    job.targets = {{"a", "http://a", "{}", std::nullopt}};
    job_id_ = store_->create_job(job)->job.id;
    ASSERT_TRUE(store_->update_state(job_id_, JobState::kRunning).ok());
  }

  std::int64_t begin_step(std::int64_t seq) {
    NewStep s;
    s.job_id = job_id_;
    s.seq = seq;
    s.target = "a";
    s.phase_name = "p";
    s.phase_kind = "fixed";
    s.step_index = static_cast<int>(seq);
    Result<std::int64_t> id = store_->begin_step(s);
    EXPECT_TRUE(id.ok()) << id.status().to_string();
    return *id;
  }

  static std::vector<SampleRow> rows(std::int64_t step_id, int first, int count) {
    std::vector<SampleRow> out;
    for (int i = first; i < first + count; ++i) {
      SampleRow r;
      r.step_id = step_id;
      r.index = i;
      r.t_intended_ns = i * 10;
      r.t_end_ns = i * 10 + 7;
      r.http_status = 200;
      out.push_back(r);
    }
    return out;
  }

  std::int64_t count(const std::string& table) {
    Result<Database> db = Database::open(path_);
    EXPECT_TRUE(db.ok());
    return testing::count_rows(*db, table);
  }

  std::unique_ptr<SampleWriter> open_writer(SampleWriterOptions options = {}) {
    Result<std::unique_ptr<SampleWriter>> w = SampleWriter::open(path_, options);
    EXPECT_TRUE(w.ok()) << w.status().to_string();
    return std::move(w).value();
  }

  testing::TempDir dir_;
  std::string path_;
  std::unique_ptr<SqliteJobStore> store_;
  std::string job_id_;
};

TEST_F(SampleWriterTest, FlushCommitsEverythingEnqueuedBefore) {
  const std::int64_t step = begin_step(0);
  SampleWriterOptions options;
  options.max_rows_per_transaction = 100;
  auto writer = open_writer(options);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(writer->enqueue(rows(step, i * 55, 55)));
  ASSERT_TRUE(writer->enqueue_telemetry({{0, step, 1, "gpu_util", "gpu=\"0\"", 0.9}}));
  ASSERT_TRUE(writer->flush().ok());
  EXPECT_EQ(count("request_samples"), 550);
  EXPECT_EQ(count("telemetry_samples"), 1);
  SampleWriterStats stats = writer->stats();
  EXPECT_EQ(stats.rows_written, 550u);
  EXPECT_EQ(stats.telemetry_rows_written, 1u);
  EXPECT_EQ(stats.queue_depth_rows, 0u);
  EXPECT_EQ(stats.rows_dropped, 0u);
  EXPECT_EQ(stats.errors, 0u);
  EXPECT_TRUE(stats.last_error.ok());
  // 551 rows at ≤ 100 per transaction: at least 6 transactions, and batched (not one per row).
  EXPECT_GE(stats.batches, 6u);
  EXPECT_LE(stats.batches, 60u);
  EXPECT_GT(stats.avg_batch_latency_ns, 0);
  // Rows come back in enqueue order through the store's reader.
  Result<SamplePage> page = store_->read_samples(job_id_, step, 0, 1000);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->rows.size(), 550u);
  for (std::size_t i = 0; i < page->rows.size(); ++i) {
    ASSERT_EQ(page->rows[i].index, static_cast<std::int64_t>(i));
  }
}

TEST_F(SampleWriterTest, CompleteStepCommitsAfterItsSamplesInOneTransaction) {
  const std::int64_t step = begin_step(0);
  auto writer = open_writer();
  ASSERT_TRUE(writer->enqueue(rows(step, 0, 300)));
  std::promise<Status> done;
  writer->complete_step({step, R"({"n":300})", "pass", "{}", false, 123, R"({"step":0})"},
                        [&](Status s) { done.set_value(std::move(s)); });
  Status s = done.get_future().get();
  ASSERT_TRUE(s.ok()) << s.to_string();
  // By the time the callback runs, the step and all of its samples are committed.
  EXPECT_EQ(count("request_samples"), 300);
  Result<JobRecord> job = store_->get_job(job_id_);
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->last_completed_step, 0);
  EXPECT_EQ(job->progress_json, R"({"step":0})");
  Result<std::vector<StepRecord>> steps = store_->list_steps(job_id_);
  ASSERT_TRUE(steps.ok());
  EXPECT_EQ((*steps)[0].finished_at_ms, 123);
  EXPECT_EQ((*steps)[0].summary_json, R"({"n":300})");
}

TEST_F(SampleWriterTest, FailedCompletionKeepsSamplesAndReportsItsOwnError) {
  const std::int64_t step = begin_step(0);
  auto writer = open_writer();
  ASSERT_TRUE(writer->enqueue(rows(step, 0, 10)));
  std::promise<Status> done;
  writer->complete_step({999999, "{}", "pass", "{}", false, 1, std::nullopt},
                        [&](Status s) { done.set_value(std::move(s)); });
  EXPECT_EQ(done.get_future().get().code(), ErrorCode::kNotFound);
  EXPECT_EQ(count("request_samples"), 10);
  EXPECT_EQ(writer->stats().errors, 1u);
}

// Lost rows fail the completion of THEIR step only: a later step (here: of the job that
// follows a storage failure) completes normally once writes succeed again.
TEST_F(SampleWriterTest, LostRowsFailOnlyTheirOwnStep) {
  const std::int64_t good = begin_step(0);
  auto writer = open_writer();
  // Rows naming a step row that does not exist fail their transaction (foreign key).
  ASSERT_TRUE(writer->enqueue(rows(424242, 0, 5)));
  EXPECT_FALSE(writer->flush().ok());
  ASSERT_TRUE(writer->enqueue(rows(good, 0, 10)));
  std::promise<Status> done;
  writer->complete_step({good, "{}", "pass", "{}", false, 1, std::nullopt},
                        [&](Status s) { done.set_value(std::move(s)); });
  const Status st = done.get_future().get();
  EXPECT_TRUE(st.ok()) << st.to_string();
  EXPECT_EQ(count("request_samples"), 10);
  // The lost step's own completion still reports the loss.
  std::promise<Status> lost;
  writer->complete_step({424242, "{}", "pass", "{}", false, 1, std::nullopt},
                        [&](Status s) { lost.set_value(std::move(s)); });
  const Status lost_status = lost.get_future().get();
  EXPECT_FALSE(lost_status.ok());
  EXPECT_NE(lost_status.message().find("failed to commit"), std::string::npos)
      << lost_status.to_string();
}

TEST_F(SampleWriterTest, BarrierCallbacksRunInOrder) {
  const std::int64_t step = begin_step(0);
  auto writer = open_writer();
  std::vector<int> order;
  std::mutex mutex;
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(writer->enqueue(rows(step, i * 10, 10)));
    writer->barrier([&, i](Status s) {
      EXPECT_TRUE(s.ok());
      std::lock_guard lock(mutex);
      order.push_back(i);
    });
  }
  ASSERT_TRUE(writer->flush().ok());
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST_F(SampleWriterTest, ConcurrentProducersAllLand) {
  const std::int64_t step = begin_step(0);
  auto writer = open_writer();
  std::vector<std::thread> producers;
  for (int t = 0; t < 4; ++t) {
    producers.emplace_back([&, t] {
      for (int b = 0; b < 25; ++b) EXPECT_TRUE(writer->enqueue(rows(step, t * 10000 + b * 40, 40)));
    });
  }
  for (auto& p : producers) p.join();
  ASSERT_TRUE(writer->flush().ok());
  EXPECT_EQ(count("request_samples"), 4 * 25 * 40);
}

TEST_F(SampleWriterTest, FullQueueDropsWholeBatchWithoutBlocking) {
  const std::int64_t step = begin_step(0);
  SampleWriterOptions options;
  options.max_queued_rows = 100;
  auto writer = open_writer(options);
  // Hold the writer thread inside a callback so nothing drains while we fill the queue.
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> entered;
  writer->barrier([&](Status) {
    entered.set_value();
    released.wait();
  });
  entered.get_future().wait();
  EXPECT_TRUE(writer->enqueue(rows(step, 0, 60)));
  EXPECT_TRUE(writer->enqueue(rows(step, 60, 40)));   // exactly at the bound
  EXPECT_FALSE(writer->enqueue(rows(step, 100, 1)));  // over: refused, counted
  EXPECT_FALSE(writer->enqueue(rows(step, 101, 30)));
  SampleWriterStats stats = writer->stats();
  EXPECT_EQ(stats.queue_depth_rows, 100u);
  EXPECT_EQ(stats.rows_dropped, 31u);
  release.set_value();
  ASSERT_TRUE(writer->flush().ok());
  EXPECT_EQ(count("request_samples"), 100);
  EXPECT_TRUE(writer->enqueue(rows(step, 200, 50)));  // room again
  ASSERT_TRUE(writer->flush().ok());
  EXPECT_EQ(writer->stats().rows_written, 150u);
}

TEST_F(SampleWriterTest, OnBatchSeesEveryTransaction) {
  const std::int64_t step = begin_step(0);
  std::atomic<std::size_t> rows_seen{0};
  std::atomic<int> batches{0};
  SampleWriterOptions options;
  options.max_rows_per_transaction = 250;
  options.on_batch = [&](std::int64_t latency_ns, std::size_t n, const Status& s) {
    EXPECT_GE(latency_ns, 0);
    EXPECT_TRUE(s.ok());
    rows_seen += n;
    ++batches;
  };
  auto writer = open_writer(options);
  ASSERT_TRUE(writer->enqueue(rows(step, 0, 1000)));
  ASSERT_TRUE(writer->flush().ok());
  EXPECT_EQ(rows_seen.load(), 1000u);
  EXPECT_EQ(static_cast<std::uint64_t>(batches.load()), writer->stats().batches);
  EXPECT_GE(batches.load(), 4);
}

TEST_F(SampleWriterTest, MemoryDatabaseIsRefused) {
  Result<std::unique_ptr<SampleWriter>> w = SampleWriter::open(":memory:");
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.code(), ErrorCode::kInvalid);
  EXPECT_NE(w.status().message().find("file"), std::string::npos);
}

TEST_F(SampleWriterTest, UnmigratedDatabaseIsRefused) {
  Result<std::unique_ptr<SampleWriter>> w = SampleWriter::open(dir_.file("empty.db"));
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.code(), ErrorCode::kInvalid);
  EXPECT_NE(w.status().message().find("migrations"), std::string::npos);
}

TEST_F(SampleWriterTest, RestartResumesAfterTheLastCommittedStep) {
  const std::int64_t step0 = begin_step(0);
  {
    auto writer = open_writer();
    ASSERT_TRUE(writer->enqueue(rows(step0, 0, 500)));
    std::promise<Status> done;
    writer->complete_step({step0, "{}", "pass", "{}", false, 1, std::nullopt},
                          [&](Status s) { done.set_value(std::move(s)); });
    ASSERT_TRUE(done.get_future().get().ok());
    const std::int64_t step1 = begin_step(1);
    ASSERT_TRUE(writer->enqueue(rows(step1, 500, 300)));
    ASSERT_TRUE(writer->flush().ok());
    // "Crash": the daemon goes away mid-step 1 (no completion); drop every connection.
  }
  store_.reset();
  Result<std::unique_ptr<SqliteJobStore>> reopened = SqliteJobStore::open(path_);
  ASSERT_TRUE(reopened.ok());
  Result<std::vector<JobRecord>> interrupted = (*reopened)->mark_interrupted_at_startup();
  ASSERT_TRUE(interrupted.ok());
  ASSERT_EQ(interrupted->size(), 1u);
  EXPECT_EQ((*interrupted)[0].id, job_id_);
  EXPECT_EQ((*interrupted)[0].last_completed_step, 0);
  // Step 0 and its samples survive; the half-done step 1 is gone, ready to be re-run.
  Result<std::vector<StepRecord>> steps = (*reopened)->list_steps(job_id_);
  ASSERT_TRUE(steps.ok());
  ASSERT_EQ(steps->size(), 1u);
  EXPECT_EQ(count("request_samples"), 500);
}

TEST_F(SampleWriterTest, DestructorDrainsTheQueue) {
  const std::int64_t step = begin_step(0);
  {
    auto writer = open_writer();
    ASSERT_TRUE(writer->enqueue(rows(step, 0, 1234)));
  }
  EXPECT_EQ(count("request_samples"), 1234);
}

TEST_F(SampleWriterTest, UnknownStepIsAnErrorNotACrash) {
  auto writer = open_writer();
  ASSERT_TRUE(writer->enqueue(rows(424242, 0, 5)));  // foreign key: no such step
  Status s = writer->flush();
  EXPECT_EQ(s.code(), ErrorCode::kConflict) << s.to_string();
  SampleWriterStats stats = writer->stats();
  EXPECT_EQ(stats.rows_failed, 5u);
  EXPECT_EQ(stats.errors, 1u);
  EXPECT_EQ(stats.queue_depth_rows, 0u);
  EXPECT_FALSE(stats.last_error.ok());
  // The next flush with nothing failing is ok again.
  EXPECT_TRUE(writer->flush().ok());
}

TEST_F(SampleWriterTest, DiskFullIsReportedAndTheDatabaseStaysIntact) {
  const std::int64_t step = begin_step(0);
  {
    auto writer = open_writer();
    ASSERT_TRUE(writer->enqueue(rows(step, 0, 100)));
    ASSERT_TRUE(writer->flush().ok());
  }
  std::int64_t page_count = 0;
  {
    Result<Database> db = Database::open(path_);
    ASSERT_TRUE(db.ok());
    Result<Statement> pages = db->prepare("PRAGMA page_count");
    ASSERT_TRUE(pages.ok() && *pages->step());
    page_count = pages->column_int64(0);
  }
  // A page cap on the writer's connection stands in for a full disk (both are SQLITE_FULL).
  SampleWriterOptions options;
  options.max_page_count = page_count + 2;
  options.max_rows_per_transaction = 5000;
  auto writer = open_writer(options);
  ASSERT_TRUE(writer->enqueue(rows(step, 1000, 20000)));
  Status s = writer->flush();
  EXPECT_EQ(s.code(), ErrorCode::kDiskFull) << s.to_string();
  SampleWriterStats stats = writer->stats();
  EXPECT_GE(stats.errors, 1u);
  EXPECT_EQ(stats.last_error.code(), ErrorCode::kDiskFull);
  EXPECT_EQ(stats.rows_written + stats.rows_failed, 20000u);
  EXPECT_GT(stats.rows_failed, 0u);
  EXPECT_EQ(stats.queue_depth_rows, 0u);
  // A step completion behind the failure reports it too, instead of claiming durability.
  std::promise<Status> done;
  ASSERT_TRUE(writer->enqueue(rows(step, 50000, 20000)));
  writer->complete_step({step, "{}", "pass", "{}", false, 1, std::nullopt},
                        [&](Status st) { done.set_value(std::move(st)); });
  Status completed = done.get_future().get();
  EXPECT_EQ(completed.code(), ErrorCode::kDiskFull) << completed.to_string();
  Result<std::vector<StepRecord>> steps = store_->list_steps(job_id_);
  ASSERT_TRUE(steps.ok());
  EXPECT_FALSE((*steps)[0].finished_at_ms.has_value());     // not marked complete
  EXPECT_EQ(writer->flush().code(), ErrorCode::kDiskFull);  // failures since the last barrier
  // The writer keeps running: with nothing more to write, the next flush is ok.
  EXPECT_TRUE(writer->flush().ok());
  writer.reset();

  Result<Database> db = Database::open(path_);
  ASSERT_TRUE(db.ok());
  Result<Statement> check = db->prepare("PRAGMA integrity_check");
  ASSERT_TRUE(check.ok() && *check->step());
  EXPECT_EQ(check->column_text(0), "ok");
  // Whatever committed is whole transactions: the first 100 plus multiples of the batch size.
  const std::int64_t n = testing::count_rows(*db, "request_samples");
  EXPECT_EQ((n - 100) % 5000, 0) << n;
  EXPECT_EQ(n, 100 + static_cast<std::int64_t>(stats.rows_written));
}

}  // namespace
}  // namespace llmcap::storage

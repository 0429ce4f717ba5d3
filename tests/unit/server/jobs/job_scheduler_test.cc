#include "server/jobs/job_scheduler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <set>
#include <thread>

namespace llmcap::server {
namespace {

using namespace std::chrono_literals;

// A RunFn whose jobs block until released (or stopped), recording what ran concurrently.
struct Gate {
  std::mutex mu;
  std::condition_variable_any cv;  // stop-token aware waits
  std::set<std::string> released;
  std::set<std::string> running;
  std::vector<std::string> order;
  int max_parallel = 0;
  std::vector<std::string> stopped;

  JobScheduler::RunFn fn() {
    return [this](const std::string& id, std::stop_token stop) {
      std::unique_lock lock(mu);
      running.insert(id);
      order.push_back(id);
      max_parallel = std::max<int>(max_parallel, static_cast<int>(running.size()));
      cv.notify_all();
      cv.wait_for(lock, stop, 10s, [&] { return released.count(id) > 0; });
      if (stop.stop_requested()) stopped.push_back(id);
      running.erase(id);
      cv.notify_all();
    };
  }
  void release(const std::string& id) {
    std::lock_guard lock(mu);
    released.insert(id);
    cv.notify_all();
  }
  bool wait_running(const std::string& id) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, 5s, [&] { return running.count(id) > 0; });
  }
  bool wait_done(const std::string& id) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, 5s, [&] {
      return running.count(id) == 0 && std::find(order.begin(), order.end(), id) != order.end();
    });
  }
};

TEST(JobScheduler, RunsInPriorityThenFifoOrder) {
  Gate g;
  JobScheduler s({1, 10}, g.fn());
  ASSERT_EQ(s.submit("a", {"t1"}), JobScheduler::SubmitResult::kQueued);
  ASSERT_TRUE(g.wait_running("a"));
  s.submit("b", {"t1"}, 0);
  s.submit("c", {"t1"}, 5);
  s.submit("d", {"t1"}, 0);
  for (const char* id : {"a", "c", "b", "d"}) {
    ASSERT_TRUE(g.wait_running(id)) << id;
    g.release(id);
    ASSERT_TRUE(g.wait_done(id)) << id;
  }
  EXPECT_EQ(g.order, (std::vector<std::string>{"a", "c", "b", "d"}));
}

TEST(JobScheduler, NeverRunsTwoJobsOnOneTarget) {
  Gate g;
  JobScheduler s({2, 10}, g.fn());
  s.submit("a", {"gpu1"});
  ASSERT_TRUE(g.wait_running("a"));
  s.submit("b", {"gpu1", "gpu2"});  // shares gpu1: must wait
  s.submit("c", {"gpu3"});          // independent: may run beside a
  ASSERT_TRUE(g.wait_running("c"));
  {
    std::lock_guard lock(g.mu);
    EXPECT_EQ(g.running.count("b"), 0u);
  }
  g.release("a");
  ASSERT_TRUE(g.wait_running("b"));
  g.release("b");
  g.release("c");
  ASSERT_TRUE(g.wait_done("b"));
  EXPECT_EQ(g.max_parallel, 2);
}

TEST(JobScheduler, QueueLimitAndDuplicates) {
  Gate g;
  JobScheduler s({1, 2}, g.fn());
  s.submit("a", {"t"});
  ASSERT_TRUE(g.wait_running("a"));
  EXPECT_EQ(s.submit("b", {"t"}), JobScheduler::SubmitResult::kQueued);
  EXPECT_EQ(s.submit("b", {"t"}), JobScheduler::SubmitResult::kDuplicate);
  EXPECT_EQ(s.submit("c", {"t"}), JobScheduler::SubmitResult::kQueued);
  EXPECT_EQ(s.submit("d", {"t"}), JobScheduler::SubmitResult::kQueueFull);
  EXPECT_EQ(s.queued(), 2u);
  g.release("a");
  g.release("b");
  g.release("c");
}

TEST(JobScheduler, CancelQueuedAndRunning) {
  Gate g;
  JobScheduler s({1, 10}, g.fn());
  s.submit("a", {"t"});
  ASSERT_TRUE(g.wait_running("a"));
  s.submit("b", {"t"});
  EXPECT_EQ(s.cancel("b"), JobScheduler::CancelResult::kRemovedFromQueue);
  EXPECT_EQ(s.cancel("a"), JobScheduler::CancelResult::kStopRequested);
  ASSERT_TRUE(g.wait_done("a"));
  EXPECT_EQ(g.stopped, std::vector<std::string>{"a"});
  EXPECT_EQ(s.cancel("zzz"), JobScheduler::CancelResult::kNotActive);
}

// The job's RunFn stores its final state and then returns; DELETE waits for that return
// instead of answering 409 to a client that already saw the final state.
TEST(JobScheduler, WaitInactiveReturnsWhenTheWorkerLetsGo) {
  Gate g;
  JobScheduler s({1, 10}, g.fn());
  EXPECT_TRUE(s.wait_inactive("never-submitted", 0ms));
  s.submit("a", {"t"});
  ASSERT_TRUE(g.wait_running("a"));
  EXPECT_FALSE(s.wait_inactive("a", 20ms));  // still running: times out
  std::thread releaser([&] {
    std::this_thread::sleep_for(50ms);
    g.release("a");
  });
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(s.wait_inactive("a", 10s));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  EXPECT_FALSE(s.is_active("a"));
  releaser.join();
  // A queued job removed by cancel() wakes a waiter too.
  s.submit("b", {"t"});
  s.submit("c", {"t"});  // waits behind b (same target)
  std::thread canceller([&] {
    std::this_thread::sleep_for(50ms);
    s.cancel("c");
  });
  EXPECT_TRUE(s.wait_inactive("c", 10s));
  canceller.join();
  g.release("b");
}

TEST(JobScheduler, ShutdownStopsRunningJobsAfterGrace) {
  Gate g;
  JobScheduler s({1, 10}, g.fn());
  s.submit("a", {"t"});
  ASSERT_TRUE(g.wait_running("a"));
  const auto t0 = std::chrono::steady_clock::now();
  s.shutdown(100ms);
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(waited, 90ms);
  EXPECT_LT(waited, 5s);
  EXPECT_EQ(g.stopped, std::vector<std::string>{"a"});
  EXPECT_EQ(s.submit("x", {"t"}), JobScheduler::SubmitResult::kShuttingDown);
}

using Lane = JobScheduler::Lane;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Issue 32 #7: a prediction waited 7 minutes behind a measured job. Predictions have a worker of
// their own: one starts while the measured job still runs (that job is held by the gate until
// released, so the prediction cannot have run after it).
TEST(JobScheduler, APredictionRunsWhileAMeasuredJobHoldsTheOnlyWorker) {
  Gate g;
  JobScheduler s({1, 10}, g.fn());
  ASSERT_EQ(s.submit("measured", {"http://gpu1"}), JobScheduler::SubmitResult::kQueued);
  ASSERT_TRUE(g.wait_running("measured"));
  ASSERT_EQ(s.submit("prediction", {}, 0, Lane::kPrediction), JobScheduler::SubmitResult::kQueued);
  ASSERT_TRUE(g.wait_running("prediction"));
  g.release("prediction");
  ASSERT_TRUE(g.wait_done("prediction"));
  {
    std::lock_guard lock(g.mu);
    EXPECT_EQ(g.running.count("measured"), 1u);  // still running: nothing was waited for
    EXPECT_TRUE(g.stopped.empty());
  }
  EXPECT_EQ(g.max_parallel, 2);
  g.release("measured");
  ASSERT_TRUE(g.wait_done("measured"));
}

// And the other way: a long prediction never holds back a measured job.
TEST(JobScheduler, AMeasuredJobNeverWaitsForAPrediction) {
  Gate g;
  JobScheduler s({1, 10}, g.fn());
  s.submit("prediction", {}, 0, Lane::kPrediction);
  ASSERT_TRUE(g.wait_running("prediction"));
  s.submit("measured", {"http://gpu1"});
  ASSERT_TRUE(g.wait_running("measured"));
  g.release("measured");
  g.release("prediction");
  ASSERT_TRUE(g.wait_done("measured"));
  ASSERT_TRUE(g.wait_done("prediction"));
}

TEST(JobScheduler, EachLaneHasItsOwnQueueLimit) {
  Gate g;
  JobScheduler s({1, 1}, g.fn());
  s.submit("a", {"t"});
  ASSERT_TRUE(g.wait_running("a"));
  EXPECT_EQ(s.submit("b", {"t"}), JobScheduler::SubmitResult::kQueued);
  EXPECT_EQ(s.submit("c", {"t"}), JobScheduler::SubmitResult::kQueueFull);
  // The measured queue is full; predictions are still taken (and run).
  EXPECT_EQ(s.submit("p", {}, 0, Lane::kPrediction), JobScheduler::SubmitResult::kQueued);
  ASSERT_TRUE(g.wait_running("p"));
  EXPECT_EQ(s.submit("p2", {}, 0, Lane::kPrediction), JobScheduler::SubmitResult::kQueued);
  EXPECT_EQ(s.submit("p3", {}, 0, Lane::kPrediction), JobScheduler::SubmitResult::kQueueFull);
  // An id is one job whatever the lane.
  EXPECT_EQ(s.submit("b", {}, 0, Lane::kPrediction), JobScheduler::SubmitResult::kDuplicate);
  EXPECT_EQ(s.queued(), 2u);
  EXPECT_EQ(s.queued(Lane::kMeasured), 1u);
  EXPECT_EQ(s.queued(Lane::kPrediction), 1u);
  for (const char* id : {"a", "b", "p", "p2"}) g.release(id);
  for (const char* id : {"a", "b", "p", "p2"}) ASSERT_TRUE(g.wait_done(id)) << id;
}

// GET /v1/jobs/{id} shows why a queued job waits: the jobs ahead of it and the running jobs it
// waits for, named.
TEST(JobScheduler, QueueStatusNamesWhatAJobWaitsFor) {
  Gate g;
  JobScheduler s({1, 10}, g.fn());
  s.submit("a", {"gpu1"});
  ASSERT_TRUE(g.wait_running("a"));
  EXPECT_FALSE(s.queue_status("a"));  // running, not queued
  EXPECT_FALSE(s.queue_status("nope"));
  s.submit("b", {"gpu2"});
  s.submit("c", {"gpu1"}, 0);
  s.submit("d", {"gpu3"}, 7);  // higher priority: ahead of b and c

  const auto b = s.queue_status("b");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->lane, Lane::kMeasured);
  EXPECT_EQ(b->ahead, std::vector<std::string>{"d"});
  EXPECT_EQ(b->position, 2u);
  EXPECT_EQ(b->waiting_for, std::vector<std::string>{"a"});
  EXPECT_TRUE(contains(b->reason,
                       "waits for a free worker: the 1 measured-job worker(s) "
                       "(max_concurrent_jobs) run job a"))
      << b->reason;
  EXPECT_TRUE(contains(b->reason, "behind 1 queued measured job(s)")) << b->reason;

  const auto c = s.queue_status("c");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->ahead, (std::vector<std::string>{"d", "b"}));
  EXPECT_EQ(c->position, 3u);
  EXPECT_EQ(c->waiting_for, std::vector<std::string>{"a"});  // named once
  EXPECT_TRUE(contains(c->reason,
                       "waits for job a to finish: it loads the same target and holds the only "
                       "measured-job worker (max_concurrent_jobs 1); behind 2 queued"))
      << c->reason;

  const auto d = s.queue_status("d");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->position, 1u);
  EXPECT_TRUE(d->ahead.empty());

  // A queued prediction waits only for the prediction worker, never for job a.
  s.submit("p1", {}, 0, Lane::kPrediction);
  ASSERT_TRUE(g.wait_running("p1"));
  s.submit("p2", {}, 0, Lane::kPrediction);
  const auto p2 = s.queue_status("p2");
  ASSERT_TRUE(p2);
  EXPECT_EQ(p2->lane, Lane::kPrediction);
  EXPECT_EQ(p2->waiting_for, std::vector<std::string>{"p1"});
  EXPECT_TRUE(p2->ahead.empty());
  EXPECT_TRUE(contains(p2->reason, "the 1 prediction worker(s) run job p1")) << p2->reason;
  for (const char* id : {"a", "b", "c", "d", "p1", "p2"}) g.release(id);
  for (const char* id : {"a", "b", "c", "d", "p1", "p2"}) ASSERT_TRUE(g.wait_done(id)) << id;
}

// With a free worker, only a shared target holds a job back.
TEST(JobScheduler, QueueStatusOfAJobBlockedByItsTargetAlone) {
  Gate g;
  JobScheduler s({2, 10}, g.fn());
  s.submit("a", {"gpu1"});
  ASSERT_TRUE(g.wait_running("a"));
  s.submit("b", {"gpu1", "gpu2"});
  const auto b = s.queue_status("b");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->waiting_for, std::vector<std::string>{"a"});
  EXPECT_EQ(b->reason, "waits for job a to finish: it loads the same target");
  g.release("a");
  ASSERT_TRUE(g.wait_running("b"));
  EXPECT_FALSE(s.queue_status("b"));
  g.release("b");
  ASSERT_TRUE(g.wait_done("b"));
}

}  // namespace
}  // namespace llmcap::server

// JobScheduler: the daemon's job queue and its worker threads. Jobs wait in priority order
// (higher first, FIFO within a priority); up to max_concurrent_jobs run at once, and never two
// jobs that share a target (they would disturb each other's measurements). A job runs by
// calling the RunFn on a worker thread with a stop_token that cancel() and shutdown() trigger.
//
// Thread-safety: every public method may be called from any thread (state guarded by mu_).
// RunFn runs on the scheduler's worker threads, never on the caller's.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

namespace llmcap::server {

class JobScheduler {
 public:
  struct Options {
    int max_concurrent_jobs = 1;  // worker threads
    int max_queued_jobs = 64;     // submit() answers kQueueFull beyond this
  };
  using RunFn = std::function<void(const std::string& job_id, std::stop_token stop)>;

  JobScheduler(Options options, RunFn run);
  ~JobScheduler();  // shutdown(0)
  JobScheduler(const JobScheduler&) = delete;
  JobScheduler& operator=(const JobScheduler&) = delete;

  enum class SubmitResult { kQueued, kQueueFull, kShuttingDown, kDuplicate };
  // target_keys identify the targets the job loads (e.g. base URLs); jobs sharing a key never
  // run at the same time.
  SubmitResult submit(const std::string& job_id, std::vector<std::string> target_keys,
                      int priority = 0);

  enum class CancelResult { kRemovedFromQueue, kStopRequested, kNotActive };
  CancelResult cancel(const std::string& job_id);

  std::size_t queued() const;
  std::size_t running() const;
  bool is_active(const std::string& job_id) const;  // queued or running
  // Waits up to `timeout` until the job is neither queued nor running; true when it is not.
  // A RunFn stores a job's final state just before it returns, so a client can see that state
  // a moment before the worker lets go of the job: callers that act on a stored final state
  // (DELETE) wait here instead of answering "still running".
  bool wait_inactive(const std::string& job_id, std::chrono::milliseconds timeout) const;

  // Stops accepting jobs, lets running jobs finish for up to `grace`, then requests them to
  // stop and joins the workers. Queued jobs stay queued (they are persisted; the caller
  // decides what they become). Idempotent.
  void shutdown(std::chrono::milliseconds grace);

 private:
  struct Queued {
    std::string id;
    std::vector<std::string> targets;
    int priority = 0;
    std::uint64_t seq = 0;
  };
  struct Running {
    std::vector<std::string> targets;
    std::stop_source stop;
  };
  void worker_loop();
  // Index of the best runnable queued job, or -1. Requires mu_.
  long pick_locked() const;
  bool active_locked(const std::string& job_id) const;  // requires mu_

  Options options_;
  RunFn run_;
  mutable std::mutex mu_;
  std::condition_variable cv_;               // wakes workers (new job, job finished, shutdown)
  mutable std::condition_variable idle_cv_;  // wakes shutdown(), wait_inactive(): a job ended
  std::vector<Queued> queue_;                // GUARDED_BY(mu_)
  std::map<std::string, Running> running_;   // GUARDED_BY(mu_)
  std::uint64_t next_seq_ = 0;               // GUARDED_BY(mu_)
  bool accepting_ = true;                    // GUARDED_BY(mu_)
  bool stopping_ = false;                    // GUARDED_BY(mu_): workers exit when idle
  std::vector<std::thread> workers_;
};

}  // namespace llmcap::server

// JobScheduler: the daemon's job queues and their worker threads. Measured jobs wait in
// priority order (higher first, FIFO within a priority); up to max_concurrent_jobs run at once,
// and never two jobs that share a target (they would disturb each other's measurements).
// Predictions (POST /v1/predictions: virtual time, no target loaded, no load-generator
// resources) have a lane of their own: their own queue and max_concurrent_predictions workers,
// so a prediction never waits behind a measured job (issue 32 #7) and a measured job never
// waits behind a prediction. A job runs by calling the RunFn on a worker thread of its lane
// with a stop_token that cancel() and shutdown() trigger. queue_status() says why a queued job
// waits (GET /v1/jobs/{id}: `queue`).
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
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

namespace llmcap::server {

class JobScheduler {
 public:
  struct Options {
    int max_concurrent_jobs = 1;  // worker threads of measured jobs
    int max_queued_jobs = 64;     // per lane: submit() answers kQueueFull beyond this
    // Worker threads of predictions (virtual time, CPU only; the runner lowers their priority).
    int max_concurrent_predictions = 1;
  };
  // Which queue and workers a job uses. Jobs of one lane never wait for the other's.
  enum class Lane { kMeasured, kPrediction };
  using RunFn = std::function<void(const std::string& job_id, std::stop_token stop)>;

  JobScheduler(Options options, RunFn run);
  ~JobScheduler();  // shutdown(0)
  JobScheduler(const JobScheduler&) = delete;
  JobScheduler& operator=(const JobScheduler&) = delete;

  enum class SubmitResult { kQueued, kQueueFull, kShuttingDown, kDuplicate };
  // target_keys identify the targets the job loads (e.g. base URLs); jobs sharing a key never
  // run at the same time (a prediction loads none: pass no keys).
  SubmitResult submit(const std::string& job_id, std::vector<std::string> target_keys,
                      int priority = 0, Lane lane = Lane::kMeasured);

  enum class CancelResult { kRemovedFromQueue, kStopRequested, kNotActive };
  CancelResult cancel(const std::string& job_id);

  std::size_t queued() const;  // both lanes
  std::size_t queued(Lane lane) const;
  std::size_t running() const;

  // Why a queued job has not started: what it waits for, by job id.
  struct QueueStatus {
    Lane lane = Lane::kMeasured;
    std::size_t position = 1;        // 1: the next of its lane to start (once nothing blocks it)
    std::vector<std::string> ahead;  // queued jobs of its lane that start before it, in order
    // Running jobs it waits for: those that load one of its targets, and, when every worker of
    // its lane is busy, the jobs those workers run.
    std::vector<std::string> waiting_for;
    std::string reason;  // one sentence naming the jobs above
  };
  // nullopt when the job is not queued here (running, finished, or never submitted).
  std::optional<QueueStatus> queue_status(const std::string& job_id) const;
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
    Lane lane = Lane::kMeasured;
  };
  struct Running {
    std::vector<std::string> targets;
    std::stop_source stop;
    Lane lane = Lane::kMeasured;
  };
  void worker_loop(Lane lane);
  int workers_of(Lane lane) const;
  // Whether a starts before b when both may run (priority, then submission order).
  static bool runs_before(const Queued& a, const Queued& b);
  // Running jobs that load one of `targets`. Requires mu_.
  std::vector<std::string> conflicts_locked(const std::vector<std::string>& targets) const;
  std::size_t running_locked(Lane lane) const;  // requires mu_
  // Index of the best runnable queued job of `lane`, or -1. Requires mu_.
  long pick_locked(Lane lane) const;
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

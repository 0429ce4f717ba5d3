#include "server/jobs/job_scheduler.h"

#include <algorithm>

namespace llmcap::server {

JobScheduler::JobScheduler(Options options, RunFn run) : options_(options), run_(std::move(run)) {
  for (int i = 0; i < std::max(1, options_.max_concurrent_jobs); ++i) {
    workers_.emplace_back([this] { worker_loop(); });
  }
}

JobScheduler::~JobScheduler() { shutdown(std::chrono::milliseconds(0)); }

JobScheduler::SubmitResult JobScheduler::submit(const std::string& job_id,
                                                std::vector<std::string> target_keys,
                                                int priority) {
  std::lock_guard lock(mu_);
  if (!accepting_) return SubmitResult::kShuttingDown;
  if (running_.count(job_id) != 0 ||
      std::any_of(queue_.begin(), queue_.end(), [&](const Queued& q) { return q.id == job_id; }))
    return SubmitResult::kDuplicate;
  if (static_cast<int>(queue_.size()) >= options_.max_queued_jobs) return SubmitResult::kQueueFull;
  queue_.push_back({job_id, std::move(target_keys), priority, next_seq_++});
  cv_.notify_all();
  return SubmitResult::kQueued;
}

JobScheduler::CancelResult JobScheduler::cancel(const std::string& job_id) {
  std::lock_guard lock(mu_);
  auto it =
      std::find_if(queue_.begin(), queue_.end(), [&](const Queued& q) { return q.id == job_id; });
  if (it != queue_.end()) {
    queue_.erase(it);
    idle_cv_.notify_all();
    return CancelResult::kRemovedFromQueue;
  }
  auto r = running_.find(job_id);
  if (r != running_.end()) {
    r->second.stop.request_stop();
    return CancelResult::kStopRequested;
  }
  return CancelResult::kNotActive;
}

std::size_t JobScheduler::queued() const {
  std::lock_guard lock(mu_);
  return queue_.size();
}

std::size_t JobScheduler::running() const {
  std::lock_guard lock(mu_);
  return running_.size();
}

bool JobScheduler::is_active(const std::string& job_id) const {
  std::lock_guard lock(mu_);
  return active_locked(job_id);
}

bool JobScheduler::active_locked(const std::string& job_id) const {
  return running_.count(job_id) != 0 ||
         std::any_of(queue_.begin(), queue_.end(), [&](const Queued& q) { return q.id == job_id; });
}

bool JobScheduler::wait_inactive(const std::string& job_id,
                                 std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  return idle_cv_.wait_for(lock, timeout, [&] { return !active_locked(job_id); });
}

long JobScheduler::pick_locked() const {
  long best = -1;
  for (std::size_t i = 0; i < queue_.size(); ++i) {
    const auto& q = queue_[i];
    bool conflict = false;
    for (const auto& [id, r] : running_) {
      for (const auto& t : q.targets) {
        conflict = conflict || std::find(r.targets.begin(), r.targets.end(), t) != r.targets.end();
      }
    }
    if (conflict) continue;
    if (best < 0 || q.priority > queue_[static_cast<std::size_t>(best)].priority ||
        (q.priority == queue_[static_cast<std::size_t>(best)].priority &&
         q.seq < queue_[static_cast<std::size_t>(best)].seq)) {
      best = static_cast<long>(i);
    }
  }
  return best;
}

void JobScheduler::worker_loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    long pick = -1;
    cv_.wait(lock, [&] { return stopping_ || (accepting_ && (pick = pick_locked()) >= 0); });
    if (stopping_) return;
    Queued job = std::move(queue_[static_cast<std::size_t>(pick)]);
    queue_.erase(queue_.begin() + pick);
    auto& running = running_[job.id];
    running.targets = job.targets;
    const std::stop_token token = running.stop.get_token();
    lock.unlock();
    try {
      run_(job.id, token);
    } catch (...) {
      // RunFn reports its own failures; an escaped exception must not kill the worker.
    }
    lock.lock();
    running_.erase(job.id);
    idle_cv_.notify_all();
    cv_.notify_all();
  }
}

void JobScheduler::shutdown(std::chrono::milliseconds grace) {
  {
    std::unique_lock lock(mu_);
    accepting_ = false;
    idle_cv_.wait_for(lock, grace, [&] { return running_.empty(); });
    for (auto& [id, r] : running_) r.stop.request_stop();
    stopping_ = true;
    cv_.notify_all();
  }
  for (auto& w : workers_) {
    if (w.joinable()) w.join();
  }
  workers_.clear();
}

}  // namespace llmcap::server

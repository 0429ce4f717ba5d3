#include "server/jobs/job_scheduler.h"

#include <algorithm>

namespace llmcap::server {

namespace {

std::string joined(const std::vector<std::string>& ids) {
  std::string out;
  for (const auto& id : ids) out += (out.empty() ? "" : ", ") + id;
  return out;
}

}  // namespace

JobScheduler::JobScheduler(Options options, RunFn run) : options_(options), run_(std::move(run)) {
  for (const Lane lane : {Lane::kMeasured, Lane::kPrediction}) {
    for (int i = 0; i < workers_of(lane); ++i)
      workers_.emplace_back([this, lane] { worker_loop(lane); });
  }
}

int JobScheduler::workers_of(Lane lane) const {
  return std::max(1, lane == Lane::kMeasured ? options_.max_concurrent_jobs
                                             : options_.max_concurrent_predictions);
}

JobScheduler::~JobScheduler() { shutdown(std::chrono::milliseconds(0)); }

JobScheduler::SubmitResult JobScheduler::submit(const std::string& job_id,
                                                std::vector<std::string> target_keys, int priority,
                                                Lane lane) {
  std::lock_guard lock(mu_);
  if (!accepting_) return SubmitResult::kShuttingDown;
  if (active_locked(job_id)) return SubmitResult::kDuplicate;
  const auto in_lane = std::count_if(queue_.begin(), queue_.end(),
                                     [lane](const Queued& q) { return q.lane == lane; });
  if (in_lane >= options_.max_queued_jobs) return SubmitResult::kQueueFull;
  queue_.push_back({job_id, std::move(target_keys), priority, next_seq_++, lane});
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

std::size_t JobScheduler::queued(Lane lane) const {
  std::lock_guard lock(mu_);
  return static_cast<std::size_t>(std::count_if(
      queue_.begin(), queue_.end(), [lane](const Queued& q) { return q.lane == lane; }));
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

bool JobScheduler::runs_before(const Queued& a, const Queued& b) {
  return a.priority > b.priority || (a.priority == b.priority && a.seq < b.seq);
}

std::vector<std::string> JobScheduler::conflicts_locked(
    const std::vector<std::string>& targets) const {
  std::vector<std::string> ids;
  for (const auto& [id, r] : running_) {
    const bool shares = std::any_of(targets.begin(), targets.end(), [&r](const std::string& t) {
      return std::find(r.targets.begin(), r.targets.end(), t) != r.targets.end();
    });
    if (shares) ids.push_back(id);
  }
  return ids;
}

std::size_t JobScheduler::running_locked(Lane lane) const {
  return static_cast<std::size_t>(std::count_if(
      running_.begin(), running_.end(), [lane](const auto& r) { return r.second.lane == lane; }));
}

long JobScheduler::pick_locked(Lane lane) const {
  long best = -1;
  for (std::size_t i = 0; i < queue_.size(); ++i) {
    const auto& q = queue_[i];
    if (q.lane != lane || !conflicts_locked(q.targets).empty()) continue;
    if (best < 0 || runs_before(q, queue_[static_cast<std::size_t>(best)]))
      best = static_cast<long>(i);
  }
  return best;
}

std::optional<JobScheduler::QueueStatus> JobScheduler::queue_status(
    const std::string& job_id) const {
  std::lock_guard lock(mu_);
  const auto it =
      std::find_if(queue_.begin(), queue_.end(), [&](const Queued& q) { return q.id == job_id; });
  if (it == queue_.end()) return std::nullopt;
  QueueStatus st;
  st.lane = it->lane;
  std::vector<const Queued*> before;
  for (const auto& q : queue_)
    if (q.lane == it->lane && q.id != job_id && runs_before(q, *it)) before.push_back(&q);
  std::sort(before.begin(), before.end(),
            [](const Queued* a, const Queued* b) { return runs_before(*a, *b); });
  for (const auto* q : before) st.ahead.push_back(q->id);
  st.position = st.ahead.size() + 1;
  const std::vector<std::string> conflicts = conflicts_locked(it->targets);
  st.waiting_for = conflicts;
  const int workers = workers_of(it->lane);
  const bool busy = running_locked(it->lane) >= static_cast<std::size_t>(workers);
  std::vector<std::string> occupying;  // what the lane's workers run
  for (const auto& [id, r] : running_) {
    if (r.lane != it->lane) continue;
    occupying.push_back(id);
    if (busy && std::find(st.waiting_for.begin(), st.waiting_for.end(), id) == st.waiting_for.end())
      st.waiting_for.push_back(id);
  }
  const bool measured = it->lane == Lane::kMeasured;
  // When the jobs on its targets are also all that keeps the lane's workers busy, one sentence
  // says both (the same job is not named twice).
  const bool busy_with_conflicts =
      busy && std::all_of(occupying.begin(), occupying.end(), [&](const std::string& id) {
        return std::find(conflicts.begin(), conflicts.end(), id) != conflicts.end();
      });
  std::vector<std::string> parts;
  if (!conflicts.empty())
    parts.push_back("waits for job " + joined(conflicts) + " to finish: it loads the same target" +
                    (!busy_with_conflicts ? ""
                     : workers == 1
                         ? " and holds the only measured-job worker (max_concurrent_jobs 1)"
                         : " and every measured-job worker is busy (max_concurrent_jobs " +
                               std::to_string(workers) + ")"));
  if (busy && !busy_with_conflicts)
    parts.push_back("waits for a free worker: the " + std::to_string(workers) +
                    (measured ? " measured-job worker(s) (max_concurrent_jobs) run job "
                              : " prediction worker(s) run job ") +
                    joined(occupying));
  if (!st.ahead.empty())
    parts.push_back("behind " + std::to_string(st.ahead.size()) + " queued " +
                    (measured ? "measured job(s)" : "prediction(s)") +
                    " of higher priority or submitted earlier: " + joined(st.ahead));
  if (parts.empty()) parts.push_back("starting: nothing blocks it");
  for (const auto& p : parts) st.reason += (st.reason.empty() ? "" : "; ") + p;
  return st;
}

void JobScheduler::worker_loop(Lane lane) {
  std::unique_lock lock(mu_);
  for (;;) {
    long pick = -1;
    cv_.wait(lock, [&] { return stopping_ || (accepting_ && (pick = pick_locked(lane)) >= 0); });
    if (stopping_) return;
    Queued job = std::move(queue_[static_cast<std::size_t>(pick)]);
    queue_.erase(queue_.begin() + pick);
    auto& running = running_[job.id];
    running.targets = job.targets;
    running.lane = lane;
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

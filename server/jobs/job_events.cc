#include "server/jobs/job_events.h"

namespace llmcap::server {

void JobEvents::append(const std::string& job_id, std::string type, std::string data) {
  std::lock_guard lock(mu_);
  auto& log = logs_[job_id];
  log.touched = ++clock_;
  log.events.push_back({log.next_seq++, std::move(type), std::move(data)});
  while (log.events.size() > kMaxEventsPerJob) log.events.pop_front();
  if (logs_.size() > kMaxJobs) {
    // Evict the least recently touched finished log.
    auto victim = logs_.end();
    for (auto it = logs_.begin(); it != logs_.end(); ++it) {
      if (it->second.finished &&
          (victim == logs_.end() || it->second.touched < victim->second.touched))
        victim = it;
    }
    if (victim != logs_.end()) logs_.erase(victim);
  }
}

void JobEvents::finish(const std::string& job_id) {
  std::lock_guard lock(mu_);
  logs_[job_id].finished = true;
}

void JobEvents::reopen(const std::string& job_id) {
  std::lock_guard lock(mu_);
  logs_[job_id].finished = false;
}

JobEvents::Read JobEvents::read(const std::string& job_id, std::uint64_t after_seq) const {
  std::lock_guard lock(mu_);
  Read out;
  auto it = logs_.find(job_id);
  if (it == logs_.end()) return out;
  out.known = true;
  out.finished = it->second.finished;
  for (const auto& e : it->second.events) {
    if (e.seq > after_seq) out.events.push_back(e);
  }
  return out;
}

void JobEvents::forget(const std::string& job_id) {
  std::lock_guard lock(mu_);
  logs_.erase(job_id);
}

}  // namespace llmcap::server

#include "server/shard_hub.h"

#include <algorithm>

namespace llmcap::server {

void ShardHub::set_launcher(FleetLauncher launcher) {
  std::lock_guard lock(mu_);
  launcher_ = std::move(launcher);
}

std::shared_ptr<ShardCoordinator> ShardHub::open(const std::string& job_id,
                                                 const api::PlanAgents& agents) {
  std::lock_guard lock(mu_);
  ShardCoordinator::Options o;
  o.job_id = job_id;
  o.agents = agents;
  o.launcher = launcher_;
  auto c = std::make_shared<ShardCoordinator>(std::move(o));
  jobs_[job_id] = c;
  closed_.erase(std::remove(closed_.begin(), closed_.end(), job_id), closed_.end());
  return c;
}

void ShardHub::close(const std::string& job_id, const std::string& reason) {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return;
  it->second->finish(reason);
  closed_.push_back(job_id);
  while (closed_.size() > kKeepClosed) {
    jobs_.erase(closed_.front());
    closed_.pop_front();
  }
}

std::shared_ptr<ShardCoordinator> ShardHub::find(const std::string& job_id) const {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(job_id);
  return it == jobs_.end() ? nullptr : it->second;
}

}  // namespace llmcap::server

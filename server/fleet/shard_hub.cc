#include "server/fleet/shard_hub.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace llmcap::server {

void ShardHub::set_launcher(FleetLauncher launcher) {
  std::lock_guard lock(mu_);
  launcher_ = std::move(launcher);
}

std::string ShardHub::use_kubernetes(const K8sOptions& options) {
  std::string why;
  std::shared_ptr<AgentLauncher> launcher = make_agent_launcher(options, &why);
  if (!launcher) {
    set_launcher({});
    return why;
  }
  const std::string ns = service_account_namespace(options);
  {
    std::lock_guard lock(mu_);
    k8s_ = launcher;
    k8s_namespace_ = ns;
  }
  set_launcher([launcher, options, ns](const std::string& job_id, const api::PlanAgents& agents) {
    const LaunchResult r = launcher->launch(fleet_spec_for_plan(options, ns, job_id, agents));
    if (r.ok()) return std::string();
    return "launching the agents (" + std::string(launcher->kind()) +
           ") failed: " + std::string(launch_error_name(r.error)) + ": " + r.message;
  });
  return why;
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
  std::shared_ptr<ShardCoordinator> c = find(job_id);
  if (!c) return;
  c->finish(reason);
  std::shared_ptr<AgentLauncher> k8s;
  std::string ns;
  {
    std::lock_guard lock(mu_);
    k8s = k8s_;
    ns = k8s_namespace_;
  }
  // The agents exit on "done"; removing the Job also removes its finished pods.
  if (k8s && c->fleet_launched()) {
    const LaunchResult r = k8s->remove(job_id, ns);
    if (!r.ok() && r.error != LaunchError::kNotFound) {
      if (auto l = spdlog::get("server"))
        l->warn("job {}: removing its agent Job failed: {}", job_id, r.message);
    }
  }
  std::lock_guard lock(mu_);
  if (jobs_.find(job_id) == jobs_.end()) return;
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

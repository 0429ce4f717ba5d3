// ShardHub: the daemon's registry of agent fleets, one ShardCoordinator per running job whose
// plan has `agents` (issue 11). The JobRunner opens a job's coordinator before its first step
// and closes it when the job ends; the REST routes (server/fleet/shard_routes.h) find it by job id.
// A closed job's coordinator is kept (the most recent kKeepClosed) so agents still polling are
// told "done" rather than "no such job".
// Thread-safety: all methods may be called from any thread.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "server/fleet/k8s_launcher.h"
#include "server/fleet/shard_coordinator.h"

namespace llmcap::server {

class ShardHub {
 public:
  static constexpr std::size_t kKeepClosed = 64;

  // The Kubernetes launcher for plans with launch "kubernetes" (the daemon's AgentLauncher).
  void set_launcher(FleetLauncher launcher);
  // Makes the launcher from the daemon's k8s_* settings (make_agent_launcher: the Kubernetes
  // API in a pod with a service account, else printing the manifest; none for mode "off").
  // Jobs it launched have their Job removed when they end. Throws std::runtime_error like
  // make_agent_launcher (mode "api" outside a cluster). Returns which launcher and why.
  std::string use_kubernetes(const K8sOptions& options);
  // Replaces any earlier coordinator of the job (a resumed job registers its agents again).
  std::shared_ptr<ShardCoordinator> open(const std::string& job_id, const api::PlanAgents& agents);
  // Tells the job's agents it is over (reason: the job's final state) and keeps it for a while.
  void close(const std::string& job_id, const std::string& reason);
  // nullptr when the job has (or had recently) no fleet.
  std::shared_ptr<ShardCoordinator> find(const std::string& job_id) const;

 private:
  mutable std::mutex mu_;
  FleetLauncher launcher_;              // guarded by mu_
  std::shared_ptr<AgentLauncher> k8s_;  // guarded by mu_; from use_kubernetes()
  std::string k8s_namespace_;           // guarded by mu_; where k8s_ launches
  std::map<std::string, std::shared_ptr<ShardCoordinator>> jobs_;  // guarded by mu_
  std::deque<std::string> closed_;                                 // guarded by mu_, oldest first
};

}  // namespace llmcap::server

// KubernetesApiLauncher: the AgentLauncher that talks to the Kubernetes API server with the
// daemon's service account: POST /apis/batch/v1/namespaces/{ns}/jobs to create the Indexed
// Job, DELETE .../jobs/{name}?propagationPolicy=Background to remove it and its pods.
//
// Each call is one blocking HTTPS request on a private io_context (agent::HttpClient, so the
// TLS verification is the agent's: the cluster CA from ca.crt, the host name checked). The
// token file is re-read on every call: kubelet rotates bound service account tokens in place.
// remove() deletes in the namespace launch() used for that job when this launcher created it
// (so a caller's namespace argument cannot point elsewhere), else in the one it is given.
// Thread-safety: launch()/remove() may run concurrently (the namespace map is locked).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "agent/expected.h"
#include "server/fleet/k8s_launcher.h"

namespace llmcap::server {

// Where the API server is and how to authenticate to it.
struct KubernetesApiConfig {
  std::string api_url;               // "https://10.96.0.1:443" (http:// only for tests)
  std::string token_file;            // bearer token, re-read per request
  std::string ca_file;               // PEM of the cluster CA; "" = the system store
  std::string pod_namespace;         // namespace file of the service account ("" when absent)
  std::int64_t timeout_ms = 10'000;  // one request, connect to last byte
};

// The in-cluster configuration: KUBERNETES_SERVICE_HOST/_PORT (given here, so tests need not
// set the environment; an IPv6 host is bracketed) and the service account folder with
// token, ca.crt and namespace. Fails naming what is missing (not in a pod, no token mounted:
// automountServiceAccountToken false or no service account).
agent::Expected<KubernetesApiConfig> in_cluster_config(std::string_view service_host,
                                                       std::string_view service_port,
                                                       const std::string& service_account_dir);
// The same from this process's environment.
agent::Expected<KubernetesApiConfig> in_cluster_config_from_environment(
    const std::string& service_account_dir);

class KubernetesApiLauncher final : public AgentLauncher {
 public:
  explicit KubernetesApiLauncher(KubernetesApiConfig config);

  // 201 → ok with the created Job's name. 401/403/409 and transport failures → their
  // LaunchError with the API server's Status message and a hint (RBAC role, delete command).
  LaunchResult launch(const AgentFleetSpec& spec) override;
  // 200/202 → ok; 404 → kNotFound (already gone). namespace_name is used only for a job this
  // launcher did not create (e.g. before a daemon restart).
  LaunchResult remove(std::string_view job_id, std::string_view namespace_name) override;
  std::string_view kind() const override { return "kubernetes"; }

  const KubernetesApiConfig& config() const { return config_; }

 private:
  KubernetesApiConfig config_;
  std::mutex mu_;
  std::map<std::string, std::string, std::less<>> launched_namespace_;  // job id → ns; mu_
};

}  // namespace llmcap::server

// AgentLauncher: starts and removes the Kubernetes agent fleet of one llmcap job (issue 11).
// Two implementations: KubernetesApiLauncher (server/fleet/kubernetes_api_launcher.h) creates the
// Indexed Job through the Kubernetes API with the daemon's service account; ManifestPrinter
// (server/fleet/manifest_printer.h) only renders and logs the manifest, for `kubectl apply -f -`,
// when the daemon has no service account. make_agent_launcher() picks one from K8sOptions.
//
// Calls block (HTTPS to the API server, seconds at worst): call them from a scheduler worker
// or the blocking pool, never from an I/O thread. Expected failures (RBAC,
// conflict, unreachable API) are values, never exceptions.
// Thread-safety: implementations are safe to call from several threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "server/fleet/k8s_manifest.h"

namespace llmcap::api {
struct PlanAgents;
}

namespace llmcap::server {

enum class LaunchError {
  kNone,
  kInvalidSpec,    // the spec failed validate_agent_fleet_spec()
  kUnauthorized,   // 401: the service account token was rejected (expired, wrong cluster)
  kForbidden,      // 403: RBAC does not allow the verb (deploy/k8s/role.yaml)
  kAlreadyExists,  // 409 on create: a Job of that name exists (an earlier launch)
  kNotFound,       // 404 on delete: nothing to remove (already gone; callers may treat as done)
  kUnreachable,    // no TCP/TLS connection or no answer in time
  kApiError,       // any other non-success answer of the API server
};

// "forbidden", "already_exists", ... (stable, for logs and problem+json).
std::string_view launch_error_name(LaunchError e);

struct LaunchResult {
  LaunchError error = LaunchError::kNone;
  std::string message;         // what went wrong, with the API server's own message and a hint
  int http_status = 0;         // of the API server; 0 when none (printer, unreachable)
  std::string job_name;        // the Kubernetes Job (created, deleted or printed)
  std::string namespace_name;  // its namespace
  // ManifestPrinter: the YAML to apply by hand. KubernetesApiLauncher: empty.
  std::string manifest_text;
  bool ok() const { return error == LaunchError::kNone; }
};

class AgentLauncher {
 public:
  virtual ~AgentLauncher() = default;
  // Creates the fleet of spec.job_id (or, for the printer, renders it).
  virtual LaunchResult launch(const AgentFleetSpec& spec) = 0;
  // Removes the fleet of a job that ended or was cancelled: the Job and, in the background,
  // its pods. namespace_name: the namespace it was launched in.
  virtual LaunchResult remove(std::string_view job_id, std::string_view namespace_name) = 0;
  // "kubernetes" or "manifest", for logs and GET /v1/jobs/{id}/agents/manifest.
  virtual std::string_view kind() const = 0;
};

// Daemon settings of the Kubernetes launcher (DaemonConfig keys k8s_*; README, deploy/k8s/).
struct K8sOptions {
  // auto: the API when running in a pod with a service account, else print the manifest;
  // api: the API or a start-up error; print: always print; off: agents.launch=kubernetes
  // plans are refused.
  std::string mode = "auto";
  std::string namespace_name;  // "" = the pod's own namespace (service account), else "llmcap"
  std::string agent_image;     // image of the agent pods; "" = plans with agents cannot launch
  std::string daemon_url;      // how agent pods reach llmcapd, e.g. http://llmcapd.llmcap.svc:8080
  std::string agent_token_secret = "llmcap-agent-token";  // Secret with key "token"; "" = none
  std::string agent_service_account;  // service account of agent pods; "" = namespace default
  // Folder of the mounted service account (token, ca.crt, namespace).
  std::string service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
  std::int64_t api_timeout_ms = 10'000;  // deadline of one API request
};

// "" or the invalid field ("k8s_mode: must be auto, api, print or off").
std::string validate_k8s_options(const K8sOptions& options);

// The namespace of the daemon's own pod (the service account's namespace file), "" outside
// a pod. Pass it to fleet_spec_defaults()/fleet_spec_for_plan().
std::string service_account_namespace(const K8sOptions& options);

// The defaults every spec of this daemon starts from (image, daemon URL, namespace, token
// Secret, service account); the caller adds job_id, count, regions and placement.
AgentFleetSpec fleet_spec_defaults(const K8sOptions& options, std::string_view pod_namespace);

// The spec of one job's fleet from the plan's `agents` (api/test_plan.h): count, regions
// (cycled over the shards as PlanAgents::region_of does, so the pods get one label per shard),
// placement (spread zone → zone, node → hostname; node selector) over fleet_spec_defaults().
AgentFleetSpec fleet_spec_for_plan(const K8sOptions& options, std::string_view pod_namespace,
                                   std::string_view job_id, const api::PlanAgents& agents);

// The launcher for `options.mode`, or nullptr for "off". Throws std::runtime_error for mode
// "api" outside a cluster (a start-up configuration error). `why` (optional) says which one
// was chosen and why, for the start-up log.
std::unique_ptr<AgentLauncher> make_agent_launcher(const K8sOptions& options,
                                                   std::string* why = nullptr);

}  // namespace llmcap::server

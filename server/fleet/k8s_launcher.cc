#include "server/fleet/k8s_launcher.h"

#include <fstream>
#include <stdexcept>

#include "api/test_plan.h"
#include "server/fleet/kubernetes_api_launcher.h"
#include "server/fleet/manifest_printer.h"

namespace llmcap::server {

std::string_view launch_error_name(LaunchError e) {
  switch (e) {
    case LaunchError::kNone: return "none";
    case LaunchError::kInvalidSpec: return "invalid_spec";
    case LaunchError::kUnauthorized: return "unauthorized";
    case LaunchError::kForbidden: return "forbidden";
    case LaunchError::kAlreadyExists: return "already_exists";
    case LaunchError::kNotFound: return "not_found";
    case LaunchError::kUnreachable: return "unreachable";
    case LaunchError::kApiError: return "api_error";
  }
  return "unknown";
}

std::string validate_k8s_options(const K8sOptions& o) {
  if (o.mode != "auto" && o.mode != "api" && o.mode != "print" && o.mode != "off")
    return "k8s_mode: must be auto, api, print or off";
  if (!o.namespace_name.empty() && !is_dns1123_label(o.namespace_name))
    return "k8s_namespace: '" + o.namespace_name + "' is not a DNS-1123 label";
  if (o.api_timeout_ms < 100 || o.api_timeout_ms > 600'000)
    return "k8s_api_timeout_ms: must be in [100, 600000]";
  // The spec-level fields are checked with a placeholder job, so errors name them early.
  AgentFleetSpec probe = fleet_spec_defaults(o, "");
  probe.job_id = "job_probe";
  if (probe.image.empty()) probe.image = "llmcapd";  // unset image: plans fail at launch
  if (probe.daemon_url.empty()) probe.daemon_url = "http://llmcapd:8080";
  if (auto problem = validate_agent_fleet_spec(probe); !problem.empty()) {
    if (problem.rfind("image", 0) == 0) return "k8s_agent_image: " + problem;
    if (problem.rfind("daemon_url", 0) == 0) return "k8s_daemon_url: " + problem;
    if (problem.rfind("token_secret", 0) == 0) return "k8s_agent_token_secret: " + problem;
    if (problem.rfind("service_account", 0) == 0) return "k8s_agent_service_account: " + problem;
    return "k8s: " + problem;
  }
  return "";
}

std::string service_account_namespace(const K8sOptions& options) {
  std::ifstream in(options.service_account_dir + "/namespace");
  std::string ns;
  std::getline(in, ns);
  while (!ns.empty() && (ns.back() == ' ' || ns.back() == '\r')) ns.pop_back();
  return ns;
}

AgentFleetSpec fleet_spec_defaults(const K8sOptions& o, std::string_view pod_namespace) {
  AgentFleetSpec spec;
  spec.image = o.agent_image;
  spec.daemon_url = o.daemon_url;
  spec.namespace_name = !o.namespace_name.empty() ? o.namespace_name
                        : !pod_namespace.empty()  ? std::string(pod_namespace)
                                                  : std::string("llmcap");
  spec.token_secret_name = o.agent_token_secret;
  spec.service_account = o.agent_service_account;
  return spec;
}

AgentFleetSpec fleet_spec_for_plan(const K8sOptions& options, std::string_view pod_namespace,
                                   std::string_view job_id, const api::PlanAgents& agents) {
  AgentFleetSpec spec = fleet_spec_defaults(options, pod_namespace);
  spec.job_id = std::string(job_id);
  spec.count = agents.count;
  if (agents.regions.size() == 1) {
    spec.regions = agents.regions;
  } else if (!agents.regions.empty()) {
    for (std::int32_t k = 0; k < agents.count; ++k) spec.regions.push_back(agents.region_of(k));
  }
  spec.placement.spread_by_zone = agents.placement.spread == "zone";
  spec.placement.spread_by_hostname = agents.placement.spread == "node";
  for (const auto& [key, value] : agents.placement.node_selector)
    spec.placement.node_selector[key] = value;
  return spec;
}

std::unique_ptr<AgentLauncher> make_agent_launcher(const K8sOptions& o, std::string* why) {
  const auto say = [why](std::string text) {
    if (why) *why = std::move(text);
  };
  if (o.mode == "off") {
    say("k8s_mode off: plans with Kubernetes agents are refused");
    return nullptr;
  }
  if (o.mode == "print") {
    say("k8s_mode print: agent manifests are printed for kubectl apply");
    return std::make_unique<ManifestPrinter>();
  }
  auto cfg = in_cluster_config_from_environment(o.service_account_dir);
  if (!cfg) {
    if (o.mode == "api") throw std::runtime_error("k8s_mode api: " + cfg.error());
    say("k8s_mode auto: printing agent manifests for kubectl apply (" + cfg.error() + ")");
    return std::make_unique<ManifestPrinter>();
  }
  cfg.value().timeout_ms = o.api_timeout_ms;
  say("k8s_mode " + o.mode + ": agent Jobs are created through " + cfg.value().api_url);
  return std::make_unique<KubernetesApiLauncher>(std::move(cfg.value()));
}

}  // namespace llmcap::server

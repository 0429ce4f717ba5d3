// `llmcapd k8s-manifest`: prints the Kubernetes Indexed Job of a job's agent fleet
// (server/fleet/k8s_manifest.h) for `kubectl apply -f -`, from flags, without a daemon. The daemon
// serves the same text at GET /v1/jobs/{id}/agents/manifest.
#include <iostream>

#include "server/cli/command_line.h"
#include "server/cli/commands.h"
#include "server/cli/exit_codes.h"
#include "server/fleet/k8s_manifest.h"
#include "server/settings.h"

namespace llmcap::server {

int cmd_k8s_manifest(const std::vector<std::string>& args) {
  AgentFleetSpec spec;
  std::vector<std::string> node_selector;
  std::vector<std::string> spread = {"hostname"};
  std::string format = "yaml";
  std::int64_t backoff_limit = spec.backoff_limit;
  bool help = false;
  Settings s("");
  s.add("job", "llmcap job id (required)", &spec.job_id);
  s.add("count", "shards = agent pods", &spec.count);
  s.add("image", "agent container image (required)", &spec.image);
  s.add("image_pull_policy", "Always, IfNotPresent or Never", &spec.image_pull_policy);
  s.add("daemon_url", "how agent pods reach llmcapd (required)", &spec.daemon_url);
  s.add("namespace", "namespace of the Job", &spec.namespace_name);
  s.add("service_account", "service account of the agent pods", &spec.service_account);
  s.add("regions", "region label per shard (one for all, or one per shard)", &spec.regions);
  s.add("node_selector", "key=value node labels the pods require", &node_selector);
  s.add("spread", "topology spread: zone, hostname (list; none for no constraint)", &spread);
  s.add("spread_required", "DoNotSchedule instead of ScheduleAnyway",
        &spec.placement.spread_required);
  s.add("max_skew", "maxSkew of the spread constraints", &spec.placement.max_skew);
  s.add("cpu", "CPU request = limit of each agent", &spec.resources.cpu_request);
  s.add("memory", "memory request = limit of each agent", &spec.resources.memory_request);
  s.add("token_secret", "Secret with the agent token ('' = no token)", &spec.token_secret_name);
  s.add("token_secret_key", "key of the token in that Secret", &spec.token_secret_key);
  s.add("backoff_limit", "pod retries of the Job", &backoff_limit);
  s.add("active_deadline_s", "wall-clock limit of the Job", &spec.active_deadline_s);
  s.add("ttl_seconds_after_finished", "finished Job removed after",
        &spec.ttl_seconds_after_finished);
  s.add("format", "yaml or json", &format);
  s.add("help", "show this help", &help);
  std::vector<std::string> positional;
  const CommandLine cl{
      "k8s-manifest",
      "Usage: llmcapd k8s-manifest --job ID --count N --image IMAGE --daemon-url URL "
      "[flags] | kubectl apply -f -\n\nThe Kubernetes Indexed Job running the agents "
      "of one job (one pod per shard; deploy/k8s/README.md)."};
  if (auto rc = parse_command_line(cl, s, args, help, positional)) return *rc;
  spec.resources.cpu_limit = spec.resources.cpu_request;
  spec.resources.memory_limit = spec.resources.memory_request;
  if (backoff_limit < 0 || backoff_limit > 1'000'000) {
    std::cerr << "llmcapd k8s-manifest: backoff_limit: must be in [0, 1000000]\n";
    return kExitUsage;
  }
  spec.backoff_limit = static_cast<int>(backoff_limit);
  for (const auto& kv : node_selector) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos) {
      std::cerr << "llmcapd k8s-manifest: node_selector: '" << kv << "' is not key=value\n";
      return kExitUsage;
    }
    spec.placement.node_selector[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  spec.placement.spread_by_hostname = false;
  for (const auto& d : spread) {
    if (d == "zone") {
      spec.placement.spread_by_zone = true;
    } else if (d == "hostname") {
      spec.placement.spread_by_hostname = true;
    } else if (d != "none") {
      std::cerr << "llmcapd k8s-manifest: spread: '" << d << "' (want zone, hostname or none)\n";
      return kExitUsage;
    }
  }
  if (format != "yaml" && format != "json") {
    std::cerr << "llmcapd k8s-manifest: format: want yaml or json\n";
    return kExitUsage;
  }
  if (format == "json") {
    auto job = build_agent_job(spec);
    if (!job) {
      std::cerr << "llmcapd k8s-manifest: " << job.error() << "\n";
      return kExitUsage;
    }
    std::cout << job.value().dump(2) << "\n";
    return kExitOk;
  }
  auto yaml = agent_job_yaml(spec);
  if (!yaml) {
    std::cerr << "llmcapd k8s-manifest: " << yaml.error() << "\n";
    return kExitUsage;
  }
  std::cout << yaml.value();
  return kExitOk;
}

}  // namespace llmcap::server

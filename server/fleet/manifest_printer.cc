#include "server/fleet/manifest_printer.h"

#include <spdlog/spdlog.h>

namespace llmcap::server {

namespace {

void log_manifest(const std::string& job_id, const std::string& yaml) {
  auto logger = spdlog::get("server");
  if (!logger) logger = spdlog::default_logger();
  logger->info(
      "job {}: no Kubernetes service account; apply the agents with kubectl apply -f - "
      "(also at GET /v1/jobs/{}/agents/manifest):\n{}",
      job_id, job_id, yaml);
}

}  // namespace

ManifestPrinter::ManifestPrinter(Sink sink) : sink_(sink ? std::move(sink) : Sink(&log_manifest)) {}

LaunchResult ManifestPrinter::launch(const AgentFleetSpec& spec) {
  LaunchResult out;
  out.namespace_name = spec.namespace_name;
  auto yaml = agent_job_yaml(spec);
  if (!yaml) {
    out.error = LaunchError::kInvalidSpec;
    out.message = yaml.error();
    return out;
  }
  out.job_name = agent_job_name(spec.job_id).value();
  out.manifest_text = std::move(yaml.value());
  out.message = "printed; apply with: kubectl apply -f -";
  sink_(spec.job_id, out.manifest_text);
  return out;
}

LaunchResult ManifestPrinter::remove(std::string_view job_id, std::string_view namespace_name) {
  LaunchResult out;
  out.namespace_name = std::string(namespace_name);
  auto name = agent_job_name(job_id);
  if (!name) {
    out.error = LaunchError::kInvalidSpec;
    out.message = "job_id: " + name.error();
    return out;
  }
  out.job_name = name.value();
  out.message = "kubectl -n " + out.namespace_name + " delete job " + out.job_name;
  return out;
}

}  // namespace llmcap::server

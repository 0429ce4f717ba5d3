// ManifestPrinter: the AgentLauncher of a daemon without a service account (k8s_mode print,
// or auto outside a cluster). launch() renders the Indexed Job as YAML, hands it to the sink
// (by default the "server" logger at info level) and returns it in LaunchResult::manifest_text;
// an operator applies it with `kubectl apply -f -`, or fetches it again from
// GET /v1/jobs/{id}/agents/manifest. remove() cannot delete anything: it returns the kubectl
// command that does.
// Thread-safety: launch()/remove() may run concurrently when the sink may (spdlog's may).
#pragma once

#include <functional>
#include <string>

#include "server/fleet/k8s_launcher.h"

namespace llmcap::server {

class ManifestPrinter final : public AgentLauncher {
 public:
  // Receives each rendered manifest (with the job id). Empty: log it.
  using Sink = std::function<void(const std::string& job_id, const std::string& yaml)>;
  explicit ManifestPrinter(Sink sink = {});

  // Ok with manifest_text, or kInvalidSpec naming the field.
  LaunchResult launch(const AgentFleetSpec& spec) override;
  // Ok; message holds `kubectl -n NS delete job NAME`.
  LaunchResult remove(std::string_view job_id, std::string_view namespace_name) override;
  std::string_view kind() const override { return "manifest"; }

 private:
  Sink sink_;
};

}  // namespace llmcap::server

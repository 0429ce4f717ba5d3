// Whether an http(s) target is llmcap's own simulator, `llmcapd sim` (sim/sim_server.cc): its
// GET /v1/models lists the model with metadata.simulated true and the simulator's time_scale.
// Such a server runs its simulated GPU time_scale times faster than real time, so what is
// measured against it must be scaled back exactly as for a sim:// target, and it is a simulated
// target in the results; taken for a real server it read time_scale times optimistic (issue 40).
// simulator_identity() is pure; probe_simulator() blocks its caller for at most timeout_ms.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "agent/step_spec.h"

namespace llmcap::server {

struct SimulatorIdentity {
  double time_scale = 1;  // > 0
  std::string hardware;   // the simulator's profile, e.g. "a100-80g-pcie"
  std::string model;      // e.g. "llama-3.1-8b"
};

// From a GET /v1/models body: nullopt unless data[0].metadata.simulated is true (any other
// server, or a body that is not a model list); a time_scale that is missing, not a number or
// not > 0 reads 1.
std::optional<SimulatorIdentity> simulator_identity(std::string_view models_body);

// GET <base_url>/v1/models with the target's headers, TLS options and address allowlist;
// nullopt when the exchange fails (the steps then report the target's own errors) or the server
// is not llmcap's simulator.
std::optional<SimulatorIdentity> probe_simulator(const agent::TargetSpec& target,
                                                 std::int64_t timeout_ms = 5000);

}  // namespace llmcap::server

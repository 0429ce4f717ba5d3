// The wire format between the daemon and `llmcapd agent` (scale-out, issue 11): a shard's step
// spec (in an assignment) and its step result (in an upload) as JSON. Enums travel as their
// numeric values and every document carries kShardCodecVersion, so an agent of another build
// is refused with a clear message instead of misreading a field. Samples travel as arrays of
// their fields (compact, order fixed by this file). Pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "agent/step_result.h"
#include "agent/step_spec.h"

namespace llmcap::server {

// 2: step specs carry the target's address_allowlist (an agent of version 1 would ignore it).
inline constexpr int kShardCodecVersion = 2;

nlohmann::json step_spec_to_json(const agent::StepSpec& spec);
// Fails (returns the reason, naming the field) on a wrong version or a malformed document.
std::string step_spec_from_json(const nlohmann::json& j, agent::StepSpec& out);

nlohmann::json step_result_to_json(const agent::StepResult& result);
std::string step_result_from_json(const nlohmann::json& j, agent::StepResult& out);

}  // namespace llmcap::server

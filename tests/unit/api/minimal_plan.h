// The smallest valid plan (one simulated target, a two-level sweep): the starting point the
// plan-reader tests change one key of.
#pragma once

#include <nlohmann/json.hpp>

namespace llmcap::api::testing_plans {

inline nlohmann::json minimal() {
  return nlohmann::json::parse(R"({
    "version": 1,
    "targets": [{"name": "a", "base_url": "sim://rtx4090-48g/llama-3.1-8b"}],
    "phases": [{"kind": "concurrency_sweep", "levels": [1, 2]}]
  })");
}

}  // namespace llmcap::api::testing_plans

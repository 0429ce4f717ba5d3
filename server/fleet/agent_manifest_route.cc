#include "server/fleet/agent_manifest_route.h"

#include "api/problem_json.h"
#include "api/test_plan.h"

namespace llmcap::server {

using nlohmann::json;

namespace {

// The plan's `agents` as normalised by the plan reader (api/plan_reader.cc agents_json).
api::PlanAgents agents_of(const json& a) {
  api::PlanAgents out;
  out.count = a.value("count", 1);
  if (a.contains("regions") && a["regions"].is_array()) {
    for (const auto& r : a["regions"]) {
      if (r.is_string()) out.regions.push_back(r.get<std::string>());
    }
  }
  if (a.contains("placement") && a["placement"].is_object()) {
    const json& p = a["placement"];
    out.placement.spread = p.value("spread", std::string("none"));
    if (p.contains("node_selector") && p["node_selector"].is_object()) {
      for (const auto& [k, v] : p["node_selector"].items()) {
        if (v.is_string()) out.placement.node_selector.emplace_back(k, v.get<std::string>());
      }
    }
  }
  out.launch = a.value("launch", std::string("kubernetes"));
  return out;
}

}  // namespace

net::HttpResponse agent_manifest_response(const K8sOptions& options, std::string_view job_id,
                                          const json& plan_doc, bool want_json) {
  if (!plan_doc.is_object() || !plan_doc.contains("agents") || !plan_doc["agents"].is_object()) {
    return api::problem_response(
        api::ApiErrorCode::kNotFound,
        "job " + std::string(job_id) + " runs with the daemon's own agent: its plan has no agents");
  }
  const AgentFleetSpec spec = fleet_spec_for_plan(options, service_account_namespace(options),
                                                  job_id, agents_of(plan_doc["agents"]));
  if (auto problem = validate_agent_fleet_spec(spec); !problem.empty()) {
    if (problem.rfind("image", 0) == 0) problem = "k8s_agent_image: " + problem;
    if (problem.rfind("daemon_url", 0) == 0) problem = "k8s_daemon_url: " + problem;
    return api::problem_response(
        api::ApiErrorCode::kConflict,
        "the daemon's settings cannot make the agent manifest: " + problem);
  }
  if (want_json) return net::HttpResponse::json(200, build_agent_job(spec).value().dump(2));
  return net::HttpResponse::text(200, agent_job_yaml(spec).value(), "application/yaml");
}

}  // namespace llmcap::server

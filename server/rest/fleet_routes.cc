// Scale-out: the shard protocol agents speak (clock, register, assignment, results;
// server/fleet/shard_routes.h) and the agent Indexed Job manifest of a job.
#include "api/problem_json.h"
#include "server/fleet/agent_manifest_route.h"
#include "server/fleet/shard_routes.h"
#include "server/rest/rest_context.h"
#include "server/rest/routes.h"
#include "storage/job_store.h"

namespace llmcap::server {

namespace asio = boost::asio;
using api::ApiErrorCode;
using api::problem_response;
using net::HttpRequest;
using net::HttpResponse;
using nlohmann::json;

namespace {

// The agent Indexed Job of a job with plan `agents` (server/fleet/agent_manifest_route.h).
HttpResponse get_agents_manifest(RestContext& c, const HttpRequest& req, const PathParams& path) {
  const std::string& id = path.at("id");
  auto job = c.deps.store.get_job(id);
  if (!job.ok()) return storage_problem(job.status());
  auto plan = c.deps.store.get_plan(job.value().plan_id);
  if (!plan.ok()) return storage_problem(plan.status());
  const std::string accept(req.header("accept").value_or("application/yaml"));
  return agent_manifest_response(c.options.k8s, id,
                                 json::parse(plan.value().plan_json, nullptr, false),
                                 accept.find("application/json") != std::string::npos);
}

// A route of the shard protocol: 404 on a daemon without agent fleets.
BlockingHandler shard_route(std::string name) {
  return [name](RestContext& c, const HttpRequest& req, const PathParams& path) {
    if (!c.deps.shards) return problem_response(ApiErrorCode::kNotFound, "no agent fleets here");
    auto response = handle_shard_route(*c.deps.shards, name, path.at("id"), path.at("shard"), req);
    // Uploads that change a job are writes: logged and audited with the tenant and token id
    // (the clock exchange and assignment polls change nothing and are frequent).
    if ((name == "shard_register" || name == "shard_results") && response.status < 300)
      c.record_write(c.caller_of(req),
                     name == "shard_register" ? "shard.register" : "shard.results", path.at("id"),
                     "shard=" + path.at("shard"));
    return response;
  };
}

}  // namespace

std::vector<RouteSpec> fleet_routes() {
  return {
      {"GET",
       "/v1/jobs/{id}/agents/manifest",
       "get_agents_manifest",
       Access::kRead,
       get_agents_manifest,
       {}},
      {"POST",
       "/v1/jobs/{id}/shards/{shard}/clock",
       "shard_clock",
       Access::kAdmin,
       shard_route("shard_clock"),
       {}},
      {"POST",
       "/v1/jobs/{id}/shards/{shard}/register",
       "shard_register",
       Access::kAdmin,
       shard_route("shard_register"),
       {}},
      {"GET",
       "/v1/jobs/{id}/shards/{shard}/assignment",
       "shard_assignment",
       Access::kAdmin,
       shard_route("shard_assignment"),
       {}},
      {"POST",
       "/v1/jobs/{id}/shards/{shard}/results",
       "shard_results",
       Access::kAdmin,
       shard_route("shard_results"),
       {}},
  };
}

}  // namespace llmcap::server

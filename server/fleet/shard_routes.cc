#include "server/fleet/shard_routes.h"

#include <charconv>
#include <nlohmann/json.hpp>

#include "api/problem_json.h"
#include "server/fleet/shard_hub.h"

namespace llmcap::server {

using nlohmann::json;

namespace {

net::HttpResponse reply(const ShardReply& r) {
  if (r.http_status == 200) return net::HttpResponse::json(200, r.body.dump());
  api::ApiErrorCode code = api::ApiErrorCode::kInvalidRequest;
  if (r.http_status == 404) code = api::ApiErrorCode::kNotFound;
  if (r.http_status == 409) code = api::ApiErrorCode::kConflict;
  return api::problem_response(code, r.error);
}

bool parse_int(std::string_view s, std::int64_t& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

net::HttpResponse handle_shard_route(ShardHub& hub, const std::string& route,
                                     const std::string& job_id, const std::string& shard_text,
                                     const net::HttpRequest& req) {
  std::int64_t shard = 0;
  if (!parse_int(shard_text, shard) || shard < 0 || shard > 1'000'000)
    return api::problem_response(
        api::ApiErrorCode::kBadRequest,
        "shard must be a shard index 0, 1, ... (got '" + shard_text + "')");
  auto c = hub.find(job_id);
  if (!c)
    return api::problem_response(api::ApiErrorCode::kNotFound,
                                 "job " + job_id +
                                     " has no agent fleet (not running yet, or its plan has no "
                                     "agents)");
  const auto k = static_cast<std::int32_t>(shard);
  if (route == "shard_clock") return reply(c->clock_exchange());
  if (route == "shard_assignment") {
    std::int64_t after = -1;
    if (auto a = req.query_param("after"); a && !parse_int(*a, after))
      return api::problem_response(api::ApiErrorCode::kBadRequest, "after must be a step number");
    return reply(c->next_assignment(k, after));
  }
  json body = json::parse(req.body, nullptr, false);
  if (body.is_discarded())
    return api::problem_response(api::ApiErrorCode::kMalformedJson, "body is not valid JSON");
  if (route == "shard_register") return reply(c->register_shard(k, body));
  if (route == "shard_results") {
    const auto key = req.header("idempotency-key");
    return reply(c->upload(k, key ? std::string(*key) : std::string(), body));
  }
  return api::problem_response(api::ApiErrorCode::kNotFound, "no such resource");
}

}  // namespace llmcap::server

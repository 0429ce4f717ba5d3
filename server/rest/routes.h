// The REST API's route table: one row per route — method, path pattern, stable name (the
// `route` label of llmcap_api_request_duration_seconds), who may call it, and its handler. Each
// resource file contributes its rows; rest_api.cc matches requests against the whole table (404
// and 405 fall out of it) and applies the row's access rule before the handler runs.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "net/http_server.h"

namespace llmcap::server {

struct RestContext;

// Who may call a route when tokens are configured (with none, everyone may).
enum class Access {
  kPublic,   // always open (the OpenAPI document)
  kHealth,   // open unless open_health is false, then any token
  kMetrics,  // open unless open_metrics is false, then any token
  kRead,     // a read or admin token
  kAdmin,    // an admin token (every route that changes state; scale-out agents hold one)
};

using PathParams = std::map<std::string, std::string>;
// Runs on the blocking pool: may read and write SQLite.
using BlockingHandler =
    std::function<net::HttpResponse(RestContext&, const net::HttpRequest&, const PathParams&)>;
// Runs on the connection's strand; hops to the blocking pool for reads itself. nullopt: the
// handler wrote the response through the stream.
using StreamHandler = std::function<boost::asio::awaitable<std::optional<net::HttpResponse>>(
    RestContext&, net::HttpRequest&, net::ResponseStream&, const PathParams&)>;

struct RouteSpec {
  std::string method;   // "GET", "POST", "DELETE" (HEAD is matched as GET)
  std::string pattern;  // "/v1/jobs/{id}" (api/router.h)
  std::string name;     // "get_job"
  Access access = Access::kRead;
  BlockingHandler blocking;  // exactly one of blocking and stream is set
  StreamHandler stream;
  // The blocking handler touches neither SQLite nor the network (liveness, metrics, the OpenAPI
  // document): it runs on the connection's strand, so a busy blocking pool cannot delay it.
  bool on_io_thread = false;
};

// The rows of each resource, in the files named after them.
std::vector<RouteSpec> system_routes();  // system_routes.cc: /, health, metrics, OpenAPI
std::vector<RouteSpec> plan_routes();    // plan_routes.cc: validation, profiles, memory estimate
std::vector<RouteSpec> job_routes();     // job_routes.cc: the job collection and its lifecycle
std::vector<RouteSpec> result_routes();  // result_routes.cc: results, report, compare, samples
std::vector<RouteSpec> fleet_routes();   // fleet_routes.cc: shard protocol, agents manifest

}  // namespace llmcap::server

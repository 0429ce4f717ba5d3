// The daemon itself: the index page, liveness (/healthz), readiness (/readyz: can it take
// jobs), Prometheus metrics and the OpenAPI document.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>

#include <spdlog/spdlog.h>

#include "api/problem_json.h"
#include "server/jobs/job_scheduler.h"
#include "server/rest/openapi_document.h"
#include "server/rest/rest_context.h"
#include "server/rest/routes.h"
#include "server/version.h"
#include "storage/job_store.h"

namespace llmcap::server {

namespace asio = boost::asio;
using api::ApiErrorCode;
using api::problem_response;
using net::HttpRequest;
using net::HttpResponse;
using nlohmann::json;

namespace {

HttpResponse index_page(RestContext& c, const HttpRequest& req, const PathParams&) {
  storage::JobFilter f;
  f.limit = 50;
  f.tenant = c.caller_of(req).tenant_filter();
  auto page = c.deps.store.list_jobs(f);
  std::string rows;
  if (page.ok()) {
    for (const auto& j : page.value().jobs) {
      rows += "<tr><td><a href=\"/v1/jobs/" + j.id + "/report\">" + j.id + "</a></td><td>" +
              std::string(storage::to_string(j.state)) + "</td><td>" + iso_time(j.created_at_ms) +
              "</td><td>";
      for (const auto& t : j.targets) rows += t.name + " ";
      rows += "</td></tr>\n";
    }
  }
  return HttpResponse::text(
      200,
      "<!doctype html><html><head><meta charset=\"utf-8\"><title>llmcapd</title>"
      "<style>body{font-family:sans-serif;margin:2em}td,th{padding:4px 12px;text-align:left}"
      "</style></head><body><h1>llmcapd " +
          std::string(kVersion) +
          "</h1><table><tr><th>job</th><th>state</th><th>created</th><th>targets</th></tr>\n" +
          rows + "</table></body></html>\n",
      "text/html; charset=utf-8");
}

HttpResponse readyz(RestContext& c, const HttpRequest&, const PathParams&) {
  if (c.deps.shutting_down) return problem_response(ApiErrorCode::kShuttingDown, "shutting down");
  // Ready = can take jobs: the database passed its start-up quick_check and can be written.
  const std::string blocked = c.write_blocker();
  const bool ready = blocked.empty() && c.deps.database_check == "ok";
  json body{{"status", ready ? "ready" : "not ready"},
            {"reads", true},
            {"writes", blocked.empty()},
            {"database", json{{"quick_check", c.deps.database_check}}},
            {"queued_jobs", c.deps.scheduler.queued()},
            {"running_jobs", c.deps.scheduler.running()}};
  if (!blocked.empty()) body["reason"] = blocked;
  if (c.options.open_to_network)
    body["warnings"] = json::array(
        {"the API listens on " + c.options.listen_address +
         " with no tokens: anyone who can reach it can submit jobs (docs/security.md)"});
  if (c.deps.database_check != "ok")
    body["reason"] = "database quick_check at start: " + c.deps.database_check;
  return json_response(ready ? 200 : 503, body);
}

// How long /readyz waits for its checks (they stat the database file and its filesystem on the
// blocking pool): a frozen or hung filesystem makes readiness 503 after this, never a hang.
constexpr std::chrono::milliseconds kReadinessDeadline{2000};

// /readyz runs its checks on the blocking pool and answers from the I/O thread within
// kReadinessDeadline, whatever the checks do. One check at a time: while one is still stuck
// (a filesystem frozen for minutes), probes get 503 at once instead of filling the pool.
asio::awaitable<std::optional<HttpResponse>> readyz_within_deadline(RestContext& c,
                                                                    HttpRequest& req,
                                                                    net::ResponseStream&,
                                                                    const PathParams& params) {
  if (c.readiness_check_running.exchange(true))
    co_return problem_response(ApiErrorCode::kStorageUnavailable,
                               "the previous readiness check has not finished (the database's "
                               "filesystem does not answer)")
        .with_header("Retry-After", "5");
  struct Pending {
    explicit Pending(const asio::any_io_executor& io) : signal(io) {}
    asio::steady_timer signal;           // cancelled when the answer arrives
    std::optional<HttpResponse> answer;  // set on the I/O executor
  };
  const auto io = co_await asio::this_coro::executor;
  auto pending = std::make_shared<Pending>(io);
  // The daemon joins the pool before the RestContext goes, so `c` outlives the check.
  asio::post(c.blocking, [&c, pending, io, req, params] {
    HttpResponse r;
    try {
      r = readyz(c, req, params);
    } catch (const std::exception& e) {
      api_log()->error("GET /readyz: {}", e.what());
      r = problem_response(ApiErrorCode::kInternal, "internal error");
    }
    c.readiness_check_running = false;
    asio::post(io, [pending, r = std::move(r)]() mutable {
      pending->answer = std::move(r);
      pending->signal.cancel();
    });
  });
  pending->signal.expires_after(kReadinessDeadline);
  // Both the answer's arrival and this wait run on the connection's executor: no lost wake-up.
  if (!pending->answer) co_await pending->signal.async_wait(asio::as_tuple(asio::use_awaitable));
  if (pending->answer) co_return std::move(*pending->answer);
  co_return problem_response(ApiErrorCode::kStorageUnavailable,
                             "the readiness checks did not finish within " +
                                 std::to_string(kReadinessDeadline.count()) +
                                 " ms (the database's filesystem does not answer)")
      .with_header("Retry-After", "5");
}

HttpResponse healthz(RestContext&, const HttpRequest&, const PathParams&) {
  return json_response(200, json{{"status", "ok"}, {"version", kVersion}});
}

HttpResponse metrics(RestContext& c, const HttpRequest&, const PathParams&) {
  return HttpResponse::text(200, c.deps.metrics.serialize(), "text/plain; version=0.0.4");
}

HttpResponse openapi(RestContext&, const HttpRequest&, const PathParams&) {
  return HttpResponse::json(200, std::string(openapi_document()));
}

}  // namespace

std::vector<RouteSpec> system_routes() {
  return {
      {"GET", "/", "index", Access::kRead, index_page, {}},
      {"GET", "/healthz", "healthz", Access::kHealth, healthz, {}, true},
      {"GET", "/readyz", "readyz", Access::kHealth, {}, readyz_within_deadline},
      {"GET", "/metrics", "metrics", Access::kMetrics, metrics, {}, true},
      {"GET", "/v1/openapi.json", "openapi", Access::kPublic, openapi, {}, true},
  };
}

}  // namespace llmcap::server

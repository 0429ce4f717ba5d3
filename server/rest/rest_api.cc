#include "server/rest/rest_api.h"

#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>

#include "api/problem_json.h"
#include "api/router.h"
#include "server/rest/rest_context.h"
#include "server/rest/routes.h"

namespace llmcap::server {

namespace asio = boost::asio;
using api::ApiErrorCode;
using api::problem_response;
using net::HttpRequest;
using net::HttpResponse;

namespace {

std::vector<RouteSpec> all_routes() {
  std::vector<RouteSpec> out;
  for (auto part : {system_routes(), plan_routes(), job_routes(), result_routes(), fleet_routes()})
    for (auto& r : part) out.push_back(std::move(r));
  return out;
}

std::vector<api::Route> router_rows(const std::vector<RouteSpec>& specs) {
  std::vector<api::Route> rows;
  for (const auto& s : specs) rows.push_back({s.method, s.pattern, s.name});
  return rows;
}

}  // namespace

struct RestApi::Impl : std::enable_shared_from_this<RestApi::Impl> {
  Impl(RestApiDeps d, asio::thread_pool& pool)
      : ctx(std::move(d), pool), specs(all_routes()), router(router_rows(specs)) {}

  RestContext ctx;
  const std::vector<RouteSpec> specs;  // same order as router.routes()
  const api::Router router;

  const RouteSpec& spec_of(const api::Route* route) const {
    return specs[static_cast<std::size_t>(route - router.routes().data())];
  }

  // The row's access rule; nullopt = allowed.
  std::optional<HttpResponse> authorize(const Caller& caller, Access access) const {
    const auto& o = ctx.options;
    if (o.auth_disabled() || access == Access::kPublic) return std::nullopt;
    if (access == Access::kHealth && o.open_health) return std::nullopt;
    if (access == Access::kMetrics && o.open_metrics) return std::nullopt;
    const Role role = caller.role;
    if (role == Role::kNone)
      return problem_response(ApiErrorCode::kUnauthorized, "send Authorization: Bearer <token>")
          .with_header("WWW-Authenticate", "Bearer realm=\"llmcapd\"");
    if (access == Access::kAdmin && role != Role::kAdmin)
      return problem_response(ApiErrorCode::kForbidden, "this route needs an admin token");
    return std::nullopt;
  }

  asio::awaitable<std::optional<HttpResponse>> handle(HttpRequest& req, net::ResponseStream& out);
};

asio::awaitable<std::optional<HttpResponse>> RestApi::Impl::handle(HttpRequest& req,
                                                                   net::ResponseStream& out) {
  auto self = shared_from_this();
  const auto started = std::chrono::steady_clock::now();
  const auto m = router.match(req.method, req.path);
  std::string route = "unknown";
  std::optional<HttpResponse> response;
  if (m.kind == api::RouteMatch::Kind::kNotFound) {
    response = problem_response(ApiErrorCode::kNotFound, "no such resource: " + req.path);
  } else if (m.kind == api::RouteMatch::Kind::kMethodNotAllowed) {
    std::string allow;
    for (const auto& a : m.allowed_methods) allow += (allow.empty() ? "" : ", ") + a;
    response =
        problem_response(ApiErrorCode::kMethodNotAllowed, req.method + " is not allowed here")
            .with_header("Allow", allow);
  } else {
    const RouteSpec& spec = spec_of(m.route);
    route = spec.name;
    const Caller caller = ctx.caller_of(req);
    std::optional<HttpResponse> denied = authorize(caller, spec.access);
    // Every route under /v1/jobs/{id} answers 404 for another tenant's job, here, before its
    // handler runs: no route can forget the check (docs/security.md, "Tenants").
    const auto job_id = m.params.find("id");
    if (!denied && job_id != m.params.end() && !caller.all_tenants) {
      auto io = co_await asio::this_coro::executor;
      co_await to_blocking_pool(ctx.blocking);
      try {
        denied = ctx.hidden_job(caller, job_id->second);
      } catch (const std::exception& e) {
        api_log()->error("{} {}: {}", req.method, req.path, e.what());
        denied = problem_response(ApiErrorCode::kInternal, "internal error");
      }
      co_await back_to(io);
    }
    if (denied) {
      response = std::move(denied);
    } else if (spec.stream) {
      response = co_await spec.stream(ctx, req, out, m.params);
    } else if (spec.on_io_thread) {
      try {
        response = spec.blocking(ctx, req, m.params);
      } catch (const std::exception& e) {
        api_log()->error("{} {}: {}", req.method, req.path, e.what());
        response = problem_response(ApiErrorCode::kInternal, "internal error");
      }
    } else {
      auto io = co_await asio::this_coro::executor;
      co_await to_blocking_pool(ctx.blocking);
      try {
        response = spec.blocking(ctx, req, m.params);
      } catch (const std::exception& e) {
        api_log()->error("{} {}: {}", req.method, req.path, e.what());
        response = problem_response(ApiErrorCode::kInternal, "internal error");
      }
      co_await back_to(io);
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ctx.deps.metrics.observe_api_request(route, response ? response->status : 200, seconds);
  co_return response;
}

RestApi::RestApi(RestApiDeps deps, asio::thread_pool& blocking)
    : impl_(std::make_shared<Impl>(std::move(deps), blocking)) {}

RestApi::~RestApi() = default;

net::Handler RestApi::handler() {
  auto impl = impl_;
  return [impl](HttpRequest& req, net::ResponseStream& out) { return impl->handle(req, out); };
}

}  // namespace llmcap::server

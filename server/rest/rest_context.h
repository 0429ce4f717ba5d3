// RestContext: what every REST handler shares — the API's dependencies and options, the blocking
// pool, the target allowlist — and the helpers several resources use (the job resource's JSON,
// the checks a submitted plan goes through, the database's writability). Internal to
// server/rest/; one instance per RestApi, shared by all requests.
// Thread-safety: const methods are safe from any thread; the dependencies are thread-safe.
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/thread_pool.hpp>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "api/plan_reader.h"
#include "net/http_message.h"
#include "server/rest/rest_api.h"
#include "server/rest/target_allowlist.h"
#include "storage/records.h"
#include "storage/status.h"

namespace spdlog {
class logger;
}

namespace llmcap::server {

enum class Role { kNone, kRead, kAdmin };

// Who sent a request (docs/security.md, "Tenants"): the role and tenant of its bearer token.
struct Caller {
  Role role = Role::kNone;
  std::string tenant = kDefaultTenant;  // the tenant its new jobs belong to
  bool all_tenants = false;             // a global token (tenant "*"), or a daemon without tokens
  std::string token_id;                 // api_tokens.h token_id(); "" without a token

  // Whether the caller may see (and, with its role, act on) the job.
  bool sees(const storage::JobRecord& job) const { return all_tenants || job.tenant == tenant; }
  // JobFilter::tenant for the caller's listings: nullopt = every tenant.
  std::optional<std::string> tenant_filter() const {
    return all_tenants ? std::nullopt : std::optional<std::string>(tenant);
  }
  // What logs and the audit trail name: "token:<id>", or "anonymous" on an open daemon; and the
  // token's tenant ("*" for a global token and on an open daemon).
  std::string actor() const { return token_id.empty() ? "anonymous" : "token:" + token_id; }
  std::string token_tenant() const { return all_tenants ? std::string(kGlobalTenant) : tenant; }
};

struct RestContext {
  RestContext(RestApiDeps d, boost::asio::thread_pool& pool);
  RestContext(const RestContext&) = delete;
  RestContext& operator=(const RestContext&) = delete;

  RestApiDeps deps;
  const RestOptions& options;  // deps.options
  boost::asio::thread_pool& blocking;
  TargetAllowlist allowlist;
  std::atomic<bool> readiness_check_running{false};  // /readyz: one check in flight at most

  // The request's bearer token as a caller; role kNone without a known token. On a daemon
  // without tokens: an admin of every tenant whose jobs go to "default".
  Caller caller_of(const net::HttpRequest& req) const;
  // 404 when job `id` does not exist or belongs to a tenant the caller does not see (the same
  // answer, so a tenant cannot learn that another's job exists); a storage problem when it
  // cannot be read; nullopt when the caller may see it. Reads SQLite: blocking pool only.
  std::optional<net::HttpResponse> hidden_job(const Caller& caller, const std::string& id) const;
  // Records a write the caller made: a row in the audit table and an info line in the "api"
  // log, both naming the tenant and the token id (never the token). A failed audit insert is
  // logged, not returned: the write itself already happened. Blocking pool only.
  void record_write(const Caller& caller, const std::string& action, const std::string& job_id,
                    const std::string& detail = {}) const;
  // The job resource (docs/openapi.json: Job), with the freshest progress.
  nlohmann::json job_json(const storage::JobRecord& j) const;
  // 415 unless the body is declared application/json.
  std::optional<net::HttpResponse> require_json_body(const net::HttpRequest& req) const;
  // The problem with a submitted plan (validate and create answer alike): not JSON (400), an
  // invalid plan naming every field (422), or a target or metrics URL outside the allowlist
  // (422); nullopt when the plan may run.
  std::optional<net::HttpResponse> plan_problem(const api::PlanParse& parse) const;
  // Dataset files of the plan (server/engine/dataset_policy.h): problems as a 422 naming each
  // field; on success the plan and its normalised JSON name the resolved files.
  std::optional<net::HttpResponse> dataset_problem(api::PlanParse& parse) const;
  // Why the database cannot take new work now ("" when it can): its file was deleted or
  // replaced, a read-only filesystem, or less free space than min_free_disk_mib (*disk_full).
  std::string write_blocker(bool* disk_full = nullptr) const;
  // write_blocker() as a response: 507 with Retry-After for a full disk, else 503.
  std::optional<net::HttpResponse> disk_problem() const;

 private:
  // The stored progress is written at step boundaries only (the agent's progress callback must
  // not block on SQLite); while a job runs, the newest in-memory progress event is fresher.
  nlohmann::json live_progress(const storage::JobRecord& j) const;
  // A queued job's place and what it waits for (JobScheduler::queue_status); null otherwise.
  nlohmann::json queue_json(const storage::JobRecord& j) const;
};

// Moving a handler's coroutine between the I/O thread and the blocking pool. SQLite, name
// resolution, dataset scans, reports and compare run between the two calls, so a slow one never
// holds the I/O thread that answers /healthz (issue 35 #1):
//   auto io = co_await boost::asio::this_coro::executor;
//   co_await to_blocking_pool(c.blocking);
//   ... blocking work ...
//   co_await back_to(io);
// (`co_await asio::post(pool, use_awaitable)` does not do this: the coroutine's completion is
// dispatched to its own executor, so the work ran on the I/O thread after all.)
boost::asio::awaitable<void> to_blocking_pool(boost::asio::thread_pool& pool);
boost::asio::awaitable<void> back_to(boost::asio::any_io_executor io);

// Helpers shared by the resource files.
std::shared_ptr<spdlog::logger> api_log();  // the "api" logger, else the default one
net::HttpResponse json_response(int status, const nlohmann::json& body);
net::HttpResponse storage_problem(const storage::Status& st);
// A query parameter that must be a whole decimal integer in [lo, hi]: "5abc", "1e3", "" and
// out-of-range values are refused (never read as their numeric prefix).
std::optional<std::int64_t> query_int(std::string_view text, std::int64_t lo, std::int64_t hi);
std::string iso_time(std::int64_t unix_ms);
// Parses "2026-12-02T10:00:00Z" (seconds precision, UTC) into Unix ms.
std::optional<std::int64_t> parse_iso_time(const std::string& s);

}  // namespace llmcap::server

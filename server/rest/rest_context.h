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

struct RestContext {
  RestContext(RestApiDeps d, boost::asio::thread_pool& pool);
  RestContext(const RestContext&) = delete;
  RestContext& operator=(const RestContext&) = delete;

  RestApiDeps deps;
  const RestOptions& options;  // deps.options
  boost::asio::thread_pool& blocking;
  TargetAllowlist allowlist;
  std::atomic<bool> readiness_check_running{false};  // /readyz: one check in flight at most

  Role role_of(const net::HttpRequest& req) const;
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

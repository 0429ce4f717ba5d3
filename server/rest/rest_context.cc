#include "server/rest/rest_context.h"

#include <spdlog/spdlog.h>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cctype>
#include <charconv>
#include <cstdio>
#include <ctime>

#include "api/problem_json.h"
#include "server/engine/dataset_policy.h"
#include "server/jobs/job_events.h"
#include "server/jobs/job_scheduler.h"
#include "storage/disk_space.h"
#include "storage/job_store.h"

namespace llmcap::server {

using api::ApiErrorCode;
using api::problem_response;
using net::HttpRequest;
using net::HttpResponse;
using nlohmann::json;

namespace asio = boost::asio;

asio::awaitable<void> to_blocking_pool(asio::thread_pool& pool) {
  // The completion is bound to the pool's executor, so the coroutine resumes on a pool thread.
  co_await asio::post(asio::bind_executor(pool.get_executor(), asio::use_awaitable));
}

asio::awaitable<void> back_to(asio::any_io_executor io) {
  co_await asio::post(io, asio::use_awaitable);
}

std::shared_ptr<spdlog::logger> api_log() {
  if (auto l = spdlog::get("api")) return l;
  return spdlog::default_logger();
}

std::string iso_time(std::int64_t ms) {
  const std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(ms % 1000));
  return buf;
}

std::optional<std::int64_t> parse_iso_time(const std::string& s) {
  std::tm tm{};
  const char* end = strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (end == nullptr) return std::nullopt;
  std::string rest(end);
  if (rest.size() > 0 && rest[0] == '.') {
    std::size_t i = 1;
    while (i < rest.size() && std::isdigit(static_cast<unsigned char>(rest[i]))) ++i;
    rest = rest.substr(i);
  }
  if (rest != "Z" && rest != "+00:00" && !rest.empty()) return std::nullopt;
  return static_cast<std::int64_t>(timegm(&tm)) * 1000;
}

HttpResponse json_response(int status, const json& body) {
  return HttpResponse::json(status, body.dump(-1, ' ', false, json::error_handler_t::replace));
}

HttpResponse storage_problem(const storage::Status& st) {
  switch (st.code()) {
    case storage::ErrorCode::kNotFound:
      return problem_response(ApiErrorCode::kNotFound, st.message());
    case storage::ErrorCode::kConflict:
      return problem_response(ApiErrorCode::kConflict, st.message());
    case storage::ErrorCode::kInvalid:
      return problem_response(ApiErrorCode::kBadRequest, st.message());
    case storage::ErrorCode::kBusy:
    case storage::ErrorCode::kReadOnly:
    case storage::ErrorCode::kDiskFull:
      return problem_response(ApiErrorCode::kStorageUnavailable, st.message());
    default: return problem_response(ApiErrorCode::kInternal, "storage error");
  }
}

std::optional<std::int64_t> query_int(std::string_view text, std::int64_t lo, std::int64_t hi) {
  std::int64_t v = 0;
  if (text.empty()) return std::nullopt;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < lo || v > hi)
    return std::nullopt;
  return v;
}

RestContext::RestContext(RestApiDeps d, boost::asio::thread_pool& pool)
    : deps(std::move(d)),
      options(deps.options),
      blocking(pool),
      allowlist(deps.options.target_allowlist) {}

namespace {

json job_verdict_json(const storage::JobRecord& j) {
  if (!j.verdict) return nullptr;
  json v = j.verdict_json ? json::parse(*j.verdict_json, nullptr, false) : json();
  if (!v.is_object()) v = json::object();
  v["outcome"] = *j.verdict;
  return v;
}

}  // namespace

Caller RestContext::caller_of(const HttpRequest& req) const {
  Caller caller;
  if (options.auth_disabled()) {
    caller.role = Role::kAdmin;
    caller.all_tenants = true;
    return caller;
  }
  const auto h = req.header("authorization");
  if (!h || h->rfind("Bearer ", 0) != 0) return caller;
  const std::string token(h->substr(7));
  // Every configured token is compared, each in constant time (net::constant_time_equal), so
  // the time taken says nothing about which one matched. validate() refuses a token given twice.
  const ApiToken* match = nullptr;
  for (const auto& t : options.tokens) {
    if (net::constant_time_equal(t.token, token)) match = &t;
  }
  if (!match) return caller;
  caller.role = match->admin ? Role::kAdmin : Role::kRead;
  caller.all_tenants = match->tenant == kGlobalTenant;
  caller.tenant = caller.all_tenants ? std::string(kDefaultTenant) : match->tenant;
  caller.token_id = match->id;
  return caller;
}

std::optional<HttpResponse> RestContext::hidden_job(const Caller& caller,
                                                    const std::string& id) const {
  if (caller.all_tenants) return std::nullopt;
  auto job = deps.store.get_job(id);
  if (!job.ok()) return storage_problem(job.status());
  if (caller.sees(job.value())) return std::nullopt;
  // Word for word what an unknown id gets (storage's not-found message).
  return storage_problem(
      storage::Status(storage::ErrorCode::kNotFound, "job " + id + " not found"));
}

void RestContext::record_write(const Caller& caller, const std::string& action,
                               const std::string& job_id, const std::string& detail) const {
  storage::AuditRecord record;
  record.actor = caller.actor();
  record.action = action;
  record.job_id = job_id;
  record.detail = detail;
  record.tenant = caller.token_tenant();
  record.token_id = caller.token_id;
  const auto stored = deps.store.append_audit(record);
  api_log()->info("{} {} tenant={} token={}{}{}", action, job_id, record.tenant,
                  caller.token_id.empty() ? "-" : caller.token_id, detail.empty() ? "" : " ",
                  detail);
  if (!stored.ok())
    api_log()->warn("{} {}: audit record not stored: {}", action, job_id,
                    stored.status().message());
}

json RestContext::live_progress(const storage::JobRecord& j) const {
  json stored = json::parse(j.progress_json, nullptr, false);
  if (j.state != storage::JobState::kRunning) {
    // eta_s and the live counters describe a running step: once the job stops (or waits to
    // resume) the last values would be stale.
    if (stored.is_object()) {
      if (stored.contains("eta_s")) stored["eta_s"] = nullptr;
      stored.erase("live");
    }
    return stored;
  }
  const auto read = deps.events.read(j.id, 0);
  for (auto it = read.events.rbegin(); it != read.events.rend(); ++it) {
    if (it->type != "progress") continue;
    json live = json::parse(it->data, nullptr, false);
    return live.is_object() ? live : stored;
  }
  return stored;
}

json RestContext::queue_json(const storage::JobRecord& j) const {
  if (j.state != storage::JobState::kQueued) return nullptr;
  const auto st = deps.scheduler.queue_status(j.id);
  if (!st) return nullptr;  // started a moment ago, or not in this process's queue
  return json{{"lane", st->lane == JobScheduler::Lane::kPrediction ? "prediction" : "measured"},
              {"position", st->position},
              {"ahead", st->ahead},
              {"waiting_for", st->waiting_for},
              {"reason", st->reason}};
}

json RestContext::job_json(const storage::JobRecord& j) const {
  json targets = json::array();
  for (const auto& t : j.targets) targets.push_back({{"name", t.name}, {"base_url", t.base_url}});
  const std::string self = "/v1/jobs/" + j.id;
  return json{
      {"id", j.id},
      {"state", std::string(storage::to_string(j.state))},
      // "measured" or "predicted" (virtual time, POST /v1/predictions).
      {"kind", j.kind},
      // The job's verdict once its results are stored (pass / fail / inconclusive, overall
      // and per target); null before. An acceptance workflow gates on verdict.outcome.
      {"verdict", job_verdict_json(j)},
      {"priority", j.priority},
      {"created_at", iso_time(j.created_at_ms)},
      {"started_at", j.started_at_ms ? json(iso_time(*j.started_at_ms)) : json(nullptr)},
      {"finished_at", j.finished_at_ms ? json(iso_time(*j.finished_at_ms)) : json(nullptr)},
      {"submitted_by", j.submitted_by},
      // The tenant that owns the job (docs/security.md, "Tenants").
      {"tenant", j.tenant},
      {"error", j.error_message.empty() ? json(nullptr) : json(j.error_message)},
      {"cancel_requested", j.cancel_requested},
      {"last_completed_step", j.last_completed_step ? json(*j.last_completed_step) : json(nullptr)},
      {"targets", targets},
      {"queue", queue_json(j)},
      {"progress", live_progress(j)},
      {"links",
       {{"self", self},
        {"results", self + "/results"},
        {"requests", self + "/requests"},
        {"events", self + "/events"}}}};
}

std::optional<HttpResponse> RestContext::require_json_body(const HttpRequest& req) const {
  const auto ct = req.header("content-type");
  if (!ct || net::to_lower_ascii(*ct).rfind("application/json", 0) != 0)
    return problem_response(ApiErrorCode::kUnsupportedMediaType,
                            "send the plan as Content-Type: application/json");
  return std::nullopt;
}

std::optional<HttpResponse> RestContext::plan_problem(const api::PlanParse& parse) const {
  if (parse.malformed)
    return problem_response(ApiErrorCode::kMalformedJson, parse.errors[0].message);
  if (!parse.errors.empty())
    return problem_response(ApiErrorCode::kInvalidPlan,
                            std::to_string(parse.errors.size()) + " problem(s) in the plan",
                            parse.errors);
  // Every URL of the plan at once (one shared resolution deadline, server/rest/target_allowlist.h).
  std::vector<std::string> urls, paths;
  for (std::size_t i = 0; i < parse.plan->targets.size(); ++i) {
    const auto& t = parse.plan->targets[i];
    urls.push_back(t.base_url);
    paths.push_back("/targets/" + std::to_string(i) + "/base_url");
    if (!t.metrics_url.empty()) {
      urls.push_back(t.metrics_url);
      paths.push_back("/targets/" + std::to_string(i) + "/metrics_url");
    }
  }
  const auto verdicts = allowlist.check_all(urls);
  std::vector<api::FieldError> denied;
  for (std::size_t i = 0; i < urls.size(); ++i) {
    if (!verdicts.reasons[i].empty()) denied.push_back({paths[i], verdicts.reasons[i]});
  }
  if (verdicts.busy)
    return problem_response(ApiErrorCode::kResolverBusy,
                            "too many target names are being resolved; retry later", denied)
        .with_header("Retry-After", "5");
  if (!denied.empty())
    return problem_response(ApiErrorCode::kInvalidPlan, "target not allowed", denied);
  return std::nullopt;
}

std::optional<HttpResponse> RestContext::dataset_problem(api::PlanParse& parse) const {
  DatasetPolicy policy;
  policy.confined = true;
  policy.root_dir = options.dataset_dir;
  policy.max_bytes = static_cast<std::uint64_t>(options.max_dataset_mib * 1024 * 1024);
  const auto problems = check_plan_datasets(*parse.plan, parse.normalized, policy);
  if (problems.empty()) return std::nullopt;
  return problem_response(ApiErrorCode::kInvalidPlan, "dataset not usable", problems);
}

std::string RestContext::write_blocker(bool* disk_full) const {
  if (auto gone = storage::database_file_problem(options.database, deps.database_file);
      !gone.empty())
    return gone;
  const auto disk = storage::disk_state_for(options.database);
  if (!disk) return "";
  if (disk->read_only) return "the database's filesystem is read-only";
  if (!disk->file_not_writable.empty())
    return "the database file cannot be written (" + disk->file_not_writable + ")";
  const double need = options.min_free_disk_mib * 1024 * 1024;
  if (options.min_free_disk_mib > 0 && static_cast<double>(disk->free_bytes) < need) {
    if (disk_full) *disk_full = true;
    char text[160];
    std::snprintf(text, sizeof text,
                  "the database's disk has %.1f MiB free, below min_free_disk_mib (%.0f MiB)",
                  static_cast<double>(disk->free_bytes) / (1024 * 1024), options.min_free_disk_mib);
    return text;
  }
  return "";
}

std::optional<HttpResponse> RestContext::disk_problem() const {
  bool full = false;
  const std::string why = write_blocker(&full);
  if (why.empty()) return std::nullopt;
  if (full)
    return problem_response(ApiErrorCode::kInsufficientStorage, why + ": free space, then retry")
        .with_header("Retry-After", "60");
  return problem_response(ApiErrorCode::kStorageUnavailable, why);
}

}  // namespace llmcap::server

#include "server/rest_api.h"

#include <arpa/inet.h>
#include <netdb.h>

#include <spdlog/spdlog.h>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/url/parse.hpp>
#include <charconv>
#include <chrono>
#include <cstring>
#include <ctime>
#include <nlohmann/json.hpp>

#include "analysis/memory_fit.h"
#include "api/plan_reader.h"
#include "api/problem_json.h"
#include "api/report_compare.h"
#include "api/report_html.h"
#include "api/report_tables.h"
#include "api/result_json.h"
#include "api/router.h"
#include "server/agent_manifest_route.h"
#include "server/daemon_config.h"
#include "server/daemon_metrics.h"
#include "server/dataset_policy.h"
#include "server/embedded_docs.h"
#include "server/job_events.h"
#include "server/job_runner.h"
#include "server/job_scheduler.h"
#include "server/sample_codec.h"
#include "server/shard_routes.h"
#include "server/version.h"
#include "sim/profile_catalog.h"
#include "storage/disk_space.h"
#include "storage/job_store.h"

namespace llmcap::server {

namespace asio = boost::asio;
using api::ApiErrorCode;
using api::problem_response;
using net::HttpRequest;
using net::HttpResponse;
using nlohmann::json;

namespace {

std::shared_ptr<spdlog::logger> log() {
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

// Parses "2026-12-02T10:00:00Z" (seconds precision, UTC) into Unix ms.
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

std::string fnv1a(std::string_view s) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
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

// A query parameter that must be a whole decimal integer in [lo, hi]: "5abc", "1e3", "" and
// out-of-range values are refused (never read as their numeric prefix).
std::optional<std::int64_t> query_int(std::string_view text, std::int64_t lo, std::int64_t hi) {
  std::int64_t v = 0;
  if (text.empty()) return std::nullopt;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < lo || v > hi)
    return std::nullopt;
  return v;
}

enum class Role { kNone, kRead, kAdmin };

// An allowlist entry: a host name, or an IPv4/IPv6 network.
struct Network {
  std::string host;  // non-empty for a name entry
  int family = 0;
  unsigned char addr[16] = {};
  int prefix = 0;
};

std::vector<Network> parse_allowlist(const std::vector<std::string>& entries) {
  std::vector<Network> out;
  for (const auto& e : entries) {
    Network n;
    const auto slash = e.find('/');
    const std::string ip = e.substr(0, slash);
    if (inet_pton(AF_INET, ip.c_str(), n.addr) == 1) {
      n.family = AF_INET;
      n.prefix = slash == std::string::npos ? 32 : std::stoi(e.substr(slash + 1));
    } else if (inet_pton(AF_INET6, ip.c_str(), n.addr) == 1) {
      n.family = AF_INET6;
      n.prefix = slash == std::string::npos ? 128 : std::stoi(e.substr(slash + 1));
    } else {
      n.host = e;
    }
    out.push_back(n);
  }
  return out;
}

bool in_network(const Network& n, int family, const unsigned char* addr) {
  if (n.family != family) return false;
  int bits = n.prefix;
  for (int i = 0; bits > 0; ++i, bits -= 8) {
    const unsigned char mask = bits >= 8 ? 0xff : static_cast<unsigned char>(0xff << (8 - bits));
    if ((addr[i] & mask) != (n.addr[i] & mask)) return false;
  }
  return true;
}

}  // namespace

struct RestApi::Impl : std::enable_shared_from_this<RestApi::Impl> {
  Impl(RestApiDeps d, asio::thread_pool& pool)
      : deps(d),
        blocking(pool),
        allowlist(parse_allowlist(d.config.target_allowlist)),
        router({
            {"GET", "/", "index"},
            {"GET", "/healthz", "healthz"},
            {"GET", "/readyz", "readyz"},
            {"GET", "/metrics", "metrics"},
            {"GET", "/v1/openapi.json", "openapi"},
            {"GET", "/v1/profiles", "profiles"},
            {"POST", "/v1/estimates/memory", "estimate_memory"},
            {"POST", "/v1/plans:validate", "validate_plan"},
            {"POST", "/v1/jobs", "create_job"},
            {"GET", "/v1/jobs", "list_jobs"},
            {"GET", "/v1/jobs/{id}", "get_job"},
            {"DELETE", "/v1/jobs/{id}", "delete_job"},
            {"POST", "/v1/jobs/{id}:cancel", "cancel_job"},
            {"POST", "/v1/jobs/{id}:resume", "resume_job"},
            {"GET", "/v1/jobs/{id}/results", "get_results"},
            {"GET", "/v1/jobs/{id}/requests", "get_requests"},
            {"GET", "/v1/jobs/{id}/events", "watch_job"},
            {"GET", "/v1/jobs/{id}/report", "get_report"},
            {"GET", "/v1/jobs/{id}/agents/manifest", "get_agents_manifest"},
            {"GET", "/v1/compare", "compare_jobs"},
            {"POST", "/v1/jobs/{id}/shards/{shard}/clock", "shard_clock"},
            {"POST", "/v1/jobs/{id}/shards/{shard}/register", "shard_register"},
            {"GET", "/v1/jobs/{id}/shards/{shard}/assignment", "shard_assignment"},
            {"POST", "/v1/jobs/{id}/shards/{shard}/results", "shard_results"},
        }) {}

  RestApiDeps deps;
  asio::thread_pool& blocking;
  std::vector<Network> allowlist;
  api::Router router;

  api::PlanLimits limits() const {
    api::PlanLimits l;
    l.max_targets = deps.config.max_targets;
    l.max_concurrency = deps.config.max_concurrency;
    l.max_rate_rps = deps.config.max_rate_rps;
    l.max_duration_s = deps.config.max_job_duration_s;
    l.max_bytes = static_cast<std::size_t>(deps.config.max_body_bytes);
    return l;
  }

  Role role_of(const HttpRequest& req) const {
    if (deps.config.auth_disabled()) return Role::kAdmin;
    const auto h = req.header("authorization");
    if (!h || h->rfind("Bearer ", 0) != 0) return Role::kNone;
    const std::string token(h->substr(7));
    // Every configured token is compared, each in constant time (net::constant_time_equal).
    bool admin = false, read = false;
    for (const auto& t : deps.config.admin_tokens) admin |= net::constant_time_equal(t, token);
    for (const auto& t : deps.config.read_tokens) read |= net::constant_time_equal(t, token);
    return admin ? Role::kAdmin : read ? Role::kRead : Role::kNone;
  }

  // "" when the URL's host is allowed; else the reason.
  std::string check_allowed(const std::string& url) const {
    if (url.rfind("sim://", 0) == 0) return "";
    auto u = boost::urls::parse_uri(url);
    if (!u) return "not a valid URL";
    std::string host(u->host_address());
    for (const auto& n : allowlist) {
      if (!n.host.empty() && n.host == host) return "";
    }
    if (!host.empty() && host.front() == '[') host = host.substr(1, host.size() - 2);
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || res == nullptr)
      return "host '" + host + "' does not resolve";
    std::string why;
    for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
      const unsigned char* bytes = nullptr;
      if (a->ai_family == AF_INET)
        bytes = reinterpret_cast<const unsigned char*>(
            &reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr);
      else if (a->ai_family == AF_INET6)
        bytes = reinterpret_cast<const unsigned char*>(
            &reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr);
      bool ok = false;
      for (const auto& n : allowlist) ok = ok || (bytes && in_network(n, a->ai_family, bytes));
      if (!ok) {
        char text[INET6_ADDRSTRLEN] = {};
        inet_ntop(a->ai_family, bytes, text, sizeof text);
        why = "host '" + host + "' resolves to " + text + ", outside target_allowlist";
        break;
      }
    }
    freeaddrinfo(res);
    return why;
  }

  // The stored progress is written at step boundaries only (the agent's progress callback must
  // not block on SQLite); while a job runs, the newest in-memory progress event is fresher.
  json live_progress(const storage::JobRecord& j) const {
    json stored = json::parse(j.progress_json, nullptr, false);
    if (j.state != storage::JobState::kRunning) return stored;
    const auto read = deps.events.read(j.id, 0);
    for (auto it = read.events.rbegin(); it != read.events.rend(); ++it) {
      if (it->type != "progress") continue;
      json live = json::parse(it->data, nullptr, false);
      return live.is_object() ? live : stored;
    }
    return stored;
  }

  static json job_verdict_json(const storage::JobRecord& j) {
    if (!j.verdict) return nullptr;
    json v = j.verdict_json ? json::parse(*j.verdict_json, nullptr, false) : json();
    if (!v.is_object()) v = json::object();
    v["outcome"] = *j.verdict;
    return v;
  }

  json job_json(const storage::JobRecord& j) const {
    json targets = json::array();
    for (const auto& t : j.targets) targets.push_back({{"name", t.name}, {"base_url", t.base_url}});
    const std::string self = "/v1/jobs/" + j.id;
    return json{
        {"id", j.id},
        {"state", std::string(storage::to_string(j.state))},
        // The job's verdict once its results are stored (pass / fail / inconclusive, overall
        // and per target); null before. An acceptance workflow gates on verdict.outcome.
        {"verdict", job_verdict_json(j)},
        {"priority", j.priority},
        {"created_at", iso_time(j.created_at_ms)},
        {"started_at", j.started_at_ms ? json(iso_time(*j.started_at_ms)) : json(nullptr)},
        {"finished_at", j.finished_at_ms ? json(iso_time(*j.finished_at_ms)) : json(nullptr)},
        {"submitted_by", j.submitted_by},
        {"error", j.error_message.empty() ? json(nullptr) : json(j.error_message)},
        {"cancel_requested", j.cancel_requested},
        {"last_completed_step",
         j.last_completed_step ? json(*j.last_completed_step) : json(nullptr)},
        {"targets", targets},
        {"progress", live_progress(j)},
        {"links",
         {{"self", self},
          {"results", self + "/results"},
          {"requests", self + "/requests"},
          {"events", self + "/events"}}}};
  }

  std::optional<HttpResponse> require_json_body(const HttpRequest& req) const {
    const auto ct = req.header("content-type");
    if (!ct || net::to_lower_ascii(*ct).rfind("application/json", 0) != 0)
      return problem_response(ApiErrorCode::kUnsupportedMediaType,
                              "send the plan as Content-Type: application/json");
    return std::nullopt;
  }

  // ---- handlers (run on the blocking pool) ----

  // The problem with a submitted plan (validate and create answer alike): not JSON (400), an
  // invalid plan naming every field (422), or a target or metrics URL outside the allowlist
  // (422); nullopt when the plan may run.
  std::optional<HttpResponse> plan_problem(const api::PlanParse& parse) const {
    if (parse.malformed)
      return problem_response(ApiErrorCode::kMalformedJson, parse.errors[0].message);
    if (!parse.errors.empty())
      return problem_response(ApiErrorCode::kInvalidPlan,
                              std::to_string(parse.errors.size()) + " problem(s) in the plan",
                              parse.errors);
    std::vector<api::FieldError> denied;
    for (std::size_t i = 0; i < parse.plan->targets.size(); ++i) {
      const auto& t = parse.plan->targets[i];
      if (auto why = check_allowed(t.base_url); !why.empty())
        denied.push_back({"/targets/" + std::to_string(i) + "/base_url", why});
      if (!t.metrics_url.empty()) {
        if (auto why = check_allowed(t.metrics_url); !why.empty())
          denied.push_back({"/targets/" + std::to_string(i) + "/metrics_url", why});
      }
    }
    if (!denied.empty())
      return problem_response(ApiErrorCode::kInvalidPlan, "target not allowed", denied);
    return std::nullopt;
  }

  // Dataset files of the plan (server/dataset_policy.h): problems as a 422 naming each field;
  // on success the plan and its normalised JSON name the resolved files.
  std::optional<HttpResponse> dataset_problem(api::PlanParse& parse) const {
    DatasetPolicy policy;
    policy.confined = true;
    policy.root_dir = deps.config.dataset_dir;
    policy.max_bytes = static_cast<std::uint64_t>(deps.config.max_dataset_mib * 1024 * 1024);
    const auto problems = check_plan_datasets(*parse.plan, parse.normalized, policy);
    if (problems.empty()) return std::nullopt;
    return problem_response(ApiErrorCode::kInvalidPlan, "dataset not usable", problems);
  }

  // A job accepted on a full disk could be stored and never moved (issue 24): refused first.
  // Why the database cannot take new work now ("" when it can): a read-only filesystem, or
  // less free space than min_free_disk_mib.
  std::string write_blocker(bool* disk_full = nullptr) const {
    if (auto gone = storage::database_file_problem(deps.config.database, deps.database_file);
        !gone.empty())
      return gone;
    const auto disk = storage::disk_state_for(deps.config.database);
    if (!disk) return "";
    if (disk->read_only) return "the database's filesystem is read-only";
    const double need = deps.config.min_free_disk_mib * 1024 * 1024;
    if (deps.config.min_free_disk_mib > 0 && static_cast<double>(disk->free_bytes) < need) {
      if (disk_full) *disk_full = true;
      char text[160];
      std::snprintf(text, sizeof text,
                    "the database's disk has %.1f MiB free, below min_free_disk_mib (%.0f MiB)",
                    static_cast<double>(disk->free_bytes) / (1024 * 1024),
                    deps.config.min_free_disk_mib);
      return text;
    }
    return "";
  }

  std::optional<HttpResponse> disk_problem() const {
    bool full = false;
    const std::string why = write_blocker(&full);
    if (why.empty()) return std::nullopt;
    if (full)
      return problem_response(ApiErrorCode::kInsufficientStorage, why + ": free space, then retry")
          .with_header("Retry-After", "60");
    return problem_response(ApiErrorCode::kStorageUnavailable, why);
  }

  HttpResponse validate_plan(const HttpRequest& req) {
    if (auto bad = require_json_body(req)) return *bad;
    auto parse = api::parse_plan(req.body, limits());
    if (auto bad = plan_problem(parse)) return *bad;
    if (auto bad = dataset_problem(parse)) return *bad;
    json warnings = parse.warnings;
    for (const auto& w : memory_warnings(*parse.plan)) warnings.push_back(w);
    return json_response(
        200, json{{"valid", true},
                  {"plan", parse.normalized},
                  {"estimated_duration_s", parse.estimated_duration_s},
                  {"warnings", warnings},
                  {"workload_fingerprint", parse.fingerprint},
                  {"comparison_label",
                   parse.per_target_optimised ? "per-target optimised" : "same-config"}});
  }

  // Memory-fit warnings for simulated targets (the only ones whose hardware we know exactly).
  std::vector<std::string> memory_warnings(const api::TestPlan& plan) const {
    std::vector<std::string> out;
    const auto catalog = sim::ProfileCatalog::builtin();
    std::int64_t concurrency = 1;
    for (const auto& p : plan.phases) {
      for (auto l : p.levels) concurrency = std::max<std::int64_t>(concurrency, l);
    }
    for (const auto& t : plan.targets) {
      if (t.base_url.rfind("sim://", 0) != 0) continue;
      const auto rest = t.base_url.substr(6);
      const auto hw = catalog.hardware(rest.substr(0, rest.find('/')));
      const auto model = catalog.model(rest.substr(rest.find('/') + 1));
      if (!hw || !model) {
        out.push_back("target " + t.name + ": unknown simulator profile in " + t.base_url);
        continue;
      }
      const auto& w = t.workload ? *t.workload : plan.workload;
      analysis::MemoryFitInput in;
      in.dtype = analysis::parse_dtype(t.precision.empty() ? "bf16" : t.precision)
                     .value_or(analysis::Dtype::kBf16);
      in.context_tokens =
          static_cast<std::int64_t>(w.input_tokens.nominal_mean() + w.output_tokens.nominal_mean());
      in.concurrency = concurrency;
      const auto fit = analysis::estimate_memory_fit(*model, *hw, in);
      if (!fit.fits) out.push_back("target " + t.name + ": " + fit.explanation);
    }
    return out;
  }

  HttpResponse create_job(const HttpRequest& req) {
    if (deps.shutting_down)
      return problem_response(ApiErrorCode::kShuttingDown, "not accepting jobs");
    if (auto bad = require_json_body(req)) return *bad;
    auto parse = api::parse_plan(req.body, limits());
    if (auto bad = plan_problem(parse)) return *bad;
    if (auto bad = dataset_problem(parse)) return *bad;
    const auto key = req.header("idempotency-key");
    if (key && (key->empty() || key->size() > 200))
      return problem_response(ApiErrorCode::kBadRequest,
                              "Idempotency-Key must be 1-200 characters");
    if (!key && deps.scheduler.queued() >= static_cast<std::size_t>(deps.config.max_queued_jobs))
      return problem_response(ApiErrorCode::kQueueFull, "the job queue is full; retry later")
          .with_header("Retry-After", "30");

    if (auto full = disk_problem()) return *full;

    storage::NewJob nj;
    nj.plan_json = parse.normalized.dump();
    nj.workload_fingerprint = parse.fingerprint;
    nj.submitted_by =
        role_of(req) == Role::kAdmin && !deps.config.auth_disabled() ? "admin-token" : "anonymous";
    for (const auto& t : parse.plan->targets) {
      storage::TargetRecord tr;
      tr.name = t.name;
      tr.base_url = t.base_url;
      tr.hardware_json = t.hardware_json;
      tr.price_per_hour = t.price_per_hour;
      nj.targets.push_back(tr);
      for (const auto& [k, v] : t.secrets) nj.secrets.push_back({t.name, k, v});
      for (const auto& [k, v] : t.headers) {
        const auto lower = net::to_lower_ascii(k);
        if (lower == "authorization" || lower == "x-api-key")
          nj.secrets.push_back({t.name, "header:" + k, v});
      }
    }
    if (key) {
      nj.idempotency_key = std::string(*key);
      nj.request_hash = fnv1a(req.body);
    }
    auto created = deps.store.create_job(nj);
    if (!created.ok()) return storage_problem(created.status());
    const auto& job = created.value().job;
    if (!created.value().created) return json_response(200, job_json(job));
    std::vector<std::string> keys;
    for (const auto& t : parse.plan->targets) keys.push_back(t.base_url);
    const auto submitted = deps.scheduler.submit(job.id, keys);
    if (submitted == JobScheduler::SubmitResult::kQueueFull ||
        submitted == JobScheduler::SubmitResult::kShuttingDown) {
      // Nothing may stay stored for a job that was refused.
      (void)deps.store.update_state(job.id, storage::JobState::kFailed, "refused: queue full");
      (void)deps.store.delete_job(job.id);
      return submitted == JobScheduler::SubmitResult::kQueueFull
                 ? problem_response(ApiErrorCode::kQueueFull, "the job queue is full; retry later")
                       .with_header("Retry-After", "30")
                 : problem_response(ApiErrorCode::kShuttingDown, "not accepting jobs");
    }
    (void)deps.store.append_audit({0, 0, nj.submitted_by, "job.create", job.id,
                                   "targets=" + std::to_string(job.targets.size())});
    log()->info("job {} created ({} targets, estimated ≤ {:.0f} s)", job.id, job.targets.size(),
                parse.estimated_duration_s);
    return json_response(201, job_json(job)).with_header("Location", "/v1/jobs/" + job.id);
  }

  HttpResponse list_jobs(const HttpRequest& req) {
    storage::JobFilter f;
    std::vector<api::FieldError> errors;
    if (auto s = req.query_param("state")) {
      f.state = storage::parse_job_state(*s);
      if (!f.state) errors.push_back({"state", "unknown state '" + *s + "'"});
    }
    if (auto t = req.query_param("target")) f.target = *t;
    if (auto v = req.query_param("verdict")) {
      if (*v != "pass" && *v != "fail" && *v != "inconclusive")
        errors.push_back({"verdict", "must be pass, fail or inconclusive, not '" + *v + "'"});
      else
        f.verdict = *v;
    }
    if (auto c = req.query_param("created_after")) {
      f.created_from_ms = parse_iso_time(*c);
      if (!f.created_from_ms) errors.push_back({"created_after", "must be an ISO 8601 UTC time"});
    }
    if (auto c = req.query_param("created_before")) {
      f.created_to_ms = parse_iso_time(*c);
      if (!f.created_to_ms) errors.push_back({"created_before", "must be an ISO 8601 UTC time"});
    }
    if (auto l = req.query_param("limit")) {
      if (auto v = query_int(*l, 1, 1000))
        f.limit = static_cast<int>(*v);
      else
        errors.push_back({"limit", "must be a whole number 1..1000"});
    }
    if (auto c = req.query_param("cursor")) f.cursor = *c;
    if (!errors.empty()) return problem_response(ApiErrorCode::kBadRequest, "bad query", errors);
    auto page = deps.store.list_jobs(f);
    if (!page.ok()) return storage_problem(page.status());
    json jobs = json::array();
    for (const auto& j : page.value().jobs) jobs.push_back(job_json(j));
    return json_response(200, json{{"jobs", jobs},
                                   {"next_cursor", page.value().next_cursor.empty()
                                                       ? json(nullptr)
                                                       : json(page.value().next_cursor)}});
  }

  HttpResponse get_job(const std::string& id) {
    auto job = deps.store.get_job(id);
    if (!job.ok()) return storage_problem(job.status());
    return json_response(200, job_json(job.value()));
  }

  HttpResponse delete_job(const std::string& id, const HttpRequest& req) {
    auto job = deps.store.get_job(id);
    if (!job.ok()) return storage_problem(job.status());
    // A job whose final state is stored can still hold its worker for a moment (the runner
    // returns right after storing it): a client that saw "cancelled" and deletes must not get a
    // 409 for that moment, so wait for the worker. Queued and running jobs stay a conflict.
    if (deps.scheduler.is_active(id) &&
        (!storage::is_at_rest(job.value().state) ||
         !deps.scheduler.wait_inactive(id, std::chrono::seconds(10))))
      return problem_response(ApiErrorCode::kConflict, "job is queued or running; cancel it first");
    if (auto st = deps.store.delete_job(id); !st.ok()) return storage_problem(st);
    deps.events.forget(id);
    (void)deps.store.append_audit(
        {0, 0, role_of(req) == Role::kAdmin ? "admin" : "anonymous", "job.delete", id, ""});
    HttpResponse r;
    r.status = 204;
    return r;
  }

  HttpResponse cancel_job(const std::string& id) {
    auto job = deps.store.request_cancel(id);
    if (!job.ok()) return storage_problem(job.status());
    const auto result = deps.scheduler.cancel(id);
    (void)deps.store.append_audit({0, 0, "api", "job.cancel", id, ""});
    auto fresh = deps.store.get_job(id);
    const auto& j = fresh.ok() ? fresh.value() : job.value();
    if (result == JobScheduler::CancelResult::kStopRequested)
      return json_response(202, job_json(j));
    if (j.state == storage::JobState::kQueued) {
      // Removed from the queue (or never queued): nothing runs it any more.
      auto c = deps.store.update_state(id, storage::JobState::kCancelled);
      if (c.ok()) return json_response(200, job_json(c.value()));
    }
    return json_response(200, job_json(j));
  }

  HttpResponse resume_job(const std::string& id) {
    if (deps.shutting_down)
      return problem_response(ApiErrorCode::kShuttingDown, "not accepting jobs");
    auto job = deps.store.get_job(id);
    if (!job.ok()) return storage_problem(job.status());
    if (job.value().state != storage::JobState::kInterrupted)
      return problem_response(ApiErrorCode::kConflict,
                              "only interrupted jobs can be resumed (this one is " +
                                  std::string(storage::to_string(job.value().state)) + ")");
    if (deps.scheduler.queued() >= static_cast<std::size_t>(deps.config.max_queued_jobs))
      return problem_response(ApiErrorCode::kQueueFull, "the job queue is full; retry later")
          .with_header("Retry-After", "30");
    auto queued = deps.store.update_state(id, storage::JobState::kQueued);
    if (!queued.ok()) return storage_problem(queued.status());
    std::vector<std::string> keys;
    for (const auto& t : job.value().targets) keys.push_back(t.base_url);
    deps.scheduler.submit(id, keys, job.value().priority);
    (void)deps.store.append_audit({0, 0, "api", "job.resume", id, ""});
    return json_response(202, job_json(queued.value()));
  }

  HttpResponse get_results(const std::string& id) {
    auto job = deps.store.get_job(id);
    if (!job.ok()) return storage_problem(job.status());
    auto caps = deps.store.list_capacity(id);
    if (!caps.ok()) return storage_problem(caps.status());
    json out;
    for (const auto& c : caps.value()) {
      if (c.target == kResultsKey) out = json::parse(c.result_json, nullptr, false);
    }
    if (!out.is_object()) {
      // Not finished yet: the steps completed so far.
      out = json{{"complete", false}};
      json steps = json::array();
      if (auto s = deps.store.list_steps(id); s.ok()) {
        for (const auto& st : s.value()) {
          if (st.summary_json) steps.push_back(json::parse(*st.summary_json, nullptr, false));
        }
      }
      out["steps"] = steps;
    } else {
      out["complete"] = job.value().state == storage::JobState::kSucceeded;
    }
    out["job"] = job_json(job.value());
    return json_response(200, out);
  }

  // The stored results document of a finished (or partial) job, with its job resource.
  std::optional<json> results_doc(const std::string& id, HttpResponse& error) {
    auto r = get_results(id);
    if (r.status != 200) {
      error = r;
      return std::nullopt;
    }
    return json::parse(r.body, nullptr, false);
  }

  // The agent Indexed Job of a job with plan `agents` (server/agent_manifest_route.h).
  HttpResponse get_agents_manifest(const std::string& id, const HttpRequest& req) {
    auto job = deps.store.get_job(id);
    if (!job.ok()) return storage_problem(job.status());
    auto plan = deps.store.get_plan(job.value().plan_id);
    if (!plan.ok()) return storage_problem(plan.status());
    const std::string accept(req.header("accept").value_or("application/yaml"));
    return agent_manifest_response(deps.config.k8s_options(), id,
                                   json::parse(plan.value().plan_json, nullptr, false),
                                   accept.find("application/json") != std::string::npos);
  }

  HttpResponse get_report(const std::string& id, const HttpRequest& req) {
    HttpResponse error;
    auto doc = results_doc(id, error);
    if (!doc) return error;
    if (!doc->contains("targets"))
      return problem_response(ApiErrorCode::kConflict, "the job has no results yet");
    const std::string accept(req.header("accept").value_or("text/html"));
    if (accept.find("text/markdown") != std::string::npos)
      return HttpResponse::text(200, api::render_markdown(*doc), "text/markdown; charset=utf-8");
    if (accept.find("text/csv") != std::string::npos)
      return HttpResponse::text(200, api::render_capacity_csv(*doc), "text/csv; charset=utf-8");
    api::ReportOptions o;
    o.job_id = id;
    o.generated_at = iso_time(std::chrono::duration_cast<std::chrono::milliseconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count());
    return HttpResponse::text(200, api::render_report_html(*doc, o), "text/html; charset=utf-8");
  }

  HttpResponse compare_jobs(const HttpRequest& req) {
    const auto jobs = req.query_param("jobs");
    if (!jobs || jobs->empty())
      return problem_response(ApiErrorCode::kBadRequest, "give ?jobs=<id>,<id>,...",
                              {{"jobs", "is required"}});
    std::vector<json> docs;
    std::string rest = *jobs;
    while (!rest.empty()) {
      const auto comma = rest.find(',');
      const std::string id = rest.substr(0, comma);
      rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
      if (id.empty()) continue;
      HttpResponse error;
      auto doc = results_doc(id, error);
      if (!doc) return error;
      docs.push_back(std::move(*doc));
    }
    const auto allow_text = req.query_param("allow_different_workloads").value_or("false");
    if (allow_text != "true" && allow_text != "false")
      return problem_response(ApiErrorCode::kBadRequest, "bad query",
                              {{"allow_different_workloads", "must be true or false"}});
    const bool allow = allow_text == "true";
    auto outcome = api::compare_results(std::move(docs), allow);
    if (!outcome.document) {
      std::vector<api::FieldError> errors;
      for (const auto& j : outcome.mismatched_jobs) errors.push_back({"jobs", j});
      return problem_response(ApiErrorCode::kInvalidRequest, outcome.error, errors);
    }
    const std::string accept(req.header("accept").value_or("application/json"));
    if (accept.find("text/html") != std::string::npos)
      return HttpResponse::text(200, api::render_report_html(*outcome.document, {}),
                                "text/html; charset=utf-8");
    if (accept.find("text/markdown") != std::string::npos)
      return HttpResponse::text(200, api::render_markdown(*outcome.document),
                                "text/markdown; charset=utf-8");
    if (accept.find("text/csv") != std::string::npos)
      return HttpResponse::text(200, api::render_capacity_csv(*outcome.document),
                                "text/csv; charset=utf-8");
    return json_response(200, *outcome.document);
  }

  HttpResponse profiles() {
    const auto catalog = sim::ProfileCatalog::builtin();
    json hw = json::array(), models = json::array();
    for (const auto& n : catalog.hardware_names()) {
      const auto h = catalog.hardware(n);
      hw.push_back({{"name", h->name},
                    {"display_name", h->display_name},
                    {"memory_gb", h->memory_bytes / 1e9},
                    {"bandwidth_gb_per_s", h->bandwidth_bytes_per_s / 1e9},
                    {"bf16_tflops", h->bf16_tflops},
                    {"fp8_tflops", h->fp8_tflops},
                    {"tdp_watts", h->tdp_watts},
                    {"form_factor", h->form_factor},
                    {"interconnect", h->interconnect}});
    }
    for (const auto& n : catalog.model_names()) {
      const auto m = catalog.model(n);
      models.push_back({{"name", m->name},
                        {"params", m->params},
                        {"layers", m->layers},
                        {"hidden", m->hidden},
                        {"heads", m->heads},
                        {"kv_heads", m->kv_heads},
                        {"head_dim", m->head_dim},
                        {"max_context_tokens", m->max_context_tokens},
                        {"kv_bytes_per_token_bf16", analysis::kv_bytes_per_token(*m)}});
    }
    return json_response(200, json{{"hardware", hw}, {"models", models}});
  }

  HttpResponse estimate_memory(const HttpRequest& req) {
    if (auto bad = require_json_body(req)) return *bad;
    json body = json::parse(req.body, nullptr, false);
    if (body.is_discarded())
      return problem_response(ApiErrorCode::kMalformedJson, "not valid JSON");
    if (!body.is_object())
      return problem_response(ApiErrorCode::kInvalidRequest, "expected an object");
    std::vector<api::FieldError> errors;
    const auto catalog = sim::ProfileCatalog::builtin();
    std::optional<analysis::HardwareSpec> hw;
    std::optional<analysis::ModelSpec> model;
    analysis::MemoryFitInput in;
    std::string dtype = "bf16";
    for (const auto& [k, v] : body.items()) {
      const std::string p = "/" + k;
      if (k == "hardware" || k == "model" || k == "dtype" || k == "kv_cache_dtype") {
        if (!v.is_string()) {
          errors.push_back({p, "must be a string"});
          continue;
        }
        const auto s = v.get<std::string>();
        if (k == "hardware" && !(hw = catalog.hardware(s)))
          errors.push_back({p, "unknown hardware profile '" + s + "'"});
        if (k == "model" && !(model = catalog.model(s)))
          errors.push_back({p, "unknown model profile '" + s + "'"});
        if (k == "dtype") {
          dtype = s;
          if (auto d = analysis::parse_dtype(s))
            in.dtype = *d;
          else
            errors.push_back({p, "must be bf16, fp16, fp8, int8 or int4"});
        }
        if (k == "kv_cache_dtype") {
          if (s == "fp8")
            in.kv_bytes_per_element = 1;
          else if (s != "auto")
            errors.push_back({p, "must be auto or fp8"});
        }
      } else if (k == "context_tokens" || k == "concurrency") {
        if (!v.is_number_integer() || v.get<std::int64_t>() < 1 ||
            v.get<std::int64_t>() > 10'000'000) {
          errors.push_back({p, "must be an integer between 1 and 10000000"});
          continue;
        }
        (k == "context_tokens" ? in.context_tokens : in.concurrency) = v.get<std::int64_t>();
      } else if (k == "gpu_memory_utilization") {
        if (!v.is_number() || v.get<double>() <= 0 || v.get<double>() > 1) {
          errors.push_back({p, "must be in (0, 1]"});
          continue;
        }
        in.gpu_memory_utilization = v.get<double>();
      } else {
        errors.push_back({p, "unknown key"});
      }
    }
    if (!body.contains("hardware")) errors.push_back({"/hardware", "is required"});
    if (!body.contains("model")) errors.push_back({"/model", "is required"});
    if (!errors.empty())
      return problem_response(ApiErrorCode::kInvalidRequest, "invalid estimate", errors);
    auto j = api::memory_fit_json(analysis::estimate_memory_fit(*model, *hw, in));
    j["hardware"] = hw->name;
    j["model"] = model->name;
    j["dtype"] = dtype;
    j["context_tokens"] = in.context_tokens;
    j["concurrency"] = in.concurrency;
    return json_response(200, j);
  }

  HttpResponse index_page() {
    storage::JobFilter f;
    f.limit = 50;
    auto page = deps.store.list_jobs(f);
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

  // Everything except the streaming routes. Runs on the blocking pool.
  HttpResponse dispatch(HttpRequest& req, const api::RouteMatch& m) {
    const std::string& name = m.route->name;
    if (name == "healthz") return json_response(200, json{{"status", "ok"}, {"version", kVersion}});
    if (name == "readyz") {
      if (deps.shutting_down) return problem_response(ApiErrorCode::kShuttingDown, "shutting down");
      // Ready = can take jobs: the database passed its start-up quick_check and can be written.
      const std::string blocked = write_blocker();
      const bool ready = blocked.empty() && deps.database_check == "ok";
      json body{{"status", ready ? "ready" : "not ready"},
                {"reads", true},
                {"writes", blocked.empty()},
                {"database", json{{"quick_check", deps.database_check}}},
                {"queued_jobs", deps.scheduler.queued()},
                {"running_jobs", deps.scheduler.running()}};
      if (!blocked.empty()) body["reason"] = blocked;
      if (deps.config.open_to_network())
        body["warnings"] = json::array(
            {"the API listens on " + deps.config.listen_address +
             " with no tokens: anyone who can reach it can submit jobs (docs/security.md)"});
      if (deps.database_check != "ok")
        body["reason"] = "database quick_check at start: " + deps.database_check;
      return json_response(ready ? 200 : 503, body);
    }
    if (name == "metrics")
      return HttpResponse::text(200, deps.metrics.serialize(), "text/plain; version=0.0.4");
    if (name == "openapi") return HttpResponse::json(200, std::string(openapi_document()));
    if (name == "profiles") return profiles();
    if (name == "estimate_memory") return estimate_memory(req);
    if (name == "validate_plan") return validate_plan(req);
    if (name == "create_job") return create_job(req);
    if (name == "list_jobs") return list_jobs(req);
    if (name == "index") return index_page();
    if (name == "compare_jobs") return compare_jobs(req);
    const std::string& id = m.params.at("id");
    if (name == "get_job") return get_job(id);
    if (name == "delete_job") return delete_job(id, req);
    if (name == "cancel_job") return cancel_job(id);
    if (name == "resume_job") return resume_job(id);
    if (name == "get_results") return get_results(id);
    if (name == "get_report") return get_report(id, req);
    if (name == "get_agents_manifest") return get_agents_manifest(id, req);
    if (name.rfind("shard_", 0) == 0) {
      if (!deps.shards) return problem_response(ApiErrorCode::kNotFound, "no agent fleets here");
      return handle_shard_route(*deps.shards, name, id, m.params.at("shard"), req);
    }
    return problem_response(ApiErrorCode::kNotFound, "no such resource");
  }

  static bool is_mutating(const std::string& route) {
    // Agents (scale-out) use an admin token: they receive target credentials with their specs.
    return route == "create_job" || route == "delete_job" || route == "cancel_job" ||
           route == "resume_job" || route.rfind("shard_", 0) == 0;
  }
  static bool is_open_health(const std::string& route) {
    return route == "healthz" || route == "readyz";
  }

  // Auth decision; nullopt = allowed.
  std::optional<HttpResponse> authorize(const HttpRequest& req, const std::string& route) const {
    if (deps.config.auth_disabled()) return std::nullopt;
    if (is_open_health(route) && deps.config.open_health) return std::nullopt;
    if (route == "metrics" && deps.config.open_metrics) return std::nullopt;
    if (route == "openapi") return std::nullopt;
    const Role role = role_of(req);
    if (role == Role::kNone)
      return problem_response(ApiErrorCode::kUnauthorized, "send Authorization: Bearer <token>")
          .with_header("WWW-Authenticate", "Bearer realm=\"llmcapd\"");
    if (is_mutating(route) && role != Role::kAdmin)
      return problem_response(ApiErrorCode::kForbidden, "this route needs an admin token");
    return std::nullopt;
  }

  asio::awaitable<std::optional<HttpResponse>> handle(HttpRequest& req, net::ResponseStream& out);
  asio::awaitable<std::optional<HttpResponse>> stream_events(HttpRequest& req,
                                                             net::ResponseStream& out,
                                                             std::string id);
  asio::awaitable<std::optional<HttpResponse>> stream_requests(HttpRequest& req,
                                                               net::ResponseStream& out,
                                                               std::string id);
};

asio::awaitable<std::optional<HttpResponse>> RestApi::Impl::stream_events(HttpRequest&,
                                                                          net::ResponseStream& out,
                                                                          std::string id) {
  auto self = shared_from_this();
  auto io = co_await asio::this_coro::executor;
  co_await asio::post(blocking, asio::use_awaitable);
  auto job = deps.store.get_job(id);
  co_await asio::post(io, asio::use_awaitable);
  if (!job.ok()) co_return storage_problem(job.status());
  net::HeaderList headers;
  headers.emplace_back("Content-Type", "text/event-stream");
  headers.emplace_back("Cache-Control", "no-cache");
  if (!co_await out.start(200, std::move(headers))) co_return std::nullopt;
  const bool at_rest = storage::is_at_rest(job.value().state);
  std::uint64_t seen = 0;
  asio::steady_timer timer(io);
  for (int idle = 0;; ++idle) {
    const auto read = deps.events.read(id, seen);
    for (const auto& e : read.events) {
      const std::string frame =
          "id: " + std::to_string(e.seq) + "\nevent: " + e.type + "\ndata: " + e.data + "\n\n";
      if (!co_await out.write(frame)) co_return std::nullopt;
      seen = e.seq;
      idle = 0;
    }
    if (read.finished || (at_rest && !read.known)) {
      // The state now, not the one when the stream opened (the runner stores it before
      // finish()).
      co_await asio::post(blocking, asio::use_awaitable);
      auto final_job = deps.store.get_job(id);
      co_await asio::post(io, asio::use_awaitable);
      const auto state = final_job.ok() ? final_job.value().state : job.value().state;
      const std::string frame =
          "event: end\ndata: {\"state\":\"" + std::string(storage::to_string(state)) + "\"}\n\n";
      co_await out.write(frame);
      break;
    }
    if (deps.shutting_down) break;
    if (idle % 60 == 59) {
      if (!co_await out.write(": keep-alive\n\n")) co_return std::nullopt;
    }
    timer.expires_after(std::chrono::milliseconds(250));
    co_await timer.async_wait(asio::use_awaitable);
  }
  co_await out.finish();
  co_return std::nullopt;
}

asio::awaitable<std::optional<HttpResponse>> RestApi::Impl::stream_requests(
    HttpRequest& req, net::ResponseStream& out, std::string id) {
  auto self = shared_from_this();
  auto io = co_await asio::this_coro::executor;
  const std::string accept = std::string(req.header("accept").value_or("application/x-ndjson"));
  const bool csv = accept.find("text/csv") != std::string::npos;
  if (!csv && accept.find("ndjson") == std::string::npos &&
      accept.find("application/jsonl") == std::string::npos &&
      accept.find("*/*") == std::string::npos &&
      accept.find("application/json") == std::string::npos)
    co_return problem_response(ApiErrorCode::kNotAcceptable,
                               "use Accept: application/x-ndjson or text/csv");
  std::int64_t after = 0;
  int limit = 10'000;
  std::optional<std::int64_t> step_seq;
  std::vector<api::FieldError> bad;
  if (auto a = req.query_param("after")) {
    if (auto v = query_int(*a, 0, INT64_MAX))
      after = *v;
    else
      bad.push_back({"after", "must be a whole number >= 0"});
  }
  if (auto l = req.query_param("limit")) {
    if (auto v = query_int(*l, 1, 100'000))
      limit = static_cast<int>(*v);
    else
      bad.push_back({"limit", "must be a whole number 1..100000"});
  }
  if (auto st = req.query_param("step")) {
    if (auto v = query_int(*st, 0, INT64_MAX))
      step_seq = *v;
    else
      bad.push_back({"step", "must be a whole number >= 0"});
  }
  if (!bad.empty()) co_return problem_response(ApiErrorCode::kBadRequest, "bad query", bad);

  co_await asio::post(blocking, asio::use_awaitable);
  auto job = deps.store.get_job(id);
  auto steps = deps.store.list_steps(id);
  co_await asio::post(io, asio::use_awaitable);
  if (!job.ok()) co_return storage_problem(job.status());
  if (!steps.ok()) co_return storage_problem(steps.status());
  std::map<std::int64_t, std::int64_t> seq_of;  // step id → seq
  std::optional<std::int64_t> step_id;
  for (const auto& s : steps.value()) {
    seq_of[s.id] = s.seq;
    if (step_seq && s.seq == *step_seq) step_id = s.id;
  }
  if (step_seq && !step_id)
    co_return problem_response(ApiErrorCode::kNotFound, "no such step in this job");

  // Read the first page before committing to a 200.
  int remaining = limit;
  co_await asio::post(blocking, asio::use_awaitable);
  auto page = deps.store.read_samples(id, step_id, after, std::min(remaining, 5000));
  co_await asio::post(io, asio::use_awaitable);
  if (!page.ok()) co_return storage_problem(page.status());
  net::HeaderList headers;
  headers.emplace_back("Content-Type", csv ? "text/csv; charset=utf-8" : "application/x-ndjson");
  std::optional<std::int64_t> next;
  if (!co_await out.start(200, std::move(headers))) co_return std::nullopt;
  if (csv && !co_await out.write(sample_csv_header())) co_return std::nullopt;
  for (;;) {
    std::string chunk;
    for (const auto& r : page.value().rows) {
      if (csv)
        chunk += sample_csv_line(r, seq_of[r.step_id]);
      else
        // Invalid UTF-8 stored by an older version must not end the export (issue 23 #11).
        chunk +=
            sample_json(r, seq_of[r.step_id]).dump(-1, ' ', false, json::error_handler_t::replace) +
            "\n";
    }
    remaining -= static_cast<int>(page.value().rows.size());
    next = page.value().next_after_id;
    if (!chunk.empty() && !co_await out.write(chunk)) co_return std::nullopt;
    if (!next || remaining <= 0) break;
    const std::int64_t cursor = *next;
    co_await asio::post(blocking, asio::use_awaitable);
    page = deps.store.read_samples(id, step_id, cursor, std::min(remaining, 5000));
    co_await asio::post(io, asio::use_awaitable);
    if (!page.ok()) {
      // Headers are gone: the stream is cut without its last chunk, so a client sees an
      // incomplete export, never a short one that looks whole.
      log()->error("job {}: sample export cut after {} rows: {}", id, limit - remaining,
                   page.status().to_string());
      out.reset();
      co_return std::nullopt;
    }
  }
  co_await out.finish();
  co_return std::nullopt;
}

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
    route = m.route->name;
    if (auto denied = authorize(req, route)) {
      response = std::move(denied);
    } else if (route == "watch_job") {
      response = co_await stream_events(req, out, m.params.at("id"));
    } else if (route == "get_requests") {
      response = co_await stream_requests(req, out, m.params.at("id"));
    } else {
      auto io = co_await asio::this_coro::executor;
      co_await asio::post(blocking, asio::use_awaitable);
      try {
        response = dispatch(req, m);
      } catch (const std::exception& e) {
        log()->error("{} {}: {}", req.method, req.path, e.what());
        response = problem_response(ApiErrorCode::kInternal, "internal error");
      }
      co_await asio::post(io, asio::use_awaitable);
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  deps.metrics.observe_api_request(route, response ? response->status : 200, seconds);
  co_return response;
}

RestApi::RestApi(RestApiDeps deps, asio::thread_pool& blocking)
    : impl_(std::make_shared<Impl>(deps, blocking)) {}

RestApi::~RestApi() = default;

net::Handler RestApi::handler() {
  auto impl = impl_;
  return [impl](HttpRequest& req, net::ResponseStream& out) { return impl->handle(req, out); };
}

}  // namespace llmcap::server

// The job collection and each job's lifecycle: submit, list, read, cancel, resume, delete, and
// the live event stream.
#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>

#include "analysis/fnv1a.h"
#include "api/problem_json.h"
#include "server/engine/plan_conversion.h"
#include "server/engine/plan_executor.h"
#include "server/jobs/job_events.h"
#include "server/jobs/job_scheduler.h"
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

// Why the plan cannot be predicted (422 naming each field), or nothing.
std::optional<HttpResponse> prediction_problem(const api::PlanParse& parse) {
  RunPlan plan;
  if (auto err = to_run_plan(parse, plan); !err.empty())
    return problem_response(ApiErrorCode::kInvalidPlan, err);
  const auto problems = PlanExecutor::prediction_problems(plan);
  if (problems.empty()) return std::nullopt;
  std::vector<api::FieldError> errors;
  for (const auto& p : problems) {
    const auto sep = p.find(": ");
    errors.push_back({p.substr(0, sep), sep == std::string::npos ? p : p.substr(sep + 2)});
  }
  return problem_response(
      ApiErrorCode::kInvalidPlan,
      "the plan cannot be predicted: " + std::to_string(errors.size()) + " problem(s)", errors);
}

// POST /v1/jobs (kind "measured") and POST /v1/predictions (kind "predicted"): one path, so a
// prediction is stored, scheduled, listed, reported and exported like any job.
HttpResponse create(RestContext& c, const HttpRequest& req, const std::string& kind) {
  const bool predicted = kind == "predicted";
  if (c.deps.shutting_down)
    return problem_response(ApiErrorCode::kShuttingDown, "not accepting jobs");
  if (auto bad = c.require_json_body(req)) return *bad;
  auto parse = api::parse_plan(req.body, c.options.plan_limits);
  if (auto bad = c.plan_problem(parse)) return *bad;
  if (auto bad = c.dataset_problem(parse)) return *bad;
  if (predicted) {
    if (auto bad = prediction_problem(parse)) return *bad;
  }
  const auto key = req.header("idempotency-key");
  if (key && (key->empty() || key->size() > 200))
    return problem_response(ApiErrorCode::kBadRequest, "Idempotency-Key must be 1-200 characters");
  // Predictions have a queue and workers of their own (server/jobs/job_scheduler.h): they never
  // wait behind measured jobs, and a full queue of one kind refuses nothing of the other.
  const auto lane = predicted ? JobScheduler::Lane::kPrediction : JobScheduler::Lane::kMeasured;
  if (!key && c.deps.scheduler.queued(lane) >= static_cast<std::size_t>(c.options.max_queued_jobs))
    return problem_response(ApiErrorCode::kQueueFull, "the job queue is full; retry later")
        .with_header("Retry-After", "30");

  if (auto full = c.disk_problem()) return *full;

  const Caller caller = c.caller_of(req);
  storage::NewJob nj;
  nj.plan_json = parse.normalized.dump();
  nj.workload_fingerprint = parse.fingerprint;
  nj.kind = kind;
  // The tenant owns the job and its idempotency key: another tenant's same key is another job.
  nj.tenant = caller.tenant;
  nj.submitted_by = caller.actor();
  for (const auto& t : parse.plan->targets) {
    storage::TargetRecord tr;
    tr.name = t.name;
    tr.base_url = t.base_url;
    tr.hardware_json = t.hardware_json;
    tr.price_per_hour = t.price_per_hour;
    nj.targets.push_back(tr);
    for (const auto& [k, v] : t.secrets) nj.secrets.push_back({t.name, k, v});
    // The same set the plan reader redacts (net::is_credential_header), so every redacted
    // value has its secret to be restored from when the job runs.
    for (const auto& [k, v] : t.headers) {
      if (net::is_credential_header(k)) nj.secrets.push_back({t.name, "header:" + k, v});
    }
  }
  if (key) {
    nj.idempotency_key = std::string(*key);
    // The kind is part of the request: the same key and body posted to /v1/jobs and then to
    // /v1/predictions is a conflict, never the other endpoint's job.
    nj.request_hash = analysis::fnv1a_64_hex(predicted ? "predicted:" + req.body : req.body);
  }
  auto created = c.deps.store.create_job(nj);
  if (!created.ok()) return storage_problem(created.status());
  const auto& job = created.value().job;
  if (!created.value().created) return json_response(200, c.job_json(job));
  // A prediction loads no target, so it waits for no other job.
  std::vector<std::string> keys;
  if (!predicted)
    for (const auto& t : parse.plan->targets) keys.push_back(t.base_url);
  const auto submitted = c.deps.scheduler.submit(job.id, keys, 0, lane);
  if (submitted == JobScheduler::SubmitResult::kQueueFull ||
      submitted == JobScheduler::SubmitResult::kShuttingDown) {
    // Nothing may stay stored for a job that was refused.
    (void)c.deps.store.update_state(job.id, storage::JobState::kFailed, "refused: queue full");
    (void)c.deps.store.delete_job(job.id);
    return submitted == JobScheduler::SubmitResult::kQueueFull
               ? problem_response(ApiErrorCode::kQueueFull, "the job queue is full; retry later")
                     .with_header("Retry-After", "30")
               : problem_response(ApiErrorCode::kShuttingDown, "not accepting jobs");
  }
  c.deps.metrics.observe_job_submitted(job.tenant, kind);
  std::string detail = "targets=" + std::to_string(job.targets.size());
  if (!predicted) detail += fmt::format(" estimated_s={:.0f}", parse.estimated_duration_s);
  c.record_write(caller, predicted ? "prediction.create" : "job.create", job.id, detail);
  return json_response(201, c.job_json(job)).with_header("Location", "/v1/jobs/" + job.id);
}

HttpResponse create_job(RestContext& c, const HttpRequest& req, const PathParams&) {
  return create(c, req, "measured");
}

HttpResponse create_prediction(RestContext& c, const HttpRequest& req, const PathParams&) {
  return create(c, req, "predicted");
}

HttpResponse list_jobs(RestContext& c, const HttpRequest& req, const PathParams&) {
  storage::JobFilter f;
  std::vector<api::FieldError> errors;
  if (auto s = req.query_param("state")) {
    f.state = storage::parse_job_state(*s);
    if (!f.state) errors.push_back({"state", "unknown state '" + *s + "'"});
  }
  if (auto t = req.query_param("target")) f.target = *t;
  if (auto k = req.query_param("kind")) {
    if (*k != "measured" && *k != "predicted")
      errors.push_back({"kind", "must be measured or predicted, not '" + *k + "'"});
    else
      f.kind = *k;
  }
  if (auto w = req.query_param("workload_fingerprint")) f.workload_fingerprint = *w;
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
  f.tenant = c.caller_of(req).tenant_filter();  // a tenant lists its own jobs only
  if (!errors.empty()) return problem_response(ApiErrorCode::kBadRequest, "bad query", errors);
  auto page = c.deps.store.list_jobs(f);
  if (!page.ok()) return storage_problem(page.status());
  json jobs = json::array();
  for (const auto& j : page.value().jobs) jobs.push_back(c.job_json(j));
  return json_response(200, json{{"jobs", jobs},
                                 {"next_cursor", page.value().next_cursor.empty()
                                                     ? json(nullptr)
                                                     : json(page.value().next_cursor)}});
}

HttpResponse get_job(RestContext& c, const HttpRequest&, const PathParams& path) {
  const std::string& id = path.at("id");
  auto job = c.deps.store.get_job(id);
  if (!job.ok()) return storage_problem(job.status());
  return json_response(200, c.job_json(job.value()));
}

HttpResponse delete_job(RestContext& c, const HttpRequest& req, const PathParams& path) {
  const std::string& id = path.at("id");
  auto job = c.deps.store.get_job(id);
  if (!job.ok()) return storage_problem(job.status());
  // A job whose final state is stored can still hold its worker for a moment (the runner
  // returns right after storing it): a client that saw "cancelled" and deletes must not get a
  // 409 for that moment, so wait for the worker. Queued and running jobs stay a conflict.
  if (c.deps.scheduler.is_active(id) &&
      (!storage::is_at_rest(job.value().state) ||
       !c.deps.scheduler.wait_inactive(id, std::chrono::seconds(10))))
    return problem_response(ApiErrorCode::kConflict, "job is queued or running; cancel it first");
  if (auto st = c.deps.store.delete_job(id); !st.ok()) return storage_problem(st);
  c.deps.events.forget(id);
  c.record_write(c.caller_of(req), "job.delete", id);
  HttpResponse r;
  r.status = 204;
  return r;
}

HttpResponse cancel_job(RestContext& c, const HttpRequest& req, const PathParams& path) {
  const std::string& id = path.at("id");
  auto job = c.deps.store.request_cancel(id);
  if (!job.ok()) return storage_problem(job.status());
  const auto result = c.deps.scheduler.cancel(id);
  c.record_write(c.caller_of(req), "job.cancel", id);
  auto fresh = c.deps.store.get_job(id);
  const auto& j = fresh.ok() ? fresh.value() : job.value();
  if (result == JobScheduler::CancelResult::kStopRequested)
    return json_response(202, c.job_json(j));
  if (j.state == storage::JobState::kQueued) {
    // Removed from the queue (or never queued): nothing runs it any more.
    auto cancelled = c.deps.store.update_state(id, storage::JobState::kCancelled);
    if (cancelled.ok()) return json_response(200, c.job_json(cancelled.value()));
  }
  return json_response(200, c.job_json(j));
}

HttpResponse resume_job(RestContext& c, const HttpRequest& req, const PathParams& path) {
  const std::string& id = path.at("id");
  if (c.deps.shutting_down)
    return problem_response(ApiErrorCode::kShuttingDown, "not accepting jobs");
  auto job = c.deps.store.get_job(id);
  if (!job.ok()) return storage_problem(job.status());
  if (job.value().state != storage::JobState::kInterrupted)
    return problem_response(ApiErrorCode::kConflict,
                            "only interrupted jobs can be resumed (this one is " +
                                std::string(storage::to_string(job.value().state)) + ")");
  const bool predicted = job.value().kind == "predicted";
  const auto lane = predicted ? JobScheduler::Lane::kPrediction : JobScheduler::Lane::kMeasured;
  if (c.deps.scheduler.queued(lane) >= static_cast<std::size_t>(c.options.max_queued_jobs))
    return problem_response(ApiErrorCode::kQueueFull, "the job queue is full; retry later")
        .with_header("Retry-After", "30");
  auto queued = c.deps.store.update_state(id, storage::JobState::kQueued);
  if (!queued.ok()) return storage_problem(queued.status());
  std::vector<std::string> keys;  // a prediction loads no target
  if (!predicted)
    for (const auto& t : job.value().targets) keys.push_back(t.base_url);
  c.deps.scheduler.submit(id, keys, job.value().priority, lane);
  c.record_write(c.caller_of(req), "job.resume", id);
  return json_response(202, c.job_json(queued.value()));
}

// Server-sent events of the job's progress until it ends (then an `end` event with its state).
asio::awaitable<std::optional<HttpResponse>> watch_job(RestContext& c, HttpRequest&,
                                                       net::ResponseStream& out,
                                                       const PathParams& path) {
  const std::string id = path.at("id");
  auto io = co_await asio::this_coro::executor;
  co_await to_blocking_pool(c.blocking);
  auto job = c.deps.store.get_job(id);
  co_await back_to(io);
  if (!job.ok()) co_return storage_problem(job.status());
  net::HeaderList headers;
  headers.emplace_back("Content-Type", "text/event-stream");
  headers.emplace_back("Cache-Control", "no-cache");
  if (!co_await out.start(200, std::move(headers))) co_return std::nullopt;
  const bool at_rest = storage::is_at_rest(job.value().state);
  std::uint64_t seen = 0;
  asio::steady_timer timer(io);
  for (int idle = 0;; ++idle) {
    const auto read = c.deps.events.read(id, seen);
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
      co_await to_blocking_pool(c.blocking);
      auto final_job = c.deps.store.get_job(id);
      co_await back_to(io);
      const auto state = final_job.ok() ? final_job.value().state : job.value().state;
      const std::string frame =
          "event: end\ndata: {\"state\":\"" + std::string(storage::to_string(state)) + "\"}\n\n";
      co_await out.write(frame);
      break;
    }
    if (c.deps.shutting_down) break;
    if (idle % 60 == 59) {
      if (!co_await out.write(": keep-alive\n\n")) co_return std::nullopt;
    }
    timer.expires_after(std::chrono::milliseconds(250));
    co_await timer.async_wait(asio::use_awaitable);
  }
  co_await out.finish();
  co_return std::nullopt;
}

}  // namespace

std::vector<RouteSpec> job_routes() {
  return {
      {"POST", "/v1/jobs", "create_job", Access::kAdmin, create_job, {}},
      {"POST", "/v1/predictions", "create_prediction", Access::kAdmin, create_prediction, {}},
      {"GET", "/v1/jobs", "list_jobs", Access::kRead, list_jobs, {}},
      {"GET", "/v1/jobs/{id}", "get_job", Access::kRead, get_job, {}},
      {"DELETE", "/v1/jobs/{id}", "delete_job", Access::kAdmin, delete_job, {}},
      {"POST", "/v1/jobs/{id}:cancel", "cancel_job", Access::kAdmin, cancel_job, {}},
      {"POST", "/v1/jobs/{id}:resume", "resume_job", Access::kAdmin, resume_job, {}},
      {"GET", "/v1/jobs/{id}/events", "watch_job", Access::kRead, {}, watch_job},
  };
}

}  // namespace llmcap::server

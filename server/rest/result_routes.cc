// A job's results: the results document, the report (HTML, Markdown, CSV, JUnit XML),
// comparisons across jobs, and the per-request samples export (NDJSON or CSV, streamed).
#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <climits>
#include <map>

#include "api/prediction_check.h"
#include "api/problem_json.h"
#include "api/report_compare.h"
#include "api/report_format.h"
#include "api/report_html.h"
#include "api/report_junit.h"
#include "api/report_negotiation.h"
#include "api/report_tables.h"
#include "server/engine/sample_codec.h"
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

HttpResponse get_results(RestContext& c, const std::string& id) {
  auto job = c.deps.store.get_job(id);
  if (!job.ok()) return storage_problem(job.status());
  auto caps = c.deps.store.list_capacity(id);
  if (!caps.ok()) return storage_problem(caps.status());
  json out;
  for (const auto& cap : caps.value()) {
    if (cap.target == storage::kResultsKey) out = json::parse(cap.result_json, nullptr, false);
  }
  if (!out.is_object()) {
    // Not finished yet: the steps completed so far.
    out = json{{"complete", false}};
    json steps = json::array();
    if (auto s = c.deps.store.list_steps(id); s.ok()) {
      for (const auto& st : s.value()) {
        if (st.summary_json) steps.push_back(json::parse(*st.summary_json, nullptr, false));
      }
    }
    out["steps"] = steps;
  } else {
    out["complete"] = job.value().state == storage::JobState::kSucceeded;
  }
  out["job"] = c.job_json(job.value());
  return json_response(200, out);
}

// The stored results document of a finished (or partial) job, with its job resource.
std::optional<json> results_doc(RestContext& c, const std::string& id, HttpResponse& error) {
  auto r = get_results(c, id);
  if (r.status != 200) {
    error = r;
    return std::nullopt;
  }
  return json::parse(r.body, nullptr, false);
}

// The report's input for a job: its stored results and the plan it stored, joined by
// api::report_document, the function `llmcapd run` builds its results file with (one code path
// for every report, so the daemon's pages draw the plan's SLA bounds too).
std::optional<json> report_doc(RestContext& c, const std::string& id, HttpResponse& error) {
  auto doc = results_doc(c, id, error);
  if (!doc) return doc;
  auto job = c.deps.store.get_job(id);
  if (!job.ok()) {
    error = storage_problem(job.status());
    return std::nullopt;
  }
  auto plan = c.deps.store.get_plan(job.value().plan_id);
  if (!plan.ok()) {
    error = storage_problem(plan.status());
    return std::nullopt;
  }
  return api::report_document(std::move(*doc), json::parse(plan.value().plan_json, nullptr, false));
}

// Beside a job's report, the newest succeeded job of the other kind (a measurement for a
// prediction, a prediction for a measurement) with the same workload fingerprint and SLA:
// api::prediction_check compares them target by target. Nothing when there is none.
// Only jobs the caller sees are candidates (another tenant's measurement is not its to compare).
void add_prediction_check(RestContext& c, const Caller& caller, const std::string& id, json& doc) {
  auto job = c.deps.store.get_job(id);
  if (!job.ok() || job.value().state != storage::JobState::kSucceeded) return;
  auto plan = c.deps.store.get_plan(job.value().plan_id);
  if (!plan.ok()) return;
  const bool predicted = job.value().kind == "predicted";
  storage::JobFilter f;
  f.kind = predicted ? "measured" : "predicted";
  f.workload_fingerprint = plan.value().workload_fingerprint;
  f.state = storage::JobState::kSucceeded;
  f.tenant = caller.tenant_filter();
  f.limit = 20;
  auto page = c.deps.store.list_jobs(f);
  if (!page.ok()) return;
  const json sla = api::json_member(api::json_member(doc, "plan_document"), "sla");
  for (const auto& other : page.value().jobs) {
    HttpResponse error;
    auto other_doc = report_doc(c, other.id, error);
    if (!other_doc) continue;
    // Qualified capacities under different SLAs are different questions.
    if (api::json_member(api::json_member(*other_doc, "plan_document"), "sla") != sla) continue;
    doc["prediction_check"] =
        predicted ? api::prediction_check(doc, *other_doc) : api::prediction_check(*other_doc, doc);
    return;
  }
}

// The rendering a report route answers with (api/report_negotiation.h: ?format=, else Accept,
// else JSON), or the problem that refuses the request. Both report routes call it.
std::optional<api::ReportFormat> negotiate(const HttpRequest& req,
                                           const std::vector<api::ReportFormat>& supported,
                                           HttpResponse& error) {
  const auto choice =
      api::choose_report_format(req.query_param("format"), req.header("accept"), supported);
  if (choice.bad_format)
    error = problem_response(ApiErrorCode::kBadRequest, "bad query", {{"format", choice.detail}});
  else if (choice.not_acceptable)
    error = problem_response(ApiErrorCode::kNotAcceptable, choice.detail);
  return choice.format;
}

// A rendered report; Vary: Accept because the same URL answers several representations.
HttpResponse rendered(api::ReportFormat format, std::string body) {
  return HttpResponse::text(200, std::move(body), std::string(api::report_content_type(format)))
      .with_header("Vary", "Accept");
}

HttpResponse get_report(RestContext& c, const HttpRequest& req, const PathParams& path) {
  using api::ReportFormat;
  const std::string& id = path.at("id");
  HttpResponse error;
  const auto format = negotiate(req,
                                {ReportFormat::kJson, ReportFormat::kHtml, ReportFormat::kMarkdown,
                                 ReportFormat::kCsv, ReportFormat::kJunit},
                                error);
  if (!format) return error;
  auto doc = report_doc(c, id, error);
  if (!doc) return error;
  if (!doc->contains("targets"))
    return problem_response(ApiErrorCode::kConflict, "the job has no results yet");
  if (*format == ReportFormat::kJunit) return rendered(*format, api::render_junit(*doc));
  add_prediction_check(c, c.caller_of(req), id, *doc);
  switch (*format) {
    case ReportFormat::kJson:
      return rendered(*format, doc->dump(-1, ' ', false, json::error_handler_t::replace));
    case ReportFormat::kMarkdown: return rendered(*format, api::render_markdown(*doc));
    case ReportFormat::kCsv: return rendered(*format, api::render_capacity_csv(*doc));
    default: break;
  }
  api::ReportOptions o;
  o.job_id = id;
  o.generated_at = iso_time(std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count());
  return rendered(ReportFormat::kHtml, api::render_report_html(*doc, o));
}

HttpResponse compare_jobs(RestContext& c, const HttpRequest& req, const PathParams&) {
  using api::ReportFormat;
  const auto jobs = req.query_param("jobs");
  if (!jobs || jobs->empty())
    return problem_response(ApiErrorCode::kBadRequest, "give ?jobs=<id>,<id>,...",
                            {{"jobs", "is required"}});
  const auto allow_text = req.query_param("allow_different_workloads").value_or("false");
  if (allow_text != "true" && allow_text != "false")
    return problem_response(ApiErrorCode::kBadRequest, "bad query",
                            {{"allow_different_workloads", "must be true or false"}});
  HttpResponse error;
  const auto format = negotiate(
      req, {ReportFormat::kJson, ReportFormat::kHtml, ReportFormat::kMarkdown, ReportFormat::kCsv},
      error);
  if (!format) return error;
  const Caller caller = c.caller_of(req);
  std::vector<json> docs;
  std::string rest = *jobs;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const std::string id = rest.substr(0, comma);
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
    if (id.empty()) continue;
    // Another tenant's job is "not found", as on every other route.
    if (auto hidden = c.hidden_job(caller, id)) return *hidden;
    auto doc = report_doc(c, id, error);
    if (!doc) return error;
    docs.push_back(std::move(*doc));
  }
  auto outcome = api::compare_results(std::move(docs), allow_text == "true");
  if (!outcome.document) {
    std::vector<api::FieldError> errors;
    for (const auto& j : outcome.mismatched_jobs) errors.push_back({"jobs", j});
    return problem_response(ApiErrorCode::kInvalidRequest, outcome.error, errors);
  }
  switch (*format) {
    case ReportFormat::kHtml:
      return rendered(*format, api::render_report_html(*outcome.document, {}));
    case ReportFormat::kMarkdown: return rendered(*format, api::render_markdown(*outcome.document));
    case ReportFormat::kCsv: return rendered(*format, api::render_capacity_csv(*outcome.document));
    default:
      return rendered(ReportFormat::kJson,
                      outcome.document->dump(-1, ' ', false, json::error_handler_t::replace));
  }
}

// The samples export (docs/metrics.md, "The samples export"). Every matching row is streamed
// unless ?limit= caps it; a cut export is announced before the body starts, by a
// `Link: <...?after=ID...>; rel="next"` header: the cut is located (ids only) before the 200,
// so CSV and NDJSON bodies stay pure rows, with no trailer line a parser would trip on.
asio::awaitable<std::optional<HttpResponse>> get_requests(RestContext& c, HttpRequest& req,
                                                          net::ResponseStream& out,
                                                          const PathParams& path) {
  const std::string id = path.at("id");
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
  std::optional<int> limit;  // nullopt: every row
  // ?step=N: the step printed as [N/M] (numbered from 1; the stored seq is N - 1).
  std::optional<std::int64_t> step_number;
  bool only_in_window = false;
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
      bad.push_back({"limit", "must be a whole number 1..100000 (leave it out for every row)"});
  }
  if (auto st = req.query_param("step")) {
    if (auto v = query_int(*st, 1, INT64_MAX))
      step_number = *v;
    else
      bad.push_back({"step", "must be a whole number >= 1 (steps are numbered from 1)"});
  }
  if (auto w = req.query_param("in_window")) {
    if (*w == "true")
      only_in_window = true;
    else if (*w != "false")
      bad.push_back({"in_window", "must be true or false"});
  }
  if (!bad.empty()) co_return problem_response(ApiErrorCode::kBadRequest, "bad query", bad);

  co_await to_blocking_pool(c.blocking);
  auto job = c.deps.store.get_job(id);
  auto steps = c.deps.store.list_steps(id);
  co_await back_to(io);
  if (!job.ok()) co_return storage_problem(job.status());
  if (!steps.ok()) co_return storage_problem(steps.status());
  // The stored plan, only for steps stored before their summary carried the window bounds.
  json plan;
  for (const auto& s : steps.value()) {
    if (!s.summary_json || s.summary_json->find("\"window_start_ns\"") != std::string::npos)
      continue;
    co_await to_blocking_pool(c.blocking);
    auto stored = c.deps.store.get_plan(job.value().plan_id);
    co_await back_to(io);
    if (stored.ok()) plan = json::parse(stored.value().plan_json, nullptr, false);
    break;
  }
  std::map<std::int64_t, SampleStepInfo> step_info;  // by step id
  storage::SampleFilter filter;
  if (only_in_window) filter.intended_by_step.emplace();
  for (const auto& s : steps.value()) {
    auto info = sample_step_info(s, plan);
    if (step_number && info.number == *step_number) filter.step_id = s.id;
    // A step whose window is not known yet (running) has no in-window rows.
    if (only_in_window && info.window) (*filter.intended_by_step)[s.id] = *info.window;
    step_info.emplace(s.id, std::move(info));
  }
  if (step_number && !filter.step_id)
    co_return problem_response(
        ApiErrorCode::kNotFound, "no such step in this job",
        {{"step", "no step " + std::to_string(*step_number) + " in this job"}});

  // Before committing to a 200: where a capped export is cut (announced in the Link header),
  // and the first page.
  std::optional<std::int64_t> cut;
  constexpr int kPage = 5000;
  int remaining = limit.value_or(INT_MAX);
  co_await to_blocking_pool(c.blocking);
  storage::Result<std::optional<std::int64_t>> located(std::optional<std::int64_t>{});
  if (limit) located = c.deps.store.sample_cut(id, filter, after, *limit);
  auto page = located.ok()
                  ? c.deps.store.read_samples(id, filter, after, std::min(remaining, kPage))
                  : storage::Result<storage::SamplePage>(located.status());
  co_await back_to(io);
  if (!page.ok()) {
    if (page.status().code() == storage::ErrorCode::kInvalid && after > 0)
      co_return problem_response(ApiErrorCode::kBadRequest, "bad query",
                                 {{"after", "is not a sample id of this job"}});
    co_return storage_problem(page.status());
  }
  cut = located.value();
  net::HeaderList headers;
  headers.emplace_back("Content-Type", csv ? "text/csv; charset=utf-8" : "application/x-ndjson");
  if (cut) {
    std::string next =
        req.path + "?after=" + std::to_string(*cut) + "&limit=" + std::to_string(*limit);
    if (step_number) next += "&step=" + std::to_string(*step_number);
    if (only_in_window) next += "&in_window=true";
    headers.emplace_back("Link", "<" + next + ">; rel=\"next\"");
  }
  if (!co_await out.start(200, std::move(headers))) co_return std::nullopt;
  if (csv && !co_await out.write(sample_csv_header())) co_return std::nullopt;
  std::int64_t written = 0;
  for (;;) {
    std::string chunk;
    bool at_cut = false;
    for (const auto& r : page.value().rows) {
      const auto known = step_info.find(r.step_id);
      if (known == step_info.end()) continue;  // a step begun after the export started
      const SampleStepInfo& info = known->second;
      if (csv)
        chunk += sample_csv_line(r, info);
      else
        // Invalid UTF-8 stored by an older version must not end the export (issue 23 #11).
        chunk += sample_json(r, info).dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
      ++written;
      if (cut && r.id == *cut) {
        at_cut = true;  // the announced next page starts after this row
        break;
      }
    }
    remaining -= static_cast<int>(page.value().rows.size());
    const auto next = page.value().next_after_id;
    if (!chunk.empty() && !co_await out.write(chunk)) co_return std::nullopt;
    if (at_cut || !next || remaining <= 0) break;
    const std::int64_t cursor = *next;
    co_await to_blocking_pool(c.blocking);
    page = c.deps.store.read_samples(id, filter, cursor, std::min(remaining, kPage));
    co_await back_to(io);
    if (!page.ok()) {
      // Headers are gone: the stream is cut without its last chunk, so a client sees an
      // incomplete export, never a short one that looks whole.
      api_log()->error("job {}: sample export cut after {} rows: {}", id, written,
                       page.status().to_string());
      out.reset();
      co_return std::nullopt;
    }
  }
  co_await out.finish();
  co_return std::nullopt;
}

}  // namespace

std::vector<RouteSpec> result_routes() {
  return {
      {"GET",
       "/v1/jobs/{id}/results",
       "get_results",
       Access::kRead,
       [](RestContext& c, const HttpRequest&, const PathParams& path) {
         return get_results(c, path.at("id"));
       },
       {}},
      {"GET", "/v1/jobs/{id}/requests", "get_requests", Access::kRead, {}, get_requests},
      {"GET", "/v1/jobs/{id}/report", "get_report", Access::kRead, get_report, {}},
      {"GET", "/v1/compare", "compare_jobs", Access::kRead, compare_jobs, {}},
  };
}

}  // namespace llmcap::server

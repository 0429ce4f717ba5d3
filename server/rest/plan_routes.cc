// Plans before they run: validation (the same checks as submission, with warnings and the
// estimated duration), the simulator's hardware and model profiles, and memory-fit estimates.
#include <algorithm>

#include "analysis/memory_fit.h"
#include "api/problem_json.h"
#include "api/result_json.h"
#include "server/rest/rest_context.h"
#include "server/rest/routes.h"
#include "sim/profile_catalog.h"

namespace llmcap::server {

namespace asio = boost::asio;
using api::ApiErrorCode;
using api::problem_response;
using net::HttpRequest;
using net::HttpResponse;
using nlohmann::json;

namespace {

// " (did you mean X?)" for a profile name typed wrong, or "".
std::string did_you_mean(const std::string& typed, const std::vector<std::string>& known) {
  const auto near = api::nearest_name(typed, known);
  return near ? " (did you mean " + *near + "?)" : "";
}

// Memory-fit warnings for simulated targets (the only ones whose hardware we know exactly).
std::vector<std::string> memory_warnings(const api::TestPlan& plan) {
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
    in.context_tokens = static_cast<std::int64_t>(w.planned_input_mean() + w.planned_output_mean());
    in.concurrency = concurrency;
    const auto fit = analysis::estimate_memory_fit(*model, *hw, in);
    if (!fit.fits) out.push_back("target " + t.name + ": " + fit.explanation);
  }
  return out;
}

HttpResponse validate_plan(RestContext& c, const HttpRequest& req, const PathParams&) {
  if (auto bad = c.require_json_body(req)) return *bad;
  auto parse = api::parse_plan(req.body, c.options.plan_limits);
  if (auto bad = c.plan_problem(parse)) return *bad;
  if (auto bad = c.dataset_problem(parse)) return *bad;
  json warnings = parse.warnings;
  for (const auto& w : memory_warnings(*parse.plan)) warnings.push_back(w);
  return json_response(200,
                       json{{"valid", true},
                            {"plan", parse.normalized},
                            {"estimated_duration_s", parse.estimated_duration_s},
                            {"warnings", warnings},
                            {"workload_fingerprint", parse.fingerprint},
                            {"comparison_label",
                             parse.per_target_optimised ? "per-target optimised" : "same-config"}});
}

HttpResponse profiles(RestContext&, const HttpRequest&, const PathParams&) {
  const auto catalog = sim::ProfileCatalog::builtin();
  json hw = json::array(), models = json::array();
  for (const auto& n : catalog.hardware_names()) {
    const auto h = catalog.hardware(n);
    hw.push_back(
        {{"name", h->name},
         {"display_name", h->display_name},
         // The datasheet's "80 GB" and the total CUDA reports (79.15 GiB): the
         // memory fit budgets from the second.
         {"memory_gb", h->nominal_memory_gb > 0 ? h->nominal_memory_gb : h->memory_bytes / 1e9},
         {"memory_gib", h->memory_bytes / (1024.0 * 1024 * 1024)},
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

HttpResponse estimate_memory(RestContext& c, const HttpRequest& req, const PathParams&) {
  if (auto bad = c.require_json_body(req)) return *bad;
  json body = json::parse(req.body, nullptr, false);
  if (body.is_discarded()) return problem_response(ApiErrorCode::kMalformedJson, "not valid JSON");
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
        errors.push_back({p, "unknown hardware profile '" + s + "'" +
                                 did_you_mean(s, catalog.hardware_names())});
      if (k == "model" && !(model = catalog.model(s)))
        errors.push_back(
            {p, "unknown model profile '" + s + "'" + did_you_mean(s, catalog.model_names())});
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
    } else if (k == "tensor_parallel") {
      if (!v.is_number_integer() || v.get<std::int64_t>() < 1 || v.get<std::int64_t>() > 64) {
        errors.push_back({p, "must be an integer between 1 and 64"});
        continue;
      }
      in.tensor_parallel = static_cast<int>(v.get<std::int64_t>());
    } else {
      static const std::vector<std::string> kKeys = {
          "hardware",       "model",       "dtype",           "kv_cache_dtype",
          "context_tokens", "concurrency", "tensor_parallel", "gpu_memory_utilization"};
      errors.push_back({p, "unknown key" + did_you_mean(k, kKeys)});
    }
  }
  if (!body.contains("hardware")) errors.push_back({"/hardware", "is required"});
  if (!body.contains("model")) errors.push_back({"/model", "is required"});
  if (model && errors.empty()) {
    if (auto problem = analysis::tensor_parallel_problem(*model, in.tensor_parallel))
      errors.push_back({"/tensor_parallel", *problem});
  }
  if (!errors.empty())
    return problem_response(ApiErrorCode::kInvalidRequest, "invalid estimate", errors);
  auto j = api::memory_fit_json(analysis::estimate_memory_fit(*model, *hw, in));
  j["hardware"] = hw->name;
  j["model"] = model->name;
  j["dtype"] = dtype;
  j["context_tokens"] = in.context_tokens;
  j["concurrency"] = in.concurrency;
  // Byte figures are per GPU under tensor parallelism (analysis/memory_fit.h).
  j["tensor_parallel"] = in.tensor_parallel;
  return json_response(200, j);
}

}  // namespace

std::vector<RouteSpec> plan_routes() {
  return {
      {"POST", "/v1/plans:validate", "validate_plan", Access::kRead, validate_plan, {}},
      {"GET", "/v1/profiles", "profiles", Access::kRead, profiles, {}},
      {"POST", "/v1/estimates/memory", "estimate_memory", Access::kRead, estimate_memory, {}},
  };
}

}  // namespace llmcap::server

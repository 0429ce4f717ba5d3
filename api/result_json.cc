#include "api/result_json.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace llmcap::api {

using nlohmann::json;

namespace {
constexpr double kNsPerMs = 1e6;

json opt(const std::optional<double>& v, double scale = 1.0) {
  return v ? json(*v / scale) : json(nullptr);
}

// Rounds to 4 significant decimals past the point so JSON stays readable.
double r4(double v) { return std::isfinite(v) ? std::round(v * 1e4) / 1e4 : 0.0; }
// "p75", "p99_99": the key of a percentile beyond the five every summary holds (p99_9's style).
std::string percentile_key(double p) {
  std::string key = "p" + analysis::percentile_label(p);
  std::replace(key.begin(), key.end(), '.', '_');
  return key;
}

void add_extra(json& out, const std::vector<std::pair<double, double>>& extra) {
  for (const auto& [p, v] : extra) out[percentile_key(p)] = r4(v / kNsPerMs);
}
}  // namespace

json summary_ms_json(const analysis::Summary& s) {
  if (s.empty()) return json{{"count", 0}};
  json out{{"count", s.count},
           {"mean", r4(s.mean / kNsPerMs)},
           {"min", r4(s.min / kNsPerMs)},
           {"max", r4(s.max / kNsPerMs)},
           {"stddev", r4(s.stddev / kNsPerMs)},
           {"p50", r4(s.p50 / kNsPerMs)},
           {"p90", r4(s.p90 / kNsPerMs)},
           {"p95", r4(s.p95 / kNsPerMs)},
           {"p99", r4(s.p99 / kNsPerMs)},
           {"p99_9", r4(s.p999 / kNsPerMs)}};
  add_extra(out, s.extra);
  return out;
}

json quantiles_ms_json(const analysis::HistogramQuantiles& q) {
  if (q.count == 0) return json{{"count", 0}};
  json out{{"count", q.count},
           {"mean", r4(q.mean / kNsPerMs)},
           {"min", r4(q.min / kNsPerMs)},
           {"max", r4(q.max / kNsPerMs)},
           {"p50", r4(q.p50 / kNsPerMs)},
           {"p90", r4(q.p90 / kNsPerMs)},
           {"p95", r4(q.p95 / kNsPerMs)},
           {"p99", r4(q.p99 / kNsPerMs)},
           {"p99_9", r4(q.p999 / kNsPerMs)},
           {"method", "log-bucketed histogram, <=1% relative error"}};
  add_extra(out, q.extra);
  return out;
}

json step_stats_json(const analysis::StepStats& s) {
  json errors = json::object();
  for (int i = 1; i < analysis::kErrorClassCount; ++i) {
    const auto n = s.errors_by_class[static_cast<std::size_t>(i)];
    if (n > 0) errors[std::string(analysis::to_string(static_cast<analysis::ErrorClass>(i)))] = n;
  }
  json tokens_summary = json{{"input", json{{"count", s.input_tokens.count},
                                            {"mean", r4(s.input_tokens.mean)},
                                            {"min", s.input_tokens.min},
                                            {"max", s.input_tokens.max},
                                            {"p50", s.input_tokens.p50}}},
                             {"output", json{{"count", s.output_tokens.count},
                                             {"mean", r4(s.output_tokens.mean)},
                                             {"min", s.output_tokens.min},
                                             {"max", s.output_tokens.max},
                                             {"p50", s.output_tokens.p50}}}};
  return json{
      {"window_s", r4(s.window_s)},
      // The window on the samples' clock (ns from the step start): a sample belongs to it when
      // t_intended_ns is in [start, end) (the samples export's in_window).
      {"window_start_ns", s.window_start_ns},
      {"window_end_ns", s.window_end_ns},
      {"offered_rate_rps", r4(s.offered_rate_rps)},
      {"concurrency", s.concurrency},
      {"counts", json{{"intended", s.intended},
                      {"sent", s.sent},
                      {"completed_ok", s.completed_ok},
                      {"failed", s.failed},
                      {"timed_out", s.timed_out},
                      {"incomplete", s.incomplete},
                      {"abandoned", s.abandoned},
                      {"abandoned_with_first_token", s.abandoned_with_first_token},
                      {"dropped_arrivals", s.dropped_arrivals},
                      {"client_resources", s.client_resources},
                      {"client_resources_in_step", s.client_resources_in_step},
                      {"met_slo", s.met_slo},
                      {"errors_by_class", errors},
                      {"estimated_output_counts", s.estimated_output_count}}},
      {"ttft_ms", summary_ms_json(s.ttft_ns)},
      {"ttft_service_ms", summary_ms_json(s.ttft_service_ns)},
      {"tpot_ms", summary_ms_json(s.tpot_ns)},
      {"itl_ms", quantiles_ms_json(s.itl_ns)},
      {"e2e_ms", summary_ms_json(s.e2e_ns)},
      {"schedule_lag_ms", summary_ms_json(s.schedule_lag_ns)},
      {"tokens", tokens_summary},
      {"output_tokens_per_s", r4(s.output_tokens_per_s)},
      {"input_tokens_per_s", r4(s.input_tokens_per_s)},
      {"requests_per_s", r4(s.requests_per_s)},
      {"completion_rate_rps", r4(s.completion_rate_rps)},
      {"achieved_rate_rps", r4(s.achieved_rate_rps)},
      {"goodput_rps", r4(s.goodput_rps)},
      {"sla_attainment", r4(s.sla_attainment)},
      {"error_rate", r4(s.error_rate)},
      {"incomplete_rate", r4(s.incomplete_rate)},
      {"in_flight_slope_rps", opt(s.in_flight_slope_rps)},
      {"short_output_share", r4(s.short_output_share)},
      {"short_output_warning", s.short_output_warning},
      {"client_cpu_utilisation", opt(s.client_cpu_utilisation)},
      {"client_dispatch_lag_p99_ms", opt(s.schedule_lag_p99_ns, kNsPerMs)},
      {"client_lag_max_ms", r4(s.client_lag_max_ns / kNsPerMs)},
  };
}

json verdict_json(const analysis::StepVerdict& v) {
  json reasons = json::array();
  for (const auto& r : v.reasons) {
    json j{{"check", std::string(analysis::to_string(r.kind))},
           {"status", std::string(analysis::to_string(r.status))},
           {"code", r.code},
           {"text", r.text},
           {"limit", r.limit},
           {"measured", opt(r.measured)},
           {"margin", opt(r.margin)}};
    if (r.bound) {
      j["bound"] = json{{"metric", std::string(analysis::to_string(r.bound->metric))},
                        {"percentile", r.bound->percentile},
                        {"limit_ms", r.bound->limit_ms}};
    }
    reasons.push_back(std::move(j));
  }
  return json{{"outcome", std::string(analysis::to_string(v.outcome))}, {"reasons", reasons}};
}

json qualified_point_json(const analysis::QualifiedPoint& p) {
  return json{{"offered_rate_rps", r4(p.offered_rate_rps)},
              {"achieved_rate_rps", r4(p.achieved_rate_rps)},
              {"concurrency", p.concurrency},
              {"output_tokens_per_s", r4(p.output_tokens_per_s)},
              {"input_tokens_per_s", r4(p.input_tokens_per_s)},
              {"requests_per_s", r4(p.requests_per_s)},
              {"ttft_ms", json{{"p50", r4(p.ttft_p50_ns / kNsPerMs)},
                               {"p95", r4(p.ttft_p95_ns / kNsPerMs)},
                               {"p99", r4(p.ttft_p99_ns / kNsPerMs)}}},
              {"tpot_ms", json{{"p50", r4(p.tpot_p50_ns / kNsPerMs)},
                               {"p95", r4(p.tpot_p95_ns / kNsPerMs)},
                               {"p99", r4(p.tpot_p99_ns / kNsPerMs)}}},
              {"e2e_ms", json{{"p50", r4(p.e2e_p50_ns / kNsPerMs)},
                              {"p95", r4(p.e2e_p95_ns / kNsPerMs)},
                              {"p99", r4(p.e2e_p99_ns / kNsPerMs)}}},
              {"error_rate", r4(p.error_rate)},
              {"confirmed", p.confirmed},
              {"non_monotonic", p.non_monotonic}};
}

namespace {
json load_capacity_json(const analysis::LoadCapacity& c) {
  return json{
      {"point", c.point ? qualified_point_json(*c.point) : json(nullptr)},
      {"best_evidence", c.best_evidence ? qualified_point_json(*c.best_evidence) : json(nullptr)},
      {"steps_considered", c.steps_considered},
      {"statement", c.statement}};
}
}  // namespace

json capacity_json(const analysis::QualifiedCapacity& c) {
  return json{{"open_loop", load_capacity_json(c.open_loop)},
              {"closed_loop", load_capacity_json(c.closed_loop)}};
}

json target_verdict_json(const analysis::TargetVerdict& v) {
  json failures = json::array();
  for (const auto& f : v.failures) {
    failures.push_back(
        json{{"rate_rps", f.concurrency > 0 ? json(nullptr) : json(r4(f.rate_rps))},
             {"concurrency", f.concurrency > 0 ? json(f.concurrency) : json(nullptr)},
             {"confirming", f.confirming},
             {"checks", f.codes}});
  }
  json labels = json::array();
  if (v.client_bound_steps > 0) labels.push_back("client-bound-steps");
  // A pass rests on a confirmed step with enough samples; thin steps elsewhere do not label it.
  if (v.insufficient_sample_steps > 0 && v.outcome != analysis::Outcome::kPass)
    labels.push_back("insufficient-samples");
  return json{{"outcome", std::string(analysis::to_string(v.outcome))},
              {"basis", v.basis.empty() ? json(nullptr) : json(v.basis)},
              {"statement", v.statement},
              {"failures", failures},
              {"client_bound_steps", v.client_bound_steps},
              {"insufficient_sample_steps", v.insufficient_sample_steps},
              {"labels", labels}};
}

json search_json(const analysis::CapacitySearchResult& r) {
  json trials = json::array();
  for (const auto& t : r.trials) {
    trials.push_back(json{{"rate_rps", r4(t.step.rate_rps)},
                          {"confirm", t.step.confirm},
                          {"attempt", t.step.attempt},
                          {"outcome", std::string(analysis::to_string(t.outcome))},
                          {"treated_as_fail", t.treated_as_fail},
                          {"insufficient_samples", t.insufficient_samples}});
  }
  return json{{"end", std::string(analysis::to_string(r.end))},
              {"qualified_rate_rps", opt(r.qualified_rate_rps)},
              {"highest_pass_rps", opt(r.highest_pass_rps)},
              {"lowest_fail_rps", opt(r.lowest_fail_rps)},
              // The answer's resolution: the highest confirmed pass and the lowest fail above.
              {"bracket_low_rps", opt(r.bracket_low_rps)},
              {"bracket_high_rps", opt(r.bracket_high_rps)},
              {"resolution_reached", r.resolution_reached},
              {"insufficient_samples_at_rps", opt(r.insufficient_samples_at_rps)},
              {"at_max_rate", r.at_max_rate},
              {"steps", r.steps},
              {"inconclusive_treated_as_fail", r.inconclusive_treated_as_fail},
              {"trials", trials}};
}

json demand_plan_json(const analysis::DemandPlan& p) {
  json lines = json::array();
  for (const auto& l : p.lines) {
    lines.push_back(
        json{{"target", l.name},
             {"feasible", l.feasible},
             {"instances", l.instances},
             {"hourly_cost", l.hourly_cost ? json(r4(*l.hourly_cost)) : json(nullptr)},
             {"monthly_cost", l.monthly_cost ? json(r4(*l.monthly_cost)) : json(nullptr)},
             {"utilisation", r4(l.utilisation)},
             {"cost_per_million_output_tokens", l.cost_per_million_output_tokens
                                                    ? json(r4(*l.cost_per_million_output_tokens))
                                                    : json(nullptr)}});
  }
  return json{{"demand_output_tokens_per_s", r4(p.demand_output_tokens_per_s)},
              {"required_output_tokens_per_s", r4(p.required_output_tokens_per_s)},
              {"hours_per_month", p.hours_per_month},
              {"lines", lines},
              {"cheapest", p.cheapest ? json(p.lines[*p.cheapest].name) : json(nullptr)},
              {"currencies_differ", p.currencies_differ}};
}

json comparison_json(const analysis::TargetComparison& c) {
  return json{{"baseline", c.baseline},
              {"target", c.target},
              {"throughput_ratio", r4(c.throughput_ratio)},
              {"price_ratio", r4(c.price_ratio)},
              {"relative_cost_per_token", r4(c.relative_cost_per_token)}};
}

json memory_fit_json(const analysis::MemoryFit& m) {
  auto gb = [](double b) { return r4(analysis::to_gb(b)); };
  auto gib = [](double b) { return r4(analysis::to_gib(b)); };
  // memory_gb is the card's datasheet figure ("80"), memory_gib the total CUDA reports (79.15
  // GiB, the budget's base): 79.15 GiB written as 84.99 "GB" would read as a mistake.
  return json{{"memory_gb", m.nominal_memory_gb > 0 ? m.nominal_memory_gb : gb(m.memory_bytes)},
              {"memory_gib", gib(m.memory_bytes)},
              {"budget_gb", gb(m.budget_bytes)},
              {"weights_gb", gb(m.weight_bytes)},
              {"weights_gib", gib(m.weight_bytes)},
              {"activation_reserve_gib", gib(m.activation_reserve_bytes)},
              {"kv_bytes_per_token", m.kv_bytes_per_token},
              {"kv_per_request_gib", gib(m.kv_bytes_per_request)},
              {"kv_pool_gb", gb(m.kv_pool_bytes)},
              {"kv_pool_gib", gib(m.kv_pool_bytes)},
              {"shortfall_gb", gb(m.shortfall_bytes)},
              {"kv_pool_tokens", m.kv_pool_tokens},
              {"gpu_blocks", m.gpu_blocks},
              {"max_concurrency_at_context", r4(m.max_concurrency_at_context)},
              {"max_concurrent_sequences", m.max_concurrent_sequences},
              {"weights_fit", m.weights_fit},
              {"one_sequence_fits", m.one_sequence_fits},
              {"fits", m.fits},
              {"explanation", m.explanation}};
}

json region_latency_json(const std::map<std::string, analysis::RegionLatency>& regions) {
  json out = json::object();
  auto pct = [](const analysis::Summary& s) {
    return s.empty() ? json{{"p50", nullptr}, {"p95", nullptr}}
                     : json{{"p50", s.p50}, {"p95", s.p95}};
  };
  for (const auto& [region, r] : regions)
    out[region] = json{{"requests", r.requests},
                       {"ttft_ms", pct(r.ttft_ms)},
                       {"tpot_ms", pct(r.tpot_ms)},
                       {"e2e_ms", pct(r.e2e_ms)}};
  return out;
}

}  // namespace llmcap::api

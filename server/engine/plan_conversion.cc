#include "server/engine/plan_conversion.h"

#include <nlohmann/json.hpp>

namespace llmcap::server {

namespace {

agent::WorkloadSpec to_workload(const api::PlanWorkload& w) {
  agent::WorkloadSpec s;
  s.source =
      w.dataset_path.empty() ? agent::WorkloadSource::kSynthetic : agent::WorkloadSource::kDataset;
  s.input_tokens = w.input_tokens;
  s.output_tokens = w.output_tokens;
  s.shared_prefix_tokens = w.shared_prefix_tokens;
  s.ignore_eos = w.ignore_eos;
  s.calibrate = w.calibrate;
  s.send_min_tokens = w.min_tokens;
  s.temperature = w.temperature;
  s.extra_body_json = w.extra_body_json == "{}" ? "" : w.extra_body_json;
  s.dataset_path = w.dataset_path;
  s.dataset_order =
      w.dataset_mode == "replay" ? agent::DatasetOrder::kReplay : agent::DatasetOrder::kSample;
  return s;
}

PhaseKind to_kind(const std::string& k) {
  if (k == "rate_sweep") return PhaseKind::kRateSweep;
  if (k == "capacity_search") return PhaseKind::kCapacitySearch;
  if (k == "burst") return PhaseKind::kBurst;
  if (k == "soak") return PhaseKind::kSoak;
  return PhaseKind::kConcurrencySweep;
}

}  // namespace

std::string to_run_plan(const api::PlanParse& parse, RunPlan& out) {
  if (!parse.plan) return "plan has errors";
  const api::TestPlan& p = *parse.plan;
  out = RunPlan{};
  out.name = p.name;
  out.seed = p.seed;
  out.fingerprint = parse.fingerprint;
  out.per_target_optimised = parse.per_target_optimised;

  for (const auto& t : p.targets) {
    RunTarget rt;
    rt.name = t.name;
    rt.base_url = t.base_url;
    rt.sim_options_json = t.sim_json;
    if (const auto sim = nlohmann::json::parse(t.sim_json, nullptr, false);
        sim.is_object() && sim.contains("time_scale") && sim["time_scale"].is_number())
      rt.time_scale = sim["time_scale"].get<double>();
    rt.spec.api = t.api == "chat" ? agent::ApiKind::kChat : agent::ApiKind::kCompletions;
    rt.spec.model = t.model;
    for (const auto& [k, v] : t.headers) rt.spec.headers.emplace_back(k, v);
    for (const auto& [k, v] : t.secrets) {
      if (k == "api_key") rt.spec.headers.emplace_back("Authorization", "Bearer " + v);
    }
    rt.spec.tls.ca_file = t.tls_ca_file;
    rt.spec.tls.verify_peer = !t.tls_insecure;
    const auto& w = t.workload ? *t.workload : p.workload;
    rt.spec.stream = w.stream;
    rt.workload = to_workload(w);
    rt.workload_overridden = t.workload.has_value();
    rt.hardware_json = t.hardware_json;
    rt.precision = t.precision;
    rt.price_per_hour = t.price_per_hour;
    rt.currency = t.currency;
    rt.metrics_url = t.metrics_url;
    out.targets.push_back(std::move(rt));
  }

  for (const auto& b : p.sla.bounds) {
    const auto metric = analysis::parse_sla_metric(b.metric);
    if (!metric) return "/sla: unknown metric " + b.metric;
    out.sla.bounds.push_back({*metric, b.percentile, b.limit_ms});
  }
  out.sla.max_error_rate = p.sla.max_error_rate;
  out.sla.ttft_definition = p.sla.ttft_from == "send" ? analysis::TtftDefinition::kService
                                                      : analysis::TtftDefinition::kIntended;
  if (p.sla.rate_tolerance) out.sla.rate_tolerance = *p.sla.rate_tolerance;
  if (p.sla.max_schedule_lag_p99_ms)
    out.sla.max_schedule_lag_p99_ms = *p.sla.max_schedule_lag_p99_ms;
  if (p.sla.min_requests) out.sla.min_requests = static_cast<std::uint64_t>(*p.sla.min_requests);
  if (auto err = analysis::validate(out.sla)) return "/sla: " + *err;

  out.deadlines.connect_ms = p.timeouts.connect_ms;
  out.deadlines.first_token_ms = p.timeouts.first_token_ms;
  out.deadlines.idle_ms = p.timeouts.idle_ms;
  out.deadlines.total_ms = p.timeouts.total_ms;

  for (const auto& ph : p.phases) {
    RunPhase r;
    r.kind = to_kind(ph.kind);
    r.name = ph.name;
    r.repeat = ph.repeat;
    r.duration_s = ph.duration_s;
    r.warmup_s = ph.warmup_s;
    r.drain = ph.drain == "cancel" ? agent::DrainPolicy::kCancel : agent::DrainPolicy::kWait;
    r.arrival = agent::parse_inter_arrival(ph.arrival).value_or(agent::InterArrival::kPoisson);
    r.burstiness = ph.burstiness;
    r.max_in_flight = ph.max_in_flight;
    r.levels = ph.levels;
    r.rates_rps = ph.rates_rps;
    r.start_from_knee = ph.start_from_knee;
    r.start_rps = ph.start_rps;
    r.low_rps = ph.low_rps;
    r.high_rps = ph.high_rps;
    r.resolution = ph.resolution;
    r.max_steps = ph.max_steps;
    r.confirm_duration_s = ph.confirm_duration_s;
    r.base_rps = ph.base_rps;
    r.multiplier = ph.multiplier;
    r.burst_s = ph.burst_s;
    r.observe_s = ph.observe_s;
    r.soak_at_qualified = ph.soak_at_qualified;
    r.soak_rps = ph.rate_rps;
    r.window_s = ph.window_s;
    out.phases.push_back(std::move(r));
  }
  if (p.demand) {
    analysis::Demand d;
    d.requests_per_min = p.demand->requests_per_minute;
    d.mean_output_tokens = p.demand->mean_output_tokens;
    d.headroom = p.demand->headroom;
    out.demand = d;
    out.hours_per_month = p.demand->hours_per_month;
  }
  return "";
}

}  // namespace llmcap::server

#include "server/engine/plan_conversion.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace llmcap::server {

namespace {

agent::WorkloadSpec to_workload(const api::PlanWorkload& w) {
  agent::WorkloadSpec s;
  s.source =
      w.dataset_path.empty() ? agent::WorkloadSource::kSynthetic : agent::WorkloadSource::kDataset;
  s.input_tokens = w.input_tokens;
  s.output_tokens = w.output_tokens;
  s.shared_prefix_tokens = w.shared_prefix_tokens;
  for (const api::PlanPrefixGroup& g : w.prefix_groups)
    s.prefix_groups.push_back(agent::PrefixGroup{g.share, g.prefix_tokens});
  s.ignore_eos = w.ignore_eos;
  s.calibrate = w.calibrate;
  s.send_min_tokens = w.min_tokens;
  s.temperature = w.temperature;
  s.extra_body_json = w.extra_body_json == "{}" ? "" : w.extra_body_json;
  s.dataset_path = w.dataset_path;
  s.dataset_order =
      w.dataset_mode == "replay" ? agent::DatasetOrder::kReplay : agent::DatasetOrder::kSample;
  if (w.trace) {
    s.source = agent::WorkloadSource::kTrace;
    s.trace_path = w.trace->path;
    s.trace_format = agent::parse_trace_format(w.trace->format).value_or(s.trace_format);
    s.trace_block_tokens = w.trace->block_tokens;
    s.trace_window.start_s = w.trace->start_s;
    s.trace_window.duration_s = w.trace->duration_s;
    s.trace_window.max_requests = w.trace->max_requests;
  }
  for (const api::PlanMixClass& c : w.mix)
    s.mix.push_back(
        agent::MixClassSpec{c.name, c.weight, c.input_tokens, c.output_tokens, c.prefix_tokens});
  if (w.conversation) {
    s.conversation.turns_min = w.conversation->turns_low;
    s.conversation.turns_max = w.conversation->turns_high;
    s.conversation.user_tokens = w.conversation->user_tokens;
    s.conversation.think_time_s = w.conversation->think_time_s;
    s.conversation.think_time_exponential = w.conversation->think_time == "exponential";
    s.conversation.max_context_tokens = w.conversation->max_context_tokens;
  }
  if (w.abandon) {
    s.abandon.share = w.abandon->share;
    s.abandon.after_ms = w.abandon->after_ms;
    s.abandon.after_tokens = w.abandon->after_tokens;
  }
  return s;
}

}  // namespace

agent::DrainPolicy to_drain_policy(api::Drain d) {
  return d == api::Drain::kCancel ? agent::DrainPolicy::kCancel : agent::DrainPolicy::kWait;
}

agent::InterArrival to_inter_arrival(api::Arrival a) {
  switch (a) {
    case api::Arrival::kConstant: return agent::InterArrival::kConstant;
    case api::Arrival::kGamma: return agent::InterArrival::kGamma;
    case api::Arrival::kPoisson: break;
  }
  return agent::InterArrival::kPoisson;
}

std::string to_run_plan(const api::PlanParse& parse, RunPlan& out) {
  if (!parse.plan) return "plan has errors";
  const api::TestPlan& p = *parse.plan;
  out = RunPlan{};
  out.name = p.name;
  out.seed = p.seed;
  out.fingerprint = parse.fingerprint;
  out.per_target_optimised = parse.per_target_optimised;

  // A workload matrix (`workloads`) runs every target once per workload, workload by workload:
  // each (target, workload) pair is a target of its own, named "<target>@<workload>".
  std::vector<const api::PlanWorkload*> workload_of;  // parallel to out.targets
  const std::size_t shapes = std::max<std::size_t>(1, p.workloads.size());
  for (std::size_t shape = 0; shape < shapes; ++shape)
    for (std::size_t ti = 0; ti < p.targets.size(); ++ti) {
      const api::PlanTarget& t = p.targets[ti];
      RunTarget rt;
      rt.name = t.name;
      rt.plan_target = t.name;
      rt.plan_target_index = ti;
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
      const api::PlanWorkload& w = !p.workloads.empty() ? p.workloads[shape].workload
                                   : t.workload         ? *t.workload
                                                        : p.workload;
      if (!p.workloads.empty()) {
        rt.workload_name = p.workloads[shape].name;
        rt.name = t.name + "@" + rt.workload_name;
      }
      workload_of.push_back(&w);
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

  // Workload mixes: each class is judged against the plan's SLA with its own bounds and error
  // limit where it gives them (docs/plans.md, "Workload mixes").
  for (std::size_t t = 0; t < out.targets.size(); ++t) {
    RunTarget& rt = out.targets[t];
    for (const api::PlanMixClass& c : workload_of[t]->mix) {
      analysis::SlaSpec sla = out.sla;
      if (c.sla_bounds) {
        sla.bounds.clear();
        for (const auto& b : *c.sla_bounds) {
          const auto metric = analysis::parse_sla_metric(b.metric);
          if (!metric) return "/workload/mix: unknown metric " + b.metric;
          sla.bounds.push_back({*metric, b.percentile, b.limit_ms});
        }
      }
      if (c.max_error_rate) sla.max_error_rate = *c.max_error_rate;
      rt.mix_slas.push_back(std::move(sla));
    }
  }

  out.deadlines.connect_ms = p.timeouts.connect_ms;
  out.deadlines.first_token_ms = p.timeouts.first_token_ms;
  out.deadlines.idle_ms = p.timeouts.idle_ms;
  out.deadlines.total_ms = p.timeouts.total_ms;

  out.phases = p.phases;
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

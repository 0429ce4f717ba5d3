#include "analysis/sla.h"

#include <cmath>

#include "analysis/summary.h"

namespace llmcap::analysis {

std::string_view to_string(SlaMetric m) {
  switch (m) {
    case SlaMetric::kTtft: return "ttft";
    case SlaMetric::kTtftService: return "ttft_service";
    case SlaMetric::kTpot: return "tpot";
    case SlaMetric::kItl: return "itl";
    case SlaMetric::kE2e: return "e2e";
  }
  return "ttft";
}

std::optional<SlaMetric> parse_sla_metric(std::string_view s) {
  for (SlaMetric m : {SlaMetric::kTtft, SlaMetric::kTtftService, SlaMetric::kTpot, SlaMetric::kItl,
                      SlaMetric::kE2e}) {
    if (to_string(m) == s) return m;
  }
  return std::nullopt;
}

std::string_view to_string(TtftDefinition d) {
  return d == TtftDefinition::kService ? "service" : "intended";
}

std::optional<TtftDefinition> parse_ttft_definition(std::string_view s) {
  if (s == "intended") return TtftDefinition::kIntended;
  if (s == "service") return TtftDefinition::kService;
  return std::nullopt;
}

namespace {
std::string number(double v) {
  std::string s = std::to_string(v);
  // Trim "97.000000" to "97" for readable messages.
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

bool finite_non_negative(double v) { return std::isfinite(v) && v >= 0; }
}  // namespace

std::optional<std::string> validate(const SlaSpec& spec) {
  for (std::size_t i = 0; i < spec.bounds.size(); ++i) {
    const SlaBound& b = spec.bounds[i];
    const std::string field = "bounds[" + std::to_string(i) + "]";
    if (!is_valid_percentile(b.percentile)) {
      return field + ".percentile: must be between 0 and 100, both excluded (got " +
             number(b.percentile) + ")";
    }
    if (!std::isfinite(b.limit_ms) || b.limit_ms <= 0) {
      return field + ".limit_ms: must be a positive number of milliseconds (got " +
             number(b.limit_ms) + ")";
    }
  }
  if (!std::isfinite(spec.max_error_rate) || spec.max_error_rate < 0 || spec.max_error_rate > 1) {
    return "max_error_rate: must be in [0, 1] (got " + number(spec.max_error_rate) + ")";
  }
  if (!std::isfinite(spec.rate_tolerance) || spec.rate_tolerance < 0 || spec.rate_tolerance >= 1) {
    return "rate_tolerance: must be in [0, 1) (got " + number(spec.rate_tolerance) + ")";
  }
  if (!finite_non_negative(spec.max_schedule_lag_p99_ms)) {
    return "max_schedule_lag_p99_ms: must be ≥ 0 (got " + number(spec.max_schedule_lag_p99_ms) +
           ")";
  }
  if (!std::isfinite(spec.max_client_cpu_utilisation) || spec.max_client_cpu_utilisation <= 0 ||
      spec.max_client_cpu_utilisation > 1) {
    return "max_client_cpu_utilisation: must be in (0, 1] (got " +
           number(spec.max_client_cpu_utilisation) + ")";
  }
  if (!finite_non_negative(spec.backlog_growth_fraction)) {
    return "backlog_growth_fraction: must be ≥ 0 (got " + number(spec.backlog_growth_fraction) +
           ")";
  }
  if (!finite_non_negative(spec.backlog_growth_min_requests)) {
    return "backlog_growth_min_requests: must be ≥ 0 (got " +
           number(spec.backlog_growth_min_requests) + ")";
  }
  return std::nullopt;
}

SlaSpec example_interactive_sla() {
  SlaSpec s;
  s.bounds = {{SlaMetric::kTtft, 95, 1000}, {SlaMetric::kTpot, 95, 35}};
  return s;
}

std::optional<double> request_metric_ns(const RequestSample& sample, SlaMetric metric,
                                        TtftDefinition ttft_definition) {
  auto as_double = [](std::optional<std::int64_t> v) -> std::optional<double> {
    if (!v) return std::nullopt;
    return static_cast<double>(*v);
  };
  switch (metric) {
    case SlaMetric::kTtft:
      return ttft_definition == TtftDefinition::kService ? as_double(sample.ttft_service_ns())
                                                         : as_double(sample.ttft_ns());
    case SlaMetric::kTtftService: return as_double(sample.ttft_service_ns());
    case SlaMetric::kTpot: return sample.tpot_ns();
    case SlaMetric::kItl:
      if (sample.max_itl_ns < 0) return std::nullopt;
      return static_cast<double>(sample.max_itl_ns);
    case SlaMetric::kE2e: return as_double(sample.e2e_ns());
  }
  return std::nullopt;
}

bool meets_slos(const RequestSample& sample, const SlaSpec& spec) {
  if (!sample.ok() || sample.t_end_ns < 0) return false;
  for (const SlaBound& b : spec.bounds) {
    const auto value_ns = request_metric_ns(sample, b.metric, spec.ttft_definition);
    if (!value_ns) {
      const bool not_applicable = b.metric == SlaMetric::kTpot || b.metric == SlaMetric::kItl;
      if (not_applicable) continue;
      return false;
    }
    if (*value_ns > b.limit_ms * 1e6) return false;
  }
  return true;
}

}  // namespace llmcap::analysis

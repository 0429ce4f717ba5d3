#include "analysis/verdict.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace llmcap::analysis {

double backlog_significance(std::size_t batches) {
  // One-sided 1e-5 points of Student's t, df = batches − 2 (2 … 8).
  static constexpr double kT[] = {223.603, 47.928, 23.332, 15.547, 12.032, 10.103, 8.907};
  if (batches < 4) return kT[0];
  if (batches >= 10) return kT[6];
  return kT[batches - 4];
}

std::string_view to_string(Outcome o) {
  switch (o) {
    case Outcome::kPass: return "pass";
    case Outcome::kFail: return "fail";
    case Outcome::kInconclusive: return "inconclusive";
  }
  return "inconclusive";
}

std::string_view to_string(CheckKind k) {
  switch (k) {
    case CheckKind::kBound: return "bound";
    case CheckKind::kErrorRate: return "error_rate";
    case CheckKind::kIncompleteRate: return "incomplete_rate";
    case CheckKind::kCompletionRate: return "completion_rate";
    case CheckKind::kBacklog: return "backlog";
    case CheckKind::kSendRate: return "send_rate";
    case CheckKind::kScheduleLag: return "schedule_lag";
    case CheckKind::kDroppedArrivals: return "dropped_arrivals";
    case CheckKind::kClientCpu: return "client_cpu";
    case CheckKind::kSampleCount: return "sample_count";
    case CheckKind::kTargetClock: return "target_clock";
    case CheckKind::kClientResources: return "client_resources";
  }
  return "bound";
}

bool is_client_side(CheckKind k) {
  return k == CheckKind::kSendRate || k == CheckKind::kScheduleLag ||
         k == CheckKind::kDroppedArrivals || k == CheckKind::kClientCpu ||
         k == CheckKind::kTargetClock || k == CheckKind::kClientResources;
}

std::string_view to_string(CheckStatus s) {
  switch (s) {
    case CheckStatus::kHeld: return "held";
    case CheckStatus::kMissed: return "missed";
    case CheckStatus::kNotEvaluated: return "not_evaluated";
    case CheckStatus::kNotApplicable: return "not_applicable";
  }
  return "held";
}

std::vector<const VerdictReason*> StepVerdict::deciding() const {
  std::vector<const VerdictReason*> out;
  for (const auto& r : reasons) {
    if (r.status == CheckStatus::kMissed || r.status == CheckStatus::kNotEvaluated) {
      out.push_back(&r);
    }
  }
  return out;
}

std::vector<std::string> StepVerdict::missed_server_codes() const {
  std::vector<std::string> out;
  for (const auto& r : reasons) {
    if (r.status == CheckStatus::kMissed && !is_client_side(r.kind) &&
        r.kind != CheckKind::kSampleCount)
      out.push_back(r.code);
  }
  return out;
}

std::optional<double> measured_ns(const StepStats& stats, const SlaBound& bound,
                                  TtftDefinition ttft_definition) {
  switch (bound.metric) {
    case SlaMetric::kTtft:
      return ttft_definition == TtftDefinition::kService
                 ? stats.ttft_service_ns.at(bound.percentile)
                 : stats.ttft_ns.at(bound.percentile);
    case SlaMetric::kTtftService: return stats.ttft_service_ns.at(bound.percentile);
    case SlaMetric::kTpot: return stats.tpot_ns.at(bound.percentile);
    case SlaMetric::kItl: return stats.itl_ns.at(bound.percentile);
    case SlaMetric::kE2e: return stats.e2e_ns.at(bound.percentile);
  }
  return std::nullopt;
}

namespace {

std::string fmt(double v, int decimals = 2) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// How the agent's client-resources messages and the check's text begin (one prefix, not two).
constexpr std::string_view kClientResourcesPrefix = "client resources exhausted: ";

// "≤ limit" check.
VerdictReason at_most(CheckKind kind, double measured, double limit, std::string what,
                      std::string unit, int decimals) {
  VerdictReason r;
  r.kind = kind;
  r.code = std::string(to_string(kind));
  r.measured = measured;
  r.limit = limit;
  r.margin = limit - measured;
  r.status = measured <= limit ? CheckStatus::kHeld : CheckStatus::kMissed;
  r.text = what + " " + fmt(measured, decimals) + unit +
           (r.status == CheckStatus::kHeld ? " ≤ " : " > ") + fmt(limit, decimals) + unit +
           " limit";
  return r;
}

// "≥ limit" check.
VerdictReason at_least(CheckKind kind, double measured, double limit, std::string what,
                       std::string unit, int decimals) {
  VerdictReason r;
  r.kind = kind;
  r.code = std::string(to_string(kind));
  r.measured = measured;
  r.limit = limit;
  r.margin = measured - limit;
  r.status = measured >= limit ? CheckStatus::kHeld : CheckStatus::kMissed;
  r.text = what + " " + fmt(measured, decimals) + unit +
           (r.status == CheckStatus::kHeld ? " ≥ " : " < ") + fmt(limit, decimals) + unit +
           " required";
  return r;
}

VerdictReason skipped(CheckKind kind, CheckStatus status, std::string text) {
  VerdictReason r;
  r.kind = kind;
  r.code = std::string(to_string(kind));
  r.status = status;
  r.text = std::move(text);
  return r;
}

}  // namespace

StepVerdict judge_step(const StepStats& st, const SlaSpec& sla) {
  StepVerdict v;
  const bool open_loop = st.offered_rate_rps > 0;

  for (const SlaBound& b : sla.bounds) {
    const std::string name =
        std::string(to_string(b.metric)) + " P" + percentile_label(b.percentile);
    const std::string code =
        std::string(to_string(b.metric)) + "_p" + percentile_label(b.percentile);
    const auto value_ns = measured_ns(st, b, sla.ttft_definition);
    VerdictReason r;
    if (!value_ns) {
      r = skipped(CheckKind::kBound, CheckStatus::kNotEvaluated, name + ": no data in the window");
    } else {
      const char* which =
          b.metric == SlaMetric::kTtft
              ? (sla.ttft_definition == TtftDefinition::kService ? " (from send)"
                                                                 : " (from intended)")
              : "";
      r = at_most(CheckKind::kBound, *value_ns / 1e6, b.limit_ms, name + which, " ms", 1);
    }
    r.code = code;
    r.bound = b;
    r.limit = b.limit_ms;
    v.reasons.push_back(std::move(r));
  }

  if (st.intended > 0) {
    v.reasons.push_back(
        at_most(CheckKind::kErrorRate, st.error_rate, sla.max_error_rate, "error rate", "", 4));
    v.reasons.push_back(at_most(CheckKind::kIncompleteRate, st.incomplete_rate, sla.max_error_rate,
                                "incomplete share", "", 4));
  } else {
    v.reasons.push_back(skipped(CheckKind::kErrorRate, CheckStatus::kNotEvaluated,
                                "error rate: no request intended in the window"));
    v.reasons.push_back(skipped(CheckKind::kIncompleteRate, CheckStatus::kNotEvaluated,
                                "incomplete share: no request intended in the window"));
  }

  // Rate tolerance widened for Poisson noise in the counts (see sla.h).
  const double expected = st.offered_rate_rps * st.window_s;
  const double tolerance =
      expected > 0 ? std::max(sla.rate_tolerance, 3.0 / std::sqrt(expected)) : sla.rate_tolerance;
  if (open_loop) {
    // Counted after the window's first fill_s (step_stats.h): the queue fills for about one
    // request lifetime, and fewer requests end than start meanwhile however well the server
    // keeps up. Compared with the requests that ARRIVED over that span (not the offered rate's
    // expectation, whose Poisson noise alone failed one step in a few hundred). What ended
    // falls short of what arrived by exactly the in-flight count's growth over the span, so a
    // shortfall counts only when that growth is significant by the backlog check's own
    // standard (its slope's batch-means error, below): a batching server's count approaches
    // its level for several request lifetimes at moderate load, a smooth rise that is no
    // backlog. The count also wanders around its trend, so the two ends add 4.5 √2 σ (σ its
    // standard deviation around the trend, else √L; bursty arrivals leave a queue at either
    // end): a growing count lies close to its line, so that term hides no growth. And never
    // fewer than backlog_growth_min_requests (3) requests.
    const double settled_s = st.window_s - st.fill_s;
    const bool settled = st.fill_s > 0 && settled_s > 0 && st.settled_intended > 0;
    if (settled) {
      const double arrived = static_cast<double>(st.settled_intended);
      const double arrival_rps = arrived / settled_s;
      const double sd = st.in_flight_wander
                            ? *st.in_flight_wander
                            : std::sqrt(std::max(1.0, st.offered_rate_rps * st.e2e_ns.mean / 1e9));
      // The shortfall is the trend's growth plus the count's wander at the two ends.
      const double wander_rps = 4.5 * std::sqrt(2.0) * std::max(sd, 1.0) / settled_s;
      const double noise_rps =
          wander_rps +
          (st.in_flight_slope_se_rps
               ? backlog_significance(st.in_flight_slope_batches) * *st.in_flight_slope_se_rps
               : 0.0);
      const double floor_rps = sla.backlog_growth_min_requests / settled_s;
      const double allowed_rps = std::max({sla.rate_tolerance * arrival_rps, noise_rps, floor_rps});
      VerdictReason completion =
          at_least(CheckKind::kCompletionRate, st.settled_completion_rate_rps,
                   std::max(0.0, arrival_rps - allowed_rps), "completion rate", " rps", 2);
      completion.text += " (after the window's first " + fmt(st.fill_s, 1) + " s, against the " +
                         fmt(arrival_rps, 2) + " rps that arrived then)";
      v.reasons.push_back(std::move(completion));
    } else {
      v.reasons.push_back(at_least(CheckKind::kCompletionRate, st.completion_rate_rps,
                                   st.offered_rate_rps * (1 - tolerance), "completion rate", " rps",
                                   2));
    }
    if (st.in_flight_slope_rps) {
      const double slope = *st.in_flight_slope_rps;
      const double limit = sla.backlog_growth_fraction * st.offered_rate_rps;
      VerdictReason r = at_most(CheckKind::kBacklog, slope, limit, "in-flight trend", " req/s", 3);
      if (st.in_flight_slope_se_rps)
        r.text += " (standard error " + fmt(*st.in_flight_slope_se_rps, 3) + " req/s)";
      // Growth below the noise floor over the window holds. The floor is the larger of the
      // absolute bound and 3√L, L = offered rate × mean E2E (Little's law: the mean in-flight
      // count), because a steady Poisson queue of mean L wanders by about √L.
      const double little = st.offered_rate_rps * st.e2e_ns.mean / 1e9;
      const double floor_requests =
          std::max(sla.backlog_growth_min_requests, little > 0 ? 3.0 * std::sqrt(little) : 0.0);
      if (r.status == CheckStatus::kMissed && slope * st.window_s <= floor_requests) {
        r.status = CheckStatus::kHeld;
        r.text += " (net growth " + fmt(slope * st.window_s, 1) + " requests ≤ noise floor " +
                  fmt(floor_requests, 1) + ", held)";
      }
      // A trend within kBacklogSignificance standard errors of zero is a stationary queue's
      // wander, not growth: its requests live long enough that the count drifts for tens of
      // seconds either way (step_stats.h, in_flight_trend).
      const double significance = backlog_significance(st.in_flight_slope_batches);
      if (r.status == CheckStatus::kMissed && st.in_flight_slope_se_rps &&
          slope <= significance * *st.in_flight_slope_se_rps) {
        r.status = CheckStatus::kHeld;
        r.text += " (within " + fmt(significance, 1) + " standard errors, ±" +
                  fmt(*st.in_flight_slope_se_rps, 3) + " req/s: not significant, held)";
      }
      v.reasons.push_back(std::move(r));
    } else {
      v.reasons.push_back(skipped(CheckKind::kBacklog, CheckStatus::kNotEvaluated,
                                  "in-flight trend: fewer than 2 in-flight points in the window"));
    }
    VerdictReason send = at_least(CheckKind::kSendRate, st.achieved_rate_rps,
                                  st.offered_rate_rps * (1 - tolerance), "send rate", " rps", 2);
    v.reasons.push_back(std::move(send));
  } else {
    for (CheckKind k : {CheckKind::kCompletionRate, CheckKind::kBacklog, CheckKind::kSendRate}) {
      v.reasons.push_back(skipped(k, CheckStatus::kNotApplicable,
                                  std::string(to_string(k)) + ": closed loop, not applicable"));
    }
  }

  if (st.schedule_lag_p99_ns) {
    v.reasons.push_back(at_most(CheckKind::kScheduleLag, *st.schedule_lag_p99_ns / 1e6,
                                sla.max_schedule_lag_p99_ms, "client dispatch lag P99 (wall clock)",
                                " ms", 2));
  } else {
    v.reasons.push_back(skipped(CheckKind::kScheduleLag, CheckStatus::kNotApplicable,
                                "client dispatch lag: nothing sent in the window, not measured"));
  }
  v.reasons.push_back(at_most(CheckKind::kDroppedArrivals, static_cast<double>(st.dropped_arrivals),
                              static_cast<double>(sla.max_dropped_arrivals),
                              "arrivals dropped at the in-flight cap", "", 0));
  if (st.client_cpu_utilisation) {
    v.reasons.push_back(at_most(CheckKind::kClientCpu, *st.client_cpu_utilisation,
                                sla.max_client_cpu_utilisation, "client CPU", "", 2));
  } else {
    v.reasons.push_back(
        skipped(CheckKind::kClientCpu, CheckStatus::kNotApplicable, "client CPU: not measured"));
  }
  if (st.target_clock_lost_share) {
    VerdictReason r =
        at_most(CheckKind::kTargetClock, *st.target_clock_lost_share, kMaxTargetClockLostShare,
                "share of the window the simulator lost to a busy host", "", 4);
    v.reasons.push_back(std::move(r));
  } else {
    v.reasons.push_back(skipped(CheckKind::kTargetClock, CheckStatus::kNotApplicable,
                                "target clock: not a simulated target"));
  }
  {
    VerdictReason r =
        at_most(CheckKind::kClientResources, static_cast<double>(st.client_resources_in_step), 0,
                "requests failed for the client's own resources", "", 0);
    if (r.status == CheckStatus::kMissed) {
      // "client resources exhausted: 1472 requests of the step failed on the client (first:
      // connect to … failed with EMFILE (Too many open files); raise … ulimit -n …)".
      r.text = std::string(kClientResourcesPrefix) + std::to_string(st.client_resources_in_step) +
               " request(s) of the step failed on the client and never reached the target";
      std::string_view first = st.client_resources_example;
      if (first.starts_with(kClientResourcesPrefix))
        first.remove_prefix(kClientResourcesPrefix.size());
      if (!first.empty()) r.text += " (first: " + std::string(first) + ")";
    }
    v.reasons.push_back(std::move(r));
  }
  v.reasons.push_back(at_least(CheckKind::kSampleCount, static_cast<double>(st.intended),
                               static_cast<double>(sla.min_requests),
                               "requests intended in the window", "", 0));

  // How much the client's own delay can have added to one measured latency (step_stats.h).
  const double explained_ms = st.client_lag_max_ns / 1e6;
  bool client_miss = false, server_miss = false, beyond_lag = false, thin = false, no_data = false;
  // Dispatch lag measures only the send side. A client short of CPU is also late reading, and a
  // simulator that lost wall-clock time delays its own answers: neither shows in the lag, so
  // then no miss is "beyond what the client explains" (rule 1 does not apply).
  bool unmeasured_delay = false;
  for (auto& r : v.reasons) {
    if (r.status == CheckStatus::kMissed) {
      if (is_client_side(r.kind)) {
        client_miss = true;
        if (r.kind == CheckKind::kClientCpu || r.kind == CheckKind::kTargetClock ||
            r.kind == CheckKind::kClientResources)
          unmeasured_delay = true;
      } else if (r.kind == CheckKind::kSampleCount) {
        thin = true;
      } else {
        server_miss = true;
        if (r.kind == CheckKind::kBound && r.margin && -*r.margin > explained_ms) {
          r.beyond_client_lag = true;
          beyond_lag = true;
        }
      }
    }
    if (r.status == CheckStatus::kNotEvaluated && r.kind == CheckKind::kBound) no_data = true;
  }
  if (unmeasured_delay) {
    beyond_lag = false;
    for (auto& r : v.reasons) r.beyond_client_lag = false;
  }
  if (client_miss) {
    for (auto& r : v.reasons) {
      if (r.beyond_client_lag)
        r.text += " (missed by more than the client's largest dispatch lag, " +
                  fmt(explained_ms, 1) + " ms: not explained by the client)";
    }
  }
  if (beyond_lag) {
    v.outcome = Outcome::kFail;
  } else if (client_miss) {
    v.outcome = Outcome::kInconclusive;
    v.client_bound = true;
  } else if (server_miss) {
    v.outcome = Outcome::kFail;
  } else if (thin) {
    v.outcome = Outcome::kInconclusive;
    v.insufficient_samples = true;
  } else if (no_data) {
    v.outcome = Outcome::kInconclusive;
  } else {
    v.outcome = Outcome::kPass;
  }
  return v;
}

std::optional<double> trend_judging_window_s(const StepStats& st, const StepVerdict& v) {
  if (!(st.offered_rate_rps > 0) || v.outcome == Outcome::kInconclusive) return std::nullopt;
  if (v.outcome == Outcome::kFail) {
    for (const auto& r : v.reasons) {
      if (r.status == CheckStatus::kMissed && r.kind != CheckKind::kBacklog &&
          r.kind != CheckKind::kCompletionRate)
        return std::nullopt;  // a bound, the error rate: that fail stands
    }
  }
  const double lifetime_s = st.e2e_ns.mean / 1e9;
  if (!(lifetime_s > 0)) return std::nullopt;
  const double needed_s = std::ceil(kTrendLifetimes * lifetime_s);
  if (needed_s <= st.window_s) return std::nullopt;
  return std::max(needed_s, 2 * st.window_s);
}

bool defer_short_trend(const StepStats& st, StepVerdict& v, double max_window_s) {
  const auto needed = trend_judging_window_s(st, v);
  if (!needed) return false;
  const double window_s = std::min(*needed, max_window_s);
  if (window_s < 1.1 * st.window_s) return false;  // cannot run much longer: the verdict stands
  v.outcome = Outcome::kInconclusive;
  v.rejudge_window_s = window_s;
  const double lifetime_s = st.e2e_ns.mean / 1e9;
  const std::string why = " — the window held " + fmt(st.window_s / lifetime_s, 1) +
                          " request lifetimes (mean E2E " + fmt(lifetime_s, 1) +
                          " s), fewer than " + fmt(kTrendLifetimes, 0) +
                          ": too few to tell a queue still filling from one that keeps growing; "
                          "judged again over " +
                          fmt(window_s, 0) + " s";
  for (auto& r : v.reasons) {
    const bool trend = r.kind == CheckKind::kBacklog && r.status != CheckStatus::kNotApplicable;
    const bool shortfall = r.kind == CheckKind::kCompletionRate && r.status == CheckStatus::kMissed;
    if (!trend && !shortfall) continue;
    r.status = CheckStatus::kNotEvaluated;
    r.text += why;
  }
  return true;
}

}  // namespace llmcap::analysis

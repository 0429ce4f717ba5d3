#include "analysis/step_stats.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace llmcap::analysis {

namespace {

bool is_timeout(ErrorClass e) {
  return e == ErrorClass::kTimeoutConnect || e == ErrorClass::kTimeoutFirstToken ||
         e == ErrorClass::kTimeoutIdle || e == ErrorClass::kTimeoutTotal;
}

bool in_window(std::int64_t t, std::int64_t start, std::int64_t end) {
  return t >= start && t < end;
}

// End of a request for throughput purposes: last token event, else end of the response.
std::int64_t end_time_ns(const RequestSample& s) {
  return s.t_last_token_ns >= 0 ? s.t_last_token_ns : s.t_end_ns;
}

}  // namespace

std::optional<double> HistogramQuantiles::at(double p) const {
  Summary as_summary;
  as_summary.count = count;
  as_summary.p50 = p50;
  as_summary.p90 = p90;
  as_summary.p95 = p95;
  as_summary.p99 = p99;
  as_summary.p999 = p999;
  as_summary.extra = extra;
  return as_summary.at(p);
}

HistogramQuantiles quantiles_of(const LogHistogram& h, const std::vector<double>& extra) {
  HistogramQuantiles q;
  q.count = h.count();
  if (q.count == 0) return q;
  q.mean = h.mean();
  q.min = h.min();
  q.max = h.max();
  q.p50 = h.quantile(0.50);
  q.p90 = h.quantile(0.90);
  q.p95 = h.quantile(0.95);
  q.p99 = h.quantile(0.99);
  q.p999 = h.quantile(0.999);
  for (double p : extra) q.extra.emplace_back(p, h.quantile(p / 100));
  return q;
}

std::optional<InFlightTrend> in_flight_trend(const std::vector<InFlightPoint>& points,
                                             std::int64_t start_ns, std::int64_t end_ns) {
  // Centre times on the window start (in seconds) to keep the sums well conditioned.
  std::vector<double> t, y;
  for (const auto& p : points) {
    if (!in_window(p.t_ns, start_ns, end_ns)) continue;
    t.push_back(static_cast<double>(p.t_ns - start_ns) / 1e9);
    y.push_back(p.in_flight);
  }
  const std::size_t n = t.size();
  if (n < 2) return std::nullopt;
  double mean_t = 0, mean_y = 0;
  for (std::size_t i = 0; i < n; ++i) {
    mean_t += t[i];
    mean_y += y[i];
  }
  mean_t /= static_cast<double>(n);
  mean_y /= static_cast<double>(n);
  double sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < n; ++i) {
    sxx += (t[i] - mean_t) * (t[i] - mean_t);
    sxy += (t[i] - mean_t) * (y[i] - mean_y);
  }
  if (sxx <= 0) return std::nullopt;
  InFlightTrend trend;
  trend.slope_rps = sxy / sxx;
  double residual_ss = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double e = y[i] - (mean_y + trend.slope_rps * (t[i] - mean_t));
    residual_ss += e * e;
  }
  trend.residual_sd = std::sqrt(residual_ss / static_cast<double>(n));
  // Batch means: kBatches equal spans of time, each one's mean count, and the least-squares
  // slope's standard error over those means. Batches far longer than the queue's memory are
  // nearly independent, which the raw samples (10 a second, correlated over a request's
  // lifetime) are not.
  const double t0 = t.front(), span = t.back() - t.front();
  constexpr std::size_t batches = kTrendBatches;
  if (n < 2 * batches || !(span > 0)) return trend;
  std::vector<double> sum(batches, 0), count(batches, 0);
  for (std::size_t i = 0; i < n; ++i) {
    auto b = static_cast<std::size_t>((t[i] - t0) / span * static_cast<double>(batches));
    b = std::min(b, batches - 1);
    sum[b] += y[i];
    count[b] += 1;
  }
  double bx = 0, by = 0, used = 0;
  std::vector<double> xs, ys;
  for (std::size_t b = 0; b < batches; ++b) {
    if (count[b] == 0) continue;
    xs.push_back(t0 + span * (static_cast<double>(b) + 0.5) / static_cast<double>(batches));
    ys.push_back(sum[b] / count[b]);
    bx += xs.back();
    by += ys.back();
    used += 1;
  }
  if (used < 4) return trend;
  bx /= used;
  by /= used;
  double bxx = 0, bxy = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    bxx += (xs[i] - bx) * (xs[i] - bx);
    bxy += (xs[i] - bx) * (ys[i] - by);
  }
  const double bslope = bxy / bxx;
  double ss = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const double e = ys[i] - (by + bslope * (xs[i] - bx));
    ss += e * e;
  }
  trend.se_rps = std::sqrt(ss / (used - 2) / bxx);
  trend.batches = static_cast<std::size_t>(used);
  return trend;
}

std::optional<double> in_flight_slope_rps(const std::vector<InFlightPoint>& points,
                                          std::int64_t start_ns, std::int64_t end_ns) {
  const auto trend = in_flight_trend(points, start_ns, end_ns);
  if (!trend) return std::nullopt;
  return trend->slope_rps;
}

double output_tokens_in_window(const RequestSample& s, std::int64_t start_ns, std::int64_t end_ns) {
  if (s.output_tokens <= 0 || s.t_first_token_ns < 0) return 0;
  const double tokens = s.output_tokens;
  if (!s.token_times_ns.empty() && s.token_times_ns.size() == s.token_events) {
    std::size_t inside = 0;
    for (auto t : s.token_times_ns) inside += in_window(t, start_ns, end_ns) ? 1 : 0;
    return tokens * static_cast<double>(inside) / static_cast<double>(s.token_times_ns.size());
  }
  const std::int64_t first = s.t_first_token_ns;
  const std::int64_t last = std::max(first, s.t_last_token_ns);
  if (last == first) return in_window(first, start_ns, end_ns) ? tokens : 0;
  const std::int64_t overlap =
      std::max<std::int64_t>(0, std::min(last, end_ns) - std::max(first, start_ns));
  return tokens * static_cast<double>(overlap) / static_cast<double>(last - first);
}

StepStats compute_step_stats(const StepInput& in) {
  if (in.window_end_ns <= in.window_start_ns) {
    throw std::invalid_argument("window_end_ns: must be after window_start_ns");
  }
  StepStats st;
  st.window_start_ns = in.window_start_ns;
  st.window_end_ns = in.window_end_ns;
  st.window_s = static_cast<double>(in.window_end_ns - in.window_start_ns) / 1e9;
  st.offered_rate_rps = in.offered_rate_rps;
  st.concurrency = in.concurrency;
  st.dropped_arrivals = in.dropped_arrivals;
  st.client_cpu_utilisation = in.client_cpu_utilisation;

  std::vector<double> ttft, ttft_service, tpot, e2e, lag, dispatch, input_tokens, output_tokens;
  const double time_scale = in.time_scale > 0 ? in.time_scale : 1.0;
  std::uint64_t planned_output_known = 0, short_output = 0;
  double output_in_window = 0, input_in_window = 0;
  std::uint64_t ok_ended_in_window = 0, finished_in_window = 0, sent_in_window = 0;
  std::vector<std::int64_t> finished_at_ns;  // ends in the window, for the settled rate
  std::vector<std::int64_t> intended_at_ns;  // intended in the window, likewise

  for (const RequestSample& s : in.samples) {
    if (s.error == ErrorClass::kClientResources) {
      if (st.client_resources_in_step++ == 0) st.client_resources_example = s.error_message;
    }
    // Window-based rates use every sample, whichever window it was intended in.
    if (s.t_send_ns >= 0 && in_window(s.t_send_ns, in.window_start_ns, in.window_end_ns)) {
      ++sent_in_window;
    }
    // An abandoned request finished too: its user left, and the server was told so.
    const bool finished = s.t_end_ns >= 0 && s.error != ErrorClass::kCancelled;
    if (finished && in_window(end_time_ns(s), in.window_start_ns, in.window_end_ns)) {
      ++finished_in_window;
      finished_at_ns.push_back(end_time_ns(s));
      if (s.ok()) {
        ++ok_ended_in_window;
        if (meets_slos(s, in.sla)) ++st.met_slo_ended;
      }
    }
    if (s.ok() && s.t_end_ns >= 0) {
      output_in_window += output_tokens_in_window(s, in.window_start_ns, in.window_end_ns);
      if (s.input_tokens >= 0 && s.t_first_token_ns >= 0 &&
          in_window(s.t_first_token_ns, in.window_start_ns, in.window_end_ns)) {
        input_in_window += s.input_tokens;
      }
    }

    if (!in_window(s.t_intended_ns, in.window_start_ns, in.window_end_ns)) continue;
    // Belonging requests.
    ++st.intended;
    intended_at_ns.push_back(s.t_intended_ns);
    if (s.t_send_ns >= 0) {
      ++st.sent;
      lag.push_back(static_cast<double>(s.schedule_lag_ns()));
      const double d = static_cast<double>(s.dispatch_lag_ns());
      dispatch.push_back(d / time_scale);
      st.client_lag_max_ns = std::max(st.client_lag_max_ns, d);
    }
    if (!s.ok()) ++st.errors_by_class[static_cast<std::size_t>(s.error)];
    if (s.ok() && s.t_end_ns >= 0) {
      ++st.completed_ok;
      if (meets_slos(s, in.sla)) ++st.met_slo;
      if (auto v = s.ttft_ns()) ttft.push_back(static_cast<double>(*v));
      if (auto v = s.ttft_service_ns()) ttft_service.push_back(static_cast<double>(*v));
      if (auto v = s.tpot_ns()) tpot.push_back(*v);
      if (auto v = s.e2e_ns()) e2e.push_back(static_cast<double>(*v));
      if (s.input_tokens >= 0) input_tokens.push_back(s.input_tokens);
      if (s.output_tokens >= 0) output_tokens.push_back(s.output_tokens);
      if (s.output_tokens_estimated) ++st.estimated_output_count;
      if (s.planned_output_tokens > 0 && s.output_tokens >= 0) {
        ++planned_output_known;
        if (s.output_tokens < s.planned_output_tokens) ++short_output;
      }
    } else if (s.error == ErrorClass::kAbandoned) {
      ++st.abandoned;
      if (s.t_first_token_ns >= 0) ++st.abandoned_with_first_token;
    } else if (s.ok() || s.error == ErrorClass::kCancelled) {
      ++st.incomplete;
    } else if (s.error == ErrorClass::kClientResources) {
      ++st.client_resources;
    } else if (is_timeout(s.error)) {
      ++st.timed_out;
    } else {
      ++st.failed;
    }
  }

  // Percentiles the SLA bounds ask for beyond the five every Summary holds (P75, P99.99).
  std::vector<double> wanted;
  for (const SlaBound& b : in.sla.bounds) wanted.push_back(b.percentile);
  const std::vector<double> extra = extra_percentiles(wanted);
  st.ttft_ns = summarize(std::move(ttft), extra);
  st.ttft_service_ns = summarize(std::move(ttft_service), extra);
  st.tpot_ns = summarize(std::move(tpot), extra);
  st.e2e_ns = summarize(std::move(e2e), extra);
  st.schedule_lag_ns = summarize(std::move(lag));
  st.input_tokens = summarize(std::move(input_tokens));
  st.output_tokens = summarize(std::move(output_tokens));
  st.itl_ns = quantiles_of(in.itl_ns, extra);

  st.output_tokens_per_s = output_in_window / st.window_s;
  st.input_tokens_per_s = input_in_window / st.window_s;
  st.requests_per_s = static_cast<double>(ok_ended_in_window) / st.window_s;
  st.completion_rate_rps = static_cast<double>(finished_in_window) / st.window_s;
  st.achieved_rate_rps = static_cast<double>(sent_in_window) / st.window_s;
  // Goodput counts the same completions as requests_per_s (those that ended in the window), so
  // goodput ≤ throughput always; met_slo (the window's own requests) is attainment's numerator.
  st.goodput_rps = static_cast<double>(st.met_slo_ended) / st.window_s;
  const auto attainment_base = st.intended - st.abandoned + st.dropped_arrivals;
  if (attainment_base > 0) {
    st.sla_attainment = static_cast<double>(st.met_slo) / static_cast<double>(attainment_base);
  }
  if (st.intended > st.client_resources) {
    // The target's rates: requests that never left the client are not its errors.
    const auto n = static_cast<double>(st.intended - st.client_resources);
    st.error_rate = static_cast<double>(st.failed + st.timed_out) / n;
    st.incomplete_rate = static_cast<double>(st.incomplete) / n;
  }
  // The trend is fitted after the queue has filled: a step starts empty and its in-flight
  // count climbs for about one request lifetime (mean E2E) before it is stationary; fitted from
  // the window's start, that climb reads as growth (at most half the window is skipped).
  const std::int64_t fill_ns = std::min<std::int64_t>(static_cast<std::int64_t>(st.e2e_ns.mean),
                                                      (in.window_end_ns - in.window_start_ns) / 2);
  const std::int64_t settled_from_ns = in.window_start_ns + std::max<std::int64_t>(0, fill_ns);
  st.fill_s = static_cast<double>(settled_from_ns - in.window_start_ns) / 1e9;
  st.settled_completion_rate_rps =
      static_cast<double>(std::count_if(finished_at_ns.begin(), finished_at_ns.end(),
                                        [&](std::int64_t t) { return t >= settled_from_ns; })) /
      (st.window_s - st.fill_s);
  st.settled_intended = static_cast<std::uint64_t>(
      std::count_if(intended_at_ns.begin(), intended_at_ns.end(),
                    [&](std::int64_t t) { return t >= settled_from_ns; }));
  if (const auto trend = in_flight_trend(in.in_flight, settled_from_ns, in.window_end_ns)) {
    st.in_flight_slope_rps = trend->slope_rps;
    st.in_flight_slope_se_rps = trend->se_rps;
    st.in_flight_slope_batches = trend->batches;
    st.in_flight_wander = trend->residual_sd;
  }
  if (planned_output_known > 0) {
    st.short_output_share =
        static_cast<double>(short_output) / static_cast<double>(planned_output_known);
  }
  st.short_output_warning = st.short_output_share > kShortOutputWarnShare;
  if (const Summary d = summarize(std::move(dispatch)); !d.empty()) st.schedule_lag_p99_ns = d.p99;
  if (in.target_clock_lost_ns) {
    const double span_ns =
        in.target_clock_span_ns > 0 ? in.target_clock_span_ns : st.window_s * 1e9 / time_scale;
    st.target_clock_lost_share = span_ns > 0 ? *in.target_clock_lost_ns / span_ns : 0.0;
  }
  return st;
}

}  // namespace llmcap::analysis

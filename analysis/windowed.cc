#include "analysis/windowed.h"

#include <algorithm>
#include <stdexcept>

#include "analysis/summary.h"

namespace llmcap::analysis {

namespace {

void check(const WindowOptions& o) {
  if (o.window_ns <= 0) throw std::invalid_argument("window_ns: must be positive");
  if (o.end_ns <= o.start_ns) throw std::invalid_argument("end_ns: must be after start_ns");
}

// Indices of samples sorted by t_intended, for range lookups.
std::vector<const RequestSample*> by_intended(std::span<const RequestSample> samples) {
  std::vector<const RequestSample*> out;
  out.reserve(samples.size());
  for (const auto& s : samples) out.push_back(&s);
  std::sort(out.begin(), out.end(),
            [](auto* a, auto* b) { return a->t_intended_ns < b->t_intended_ns; });
  return out;
}

std::pair<std::size_t, std::size_t> range(const std::vector<const RequestSample*>& sorted,
                                          std::int64_t start, std::int64_t end) {
  auto lo = std::lower_bound(sorted.begin(), sorted.end(), start,
                             [](auto* s, std::int64_t t) { return s->t_intended_ns < t; });
  auto hi = std::lower_bound(lo, sorted.end(), end,
                             [](auto* s, std::int64_t t) { return s->t_intended_ns < t; });
  return {static_cast<std::size_t>(lo - sorted.begin()),
          static_cast<std::size_t>(hi - sorted.begin())};
}

}  // namespace

std::vector<std::pair<std::int64_t, std::int64_t>> make_windows(const WindowOptions& o) {
  check(o);
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  for (std::int64_t t = o.start_ns; t + o.window_ns <= o.end_ns; t += o.window_ns) {
    out.emplace_back(t, t + o.window_ns);
  }
  if (out.empty()) out.emplace_back(o.start_ns, o.end_ns);
  return out;
}

WindowedCompliance windowed_compliance(std::span<const RequestSample> samples, const SlaSpec& sla,
                                       const WindowOptions& options) {
  const auto sorted = by_intended(samples);
  WindowedCompliance out;
  out.bounds.resize(sla.bounds.size());
  for (std::size_t b = 0; b < sla.bounds.size(); ++b) out.bounds[b].bound = sla.bounds[b];
  std::uint64_t windows_with_requests = 0, error_held = 0, all_held = 0;

  for (auto [start, end] : make_windows(options)) {
    WindowResult w;
    w.start_ns = start;
    w.end_ns = end;
    const auto [lo, hi] = range(sorted, start, end);
    std::vector<std::vector<double>> values(sla.bounds.size());
    std::uint64_t errors = 0;
    for (std::size_t i = lo; i < hi; ++i) {
      const RequestSample& s = *sorted[i];
      // Never left the client (no descriptor, port or socket memory): not the target's, in
      // neither the error count nor its base (as in step_stats.h).
      if (s.error == ErrorClass::kClientResources) continue;
      ++w.intended;
      // Failed and timed-out count; cancelled-by-us and abandoned do not (as in step_stats.h).
      if (!s.ok() && s.error != ErrorClass::kCancelled && s.error != ErrorClass::kAbandoned)
        ++errors;
      if (!s.ok() || s.t_end_ns < 0) continue;
      ++w.completed_ok;
      for (std::size_t b = 0; b < sla.bounds.size(); ++b) {
        if (sla.bounds[b].metric == SlaMetric::kItl) {
          for (std::size_t k = 1; k < s.token_times_ns.size(); ++k) {
            values[b].push_back(static_cast<double>(s.token_times_ns[k] - s.token_times_ns[k - 1]));
          }
          continue;
        }
        if (auto v = request_metric_ns(s, sla.bounds[b].metric, sla.ttft_definition)) {
          values[b].push_back(*v);
        }
      }
    }
    w.error_rate =
        w.intended > 0 ? static_cast<double>(errors) / static_cast<double>(w.intended) : 0;
    const bool error_ok = w.error_rate <= sla.max_error_rate;
    bool all = error_ok;
    for (std::size_t b = 0; b < sla.bounds.size(); ++b) {
      std::sort(values[b].begin(), values[b].end());
      WindowBoundResult r;
      r.measured_ns = percentile(values[b], sla.bounds[b].percentile);
      if (r.measured_ns) {
        r.held = *r.measured_ns <= sla.bounds[b].limit_ms * 1e6;
        ++out.bounds[b].windows_with_data;
        if (r.held) ++out.bounds[b].windows_held;
        all = all && r.held;
      }
      w.bounds.push_back(r);
    }
    w.all_held = w.intended > 0 && all;
    if (w.intended > 0) {
      ++windows_with_requests;
      if (error_ok) ++error_held;
      if (w.all_held) ++all_held;
    }
    out.windows.push_back(std::move(w));
  }
  for (auto& b : out.bounds) {
    if (b.windows_with_data > 0) {
      b.share_held = static_cast<double>(b.windows_held) / static_cast<double>(b.windows_with_data);
    }
  }
  if (windows_with_requests > 0) {
    const auto n = static_cast<double>(windows_with_requests);
    out.error_rate_share_held = static_cast<double>(error_held) / n;
    out.all_held_share = static_cast<double>(all_held) / n;
  }
  return out;
}

std::vector<TimelinePoint> windowed_p95_ttft(std::span<const RequestSample> samples,
                                             const WindowOptions& options,
                                             TtftDefinition ttft_definition, std::int64_t step_ns) {
  check(options);
  if (step_ns <= 0) step_ns = options.window_ns;
  const auto sorted = by_intended(samples);
  std::vector<TimelinePoint> out;
  for (std::int64_t t = options.start_ns;; t += step_ns) {
    const std::int64_t end = std::min(t + options.window_ns, options.end_ns);
    if (t + options.window_ns > options.end_ns && !out.empty()) break;
    TimelinePoint p;
    p.start_ns = t;
    p.end_ns = end;
    const auto [lo, hi] = range(sorted, t, end);
    std::vector<double> ttft;
    for (std::size_t i = lo; i < hi; ++i) {
      const RequestSample& s = *sorted[i];
      if (!s.ok() || s.t_end_ns < 0) continue;
      if (auto v = request_metric_ns(s, SlaMetric::kTtft, ttft_definition)) ttft.push_back(*v);
    }
    std::sort(ttft.begin(), ttft.end());
    p.count = ttft.size();
    p.p95_ttft_ns = percentile(ttft, 95);
    out.push_back(p);
    if (end >= options.end_ns) break;
  }
  return out;
}

}  // namespace llmcap::analysis

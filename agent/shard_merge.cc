#include "agent/shard_merge.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>

namespace llmcap::agent {

namespace {

void add_counts(StepCounts& into, const StepCounts& c) {
  into.intended += c.intended;
  into.sent += c.sent;
  into.ok += c.ok;
  into.failed += c.failed;
  into.cancelled += c.cancelled;
  into.output_tokens += c.output_tokens;
  into.output_length_mismatch += c.output_length_mismatch;
  into.usage_missing += c.usage_missing;
}

// Σ over shards of each shard's in-flight value (last point at or before t), on a grid.
std::vector<std::pair<std::int64_t, std::int32_t>> sum_in_flight(
    const std::vector<ShardResult>& shards, std::int64_t grid_ns) {
  std::int64_t last = -1;
  for (const auto& s : shards) {
    if (!s.result.in_flight_series.empty())
      last = std::max(last, s.result.in_flight_series.back().first);
  }
  std::vector<std::pair<std::int64_t, std::int32_t>> out;
  if (last < 0 || grid_ns <= 0) return out;
  // Work and memory are bounded by the number of points, never by the times in them: a grid
  // finer than that (a far-off time point, or an uploaded series with a huge time) is coarsened
  // so it has at most 4 cells per point plus kMinCells.
  constexpr std::int64_t kMinCells = 100'000;
  std::int64_t points = 0;
  for (const auto& s : shards)
    points += static_cast<std::int64_t>(s.result.in_flight_series.size());
  const std::int64_t max_cells = 4 * points + kMinCells;
  if (last / grid_ns >= max_cells) grid_ns = last / max_cells + 1;
  std::vector<std::size_t> cursor(shards.size(), 0);
  for (std::int64_t t = 0;; t += grid_ns) {
    const std::int64_t at = std::min(t, last);
    std::int32_t total = 0;
    for (std::size_t i = 0; i < shards.size(); ++i) {
      const auto& series = shards[i].result.in_flight_series;
      std::size_t& c = cursor[i];
      while (c < series.size() && series[c].first <= at) ++c;
      if (c > 0) total += series[c - 1].second;
    }
    out.emplace_back(at, total);
    if (at >= last) break;
  }
  return out;
}

}  // namespace

MergedStep merge_shards(std::vector<ShardResult> shards, std::int64_t in_flight_grid_ns) {
  std::sort(shards.begin(), shards.end(), [](const ShardResult& a, const ShardResult& b) {
    return a.shard_index < b.shard_index;
  });
  MergedStep out;
  StepResult& m = out.result;
  m.completed = !shards.empty();
  bool first_window = true;
  double tpw_initial = 0, tpw_final = 0;
  int calibrated = 0;
  double planned_sum = 0, real_sum = 0, abs_err_sum = 0;
  double timer_mean_sum = 0;

  struct Ref {
    std::int64_t t_intended_ns;
    std::size_t shard;
    std::uint64_t index;
    std::size_t pos;
  };
  std::vector<Ref> order;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const StepResult& r = shards[i].result;
    ShardSummary sum;
    sum.shard_index = shards[i].shard_index;
    sum.region = shards[i].region;
    sum.samples = r.samples.size();
    sum.completed = r.completed;
    sum.fatal_error = r.fatal_error;
    sum.client_cpu_utilisation = r.client_cpu_utilisation;
    sum.cpu = r.cpu;
    sum.dispatch_lag = r.dispatch_lag;
    sum.end_ns = r.end_ns;
    out.shards.push_back(sum);

    m.completed = m.completed && r.completed;
    m.cancelled = m.cancelled || r.cancelled;
    if (m.fatal_error.empty() && !r.fatal_error.empty())
      m.fatal_error = "shard " + std::to_string(shards[i].shard_index) + ": " + r.fatal_error;
    if (m.model.empty()) m.model = r.model;
    m.itl_ns.merge(r.itl_ns);
    m.dropped_arrivals += r.dropped_arrivals;
    m.connections_opened += r.connections_opened;
    add_counts(m.counts, r.counts);
    if (r.window_end_ns > r.window_start_ns || !r.samples.empty()) {
      if (first_window) {
        m.window_start_ns = r.window_start_ns;
        m.window_end_ns = r.window_end_ns;
        m.epoch_steady_ns = r.epoch_steady_ns;
        first_window = false;
      } else {
        m.window_start_ns = std::min(m.window_start_ns, r.window_start_ns);
        m.window_end_ns = std::max(m.window_end_ns, r.window_end_ns);
      }
    }
    m.end_ns = std::max(m.end_ns, r.end_ns);
    if (r.client_cpu_utilisation >= m.client_cpu_utilisation) {
      m.client_cpu_utilisation = r.client_cpu_utilisation;
      m.cpu = r.cpu;
    }
    m.timer_lag.count += r.timer_lag.count;
    timer_mean_sum += r.timer_lag.mean_ns * static_cast<double>(r.timer_lag.count);
    m.timer_lag.p50_ns = std::max(m.timer_lag.p50_ns, r.timer_lag.p50_ns);
    m.timer_lag.p99_ns = std::max(m.timer_lag.p99_ns, r.timer_lag.p99_ns);
    m.timer_lag.max_ns = std::max(m.timer_lag.max_ns, r.timer_lag.max_ns);

    const CalibrationInfo& c = r.calibration;
    if (!c.method.empty()) {
      if (m.calibration.method.empty()) {
        m.calibration.method = c.method;
        m.calibration.overhead_tokens = c.overhead_tokens;
        m.calibration.note = c.note;
      }
      tpw_initial += c.tokens_per_word_initial;
      tpw_final += c.tokens_per_word_final;
      ++calibrated;
    }
    const double n = static_cast<double>(c.samples_with_usage);
    m.calibration.samples_with_usage += c.samples_with_usage;
    planned_sum += c.planned_input_mean_tokens * n;
    real_sum += c.real_input_mean_tokens * n;
    abs_err_sum += c.mean_abs_error_tokens * n;

    for (std::size_t j = 0; j < r.samples.size(); ++j)
      order.push_back({r.samples[j].t_intended_ns, i, r.samples[j].index, j});
  }
  if (calibrated > 0) {
    m.calibration.tokens_per_word_initial = tpw_initial / calibrated;
    m.calibration.tokens_per_word_final = tpw_final / calibrated;
  }
  if (m.calibration.samples_with_usage > 0) {
    const double n = static_cast<double>(m.calibration.samples_with_usage);
    m.calibration.planned_input_mean_tokens = planned_sum / n;
    m.calibration.real_input_mean_tokens = real_sum / n;
    m.calibration.mean_abs_error_tokens = abs_err_sum / n;
  }
  if (m.timer_lag.count > 0)
    m.timer_lag.mean_ns = timer_mean_sum / static_cast<double>(m.timer_lag.count);

  std::sort(order.begin(), order.end(), [](const Ref& a, const Ref& b) {
    return std::tie(a.t_intended_ns, a.shard, a.index) <
           std::tie(b.t_intended_ns, b.shard, b.index);
  });
  m.samples.reserve(order.size());
  m.response_ids.reserve(order.size());
  out.sample_regions.reserve(order.size());
  std::vector<std::int64_t> lags, dispatch;
  for (const Ref& ref : order) {
    StepResult& r = shards[ref.shard].result;
    analysis::RequestSample s = std::move(r.samples[ref.pos]);
    s.index = m.samples.size();
    if (s.t_send_ns >= 0) {
      lags.push_back(s.t_send_ns - s.t_intended_ns);
      dispatch.push_back(s.t_send_ns - s.t_intended_ns - std::max<std::int64_t>(0, s.connect_ns) -
                         std::max<std::int64_t>(0, s.tls_ns));
    }
    m.samples.push_back(std::move(s));
    m.response_ids.push_back(ref.pos < r.response_ids.size() ? std::move(r.response_ids[ref.pos])
                                                             : std::string());
    out.sample_regions.push_back(shards[ref.shard].region);
  }
  m.schedule_lag = exact_lag_stats(std::move(lags));
  m.dispatch_lag = exact_lag_stats(std::move(dispatch));
  m.in_flight_series = sum_in_flight(shards, in_flight_grid_ns);
  return out;
}

}  // namespace llmcap::agent

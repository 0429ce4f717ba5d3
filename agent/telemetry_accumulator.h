// TelemetryAccumulator: turns the successive /metrics scrapes of one target during one step
// into stored points (the series that matter for known engines) and a step summary: peak KV
// usage, preemptions during the step, prefix-cache hit rate, running/queued requests, GPU
// power/temperature/clocks, and the server's own TTFT/TPOT percentiles from the histogram delta
// between the first and the last scrape (PromQL histogram_quantile semantics). It is the pure part
// of TelemetryScraper, separate so it can be tested with fixed text and times.
//
// Known engines and series (known_telemetry_series()): vLLM (vllm:*), SGLang (sglang:*), TGI
// (tgi_*), llama.cpp (llamacpp:*), NVIDIA DCGM exporter (DCGM_FI_*). Everything else in a
// scrape is ignored. Aggregation across label sets inside one scrape (several models, data-
// parallel ranks, several GPUs): counts of running/waiting requests, power and framebuffer use
// are summed; KV usage and temperature take the maximum; SM clock keeps min and max; GPU
// utilisation is averaged. Means over the step are plain means over the scrapes.
//
// Thread safety: none; one owner (the scraper thread) feeds it, results are read after.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/prometheus_text.h"

namespace llmcap::agent {

// One stored value: a row of telemetry_samples.
struct TelemetryPoint {
  std::int64_t t_ns = 0;  // relative to the step epoch (same clock as request samples)
  std::string series;     // sample name, e.g. "vllm:num_requests_running", "x_count"
  std::string labels;     // canonical 'k="v",...' (canonical_labels())
  double value = 0.0;     // finite or ±Inf; NaN samples are not stored
};

// Absent (nullopt) = the target did not export a series for it (or too few scrapes).
struct TelemetrySummary {
  std::size_t scrapes_ok = 0;
  std::size_t scrapes_failed = 0;
  std::vector<std::string> engines;  // sorted: "dcgm", "llamacpp", "sglang", "tgi", "vllm"
  std::size_t points_dropped = 0;    // beyond the max_points bound

  std::optional<double> kv_usage_max;  // fraction 0..1 (vLLM *_usage_perc is a fraction)
  std::optional<double> preemptions;   // counter increase over the step
  // Prefix cache (vLLM prefix_cache_queries / prefix_cache_hits, in prompt tokens): counter
  // increases over the step and their ratio (absent when nothing was queried).
  std::optional<double> prefix_cache_queries;
  std::optional<double> prefix_cache_hits;
  std::optional<double> prefix_cache_hit_rate;
  std::optional<double> running_max;  // requests in the running batch
  std::optional<double> running_mean;
  std::optional<double> waiting_max;  // requests queued in the server
  std::optional<double> waiting_mean;
  std::optional<double> power_w_mean;  // summed over GPUs
  std::optional<double> power_w_max;
  std::optional<double> gpu_temp_c_max;
  std::optional<double> sm_clock_mhz_min;  // a drop below max = throttling
  std::optional<double> sm_clock_mhz_max;
  std::optional<double> gpu_util_pct_mean;
  std::optional<double> fb_used_mib_max;
  std::optional<std::uint64_t> clock_throttle_reasons;  // OR of every DCGM bitmask seen
  // Server-side latency from histograms (first→last scrape delta); observation counts too.
  // Quantiles are interpolated within buckets (as PromQL's histogram_quantile, so only as fine
  // as the server's bucket bounds); the mean is exact (the _sum increase over the _count one).
  std::optional<double> server_ttft_p50_s;
  std::optional<double> server_ttft_p95_s;
  std::optional<double> server_ttft_mean_s;
  std::optional<double> server_ttft_count;
  std::optional<double> server_tpot_p50_s;
  std::optional<double> server_tpot_p95_s;
  std::optional<double> server_tpot_mean_s;
  std::optional<double> server_tpot_count;
};

// The summary as one JSON object (absent values as null), for the step's JSON.
std::string telemetry_summary_json(const TelemetrySummary& summary);

struct TelemetryAccumulatorOptions {
  std::size_t max_points = 500'000;     // bound on stored points per step
  bool keep_histogram_buckets = false;  // store every _bucket sample (else _sum/_count only)
};

enum class TelemetryRole {
  kOther,  // stored, not summarised
  kRunning,
  kWaiting,
  kKvUsage,
  kPreemptions,
  kPrefixQueries,
  kPrefixHits,
  kTtftHistogram,
  kTpotHistogram,
  kPower,
  kTemperature,
  kSmClock,
  kGpuUtil,
  kFbUsed,
  kThrottleReasons,
};

struct KnownSeries {
  std::string_view family;  // family name as exported
  std::string_view engine;
  TelemetryRole role;
};

// Every family the accumulator keeps.
const std::vector<KnownSeries>& known_telemetry_series();

class TelemetryAccumulator {
 public:
  explicit TelemetryAccumulator(TelemetryAccumulatorOptions options = {});

  // One successful scrape whose response was produced at t_ns (relative to the epoch).
  void add_scrape(std::int64_t t_ns, const ParsedExposition& scrape);
  void add_failure();

  const std::vector<TelemetryPoint>& points() const { return points_; }
  std::vector<TelemetryPoint> take_points() { return std::move(points_); }
  TelemetrySummary summary() const;

 private:
  struct Stat {
    std::size_t n = 0;
    double sum = 0.0;
    double min = 0.0;
    double max = 0.0;
    void add(double v);
  };
  TelemetryAccumulatorOptions options_;
  std::vector<TelemetryPoint> points_;
  std::size_t scrapes_ok_ = 0;
  std::size_t scrapes_failed_ = 0;
  std::size_t points_dropped_ = 0;
  std::vector<std::string> engines_;
  Stat running_, waiting_, kv_, power_, temp_, sm_min_, sm_max_, util_, fb_;
  std::optional<double> preempt_first_, preempt_last_;
  std::optional<double> prefix_queries_first_, prefix_queries_last_;
  std::optional<double> prefix_hits_first_, prefix_hits_last_;
  std::optional<std::uint64_t> throttle_;
  std::optional<HistogramData> ttft_first_, ttft_last_, tpot_first_, tpot_last_;
};

}  // namespace llmcap::agent

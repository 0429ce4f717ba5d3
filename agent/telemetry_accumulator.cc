#include "agent/telemetry_accumulator.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

namespace llmcap::agent {
namespace {

using R = TelemetryRole;

std::optional<double> mean(std::size_t n, double sum) {
  if (n == 0) return std::nullopt;
  return sum / static_cast<double>(n);
}

void put(nlohmann::json& j, const char* key, const std::optional<double>& v) {
  if (v && std::isfinite(*v)) {
    j[key] = *v;
  } else {
    j[key] = nullptr;
  }
}

}  // namespace

const std::vector<KnownSeries>& known_telemetry_series() {
  static const std::vector<KnownSeries> kSeries = {
      // vLLM (V0 and V1 names; gpu_cache_usage_perc is the pre-V1 name of kv_cache_usage_perc).
      {"vllm:num_requests_running", "vllm", R::kRunning},
      {"vllm:num_requests_waiting", "vllm", R::kWaiting},
      {"vllm:num_requests_swapped", "vllm", R::kOther},
      {"vllm:kv_cache_usage_perc", "vllm", R::kKvUsage},
      {"vllm:gpu_cache_usage_perc", "vllm", R::kKvUsage},
      {"vllm:num_preemptions_total", "vllm", R::kPreemptions},
      {"vllm:num_preemptions", "vllm", R::kPreemptions},  // OpenMetrics-style family name
      {"vllm:prompt_tokens_total", "vllm", R::kOther},
      // Prefix cache, in prompt tokens: V1 names, then the 0.8-0.9 gpu_ names (one per scrape).
      {"vllm:prefix_cache_queries_total", "vllm", R::kPrefixQueries},
      {"vllm:prefix_cache_queries", "vllm", R::kPrefixQueries},
      {"vllm:gpu_prefix_cache_queries_total", "vllm", R::kPrefixQueries},
      {"vllm:gpu_prefix_cache_queries", "vllm", R::kPrefixQueries},
      {"vllm:prefix_cache_hits_total", "vllm", R::kPrefixHits},
      {"vllm:prefix_cache_hits", "vllm", R::kPrefixHits},
      {"vllm:gpu_prefix_cache_hits_total", "vllm", R::kPrefixHits},
      {"vllm:gpu_prefix_cache_hits", "vllm", R::kPrefixHits},
      {"vllm:gpu_prefix_cache_hit_rate", "vllm", R::kOther},
      {"vllm:generation_tokens_total", "vllm", R::kOther},
      {"vllm:request_success_total", "vllm", R::kOther},
      {"vllm:time_to_first_token_seconds", "vllm", R::kTtftHistogram},
      {"vllm:time_per_output_token_seconds", "vllm", R::kTpotHistogram},
      {"vllm:e2e_request_latency_seconds", "vllm", R::kOther},
      {"vllm:request_queue_time_seconds", "vllm", R::kOther},
      // SGLang
      {"sglang:num_running_reqs", "sglang", R::kRunning},
      {"sglang:num_queue_reqs", "sglang", R::kWaiting},
      {"sglang:token_usage", "sglang", R::kKvUsage},
      {"sglang:num_used_tokens", "sglang", R::kOther},
      {"sglang:gen_throughput", "sglang", R::kOther},
      {"sglang:cache_hit_rate", "sglang", R::kOther},
      {"sglang:prompt_tokens_total", "sglang", R::kOther},
      {"sglang:generation_tokens_total", "sglang", R::kOther},
      {"sglang:time_to_first_token_seconds", "sglang", R::kTtftHistogram},
      {"sglang:inter_token_latency_seconds", "sglang", R::kTpotHistogram},
      {"sglang:time_per_output_token_seconds", "sglang", R::kTpotHistogram},
      {"sglang:e2e_request_latency_seconds", "sglang", R::kOther},
      // Hugging Face TGI
      {"tgi_batch_current_size", "tgi", R::kRunning},
      {"tgi_queue_size", "tgi", R::kWaiting},
      {"tgi_batch_current_max_tokens", "tgi", R::kOther},
      {"tgi_request_count", "tgi", R::kOther},
      {"tgi_request_success", "tgi", R::kOther},
      {"tgi_request_queue_duration", "tgi", R::kOther},
      {"tgi_request_mean_time_per_token_duration", "tgi", R::kTpotHistogram},
      {"tgi_batch_inference_duration", "tgi", R::kOther},
      // llama.cpp server (--metrics)
      {"llamacpp:requests_processing", "llamacpp", R::kRunning},
      {"llamacpp:requests_deferred", "llamacpp", R::kWaiting},
      {"llamacpp:kv_cache_usage_ratio", "llamacpp", R::kKvUsage},
      {"llamacpp:kv_cache_tokens", "llamacpp", R::kOther},
      {"llamacpp:prompt_tokens_total", "llamacpp", R::kOther},
      {"llamacpp:tokens_predicted_total", "llamacpp", R::kOther},
      {"llamacpp:prompt_tokens_seconds", "llamacpp", R::kOther},
      {"llamacpp:predicted_tokens_seconds", "llamacpp", R::kOther},
      // NVIDIA DCGM exporter
      {"DCGM_FI_DEV_GPU_UTIL", "dcgm", R::kGpuUtil},
      {"DCGM_FI_DEV_POWER_USAGE", "dcgm", R::kPower},
      {"DCGM_FI_DEV_GPU_TEMP", "dcgm", R::kTemperature},
      {"DCGM_FI_DEV_SM_CLOCK", "dcgm", R::kSmClock},
      {"DCGM_FI_DEV_MEM_CLOCK", "dcgm", R::kOther},
      {"DCGM_FI_DEV_FB_USED", "dcgm", R::kFbUsed},
      {"DCGM_FI_DEV_FB_FREE", "dcgm", R::kOther},
      {"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "dcgm", R::kThrottleReasons},
      {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "dcgm", R::kOther},
      {"DCGM_FI_DEV_MEM_COPY_UTIL", "dcgm", R::kOther},
  };
  return kSeries;
}

void TelemetryAccumulator::Stat::add(double v) {
  if (!std::isfinite(v)) return;
  if (n == 0) {
    min = max = v;
  } else {
    min = std::min(min, v);
    max = std::max(max, v);
  }
  ++n;
  sum += v;
}

TelemetryAccumulator::TelemetryAccumulator(TelemetryAccumulatorOptions options)
    : options_(options) {}

void TelemetryAccumulator::add_failure() { ++scrapes_failed_; }

void TelemetryAccumulator::add_scrape(std::int64_t t_ns, const ParsedExposition& scrape) {
  ++scrapes_ok_;
  // Per-scrape aggregates across label sets (see the header).
  struct Agg {
    std::size_t n = 0;
    double sum = 0.0, min = 0.0, max = 0.0;
    void add(double v) {
      if (!std::isfinite(v)) return;
      min = n == 0 ? v : std::min(min, v);
      max = n == 0 ? v : std::max(max, v);
      sum += v;
      ++n;
    }
  };
  Agg running, waiting, kv, preempt, power, temp, sm, util, fb, pq, ph;
  std::optional<std::uint64_t> throttle;
  bool ttft_seen = false;
  bool tpot_seen = false;
  std::string pq_family, ph_family;  // the first family seen per counter (no double counting)

  for (const KnownSeries& known : known_telemetry_series()) {
    const MetricFamily* family = scrape.find(known.family);
    if (family == nullptr || family->samples.empty()) continue;
    if (std::find(engines_.begin(), engines_.end(), known.engine) == engines_.end()) {
      engines_.emplace_back(known.engine);
      std::sort(engines_.begin(), engines_.end());
    }
    const bool is_histogram = family->type == MetricType::kHistogram;
    for (const PromSample& s : family->samples) {
      if (std::isnan(s.value)) continue;
      if (is_histogram && !options_.keep_histogram_buckets && s.name == family->name + "_bucket") {
        continue;
      }
      if (points_.size() >= options_.max_points) {
        ++points_dropped_;
      } else {
        points_.push_back({t_ns, s.name, canonical_labels(s.labels), s.value});
      }
      if (is_histogram) continue;
      switch (known.role) {
        case R::kRunning: running.add(s.value); break;
        case R::kWaiting: waiting.add(s.value); break;
        case R::kKvUsage: kv.add(s.value); break;
        case R::kPreemptions: preempt.add(s.value); break;
        case R::kPrefixQueries:
          if (pq_family.empty() || pq_family == family->name) {
            pq_family = family->name;
            pq.add(s.value);
          }
          break;
        case R::kPrefixHits:
          if (ph_family.empty() || ph_family == family->name) {
            ph_family = family->name;
            ph.add(s.value);
          }
          break;
        case R::kPower: power.add(s.value); break;
        case R::kTemperature: temp.add(s.value); break;
        case R::kSmClock: sm.add(s.value); break;
        case R::kGpuUtil: util.add(s.value); break;
        case R::kFbUsed: fb.add(s.value); break;
        case R::kThrottleReasons:
          if (std::isfinite(s.value) && s.value >= 0) {
            throttle = throttle.value_or(0) | static_cast<std::uint64_t>(s.value);
          }
          break;
        default: break;
      }
    }
    // Histograms: one per role per scrape (the first known family that has buckets).
    if (is_histogram && (known.role == R::kTtftHistogram || known.role == R::kTpotHistogram)) {
      const bool ttft = known.role == R::kTtftHistogram;
      if ((ttft && ttft_seen) || (!ttft && tpot_seen)) continue;
      auto h = aggregate_histogram(*family);
      if (!h) continue;
      auto& first = ttft ? ttft_first_ : tpot_first_;
      auto& last = ttft ? ttft_last_ : tpot_last_;
      if (!first) first = *h;
      last = std::move(*h);
      (ttft ? ttft_seen : tpot_seen) = true;
    }
  }
  if (running.n > 0) running_.add(running.sum);
  if (waiting.n > 0) waiting_.add(waiting.sum);
  if (kv.n > 0) kv_.add(kv.max);
  if (power.n > 0) power_.add(power.sum);
  if (temp.n > 0) temp_.add(temp.max);
  if (sm.n > 0) {
    sm_min_.add(sm.min);
    sm_max_.add(sm.max);
  }
  if (util.n > 0) util_.add(util.sum / static_cast<double>(util.n));
  if (fb.n > 0) fb_.add(fb.sum);
  if (preempt.n > 0) {
    if (!preempt_first_) preempt_first_ = preempt.sum;
    preempt_last_ = preempt.sum;
  }
  if (throttle) throttle_ = throttle_.value_or(0) | *throttle;
  if (pq.n > 0) {
    if (!prefix_queries_first_) prefix_queries_first_ = pq.sum;
    prefix_queries_last_ = pq.sum;
  }
  if (ph.n > 0) {
    if (!prefix_hits_first_) prefix_hits_first_ = ph.sum;
    prefix_hits_last_ = ph.sum;
  }
}

TelemetrySummary TelemetryAccumulator::summary() const {
  TelemetrySummary s;
  s.scrapes_ok = scrapes_ok_;
  s.scrapes_failed = scrapes_failed_;
  s.engines = engines_;
  s.points_dropped = points_dropped_;
  if (kv_.n > 0) s.kv_usage_max = kv_.max;
  if (preempt_first_ && preempt_last_) {
    // A counter reset (server restart) during the step: the new counter's value is the increase.
    s.preemptions =
        *preempt_last_ >= *preempt_first_ ? *preempt_last_ - *preempt_first_ : *preempt_last_;
  }
  // Counter increases; a reset (server restart) makes the new value the increase.
  const auto increase = [](const std::optional<double>& first,
                           const std::optional<double>& last) -> std::optional<double> {
    if (!first || !last) return std::nullopt;
    return *last >= *first ? *last - *first : *last;
  };
  s.prefix_cache_queries = increase(prefix_queries_first_, prefix_queries_last_);
  s.prefix_cache_hits = increase(prefix_hits_first_, prefix_hits_last_);
  if (s.prefix_cache_queries && s.prefix_cache_hits && *s.prefix_cache_queries > 0)
    s.prefix_cache_hit_rate = *s.prefix_cache_hits / *s.prefix_cache_queries;
  if (running_.n > 0) {
    s.running_max = running_.max;
    s.running_mean = mean(running_.n, running_.sum);
  }
  if (waiting_.n > 0) {
    s.waiting_max = waiting_.max;
    s.waiting_mean = mean(waiting_.n, waiting_.sum);
  }
  if (power_.n > 0) {
    s.power_w_mean = mean(power_.n, power_.sum);
    s.power_w_max = power_.max;
  }
  if (temp_.n > 0) s.gpu_temp_c_max = temp_.max;
  if (sm_min_.n > 0) s.sm_clock_mhz_min = sm_min_.min;
  if (sm_max_.n > 0) s.sm_clock_mhz_max = sm_max_.max;
  if (util_.n > 0) s.gpu_util_pct_mean = mean(util_.n, util_.sum);
  if (fb_.n > 0) s.fb_used_mib_max = fb_.max;
  s.clock_throttle_reasons = throttle_;
  // Server-side latency: only what was observed during the step, i.e. the histogram delta
  // between the first and the last scrape (one scrape alone says nothing about the step).
  if (ttft_first_ && ttft_last_ && scrapes_ok_ >= 2) {
    const HistogramData d = histogram_delta(*ttft_first_, *ttft_last_);
    s.server_ttft_count = d.count;
    s.server_ttft_p50_s = histogram_quantile(0.50, d);
    s.server_ttft_p95_s = histogram_quantile(0.95, d);
    if (d.count > 0) s.server_ttft_mean_s = d.sum / d.count;
  }
  if (tpot_first_ && tpot_last_ && scrapes_ok_ >= 2) {
    const HistogramData d = histogram_delta(*tpot_first_, *tpot_last_);
    s.server_tpot_count = d.count;
    s.server_tpot_p50_s = histogram_quantile(0.50, d);
    s.server_tpot_p95_s = histogram_quantile(0.95, d);
    if (d.count > 0) s.server_tpot_mean_s = d.sum / d.count;
  }
  return s;
}

std::string telemetry_summary_json(const TelemetrySummary& s) {
  nlohmann::json j;
  j["scrapes_ok"] = s.scrapes_ok;
  j["scrapes_failed"] = s.scrapes_failed;
  j["engines"] = s.engines;
  j["points_dropped"] = s.points_dropped;
  put(j, "kv_usage_max", s.kv_usage_max);
  put(j, "preemptions", s.preemptions);
  put(j, "prefix_cache_queries", s.prefix_cache_queries);
  put(j, "prefix_cache_hits", s.prefix_cache_hits);
  put(j, "prefix_cache_hit_rate", s.prefix_cache_hit_rate);
  put(j, "running_max", s.running_max);
  put(j, "running_mean", s.running_mean);
  put(j, "waiting_max", s.waiting_max);
  put(j, "waiting_mean", s.waiting_mean);
  put(j, "power_w_mean", s.power_w_mean);
  put(j, "power_w_max", s.power_w_max);
  put(j, "gpu_temp_c_max", s.gpu_temp_c_max);
  put(j, "sm_clock_mhz_min", s.sm_clock_mhz_min);
  put(j, "sm_clock_mhz_max", s.sm_clock_mhz_max);
  put(j, "gpu_util_pct_mean", s.gpu_util_pct_mean);
  put(j, "fb_used_mib_max", s.fb_used_mib_max);
  if (s.clock_throttle_reasons) {
    j["clock_throttle_reasons"] = *s.clock_throttle_reasons;
  } else {
    j["clock_throttle_reasons"] = nullptr;
  }
  put(j, "server_ttft_p50_s", s.server_ttft_p50_s);
  put(j, "server_ttft_p95_s", s.server_ttft_p95_s);
  put(j, "server_ttft_mean_s", s.server_ttft_mean_s);
  put(j, "server_ttft_count", s.server_ttft_count);
  put(j, "server_tpot_p50_s", s.server_tpot_p50_s);
  put(j, "server_tpot_p95_s", s.server_tpot_p95_s);
  put(j, "server_tpot_mean_s", s.server_tpot_mean_s);
  put(j, "server_tpot_count", s.server_tpot_count);
  return j.dump();
}

}  // namespace llmcap::agent

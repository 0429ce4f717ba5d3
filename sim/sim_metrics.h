// SimMetrics: the simulator's Prometheus metrics under vLLM's names (so dashboards and the
// load generator's scraper treat it like vLLM), every series labelled model_name. Created once
// per SimServer; handles cached. Times are wall-clock seconds as a client sees them
// (already divided by time_scale).
// Thread safety: prometheus-cpp metrics are thread-safe; serialize() may run concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace prometheus {
class Registry;
class Gauge;
class Counter;
class Histogram;
}  // namespace prometheus

namespace llmcap::sim {

class SimMetrics {
 public:
  explicit SimMetrics(const std::string& model_name);
  ~SimMetrics();
  SimMetrics(const SimMetrics&) = delete;
  SimMetrics& operator=(const SimMetrics&) = delete;

  void set_scheduler_state(std::int64_t running, std::int64_t waiting, double kv_usage);
  void add_preemptions(std::int64_t n);
  void add_prompt_tokens(std::int64_t n);
  void add_generation_tokens(std::int64_t n);
  void observe_ttft_s(double s);
  void observe_tpot_s(double s);
  void add_request_success();
  // Tokens looked up in / found in the prefix cache at admission (vllm:prefix_cache_queries_total,
  // vllm:prefix_cache_hits_total); also updates vllm:gpu_prefix_cache_hit_rate (cumulative).
  void add_prefix_cache(std::int64_t queries, std::int64_t hits);

  // Prometheus text exposition format (0.0.4).
  std::string serialize() const;

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Gauge* running_;
  prometheus::Gauge* waiting_;
  prometheus::Gauge* kv_usage_;
  prometheus::Counter* preemptions_;
  prometheus::Counter* prompt_tokens_;
  prometheus::Counter* generation_tokens_;
  prometheus::Counter* request_success_;
  prometheus::Counter* prefix_queries_;
  prometheus::Counter* prefix_hits_;
  prometheus::Gauge* prefix_hit_rate_;
  prometheus::Histogram* ttft_;
  prometheus::Histogram* tpot_;
};

}  // namespace llmcap::sim

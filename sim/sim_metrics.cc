#include "sim/sim_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

namespace llmcap::sim {

SimMetrics::SimMetrics(const std::string& model_name)
    : registry_(std::make_shared<prometheus::Registry>()) {
  const prometheus::Labels labels{{"model_name", model_name}};
  running_ = &prometheus::BuildGauge()
                  .Name("vllm:num_requests_running")
                  .Help("Number of requests in model execution batches.")
                  .Register(*registry_)
                  .Add(labels);
  waiting_ = &prometheus::BuildGauge()
                  .Name("vllm:num_requests_waiting")
                  .Help("Number of requests waiting to be processed.")
                  .Register(*registry_)
                  .Add(labels);
  kv_usage_ = &prometheus::BuildGauge()
                   .Name("vllm:kv_cache_usage_perc")
                   .Help("KV-cache usage. 1 means 100 percent usage.")
                   .Register(*registry_)
                   .Add(labels);
  preemptions_ = &prometheus::BuildCounter()
                      .Name("vllm:num_preemptions_total")
                      .Help("Cumulative number of preemptions from the engine.")
                      .Register(*registry_)
                      .Add(labels);
  prompt_tokens_ = &prometheus::BuildCounter()
                        .Name("vllm:prompt_tokens_total")
                        .Help("Number of prefill tokens processed.")
                        .Register(*registry_)
                        .Add(labels);
  generation_tokens_ = &prometheus::BuildCounter()
                            .Name("vllm:generation_tokens_total")
                            .Help("Number of generation tokens processed.")
                            .Register(*registry_)
                            .Add(labels);
  request_success_ = &prometheus::BuildCounter()
                          .Name("vllm:request_success_total")
                          .Help("Count of successfully processed requests.")
                          .Register(*registry_)
                          .Add(labels);
  prefix_queries_ = &prometheus::BuildCounter()
                         .Name("vllm:prefix_cache_queries_total")
                         .Help("Prefix cache queries, in terms of number of queried tokens.")
                         .Register(*registry_)
                         .Add(labels);
  prefix_hits_ = &prometheus::BuildCounter()
                      .Name("vllm:prefix_cache_hits_total")
                      .Help("Prefix cache hits, in terms of number of cached tokens.")
                      .Register(*registry_)
                      .Add(labels);
  // The V0 gauge, kept because dashboards still read it: hits / queries since start.
  prefix_hit_rate_ = &prometheus::BuildGauge()
                          .Name("vllm:gpu_prefix_cache_hit_rate")
                          .Help("GPU prefix cache block hit rate.")
                          .Register(*registry_)
                          .Add(labels);
  // vLLM's bucket boundaries for these two histograms.
  ttft_ = &prometheus::BuildHistogram()
               .Name("vllm:time_to_first_token_seconds")
               .Help("Histogram of time to first token in seconds.")
               .Register(*registry_)
               .Add(labels, prometheus::Histogram::BucketBoundaries{
                                0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
                                1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0});
  tpot_ = &prometheus::BuildHistogram()
               .Name("vllm:time_per_output_token_seconds")
               .Help("Histogram of time per output token in seconds.")
               .Register(*registry_)
               .Add(labels, prometheus::Histogram::BucketBoundaries{
                                0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0,
                                2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0});
}

SimMetrics::~SimMetrics() = default;

void SimMetrics::set_scheduler_state(std::int64_t running, std::int64_t waiting, double kv_usage) {
  running_->Set(static_cast<double>(running));
  waiting_->Set(static_cast<double>(waiting));
  kv_usage_->Set(kv_usage);
}

void SimMetrics::add_preemptions(std::int64_t n) {
  if (n > 0) preemptions_->Increment(static_cast<double>(n));
}
void SimMetrics::add_prompt_tokens(std::int64_t n) {
  if (n > 0) prompt_tokens_->Increment(static_cast<double>(n));
}
void SimMetrics::add_generation_tokens(std::int64_t n) {
  if (n > 0) generation_tokens_->Increment(static_cast<double>(n));
}
void SimMetrics::observe_ttft_s(double s) { ttft_->Observe(s); }
void SimMetrics::observe_tpot_s(double s) { tpot_->Observe(s); }
void SimMetrics::add_request_success() { request_success_->Increment(); }
void SimMetrics::add_prefix_cache(std::int64_t queries, std::int64_t hits) {
  if (queries <= 0 && hits <= 0) return;
  if (queries > 0) prefix_queries_->Increment(static_cast<double>(queries));
  if (hits > 0) prefix_hits_->Increment(static_cast<double>(hits));
  const double q = prefix_queries_->Value();
  prefix_hit_rate_->Set(q > 0 ? prefix_hits_->Value() / q : 0.0);
}

std::string SimMetrics::serialize() const {
  return prometheus::TextSerializer().Serialize(registry_->Collect());
}

}  // namespace llmcap::sim

#include "sim/sim_metrics.h"

#include <gtest/gtest.h>

namespace llmcap::sim {
namespace {

TEST(SimMetricsTest, VllmNamesWithModelLabel) {
  SimMetrics m("llama-3.1-8b");
  m.set_scheduler_state(3, 2, 0.5);
  m.add_preemptions(4);
  m.add_prompt_tokens(100);
  m.add_generation_tokens(7);
  m.observe_ttft_s(0.05);
  m.observe_tpot_s(0.02);
  const std::string text = m.serialize();
  EXPECT_NE(text.find("vllm:num_requests_running{model_name=\"llama-3.1-8b\"} 3"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("vllm:num_requests_waiting{model_name=\"llama-3.1-8b\"} 2"),
            std::string::npos);
  EXPECT_NE(text.find("vllm:kv_cache_usage_perc{model_name=\"llama-3.1-8b\"} 0.5"),
            std::string::npos);
  EXPECT_NE(text.find("vllm:num_preemptions_total{model_name=\"llama-3.1-8b\"} 4"),
            std::string::npos);
  EXPECT_NE(text.find("vllm:prompt_tokens_total{model_name=\"llama-3.1-8b\"} 100"),
            std::string::npos);
  EXPECT_NE(text.find("vllm:generation_tokens_total{model_name=\"llama-3.1-8b\"} 7"),
            std::string::npos);
  EXPECT_NE(text.find("vllm:time_to_first_token_seconds_count{model_name=\"llama-3.1-8b\"} 1"),
            std::string::npos);
  EXPECT_NE(
      text.find(
          "vllm:time_per_output_token_seconds_bucket{model_name=\"llama-3.1-8b\",le=\"0.025\"} 1"),
      std::string::npos);
}

}  // namespace
}  // namespace llmcap::sim

#include "analysis/model_spec.h"

#include <gtest/gtest.h>

#include <cmath>

#include "analysis/memory_fit.h"

namespace llmcap::analysis {
namespace {

// Mixtral-8x7B as its config.json describes it (sim/profiles/models.json).
ModelSpec mixtral() {
  ModelSpec m;
  m.name = "mixtral-8x7b";
  m.params = 46.70e9;
  m.layers = 32;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.ffn = 14336;
  m.vocab = 32000;
  m.max_context_tokens = 32768;
  m.experts = 8;
  m.experts_per_token = 2;
  m.expert_ffn = 14336;
  return m;
}

// The same shape without the router: a dense model of equal total size.
ModelSpec dense_twin() {
  ModelSpec m = mixtral();
  m.name = "dense-46.7b";
  m.experts = m.experts_per_token = m.expert_ffn = 0;
  return m;
}

TEST(ModelSpecMoeTest, ExpertAndActiveParametersFollowTheConfig) {
  const ModelSpec m = mixtral();
  EXPECT_TRUE(is_moe(m));
  EXPECT_FALSE(is_moe(dense_twin()));
  // One expert: gate, up and down projections of 4096 × 14336 in each of 32 layers.
  EXPECT_DOUBLE_EQ(expert_params(m), 3.0 * 4096 * 14336 * 32);
  // Mistral's announcement: 12.9B parameters used per token of 46.7B.
  EXPECT_NEAR(active_params(m), 12.9e9, 0.05e9);
  EXPECT_DOUBLE_EQ(active_params(dense_twin()), 46.70e9);
  EXPECT_DOUBLE_EQ(expert_params(dense_twin()), 0);
}

TEST(ModelSpecMoeTest, ExpectedDistinctExpertsFormula) {
  // E × (1 − (1 − k/E)^B), by hand.
  EXPECT_DOUBLE_EQ(expected_distinct_experts(8, 2, 1), 2.0);
  EXPECT_NEAR(expected_distinct_experts(8, 2, 2), 8 * (1 - 0.75 * 0.75), 1e-12);  // 3.5
  EXPECT_NEAR(expected_distinct_experts(8, 2, 8), 8 * (1 - std::pow(0.75, 8)), 1e-12);
  EXPECT_NEAR(expected_distinct_experts(128, 8, 1), 8.0, 1e-12);
  EXPECT_NEAR(expected_distinct_experts(128, 8, 16), 128 * (1 - std::pow(120.0 / 128, 16)), 1e-9);
  // Large batches touch every expert; top-k = E always does.
  EXPECT_GT(expected_distinct_experts(8, 2, 64), 7.999);
  EXPECT_GT(expected_distinct_experts(128, 8, 2048), 127.999);
  EXPECT_DOUBLE_EQ(expected_distinct_experts(8, 8, 3), 8.0);
  EXPECT_DOUBLE_EQ(expected_distinct_experts(8, 2, 0), 0.0);
  // Monotone in the batch.
  double previous = 0;
  for (int b = 1; b <= 64; ++b) {
    const double d = expected_distinct_experts(60, 4, b);
    EXPECT_GT(d, previous) << b;
    EXPECT_LE(d, 60.0);
    previous = d;
  }
}

TEST(ModelSpecMoeTest, ParamsReadPerStepGrowFromActiveToAll) {
  const ModelSpec m = mixtral();
  const double always = m.params - 8 * expert_params(m);
  // Batch-1 decode reads the always-active parameters and k experts: the active parameters.
  EXPECT_NEAR(params_read_per_step(m, 1), always + 2 * expert_params(m), 1);
  EXPECT_NEAR(params_read_per_step(m, 1), active_params(m), 1);
  // A 256-token step reads every expert: all parameters.
  EXPECT_NEAR(params_read_per_step(m, 256), m.params, 1e-6 * m.params);
  // A dense model always reads everything.
  EXPECT_DOUBLE_EQ(params_read_per_step(dense_twin(), 1), 46.70e9);
}

TEST(ModelSpecMoeTest, MemoryHoldsEveryExpert) {
  const ModelSpec m = mixtral();
  EXPECT_DOUBLE_EQ(weight_bytes(m, Dtype::kBf16), 46.70e9 * 2);
  EXPECT_DOUBLE_EQ(loaded_weight_bytes(m, Dtype::kBf16), 46.70e9 * 2);
  // Same weights and KV as the dense twin: only the reserve's MLP activations differ.
  HardwareSpec h100;
  h100.name = "h100-sxm";
  h100.memory_bytes = 79.19 * kBytesPerGiB;
  MemoryFitInput in;
  in.tensor_parallel = 2;
  const MemoryFit moe = estimate_memory_fit(m, h100, in);
  const MemoryFit dense = estimate_memory_fit(dense_twin(), h100, in);
  EXPECT_DOUBLE_EQ(moe.weight_bytes, 46.70e9);  // per GPU
  EXPECT_DOUBLE_EQ(moe.weight_bytes, dense.weight_bytes);
  EXPECT_DOUBLE_EQ(moe.kv_bytes_per_token, dense.kv_bytes_per_token);
  EXPECT_TRUE(moe.fits);
}

TEST(ModelSpecMoeTest, ReserveUsesTopKExpertWidths) {
  // The MLP activations of a token are those of its k experts (plus the shared experts).
  ModelSpec q;
  q.name = "qwen1.5-moe-a2.7b";
  q.params = 14.32e9;
  q.layers = 24;
  q.hidden = 2048;
  q.heads = q.kv_heads = 16;
  q.head_dim = 128;
  q.ffn = 5632;
  q.vocab = 1000;  // small, so the activation term decides the reserve
  q.experts = 60;
  q.experts_per_token = 4;
  q.expert_ffn = 1408;
  q.shared_expert_ffn = 5632;
  EXPECT_DOUBLE_EQ(active_ffn(q), 4 * 1408 + 5632);
  EXPECT_DOUBLE_EQ(active_ffn(dense_twin()), 14336);
  const double tokens = 2048;
  EXPECT_DOUBLE_EQ(non_kv_reserve_bytes(q, 2048, 256),
                   kNonTorchReserveBytes + tokens * 2 * (3.0 * (4 * 1408 + 5632) + 4.0 * 2048));
  EXPECT_DOUBLE_EQ(non_kv_reserve_bytes(q, 2048, 256, 2),
                   kNonTorchReserveBytes + tokens * 2 * (3.0 * (4 * 1408 + 5632) / 2 + 4.0 * 2048));
  // Mixtral: 2 experts of 14336, twice its dense twin's MLP activations.
  const ModelSpec m = mixtral();
  EXPECT_DOUBLE_EQ(non_kv_reserve_bytes(m, 2048, 256),
                   kNonTorchReserveBytes + tokens * 2 * (3.0 * 2 * 14336 + 4.0 * 4096));
}

}  // namespace
}  // namespace llmcap::analysis

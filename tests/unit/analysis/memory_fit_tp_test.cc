// Memory fit under tensor parallelism (analysis/memory_fit.h): per-GPU shards of the weights
// and of the KV heads, vLLM's layout checks, and the KV pool of the whole engine.
#include <gtest/gtest.h>

#include "analysis/memory_fit.h"

namespace llmcap::analysis {
namespace {

ModelSpec llama_70b() {
  ModelSpec m;
  m.name = "llama-3.1-70b";
  m.params = 70.6e9;
  m.layers = 80;
  m.hidden = 8192;
  m.heads = 64;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.ffn = 28672;
  m.vocab = 128256;
  m.max_context_tokens = 131072;
  return m;
}

HardwareSpec a100_80g() {
  HardwareSpec h;
  h.name = "a100-80g-sxm";
  h.memory_bytes = 79.15 * kBytesPerGiB;
  h.nominal_memory_gb = 80;
  h.bandwidth_bytes_per_s = 2039e9;
  h.bf16_tflops = 312;
  return h;
}

TEST(MemoryFitTensorParallel, LayoutChecksAreVllms) {
  const auto m = llama_70b();
  EXPECT_FALSE(tensor_parallel_problem(m, 1));
  EXPECT_FALSE(tensor_parallel_problem(m, 2));
  EXPECT_FALSE(tensor_parallel_problem(m, 8));
  EXPECT_FALSE(tensor_parallel_problem(m, 16));  // 8 KV heads, each on two GPUs
  const auto three = tensor_parallel_problem(m, 3);
  ASSERT_TRUE(three);
  EXPECT_NE(three->find("64 attention heads"), std::string::npos) << *three;
  EXPECT_TRUE(tensor_parallel_problem(m, 0));
  EXPECT_EQ(kv_heads_per_gpu(m, 4), 2);
  EXPECT_EQ(kv_heads_per_gpu(m, 8), 1);
  EXPECT_EQ(kv_heads_per_gpu(m, 16), 1);  // replicated
}

TEST(MemoryFitTensorParallel, WeightsAndKvAreShardedPerGpu) {
  const auto m = llama_70b();
  MemoryFitInput in;
  in.context_tokens = 4096;
  in.concurrency = 1;
  const auto one = estimate_memory_fit(m, a100_80g(), in);
  EXPECT_FALSE(one.weights_fit);  // 141 GB of BF16 weights on one 80 GB card
  in.tensor_parallel = 4;
  const auto four = estimate_memory_fit(m, a100_80g(), in);
  ASSERT_TRUE(four.weights_fit) << four.explanation;
  EXPECT_EQ(four.tensor_parallel, 4);
  EXPECT_DOUBLE_EQ(four.weight_bytes * 4, four.total_weight_bytes);
  EXPECT_DOUBLE_EQ(four.total_weight_bytes, one.total_weight_bytes);
  // 2 × 80 layers × 2 KV heads × 128 × 2 bytes per token on each GPU.
  EXPECT_DOUBLE_EQ(four.kv_bytes_per_token, 2.0 * 80 * 2 * 128 * 2);
  // The pool in tokens: each GPU's pool over each GPU's bytes per token.
  const double left =
      0.9 * a100_80g().memory_bytes - four.weight_bytes - four.activation_reserve_bytes;
  EXPECT_EQ(four.kv_pool_tokens,
            static_cast<std::int64_t>(left / (four.kv_bytes_per_token * 16)) * 16);
  EXPECT_NE(four.explanation.find("4 × a100-80g-sxm (tensor parallel; per GPU)"), std::string::npos)
      << four.explanation;
  // Twice the GPUs: half the weights per GPU and half the KV heads, so more than twice the
  // tokens (the freed weight memory joins the pool).
  in.tensor_parallel = 8;
  const auto eight = estimate_memory_fit(m, a100_80g(), in);
  EXPECT_GT(eight.kv_pool_tokens, 2 * four.kv_pool_tokens);
}

TEST(MemoryFitTensorParallel, ReserveSplitsTheMlpOnly) {
  const auto m = llama_70b();
  const double one = non_kv_reserve_bytes(m, 2048, 256, 1);
  const double four = non_kv_reserve_bytes(m, 2048, 256, 4);
  EXPECT_LT(four, one);
  // The sampler's full-vocabulary logits (gathered on the driver GPU) bound it from below.
  const double sampler = 256.0 * 128256 * 4 * kSamplerLogitCopies;
  EXPECT_GE(four, kNonTorchReserveBytes + sampler - 1);
}

TEST(MemoryFitTensorParallel, ARefusedLayoutFitsNothing) {
  MemoryFitInput in;
  in.tensor_parallel = 3;
  const auto fit = estimate_memory_fit(llama_70b(), a100_80g(), in);
  EXPECT_FALSE(fit.fits);
  EXPECT_FALSE(fit.weights_fit);
  EXPECT_NE(fit.explanation.find("does not divide"), std::string::npos) << fit.explanation;
}

}  // namespace
}  // namespace llmcap::analysis

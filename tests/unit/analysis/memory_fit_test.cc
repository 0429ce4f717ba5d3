// Hand-calculated checks of the memory-fit arithmetic (docs/metrics.md §7, §11).
#include "analysis/memory_fit.h"

#include <gtest/gtest.h>

namespace llmcap::analysis {
namespace {

ModelSpec llama_8b() {
  ModelSpec m;
  m.name = "llama-3.1-8b";
  m.params = 8.03e9;
  m.layers = 32;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.ffn = 14336;
  m.vocab = 128256;
  m.max_context_tokens = 131072;
  m.activation_reserve_bytes = 4.0 * kBytesPerGiB;
  return m;
}

HardwareSpec gpu(double memory_gb) {
  HardwareSpec h;
  h.name = "test-gpu";
  h.memory_bytes = memory_gb * 1e9;
  h.bandwidth_bytes_per_s = 1008e9;
  h.bf16_tflops = 165;
  h.fp8_tflops = 330;
  return h;
}

TEST(ModelSpecTest, DtypeParseAndBytes) {
  EXPECT_EQ(parse_dtype("bf16"), Dtype::kBf16);
  EXPECT_EQ(parse_dtype("int4"), Dtype::kInt4);
  EXPECT_FALSE(parse_dtype("int3").has_value());
  EXPECT_EQ(to_string(Dtype::kFp8), "fp8");
  EXPECT_DOUBLE_EQ(bytes_per_param(Dtype::kFp16), 2.0);
  EXPECT_DOUBLE_EQ(bytes_per_param(Dtype::kInt8), 1.0);
  EXPECT_DOUBLE_EQ(bytes_per_param(Dtype::kInt4), 0.53125);  // 0.5 + 2*2/128
}

TEST(ModelSpecTest, ComputeRateByDtype) {
  HardwareSpec h = gpu(24);
  EXPECT_DOUBLE_EQ(compute_flops_per_s(h, Dtype::kBf16), 165e12);
  EXPECT_DOUBLE_EQ(compute_flops_per_s(h, Dtype::kFp8), 330e12);
  EXPECT_DOUBLE_EQ(compute_flops_per_s(h, Dtype::kInt4), 165e12);  // weight-only
  h.fp8_tflops = 0;  // Ampere: fp8 weights dequantised to bf16
  EXPECT_DOUBLE_EQ(compute_flops_per_s(h, Dtype::kFp8), 165e12);
}

TEST(MemoryFitTest, KvBytesPerTokenLlama8b) {
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(llama_8b()), 131072.0);  // 2*32*8*128*2 = 128 KiB
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(llama_8b(), 1.0), 65536.0);
}

TEST(MemoryFitTest, WeightsOf8bAtBf16) {
  EXPECT_NEAR(to_gb(weight_bytes(llama_8b(), Dtype::kBf16)), 16.06, 1e-9);
  EXPECT_NEAR(to_gb(weight_bytes(llama_8b(), Dtype::kInt4)), 8.03 * 0.53125, 1e-9);
}

TEST(MemoryFitTest, Request8192TokensIsOneGiB) {
  MemoryFitInput in;
  in.context_tokens = 8192;
  const MemoryFit fit = estimate_memory_fit(llama_8b(), gpu(80), in);
  EXPECT_DOUBLE_EQ(fit.kv_bytes_per_request, kBytesPerGiB);
  EXPECT_EQ(fit.blocks_per_request, 512);
}

TEST(MemoryFitTest, PoolAndConcurrencyOn80GB) {
  MemoryFitInput in;
  in.context_tokens = 8192;
  in.concurrency = 32;
  const MemoryFit fit = estimate_memory_fit(llama_8b(), gpu(80), in);
  // 0.9 * 80e9 = 72e9; minus 16.06e9 weights, minus 4 GiB reserve.
  const double pool = 72e9 - 16.06e9 - 4.0 * kBytesPerGiB;
  EXPECT_NEAR(fit.kv_pool_bytes, pool, 1.0);
  const auto blocks = static_cast<std::int64_t>(pool / (131072.0 * 16));
  EXPECT_EQ(fit.kv_pool_blocks, blocks);
  EXPECT_EQ(fit.kv_pool_tokens, blocks * 16);
  EXPECT_EQ(fit.max_concurrent_sequences, blocks / 512);  // ≈ 48 GiB / 1 GiB
  EXPECT_EQ(fit.max_concurrent_sequences, 48);
  EXPECT_TRUE(fit.fits);
  in.concurrency = 49;
  EXPECT_FALSE(estimate_memory_fit(llama_8b(), gpu(80), in).fits);
}

TEST(MemoryFitTest, ContextRoundsUpToBlocks) {
  MemoryFitInput in;
  in.context_tokens = 17;
  const MemoryFit fit = estimate_memory_fit(llama_8b(), gpu(48), in);
  EXPECT_EQ(fit.blocks_per_request, 2);
  EXPECT_DOUBLE_EQ(fit.kv_bytes_per_request, 32 * 131072.0);
}

TEST(MemoryFitTest, WeightsDoNotFit) {
  ModelSpec big = llama_8b();
  big.params = 70.6e9;
  MemoryFitInput in;
  const MemoryFit fit = estimate_memory_fit(big, gpu(48), in);
  EXPECT_FALSE(fit.weights_fit);
  EXPECT_FALSE(fit.fits);
  EXPECT_EQ(fit.kv_pool_blocks, 0);
  EXPECT_NE(fit.explanation.find("do not fit"), std::string::npos);
  EXPECT_NE(fit.explanation.find("141.20 GB"), std::string::npos);  // weights in GB
  // No negative pool (issue 22: "KV pool -127.12 GB"): the pool is empty and the shortfall is
  // its own figure, 141.2e9 + 4 GiB − 0.9 × 48e9. The budget share reads "90%", not "0.900000".
  EXPECT_DOUBLE_EQ(fit.kv_pool_bytes, 0);
  EXPECT_NEAR(fit.shortfall_bytes, 141.2e9 + 4 * 1024.0 * 1024 * 1024 - 0.9 * 48e9, 1e3);
  EXPECT_EQ(fit.explanation.find(" -"), std::string::npos) << fit.explanation;  // no negative
  EXPECT_NE(fit.explanation.find("(90% of"), std::string::npos) << fit.explanation;
  EXPECT_EQ(fit.explanation.find("0.900000"), std::string::npos) << fit.explanation;
}

TEST(MemoryFitTest, OneLongSequenceDoesNotFitOn24GB) {
  MemoryFitInput in;
  in.context_tokens = 131072;  // 16 GiB of KV
  const MemoryFit fit = estimate_memory_fit(llama_8b(), gpu(24), in);
  EXPECT_TRUE(fit.weights_fit);
  EXPECT_FALSE(fit.one_sequence_fits);
  EXPECT_NE(fit.explanation.find("one full-length sequence does not fit"), std::string::npos);
}

TEST(MemoryFitTest, ExplicitReserveOverridesModel) {
  MemoryFitInput in;
  in.activation_reserve_bytes = 0;
  const MemoryFit fit = estimate_memory_fit(llama_8b(), gpu(24), in);
  EXPECT_NEAR(fit.kv_pool_bytes, 21.6e9 - 16.06e9, 1.0);
}

}  // namespace
}  // namespace llmcap::analysis

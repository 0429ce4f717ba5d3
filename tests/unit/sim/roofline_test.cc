#include "sim/roofline.h"

#include <gtest/gtest.h>

#include "sim/profile_catalog.h"

namespace llmcap::sim {
namespace {

TEST(RooflineTest, Batch1DecodeIsWeightsOverEffectiveBandwidthPlusOverhead) {
  const ProfileCatalog c = ProfileCatalog::builtin();
  const auto model = *c.model("llama-3.1-8b");
  for (const std::string& gpu : c.hardware_names()) {
    const auto hw = *c.hardware(gpu);
    const Roofline r(model, hw, analysis::Dtype::kBf16);
    const StepCost cost = r.decode(1, 0);
    // Hand calculation: 16.06e9 bytes / (bandwidth × 0.8) + 2 ms.
    const double expected = 16.06e9 / (hw.bandwidth_bytes_per_s * 0.8) + 0.002;
    EXPECT_NEAR(cost.total_s, expected, expected * 1e-4) << gpu;
    EXPECT_GT(cost.memory_s, cost.compute_s) << gpu;  // decode is memory-bound
  }
}

TEST(RooflineTest, HandNumbersFor4090) {
  const ProfileCatalog c = ProfileCatalog::builtin();
  const Roofline r(*c.model("llama-3.1-8b"), *c.hardware("rtx4090-48g"), analysis::Dtype::kBf16);
  // 16.06e9 / 806.4e9 = 19.916 ms, + 2 ms.
  EXPECT_NEAR(r.decode(1, 0).total_s * 1000, 21.916, 0.01);
  // 32 sequences at 1024 cached tokens: bytes = weights + 32 × 1025 × 131072.
  const StepCost c32 = r.decode(32, 1024);
  EXPECT_DOUBLE_EQ(c32.bytes, 16.06e9 + 32.0 * 1025 * 131072);
  // A 2048-token prefill is compute-bound: 2 × 8.03e9 × 2048 + attention.
  const SeqWork prefill{2048, 0};
  const StepCost p = r.step(std::span<const SeqWork>(&prefill, 1));
  const double attention = 4.0 * 32 * 32 * 128 * (2048.0 * 2049 / 2);
  EXPECT_DOUBLE_EQ(p.flops, 2 * 8.03e9 * 2048 + attention);
  EXPECT_NEAR(p.compute_s, p.flops / (165e12 * 0.75), 1e-12);
  EXPECT_GT(p.compute_s, p.memory_s);
  EXPECT_NEAR(p.total_s, p.compute_s + 0.002, 1e-12);
}

TEST(RooflineTest, DtypeChangesBytesAndRate) {
  const ProfileCatalog c = ProfileCatalog::builtin();
  const auto m = *c.model("llama-3.1-8b");
  const auto h100 = *c.hardware("h100-sxm");
  const Roofline bf16(m, h100, analysis::Dtype::kBf16);
  const Roofline int4(m, h100, analysis::Dtype::kInt4);
  EXPECT_NEAR(int4.weight_bytes(), 8.03e9 * 0.53125, 1);
  EXPECT_LT(int4.decode(1, 0).total_s, bf16.decode(1, 0).total_s);
  const Roofline fp8(m, h100, analysis::Dtype::kFp8);
  const SeqWork prefill{4096, 0};
  EXPECT_NEAR(bf16.step(std::span<const SeqWork>(&prefill, 1)).compute_s /
                  fp8.step(std::span<const SeqWork>(&prefill, 1)).compute_s,
              1979.0 / 989.0, 1e-9);
}

TEST(RooflineTest, EmptyBatchCostsNothing) {
  const ProfileCatalog c = ProfileCatalog::builtin();
  const Roofline r(*c.model("qwen2.5-7b"), *c.hardware("l40s"), analysis::Dtype::kBf16);
  EXPECT_EQ(r.step({}).total_s, 0);
}

}  // namespace
}  // namespace llmcap::sim

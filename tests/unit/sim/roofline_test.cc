#include "sim/roofline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "sim/profile_catalog.h"

namespace llmcap::sim {
namespace {

// The smooth roofline of sim/README.md: the larger bound plus the smaller squared over it.
double roof(double m, double c) {
  const double hi = std::max(m, c), lo = std::min(m, c);
  return hi + lo * lo / hi;
}

TEST(RooflineTest, Batch1DecodeIsWeightsOverEffectiveBandwidthPlusEngineCosts) {
  const ProfileCatalog c = ProfileCatalog::builtin();
  const auto model = *c.model("llama-3.1-8b");
  const EngineProfile vllm = *engine_profile("vllm");
  for (const std::string& gpu : c.hardware_names()) {
    const auto hw = *c.hardware(gpu);
    const Roofline r(model, hw, analysis::Dtype::kBf16);
    const StepCost cost = r.decode(1, 1000);
    // Hand calculation: weights (16.06e9 bytes) and 1001 tokens of KV at bandwidth × 0.8, the
    // 2 × 8.03e9 FLOPs of one token folded in by the smooth roofline, plus vLLM's per-step and
    // per-sequence costs.
    const double bw = hw.bandwidth_bytes_per_s * 0.8;
    const double gemm = roof(16.06e9 / bw, 2 * 8.03e9 / (hw.bf16_tflops * 1e12 * 0.75));
    const double attention =
        roof(1001.0 * 131072 / bw, 4.0 * 32 * 32 * 128 * 1000 / (hw.bf16_tflops * 1e12 * 0.75));
    const double expected = gemm + attention + vllm.step_overhead_s + vllm.per_seq_s;
    EXPECT_NEAR(cost.total_s, expected, expected * 1e-6) << gpu;
    EXPECT_GT(cost.memory_s, 50 * cost.compute_s) << gpu;  // decode is memory-bound
  }
}

TEST(RooflineTest, HandNumbersFor4090) {
  const ProfileCatalog c = ProfileCatalog::builtin();
  const Roofline r(*c.model("llama-3.1-8b"), *c.hardware("rtx4090-48g"), analysis::Dtype::kBf16);
  // 16.06e9 / 806.4e9 = 19.916 ms of weights; one token's 16.06 GFLOP at 123.75 TFLOP/s adds
  // 0.130² / 19.916 ms; 0.5 ms step + 0.08 ms sequence.
  EXPECT_NEAR(r.decode(1, 1).total_s * 1000,
              19.916 + 0.13 * 0.13 / 19.916 + 0.5 + 0.08 + 2 * 131072 / 806.4e9 * 1000, 0.01);
  // 32 sequences at 1024 cached tokens: bytes = weights + 32 × 1025 × 131072.
  const StepCost c32 = r.decode(32, 1024);
  EXPECT_DOUBLE_EQ(c32.bytes, 16.06e9 + 32.0 * 1025 * 131072);
  EXPECT_NEAR(c32.attention_s,
              roof(32.0 * 1025 * 131072 / 806.4e9, 4.0 * 32 * 32 * 128 * 32 * 1025 / 123.75e12),
              1e-12);
  EXPECT_NEAR(c32.overhead_s, 0.0005 + 32 * 0.00008, 1e-12);  // no new request
  // A 2048-token prefill is compute-bound: 2 × 8.03e9 × 2048 + attention; the admission cost
  // is paid once because the request starts in this step.
  const SeqWork prefill{2048, 0};
  const StepCost p = r.step(std::span<const SeqWork>(&prefill, 1));
  const double attention = 4.0 * 32 * 32 * 128 * (2048.0 * 2049 / 2);
  EXPECT_DOUBLE_EQ(p.flops, 2 * 8.03e9 * 2048 + attention);
  const double gemm_c = 2 * 8.03e9 * 2048 / (165e12 * 0.75);
  EXPECT_NEAR(p.gemm_s, roof(16.06e9 / 806.4e9, gemm_c), 1e-12);
  EXPECT_GT(p.compute_s, p.memory_s);
  EXPECT_NEAR(p.overhead_s, 0.0005 + 0.00008 + 0.001, 1e-12);
  EXPECT_NEAR(p.total_s, p.gemm_s + p.attention_s + p.overhead_s, 1e-12);
}

TEST(RooflineTest, SmoothRooflineAddsTheSmallerBoundOnlyNearTheRidge) {
  const ProfileCatalog c = ProfileCatalog::builtin();
  const Roofline r(*c.model("llama-2-7b"), *c.hardware("a100-80g-sxm"), analysis::Dtype::kFp16, 2.0,
                   *engine_profile("trt-llm"));
  // 128 tokens on an A100: weights 13.48 GB at 1631 GB/s ≈ 8.3 ms, GEMMs 1.73 TFLOP at 234
  // TFLOP/s ≈ 7.4 ms: near the ridge the step takes nearly their sum (TensorRT-LLM: 16 ms).
  const SeqWork p128{128, 0};
  const StepCost s128 = r.step(std::span<const SeqWork>(&p128, 1));
  const double m = 6.74e9 * 2 / (2039e9 * 0.8);
  const double cpt = 2 * 6.74e9 * 128 / (312e12 * 0.75);
  EXPECT_NEAR(s128.gemm_s, m + cpt * cpt / m, 1e-12);
  EXPECT_GT(s128.gemm_s, 0.85 * (m + cpt));
  // Far from it (a batch of 4096 tokens) the compute bound alone, within 3 %.
  const SeqWork p4k{4096, 0};
  const StepCost s4k = r.step(std::span<const SeqWork>(&p4k, 1));
  EXPECT_LT(s4k.gemm_s, 1.03 * 2 * 6.74e9 * 4096 / (312e12 * 0.75));
}

TEST(RooflineTest, DtypeChangesBytesAndRateWithTheGenerationsEfficiency) {
  const ProfileCatalog c = ProfileCatalog::builtin();
  const auto m = *c.model("llama-3.1-8b");
  const auto h100 = *c.hardware("h100-sxm");
  const Roofline bf16(m, h100, analysis::Dtype::kBf16);
  const Roofline int4(m, h100, analysis::Dtype::kInt4);
  EXPECT_NEAR(int4.weight_bytes(), 8.03e9 * 0.53125, 1);
  EXPECT_LT(int4.decode(1, 0).total_s, bf16.decode(1, 0).total_s);
  const Roofline fp8(m, h100, analysis::Dtype::kFp8);
  // Hopper FP8 GEMMs reach 0.45 of the FP8 peak, BF16 0.75 of the BF16 peak.
  EXPECT_NEAR(bf16.gemm_flops_per_s(), 989e12 * 0.75, 1);
  EXPECT_NEAR(fp8.gemm_flops_per_s(), 1979e12 * 0.45, 1);
  const auto l40s = *c.hardware("l40s");
  EXPECT_NEAR(Roofline(m, l40s, analysis::Dtype::kFp8).gemm_flops_per_s(), 733e12 * 0.62, 1);
  // Ampere has no FP8 tensor cores: fp8 weights are dequantised and computed in BF16.
  const auto a100 = *c.hardware("a100-80g-pcie");
  EXPECT_NEAR(Roofline(m, a100, analysis::Dtype::kFp8).gemm_flops_per_s(), 312e12 * 0.75, 1);
}

TEST(RooflineTest, EnginesDifferInTheirCpuCostsOnly) {
  const ProfileCatalog c = ProfileCatalog::builtin();
  const auto m = *c.model("llama-3.1-8b");
  const auto hw = *c.hardware("a100-80g-pcie");
  EXPECT_EQ(engine_names(),
            (std::vector<std::string>{"vllm", "vllm-2024", "trt-llm", "sglang", "llama.cpp"}));
  EXPECT_FALSE(engine_profile("tgi"));
  const Roofline vllm(m, hw, analysis::Dtype::kBf16);
  EXPECT_EQ(vllm.engine().name, "vllm");
  const Roofline v0(m, hw, analysis::Dtype::kBf16, 2.0, *engine_profile("vllm-2024"));
  const StepCost a = vllm.decode(64, 512), b = v0.decode(64, 512);
  EXPECT_DOUBLE_EQ(a.gemm_s, b.gemm_s);
  EXPECT_DOUBLE_EQ(a.attention_s, b.attention_s);
  EXPECT_NEAR(b.overhead_s - a.overhead_s, (0.002 - 0.0005) + 64 * (0.00015 - 0.00008), 1e-12);
  // A profile's step_overhead_ms overrides the engine's.
  auto fixed = hw;
  fixed.step_overhead_s = 0.004;
  EXPECT_NEAR(Roofline(m, fixed, analysis::Dtype::kBf16).decode(1, 8).overhead_s, 0.004 + 0.00008,
              1e-12);
}

TEST(RooflineTest, TensorParallelSplitsTheWorkAndAddsTwoAllReducesPerLayer) {
  const ProfileCatalog c = ProfileCatalog::builtin();
  const auto model = *c.model("llama-3.1-70b");
  const auto sxm = *c.hardware("a100-80g-sxm");
  const Roofline one(model, sxm, analysis::Dtype::kFp8, 2.0, *engine_profile("vllm"), 1);
  const Roofline four(model, sxm, analysis::Dtype::kFp8, 2.0, *engine_profile("vllm"), 4);
  EXPECT_EQ(four.tensor_parallel(), 4);
  EXPECT_DOUBLE_EQ(four.weight_bytes() * 4, one.weight_bytes());
  EXPECT_DOUBLE_EQ(four.kv_bytes_per_token() * 4, one.kv_bytes_per_token());  // 8 KV heads / 4
  const StepCost a = one.decode(16, 2000);
  const StepCost b = four.decode(16, 2000);
  EXPECT_EQ(a.communication_s, 0);
  // Hand calculation: 2 × 80 layers × (8 µs + 16 tokens × 8192 × 2 B × 2 × 3/4 / 230 GB/s).
  const double per_allreduce = 8e-6 + 16.0 * 8192 * 2 * 2 * 0.75 / 230e9;
  EXPECT_NEAR(b.communication_s, 2 * 80 * per_allreduce, 1e-12);
  EXPECT_NEAR(b.total_s, b.gemm_s + b.attention_s + b.overhead_s + b.communication_s, 1e-15);
  // Each GPU streams a quarter of the weights and KV: the GPU part of the step is about 4×
  // shorter, the all-reduces and the engine's CPU costs are not.
  EXPECT_NEAR((a.gemm_s + a.attention_s) / (b.gemm_s + b.attention_s), 4.0, 0.05);
  EXPECT_LT(b.total_s, a.total_s / 2);

  // The same split over GeForce PCIe (no peer-to-peer): a far larger all-reduce term.
  const auto pcie = *c.hardware("rtx4090-48g");
  const Roofline two(model, pcie, analysis::Dtype::kFp8, 2.0, *engine_profile("vllm"), 2);
  const StepCost d = two.decode(16, 2000);
  EXPECT_NEAR(d.communication_s,
              2 * 80 *
                  (pcie.allreduce_latency_us * 1e-6 +
                   16.0 * 8192 * 2 * 2 * 0.5 / (pcie.allreduce_bus_gbps * 1e9)),
              1e-12);
  EXPECT_GT(d.communication_s, 3 * b.communication_s);
}

TEST(RooflineTest, EmptyBatchCostsNothing) {
  const ProfileCatalog c = ProfileCatalog::builtin();
  const Roofline r(*c.model("qwen2.5-7b"), *c.hardware("l40s"), analysis::Dtype::kBf16);
  EXPECT_EQ(r.step({}).total_s, 0);
}

// Mixture of experts (sim/README.md "Mixture of experts"): compute from the active parameters,
// weight reads from the experts a step's tokens touch.
analysis::ModelSpec dense_twin(analysis::ModelSpec m) {
  m.name += "-dense";
  m.experts = m.experts_per_token = m.expert_ffn = m.shared_expert_ffn = 0;
  return m;
}

TEST(RooflineMoeTest, CatalogueHasMoeModelsWithTheirPublishedActiveCounts) {
  const ProfileCatalog c = ProfileCatalog::builtin();
  const auto mixtral = *c.model("mixtral-8x7b");
  const auto qwen3 = *c.model("qwen3-30b-a3b");
  const auto qwen15 = *c.model("qwen1.5-moe-a2.7b");
  EXPECT_NEAR(analysis::active_params(mixtral), 12.9e9, 0.1e9);
  EXPECT_NEAR(analysis::active_params(qwen3), 3.3e9, 0.1e9);
  EXPECT_NEAR(analysis::active_params(qwen15), 2.7e9, 0.1e9);
  EXPECT_EQ(qwen3.experts, 128);
  EXPECT_EQ(qwen3.experts_per_token, 8);
  EXPECT_NE(c.listing().find("mixture of experts: 8 experts, 2 per token, 12.88B active"),
            std::string::npos)
      << c.listing();
}

TEST(RooflineMoeTest, FlopsAreActiveParamsAndBatch1DecodeReadsTopKExperts) {
  const ProfileCatalog c = ProfileCatalog::builtin();
  const auto m = *c.model("mixtral-8x7b");
  const auto hw = *c.hardware("h100-sxm");
  const Roofline moe(m, hw, analysis::Dtype::kBf16);
  const Roofline dense(dense_twin(m), hw, analysis::Dtype::kBf16);
  const double expert = analysis::expert_params(m);
  const double always = m.params - 8 * expert;

  const StepCost one = moe.decode(1, 100);
  const StepCost one_dense = dense.decode(1, 100);
  // Weights held: all of them; read at batch 1: the always-active part and 2 experts.
  EXPECT_DOUBLE_EQ(moe.weight_bytes(), m.params * 2);
  EXPECT_NEAR(one.weight_bytes_read, (always + 2 * expert) * 2, 1e3);
  EXPECT_DOUBLE_EQ(one_dense.weight_bytes_read, m.params * 2);
  // GEMM FLOPs: 2 × active params per token; attention is the dense twin's.
  const double attention_flops = one_dense.flops - 2 * m.params;
  EXPECT_NEAR(one.flops - attention_flops, 2 * analysis::active_params(m), 1e3);
  // Decode is memory-bound, so a token costs about active / total of the dense time.
  EXPECT_LT(one.total_s, 0.35 * one_dense.total_s);

  // A 64-sequence decode step touches every expert: the same weight reads as the dense twin,
  // but still a quarter of its FLOPs.
  const StepCost wide = moe.decode(64, 100);
  const StepCost wide_dense = dense.decode(64, 100);
  EXPECT_NEAR(wide.weight_bytes_read, m.params * 2, 1e-4 * m.params);
  EXPECT_NEAR((wide.flops - (wide_dense.flops - 2 * m.params * 64)) / (2 * m.params * 64),
              analysis::active_params(m) / m.params, 1e-9);
  // Between: batch 4 reads the expected distinct experts of 8 top-2 at 4 tokens.
  const StepCost four = moe.decode(4, 100);
  EXPECT_NEAR(four.weight_bytes_read, (always + 8 * (1 - std::pow(0.75, 4)) * expert) * 2, 1e3);
}

TEST(RooflineMoeTest, TensorParallelSplitsExpertsToo) {
  const ProfileCatalog c = ProfileCatalog::builtin();
  const auto m = *c.model("mixtral-8x7b");
  const auto hw = *c.hardware("h100-sxm");
  const Roofline one(m, hw, analysis::Dtype::kBf16);
  const Roofline two(m, hw, analysis::Dtype::kBf16, 2.0, *engine_profile("vllm"), 2);
  for (int batch : {1, 3, 32}) {
    const StepCost a = one.decode(batch, 500);
    const StepCost b = two.decode(batch, 500);
    EXPECT_NEAR(b.weight_bytes_read * 2, a.weight_bytes_read, 1e-9 * a.weight_bytes_read) << batch;
    EXPECT_GT(b.communication_s, 0) << batch;
    EXPECT_LT(b.gemm_s, a.gemm_s) << batch;
  }
  // Qwen3-30B-A3B (128 experts, top-8) on one H100: batch 1 reads 3.35B of 30.5B parameters.
  const auto q = *c.model("qwen3-30b-a3b");
  const Roofline qr(q, hw, analysis::Dtype::kBf16);
  EXPECT_NEAR(qr.decode(1, 100).weight_bytes_read / 2, analysis::active_params(q), 1e3);
  EXPECT_GT(qr.decode(256, 100).weight_bytes_read / 2, 0.999 * q.params);
}

TEST(RooflineMoeTest, DenseModelsComputeExactlyAsBefore) {
  // A dense model's step: all parameters read and computed (no MoE path).
  const ProfileCatalog c = ProfileCatalog::builtin();
  const auto m = *c.model("llama-3.1-8b");
  const Roofline r(m, *c.hardware("a100-80g-pcie"), analysis::Dtype::kBf16);
  for (int batch : {1, 7, 64}) {
    const StepCost s = r.decode(batch, 1000);
    EXPECT_DOUBLE_EQ(s.weight_bytes_read, r.weight_bytes()) << batch;
    EXPECT_DOUBLE_EQ(s.bytes, r.weight_bytes() + 1001.0 * batch * r.kv_bytes_per_token());
  }
}

}  // namespace
}  // namespace llmcap::sim

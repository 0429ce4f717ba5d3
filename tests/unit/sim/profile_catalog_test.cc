#include "sim/profile_catalog.h"

#include "analysis/memory_fit.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

namespace llmcap::sim {
namespace {

TEST(ProfileCatalogTest, BuiltinHasEveryRequiredProfile) {
  const ProfileCatalog c = ProfileCatalog::builtin();
  for (const char* name : {"rtx4090-24g", "rtx4090-48g", "l40s", "a100-40g-pcie", "a100-80g-pcie",
                           "a100-80g-sxm", "h100-pcie", "h100-sxm", "h200"}) {
    EXPECT_TRUE(c.hardware(name).has_value()) << name;
  }
  for (const char* name : {"llama-3.1-8b", "llama-3.1-70b", "qwen2.5-7b", "qwen2.5-14b",
                           "qwen2.5-32b", "qwen2.5-72b", "mistral-7b", "llama-2-7b"}) {
    EXPECT_TRUE(c.model(name).has_value()) << name;
  }
}

TEST(ProfileCatalogTest, BuiltinFiguresMatchDomainTables) {
  const ProfileCatalog c = ProfileCatalog::builtin();
  const auto a100 = *c.hardware("a100-80g-pcie");
  // Issue 19: the total CUDA reports (79.15 GiB), not the datasheet's 80 × 10^9 bytes.
  EXPECT_DOUBLE_EQ(a100.memory_bytes, 79.15 * analysis::kBytesPerGiB);
  EXPECT_DOUBLE_EQ(a100.nominal_memory_gb, 80);
  EXPECT_DOUBLE_EQ(a100.bandwidth_bytes_per_s, 1935e9);
  EXPECT_DOUBLE_EQ(a100.bf16_tflops, 312);
  EXPECT_DOUBLE_EQ(a100.fp8_tflops, 0);
  EXPECT_DOUBLE_EQ(a100.bandwidth_efficiency, 0.8);
  EXPECT_DOUBLE_EQ(a100.compute_efficiency, 0.75);
  // No per-GPU step overhead: the serving engine's (sim.engine) applies.
  EXPECT_LT(a100.step_overhead_s, 0);
  EXPECT_EQ(a100.generation, "ampere");
  EXPECT_EQ(c.hardware("h100-sxm")->generation, "hopper");
  EXPECT_EQ(c.hardware("l40s")->generation, "ada");
  for (const std::string& gpu : c.hardware_names())
    EXPECT_FALSE(c.hardware(gpu)->generation.empty()) << gpu;
  const auto m48 = *c.hardware("rtx4090-48g");
  const auto m24 = *c.hardware("rtx4090-24g");
  EXPECT_EQ(m48.bandwidth_bytes_per_s, m24.bandwidth_bytes_per_s);  // only capacity differs
  EXPECT_EQ(m48.nominal_memory_gb, 2 * m24.nominal_memory_gb);
  EXPECT_DOUBLE_EQ(m24.memory_bytes, 23.65 * analysis::kBytesPerGiB);
  // KV bytes/token at 16 bits, docs/metrics.md §11, last column.
  const std::pair<const char*, double> kv[] = {
      {"llama-3.1-8b", 128}, {"llama-3.1-70b", 320}, {"qwen2.5-7b", 56},  {"qwen2.5-14b", 192},
      {"qwen2.5-32b", 256},  {"qwen2.5-72b", 320},   {"mistral-7b", 128}, {"llama-2-7b", 512}};
  for (const auto& [name, kib] : kv) {
    EXPECT_DOUBLE_EQ(analysis::kv_bytes_per_token(*c.model(name)), kib * 1024) << name;
  }
}

TEST(ProfileCatalogTest, UserJsonAddsAndOverrides) {
  ProfileCatalog c = ProfileCatalog::builtin();
  const auto err = c.add_json(R"({"hardware": [{"name": "rtx4090-24g", "memory_gb": 24,
      "bandwidth_gbps": 1008, "bf16_tflops": 165, "bandwidth_efficiency": 0.85}],
      "models": [{"name": "tiny", "params": 1e9, "layers": 16, "hidden": 2048, "heads": 16,
      "kv_heads": 4, "head_dim": 128, "ffn": 8192, "vocab": 32000, "max_context_tokens": 4096}]})",
                              "user.json");
  ASSERT_FALSE(err) << *err;
  EXPECT_DOUBLE_EQ(c.hardware("rtx4090-24g")->bandwidth_efficiency, 0.85);
  ASSERT_TRUE(c.model("tiny"));
  EXPECT_EQ(c.model("tiny")->kv_heads, 4);
}

TEST(ProfileCatalogTest, StrictErrorsNameTheField) {
  ProfileCatalog c;
  auto err = c.add_json(R"({"models": [{"name": "x", "params": 1e9, "layers": 2, "hidden": 8,
      "heads": 2, "kv_heads": 2, "head_dim": 4, "ffn": 8, "vocab": 10, "max_context_tokens": 8,
      "colour": "red"}]})",
                        "u.json");
  ASSERT_TRUE(err);
  EXPECT_NE(err->find("models[0]"), std::string::npos) << *err;
  EXPECT_NE(err->find("'colour'"), std::string::npos) << *err;
  err = c.add_json(R"({"hardware": [{"name": "g", "memory_gb": 24, "bf16_tflops": 1}]})", "u.json");
  ASSERT_TRUE(err);
  EXPECT_NE(err->find("bandwidth_gbps"), std::string::npos) << *err;
  err = c.add_json(R"({"gpus": []})", "u.json");
  ASSERT_TRUE(err);
  EXPECT_NE(err->find("'gpus'"), std::string::npos);
  EXPECT_TRUE(c.add_json("{not json", "u.json"));
  EXPECT_TRUE(c.hardware_names().empty());  // nothing added on failure
}

TEST(ProfileCatalogTest, MixtureOfExpertsFieldsAreStrict) {
  // A toy MoE: 4 layers of width 64, 8 experts of width 32 (3 × 64 × 32 × 4 = 24576 parameters
  // each), top-2.
  const std::string head = R"({"models": [{"name": "toy-moe", "layers": 4, "hidden": 64,
      "heads": 4, "kv_heads": 4, "head_dim": 16, "ffn": 128, "vocab": 100, "max_context_tokens": 64,
      )";
  const auto add = [&](const std::string& fields) {
    ProfileCatalog c;
    auto err = c.add_json(head + fields + "}]}", "moe.json");
    return std::make_pair(err, c.model("toy-moe"));
  };
  auto [ok, model] =
      add(R"("params": 300000, "experts": 8, "experts_per_token": 2, "expert_ffn": 32,
             "active_params": 153000)");
  ASSERT_FALSE(ok) << *ok;
  EXPECT_EQ(model->experts, 8);
  EXPECT_EQ(model->experts_per_token, 2);
  EXPECT_EQ(model->expert_ffn, 32);
  EXPECT_EQ(model->shared_expert_ffn, 0);
  EXPECT_DOUBLE_EQ(analysis::active_params(*model), 300000 - 6 * 24576.0);  // 152544
  // Each mistake names its field.
  const std::pair<const char*, const char*> cases[] = {
      {R"("params": 300000, "experts": 8, "expert_ffn": 32)", "'experts_per_token'"},
      {R"("params": 300000, "experts": 8, "experts_per_token": 9, "expert_ffn": 32)",
       "'experts_per_token' must be 1..'experts'"},
      {R"("params": 300000, "experts": 8, "experts_per_token": 0.5, "expert_ffn": 32)",
       "'experts_per_token' must be a positive integer"},
      {R"("params": 100000, "experts": 8, "experts_per_token": 2, "expert_ffn": 32)",
       "exceed field 'params'"},
      {R"("params": 300000, "experts": 8, "experts_per_token": 2, "expert_ffn": 32,
          "active_params": 100000)",
       "'active_params'"},
      {R"("params": 300000, "active_params": 100000)", "needs 'experts'"},
      {R"("params": 300000, "experts": 8, "experts_per_token": 2, "expert_ffn": 32,
          "router": "softmax")",
       "'router'"},
  };
  for (const auto& [fields, expected] : cases) {
    auto [err, m] = add(fields);
    ASSERT_TRUE(err) << fields;
    EXPECT_NE(err->find("moe.json: models[0]"), std::string::npos) << *err;
    EXPECT_NE(err->find(expected), std::string::npos) << *err;
    EXPECT_FALSE(m.has_value());
  }
}

TEST(ProfileCatalogTest, AddFileAndListing) {
  const std::string path = testing::TempDir() + "/sim_profiles_test.json";
  {
    std::ofstream out(path);
    out << R"({"hardware": [{"name": "mygpu", "memory_gb": 16, "bandwidth_gbps": 500,
               "bf16_tflops": 100}]})";
  }
  ProfileCatalog c = ProfileCatalog::builtin();
  ASSERT_FALSE(c.add_file(path));
  EXPECT_TRUE(c.hardware("mygpu"));
  EXPECT_TRUE(c.add_file(path + ".missing"));
  const std::string list = c.listing();
  EXPECT_NE(list.find("mygpu"), std::string::npos);
  EXPECT_NE(list.find("llama-3.1-8b"), std::string::npos);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace llmcap::sim

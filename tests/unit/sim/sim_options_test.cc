#include "sim/sim_options.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "sim/sim_model.h"

namespace llmcap::sim {
namespace {

TEST(SimOptionsTest, DefaultsFromEmptyObject) {
  const auto r = sim_options_from_json("{}");
  ASSERT_TRUE(r.options) << r.error;
  EXPECT_EQ(r.options->hardware, "rtx4090-48g");
  EXPECT_EQ(r.options->max_num_seqs, 256);
  EXPECT_EQ(r.options->max_num_batched_tokens, 2048);
  EXPECT_DOUBLE_EQ(r.options->gpu_memory_utilization, 0.9);
  EXPECT_DOUBLE_EQ(r.options->time_scale, 1.0);
  EXPECT_EQ(r.options->engine, "vllm");
}

TEST(SimOptionsTest, EngineIsParsedValidatedAndShown) {
  auto r = sim_options_from_json(R"({"engine": "trt-llm", "hardware": "a100-80g-pcie"})");
  ASSERT_TRUE(r.options) << r.error;
  EXPECT_EQ(r.options->engine, "trt-llm");
  const SimModel m = build_sim_model(*r.options);
  EXPECT_EQ(m.roofline.engine().name, "trt-llm");
  EXPECT_NE(describe(m).find("(trt-llm engine)"), std::string::npos) << describe(m);
  r = sim_options_from_json(R"({"engine": 3})");
  EXPECT_NE(r.error.find("engine: must be a string"), std::string::npos) << r.error;
  r = sim_options_from_json(R"({"engine": "tgi"})");
  ASSERT_TRUE(r.options);
  try {
    validate_sim_options(*r.options);
    FAIL() << "an unknown engine was accepted";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("sim option engine: unknown engine 'tgi'"), std::string::npos) << what;
    EXPECT_NE(what.find("vllm, vllm-2024, trt-llm, sglang, llama.cpp"), std::string::npos) << what;
  }
}

TEST(SimOptionsTest, ServedModelNameDefaultsToTheProfile) {
  auto r = sim_options_from_json("{}");
  ASSERT_TRUE(r.options) << r.error;
  EXPECT_EQ(r.options->served_model_name, "");
  r = sim_options_from_json(R"({"served_model_name": "m"})");
  ASSERT_TRUE(r.options) << r.error;
  EXPECT_EQ(r.options->served_model_name, "m");
  EXPECT_EQ(r.options->model, "llama-3.1-8b");
  EXPECT_FALSE(sim_options_from_json(R"({"served_model_name": 3})").options);
}

TEST(SimOptionsTest, TensorParallelSplitsTheModelAndSaysWhatTheAllReduceCosts) {
  auto r = sim_options_from_json(
      R"({"hardware": "a100-80g-sxm", "model": "llama-3.1-70b", "tensor_parallel": 4})");
  ASSERT_TRUE(r.options) << r.error;
  EXPECT_EQ(r.options->tensor_parallel, 4);
  const SimModel m = build_sim_model(*r.options);
  EXPECT_EQ(m.roofline.tensor_parallel(), 4);
  EXPECT_EQ(m.fit.tensor_parallel, 4);
  const std::string d = describe(m);
  EXPECT_NE(d.find("4 × a100-80g-sxm (tensor parallel over NVLink"), std::string::npos) << d;
  EXPECT_NE(d.find("all-reduce 230 GB/s + 8 µs"), std::string::npos) << d;
  EXPECT_NE(d.find("per GPU"), std::string::npos) << d;

  // 70B BF16 does not fit one 80 GB card; a layout vLLM refuses names the option.
  r = sim_options_from_json(R"({"hardware": "a100-80g-sxm", "model": "llama-3.1-70b"})");
  EXPECT_THROW(build_sim_model(*r.options), std::runtime_error);
  for (const char* bad :
       {R"({"model": "llama-3.1-70b", "tensor_parallel": 3})", R"({"tensor_parallel": 0})"}) {
    r = sim_options_from_json(bad);
    ASSERT_TRUE(r.options) << r.error;
    try {
      build_sim_model(*r.options);
      FAIL() << bad;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("sim option tensor_parallel:"), std::string::npos)
          << e.what();
    }
  }
}

TEST(SimOptionsTest, ParsesFieldsAndFaults) {
  const auto r = sim_options_from_json(R"({"hardware": "h100-sxm", "model": "qwen2.5-7b",
      "dtype": "fp8", "port": 0, "seed": 99, "time_scale": 10, "max_model_len": 4096,
      "tokens_per_event": 4, "faults": {"error_rate": 0.05, "retry_after_s": 3}})");
  ASSERT_TRUE(r.options) << r.error;
  EXPECT_EQ(r.options->hardware, "h100-sxm");
  EXPECT_EQ(r.options->dtype, "fp8");
  EXPECT_EQ(r.options->port, 0);
  EXPECT_EQ(r.options->seed, 99u);
  EXPECT_DOUBLE_EQ(r.options->time_scale, 10);
  EXPECT_EQ(r.options->tokens_per_event, 4);
  EXPECT_DOUBLE_EQ(r.options->faults.error_rate, 0.05);
  EXPECT_EQ(r.options->faults.retry_after_s, 3);
}

TEST(SimOptionsTest, UnknownAndMistypedKeysAreNamed) {
  auto r = sim_options_from_json(R"({"hardwre": "x"})");
  EXPECT_FALSE(r.options);
  EXPECT_NE(r.error.find("hardwre"), std::string::npos) << r.error;
  r = sim_options_from_json(R"({"faults": {"eror_rate": 1}})");
  EXPECT_NE(r.error.find("faults.eror_rate"), std::string::npos) << r.error;
  r = sim_options_from_json(R"({"max_num_seqs": "many"})");
  EXPECT_NE(r.error.find("max_num_seqs: must be an integer"), std::string::npos) << r.error;
  r = sim_options_from_json(R"({"port": 70000})");
  EXPECT_NE(r.error.find("port"), std::string::npos);
  EXPECT_FALSE(sim_options_from_json("[1]").options);
  EXPECT_FALSE(sim_options_from_json("{").options);
}

}  // namespace
}  // namespace llmcap::sim

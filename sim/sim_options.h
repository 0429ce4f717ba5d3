// SimOptions: every setting of the simulated inference server, with its default.
// The lead's CLI (`llmcapd sim`, `sim://<hardware>/<model>` targets) fills it from flags or
// from JSON via sim_options_from_json(). Validated by SimServer::start().
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sim/fault_injector.h"

namespace llmcap::sim {

struct SimOptions {
  std::string hardware = "rtx4090-48g";  // GPU profile name (see ProfileCatalog::listing())
  std::string model = "llama-3.1-8b";    // model profile name
  // The model name requests must carry and /v1/models and /metrics show (vLLM
  // --served-model-name); empty = the profile name `model`.
  std::string served_model_name;
  std::string dtype = "bf16";  // weight dtype: bf16, fp16, fp8, int8, int4
  // Serving engine whose CPU costs the step time carries (sim/README.md "Engines"): "vllm"
  // (V1, CUDA graphs), "vllm-2024" (V0), "trt-llm", "sglang", "llama.cpp".
  std::string engine = "vllm";
  std::string kv_cache_dtype = "auto";  // "auto" (16-bit, 2 bytes/element) or "fp8" (1 byte)
  std::string profiles_file;            // extra/overriding profiles JSON; empty = none
  std::string address = "127.0.0.1";    // listen address
  std::uint16_t port = 8000;            // listen port; 0 picks a free one
  std::uint64_t seed = 0;               // seeds generated text and fault decisions
  double time_scale = 1.0;              // 10 = every simulated duration runs 10× faster
  double gpu_memory_utilization = 0.9;  // fraction of GPU memory the engine uses (vLLM)
  std::int64_t max_num_seqs = 256;      // running-batch cap (vLLM default)
  // GPUs of `hardware` the model is split over (vLLM --tensor-parallel-size): weights, heads
  // and KV per GPU shrink, two all-reduces per layer join every step (sim/README.md).
  std::int64_t tensor_parallel = 1;
  std::int64_t max_num_batched_tokens = 2048;  // tokens per step; chunked prefill
  // Longest sequence (prompt + output). 0 = the model's max context, capped to what the KV
  // pool holds. An explicit value that does not fit makes start() refuse.
  std::int64_t max_model_len = 0;
  // Activation/other reserve outside the KV pool in GiB; < 0 = the model profile's value.
  double activation_reserve_gib = -1;
  std::int64_t tokens_per_event = 1;     // tokens carried by each SSE event
  std::int64_t default_max_tokens = 16;  // when a request sends no max_tokens (vLLM: 16)
  // Automatic prefix caching of full 16-token prompt blocks (vLLM V1 default: on).
  bool enable_prefix_caching = true;
  FaultOptions faults;  // fault injection; all off by default
};

// Parses a JSON object into SimOptions, starting from defaults. Strict: an unknown key or a
// value of the wrong type returns an error naming the key (e.g. "faults.error_rate: must be a
// number"). Faults go in a nested "faults" object with FaultOptions' field names.
struct SimOptionsResult {
  std::optional<SimOptions> options;
  std::string error;  // set when options is empty
};
SimOptionsResult sim_options_from_json(std::string_view json_text);

}  // namespace llmcap::sim

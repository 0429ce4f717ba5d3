// `llmcapd estimate`: the memory-fit estimator (analysis/memory_fit) over the simulator's
// hardware and model profiles: does this model fit, and how many sequences at this context?
#include <iostream>

#include "analysis/memory_fit.h"
#include "api/result_json.h"
#include "server/cli/command_line.h"
#include "server/cli/commands.h"
#include "server/cli/exit_codes.h"
#include "server/settings.h"
#include "sim/profile_catalog.h"

namespace llmcap::server {

int cmd_estimate(const std::vector<std::string>& args) {
  std::string hardware = "a100-80g-pcie";
  std::string model = "llama-3.1-8b";
  std::string dtype = "bf16";
  std::string kv_dtype = "auto";
  std::string profiles_file;
  std::int64_t context = 8192;
  std::int64_t concurrency = 1;
  double utilisation = 0.9;
  bool as_json = false;
  bool help = false;
  Settings s("");
  s.add("hardware", "GPU profile", &hardware);
  s.add("model", "model profile", &model);
  s.add("dtype", "weight dtype: bf16, fp16, fp8, int8, int4", &dtype);
  s.add("kv_cache_dtype", "auto (16-bit) or fp8", &kv_dtype);
  s.add("context_tokens", "cached tokens per request (input + output; REST: context_tokens)",
        &context);
  s.add("context", "the same as --context-tokens", &context);
  s.add("concurrency", "requests resident at once", &concurrency);
  s.add("gpu_memory_utilization", "fraction of memory the engine may use", &utilisation);
  s.add("profiles_file", "extra hardware/model profiles (JSON)", &profiles_file);
  int tensor_parallel = 1;
  s.add("tensor_parallel",
        "GPUs the model is split over (vLLM --tensor-parallel-size); memory figures are per GPU",
        &tensor_parallel);
  s.add("json", "print JSON instead of text", &as_json);
  s.add("help", "show this help", &help);
  std::vector<std::string> positional;
  const CommandLine cl{
      "estimate",
      "Usage: llmcapd estimate [flags]\n\nMemory fit of a model on a GPU: weights, "
      "KV cache per token and request, KV pool, most concurrent sequences."};
  if (auto rc = parse_command_line(cl, s, args, help, positional)) return *rc;
  auto catalog = sim::ProfileCatalog::builtin();
  if (!profiles_file.empty()) {
    if (auto err = catalog.add_file(profiles_file)) {
      std::cerr << "llmcapd estimate: " << *err << "\n";
      return kExitUsage;
    }
  }
  const auto hw = catalog.hardware(hardware);
  const auto m = catalog.model(model);
  const auto dt = analysis::parse_dtype(dtype);
  if (!hw) {
    std::cerr << "llmcapd estimate: hardware: unknown profile '" << hardware << "'\n";
    return kExitUsage;
  }
  if (!m) {
    std::cerr << "llmcapd estimate: model: unknown profile '" << model << "'\n";
    return kExitUsage;
  }
  if (!dt) {
    std::cerr << "llmcapd estimate: dtype: unknown '" << dtype << "'\n";
    return kExitUsage;
  }
  if (kv_dtype != "auto" && kv_dtype != "fp8") {
    std::cerr << "llmcapd estimate: kv_cache_dtype: expected auto or fp8\n";
    return kExitUsage;
  }
  if (context < 1 || concurrency < 1 || !(utilisation > 0 && utilisation <= 1)) {
    std::cerr << "llmcapd estimate: context_tokens and concurrency must be ≥ 1, "
                 "gpu_memory_utilization in (0, 1]\n";
    return kExitUsage;
  }
  if (auto problem = analysis::tensor_parallel_problem(*m, tensor_parallel)) {
    std::cerr << "llmcapd estimate: tensor_parallel: " << *problem << "\n";
    return kExitUsage;
  }
  analysis::MemoryFitInput in;
  in.tensor_parallel = tensor_parallel;
  in.dtype = *dt;
  in.kv_bytes_per_element = kv_dtype == "fp8" ? 1.0 : 2.0;
  in.context_tokens = context;
  in.concurrency = concurrency;
  in.gpu_memory_utilization = utilisation;
  const auto fit = analysis::estimate_memory_fit(*m, *hw, in);
  if (as_json) {
    auto j = api::memory_fit_json(fit);
    j["hardware"] = hardware;
    j["model"] = model;
    j["dtype"] = dtype;
    j["context_tokens"] = context;
    j["concurrency"] = concurrency;
    j["tensor_parallel"] = tensor_parallel;
    std::cout << j.dump(2) << "\n";
  } else {
    std::printf("%s%s, %s %s, context %lld tokens, concurrency %lld\n",
                tensor_parallel > 1 ? (std::to_string(tensor_parallel) + " × ").c_str() : "",
                hw->display_name.c_str(), model.c_str(), dtype.c_str(),
                static_cast<long long>(context), static_cast<long long>(concurrency));
    if (tensor_parallel > 1)
      std::printf("  tensor parallel    %d GPUs: weights and KV heads split; figures per GPU\n",
                  tensor_parallel);
    std::printf(
        "  memory             %8.2f GiB as CUDA reports it (%.0f GB card), budget at %.0f%%: "
        "%.2f GiB\n",
        analysis::to_gib(fit.memory_bytes), hw->nominal_memory_gb, utilisation * 100,
        analysis::to_gib(fit.budget_bytes));
    std::printf("  weights            %8.2f GB (%6.2f GiB)\n", analysis::to_gb(fit.weight_bytes),
                analysis::to_gib(fit.weight_bytes));
    if (analysis::is_moe(*m))  // every expert is resident; a token computes its top-k
      std::printf("  experts            %lld, %lld per token: %.2fB of %.2fB parameters active\n",
                  static_cast<long long>(m->experts), static_cast<long long>(m->experts_per_token),
                  analysis::active_params(*m) / 1e9, m->params / 1e9);
    std::printf(
        "  non-KV reserve     %8.2f GiB (activations of a %lld-token pass, sampler, "
        "non-torch)\n",
        analysis::to_gib(fit.activation_reserve_bytes),
        static_cast<long long>(in.max_num_batched_tokens));
    std::printf("  KV per token       %8.0f bytes (%.0f KiB)\n", fit.kv_bytes_per_token,
                fit.kv_bytes_per_token / 1024);
    std::printf("  KV per request     %8.3f GiB\n", analysis::to_gib(fit.kv_bytes_per_request));
    if (fit.weights_fit)
      std::printf(
          "  KV pool            %8.2f GB (%6.2f GiB), %lld tokens\n"
          "  # GPU blocks: %lld\n"
          "  Maximum concurrency for %lld tokens per request: %.2fx\n",
          analysis::to_gb(fit.kv_pool_bytes), analysis::to_gib(fit.kv_pool_bytes),
          static_cast<long long>(fit.kv_pool_tokens), static_cast<long long>(fit.gpu_blocks),
          static_cast<long long>(context), fit.max_concurrency_at_context);
    else
      std::printf("  KV pool                none: weights + reserve exceed the budget by %.2f GB\n",
                  analysis::to_gb(fit.shortfall_bytes));
    std::printf("  max sequences      %8lld at %lld tokens each\n",
                static_cast<long long>(fit.max_concurrent_sequences),
                static_cast<long long>(context));
    std::printf("  fits               %s\n  %s\n", fit.fits ? "yes" : "NO",
                fit.explanation.c_str());
  }
  return fit.fits ? kExitOk : kExitSlaFailed;
}

}  // namespace llmcap::server

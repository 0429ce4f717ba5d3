#include "sim/sim_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <utility>
#include <vector>

#include "sim/profile_catalog.h"

namespace llmcap::sim {

namespace {

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

void validate_sim_options(const SimOptions& o) {
  auto bad = [](const std::string& field, const std::string& why) {
    throw std::runtime_error("sim option " + field + ": " + why);
  };
  if (!(o.time_scale > 0) || !std::isfinite(o.time_scale)) bad("time_scale", "must be > 0");
  if (!(o.gpu_memory_utilization > 0 && o.gpu_memory_utilization <= 1))
    bad("gpu_memory_utilization", "must be in (0, 1]");
  if (o.max_num_seqs < 1) bad("max_num_seqs", "must be >= 1");
  if (o.tensor_parallel < 1 || o.tensor_parallel > 64) bad("tensor_parallel", "must be 1..64");
  if (o.max_num_batched_tokens < 1) bad("max_num_batched_tokens", "must be >= 1");
  if (o.max_model_len < 0) bad("max_model_len", "must be >= 0 (0 = automatic)");
  if (o.tokens_per_event < 1) bad("tokens_per_event", "must be >= 1");
  if (o.default_max_tokens < 1) bad("default_max_tokens", "must be >= 1");
  if (!engine_profile(o.engine))
    bad("engine", "unknown engine '" + o.engine + "'; known: " + join(engine_names()));
  if (o.kv_cache_dtype != "auto" && o.kv_cache_dtype != "fp8")
    bad("kv_cache_dtype", "must be 'auto' or 'fp8'");
  const auto& f = o.faults;
  const std::pair<const char*, double> rates[] = {
      {"faults.error_rate", f.error_rate},
      {"faults.rate_limit_rate", f.rate_limit_rate},
      {"faults.stall_rate", f.stall_rate},
      {"faults.reset_rate", f.reset_rate},
      {"faults.malformed_rate", f.malformed_rate},
      {"faults.slow_headers_rate", f.slow_headers_rate}};
  double sum = 0;
  for (const auto& [name, rate] : rates) {
    if (!(rate >= 0 && rate <= 1)) bad(name, "must be in [0, 1]");
    if (std::string_view(name) != "faults.slow_headers_rate") sum += rate;
  }
  if (sum > 1) bad("faults", "error, 429, stall, reset and malformed rates must sum to <= 1");
  if (f.retry_after_s < 0 || f.stall_after_tokens < 0 || f.stall_ms < 0 ||
      f.reset_after_tokens < 0 || f.malformed_after_tokens < 0 || f.slow_headers_ms < 0)
    bad("faults", "counts and durations must be >= 0");
}

SimModel build_sim_model(const SimOptions& options) {
  validate_sim_options(options);
  ProfileCatalog catalog = ProfileCatalog::builtin();
  if (!options.profiles_file.empty()) {
    if (auto err = catalog.add_file(options.profiles_file)) throw std::runtime_error(*err);
  }
  auto hw = catalog.hardware(options.hardware);
  if (!hw) {
    throw std::runtime_error("unknown hardware '" + options.hardware +
                             "'; known: " + join(catalog.hardware_names()));
  }
  auto model = catalog.model(options.model);
  if (!model) {
    throw std::runtime_error("unknown model '" + options.model +
                             "'; known: " + join(catalog.model_names()));
  }
  auto dtype = analysis::parse_dtype(options.dtype);
  if (!dtype) {
    throw std::runtime_error("unknown dtype '" + options.dtype +
                             "'; known: bf16, fp16, fp8, int8, int4");
  }
  if (options.max_model_len > model->max_context_tokens) {
    throw std::runtime_error("max_model_len " + std::to_string(options.max_model_len) +
                             " exceeds " + model->name + "'s context of " +
                             std::to_string(model->max_context_tokens) + " tokens");
  }

  const int tp = static_cast<int>(options.tensor_parallel);
  if (auto problem = analysis::tensor_parallel_problem(*model, tp))
    throw std::runtime_error("sim option tensor_parallel: " + *problem);
  if (tp > 1 && hw->allreduce_bus_gbps <= 0)
    throw std::runtime_error("sim option tensor_parallel: profile " + hw->name +
                             " has no allreduce_bus_gbps (GPU-to-GPU bandwidth) to split over");
  analysis::MemoryFitInput in;
  in.tensor_parallel = tp;
  in.dtype = *dtype;
  in.kv_bytes_per_element = options.kv_cache_dtype == "fp8" ? 1.0 : 2.0;
  in.context_tokens = options.max_model_len > 0 ? options.max_model_len : model->max_context_tokens;
  in.concurrency = 1;
  in.gpu_memory_utilization = options.gpu_memory_utilization;
  in.activation_reserve_bytes = options.activation_reserve_gib >= 0
                                    ? options.activation_reserve_gib * analysis::kBytesPerGiB
                                    : -1;
  in.block_tokens = 16;
  in.max_num_batched_tokens = options.max_num_batched_tokens;  // vLLM profiles this many tokens
  in.max_num_seqs = options.max_num_seqs;
  analysis::MemoryFit fit = analysis::estimate_memory_fit(*model, *hw, in);
  if (!fit.weights_fit) throw std::runtime_error("model does not fit: " + fit.explanation);
  std::int64_t max_model_len = 0;
  if (options.max_model_len > 0) {
    if (!fit.one_sequence_fits)
      throw std::runtime_error("max_model_len does not fit: " + fit.explanation);
    max_model_len = options.max_model_len;
  } else {
    // Automatic: the model's context, capped to what the KV pool holds (one sequence).
    max_model_len = std::min(model->max_context_tokens, fit.kv_pool_tokens);
    if (max_model_len < 16)
      throw std::runtime_error("KV pool too small for any request: " + fit.explanation);
  }

  EngineConfig config;
  config.max_num_seqs = options.max_num_seqs;
  config.max_num_batched_tokens = options.max_num_batched_tokens;
  config.block_tokens = in.block_tokens;
  config.kv_pool_blocks = fit.kv_pool_blocks;
  config.enable_prefix_caching = options.enable_prefix_caching;
  Roofline roofline(*model, *hw, *dtype, in.kv_bytes_per_element, *engine_profile(options.engine),
                    tp);
  return SimModel{*hw, *model, *dtype, std::move(fit), max_model_len, config, std::move(roofline)};
}

std::string describe(const SimModel& m) {
  const int tp = m.roofline.tensor_parallel();
  std::string where = m.hardware.name;
  if (tp > 1) {
    // Why a split model's TPOT is what it is: the all-reduces' share of a decode step.
    const StepCost one = m.roofline.decode(1, 1024);
    char split[256];
    std::snprintf(
        split, sizeof split,
        "%d × %s (tensor parallel over %s, all-reduce %.0f GB/s + %.0f µs: %.2f ms of "
        "a %.2f ms decode step at batch 1)",
        tp, m.hardware.name.c_str(),
        m.hardware.interconnect.empty() ? "the interconnect" : m.hardware.interconnect.c_str(),
        m.hardware.allreduce_bus_gbps, m.hardware.allreduce_latency_us, one.communication_s * 1e3,
        one.total_s * 1e3);
    where = split;
  }
  char buf[768];
  std::snprintf(
      buf, sizeof buf,
      "%s %s on %s (%s engine): weights %.2f GB%s, KV pool %.2f GiB%s = %lld tokens (# GPU "
      "blocks: "
      "%lld; "
      "maximum concurrency for %lld tokens per request: %.2fx), max_model_len %lld, "
      "max_num_seqs %lld, max_num_batched_tokens %lld, prefix caching %s",
      m.model.name.c_str(), std::string(analysis::to_string(m.dtype)).c_str(), where.c_str(),
      m.roofline.engine().name.c_str(), analysis::to_gb(m.fit.weight_bytes),
      tp > 1 ? " per GPU" : "", analysis::to_gib(m.fit.kv_pool_bytes), tp > 1 ? " per GPU" : "",
      static_cast<long long>(m.fit.kv_pool_tokens), static_cast<long long>(m.fit.gpu_blocks),
      static_cast<long long>(m.max_model_len),
      m.max_model_len > 0
          ? static_cast<double>(m.fit.kv_pool_tokens) / static_cast<double>(m.max_model_len)
          : 0.0,
      static_cast<long long>(m.max_model_len), static_cast<long long>(m.engine_config.max_num_seqs),
      static_cast<long long>(m.engine_config.max_num_batched_tokens),
      m.engine_config.enable_prefix_caching ? "on" : "off");
  return buf;
}

}  // namespace llmcap::sim

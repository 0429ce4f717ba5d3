#include "analysis/memory_fit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace llmcap::analysis {

namespace {

std::string gb_gib(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f GB (%.2f GiB)", to_gb(bytes), to_gib(bytes));
  return buf;
}

}  // namespace

double loaded_weight_bytes(const ModelSpec& model, Dtype dtype) {
  const double embedding_params = static_cast<double>(model.vocab) *
                                  static_cast<double>(model.hidden) *
                                  (model.tied_embeddings ? 1.0 : 2.0);
  const double sixteen_bit = std::min(embedding_params, model.params);
  return sixteen_bit * 2.0 + (model.params - sixteen_bit) * bytes_per_param(dtype);
}

std::optional<std::string> tensor_parallel_problem(const ModelSpec& model, int tensor_parallel) {
  const std::string n = std::to_string(tensor_parallel);
  if (tensor_parallel < 1 || tensor_parallel > 64) return "tensor_parallel must be 1..64, not " + n;
  if (tensor_parallel == 1) return std::nullopt;
  if (model.heads % tensor_parallel != 0)
    return "tensor_parallel " + n + " does not divide " + model.name + "'s " +
           std::to_string(model.heads) + " attention heads";
  const std::int64_t kv = model.kv_heads > 0 ? model.kv_heads : model.heads;
  if (kv % tensor_parallel != 0 && tensor_parallel % kv != 0)
    return "tensor_parallel " + n + " and " + model.name + "'s " + std::to_string(kv) +
           " KV heads: one must divide the other";
  return std::nullopt;
}

std::int64_t kv_heads_per_gpu(const ModelSpec& model, int tensor_parallel) {
  const std::int64_t kv = model.kv_heads > 0 ? model.kv_heads : model.heads;
  return std::max<std::int64_t>(1, kv / std::max(1, tensor_parallel));
}

double non_kv_reserve_bytes(const ModelSpec& model, std::int64_t max_num_batched_tokens,
                            std::int64_t max_num_seqs, int tensor_parallel) {
  const double tokens = static_cast<double>(std::max<std::int64_t>(max_num_batched_tokens, 1));
  const double activation_peak =
      tokens * 2.0 *
      (kPeakFfnWidths * active_ffn(model) / std::max(1, tensor_parallel) +
       kPeakHiddenWidths * static_cast<double>(model.hidden));
  const double sampled_rows = static_cast<double>(
      std::min(max_num_batched_tokens, std::max<std::int64_t>(max_num_seqs, 1)));
  const double sampler_peak =
      sampled_rows * static_cast<double>(model.vocab) * 4.0 * kSamplerLogitCopies;
  return kNonTorchReserveBytes + std::max(activation_peak, sampler_peak);
}

MemoryFit estimate_memory_fit(const ModelSpec& model, const HardwareSpec& hardware,
                              const MemoryFitInput& input) {
  MemoryFit fit;
  const int tp = std::max(1, input.tensor_parallel);
  const std::int64_t block = input.block_tokens > 0 ? input.block_tokens : 16;
  fit.tensor_parallel = tp;
  if (auto problem = tensor_parallel_problem(model, input.tensor_parallel)) {
    fit.explanation = *problem;  // nothing fits a layout the engine refuses
    return fit;
  }
  fit.memory_bytes = hardware.memory_bytes;
  fit.nominal_memory_gb = hardware.nominal_memory_gb;
  fit.budget_bytes = input.gpu_memory_utilization * hardware.memory_bytes;
  fit.total_weight_bytes = loaded_weight_bytes(model, input.dtype);
  fit.weight_bytes = fit.total_weight_bytes / tp;
  if (input.activation_reserve_bytes >= 0)
    fit.activation_reserve_bytes = input.activation_reserve_bytes;
  else if (model.activation_reserve_bytes >= 0)
    fit.activation_reserve_bytes = model.activation_reserve_bytes;
  else
    fit.activation_reserve_bytes =
        non_kv_reserve_bytes(model, input.max_num_batched_tokens, input.max_num_seqs, tp);
  const std::int64_t kv_heads = model.kv_heads > 0 ? model.kv_heads : model.heads;
  fit.kv_bytes_per_token = kv_bytes_per_token(model, input.kv_bytes_per_element) *
                           static_cast<double>(kv_heads_per_gpu(model, tp)) /
                           static_cast<double>(std::max<std::int64_t>(kv_heads, 1));
  const std::int64_t context = input.context_tokens > 0 ? input.context_tokens : 0;
  fit.blocks_per_request = (context + block - 1) / block;
  fit.kv_bytes_per_request =
      static_cast<double>(fit.blocks_per_request * block) * fit.kv_bytes_per_token;
  const double left = fit.budget_bytes - fit.weight_bytes - fit.activation_reserve_bytes;
  fit.weights_fit = left > 0;
  fit.kv_pool_bytes = std::max(0.0, left);
  fit.shortfall_bytes = std::max(0.0, -left);
  if (fit.weights_fit && fit.kv_bytes_per_token > 0) {
    fit.kv_pool_blocks = static_cast<std::int64_t>(
        std::floor(fit.kv_pool_bytes / (fit.kv_bytes_per_token * static_cast<double>(block))));
  }
  fit.kv_pool_tokens = fit.kv_pool_blocks * block;
  fit.gpu_blocks = fit.kv_pool_blocks;
  fit.max_concurrency_at_context =
      context > 0 ? static_cast<double>(fit.kv_pool_tokens) / static_cast<double>(context) : 0;
  fit.max_concurrent_sequences =
      fit.blocks_per_request > 0 ? fit.kv_pool_blocks / fit.blocks_per_request : 0;
  fit.one_sequence_fits = fit.weights_fit && fit.max_concurrent_sequences >= 1;
  fit.fits = fit.one_sequence_fits && fit.max_concurrent_sequences >= input.concurrency;

  char share[32];
  std::snprintf(share, sizeof share, "%.0f%%", input.gpu_memory_utilization * 100);
  std::string text =
      model.name + " " + std::string(to_string(input.dtype)) + " on " +
      (tp > 1 ? std::to_string(tp) + " × " + hardware.name + " (tensor parallel; per GPU)"
              : hardware.name) +
      ": budget " + gb_gib(fit.budget_bytes) + " (" + share + " of " + gb_gib(fit.memory_bytes) +
      "), weights " + gb_gib(fit.weight_bytes) + ", non-KV reserve " +
      gb_gib(fit.activation_reserve_bytes);
  if (!fit.weights_fit) {
    text += ": the weights and reserve do not fit, " + gb_gib(fit.shortfall_bytes) +
            " short, no KV pool left";
  } else {
    text += ", KV pool " + gb_gib(fit.kv_pool_bytes);
    char concurrency[96];
    std::snprintf(concurrency, sizeof concurrency,
                  " (# GPU blocks: %lld; maximum concurrency for %lld tokens per request: %.2fx)",
                  static_cast<long long>(fit.gpu_blocks), static_cast<long long>(context),
                  fit.max_concurrency_at_context);
    text += " = " + std::to_string(fit.kv_pool_tokens) + " tokens" + concurrency + " at " +
            std::to_string(static_cast<std::int64_t>(fit.kv_bytes_per_token)) +
            " bytes/token; one " + std::to_string(context) + "-token request needs " +
            gb_gib(fit.kv_bytes_per_request) + "; " + std::to_string(fit.max_concurrent_sequences) +
            " such requests fit";
    if (!fit.one_sequence_fits)
      text += ": one full-length sequence does not fit";
    else if (!fit.fits)
      text += ", fewer than the " + std::to_string(input.concurrency) + " asked";
  }
  fit.explanation = std::move(text);
  return fit;
}

}  // namespace llmcap::analysis

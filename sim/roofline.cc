#include "sim/roofline.h"

#include <algorithm>
#include <vector>

namespace llmcap::sim {

Roofline::Roofline(analysis::ModelSpec model, analysis::HardwareSpec hardware,
                   analysis::Dtype dtype, double kv_bytes_per_element)
    : model_(std::move(model)),
      hardware_(std::move(hardware)),
      weight_bytes_(analysis::weight_bytes(model_, dtype)),
      kv_bytes_per_token_(analysis::kv_bytes_per_token(model_, kv_bytes_per_element)),
      effective_flops_per_s_(analysis::compute_flops_per_s(hardware_, dtype) *
                             hardware_.compute_efficiency),
      effective_bytes_per_s_(hardware_.bandwidth_bytes_per_s * hardware_.bandwidth_efficiency) {}

StepCost Roofline::step(std::span<const SeqWork> batch) const {
  StepCost cost;
  cost.overhead_s = hardware_.step_overhead_s;
  double tokens = 0;
  double attended_positions = 0;  // Σ over new tokens of the positions each one attends to
  double kv_tokens = 0;
  for (const SeqWork& s : batch) {
    const double n = static_cast<double>(s.new_tokens);
    const double c = static_cast<double>(s.cached_tokens);
    tokens += n;
    attended_positions += n * c + n * (n + 1) / 2;  // token at position p sees p + 1 positions
    kv_tokens += c + n;
  }
  if (tokens <= 0) return cost;
  const double attention_flops = 4.0 * static_cast<double>(model_.layers) *
                                 static_cast<double>(model_.heads) *
                                 static_cast<double>(model_.head_dim) * attended_positions;
  cost.flops = 2.0 * model_.params * tokens + attention_flops;
  cost.bytes = weight_bytes_ + kv_bytes_per_token_ * kv_tokens;
  cost.compute_s = cost.flops / effective_flops_per_s_;
  cost.memory_s = cost.bytes / effective_bytes_per_s_;
  cost.total_s = std::max(cost.compute_s, cost.memory_s) + cost.overhead_s;
  return cost;
}

StepCost Roofline::decode(std::int64_t batch, std::int64_t cached_tokens) const {
  std::vector<SeqWork> work(static_cast<std::size_t>(std::max<std::int64_t>(batch, 0)),
                            SeqWork{1, cached_tokens});
  return step(work);
}

}  // namespace llmcap::sim

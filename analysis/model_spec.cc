#include "analysis/model_spec.h"

#include <algorithm>
#include <cmath>

namespace llmcap::analysis {

std::optional<Dtype> parse_dtype(std::string_view text) {
  if (text == "bf16" || text == "bfloat16") return Dtype::kBf16;
  if (text == "fp16" || text == "float16" || text == "half") return Dtype::kFp16;
  if (text == "fp8" || text == "float8") return Dtype::kFp8;
  if (text == "int8" || text == "w8") return Dtype::kInt8;
  if (text == "int4" || text == "w4") return Dtype::kInt4;
  return std::nullopt;
}

std::string_view to_string(Dtype dtype) {
  switch (dtype) {
    case Dtype::kBf16: return "bf16";
    case Dtype::kFp16: return "fp16";
    case Dtype::kFp8: return "fp8";
    case Dtype::kInt8: return "int8";
    case Dtype::kInt4: return "int4";
  }
  return "bf16";
}

double bytes_per_param(Dtype dtype) {
  switch (dtype) {
    case Dtype::kBf16:
    case Dtype::kFp16: return 2.0;
    case Dtype::kFp8:
    case Dtype::kInt8: return 1.0;
    case Dtype::kInt4: return 0.5 + 1.0 / 32.0;  // group 128, fp16 scale + fp16 zero point
  }
  return 2.0;
}

double compute_flops_per_s(const HardwareSpec& hw, Dtype dtype) {
  if (dtype == Dtype::kFp8 && hw.fp8_tflops > 0) return hw.fp8_tflops * 1e12;
  if (dtype == Dtype::kInt8 && hw.int8_tflops > 0) return hw.int8_tflops * 1e12;
  return hw.bf16_tflops * 1e12;
}

bool uses_8bit_tensor_rate(const HardwareSpec& hw, Dtype dtype) {
  return (dtype == Dtype::kFp8 && hw.fp8_tflops > 0) ||
         (dtype == Dtype::kInt8 && hw.int8_tflops > 0);
}

double compute_efficiency_for(const HardwareSpec& hw, Dtype dtype) {
  if (!uses_8bit_tensor_rate(hw, dtype)) return hw.compute_efficiency;
  if (hw.fp8_compute_efficiency > 0) return hw.fp8_compute_efficiency;
  if (hw.generation == "hopper" || hw.generation == "blackwell") return 0.45;
  if (hw.generation == "ada") return 0.62;
  return 0.50;
}

double kv_bytes_per_token(const ModelSpec& model, double kv_bytes_per_element) {
  return 2.0 * static_cast<double>(model.layers) * static_cast<double>(model.kv_heads) *
         static_cast<double>(model.head_dim) * kv_bytes_per_element;
}

bool is_moe(const ModelSpec& model) { return model.experts > 0; }

double expert_params(const ModelSpec& model) {
  if (!is_moe(model)) return 0;
  return 3.0 * static_cast<double>(model.hidden) * static_cast<double>(model.expert_ffn) *
         static_cast<double>(model.layers);
}

double active_params(const ModelSpec& model) {
  if (!is_moe(model)) return model.params;
  return model.params -
         static_cast<double>(model.experts - model.experts_per_token) * expert_params(model);
}

double expected_distinct_experts(double experts, double experts_per_token, double tokens) {
  if (experts <= 0 || tokens <= 0) return 0;
  const double k = std::clamp(experts_per_token, 0.0, experts);
  return experts * (1.0 - std::pow(1.0 - k / experts, tokens));
}

double params_read_per_step(const ModelSpec& model, double tokens) {
  if (!is_moe(model)) return model.params;
  const double always_active =
      model.params - static_cast<double>(model.experts) * expert_params(model);
  return always_active + expected_distinct_experts(static_cast<double>(model.experts),
                                                   static_cast<double>(model.experts_per_token),
                                                   tokens) *
                             expert_params(model);
}

double active_ffn(const ModelSpec& model) {
  if (!is_moe(model)) return static_cast<double>(model.ffn);
  return static_cast<double>(model.experts_per_token) * static_cast<double>(model.expert_ffn) +
         static_cast<double>(model.shared_expert_ffn);
}

double weight_bytes(const ModelSpec& model, Dtype dtype) {
  return model.params * bytes_per_param(dtype);
}

}  // namespace llmcap::analysis

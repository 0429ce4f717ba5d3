#include "sim/profile_catalog.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>

#include "analysis/memory_fit.h"
#include "sim/embedded_profiles.h"

namespace llmcap::sim {

namespace {

using nlohmann::json;

// Reads one profile object field by field, remembering which keys were consumed so unknown
// keys can be reported.
class EntryReader {
 public:
  EntryReader(const json& entry, std::string where) : entry_(entry), where_(std::move(where)) {}

  double number(const char* key, std::optional<double> fallback = std::nullopt) {
    seen_.insert(key);
    auto it = entry_.find(key);
    if (it == entry_.end()) {
      if (fallback) return *fallback;
      throw std::invalid_argument(where_ + ": missing required field '" + key + "'");
    }
    if (!it->is_number())
      throw std::invalid_argument(where_ + ": field '" + key + "' must be a number");
    const double v = it->get<double>();
    if (v < 0) throw std::invalid_argument(where_ + ": field '" + key + "' must be >= 0");
    return v;
  }
  std::int64_t integer(const char* key) {
    const double v = number(key);
    if (v < 1 || v != static_cast<double>(static_cast<std::int64_t>(v)))
      throw std::invalid_argument(where_ + ": field '" + key + "' must be a positive integer");
    return static_cast<std::int64_t>(v);
  }
  // Absent: 0; present: a positive integer.
  std::int64_t optional_integer(const char* key) {
    if (!entry_.contains(key)) {
      seen_.insert(key);
      return 0;
    }
    return integer(key);
  }
  bool has(const char* key) const { return entry_.contains(key); }
  bool boolean(const char* key, bool fallback) {
    seen_.insert(key);
    auto it = entry_.find(key);
    if (it == entry_.end()) return fallback;
    if (!it->is_boolean())
      throw std::invalid_argument(where_ + ": field '" + key + "' must be true or false");
    return it->get<bool>();
  }
  std::string text(const char* key, std::optional<std::string> fallback = std::nullopt) {
    seen_.insert(key);
    auto it = entry_.find(key);
    if (it == entry_.end()) {
      if (fallback) return *fallback;
      throw std::invalid_argument(where_ + ": missing required field '" + key + "'");
    }
    if (!it->is_string())
      throw std::invalid_argument(where_ + ": field '" + key + "' must be a string");
    return it->get<std::string>();
  }
  void reject_unknown() const {
    for (auto it = entry_.begin(); it != entry_.end(); ++it) {
      if (!it.key().empty() && it.key()[0] == '_') continue;
      if (!seen_.count(it.key()))
        throw std::invalid_argument(where_ + ": unknown field '" + it.key() + "'");
    }
  }

 private:
  const json& entry_;
  std::string where_;
  std::set<std::string> seen_;
};

analysis::HardwareSpec parse_hardware(const json& e, const std::string& where) {
  if (!e.is_object()) throw std::invalid_argument(where + ": must be an object");
  EntryReader r(e, where);
  analysis::HardwareSpec h;
  h.name = r.text("name");
  h.display_name = r.text("display_name", h.name);
  h.nominal_memory_gb = r.number("memory_gb");
  // What CUDA reports as total (below the datasheet figure); without it, the datasheet's GB.
  h.memory_bytes = r.number("memory_gib", h.nominal_memory_gb * 1e9 / analysis::kBytesPerGiB) *
                   analysis::kBytesPerGiB;
  h.bandwidth_bytes_per_s = r.number("bandwidth_gbps") * 1e9;
  h.bf16_tflops = r.number("bf16_tflops");
  h.fp8_tflops = r.number("fp8_tflops", 0.0);
  h.int8_tflops = r.number("int8_tflops", 0.0);
  h.tdp_watts = r.number("tdp_watts", 0.0);
  h.form_factor = r.text("form_factor", std::string("PCIe"));
  h.interconnect = r.text("interconnect", std::string());
  h.generation = r.text("generation", std::string());
  h.allreduce_bus_gbps = r.number("allreduce_bus_gbps", 0.0);
  h.allreduce_latency_us = r.number("allreduce_latency_us", 0.0);
  h.bandwidth_efficiency = r.number("bandwidth_efficiency", 0.8);
  h.compute_efficiency = r.number("compute_efficiency", 0.75);
  h.fp8_compute_efficiency = r.number("fp8_compute_efficiency", -1.0);
  // Absent: the serving engine's step overhead (sim.engine); set: this GPU's override.
  const double overhead_ms = r.number("step_overhead_ms", -1.0);
  h.step_overhead_s = overhead_ms >= 0 ? overhead_ms / 1000.0 : -1.0;
  r.reject_unknown();
  if (!h.generation.empty() && h.generation != "ampere" && h.generation != "ada" &&
      h.generation != "hopper" && h.generation != "blackwell")
    throw std::invalid_argument(where + ": generation must be ampere, ada, hopper or blackwell");
  if (h.allreduce_bus_gbps < 0 || h.allreduce_latency_us < 0)
    throw std::invalid_argument(where +
                                ": allreduce_bus_gbps and allreduce_latency_us must be >= 0");
  if (h.fp8_compute_efficiency > 1)
    throw std::invalid_argument(where + ": fp8_compute_efficiency must be in (0, 1]");
  if (h.memory_bytes <= 0 || h.bandwidth_bytes_per_s <= 0 || h.bf16_tflops <= 0)
    throw std::invalid_argument(
        where + ": memory_gb, memory_gib, bandwidth_gbps and bf16_tflops must be > 0");
  if (h.bandwidth_efficiency <= 0 || h.bandwidth_efficiency > 1 || h.compute_efficiency <= 0 ||
      h.compute_efficiency > 1)
    throw std::invalid_argument(where + ": efficiency factors must be in (0, 1]");
  return h;
}

analysis::ModelSpec parse_model(const json& e, const std::string& where) {
  if (!e.is_object()) throw std::invalid_argument(where + ": must be an object");
  EntryReader r(e, where);
  analysis::ModelSpec m;
  m.name = r.text("name");
  m.params = r.number("params");
  m.layers = r.integer("layers");
  m.hidden = r.integer("hidden");
  m.heads = r.integer("heads");
  m.kv_heads = r.integer("kv_heads");
  m.head_dim = r.integer("head_dim");
  m.ffn = r.integer("ffn");
  m.vocab = r.integer("vocab");
  m.max_context_tokens = r.integer("max_context_tokens");
  m.tied_embeddings = r.boolean("tie_word_embeddings", false);
  // An explicit reserve overrides the one computed from the model's shape (analysis/memory_fit.h).
  m.activation_reserve_bytes = r.number("activation_reserve_gib", -1.0);
  if (m.activation_reserve_bytes >= 0) m.activation_reserve_bytes *= analysis::kBytesPerGiB;
  // Mixture of experts (sim/README.md "Mixture of experts"): all three or none.
  m.experts = r.optional_integer("experts");
  m.experts_per_token = r.optional_integer("experts_per_token");
  m.expert_ffn = r.optional_integer("expert_ffn");
  m.shared_expert_ffn = r.optional_integer("shared_expert_ffn");
  const bool has_active = r.has("active_params");
  const double published_active = r.number("active_params", 0.0);
  r.reject_unknown();
  if (m.params <= 0) throw std::invalid_argument(where + ": field 'params' must be > 0");
  if (m.kv_heads > m.heads)
    throw std::invalid_argument(where + ": field 'kv_heads' must not exceed 'heads'");
  const bool any_moe = m.experts > 0 || m.experts_per_token > 0 || m.expert_ffn > 0 ||
                       m.shared_expert_ffn > 0 || has_active;
  if (any_moe) {
    if (m.experts == 0 || m.experts_per_token == 0 || m.expert_ffn == 0)
      throw std::invalid_argument(where +
                                  ": a mixture of experts needs 'experts', 'experts_per_token' "
                                  "and 'expert_ffn' (shared_expert_ffn and active_params are "
                                  "optional)");
    if (m.experts < 2 || m.experts_per_token > m.experts)
      throw std::invalid_argument(where +
                                  ": field 'experts_per_token' must be 1..'experts' and "
                                  "'experts' at least 2");
    const double routed = static_cast<double>(m.experts) * analysis::expert_params(m);
    if (routed >= m.params) {
      char text[192];
      std::snprintf(text, sizeof text,
                    ": %lld experts of 3 x hidden x expert_ffn x layers = %.3g parameters "
                    "exceed field 'params' (%.3g)",
                    static_cast<long long>(m.experts), routed, m.params);
      throw std::invalid_argument(where + text);
    }
    // The model card's active count checks the description: within 3 % of what it implies.
    const double derived = analysis::active_params(m);
    if (has_active && std::abs(derived - published_active) > 0.03 * published_active) {
      char text[192];
      std::snprintf(text, sizeof text,
                    ": field 'active_params' (%.4g) disagrees with the %.4g the expert fields "
                    "imply (more than 3 %%)",
                    published_active, derived);
      throw std::invalid_argument(where + text);
    }
  }
  return m;
}

}  // namespace

ProfileCatalog ProfileCatalog::builtin() {
  ProfileCatalog catalog;
  for (std::size_t i = 0; i < embedded::kFileCount; ++i) {
    const auto& f = embedded::kFiles[i];
    if (auto err = catalog.add_json(f.content, f.name)) throw std::logic_error(*err);
  }
  return catalog;
}

std::optional<std::string> ProfileCatalog::add_json(std::string_view text,
                                                    std::string_view source) {
  const std::string src(source);
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded()) return src + ": not valid JSON";
  if (!doc.is_object()) return src + ": top level must be an object";
  std::vector<analysis::HardwareSpec> hw;
  std::vector<analysis::ModelSpec> models;
  try {
    for (auto it = doc.begin(); it != doc.end(); ++it) {
      const std::string& key = it.key();
      if (!key.empty() && key[0] == '_') continue;
      if (key != "hardware" && key != "models")
        return src + ": unknown key '" + key + "' (expected 'hardware' or 'models')";
      if (!it->is_array()) return src + ": '" + key + "' must be an array";
      for (std::size_t i = 0; i < it->size(); ++i) {
        const std::string where = src + ": " + key + "[" + std::to_string(i) + "]";
        if (key == "hardware")
          hw.push_back(parse_hardware((*it)[i], where));
        else
          models.push_back(parse_model((*it)[i], where));
      }
    }
  } catch (const std::invalid_argument& e) {
    return std::string(e.what());
  }
  for (auto& h : hw) hardware_[h.name] = std::move(h);
  for (auto& m : models) models_[m.name] = std::move(m);
  return std::nullopt;
}

std::optional<std::string> ProfileCatalog::add_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "cannot read profile file '" + path + "'";
  std::ostringstream ss;
  ss << in.rdbuf();
  return add_json(ss.str(), path);
}

std::optional<analysis::HardwareSpec> ProfileCatalog::hardware(std::string_view name) const {
  auto it = hardware_.find(name);
  if (it == hardware_.end()) return std::nullopt;
  return it->second;
}

std::optional<analysis::ModelSpec> ProfileCatalog::model(std::string_view name) const {
  auto it = models_.find(name);
  if (it == models_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> ProfileCatalog::hardware_names() const {
  std::vector<std::string> out;
  for (const auto& [name, h] : hardware_) out.push_back(name);
  return out;
}

std::vector<std::string> ProfileCatalog::model_names() const {
  std::vector<std::string> out;
  for (const auto& [name, m] : models_) out.push_back(name);
  return out;
}

std::string ProfileCatalog::listing() const {
  std::string out =
      "GPUs (memory GB datasheet / GiB as CUDA reports it, bandwidth GB/s, BF16/FP8 TFLOPS, "
      "efficiency bw/compute 16-bit/compute 8-bit, generation):\n";
  char line[256];
  for (const auto& [name, h] : hardware_) {
    std::snprintf(
        line, sizeof line,
        "  %-16s %4.0f GB/%6.2f GiB %6.0f GB/s %6.0f/%-6.0f TFLOPS  %.2f/%.2f/%.2f  %-9s  %s\n",
        name.c_str(), h.nominal_memory_gb, h.memory_bytes / analysis::kBytesPerGiB,
        h.bandwidth_bytes_per_s / 1e9, h.bf16_tflops, h.fp8_tflops, h.bandwidth_efficiency,
        h.compute_efficiency, analysis::compute_efficiency_for(h, analysis::Dtype::kFp8),
        h.generation.empty() ? "-" : h.generation.c_str(), h.display_name.c_str());
    out += line;
  }
  out += "Models (params, layers, heads/KV heads, KV bytes/token at 16-bit, max context):\n";
  for (const auto& [name, m] : models_) {
    std::snprintf(
        line, sizeof line,
        "  %-16s %6.2fB  %3lld layers  %3lld/%-3lld heads  %7.0f KiB/token  %lld tokens\n",
        name.c_str(), m.params / 1e9, static_cast<long long>(m.layers),
        static_cast<long long>(m.heads), static_cast<long long>(m.kv_heads),
        analysis::kv_bytes_per_token(m) / 1024.0, static_cast<long long>(m.max_context_tokens));
    out += line;
    if (analysis::is_moe(m)) {
      std::snprintf(line, sizeof line,
                    "  %-16s mixture of experts: %lld experts, %lld per token, %.2fB active\n", "",
                    static_cast<long long>(m.experts), static_cast<long long>(m.experts_per_token),
                    analysis::active_params(m) / 1e9);
      out += line;
    }
  }
  out += "Dtypes: bf16, fp16, fp8, int8, int4\n";
  return out;
}

}  // namespace llmcap::sim

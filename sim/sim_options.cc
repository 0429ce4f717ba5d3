#include "sim/sim_options.h"

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace llmcap::sim {

namespace {

using nlohmann::json;

struct FieldError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

double as_number(const json& v, const std::string& key) {
  if (!v.is_number()) throw FieldError(key + ": must be a number");
  return v.get<double>();
}

std::int64_t as_integer(const json& v, const std::string& key) {
  if (!v.is_number_integer()) throw FieldError(key + ": must be an integer");
  return v.get<std::int64_t>();
}

std::string as_string(const json& v, const std::string& key) {
  if (!v.is_string()) throw FieldError(key + ": must be a string");
  return v.get<std::string>();
}

using Setter = std::function<void(const json&, const std::string&)>;

void apply(const json& obj, const std::map<std::string, Setter>& setters,
           const std::string& prefix) {
  if (!obj.is_object())
    throw FieldError((prefix.empty() ? "options" : prefix) + ": must be an object");
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const std::string key = prefix.empty() ? it.key() : prefix + "." + it.key();
    auto s = setters.find(it.key());
    if (s == setters.end()) throw FieldError(key + ": unknown key");
    s->second(*it, key);
  }
}

}  // namespace

SimOptionsResult sim_options_from_json(std::string_view json_text) {
  SimOptionsResult result;
  json doc = json::parse(json_text, nullptr, false);
  if (doc.is_discarded()) {
    result.error = "sim options: not valid JSON";
    return result;
  }
  SimOptions o;
  FaultOptions& f = o.faults;
  const std::map<std::string, Setter> fault_setters = {
      {"error_rate", [&](const json& v, const std::string& k) { f.error_rate = as_number(v, k); }},
      {"rate_limit_rate",
       [&](const json& v, const std::string& k) { f.rate_limit_rate = as_number(v, k); }},
      {"retry_after_s",
       [&](const json& v, const std::string& k) { f.retry_after_s = as_integer(v, k); }},
      {"stall_rate", [&](const json& v, const std::string& k) { f.stall_rate = as_number(v, k); }},
      {"stall_after_tokens",
       [&](const json& v, const std::string& k) { f.stall_after_tokens = as_integer(v, k); }},
      {"stall_ms", [&](const json& v, const std::string& k) { f.stall_ms = as_integer(v, k); }},
      {"reset_rate", [&](const json& v, const std::string& k) { f.reset_rate = as_number(v, k); }},
      {"reset_after_tokens",
       [&](const json& v, const std::string& k) { f.reset_after_tokens = as_integer(v, k); }},
      {"malformed_rate",
       [&](const json& v, const std::string& k) { f.malformed_rate = as_number(v, k); }},
      {"malformed_after_tokens",
       [&](const json& v, const std::string& k) { f.malformed_after_tokens = as_integer(v, k); }},
      {"slow_headers_rate",
       [&](const json& v, const std::string& k) { f.slow_headers_rate = as_number(v, k); }},
      {"slow_headers_ms",
       [&](const json& v, const std::string& k) { f.slow_headers_ms = as_integer(v, k); }},
  };
  const std::map<std::string, Setter> setters = {
      {"hardware", [&](const json& v, const std::string& k) { o.hardware = as_string(v, k); }},
      {"model", [&](const json& v, const std::string& k) { o.model = as_string(v, k); }},
      {"served_model_name",
       [&](const json& v, const std::string& k) { o.served_model_name = as_string(v, k); }},
      {"dtype", [&](const json& v, const std::string& k) { o.dtype = as_string(v, k); }},
      {"engine", [&](const json& v, const std::string& k) { o.engine = as_string(v, k); }},
      {"kv_cache_dtype",
       [&](const json& v, const std::string& k) { o.kv_cache_dtype = as_string(v, k); }},
      {"profiles_file",
       [&](const json& v, const std::string& k) { o.profiles_file = as_string(v, k); }},
      {"address", [&](const json& v, const std::string& k) { o.address = as_string(v, k); }},
      {"port",
       [&](const json& v, const std::string& k) {
         const auto p = as_integer(v, k);
         if (p < 0 || p > 65535) throw FieldError(k + ": must be 0..65535");
         o.port = static_cast<std::uint16_t>(p);
       }},
      {"seed",
       [&](const json& v, const std::string& k) {
         if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0))
           throw FieldError(k + ": must be a non-negative integer");
         o.seed = v.get<std::uint64_t>();
       }},
      {"time_scale", [&](const json& v, const std::string& k) { o.time_scale = as_number(v, k); }},
      {"gpu_memory_utilization",
       [&](const json& v, const std::string& k) { o.gpu_memory_utilization = as_number(v, k); }},
      {"max_num_seqs",
       [&](const json& v, const std::string& k) { o.max_num_seqs = as_integer(v, k); }},
      {"tensor_parallel",
       [&](const json& v, const std::string& k) { o.tensor_parallel = as_integer(v, k); }},
      {"max_num_batched_tokens",
       [&](const json& v, const std::string& k) { o.max_num_batched_tokens = as_integer(v, k); }},
      {"max_model_len",
       [&](const json& v, const std::string& k) { o.max_model_len = as_integer(v, k); }},
      {"activation_reserve_gib",
       [&](const json& v, const std::string& k) { o.activation_reserve_gib = as_number(v, k); }},
      {"tokens_per_event",
       [&](const json& v, const std::string& k) { o.tokens_per_event = as_integer(v, k); }},
      {"default_max_tokens",
       [&](const json& v, const std::string& k) { o.default_max_tokens = as_integer(v, k); }},
      {"enable_prefix_caching",
       [&](const json& v, const std::string& k) {
         if (!v.is_boolean()) throw FieldError(k + ": must be a boolean");
         o.enable_prefix_caching = v.get<bool>();
       }},
      {"faults", [&](const json& v, const std::string& k) { apply(v, fault_setters, k); }},
  };
  try {
    apply(doc, setters, "");
  } catch (const FieldError& e) {
    result.error = e.what();
    return result;
  }
  result.options = std::move(o);
  return result;
}

}  // namespace llmcap::sim

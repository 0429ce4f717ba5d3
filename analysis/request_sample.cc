#include "analysis/request_sample.h"

#include <array>

namespace llmcap::analysis {

namespace {
constexpr std::array<std::string_view, kErrorClassCount> kErrorNames = {
    "none",         "connect",       "tls",       "timeout-connect", "timeout-first-token",
    "timeout-idle", "timeout-total", "http-4xx",  "http-429",        "http-5xx",
    "protocol",     "cancelled",     "truncated", "abandoned",       "client-resources",
};
}  // namespace

std::string_view to_string(ErrorClass e) {
  const auto i = static_cast<std::size_t>(e);
  return i < kErrorNames.size() ? kErrorNames[i] : "unknown";
}

std::optional<ErrorClass> parse_error_class(std::string_view s) {
  for (std::size_t i = 0; i < kErrorNames.size(); ++i) {
    if (kErrorNames[i] == s) return static_cast<ErrorClass>(i);
  }
  return std::nullopt;
}

std::string_view to_string(FinishReason f) {
  switch (f) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kOther: return "other";
    case FinishReason::kUnknown: break;
  }
  return "unknown";
}

FinishReason parse_finish_reason(std::string_view s) {
  if (s == "stop") return FinishReason::kStop;
  if (s == "length") return FinishReason::kLength;
  if (s.empty()) return FinishReason::kUnknown;
  return FinishReason::kOther;
}

}  // namespace llmcap::analysis

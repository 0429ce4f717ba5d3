// ApiKind: which OpenAI-compatible endpoint a step drives.
#pragma once

#include <optional>
#include <string_view>

namespace llmcap::agent {

enum class ApiKind {
  kCompletions,  // POST /v1/completions, tokens in choices[].text
  kChat,         // POST /v1/chat/completions, tokens in choices[].delta.content
};

inline std::string_view to_string(ApiKind k) {
  return k == ApiKind::kChat ? "chat" : "completions";
}
inline std::optional<ApiKind> parse_api_kind(std::string_view s) {
  if (s == "completions") return ApiKind::kCompletions;
  if (s == "chat") return ApiKind::kChat;
  return std::nullopt;
}
// Path of the endpoint under the target's base path.
inline std::string_view api_path(ApiKind k) {
  return k == ApiKind::kChat ? "/v1/chat/completions" : "/v1/completions";
}

}  // namespace llmcap::agent

#include "agent/request_builder.h"

#include <nlohmann/json.hpp>

namespace llmcap::agent {

using json = nlohmann::json;

std::optional<std::string> RequestBuilder::check_json_object(const std::string& text,
                                                             const std::string& field_name) {
  if (text.empty()) return std::nullopt;
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded()) return field_name + ": not valid JSON";
  if (!doc.is_object()) return field_name + ": must be a JSON object";
  return std::nullopt;
}

Expected<std::string> RequestBuilder::build(const RequestBodySpec& spec) {
  json body = json::object();
  if (!spec.model.empty()) body["model"] = spec.model;
  if (spec.api == ApiKind::kCompletions) {
    body["prompt"] = spec.prompt;
  } else if (!spec.messages_json.empty()) {
    json messages = json::parse(spec.messages_json, nullptr, false);
    if (messages.is_discarded() || !messages.is_array()) {
      return Expected<std::string>::failure("messages: must be a JSON array");
    }
    body["messages"] = std::move(messages);
  } else {
    body["messages"] = json::array({json{{"role", "user"}, {"content", spec.prompt}}});
  }
  if (spec.max_tokens >= 0) body["max_tokens"] = spec.max_tokens;
  if (spec.min_tokens) body["min_tokens"] = *spec.min_tokens;
  if (spec.ignore_eos) body["ignore_eos"] = true;
  if (spec.temperature) body["temperature"] = *spec.temperature;
  body["stream"] = spec.stream;
  if (spec.stream && spec.include_usage) body["stream_options"] = json{{"include_usage", true}};
  if (!spec.extra_body_json.empty()) {
    json extra = json::parse(spec.extra_body_json, nullptr, false);
    if (extra.is_discarded() || !extra.is_object()) {
      return Expected<std::string>::failure("extra_body: must be a JSON object");
    }
    for (auto& [key, value] : extra.items()) body[key] = value;
  }
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace llmcap::agent

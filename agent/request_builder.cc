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

namespace {

// Appends s as a JSON string exactly as nlohmann's dump() writes it, for printable ASCII;
// returns false (appending nothing) for anything else, so the caller falls back to nlohmann
// (control characters, non-ASCII text and invalid UTF-8 keep its escaping and replacement).
bool append_ascii_json_string(std::string& out, std::string_view s) {
  std::size_t escapes = 0;
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x80) return false;
    if (c == '"' || c == '\\') ++escapes;
  }
  out.reserve(out.size() + s.size() + escapes + 2);
  out.push_back('"');
  if (escapes == 0) {
    out.append(s);
  } else {
    for (const char c : s) {
      if (c == '"' || c == '\\') out.push_back('\\');
      out.push_back(c);
    }
  }
  out.push_back('"');
  return true;
}

void append_json_string(std::string& out, std::string_view s) {
  if (append_ascii_json_string(out, s)) return;
  out.append(json(std::string(s)).dump(-1, ' ', false, json::error_handler_t::replace));
}

// The body of the common request (no messages_json, no extra_body) written directly, with the
// members in the order nlohmann's std::map-backed object dumps them (sorted by key), so the
// bytes are exactly what the DOM path below produces (issue 10: building and dumping a DOM per
// request was ≈ 17,000 instructions, the largest user-space item of the per-request cost).
std::string build_direct(const RequestBodySpec& spec) {
  std::string out;
  out.reserve(160 + spec.prompt.size() + spec.model.size());
  out.push_back('{');
  bool first = true;
  auto key = [&](std::string_view k) {
    if (!first) out.push_back(',');
    first = false;
    out.push_back('"');
    out.append(k);
    out.append("\":");
  };
  if (spec.ignore_eos) {
    key("ignore_eos");
    out.append("true");
  }
  if (spec.max_tokens >= 0) {
    key("max_tokens");
    out.append(std::to_string(spec.max_tokens));
  }
  if (spec.api != ApiKind::kCompletions) {
    key("messages");
    out.append("[{\"content\":");
    append_json_string(out, spec.prompt);
    out.append(",\"role\":\"user\"}]");
  }
  if (spec.min_tokens) {
    key("min_tokens");
    out.append(std::to_string(*spec.min_tokens));
  }
  if (!spec.model.empty()) {
    key("model");
    append_json_string(out, spec.model);
  }
  if (spec.api == ApiKind::kCompletions) {
    key("prompt");
    append_json_string(out, spec.prompt);
  }
  key("stream");
  out.append(spec.stream ? "true" : "false");
  if (spec.stream && spec.include_usage) {
    key("stream_options");
    out.append("{\"include_usage\":true}");
  }
  if (spec.temperature) {
    key("temperature");
    out.append(json(*spec.temperature).dump());
  }
  out.push_back('}');
  return out;
}

}  // namespace

Expected<std::string> RequestBuilder::build(const RequestBodySpec& spec) {
  if (spec.extra_body_json.empty() &&
      (spec.api == ApiKind::kCompletions || spec.messages_json.empty()))
    return build_direct(spec);
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

#include "agent/chunk_decoder.h"

#include <nlohmann/json.hpp>

namespace llmcap::agent {

namespace {

using json = nlohmann::json;

std::uint32_t string_bytes(const json& obj, const char* key) {
  const auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) return 0;
  return static_cast<std::uint32_t>(it->get_ref<const std::string&>().size());
}

std::int32_t int_field(const json& obj, const char* key) {
  const auto it = obj.find(key);
  if (it == obj.end() || !it->is_number_integer()) return -1;
  return static_cast<std::int32_t>(it->get<std::int64_t>());
}

std::string_view trim(std::string_view s) {
  while (!s.empty() &&
         (s.front() == ' ' || s.front() == '\t' || s.front() == '\n' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

}  // namespace

DecodedChunk ChunkDecoder::decode(std::string_view data, ApiKind api, bool streaming) {
  DecodedChunk out;
  const std::string_view trimmed = trim(data);
  if (trimmed == "[DONE]") {
    out.done = true;
    return out;
  }
  json doc = json::parse(trimmed.begin(), trimmed.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    out.malformed = true;
    out.malformed_reason = doc.is_discarded() ? "invalid JSON" : "JSON value is not an object";
    return out;
  }
  if (const auto id = doc.find("id"); id != doc.end() && id->is_string()) {
    out.id = id->get<std::string>();
  }
  if (const auto err = doc.find("error"); err != doc.end() && !err->is_null()) {
    out.server_error = true;
    if (err->is_string()) {
      out.server_error_message = err->get<std::string>();
    } else if (err->is_object()) {
      if (const auto m = err->find("message"); m != err->end() && m->is_string())
        out.server_error_message = m->get<std::string>();
      if (const auto c = err->find("code"); c != err->end() && c->is_number_integer())
        out.server_error_code = c->get<int>();
    }
  }
  if (const auto usage = doc.find("usage"); usage != doc.end() && usage->is_object()) {
    out.prompt_tokens = int_field(*usage, "prompt_tokens");
    out.completion_tokens = int_field(*usage, "completion_tokens");
  }
  const auto choices = doc.find("choices");
  if (choices != doc.end() && choices->is_array()) {
    for (const auto& choice : *choices) {
      if (!choice.is_object()) continue;
      std::uint32_t bytes = 0;
      if (api == ApiKind::kCompletions) {
        bytes = string_bytes(choice, "text");
      } else {
        const char* holder = streaming ? "delta" : "message";
        if (const auto d = choice.find(holder); d != choice.end() && d->is_object()) {
          bytes = string_bytes(*d, "content") + string_bytes(*d, "reasoning_content") +
                  string_bytes(*d, "reasoning");
        }
      }
      out.text_bytes += bytes;
      if (const auto f = choice.find("finish_reason"); f != choice.end() && f->is_string()) {
        out.finish_reason = analysis::parse_finish_reason(f->get_ref<const std::string&>());
      }
    }
  }
  out.is_token = out.text_bytes > 0;
  return out;
}

}  // namespace llmcap::agent

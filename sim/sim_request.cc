#include "sim/sim_request.h"

#include <nlohmann/json.hpp>

#include "sim/kv_block_pool.h"

namespace llmcap::sim {

namespace {

using nlohmann::json;

struct Invalid {
  RequestError error;
};

[[noreturn]] void fail(std::string param, std::string message, int status = 400) {
  throw Invalid{RequestError{status, std::move(message), std::move(param)}};
}

// Chat message content: a string or an array of {"type":"text","text":...} parts.
std::string message_content(const json& content, const std::string& where) {
  if (content.is_null()) return {};
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) fail(where, where + " must be a string or an array of parts");
  std::string out;
  for (const auto& part : content) {
    if (!part.is_object() || !part.contains("text") || !part["text"].is_string())
      fail(where, where + " parts must be objects with a string 'text'");
    if (!out.empty()) out.push_back(' ');
    out += part["text"].get<std::string>();
  }
  return out;
}

std::string render_messages(const json& body) {
  if (!body.contains("messages")) fail("messages", "'messages' is required");
  const json& messages = body["messages"];
  if (!messages.is_array() || messages.empty())
    fail("messages", "'messages' must be a non-empty array");
  std::vector<std::pair<std::string, std::string>> rendered;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const std::string where = "messages[" + std::to_string(i) + "]";
    const json& m = messages[i];
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
      fail(where + ".role", where + " must be an object with a string 'role'");
    rendered.emplace_back(m["role"].get<std::string>(),
                          message_content(m.value("content", json()), where + ".content"));
  }
  return SimTokenizer::render_chat(rendered);
}

// Completions prompt: a string, an array of one string, or an array of token ids.
std::vector<std::int64_t> prompt_token_ids(const json& body, const SimTokenizer& tokenizer) {
  if (!body.contains("prompt")) fail("prompt", "'prompt' is required");
  const json& p = body["prompt"];
  if (p.is_string()) return tokenizer.tokenize(p.get<std::string>());
  if (p.is_array() && p.size() == 1 && p[0].is_string())
    return tokenizer.tokenize(p[0].get<std::string>());
  if (p.is_array() && !p.empty() && p[0].is_number_integer()) {
    std::vector<std::int64_t> ids;
    ids.reserve(p.size());
    for (const auto& t : p) {
      if (!t.is_number_integer()) fail("prompt", "token-id prompts must be arrays of integers");
      ids.push_back(t.get<std::int64_t>());
    }
    return ids;
  }
  fail("prompt", "'prompt' must be a string, a one-element array of strings or token ids");
}

std::int64_t optional_int(const json& body, const char* key, std::int64_t fallback) {
  if (!body.contains(key) || body[key].is_null()) return fallback;
  if (!body[key].is_number_integer()) fail(key, std::string("'") + key + "' must be an integer");
  return body[key].get<std::int64_t>();
}

bool optional_bool(const json& body, const char* key) {
  if (!body.contains(key) || body[key].is_null()) return false;
  if (!body[key].is_boolean()) fail(key, std::string("'") + key + "' must be a boolean");
  return body[key].get<bool>();
}

}  // namespace

ParseResult parse_generation_request(std::string_view text, bool chat,
                                     const SimTokenizer& tokenizer,
                                     const GenerationLimits& limits) {
  ParseResult result;
  try {
    json body = json::parse(text, nullptr, false);
    if (body.is_discarded() || !body.is_object()) fail("", "request body must be a JSON object");
    GenerationRequest r;
    r.chat = chat;
    if (body.contains("model")) {
      if (!body["model"].is_string()) fail("model", "'model' must be a string");
      r.model = body["model"].get<std::string>();
      if (!limits.served_model.empty() && r.model != limits.served_model)
        fail("model", "The model `" + r.model + "` does not exist.", 404);
    }
    const std::vector<std::int64_t> ids =
        chat ? tokenizer.tokenize(render_messages(body)) : prompt_token_ids(body, tokenizer);
    r.prompt_tokens = static_cast<std::int64_t>(ids.size());
    if (limits.block_tokens > 0) {
      r.block_hashes = prefix_block_hashes(ids, limits.block_tokens);
      r.partial_block_ids.assign(
          ids.begin() + static_cast<std::ptrdiff_t>(r.block_hashes.size()) * limits.block_tokens,
          ids.end());
    }
    if (r.prompt_tokens < 1) fail(chat ? "messages" : "prompt", "the prompt has no tokens");
    std::int64_t max_tokens = optional_int(body, "max_tokens", -1);
    if (chat) max_tokens = optional_int(body, "max_completion_tokens", max_tokens);
    if (max_tokens == -1) max_tokens = limits.default_max_tokens;
    if (max_tokens < 1) fail("max_tokens", "'max_tokens' must be at least 1");
    r.max_tokens = max_tokens;
    r.min_tokens = optional_int(body, "min_tokens", 0);
    if (r.min_tokens < 0 || r.min_tokens > r.max_tokens)
      fail("min_tokens", "'min_tokens' must be between 0 and max_tokens");
    r.ignore_eos = optional_bool(body, "ignore_eos");
    r.stream = optional_bool(body, "stream");
    if (body.contains("stream_options") && !body["stream_options"].is_null()) {
      const json& so = body["stream_options"];
      if (!so.is_object()) fail("stream_options", "'stream_options' must be an object");
      if (!r.stream)
        fail("stream_options", "'stream_options' is only allowed when 'stream' is true");
      r.include_usage = optional_bool(so, "include_usage");
    }
    if (body.contains("n") && optional_int(body, "n", 1) != 1) fail("n", "only n = 1 is simulated");
    if (r.prompt_tokens + r.max_tokens > limits.max_model_len) {
      fail(chat ? "messages" : "prompt",
           "This model's maximum context length is " + std::to_string(limits.max_model_len) +
               " tokens. However, you requested " + std::to_string(r.prompt_tokens + r.max_tokens) +
               " tokens (" + std::to_string(r.prompt_tokens) + " in the " +
               (chat ? "messages" : "prompt") + ", " + std::to_string(r.max_tokens) +
               " in the completion). Please reduce the length of the input or completion.");
    }
    result.request = std::move(r);
  } catch (const Invalid& e) {
    result.error = e.error;
  }
  return result;
}

TokenizeInput parse_tokenize_request(std::string_view text) {
  TokenizeInput out;
  try {
    json body = json::parse(text, nullptr, false);
    if (body.is_discarded() || !body.is_object()) fail("", "request body must be a JSON object");
    if (body.contains("prompt")) {
      if (!body["prompt"].is_string()) fail("prompt", "'prompt' must be a string");
      out.text = body["prompt"].get<std::string>();
    } else if (body.contains("messages")) {
      out.text = render_messages(body);
    } else {
      fail("prompt", "'prompt' or 'messages' is required");
    }
  } catch (const Invalid& e) {
    out.error = e.error;
  }
  return out;
}

}  // namespace llmcap::sim

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
  const json tools = body.value("tools", json());
  if (!tools.is_null() && !tools.is_array()) fail("tools", "'tools' must be an array");
  const json& messages = body["messages"];
  if (!messages.is_array() || messages.empty())
    fail("messages", "'messages' must be a non-empty array");
  std::vector<std::pair<std::string, std::string>> rendered;
  // Tool definitions are part of the prompt, as a chat template renders them (vLLM does unless
  // --exclude-tools-when-tool-choice-none): one "<|tools|>" line of the indented JSON.
  if (tools.is_array() && !tools.empty()) rendered.emplace_back("tools", tools.dump(1));
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

std::vector<std::string> stop_strings(const json& body) {
  std::vector<std::string> out;
  if (!body.contains("stop") || body["stop"].is_null()) return out;
  const json& stop = body["stop"];
  if (stop.is_string()) {
    out.push_back(stop.get<std::string>());
  } else if (stop.is_array()) {
    for (const auto& s : stop) {
      if (!s.is_string()) fail("stop", "'stop' must be a string or an array of strings");
      out.push_back(s.get<std::string>());
    }
  } else {
    fail("stop", "'stop' must be a string or an array of strings");
  }
  for (const auto& s : out) {
    if (s.empty()) fail("stop", "stop cannot contain an empty string.");
  }
  return out;
}

std::vector<std::int64_t> stop_token_ids(const json& body) {
  std::vector<std::int64_t> out;
  if (!body.contains("stop_token_ids") || body["stop_token_ids"].is_null()) return out;
  const json& ids = body["stop_token_ids"];
  if (!ids.is_array()) fail("stop_token_ids", "'stop_token_ids' must be an array of integers");
  for (const auto& id : ids) {
    if (!id.is_number_integer())
      fail("stop_token_ids", "'stop_token_ids' must be an array of integers");
    out.push_back(id.get<std::int64_t>());
  }
  return out;
}

constexpr std::int64_t kMaxLogprobs = 20;  // vLLM's default --max-logprobs
constexpr std::int64_t kMaxChoices = 128;  // OpenAI's documented bound on n

void check_logprobs_count(const char* key, std::int64_t k) {
  if (k < 0) fail(key, std::string("`") + key + "` must be a positive value.");
  if (k > kMaxLogprobs) {
    fail(key, "Requested sample logprobs of " + std::to_string(k) +
                  ", which is greater than max allowed: " + std::to_string(kMaxLogprobs));
  }
}

// Completions: `logprobs` k (0..20). Chat: `logprobs: true`, `top_logprobs` k (0..20; requires
// logprobs).
std::optional<std::int64_t> logprobs(const json& body, bool chat) {
  if (!chat) {
    if (!body.contains("logprobs") || body["logprobs"].is_null()) return std::nullopt;
    const std::int64_t k = optional_int(body, "logprobs", 0);
    check_logprobs_count("logprobs", k);
    return k;
  }
  const bool wanted = optional_bool(body, "logprobs");
  const bool top_given = body.contains("top_logprobs") && !body["top_logprobs"].is_null();
  const std::int64_t top = optional_int(body, "top_logprobs", 0);
  check_logprobs_count("top_logprobs", top);
  if (top_given && top > 0 && !wanted)
    fail("top_logprobs", "when using `top_logprobs`, `logprobs` must be set to true.");
  if (!wanted) return std::nullopt;
  return top;
}

// tools / tool_choice as vLLM serves them without --enable-auto-tool-choice and a tool parser:
// tools given without tool_choice mean "auto", which it refuses; "none" is served (the tools
// only lengthen the prompt). "required" and a named function work in vLLM through structured
// output, which the simulator cannot produce: refused, naming tool_choice.
void check_tools(const json& body) {
  const bool has_tools =
      body.contains("tools") && body["tools"].is_array() && !body["tools"].empty();
  const json choice = body.value("tool_choice", json());
  if (choice.is_null() && !has_tools) return;
  const std::string name = choice.is_null()     ? "auto"
                           : choice.is_string() ? choice.get<std::string>()
                                                : "";
  if (name == "none") return;
  if (name == "auto") {
    fail("tool_choice",
         "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be "
         "set");
  }
  if (!has_tools) fail("tool_choice", "When using `tool_choice`, `tools` must be set.");
  if (name == "required" || choice.is_object()) {
    fail("tool_choice",
         "tool_choice " + (choice.is_object() ? std::string("naming a function") : "\"required\"") +
             " is not simulated: vLLM answers it with structured output (a generated tool call), "
             "which the simulator does not produce; send tool_choice \"none\"");
  }
  fail("tool_choice", "'tool_choice' must be \"none\", \"auto\", \"required\" or a named function");
}

// Fields vLLM honours that change what the answer is and the simulator cannot produce: refused
// rather than silently ignored.
void check_unsimulated(const json& body, bool chat) {
  const auto given = [&](const char* key) {
    return body.contains(key) && !body[key].is_null() && body[key] != false;
  };
  if (!chat && given("suffix")) fail("suffix", "suffix is not currently supported");
  // Chat's echo prepends the last message when it is the assistant's (the reply continues it).
  if (chat && given("echo") && body["messages"].back().value("role", "") == "assistant")
    fail("echo", "echo of an assistant message is not simulated");
  if (given("response_format")) {
    const json& rf = body["response_format"];
    if (!rf.is_object() || rf.value("type", "") != "text") {
      fail("response_format",
           "response_format other than {\"type\": \"text\"} is not simulated: it needs "
           "structured output, which the simulator does not produce");
    }
  }
  for (const char* key : {"guided_json", "guided_regex", "guided_choice", "guided_grammar",
                          "structured_outputs", "prompt_logprobs", "use_beam_search"}) {
    if (given(key)) {
      fail(key, std::string("'") + key +
                    "' is not simulated: the simulator's synthetic text cannot honour it");
    }
  }
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
    r.n = optional_int(body, "n", 1);
    if (r.n < 1) fail("n", "n must be at least 1, got " + std::to_string(r.n) + ".");
    if (r.n > kMaxChoices)
      fail("n", "n must be at most " + std::to_string(kMaxChoices) + " in the simulator");
    const std::int64_t best_of = optional_int(body, "best_of", r.n);
    if (best_of < r.n) {
      fail("best_of", "best_of must be greater than or equal to n, got n=" + std::to_string(r.n) +
                          ", best_of=" + std::to_string(best_of) + ".");
    }
    if (best_of > r.n)
      fail("best_of", "best_of > n is not supported (vLLM V1 does not support best_of)");
    r.stop = stop_strings(body);
    r.stop_token_ids = stop_token_ids(body);
    r.include_stop_str_in_output = optional_bool(body, "include_stop_str_in_output");
    r.logprobs = logprobs(body, chat);
    if (body.contains("seed") && !body["seed"].is_null())
      r.seed = static_cast<std::uint64_t>(optional_int(body, "seed", 0));
    if (chat) check_tools(body);
    check_unsimulated(body, chat);
    if (!chat && optional_bool(body, "echo")) {
      const json& p = body["prompt"];
      if (!p.is_string() && !(p.is_array() && p[0].is_string()))
        fail("echo",
             "echo with token-id prompts is not simulated: the simulator cannot detokenize");
      if (r.logprobs)
        fail("echo", "echo with logprobs is not simulated: it needs the prompt's logprobs");
      r.echo = p.is_string() ? p.get<std::string>() : p[0].get<std::string>();
    }
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

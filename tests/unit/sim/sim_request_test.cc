#include "sim/sim_request.h"

#include <gtest/gtest.h>

namespace llmcap::sim {
namespace {

const SimTokenizer kRequestTokenizer(32000);
const GenerationLimits kLimits{100, 16, "llama-3.1-8b"};

TEST(SimRequestTest, CompletionWithAllFields) {
  const auto r = parse_generation_request(
      R"({"model": "llama-3.1-8b", "prompt": "one two three", "max_tokens": 7, "min_tokens": 7,
          "ignore_eos": true, "stream": true, "stream_options": {"include_usage": true}})",
      false, kRequestTokenizer, kLimits);
  ASSERT_TRUE(r.request) << r.error.message;
  EXPECT_EQ(r.request->prompt_tokens, 3);
  EXPECT_EQ(r.request->max_tokens, 7);
  EXPECT_EQ(r.request->min_tokens, 7);
  EXPECT_TRUE(r.request->ignore_eos);
  EXPECT_TRUE(r.request->stream);
  EXPECT_TRUE(r.request->include_usage);
}

TEST(SimRequestTest, DefaultsAndPromptForms) {
  auto r = parse_generation_request(R"({"prompt": ["a b"]})", false, kRequestTokenizer, kLimits);
  ASSERT_TRUE(r.request);
  EXPECT_EQ(r.request->prompt_tokens, 2);
  EXPECT_EQ(r.request->max_tokens, 16);
  EXPECT_FALSE(r.request->stream);
  r = parse_generation_request(R"({"prompt": [1, 2, 3, 4]})", false, kRequestTokenizer, kLimits);
  ASSERT_TRUE(r.request);
  EXPECT_EQ(r.request->prompt_tokens, 4);
}

TEST(SimRequestTest, ChatMessagesUseTheTemplate) {
  const auto r = parse_generation_request(
      R"({"messages": [{"role": "user", "content": "hello there"}], "max_completion_tokens": 5})",
      true, kRequestTokenizer, kLimits);
  ASSERT_TRUE(r.request) << r.error.message;
  EXPECT_EQ(r.request->prompt_tokens, 4);  // <|user|> hello there <|assistant|>
  EXPECT_EQ(r.request->max_tokens, 5);
  const auto parts = parse_generation_request(
      R"({"messages": [{"role": "user", "content": [{"type": "text", "text": "a b c"}]}]})", true,
      kRequestTokenizer, kLimits);
  ASSERT_TRUE(parts.request);
  EXPECT_EQ(parts.request->prompt_tokens, 5);
}

TEST(SimRequestTest, ErrorsNameTheParam) {
  auto r = parse_generation_request(R"({"prompt": "a", "max_tokens": 0})", false, kRequestTokenizer,
                                    kLimits);
  EXPECT_EQ(r.error.param, "max_tokens");
  r = parse_generation_request(R"({"prompt": "a", "max_tokens": 5, "min_tokens": 6})", false,
                               kRequestTokenizer, kLimits);
  EXPECT_EQ(r.error.param, "min_tokens");
  r = parse_generation_request(R"({"model": "gpt-4", "prompt": "a"})", false, kRequestTokenizer,
                               kLimits);
  EXPECT_EQ(r.error.status, 404);
  r = parse_generation_request(R"({"prompt": "a b", "max_tokens": 99})", false, kRequestTokenizer,
                               kLimits);
  ASSERT_FALSE(r.request);
  EXPECT_NE(r.error.message.find("maximum context length is 100"), std::string::npos);
  r = parse_generation_request(R"({"prompt": "   "})", false, kRequestTokenizer, kLimits);
  EXPECT_EQ(r.error.param, "prompt");
  r = parse_generation_request(R"({"messages": []})", true, kRequestTokenizer, kLimits);
  EXPECT_EQ(r.error.param, "messages");
  r = parse_generation_request("nope", false, kRequestTokenizer, kLimits);
  EXPECT_FALSE(r.request);
  r = parse_generation_request(R"({"prompt": "a", "stream_options": {"include_usage": true}})",
                               false, kRequestTokenizer, kLimits);
  EXPECT_EQ(r.error.param, "stream_options");
}

TEST(SimRequestTest, StopNAndLogprobs) {
  auto r = parse_generation_request(
      R"({"prompt": "a", "stop": ["\n", "."], "stop_token_ids": [7], "n": 3, "best_of": 3,
          "logprobs": 0, "seed": 5, "include_stop_str_in_output": true})",
      false, kRequestTokenizer, kLimits);
  ASSERT_TRUE(r.request) << r.error.message;
  EXPECT_EQ(r.request->stop, (std::vector<std::string>{"\n", "."}));
  EXPECT_EQ(r.request->stop_token_ids, (std::vector<std::int64_t>{7}));
  EXPECT_EQ(r.request->n, 3);
  EXPECT_EQ(r.request->logprobs, 0);
  EXPECT_EQ(r.request->seed, 5u);
  EXPECT_TRUE(r.request->include_stop_str_in_output);
  EXPECT_FALSE(r.request->echo);
  r = parse_generation_request(R"({"prompt": ["say this"], "echo": true})", false,
                               kRequestTokenizer, kLimits);
  ASSERT_TRUE(r.request) << r.error.message;
  EXPECT_EQ(r.request->echo, "say this");
  r = parse_generation_request(R"({"prompt": "a", "stop": "end"})", false, kRequestTokenizer,
                               kLimits);
  ASSERT_TRUE(r.request);
  EXPECT_EQ(r.request->stop, std::vector<std::string>{"end"});
  EXPECT_FALSE(r.request->logprobs);
  r = parse_generation_request(
      R"({"messages": [{"role": "user", "content": "q"}], "logprobs": true, "top_logprobs": 4})",
      true, kRequestTokenizer, kLimits);
  ASSERT_TRUE(r.request) << r.error.message;
  EXPECT_EQ(r.request->logprobs, 4);
  r = parse_generation_request(R"({"messages": [{"role": "user", "content": "q"}],
      "logprobs": true})",
                               true, kRequestTokenizer, kLimits);
  ASSERT_TRUE(r.request);
  EXPECT_EQ(r.request->logprobs, 0);
}

TEST(SimRequestTest, RefusalsNameTheField) {
  const auto param = [](const char* body, bool chat = false) {
    const auto r = parse_generation_request(body, chat, kRequestTokenizer, kLimits);
    EXPECT_FALSE(r.request) << body;
    EXPECT_EQ(r.error.status, 400) << body;
    return r.error.param;
  };
  EXPECT_EQ(param(R"({"prompt": "a", "stop": ""})"), "stop");
  EXPECT_EQ(param(R"({"prompt": "a", "stop": [1]})"), "stop");
  EXPECT_EQ(param(R"({"prompt": "a", "n": 0})"), "n");
  EXPECT_EQ(param(R"({"prompt": "a", "n": 129})"), "n");
  EXPECT_EQ(param(R"({"prompt": "a", "n": 2, "best_of": 3})"), "best_of");
  EXPECT_EQ(param(R"({"prompt": "a", "n": 2, "best_of": 1})"), "best_of");
  EXPECT_EQ(param(R"({"prompt": "a", "logprobs": 21})"), "logprobs");
  EXPECT_EQ(param(R"({"prompt": "a", "logprobs": -1})"), "logprobs");
  EXPECT_EQ(param(R"({"prompt": "a", "logprobs": true})"), "logprobs");
  EXPECT_EQ(param(R"({"prompt": [1, 2], "echo": true})"), "echo");
  EXPECT_EQ(param(R"({"prompt": "a", "echo": true, "logprobs": 1})"), "echo");
  EXPECT_EQ(param(R"({"messages": [{"role": "user", "content": "q"},
                                   {"role": "assistant", "content": "a"}], "echo": true})",
                  true),
            "echo");
  EXPECT_EQ(param(R"({"prompt": "a", "suffix": "x"})"), "suffix");
  EXPECT_EQ(param(R"({"prompt": "a", "guided_json": {}})"), "guided_json");
  EXPECT_EQ(param(R"({"prompt": "a", "response_format": {"type": "json_object"}})"),
            "response_format");
  const char* chat_top = R"({"messages": [{"role": "user", "content": "q"}], "top_logprobs": 2})";
  EXPECT_EQ(param(chat_top, true), "top_logprobs");
  EXPECT_EQ(param(R"({"messages": [{"role": "user", "content": "q"}], "logprobs": true,
                      "top_logprobs": 21})",
                  true),
            "top_logprobs");
  const char* tools = R"([{"type": "function", "function": {"name": "f", "parameters": {}}}])";
  const auto with_tools = [&](const std::string& choice) {
    return R"({"messages": [{"role": "user", "content": "q"}], "tools": )" + std::string(tools) +
           choice + "}";
  };
  auto r = parse_generation_request(with_tools(""), true, kRequestTokenizer, kLimits);
  EXPECT_EQ(r.error.param, "tool_choice");  // tools without tool_choice mean "auto"
  EXPECT_NE(r.error.message.find("--enable-auto-tool-choice"), std::string::npos);
  EXPECT_EQ(param(with_tools(R"(, "tool_choice": "auto")").c_str(), true), "tool_choice");
  EXPECT_EQ(param(with_tools(R"(, "tool_choice": "required")").c_str(), true), "tool_choice");
  EXPECT_EQ(
      param(
          with_tools(R"(, "tool_choice": {"type": "function", "function": {"name": "f"}})").c_str(),
          true),
      "tool_choice");
  // "none": served; the tool definitions lengthen the prompt as a chat template renders them.
  r = parse_generation_request(with_tools(R"(, "tool_choice": "none")"), true, kRequestTokenizer,
                               kLimits);
  ASSERT_TRUE(r.request) << r.error.message;
  EXPECT_GT(r.request->prompt_tokens, 3);
  // Unknown fields and sampling knobs are ignored, as vLLM does.
  r = parse_generation_request(R"({"prompt": "a", "temperature": 0.7, "frobnicate": 1,
                                   "response_format": {"type": "text"}, "echo": false})",
                               false, kRequestTokenizer, kLimits);
  EXPECT_TRUE(r.request) << r.error.message;
}

TEST(SimRequestTest, TokenizeBodies) {
  auto t = parse_tokenize_request(R"({"prompt": "x y"})");
  ASSERT_TRUE(t.text);
  EXPECT_EQ(*t.text, "x y");
  t = parse_tokenize_request(R"({"messages": [{"role": "user", "content": "q"}]})");
  ASSERT_TRUE(t.text);
  EXPECT_EQ(kRequestTokenizer.count(*t.text), 3);
  t = parse_tokenize_request(R"({"text": "x"})");
  EXPECT_FALSE(t.text);
  EXPECT_EQ(t.error.param, "prompt");
}

}  // namespace
}  // namespace llmcap::sim

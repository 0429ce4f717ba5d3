#include "sim/sim_request.h"

#include <gtest/gtest.h>

namespace llmcap::sim {
namespace {

const SimTokenizer kTokenizer(32000);
const GenerationLimits kLimits{100, 16, "llama-3.1-8b"};

TEST(SimRequestTest, CompletionWithAllFields) {
  const auto r = parse_generation_request(
      R"({"model": "llama-3.1-8b", "prompt": "one two three", "max_tokens": 7, "min_tokens": 7,
          "ignore_eos": true, "stream": true, "stream_options": {"include_usage": true}})",
      false, kTokenizer, kLimits);
  ASSERT_TRUE(r.request) << r.error.message;
  EXPECT_EQ(r.request->prompt_tokens, 3);
  EXPECT_EQ(r.request->max_tokens, 7);
  EXPECT_EQ(r.request->min_tokens, 7);
  EXPECT_TRUE(r.request->ignore_eos);
  EXPECT_TRUE(r.request->stream);
  EXPECT_TRUE(r.request->include_usage);
}

TEST(SimRequestTest, DefaultsAndPromptForms) {
  auto r = parse_generation_request(R"({"prompt": ["a b"]})", false, kTokenizer, kLimits);
  ASSERT_TRUE(r.request);
  EXPECT_EQ(r.request->prompt_tokens, 2);
  EXPECT_EQ(r.request->max_tokens, 16);
  EXPECT_FALSE(r.request->stream);
  r = parse_generation_request(R"({"prompt": [1, 2, 3, 4]})", false, kTokenizer, kLimits);
  ASSERT_TRUE(r.request);
  EXPECT_EQ(r.request->prompt_tokens, 4);
}

TEST(SimRequestTest, ChatMessagesUseTheTemplate) {
  const auto r = parse_generation_request(
      R"({"messages": [{"role": "user", "content": "hello there"}], "max_completion_tokens": 5})",
      true, kTokenizer, kLimits);
  ASSERT_TRUE(r.request) << r.error.message;
  EXPECT_EQ(r.request->prompt_tokens, 4);  // <|user|> hello there <|assistant|>
  EXPECT_EQ(r.request->max_tokens, 5);
  const auto parts = parse_generation_request(
      R"({"messages": [{"role": "user", "content": [{"type": "text", "text": "a b c"}]}]})", true,
      kTokenizer, kLimits);
  ASSERT_TRUE(parts.request);
  EXPECT_EQ(parts.request->prompt_tokens, 5);
}

TEST(SimRequestTest, ErrorsNameTheParam) {
  auto r =
      parse_generation_request(R"({"prompt": "a", "max_tokens": 0})", false, kTokenizer, kLimits);
  EXPECT_EQ(r.error.param, "max_tokens");
  r = parse_generation_request(R"({"prompt": "a", "max_tokens": 5, "min_tokens": 6})", false,
                               kTokenizer, kLimits);
  EXPECT_EQ(r.error.param, "min_tokens");
  r = parse_generation_request(R"({"model": "gpt-4", "prompt": "a"})", false, kTokenizer, kLimits);
  EXPECT_EQ(r.error.status, 404);
  r = parse_generation_request(R"({"prompt": "a b", "max_tokens": 99})", false, kTokenizer,
                               kLimits);
  ASSERT_FALSE(r.request);
  EXPECT_NE(r.error.message.find("maximum context length is 100"), std::string::npos);
  r = parse_generation_request(R"({"prompt": "   "})", false, kTokenizer, kLimits);
  EXPECT_EQ(r.error.param, "prompt");
  r = parse_generation_request(R"({"messages": []})", true, kTokenizer, kLimits);
  EXPECT_EQ(r.error.param, "messages");
  r = parse_generation_request("nope", false, kTokenizer, kLimits);
  EXPECT_FALSE(r.request);
  r = parse_generation_request(R"({"prompt": "a", "stream_options": {"include_usage": true}})",
                               false, kTokenizer, kLimits);
  EXPECT_EQ(r.error.param, "stream_options");
}

TEST(SimRequestTest, TokenizeBodies) {
  auto t = parse_tokenize_request(R"({"prompt": "x y"})");
  ASSERT_TRUE(t.text);
  EXPECT_EQ(*t.text, "x y");
  t = parse_tokenize_request(R"({"messages": [{"role": "user", "content": "q"}]})");
  ASSERT_TRUE(t.text);
  EXPECT_EQ(kTokenizer.count(*t.text), 3);
  t = parse_tokenize_request(R"({"text": "x"})");
  EXPECT_FALSE(t.text);
  EXPECT_EQ(t.error.param, "prompt");
}

}  // namespace
}  // namespace llmcap::sim

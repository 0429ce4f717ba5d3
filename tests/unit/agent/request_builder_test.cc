#include "agent/request_builder.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace llmcap::agent {
namespace {

using json = nlohmann::json;

TEST(RequestBuilder, StreamingCompletionsBody) {
  RequestBodySpec s;
  s.model = "m";
  s.prompt = "hello \"world\"\n";
  s.max_tokens = 128;
  s.ignore_eos = true;
  s.temperature = 0.0;
  auto body = RequestBuilder::build(s);
  ASSERT_TRUE(body) << body.error();
  const json j = json::parse(body.value());
  EXPECT_EQ(j["model"], "m");
  EXPECT_EQ(j["prompt"], "hello \"world\"\n");
  EXPECT_EQ(j["max_tokens"], 128);
  EXPECT_EQ(j["ignore_eos"], true);
  EXPECT_EQ(j["temperature"], 0.0);
  EXPECT_EQ(j["stream"], true);
  EXPECT_EQ(j["stream_options"]["include_usage"], true);
  EXPECT_FALSE(j.contains("min_tokens"));
  EXPECT_FALSE(j.contains("messages"));
}

TEST(RequestBuilder, ChatFromPromptAndMinTokens) {
  RequestBodySpec s;
  s.api = ApiKind::kChat;
  s.model = "m";
  s.prompt = "hi";
  s.max_tokens = 10;
  s.min_tokens = 10;
  auto body = RequestBuilder::build(s);
  ASSERT_TRUE(body);
  const json j = json::parse(body.value());
  ASSERT_TRUE(j["messages"].is_array());
  EXPECT_EQ(j["messages"][0]["role"], "user");
  EXPECT_EQ(j["messages"][0]["content"], "hi");
  EXPECT_EQ(j["min_tokens"], 10);
  EXPECT_FALSE(j.contains("prompt"));
  EXPECT_FALSE(j.contains("ignore_eos"));
}

TEST(RequestBuilder, ChatMessagesPassThroughAndNonStreaming) {
  RequestBodySpec s;
  s.api = ApiKind::kChat;
  s.messages_json = R"([{"role":"system","content":"be brief"},{"role":"user","content":"q"}])";
  s.stream = false;
  auto body = RequestBuilder::build(s);
  ASSERT_TRUE(body);
  const json j = json::parse(body.value());
  EXPECT_EQ(j["messages"].size(), 2u);
  EXPECT_EQ(j["stream"], false);
  EXPECT_FALSE(j.contains("stream_options"));
  EXPECT_FALSE(j.contains("model"));
  EXPECT_FALSE(j.contains("max_tokens"));
}

TEST(RequestBuilder, ExtraBodyMergesAndOverrides) {
  RequestBodySpec s;
  s.prompt = "p";
  s.max_tokens = 5;
  s.extra_body_json = R"({"cache_prompt": false, "max_tokens": 7, "top_k": 1})";
  auto body = RequestBuilder::build(s);
  ASSERT_TRUE(body);
  const json j = json::parse(body.value());
  EXPECT_EQ(j["cache_prompt"], false);
  EXPECT_EQ(j["max_tokens"], 7);
  EXPECT_EQ(j["top_k"], 1);
}

TEST(RequestBuilder, BadInputsNameTheField) {
  RequestBodySpec s;
  s.extra_body_json = "[1]";
  auto body = RequestBuilder::build(s);
  ASSERT_FALSE(body);
  EXPECT_EQ(body.error(), "extra_body: must be a JSON object");
  s.extra_body_json.clear();
  s.api = ApiKind::kChat;
  s.messages_json = "{";
  body = RequestBuilder::build(s);
  ASSERT_FALSE(body);
  EXPECT_EQ(body.error(), "messages: must be a JSON array");
  EXPECT_EQ(RequestBuilder::check_json_object("nope", "workload.extra_body").value(),
            "workload.extra_body: not valid JSON");
  EXPECT_FALSE(RequestBuilder::check_json_object("{}", "x").has_value());
}

}  // namespace
}  // namespace llmcap::agent

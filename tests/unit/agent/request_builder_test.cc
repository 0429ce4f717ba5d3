#include "agent/request_builder.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace llmcap::agent {
namespace {

using json = nlohmann::json;

// The DOM serialisation RequestBuilder used for every body before its direct writer (issue
// 10); the direct writer must produce the same bytes.
std::string rb_dom_reference(const RequestBodySpec& spec) {
  json body = json::object();
  if (!spec.model.empty()) body["model"] = spec.model;
  if (spec.api == ApiKind::kCompletions) {
    body["prompt"] = spec.prompt;
  } else {
    body["messages"] = json::array({json{{"role", "user"}, {"content", spec.prompt}}});
  }
  if (spec.max_tokens >= 0) body["max_tokens"] = spec.max_tokens;
  if (spec.min_tokens) body["min_tokens"] = *spec.min_tokens;
  if (spec.ignore_eos) body["ignore_eos"] = true;
  if (spec.temperature) body["temperature"] = *spec.temperature;
  body["stream"] = spec.stream;
  if (spec.stream && spec.include_usage) body["stream_options"] = json{{"include_usage", true}};
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

TEST(RequestBuilder, DirectBodyIsByteIdenticalToTheDomSerialisation) {
  const std::vector<std::string> prompts = {"",
                                            "plain words",
                                            "quote \" and back\\slash",
                                            "tab\tnl\ncr\r\x01\x1f\x7f",
                                            "caf\xc3\xa9 \xf0\x9f\x98\x80",
                                            "bad \xff\xc3 utf8"};
  const std::vector<std::optional<double>> temperatures = {std::nullopt, 0.0, 0.7, 1e-7, 2.0};
  int cases = 0;
  for (const ApiKind api : {ApiKind::kCompletions, ApiKind::kChat}) {
    for (const auto& prompt : prompts) {
      for (const std::string model : {"", "meta-llama/Llama-3.1-8B", "m\"x"}) {
        for (const std::int32_t max_tokens : {-1, 0, 128}) {
          for (const auto& temperature : temperatures) {
            for (int flags = 0; flags < 16; ++flags) {
              RequestBodySpec s;
              s.api = api;
              s.prompt = prompt;
              s.model = model;
              s.max_tokens = max_tokens;
              s.temperature = temperature;
              if (flags & 1) s.min_tokens = 64;
              s.ignore_eos = (flags & 2) != 0;
              s.stream = (flags & 4) != 0;
              s.include_usage = (flags & 8) != 0;
              const auto body = RequestBuilder::build(s);
              ASSERT_TRUE(body) << body.error();
              ASSERT_EQ(body.value(), rb_dom_reference(s)) << prompt << " " << model;
              ++cases;
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(cases, 2 * 6 * 3 * 3 * 5 * 16);
}

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

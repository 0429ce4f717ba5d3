#include "agent/chunk_decoder.h"

#include <gtest/gtest.h>

#include "agent/sse_parser.h"
#include "tests/unit/agent/test_util.h"

namespace llmcap::agent {
namespace {

using analysis::FinishReason;

std::vector<DecodedChunk> decode_file(const std::string& name, ApiKind api) {
  SseParser p;
  std::vector<SseEvent> events;
  p.feed(test::read_data(name), 0, events);
  p.finish(0, events);
  std::vector<DecodedChunk> out;
  for (const auto& e : events) out.push_back(ChunkDecoder::decode(e.data, api));
  return out;
}

TEST(ChunkDecoder, VllmCompletionsTokensEmptyChunkAndSeparateUsage) {
  const auto c = decode_file("vllm_completions.sse", ApiKind::kCompletions);
  ASSERT_EQ(c.size(), 6u);
  EXPECT_TRUE(c[0].is_token);
  EXPECT_EQ(c[0].text_bytes, 4u);
  EXPECT_EQ(c[0].id, "cmpl-7f3a");
  EXPECT_FALSE(c[1].is_token);  // empty text is not a token event (§2)
  EXPECT_TRUE(c[2].is_token);
  EXPECT_TRUE(c[3].is_token);
  EXPECT_EQ(c[3].finish_reason, FinishReason::kLength);
  EXPECT_FALSE(c[4].is_token);  // usage-only, choices: []
  EXPECT_EQ(c[4].prompt_tokens, 12);
  EXPECT_EQ(c[4].completion_tokens, 4);
  EXPECT_EQ(c[0].prompt_tokens, -1);  // "usage": null
  EXPECT_TRUE(c[5].done);
  for (const auto& d : c) EXPECT_FALSE(d.malformed);
}

TEST(ChunkDecoder, VllmChatRoleOnlyChunkIsNotATokenReasoningIs) {
  const auto c = decode_file("vllm_chat_crlf.sse", ApiKind::kChat);
  ASSERT_EQ(c.size(), 6u);
  EXPECT_FALSE(c[0].is_token);  // role-only with content ""
  EXPECT_TRUE(c[1].is_token);
  EXPECT_TRUE(c[2].is_token);  // reasoning_content
  EXPECT_TRUE(c[3].is_token);
  EXPECT_EQ(c[3].finish_reason, FinishReason::kStop);
  EXPECT_EQ(c[4].completion_tokens, 5);
  EXPECT_TRUE(c[5].done);
}

TEST(ChunkDecoder, LlamaCppChatUsageInFinalChunkWithChoices) {
  const auto c = decode_file("llamacpp_chat.sse", ApiKind::kChat);
  ASSERT_EQ(c.size(), 5u);
  EXPECT_FALSE(c[0].is_token);  // role with content null
  EXPECT_TRUE(c[1].is_token);
  EXPECT_TRUE(c[2].is_token);
  EXPECT_FALSE(c[3].is_token);  // empty delta + finish + usage
  EXPECT_EQ(c[3].finish_reason, FinishReason::kLength);
  EXPECT_EQ(c[3].prompt_tokens, 9);
  EXPECT_EQ(c[3].completion_tokens, 2);
}

TEST(ChunkDecoder, LlamaCppCompletionsUsageOnLastTokenChunk) {
  const auto c = decode_file("llamacpp_completions_no_done.sse", ApiKind::kCompletions);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_TRUE(c[1].is_token);  // multi-line data joined
  EXPECT_TRUE(c[2].is_token);
  EXPECT_EQ(c[2].completion_tokens, 3);
  EXPECT_EQ(c[2].finish_reason, FinishReason::kLength);
}

TEST(ChunkDecoder, ApiKindDecidesWhereTokensAre) {
  const std::string chat = R"({"choices":[{"delta":{"content":"x"}}]})";
  EXPECT_TRUE(ChunkDecoder::decode(chat, ApiKind::kChat).is_token);
  EXPECT_FALSE(ChunkDecoder::decode(chat, ApiKind::kCompletions).is_token);
  const std::string comp = R"({"choices":[{"text":"x"}]})";
  EXPECT_FALSE(ChunkDecoder::decode(comp, ApiKind::kChat).is_token);
}

TEST(ChunkDecoder, MalformedAndNonObject) {
  auto d = ChunkDecoder::decode(R"({"choices":[{"text":"x")", ApiKind::kCompletions);
  EXPECT_TRUE(d.malformed);
  EXPECT_EQ(d.malformed_reason, "invalid JSON");
  d = ChunkDecoder::decode("[1,2]", ApiKind::kCompletions);
  EXPECT_TRUE(d.malformed);
  EXPECT_TRUE(ChunkDecoder::decode("  [DONE] ", ApiKind::kChat).done);
}

TEST(ChunkDecoder, ServerErrorEvent) {
  const auto d = ChunkDecoder::decode(
      R"({"error":{"object":"error","message":"overloaded","type":"x","code":503}})",
      ApiKind::kChat);
  EXPECT_TRUE(d.server_error);
  EXPECT_EQ(d.server_error_code, 503);
  EXPECT_EQ(d.server_error_message, "overloaded");
}

// The decoder reads chunks with a SAX pass (no DOM); it must answer as a DOM would: the last of
// duplicated keys wins, fields nested where the API does not put them are ignored, and the
// choices array's elements that are not objects are skipped.
TEST(ChunkDecoder, SaxPassMatchesDomSemantics) {
  auto d = ChunkDecoder::decode(R"({"id":"a","id":"b","choices":[{"text":"abc","text":""}]})",
                                ApiKind::kCompletions);
  EXPECT_EQ(d.id, "b");
  EXPECT_FALSE(d.is_token);  // the last "text" is empty
  d = ChunkDecoder::decode(R"({"id":"a","id":7,"choices":[{"text":"x"}],"choices":{"y":1}})",
                           ApiKind::kCompletions);
  EXPECT_EQ(d.id, "");          // the last "id" is not a string
  EXPECT_EQ(d.text_bytes, 0u);  // the last "choices" is not an array
  d = ChunkDecoder::decode(
      R"({"nested":{"choices":[{"text":"no"}],"id":"no"},"choices":[5,"x",[{"text":"q"}],{"text":"ok","finish_reason":"stop"}]})",
      ApiKind::kCompletions);
  EXPECT_EQ(d.id, "");
  EXPECT_EQ(d.text_bytes, 2u);
  EXPECT_EQ(d.finish_reason, FinishReason::kStop);
  d = ChunkDecoder::decode(R"({"choices":[{"delta":{"content":"a"},"delta":{"reasoning":"bb"}}]})",
                           ApiKind::kChat);
  EXPECT_EQ(d.text_bytes, 2u);  // the second delta replaces the first
  d = ChunkDecoder::decode(R"({"usage":{"prompt_tokens":3},"usage":5})", ApiKind::kChat);
  EXPECT_EQ(d.prompt_tokens, -1);
  d = ChunkDecoder::decode(R"({"error":{"code":500,"message":"a","message":"b"}})", ApiKind::kChat);
  EXPECT_TRUE(d.server_error);
  EXPECT_EQ(d.server_error_code, 500);
  EXPECT_EQ(d.server_error_message, "b");
  d = ChunkDecoder::decode(R"({"error":null,"choices":[{"text":"\u00e9\ud83d\ude00"}]})",
                           ApiKind::kCompletions);
  EXPECT_FALSE(d.server_error);
  EXPECT_EQ(d.text_bytes, 6u);  // é (2 bytes) + 😀 (4 bytes), decoded
  d = ChunkDecoder::decode(R"({"a":1}x)", ApiKind::kChat);
  EXPECT_TRUE(d.malformed);
  EXPECT_EQ(d.malformed_reason, "invalid JSON");
}

TEST(ChunkDecoder, NonStreamingBody) {
  const std::string body =
      R"({"id":"chatcmpl-1","choices":[{"message":{"role":"assistant","content":"hi there"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2}})";
  const auto d = ChunkDecoder::decode(body, ApiKind::kChat, false);
  EXPECT_TRUE(d.is_token);
  EXPECT_EQ(d.text_bytes, 8u);
  EXPECT_EQ(d.completion_tokens, 2);
  EXPECT_EQ(d.finish_reason, FinishReason::kStop);
}

}  // namespace
}  // namespace llmcap::agent

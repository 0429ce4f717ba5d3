#include "agent/chunk_decoder.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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
  EXPECT_FALSE(c[1].is_token);  // empty text is not a token event (docs/metrics.md §1.2)
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

// Reference: the DOM reading ChunkDecoder used before its SAX pass (issue 10). The decoder
// must give the same answer on every input, including odd ones real servers never send.
DecodedChunk dom_reference(std::string_view data, ApiKind api, bool streaming) {
  using json = nlohmann::json;
  DecodedChunk out;
  std::string_view t = data;
  while (!t.empty() &&
         (t.front() == ' ' || t.front() == '\n' || t.front() == '\r' || t.front() == '\t'))
    t.remove_prefix(1);
  while (!t.empty() &&
         (t.back() == ' ' || t.back() == '\n' || t.back() == '\r' || t.back() == '\t'))
    t.remove_suffix(1);
  if (t == "[DONE]") {
    out.done = true;
    return out;
  }
  const json doc = json::parse(t.begin(), t.end(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    out.malformed = true;
    out.malformed_reason = doc.is_discarded() ? "invalid JSON" : "JSON value is not an object";
    return out;
  }
  auto bytes_of = [](const json& o, const char* k) -> std::uint32_t {
    const auto it = o.find(k);
    return it != o.end() && it->is_string()
               ? static_cast<std::uint32_t>(it->get_ref<const std::string&>().size())
               : 0;
  };
  auto int_of = [](const json& o, const char* k) -> std::int32_t {
    const auto it = o.find(k);
    return it != o.end() && it->is_number_integer()
               ? static_cast<std::int32_t>(it->get<std::int64_t>())
               : -1;
  };
  if (const auto id = doc.find("id"); id != doc.end() && id->is_string()) out.id = *id;
  if (const auto e = doc.find("error"); e != doc.end() && !e->is_null()) {
    out.server_error = true;
    if (e->is_string()) out.server_error_message = *e;
    if (e->is_object()) {
      if (const auto m = e->find("message"); m != e->end() && m->is_string())
        out.server_error_message = *m;
      if (const auto c = e->find("code"); c != e->end() && c->is_number_integer())
        out.server_error_code = c->get<int>();
    }
  }
  if (const auto u = doc.find("usage"); u != doc.end() && u->is_object()) {
    out.prompt_tokens = int_of(*u, "prompt_tokens");
    out.completion_tokens = int_of(*u, "completion_tokens");
  }
  if (const auto ch = doc.find("choices"); ch != doc.end() && ch->is_array()) {
    for (const auto& c : *ch) {
      if (!c.is_object()) continue;
      if (api == ApiKind::kCompletions) {
        out.text_bytes += bytes_of(c, "text");
      } else if (const auto d = c.find(streaming ? "delta" : "message");
                 d != c.end() && d->is_object()) {
        out.text_bytes +=
            bytes_of(*d, "content") + bytes_of(*d, "reasoning_content") + bytes_of(*d, "reasoning");
      }
      if (const auto f = c.find("finish_reason"); f != c.end() && f->is_string())
        out.finish_reason = analysis::parse_finish_reason(f->get_ref<const std::string&>());
    }
  }
  out.is_token = out.text_bytes > 0;
  return out;
}

TEST(ChunkDecoder, SameAnswersAsADomReading) {
  const std::vector<std::string> inputs = {
      R"({"id":"x","choices":[{"index":0,"text":" a","finish_reason":null}]})",
      R"({"choices":[{"delta":{"content":"hi","reasoning_content":"r","reasoning":"zz"},"finish_reason":"stop"}]})",
      R"({"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":7,"total_tokens":19}})",
      R"({"choices":[{"text":"a"},{"text":"bcd","finish_reason":"length"}],"usage":null})",
      R"({"error":{"message":"boom","code":429}})",
      R"({"error":"bad"})",
      R"({"error":null,"id":5})",
      R"({"error":3})",
      R"({"error":[1,2]})",
      R"({"error":{"message":5,"code":"x"}})",
      R"({"error":true})",
      R"([1,2])",
      "5",
      R"("s")",
      "null",
      "{",
      R"({"a":1}x)",
      "",
      "  [DONE] ",
      R"({"id":"a","id":"b"})",
      R"({"choices":[{"text":"a"}],"choices":{"x":1}})",
      R"({"choices":[{"text":"abc","text":""}]})",
      R"({"choices":[{"text":"","text":"abc"}]})",
      R"({"choices":[{"text":"\u00e9\ud83d\ude00\n"}]})",
      R"({"choices":[{"delta":{"content":"a"},"delta":null}]})",
      R"({"choices":[5,"x",[{"text":"q"}],{"text":"ok","finish_reason":"stop","finish_reason":3}]})",
      R"({"choices":[{"text":"a","finish_reason":"stop"},{"text":"b","finish_reason":7}]})",
      R"({"usage":{"prompt_tokens":1.5,"completion_tokens":18446744073709551615}})",
      R"({"nested":{"choices":[{"text":"no"}],"id":"no"},"x":[{"usage":{"prompt_tokens":1}}]})",
      R"({"choices":[{"message":{"content":"full"},"text":"t"}]})",
      R"({"choices":[{"text":"a","delta":{"content":"b"}}]})",
      R"({"a":[[[[[[[[[[[[[[[[[[[[{"id":"deep"}]]]]]]]]]]]]]]]]]]]],"id":"top"})",
  };
  for (const auto& in : inputs) {
    for (const ApiKind api : {ApiKind::kCompletions, ApiKind::kChat}) {
      for (const bool streaming : {true, false}) {
        SCOPED_TRACE(in + (api == ApiKind::kChat ? " chat" : " completions") +
                     (streaming ? " streaming" : " body"));
        const DecodedChunk a = ChunkDecoder::decode(in, api, streaming);
        const DecodedChunk b = dom_reference(in, api, streaming);
        EXPECT_EQ(a.done, b.done);
        EXPECT_EQ(a.malformed, b.malformed);
        EXPECT_EQ(a.malformed_reason, b.malformed_reason);
        EXPECT_EQ(a.is_token, b.is_token);
        EXPECT_EQ(a.text_bytes, b.text_bytes);
        EXPECT_EQ(a.finish_reason, b.finish_reason);
        EXPECT_EQ(a.prompt_tokens, b.prompt_tokens);
        EXPECT_EQ(a.completion_tokens, b.completion_tokens);
        EXPECT_EQ(a.id, b.id);
        EXPECT_EQ(a.server_error, b.server_error);
        EXPECT_EQ(a.server_error_code, b.server_error_code);
        EXPECT_EQ(a.server_error_message, b.server_error_message);
      }
    }
  }
}

void expect_same(const DecodedChunk& a, const DecodedChunk& b) {
  EXPECT_EQ(a.done, b.done);
  EXPECT_EQ(a.malformed, b.malformed);
  EXPECT_EQ(a.malformed_reason, b.malformed_reason);
  EXPECT_EQ(a.is_token, b.is_token);
  EXPECT_EQ(a.text_bytes, b.text_bytes);
  EXPECT_EQ(a.finish_reason, b.finish_reason);
  EXPECT_EQ(a.prompt_tokens, b.prompt_tokens);
  EXPECT_EQ(a.completion_tokens, b.completion_tokens);
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.server_error, b.server_error);
  EXPECT_EQ(a.server_error_code, b.server_error_code);
  EXPECT_EQ(a.server_error_message, b.server_error_message);
}

// The hand-rolled scanner must accept exactly what nlohmann's strict parser accepts: strings
// (control characters, escapes, surrogates, UTF-8 well-formedness), numbers (grammar, integer
// vs float, 64-bit overflow), literals, BOM, trailing bytes.
TEST(ChunkDecoder, AcceptsExactlyWhatAStrictJsonParserAccepts) {
  const std::vector<std::string> inputs = {
      "{\"choices\":[{\"text\":\"a\x01\"}]}",
      "{\"choices\":[{\"text\":\"a\x7f\"}]}",
      "{\"choices\":[{\"text\":\"\xc3\xa9\"}]}",
      "{\"choices\":[{\"text\":\"\xc3\"}]}",
      "{\"choices\":[{\"text\":\"\xc0\xaf\"}]}",
      "{\"choices\":[{\"text\":\"\xe0\x80\xaf\"}]}",
      "{\"choices\":[{\"text\":\"\xed\xa0\x80\"}]}",
      "{\"choices\":[{\"text\":\"\xf0\x9f\x98\x80\"}]}",
      "{\"choices\":[{\"text\":\"\xf4\x90\x80\x80\"}]}",
      "{\"choices\":[{\"text\":\"\xff\"}]}",
      R"({"choices":[{"text":"\ud800"}]})",
      R"({"choices":[{"text":"\udc00"}]})",
      R"({"choices":[{"text":"\ud800\u0041"}]})",
      R"({"choices":[{"text":"\u0000\u007f\u0080\u07ff\u0800\uffff"}]})",
      R"({"choices":[{"text":"\x"}]})",
      R"({"choices":[{"text":"\u12G4"}]})",
      R"({"choices":[{"text":"\"\\\/\b\f\n\r\t"}]})",
      R"({"\u0069d":"escaped key","choices":[{"t\u0065xt":"q"}]})",
      "\xef\xbb\xbf{\"id\":\"bom\"}",
      "\xef\xbb{\"id\":\"bom\"}",
      R"({"usage":{"prompt_tokens":-0,"completion_tokens":01}})",
      R"({"usage":{"prompt_tokens":-9223372036854775808,"completion_tokens":-9223372036854775809}})",
      R"({"usage":{"prompt_tokens":9223372036854775808,"completion_tokens":18446744073709551616}})",
      R"({"usage":{"prompt_tokens":1e2,"completion_tokens":2E-1}})",
      R"({"usage":{"prompt_tokens":1.,"completion_tokens":2}})",
      R"({"usage":{"prompt_tokens":.5}})",
      R"({"usage":{"prompt_tokens":-}})",
      R"({"usage":{"prompt_tokens":+1}})",
      R"({"usage":{"prompt_tokens":4294967297}})",
      R"({"error":{"code":-3,"message":"m"},"x":[true,false,null,{},[],{"a":[]}]})",
      R"({"x":tru})",
      R"({"x":nul,"id":"a"})",
      R"({"x":[1,]})",
      R"({"x":{"a":1,}})",
      R"({"x":{,}})",
      R"({"x":[,1]})",
      R"({"x" 1})",
      R"({"x":1 "y":2})",
      R"({1:2})",
      R"({"a":1}})",
      R"({"a":1}])",
      "{\"a\":1}\n\t ",
      "{\"a\":\t\n1}",
      R"({"choices":[{"text":"a"}] , "id" : "sp" })",
      R"({})",
      R"({"choices":[]})",
      R"({"choices":[{}]})",
  };
  for (const auto& in : inputs) {
    for (const ApiKind api : {ApiKind::kCompletions, ApiKind::kChat}) {
      SCOPED_TRACE(in);
      expect_same(ChunkDecoder::decode(in, api, true), dom_reference(in, api, true));
    }
  }
}

// Seeded random mutations of real chunks (bytes replaced, inserted, deleted from an alphabet of
// JSON punctuation, escapes and UTF-8 fragments): the scanner and the DOM reading agree on all.
TEST(ChunkDecoder, RandomMutationsAgreeWithADomReading) {
  const std::vector<std::string> seeds = {
      R"({"id":"cmpl-7f3a","object":"text_completion","choices":[{"index":0,"text":" qu\u00e9","logprobs":null,"finish_reason":null}],"usage":null})",
      R"({"id":"chatcmpl-1","choices":[{"index":0,"delta":{"role":"assistant","content":"hi","reasoning":"r"},"finish_reason":"stop"}]})",
      R"({"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":7,"total_tokens":19}})",
      R"({"error":{"message":"boom","code":429,"x":[1.5e3,-2,true]}})",
  };
  const std::string alphabet = "{}[]:,\"\\u0d8Ae.-+1 \n\x01\x7f\xc3\xa9\xed\xf0\x9ftrnul";
  std::uint64_t state = 0x9e3779b97f4a7c15ULL;
  auto next = [&state] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  int cases = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string in = seeds[next() % seeds.size()];
    const int edits = 1 + static_cast<int>(next() % 3);
    for (int e = 0; e < edits && !in.empty(); ++e) {
      const std::size_t at = next() % in.size();
      const char c = alphabet[next() % alphabet.size()];
      switch (next() % 3) {
        case 0: in[at] = c; break;
        case 1: in.insert(in.begin() + static_cast<std::ptrdiff_t>(at), c); break;
        default: in.erase(at, 1); break;
      }
    }
    const ApiKind api = next() % 2 ? ApiKind::kChat : ApiKind::kCompletions;
    const bool streaming = next() % 4 != 0;
    SCOPED_TRACE(in);
    expect_same(ChunkDecoder::decode(in, api, streaming), dom_reference(in, api, streaming));
    if (HasFailure()) break;
    ++cases;
  }
  EXPECT_EQ(cases, 20000);
}

TEST(ChunkDecoder, WantIdFalseSkipsOnlyTheId) {
  const std::string in = R"({"id":"cmpl-0123456789abcdef0123","choices":[{"text":"x"}]})";
  const auto a = ChunkDecoder::decode(in, ApiKind::kCompletions, true, false);
  EXPECT_TRUE(a.id.empty());
  EXPECT_TRUE(a.is_token);
  EXPECT_EQ(ChunkDecoder::decode(in, ApiKind::kCompletions).id, "cmpl-0123456789abcdef0123");
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

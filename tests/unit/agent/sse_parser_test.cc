#include "agent/sse_parser.h"

#include <gtest/gtest.h>

#include "tests/unit/agent/test_util.h"

namespace llmcap::agent {
namespace {

// Feeds the stream one byte per read, read i arriving at t = i; returns all events.
std::vector<SseEvent> byte_by_byte(const std::string& s) {
  SseParser p;
  std::vector<SseEvent> out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    EXPECT_TRUE(p.feed(std::string_view(s).substr(i, 1), static_cast<std::int64_t>(i), out));
  }
  p.finish(static_cast<std::int64_t>(s.size()), out);
  return out;
}

std::vector<SseEvent> whole(const std::string& s, std::int64_t t = 7) {
  SseParser p;
  std::vector<SseEvent> out;
  EXPECT_TRUE(p.feed(s, t, out));
  p.finish(t + 1, out);
  return out;
}

// Position of the byte that completes the k-th blank line (the event's dispatch point).
std::vector<std::int64_t> dispatch_positions(const std::string& s) {
  std::vector<std::int64_t> pos;
  bool line_empty = true;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\n' && i > 0 && s[i - 1] == '\r') continue;  // second half of CRLF
    if (c == '\r' || c == '\n') {
      if (line_empty) pos.push_back(static_cast<std::int64_t>(i));
      line_empty = true;
    } else {
      line_empty = false;
    }
  }
  return pos;
}

TEST(SseParser, VllmCompletionsByteByByteStampsEachEventAtItsBlankLine) {
  const std::string s = test::read_data("vllm_completions.sse");
  const auto events = byte_by_byte(s);
  const auto expected = dispatch_positions(s);
  ASSERT_EQ(events.size(), 6u);
  ASSERT_EQ(expected.size(), 6u);
  for (std::size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].t_arrival_ns, expected[i]) << i;
    EXPECT_FALSE(events[i].unterminated);
  }
  EXPECT_EQ(events.back().data, "[DONE]");
  EXPECT_EQ(events[0].data.substr(0, 14), "{\"id\":\"cmpl-7f");
  const auto at_once = whole(s);
  ASSERT_EQ(at_once.size(), events.size());
  for (std::size_t i = 0; i < events.size(); ++i) EXPECT_EQ(at_once[i].data, events[i].data);
}

TEST(SseParser, SplitAnywhereGivesTheSameEvents) {
  const std::string s = test::read_data("vllm_chat_crlf.sse");
  const auto ref = whole(s);
  ASSERT_EQ(ref.size(), 6u);  // comment line dropped
  for (std::size_t cut = 0; cut <= s.size(); ++cut) {
    SseParser p;
    std::vector<SseEvent> out;
    ASSERT_TRUE(p.feed(std::string_view(s).substr(0, cut), 1, out));
    ASSERT_TRUE(p.feed(std::string_view(s).substr(cut), 2, out));
    p.finish(3, out);
    ASSERT_EQ(out.size(), ref.size()) << "cut " << cut;
    for (std::size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i].data, ref[i].data) << cut;
  }
}

TEST(SseParser, CrlfEventsDispatchAtTheLoneCr) {
  const std::string s = test::read_data("vllm_chat_crlf.sse");
  const auto events = byte_by_byte(s);
  const auto expected = dispatch_positions(s);
  ASSERT_EQ(events.size(), 6u);
  // dispatch_positions also counts the blank line after the comment, which has no data.
  std::vector<std::int64_t> with_data;
  for (std::size_t i = 0; i < expected.size(); ++i)
    if (i != 1) with_data.push_back(expected[i]);
  for (std::size_t i = 0; i < events.size(); ++i) EXPECT_EQ(events[i].t_arrival_ns, with_data[i]);
  for (const auto& e : events) EXPECT_EQ(e.data.find('\r'), std::string::npos);
}

TEST(SseParser, LlamaCppChatByteByByte) {
  const std::string s = test::read_data("llamacpp_chat.sse");
  const auto events = byte_by_byte(s);
  ASSERT_EQ(events.size(), 5u);
  EXPECT_NE(events[3].data.find("\"timings\""), std::string::npos);
  EXPECT_EQ(events[4].data, "[DONE]");
}

TEST(SseParser, MultiLineDataAndStreamWithoutDoneOrFinalBlankLine) {
  const std::string s = test::read_data("llamacpp_completions_no_done.sse");
  const auto events = byte_by_byte(s);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_NE(events[1].data.find(",\n\"logprobs\""), std::string::npos);  // lines joined by \n
  EXPECT_FALSE(events[1].unterminated);
  EXPECT_TRUE(events[2].unterminated);  // dispatched by finish()
  EXPECT_EQ(events[2].t_arrival_ns, static_cast<std::int64_t>(s.size()));
}

TEST(SseParser, SeveralEventsInOneReadShareItsTimestamp) {
  const auto events = whole("data: a\n\ndata: b\n\n: c\n\ndata: d\n\n", 42);
  ASSERT_EQ(events.size(), 3u);
  for (const auto& e : events) EXPECT_EQ(e.t_arrival_ns, 42);
  EXPECT_EQ(events[2].data, "d");
}

TEST(SseParser, FieldsAndSpacing) {
  const auto events =
      whole("event: error\ndata:nospace\ndata:  two spaces\nid: 5\nretry: 10\nfoo\n\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].event, "error");
  EXPECT_EQ(events[0].data, "nospace\n two spaces");
}

TEST(SseParser, LoneCrLineEnds) {
  const auto events = whole("data: x\r\rdata: y\r\r");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].data, "y");
}

TEST(SseParser, EventWithoutDataIsNotDispatched) {
  const auto events = whole("event: ping\n\n: comment\n\n");
  EXPECT_TRUE(events.empty());
}

TEST(SseParser, OversizedEventFails) {
  SseParser p(16);
  std::vector<SseEvent> out;
  EXPECT_FALSE(p.feed("data: 0123456789abcdefghijkl", 1, out));
  EXPECT_NE(p.error().find("exceeds 16"), std::string::npos);
  EXPECT_FALSE(p.feed("\n\n", 2, out));
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace llmcap::agent

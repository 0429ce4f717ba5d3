// Tests of agent/conversation.h: the session plan (turns, think times) as pure functions of the
// seed, the history as chat messages and as one completions prompt, the spec's checks, the
// session statistics, and the answer text the chunk decoder keeps for the next turn.
#include "agent/conversation.h"

#include <gtest/gtest.h>

#include <set>

#include <nlohmann/json.hpp>

#include "agent/chunk_decoder.h"

namespace llmcap::agent {
namespace {

using json = nlohmann::json;

ConversationSpec spec(std::int32_t low, std::int32_t high) {
  ConversationSpec s;
  s.turns_min = low;
  s.turns_max = high;
  return s;
}

TEST(Conversation, TurnsAreUniformInTheRangeAndFixedBySeedAndSession) {
  const ConversationSpec s = spec(2, 6);
  std::vector<int> seen(7, 0);
  for (std::uint64_t session = 0; session < 5000; ++session) {
    const auto t = session_turns(s, 11, session);
    ASSERT_GE(t, 2);
    ASSERT_LE(t, 6);
    ++seen[static_cast<std::size_t>(t)];
    EXPECT_EQ(t, session_turns(s, 11, session));
  }
  for (int t = 2; t <= 6; ++t) EXPECT_NEAR(seen[static_cast<std::size_t>(t)], 1000, 150) << t;
  int differ = 0;
  for (std::uint64_t session = 0; session < 100; ++session)
    differ += session_turns(s, 11, session) != session_turns(s, 12, session);
  EXPECT_GT(differ, 50);
  EXPECT_EQ(session_turns(spec(4, 4), 1, 99), 4);
}

TEST(Conversation, ThinkTimeIsFixedOrExponentialWithItsMean) {
  ConversationSpec s = spec(3, 3);
  EXPECT_EQ(think_time_ns(s, 1, 0, 2), 0);
  s.think_time_s = 2.5;
  EXPECT_EQ(think_time_ns(s, 1, 7, 2), 2'500'000'000);
  s.think_time_exponential = true;
  double sum = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    const auto t = think_time_ns(s, 1, static_cast<std::uint64_t>(i), 2);
    ASSERT_GE(t, 0);
    EXPECT_EQ(t, think_time_ns(s, 1, static_cast<std::uint64_t>(i), 2));
    sum += static_cast<double>(t) / 1e9;
  }
  EXPECT_NEAR(sum / n, 2.5, 0.1);
  EXPECT_NE(think_time_ns(s, 1, 3, 2), think_time_ns(s, 1, 3, 3));
}

TEST(Conversation, TurnDrawKeysAreDistinctPerSessionAndTurn) {
  std::set<std::uint64_t> keys;
  for (std::uint64_t session = 0; session < 200; ++session)
    for (std::int32_t turn = 1; turn <= kMaxSessionTurns; ++turn)
      keys.insert(turn_draw_key(session, turn));
  EXPECT_EQ(keys.size(), 200u * kMaxSessionTurns);
  EXPECT_EQ(turn_draw_key(3, 2), turn_draw_key(3, 2));
}

TEST(Conversation, ValidateNamesTheField) {
  EXPECT_TRUE(validate_conversation(ConversationSpec{}).empty());  // not a conversation
  EXPECT_TRUE(validate_conversation(spec(1, 256)).empty());
  auto e = validate_conversation(spec(3, 2));
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("workload.conversation.turns"), std::string::npos);
  EXPECT_FALSE(validate_conversation(spec(1, 257)).empty());
  ConversationSpec bad = spec(2, 2);
  bad.think_time_s = -1;
  bad.max_context_tokens = -5;
  e = validate_conversation(bad);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_NE(e[0].find("think_time_s"), std::string::npos);
  EXPECT_NE(e[1].find("max_context_tokens"), std::string::npos);
}

TEST(Conversation, CompletionsHistoryIsPreviousPromptPlusReplyPlusMessage) {
  ConversationHistory h(ApiKind::kCompletions);
  h.add_user("system and first question");
  EXPECT_EQ(h.prompt(), "system and first question");
  const std::string first = h.prompt();
  h.add_reply(" an answer.");
  h.add_user("second question");
  EXPECT_EQ(h.prompt(), first + " an answer." + "\n\n" + "second question");
  const std::string second = h.prompt();
  h.add_reply(" more");
  h.add_user("third");
  EXPECT_EQ(h.prompt(), second + " more\n\nthird");
  EXPECT_EQ(h.bytes(), std::string("system and first question an answer.second question more"
                                   "third")
                           .size());
}

TEST(Conversation, ChatHistoryAlternatesUserAndAssistantMessages) {
  ConversationHistory h(ApiKind::kChat);
  h.add_user("hello \"there\"");
  h.add_reply(" hi\nyou");
  h.add_user("next");
  const json m = json::parse(h.messages_json());
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0], json({{"role", "user"}, {"content", "hello \"there\""}}));
  EXPECT_EQ(m[1], json({{"role", "assistant"}, {"content", " hi\nyou"}}));
  EXPECT_EQ(m[2], json({{"role", "user"}, {"content", "next"}}));
  // A reply whose bytes are not valid UTF-8 (a character cut by a truncated stream) is sent
  // with the bad bytes replaced, never refused.
  ConversationHistory bad(ApiKind::kChat);
  bad.add_user("q");
  bad.add_reply(std::string("caf\xC3", 4));
  bad.add_user("q2");
  EXPECT_EQ(json::parse(bad.messages_json())[1]["content"], "caf\xEF\xBF\xBD");
}

TEST(Conversation, ChunkDecoderKeepsTheAnswerTextDecoded) {
  std::string text;
  ChunkDecoder::decode(R"({"choices":[{"index":0,"text":" a\"b\u00e9"}]})", ApiKind::kCompletions,
                       true, true, &text);
  ChunkDecoder::decode(R"({"choices":[{"index":0,"text":" c"},{"index":1,"text":" other"}]})",
                       ApiKind::kCompletions, true, true, &text);
  EXPECT_EQ(text, " a\"b\xC3\xA9 c");
  std::string chat;
  ChunkDecoder::decode(R"({"choices":[{"delta":{"role":"assistant","content":""}}]})",
                       ApiKind::kChat, true, true, &chat);
  ChunkDecoder::decode(R"({"choices":[{"delta":{"reasoning_content":"think","content":"x"}}]})",
                       ApiKind::kChat, true, true, &chat);
  ChunkDecoder::decode(R"({"choices":[{"delta":{"content":"y"}}]})", ApiKind::kChat, true, true,
                       &chat);
  ChunkDecoder::decode(R"({"choices":[{"delta":{"content":"z"}}]} trailing)", ApiKind::kChat, true,
                       true, &chat);  // malformed: nothing kept
  EXPECT_EQ(chat, "xy");
  std::string whole;
  ChunkDecoder::decode(
      R"({"choices":[{"message":{"role":"assistant","content":"whole answer"},"finish_reason":"length"}]})",
      ApiKind::kChat, false, true, &whole);
  EXPECT_EQ(whole, "whole answer");
}

analysis::RequestSample turn_sample(std::int64_t intended_ms, std::int64_t ttft_ms,
                                    std::int64_t end_ms, bool ok = true) {
  analysis::RequestSample s;
  s.t_intended_ns = intended_ms * 1'000'000;
  s.t_send_ns = s.t_intended_ns;
  s.t_first_token_ns = ok ? s.t_intended_ns + ttft_ms * 1'000'000 : -1;
  s.t_end_ns = end_ms * 1'000'000;
  s.input_tokens = static_cast<std::int32_t>(100 + intended_ms);
  s.output_tokens = 10;
  s.finish_reason = analysis::FinishReason::kLength;
  if (!ok) s.error = analysis::ErrorClass::kHttp5xx;
  return s;
}

TEST(Conversation, StatsGiveTtftByTurnAndDurationsOfCompletedSessions) {
  std::vector<analysis::RequestSample> samples;
  ConversationLog log;
  auto add = [&](std::uint64_t session, std::int32_t turn, analysis::RequestSample s) {
    samples.push_back(s);
    log.turns.push_back({session, turn});
  };
  // Session 0 (completed, 3 turns): 1000 → 4000 ms. Session 1 (a failed 2nd turn).
  // Session 2 started in the warm-up (before 500 ms): its turns in the window still count by
  // turn, the session does not. Session 3: cut by the window end after one turn.
  add(2, 1, turn_sample(100, 10, 200));
  add(0, 1, turn_sample(1000, 20, 1500));
  add(2, 2, turn_sample(1100, 40, 1200));
  add(1, 1, turn_sample(1200, 30, 1300));
  add(1, 2, turn_sample(2000, 0, 2100, false));
  add(0, 2, turn_sample(2500, 60, 3000));
  add(0, 3, turn_sample(3500, 80, 4000));
  add(3, 1, turn_sample(4000, 50, 4100));
  log.sessions = {{0, 3, 3, SessionEnd::kCompleted},
                  {1, 3, 2, SessionEnd::kFailed},
                  {2, 2, 2, SessionEnd::kCompleted},
                  {3, 4, 1, SessionEnd::kWindowEnd}};
  const ConversationStats st = conversation_stats(samples, log, 500'000'000, 10'000'000'000);
  EXPECT_EQ(st.sessions_started, 3u);
  EXPECT_EQ(st.sessions_completed, 1u);
  EXPECT_EQ(st.sessions_failed, 1u);
  EXPECT_EQ(st.sessions_cut, 1u);
  EXPECT_DOUBLE_EQ(st.turns_per_session_mean, 2.0);
  ASSERT_TRUE(st.duration_p50_s);
  EXPECT_DOUBLE_EQ(*st.duration_p50_s, 3.0);
  EXPECT_DOUBLE_EQ(*st.duration_max_s, 3.0);
  ASSERT_EQ(st.by_turn.size(), 3u);
  EXPECT_EQ(st.by_turn[0].requests, 3u);  // sessions 0, 1, 3 (session 2's turn 1: warm-up)
  EXPECT_DOUBLE_EQ(*st.by_turn[0].ttft_p50_ms, 30);
  EXPECT_DOUBLE_EQ(*st.by_turn[0].ttft_p95_ms, 50);
  EXPECT_EQ(st.by_turn[1].requests, 3u);
  EXPECT_EQ(st.by_turn[1].ok, 2u);
  EXPECT_DOUBLE_EQ(*st.by_turn[1].ttft_p50_ms, 40);
  EXPECT_DOUBLE_EQ(*st.by_turn[1].ttft_p95_ms, 60);
  EXPECT_EQ(st.by_turn[2].turn, 3);
  EXPECT_DOUBLE_EQ(*st.by_turn[2].input_tokens_mean, 3600);
  const json j = json::parse(conversation_stats_json(st));
  EXPECT_EQ(j["sessions_completed"], 1);
  EXPECT_EQ(j["by_turn"][1]["ttft_p95_ms"], 60.0);
  EXPECT_EQ(j["session_duration_s"]["p95"], 3.0);
  // Turns not parallel to the samples: nothing is claimed.
  log.turns.pop_back();
  EXPECT_EQ(conversation_stats(samples, log, 0, 1).sessions_started, 0u);
}

}  // namespace
}  // namespace llmcap::agent

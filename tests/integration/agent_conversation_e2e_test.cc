// Multi-turn conversations (issue 21, workload.conversation) end to end:
//   - against the scripted fake, whose every answer is recognisable (" s<stream>t<k>"), each
//     turn's request is exactly the previous turn's request + the answer the fake streamed + a
//     new user message (chat: the messages array; completions: one prompt text), sessions have
//     their planned number of turns, and each later turn is intended at the previous reply's
//     end + the think time;
//   - against the simulator, the server's prefix cache finds the previous prompt and the
//     previous answer: its hit counter equals, token for token, the full blocks of every
//     turn's previous prompt + answer, which it could not without caching output blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "agent/step_runner.h"
#include "agent/telemetry_scraper.h"
#include "sim/sim_server.h"
#include "tests/fakes/scripted_target.h"

namespace llmcap::agent {
namespace {

namespace asio = boost::asio;
using json = nlohmann::json;

constexpr std::int32_t kReplyTokens = 6;

StepSpec conversation_step(const std::string& base_url, ApiKind api) {
  StepSpec s;
  s.target.base_url = base_url;
  s.target.api = api;
  s.workload.input_tokens = analysis::LengthDistribution::fixed(24);
  s.workload.output_tokens = analysis::LengthDistribution::fixed(kReplyTokens);
  s.workload.calibrate = false;
  s.workload.default_tokens_per_word = 1.0;
  s.workload.conversation.turns_min = 2;
  s.workload.conversation.turns_max = 4;
  s.workload.conversation.user_tokens = analysis::LengthDistribution::fixed(8);
  s.workload.conversation.think_time_s = 0.02;
  s.load.kind = LoadKind::kClosed;
  s.load.concurrency = 3;
  s.duration_s = 1.0;
  s.drain = DrainPolicy::kWait;
  s.seed = 7;
  return s;
}

// The fake's stream number of a response id ("cmpl-12", "chatcmpl-12").
std::uint64_t stream_of(const std::string& id) { return std::stoull(id.substr(id.rfind('-') + 1)); }

struct Turn {
  std::size_t sample = 0;
  const fakes::ServedStream* served = nullptr;
};

// Every session's turns in order, each with what the fake received for it.
std::map<std::uint64_t, std::vector<Turn>> sessions_of(const StepResult& r,
                                                       const std::vector<fakes::ServedStream>& s) {
  std::map<std::string, const fakes::ServedStream*> by_id;
  for (const auto& x : s) by_id[x.id] = &x;
  std::map<std::uint64_t, std::vector<Turn>> out;
  for (std::size_t i = 0; i < r.samples.size(); ++i) {
    const ConversationTurn& t = r.conversation.turns[i];
    auto& turns = out[t.session];
    EXPECT_EQ(static_cast<std::size_t>(t.turn), turns.size() + 1) << "session " << t.session;
    const auto it = by_id.find(r.response_ids[i]);
    turns.push_back({i, it == by_id.end() ? nullptr : it->second});
  }
  return out;
}

void check_conversation(ApiKind api, bool stream) {
  fakes::Script script;
  script.ttft_us = 2'000;
  script.itl_us = 1'000;
  script.tokens = 1'000;  // every answer is max_tokens long
  script.numbered_tokens = true;
  fakes::ScriptedTarget fake(script);
  StepSpec spec = conversation_step(fake.base_url(), api);
  spec.target.stream = stream;
  const StepResult r = StepRunner().run(spec);
  ASSERT_TRUE(r.fatal_error.empty()) << r.fatal_error;
  ASSERT_EQ(r.conversation.turns.size(), r.samples.size());
  const auto served = fake.records();
  const auto sessions = sessions_of(r, served);
  ASSERT_GE(sessions.size(), 6u);

  std::size_t later_turns = 0, completed = 0;
  for (const auto& [session, turns] : sessions) {
    for (std::size_t k = 0; k < turns.size(); ++k) {
      const auto& sample = r.samples[turns[k].sample];
      ASSERT_NE(turns[k].served, nullptr) << "session " << session << " turn " << k + 1;
      if (k == 0) continue;
      const auto& prev = *turns[k - 1].served;
      const auto& cur = *turns[k].served;
      const std::string reply = fakes::numbered_reply(stream_of(prev.id), kReplyTokens);
      const json prev_body = json::parse(prev.body);
      const json body = json::parse(cur.body);
      if (api == ApiKind::kChat) {
        // The previous messages, the answer as the assistant's message, one new user message.
        json expected = prev_body["messages"];
        expected.push_back({{"role", "assistant"}, {"content", reply}});
        const json& got = body["messages"];
        ASSERT_EQ(got.size(), expected.size() + 1);
        for (std::size_t m = 0; m < expected.size(); ++m) EXPECT_EQ(got[m], expected[m]);
        EXPECT_EQ(got.back()["role"], "user");
        EXPECT_FALSE(got.back()["content"].get<std::string>().empty());
      } else {
        const std::string before = prev_body["prompt"].get<std::string>() + reply + "\n\n";
        const std::string prompt = body["prompt"].get<std::string>();
        ASSERT_GT(prompt.size(), before.size());
        EXPECT_EQ(prompt.substr(0, before.size()), before);
        EXPECT_EQ(prompt.find("\n\n", before.size()), std::string::npos);
      }
      // Intended at the previous reply's end + the think time (20 ms).
      const auto& prev_sample = r.samples[turns[k - 1].sample];
      EXPECT_EQ(sample.t_intended_ns, prev_sample.t_end_ns + 20'000'000);
      ++later_turns;
    }
  }
  for (const auto& rec : r.conversation.sessions) {
    EXPECT_GE(rec.planned_turns, 2);
    EXPECT_LE(rec.planned_turns, 4);
    EXPECT_EQ(rec.planned_turns, session_turns(spec.workload.conversation, spec.seed, rec.session));
    if (rec.end == SessionEnd::kCompleted) {
      ++completed;
      EXPECT_EQ(rec.turns_sent, rec.planned_turns);
    } else {
      EXPECT_EQ(rec.end, SessionEnd::kWindowEnd);  // nothing failed here
    }
  }
  EXPECT_GE(later_turns, 10u);
  EXPECT_GE(completed, 4u);
  EXPECT_EQ(r.counts.failed, 0u);
  EXPECT_EQ(r.counts.intended, r.samples.size());

  const ConversationStats st =
      conversation_stats(r.samples, r.conversation, r.window_start_ns, r.window_end_ns);
  ASSERT_GE(st.by_turn.size(), 2u);
  EXPECT_EQ(st.by_turn[0].turn, 1);
  EXPECT_GT(st.sessions_completed, 0u);
  ASSERT_TRUE(st.duration_p50_s);
  // A session of at least 2 turns lasts at least one think time.
  EXPECT_GT(*st.duration_p50_s, 0.02);
}

TEST(AgentConversation, ChatTurnsSendTheHistoryAndTheStreamedAnswerExactly) {
  check_conversation(ApiKind::kChat, true);
}

TEST(AgentConversation, CompletionsTurnsSendThePreviousPromptAnswerAndNewMessage) {
  check_conversation(ApiKind::kCompletions, true);
}

TEST(AgentConversation, NonStreamedAnswersAreSentBackToo) {
  check_conversation(ApiKind::kChat, false);
}

TEST(AgentConversation, OpenLoopSessionsArriveAtTheRateAndEndAtTheContextLimit) {
  fakes::Script script;
  script.ttft_us = 2'000;
  script.itl_us = 500;
  script.tokens = 1'000;
  fakes::ScriptedTarget fake(script);
  StepSpec spec = conversation_step(fake.base_url(), ApiKind::kCompletions);
  spec.load.kind = LoadKind::kOpen;
  spec.load.rate = RateProfile::constant(10);
  spec.load.inter_arrival = InterArrival::kConstant;
  spec.workload.conversation.turns_min = spec.workload.conversation.turns_max = 10;
  // Turn 1: 24 + 6; each later turn adds 8 + 6: turn 3 would need 24+6+8+6+8 + 6 = 58 > 50.
  spec.workload.conversation.max_context_tokens = 50;
  const StepResult r = StepRunner().run(spec);
  ASSERT_TRUE(r.fatal_error.empty()) << r.fatal_error;
  ASSERT_GE(r.conversation.sessions.size(), 8u);
  std::size_t limited = 0;
  for (const auto& rec : r.conversation.sessions) {
    if (rec.end != SessionEnd::kContextLimit) continue;
    ++limited;
    EXPECT_EQ(rec.turns_sent, 2);
  }
  EXPECT_GE(limited, 7u);
}

// A SimServer on two io threads for the duration of a test.
class Sim {
 public:
  explicit Sim(sim::SimOptions o) : server_(io_, std::move(o)) {
    server_.start();
    for (int i = 0; i < 2; ++i) threads_.emplace_back([this] { io_.run(); });
  }
  ~Sim() {
    server_.stop();
    work_.reset();
    io_.stop();
    for (auto& t : threads_) t.join();
  }
  std::uint16_t port() const { return server_.port(); }

 private:
  asio::io_context io_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_{
      asio::make_work_guard(io_)};
  sim::SimServer server_;
  std::vector<std::thread> threads_;
};

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

TEST(AgentConversation, SimPrefixCacheHitsThePreviousPromptAndAnswer) {
  sim::SimOptions o;
  o.hardware = "a100-80g-pcie";
  o.model = "llama-3.1-8b";
  o.port = 0;
  o.seed = 5;
  o.time_scale = 5;
  Sim sim(o);
  StepSpec spec =
      conversation_step("http://127.0.0.1:" + std::to_string(sim.port()), ApiKind::kChat);
  spec.workload.input_tokens = analysis::LengthDistribution::fixed(200);
  spec.workload.output_tokens = analysis::LengthDistribution::fixed(40);
  spec.workload.conversation.user_tokens = analysis::LengthDistribution::fixed(30);
  spec.workload.conversation.turns_min = spec.workload.conversation.turns_max = 4;
  spec.workload.conversation.think_time_s = 0.01;
  spec.load.concurrency = 2;
  spec.duration_s = 1.5;
  TelemetryScraperOptions so;
  so.metrics_url = spec.target.base_url + "/metrics";
  so.interval_ns = 100'000'000;
  TelemetryScraper scraper(so);
  scraper.start(now_ns());
  const StepResult r = StepRunner().run(spec);
  const TelemetryResult telemetry = scraper.stop();
  ASSERT_TRUE(r.fatal_error.empty()) << r.fatal_error;
  ASSERT_EQ(r.counts.failed, 0u);
  // A fresh simulator: its counters since start are this step's (the last scrape follows it).
  double hits_total = -1, queries_total = -1;
  for (const auto& p : telemetry.points) {
    if (p.series == "vllm:prefix_cache_hits_total") hits_total = std::max(hits_total, p.value);
    if (p.series == "vllm:prefix_cache_queries_total")
      queries_total = std::max(queries_total, p.value);
  }
  ASSERT_GE(hits_total, 0);

  // The sim caches every full 16-token block of prompt + answer whose KV was computed (all but
  // the answer's last token); a turn finds those of its session's previous turn.
  std::map<std::uint64_t, std::pair<std::int64_t, std::int64_t>> last;  // session → (P, O)
  std::map<std::int32_t, std::pair<double, double>> by_turn;            // turn → (hits, prompt)
  double expected_hits = 0, prompt_tokens = 0;
  for (std::size_t i = 0; i < r.samples.size(); ++i) {
    const auto& s = r.samples[i];
    const auto& t = r.conversation.turns[i];
    ASSERT_GT(s.input_tokens, 0);
    double hits = 0;
    if (auto it = last.find(t.session); it != last.end() && t.turn > 1) {
      const std::int64_t cached_blocks = (it->second.first + it->second.second - 1) / 16;
      hits = static_cast<double>(std::min<std::int64_t>(cached_blocks, (s.input_tokens - 1) / 16) *
                                 16);
    }
    last[t.session] = {s.input_tokens, s.output_tokens};
    expected_hits += hits;
    prompt_tokens += s.input_tokens;
    by_turn[t.turn].first += hits;
    by_turn[t.turn].second += s.input_tokens;
  }
  std::printf("sim prefix cache: %.0f of %.0f prompt tokens hit (expected %.0f)\n", hits_total,
              queries_total, expected_hits);
  for (const auto& [turn, v] : by_turn)
    std::printf("  turn %d: expected hit rate %.3f\n", turn,
                v.second > 0 ? v.first / v.second : 0.0);
  EXPECT_EQ(queries_total, prompt_tokens);
  EXPECT_EQ(hits_total, expected_hits);
  ASSERT_GE(by_turn.size(), 3u);
  EXPECT_EQ(by_turn[1].first, 0);
  EXPECT_GT(by_turn[3].first / by_turn[3].second, 0.7);
}

}  // namespace
}  // namespace llmcap::agent

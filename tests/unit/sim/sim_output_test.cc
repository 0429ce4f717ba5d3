#include "sim/sim_output.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

namespace llmcap::sim {
namespace {

const SimTokenizer kTokenizer(32000);

GenerationRequest request(std::int64_t max_tokens) {
  GenerationRequest g;
  g.prompt_tokens = 3;
  g.max_tokens = max_tokens;
  return g;
}

// The words WordGenerator(seed, index) draws, concatenated.
std::string words(std::uint64_t seed, std::uint64_t index, int count) {
  WordGenerator w(seed, index);
  std::string out;
  for (int i = 0; i < count; ++i) out += w.next_token_text();
  return out;
}

TEST(SimOutputTest, WithoutStopsEveryTokenIsGeneratedAndSent) {
  WordGenerator w(7, 1);
  const ChoicePlan plan = plan_choice(request(20), w, kTokenizer);
  EXPECT_EQ(plan.tokens.size(), 20u);
  EXPECT_FALSE(plan.stopped);
  EXPECT_STREQ(plan.finish_reason(), "length");
  EXPECT_EQ(plan.text, words(7, 1, 20));
  ASSERT_EQ(plan.visible_chars.size(), 20u);
  EXPECT_EQ(plan.visible_chars.back(), plan.text.size());
  EXPECT_EQ(plan.visible_chars[0], plan.tokens[0].size());  // nothing held back
  EXPECT_EQ(kTokenizer.count(plan.text), 20);
}

TEST(SimOutputTest, StopStringEndsTheSequenceAtTheTokenThatCompletesIt) {
  const std::string full = words(7, 1, 400);
  const std::size_t period = full.find('.');
  ASSERT_NE(period, std::string::npos);
  GenerationRequest g = request(400);
  g.stop = {"."};
  WordGenerator w(7, 1);
  const ChoicePlan plan = plan_choice(g, w, kTokenizer);
  EXPECT_TRUE(plan.stopped);
  EXPECT_STREQ(plan.finish_reason(), "stop");
  EXPECT_EQ(plan.stop_string, ".");
  EXPECT_EQ(plan.text, full.substr(0, period));  // the stop string is not included
  // The engine generates up to and including the token that holds the period, no further.
  std::string generated;
  for (const auto& t : plan.tokens) generated += t;
  EXPECT_EQ(generated.back(), '.');
  EXPECT_EQ(generated, full.substr(0, period + 1));
  EXPECT_LT(plan.tokens.size(), 400u);

  g.include_stop_str_in_output = true;
  WordGenerator again(7, 1);
  EXPECT_EQ(plan_choice(g, again, kTokenizer).text, full.substr(0, period + 1));
}

TEST(SimOutputTest, StopStringsSplitOverTokensAndTheFirstInListOrderWins) {
  const std::string full = words(3, 9, 64);
  // A stop string spanning the boundary between tokens 4 and 5 (end of one word, start of next).
  std::size_t boundary = 0;
  WordGenerator probe(3, 9);
  for (int i = 0; i < 5; ++i) boundary += probe.next_token_text().size();
  const std::string spanning = full.substr(boundary - 2, 4);
  GenerationRequest g = request(64);
  g.stop = {"zzzz-never", spanning};
  WordGenerator w(3, 9);
  const ChoicePlan plan = plan_choice(g, w, kTokenizer);
  ASSERT_TRUE(plan.stopped);
  EXPECT_EQ(plan.stop_string, spanning);
  EXPECT_EQ(plan.text, full.substr(0, full.find(spanning)));
  EXPECT_LE(plan.tokens.size(), 6u);
  // Streaming holds back 9 characters (the longest stop string − 1) until the last token.
  for (std::size_t k = 0; k + 1 < plan.visible_chars.size(); ++k)
    EXPECT_LE(plan.visible_chars[k], plan.text.size());
  EXPECT_EQ(plan.visible_chars.back(), plan.text.size());
  if (plan.tokens.size() > 1) {
    const std::size_t first = plan.tokens[0].size();
    EXPECT_EQ(plan.visible_chars[0], first > 9 ? first - 9 : 0);
  }
}

TEST(SimOutputTest, StopIsIgnoredBeforeMinTokens) {
  GenerationRequest g = request(50);
  WordGenerator first(11, 2);
  g.stop = {first.next_token_text()};  // the very first token
  WordGenerator w(11, 2);
  EXPECT_EQ(plan_choice(g, w, kTokenizer).tokens.size(), 1u);
  g.min_tokens = 5;
  WordGenerator w2(11, 2);
  const ChoicePlan plan = plan_choice(g, w2, kTokenizer);
  EXPECT_GT(plan.tokens.size(), 5u);  // the first occurrence is skipped
}

TEST(SimOutputTest, StopTokenIdsStopWithTheIdAsReason) {
  WordGenerator probe(5, 5);
  std::vector<std::string> tokens;
  for (int i = 0; i < 4; ++i) tokens.push_back(probe.next_token_text());
  GenerationRequest g = request(30);
  g.stop_token_ids = {kTokenizer.tokenize(tokens[3]).front()};
  WordGenerator w(5, 5);
  const ChoicePlan plan = plan_choice(g, w, kTokenizer);
  ASSERT_TRUE(plan.stopped);
  EXPECT_EQ(plan.stop_token_id, g.stop_token_ids[0]);
  EXPECT_EQ(plan.tokens.size(), 4u);
  EXPECT_EQ(plan.text, tokens[0] + tokens[1] + tokens[2]);
}

TEST(SimOutputTest, CommonStopStringsOccur) {
  for (const char* stop : {"\n", ".", ",", "ba"}) {
    GenerationRequest g = request(1000);
    g.stop = {stop};
    WordGenerator w(0, 0);
    EXPECT_TRUE(plan_choice(g, w, kTokenizer).stopped) << stop;
  }
}

TEST(SimOutputTest, SyntheticLogprobsAreDeterministicDescendingAndAProperDistribution) {
  const TokenLogprob a = synthetic_logprob(" bado", 42, 5);
  const TokenLogprob b = synthetic_logprob(" bado", 42, 5);
  EXPECT_EQ(a.logprob, b.logprob);
  EXPECT_LE(a.logprob, 0.0);
  ASSERT_EQ(a.top.size(), 5u);
  EXPECT_EQ(a.top[0].token, " bado");
  EXPECT_EQ(a.top[0].logprob, a.logprob);
  std::set<std::string> distinct;
  double mass = 0;
  for (std::size_t i = 0; i < a.top.size(); ++i) {
    distinct.insert(a.top[i].token);
    mass += std::exp(a.top[i].logprob);
    if (i > 0) {
      EXPECT_LT(a.top[i].logprob, a.top[i - 1].logprob);
    }
  }
  EXPECT_EQ(distinct.size(), 5u);
  EXPECT_LT(mass, 1.0);
  EXPECT_NE(synthetic_logprob(" bado", 43, 0).logprob, a.logprob);  // position matters
  EXPECT_TRUE(synthetic_logprob(" bado", 42, 0).top.empty());
  EXPECT_EQ(synthetic_logprob(" x", 1, 20).top.size(), 20u);
}

}  // namespace
}  // namespace llmcap::sim

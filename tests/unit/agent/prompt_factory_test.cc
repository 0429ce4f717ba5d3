#include "agent/prompt_factory.h"

#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace llmcap::agent {
namespace {

std::int32_t word_count(const std::string& s) {
  std::istringstream in(s);
  std::string w;
  std::int32_t n = 0;
  while (in >> w) ++n;
  return n;
}

TEST(PromptFactory, PromptLengthsFollowTheCalibratedWordCount) {
  analysis::LengthDistribution in;
  in.kind = analysis::LengthDistribution::Kind::kUniform;
  in.low = 50;
  in.high = 500;
  PromptFactory f(in, analysis::LengthDistribution::fixed(64), 0, 1);
  LengthCalibrator cal(1.25, 4);
  for (std::uint64_t i = 0; i < 200; ++i) {
    const auto p = f.next(i, cal);
    ASSERT_GE(p.planned_input_tokens, 50);
    ASSERT_LE(p.planned_input_tokens, 500);
    EXPECT_EQ(p.planned_output_tokens, 64);
    EXPECT_EQ(word_count(p.prompt), cal.words_for(p.planned_input_tokens));
    EXPECT_EQ(p.words, word_count(p.prompt));
    // A tokenizer at exactly 1.25 tokens/word + 4 sees the planned length within rounding.
    EXPECT_NEAR(p.words * 1.25 + 4, p.planned_input_tokens, 1.0);
  }
}

TEST(PromptFactory, EveryPromptIsUniqueFromItsFirstWords) {
  PromptFactory f(analysis::LengthDistribution::fixed(40), analysis::LengthDistribution::fixed(8),
                  0, 9);
  LengthCalibrator cal(1.0, 0);
  std::set<std::string> heads;
  for (std::uint64_t i = 0; i < 16000; ++i) {
    const auto p = f.next(i, cal);
    heads.insert(p.prompt);
    // The index is spelled in the first words (base 128), so prompts differ from word 1-3
    // on: prefix caches cannot share more than a couple of words between two requests.
    if (i < 128) {
      EXPECT_EQ(p.prompt.substr(0, p.prompt.find(' ')), f.probe_text(1, i)) << i;
    }
  }
  EXPECT_EQ(heads.size(), 16000u);
}

TEST(PromptFactory, SharedPrefixIsIdenticalThenDiverges) {
  PromptFactory f(analysis::LengthDistribution::fixed(300), analysis::LengthDistribution::fixed(8),
                  100, 5);
  LengthCalibrator cal(1.0, 0);
  const auto a = f.next(0, cal);
  const auto b = f.next(1, cal);
  std::size_t common = 0;
  while (common < a.prompt.size() && common < b.prompt.size() &&
         a.prompt[common] == b.prompt[common])
    ++common;
  EXPECT_EQ(word_count(a.prompt.substr(0, common)), 100);  // exactly the prefix words
  EXPECT_EQ(word_count(a.prompt), 300);
}

TEST(PromptFactory, PrefixGroupsShareExactlyTheirGroupsPrefix) {
  PromptFactory f(analysis::LengthDistribution::fixed(300), analysis::LengthDistribution::fixed(8),
                  0, 5);
  LengthCalibrator cal(1.0, 0);
  const auto words = [](const std::string& s) {
    std::vector<std::string> out;
    std::istringstream in(s);
    for (std::string w; in >> w;) out.push_back(w);
    return out;
  };
  const auto common = [](const std::vector<std::string>& a, const std::vector<std::string>& b) {
    std::size_t n = 0;
    while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
    return n;
  };
  const auto a0 = words(f.next(0, cal, 0, 100).prompt);
  const auto a1 = words(f.next(1, cal, 0, 100).prompt);
  const auto b0 = words(f.next(2, cal, 1, 200).prompt);
  const auto b1 = words(f.next(3, cal, 1, 200).prompt);
  const auto u = words(f.next(4, cal).prompt);
  EXPECT_EQ(a0.size(), 300u);
  EXPECT_EQ(b1.size(), 300u);
  EXPECT_EQ(common(a0, a1), 100u);  // the group's prefix, then the index differs
  EXPECT_EQ(common(b0, b1), 200u);
  EXPECT_EQ(common(a0, b0), 0u);  // groups differ from the first word
  EXPECT_EQ(common(a0, u), 0u);
  // The same text on another factory (another step, another target).
  PromptFactory g(analysis::LengthDistribution::fixed(300), analysis::LengthDistribution::fixed(8),
                  0, 99);
  EXPECT_EQ(common(words(g.next(9, cal, 1, 200).prompt), b0), 200u);
}

TEST(PromptFactory, SeededReproducible) {
  PromptFactory f1(analysis::LengthDistribution::fixed(64), analysis::LengthDistribution::fixed(8),
                   0, 3);
  PromptFactory f2(analysis::LengthDistribution::fixed(64), analysis::LengthDistribution::fixed(8),
                   0, 3);
  LengthCalibrator cal;
  for (std::uint64_t i = 0; i < 10; ++i) EXPECT_EQ(f1.next(i, cal).prompt, f2.next(i, cal).prompt);
}

TEST(PromptFactory, ProbeTextHasExactlyTheWords) {
  PromptFactory f(analysis::LengthDistribution::fixed(64), analysis::LengthDistribution::fixed(8),
                  0, 3);
  EXPECT_EQ(word_count(f.probe_text(16, 1'000'000'001ULL)), 16);
  EXPECT_EQ(word_count(f.probe_text(333, 7)), 333);
  EXPECT_NE(f.probe_text(16, 1), f.probe_text(16, 2));
}

// Words common to the starts of a and b (whole words only).
std::int32_t common_words(const std::string& a, const std::string& b) {
  std::istringstream ia(a), ib(b);
  std::string wa, wb;
  std::int32_t n = 0;
  while (ia >> wa && ib >> wb && wa == wb) ++n;
  return n;
}

TEST(PromptFactory, BlocksGiveExactSharedPrefixesAndTheirLength) {
  // One token per word (the simulator's tokenizer): blocks of 16 tokens are 16 words.
  LengthCalibrator cal(1.0, 0);
  PromptFactory f(analysis::LengthDistribution::fixed(1), analysis::LengthDistribution::fixed(1), 0,
                  1);
  const auto a = f.from_blocks(0, 50, 7, {4, 9, 2}, 16, cal);  // blocks 4 9 2, tail of 2
  const auto b = f.from_blocks(1, 40, 3, {4, 9}, 16, cal);     // blocks 4 9, tail of 8
  const auto c = f.from_blocks(2, 70, 3, {4, 9, 2, 5}, 16, cal);
  const auto d = f.from_blocks(3, 40, 3, {9, 4}, 16, cal);     // same ids, other order
  const auto e = f.from_blocks(4, 20, 3, {4, 9, 2}, 16, cal);  // room for one whole block
  EXPECT_EQ(a.planned_input_tokens, 50);
  EXPECT_EQ(a.planned_output_tokens, 7);
  for (const auto* p : {&a, &b, &c, &d, &e}) {
    EXPECT_EQ(word_count(p->prompt), p->planned_input_tokens) << p->prompt;
    EXPECT_EQ(p->words, p->planned_input_tokens);
  }
  EXPECT_EQ(common_words(a.prompt, b.prompt), 32);  // exactly blocks 4 and 9
  EXPECT_EQ(common_words(a.prompt, c.prompt), 48);  // blocks 4, 9 and 2
  EXPECT_EQ(common_words(a.prompt, e.prompt), 16);  // block 4 (9 did not fit in e)
  EXPECT_LT(common_words(b.prompt, d.prompt), 2);   // another first block: nothing shared
  // The block texts are the factory-independent block_text() of each id.
  EXPECT_EQ(
      a.prompt.rfind(PromptFactory::block_text(4, 16) + " " + PromptFactory::block_text(9, 16) +
                         " " + PromptFactory::block_text(2, 16) + " ",
                     0),
      0u);
  // Another factory (another step, seed or target) writes the same blocks.
  PromptFactory g(analysis::LengthDistribution::fixed(1), analysis::LengthDistribution::fixed(1), 0,
                  99);
  EXPECT_EQ(common_words(g.from_blocks(7, 40, 3, {4, 9}, 16, cal).prompt, a.prompt), 32);
  // Requests with no blocks in common share nothing beyond chance words.
  const auto x = f.from_blocks(5, 40, 3, {}, 16, cal);
  EXPECT_LT(common_words(x.prompt, a.prompt), 2);
  EXPECT_EQ(word_count(x.prompt), 40);
}

TEST(PromptFactory, BlockWordsStayFixedWhileTheCalibrationMoves) {
  PromptFactory f(analysis::LengthDistribution::fixed(1), analysis::LengthDistribution::fixed(1), 0,
                  1);
  const auto a = f.from_blocks(0, 300, 1, {1, 2}, 100, LengthCalibrator(1.0, 0));
  const auto b = f.from_blocks(1, 300, 1, {1, 2}, 100, LengthCalibrator(2.0, 0));
  EXPECT_EQ(common_words(a.prompt, b.prompt), 200);  // the blocks as first built
  EXPECT_EQ(word_count(b.prompt), 200 + 1);  // 150 words wanted; the blocks already have 200, + id
  EXPECT_EQ(PromptFactory::block_text(123456, 2), PromptFactory::block_text(123456, 2));
  EXPECT_EQ(word_count(PromptFactory::block_text(123456, 2)), 2);
  EXPECT_EQ(word_count(PromptFactory::block_text(123456, 1)), 1);
}

}  // namespace
}  // namespace llmcap::agent

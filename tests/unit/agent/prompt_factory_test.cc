#include "agent/prompt_factory.h"

#include <gtest/gtest.h>

#include <set>
#include <sstream>

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

}  // namespace
}  // namespace llmcap::agent

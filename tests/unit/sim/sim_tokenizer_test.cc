#include "sim/sim_tokenizer.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace llmcap::sim {
namespace {

TEST(SimTokenizerTest, OneTokenPerWhitespaceWord) {
  const SimTokenizer t(128256);
  EXPECT_EQ(t.count("hello world"), 2);
  EXPECT_EQ(t.count("  a\tb\n c  "), 3);
  EXPECT_EQ(t.count(""), 0);
  const auto ids = t.tokenize("the cat the");
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids[0], ids[2]);
  EXPECT_NE(ids[0], ids[1]);
  for (auto id : ids) {
    EXPECT_GE(id, 0);
    EXPECT_LT(id, 128256);
  }
}

TEST(SimTokenizerTest, ChatTemplateAddsOneTokenPerMessagePlusOne) {
  const SimTokenizer t(32000);
  const std::string text =
      SimTokenizer::render_chat({{"system", "be brief"}, {"user", "hi there you"}});
  EXPECT_EQ(t.count(text), 2 + 3 + 2 + 1);
}

TEST(SimTokenizerTest, GeneratedTextRetokenizesToTheSameCountAndIsSeeded) {
  const SimTokenizer t(32000);
  WordGenerator a(5, 3), b(5, 3), c(5, 4);
  std::string ta, tc;
  for (int i = 0; i < 50; ++i) {
    const std::string w = a.next_token_text();
    EXPECT_EQ(w, b.next_token_text());
    EXPECT_TRUE(w[0] == ' ' || w[0] == '\n') << w;
    EXPECT_EQ(t.count(w), 1);
    ta += w;
    tc += c.next_token_text();
  }
  EXPECT_EQ(t.count(ta), 50);
  EXPECT_NE(ta, tc);
}

TEST(SimTokenizerTest, GeneratedTextHasSentencesParagraphsAndIndependentChoices) {
  WordGenerator a(1, 2), choice0(1, 2, 0), choice1(1, 2, 1);
  std::string text, c0, c1;
  for (int i = 0; i < 2000; ++i) {
    text += a.next_token_text();
    c0 += choice0.next_token_text();
    c1 += choice1.next_token_text();
  }
  EXPECT_EQ(text, c0);  // choice 0 is what n = 1 draws
  EXPECT_NE(c0, c1);
  const auto count = [&](char ch) { return std::count(text.begin(), text.end(), ch); };
  // About one word in 16 ends a sentence, one in 16 has a comma, a quarter of sentences start a
  // paragraph.
  EXPECT_GT(count('.'), 2000 / 32);
  EXPECT_LT(count('.'), 2000 / 8);
  EXPECT_GT(count(','), 2000 / 32);
  EXPECT_GT(count('\n'), 5);
  EXPECT_LT(count('\n'), count('.'));
  EXPECT_EQ(SimTokenizer(32000).count(text), 2000);
}

}  // namespace
}  // namespace llmcap::sim

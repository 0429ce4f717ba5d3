#include "sim/sim_tokenizer.h"

#include <gtest/gtest.h>

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
    EXPECT_EQ(w[0], ' ');
    EXPECT_EQ(t.count(w), 1);
    ta += w;
    tc += c.next_token_text();
  }
  EXPECT_EQ(t.count(ta), 50);
  EXPECT_NE(ta, tc);
}

}  // namespace
}  // namespace llmcap::sim

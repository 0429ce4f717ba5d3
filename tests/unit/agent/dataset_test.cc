#include "agent/dataset.h"

#include <gtest/gtest.h>

#include <map>

#include "tests/unit/agent/test_util.h"

namespace llmcap::agent {
namespace {

TEST(Dataset, LoadsPromptsAndMessages) {
  auto ds = Dataset::load(test::data_path("good.jsonl"));
  ASSERT_TRUE(ds) << ds.error();
  ASSERT_EQ(ds->entries().size(), 3u);
  EXPECT_EQ(ds->entries()[0].prompt, "Tell me a story");
  EXPECT_EQ(ds->entries()[0].max_tokens, 64);
  EXPECT_EQ(ds->entries()[1].line, 3u);  // blank line 2 skipped
  EXPECT_EQ(ds->entries()[1].messages_json, R"([{"content":"hi","role":"user"}])");
  EXPECT_EQ(ds->entries()[1].input_tokens_hint, 3);
  EXPECT_EQ(ds->entries()[2].max_tokens, -1);
  EXPECT_TRUE(ds->has_messages());
}

struct BadCase {
  const char* text;
  const char* error;
};

TEST(Dataset, BadLinesNameTheLine) {
  const BadCase cases[] = {
      {"{\"prompt\": \"a\"}\n{oops\n", "dataset line 2: invalid JSON"},
      {"[1]\n", "dataset line 1: must be a JSON object"},
      {"\n\n{\"max_tokens\": 3}\n",
       "dataset line 3: needs \"prompt\" (string) or \"messages\" (array)"},
      {"{\"prompt\": 5}", "dataset line 1: \"prompt\" must be a string"},
      {"{\"prompt\": \"a\", \"messages\": []}",
       "dataset line 1: has both \"prompt\" and \"messages\"; give one"},
      {"{\"messages\": []}", "dataset line 1: \"messages\" must be a non-empty array"},
      {"{\"messages\": [{\"content\": \"x\"}]}",
       "dataset line 1: \"messages\"[0] must be an object with \"role\" and \"content\""},
      {"{\"prompt\": \"a\", \"max_tokens\": 0}",
       "dataset line 1: \"max_tokens\" must be an integer in 1..16777216"},
      {"{\"prompt\": \"a\", \"max_tokens\": \"8\"}",
       "dataset line 1: \"max_tokens\" must be an integer in 1..16777216"},
      {"{\"prompt\": \"a\", \"input_tokens\": -2}",
       "dataset line 1: \"input_tokens\" must be a non-negative integer"},
      {"\n  \n", "dataset has no requests"},
  };
  for (const auto& c : cases) {
    auto ds = Dataset::parse(c.text);
    ASSERT_FALSE(ds) << c.text;
    EXPECT_EQ(ds.error(), c.error) << c.text;
  }
}

TEST(Dataset, MissingFileNamesThePath) {
  auto ds = Dataset::load("/nonexistent/x.jsonl");
  ASSERT_FALSE(ds);
  EXPECT_EQ(ds.error(), "cannot open dataset file '/nonexistent/x.jsonl'");
}

TEST(Dataset, CrlfLinesAccepted) {
  auto ds = Dataset::parse("{\"prompt\": \"a\"}\r\n{\"prompt\": \"b\"}\r\n");
  ASSERT_TRUE(ds) << ds.error();
  EXPECT_EQ(ds->entries().size(), 2u);
}

TEST(DatasetCursor, ReplayWrapsInOrderSampleIsSeeded) {
  auto ds = Dataset::parse("{\"prompt\": \"a\"}\n{\"prompt\": \"b\"}\n{\"prompt\": \"c\"}\n");
  ASSERT_TRUE(ds);
  DatasetCursor replay(ds.value(), DatasetOrder::kReplay, 1);
  std::string seq;
  for (int i = 0; i < 7; ++i) seq += replay.next().prompt;
  EXPECT_EQ(seq, "abcabca");
  DatasetCursor s1(ds.value(), DatasetOrder::kSample, 5), s2(ds.value(), DatasetOrder::kSample, 5);
  std::map<std::string, int> counts;
  for (int i = 0; i < 3000; ++i) {
    const auto& e = s1.next();
    EXPECT_EQ(e.prompt, s2.next().prompt);
    ++counts[e.prompt];
  }
  for (const auto& [k, n] : counts) EXPECT_NEAR(n, 1000, 120) << k;
}

}  // namespace
}  // namespace llmcap::agent

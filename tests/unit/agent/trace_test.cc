#include "agent/trace.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace llmcap::agent {
namespace {

Trace parse_ok(std::string_view text, TraceFormat f) {
  auto t = Trace::parse(text, f);
  EXPECT_TRUE(t) << t.error();
  return t ? std::move(t).value()
           : Trace::parse(
                 "{\"timestamp\":0,\"input_length\":1,"
                 "\"output_length\":1}",
                 TraceFormat::kMooncake)
                 .value();
}

std::string parse_error(std::string_view text, TraceFormat f) {
  auto t = Trace::parse(text, f);
  EXPECT_FALSE(t);
  return t ? "" : t.error();
}

TEST(Trace, FormatNames) {
  EXPECT_EQ(parse_trace_format("mooncake"), TraceFormat::kMooncake);
  EXPECT_EQ(parse_trace_format("burstgpt"), TraceFormat::kBurstGpt);
  EXPECT_FALSE(parse_trace_format("sharegpt"));
  EXPECT_EQ(to_string(TraceFormat::kBurstGpt), "burstgpt");
}

TEST(Trace, MooncakeLinesInTimeOrderRelativeToTheFirst) {
  // Mooncake's format: ms timestamps, token lengths, 512-token block ids.
  const auto t = parse_ok(
      "{\"timestamp\": 1000, \"input_length\": 1100, \"output_length\": 20, \"hash_ids\": [0, 1, "
      "2]}\n"
      "\n"
      "{\"timestamp\": 1500.5, \"input_length\": 600, \"output_length\": 8, \"hash_ids\": [0, "
      "7]}\r\n"
      "{\"timestamp\": 1200, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [], "
      "\"extra\": \"ignored\"}\n"
      "{\"timestamp\": 1200, \"input_length\": 11, \"output_length\": 2}",
      TraceFormat::kMooncake);
  ASSERT_EQ(t.records().size(), 4u);
  EXPECT_EQ(t.records()[0].t_ns, 0);
  EXPECT_EQ(t.records()[0].input_tokens, 1100);
  EXPECT_EQ(t.records()[0].output_tokens, 20);
  EXPECT_EQ(t.records()[0].hash_ids, (std::vector<std::uint64_t>{0, 1, 2}));
  EXPECT_EQ(t.records()[0].line, 1u);
  // Equal times keep their file order (stable).
  EXPECT_EQ(t.records()[1].t_ns, 200'000'000);
  EXPECT_EQ(t.records()[1].line, 4u);
  EXPECT_EQ(t.records()[2].line, 5u);
  EXPECT_TRUE(t.records()[2].hash_ids.empty());
  EXPECT_EQ(t.records()[3].t_ns, 500'500'000);
  EXPECT_EQ(t.span_ns(), 500'500'000);
  EXPECT_EQ(t.skipped(), 0u);
}

TEST(Trace, MooncakeBadLinesNameTheLineAndField) {
  const auto f = TraceFormat::kMooncake;
  const std::string good = "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 5}\n";
  EXPECT_EQ(parse_error(good + "{not json", f), "trace line 2: invalid JSON");
  EXPECT_EQ(parse_error(good + "[1]", f), "trace line 2: must be a JSON object");
  EXPECT_EQ(parse_error(good + "{\"input_length\": 5, \"output_length\": 5}", f),
            "trace line 2: \"timestamp\" is required (ms)");
  EXPECT_NE(parse_error(good + "{\"timestamp\": -1, \"input_length\": 5, \"output_length\": 5}", f)
                .find("trace line 2: \"timestamp\" must be"),
            std::string::npos);
  EXPECT_EQ(parse_error(good + "{\"timestamp\": 1, \"output_length\": 5}", f),
            "trace line 2: \"input_length\" is required");
  EXPECT_EQ(parse_error(good + "{\"timestamp\": 1, \"input_length\": 0, \"output_length\": 5}", f),
            "trace line 2: \"input_length\" must be an integer between 1 and 1048576");
  EXPECT_EQ(
      parse_error(good + "{\"timestamp\": 1, \"input_length\": 5, \"output_length\": 2.5}", f),
      "trace line 2: \"output_length\" must be an integer between 1 and 1048576");
  EXPECT_EQ(parse_error(good + "{\"timestamp\": 1, \"input_length\": 5, \"output_length\": 5, "
                               "\"hash_ids\": 3}",
                        f),
            "trace line 2: \"hash_ids\" must be an array of block ids");
  EXPECT_EQ(parse_error(good + "{\"timestamp\": 1, \"input_length\": 5, \"output_length\": 5, "
                               "\"hash_ids\": [1, -2]}",
                        f),
            "trace line 2: \"hash_ids\"[1] must be a non-negative integer");
  EXPECT_EQ(parse_error("\n \n", f), "trace has no requests");
}

TEST(Trace, BurstGptReadsTheHeaderAndSkipsFailedRows) {
  // BurstGPT's columns; Response tokens 0 marks a failed request (skipped, counted).
  const auto t = parse_ok(
      "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
      "5,ChatGPT,472,18,490,Conversation log\n"
      "45,ChatGPT,1087,0,1087,Conversation log\n"
      "46.5,GPT-4,417,276,693,API log\r\n",
      TraceFormat::kBurstGpt);
  ASSERT_EQ(t.records().size(), 2u);
  EXPECT_EQ(t.skipped(), 1u);
  EXPECT_EQ(t.records()[0].t_ns, 0);
  EXPECT_EQ(t.records()[0].input_tokens, 472);
  EXPECT_EQ(t.records()[0].output_tokens, 18);
  EXPECT_EQ(t.records()[1].t_ns, 41'500'000'000);
  EXPECT_EQ(t.records()[1].line, 4u);
  EXPECT_TRUE(t.records()[1].hash_ids.empty());
  // Columns in another order are found by name.
  const auto u =
      parse_ok("Response tokens,Timestamp,Request tokens\n3,0,9\n", TraceFormat::kBurstGpt);
  ASSERT_EQ(u.records().size(), 1u);
  EXPECT_EQ(u.records()[0].input_tokens, 9);
  EXPECT_EQ(u.records()[0].output_tokens, 3);
}

TEST(Trace, BurstGptBadRowsNameTheLineAndField) {
  const auto f = TraceFormat::kBurstGpt;
  const std::string header = "Timestamp,Model,Request tokens,Response tokens\n";
  EXPECT_EQ(parse_error("Time,Request tokens\n1,2\n", f),
            "trace line 1: the header row must name the columns \"Timestamp\", \"Response "
            "tokens\" (BurstGPT's CSV header)");
  EXPECT_EQ(parse_error(header + "1,m,2,3\n2,m,3\n", f),
            "trace line 3: has 3 fields, the header 4");
  EXPECT_EQ(parse_error(header + "x,m,2,3\n", f),
            "trace line 2: \"Timestamp\" must be a number of seconds between 0 and 1e9");
  EXPECT_EQ(parse_error(header + "1,m,2.5,3\n", f),
            "trace line 2: \"Request tokens\" must be an integer between 0 and 1048576");
  EXPECT_EQ(parse_error(header + "1,m,2,-3\n", f),
            "trace line 2: \"Response tokens\" must be an integer between 0 and 1048576");
  EXPECT_EQ(parse_error(header + "1,m,2,0\n", f),
            "trace has no usable requests (1 failed row(s) skipped)");
  EXPECT_EQ(parse_error("", f), "trace has no header row");
}

TEST(Trace, WindowCutsByTimeAndCountAndRebasesTimes) {
  std::string text;
  for (int i = 0; i < 10; ++i)
    text += "{\"timestamp\": " + std::to_string(i * 1000) +
            ", \"input_length\": 5, \"output_length\": 5}\n";
  const auto t = parse_ok(text, TraceFormat::kMooncake);
  ASSERT_EQ(t.records().size(), 10u);
  EXPECT_EQ(t.window({}).records().size(), 10u);
  const auto w = t.window({2.5, 4, 0});  // trace seconds [2.5, 6.5): records at 3, 4, 5, 6 s
  ASSERT_EQ(w.records().size(), 4u);
  EXPECT_EQ(w.records()[0].t_ns, 500'000'000);
  EXPECT_EQ(w.records()[3].t_ns, 3'500'000'000);
  EXPECT_EQ(t.window({2.5, 4, 2}).records().size(), 2u);
  EXPECT_TRUE(t.window({100, 0, 0}).records().empty());
  EXPECT_EQ(replay_time_ns(w.records()[3], 2.0), 1'750'000'000);
}

TEST(Trace, LoadNamesThePathAndLine) {
  const auto dir = std::filesystem::temp_directory_path() / "llmcap_trace_test";
  std::filesystem::create_directories(dir);
  const auto file = (dir / "t.jsonl").string();
  {
    std::ofstream out(file);
    out << "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 5}\n{\"timestamp\": 1}\n";
  }
  auto t = Trace::load(file, TraceFormat::kMooncake);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error(), file + ": trace line 2: \"input_length\" is required");
  auto missing = Trace::load((dir / "none.jsonl").string(), TraceFormat::kMooncake);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().find("cannot open trace file"), std::string::npos);
  DatasetLimits small;
  small.max_bytes = 16;
  auto big = Trace::load(file, TraceFormat::kMooncake, small);
  ASSERT_FALSE(big);
  EXPECT_NE(big.error().find("over the limit of 16"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace llmcap::agent

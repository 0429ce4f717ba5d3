// The console's step line, durations and job ETA (server/cli/console_sink.h).
#include "server/cli/console_sink.h"

#include <gtest/gtest.h>

namespace llmcap::server {
namespace {

using nlohmann::json;

TEST(ConsoleSink, DurationText) {
  EXPECT_EQ(duration_text(0), "0s");
  EXPECT_EQ(duration_text(52.4), "52s");
  EXPECT_EQ(duration_text(245), "4m05s");
  EXPECT_EQ(duration_text(3720), "1h02m");
  EXPECT_EQ(duration_text(-3), "0s");
}

TEST(ConsoleSink, EtaIsTheRestOfThisStepPlusTheMeanStepForTheOthers) {
  // Before any step ends: each step counts at the running one's planned length.
  EXPECT_DOUBLE_EQ(eta_seconds(10, 0, 4, 10, 55), 45 + 3 * 55);
  // Two steps took 100 s in all (50 s each); 20 s into the third of 5 planned at 55 s.
  EXPECT_DOUBLE_EQ(eta_seconds(120, 2, 5, 20, 55), 35 + 2 * 50);
  // An overrunning step (drain) adds nothing negative; the last step leaves nothing after it.
  EXPECT_DOUBLE_EQ(eta_seconds(300, 4, 5, 70, 55), 0);
}

TEST(ConsoleSink, StepLineCarriesTheVerdictTheFiguresAndEachMissedCheck) {
  const json step = {
      {"partial", false},
      {"stats",
       {{"output_tokens_per_s", 497.1},
        {"requests_per_s", 1.75},
        {"goodput_rps", 1.5},
        {"error_rate", 0.02},
        {"ttft_ms", {{"p50", 564.2}, {"p95", 829.0}}},
        {"tpot_ms", {{"p95", 30.5}}},
        {"e2e_ms", {{"p95", 8014.0}}}}},
      {"verdict",
       {{"outcome", "fail"},
        {"reasons", json::array({{{"status", "held"}, {"text", "ttft fine"}},
                                 {{"status", "missed"}, {"text", "error rate 0.02 > 0.01"}}})}}}};
  const std::string line = step_result_text(step);
  EXPECT_EQ(line,
            " fail  497.1 out tok/s, 1.75 req/s, goodput 1.50 req/s, TTFT p50/p95 564/829 ms, "
            "TPOT p95 30.5 ms, E2E p95 8014 ms, err 2.00%\n"
            "        error rate 0.02 > 0.01\n");
}

}  // namespace
}  // namespace llmcap::server

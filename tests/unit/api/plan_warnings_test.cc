// Tests of what parse_plan() (api/plan_reader.h) tells a user who got a plan wrong
// (docs/plans.md, "Validation and warnings"): unknown simulator profiles refused with the list
// and the nearest name, "did you mean" for unknown keys, and warnings that name the field for
// values that are legal but almost certainly a unit slip, or windows too short for
// sla.min_requests.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "api/plan_reader.h"
#include "tests/unit/api/minimal_plan.h"

namespace llmcap::api {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

using testing_plans::minimal;

// The names as server/ passes them from the simulator's catalogue (a subset is enough here).
PlanLimits with_profiles() {
  PlanLimits limits;
  limits.sim_hardware = {"a100-80g-pcie", "h100-pcie", "h100-sxm", "rtx4090-24g", "rtx4090-48g"};
  limits.sim_models = {"llama-3.1-70b", "llama-3.1-8b", "qwen2.5-7b"};
  return limits;
}

PlanParse warnings_parse(const json& plan, const PlanLimits& limits = {}) {
  return parse_plan(plan.dump(), limits);
}

std::string warnings_describe(const PlanParse& p) {
  std::string s;
  for (const auto& e : p.errors) s += "  error " + e.path + ": " + e.message + "\n";
  for (const auto& w : p.warnings) s += "  warning " + w + "\n";
  return s;
}

// The message of the one error at `path` ("" when there is none).
std::string error_at(const PlanParse& p, const std::string& path) {
  const auto it = std::find_if(p.errors.begin(), p.errors.end(),
                               [&](const FieldError& e) { return e.path == path; });
  return it == p.errors.end() ? "" : it->message;
}

// The warnings that start with `path` and a colon (a warning names its field first).
std::vector<std::string> warnings_at(const PlanParse& p, const std::string& path) {
  std::vector<std::string> out;
  for (const auto& w : p.warnings)
    if (w.rfind(path + ": ", 0) == 0) out.push_back(w);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Simulator profiles

TEST(PlanWarnings, MisspeltGpuProfileIsRefusedWithTheNearestAndTheList) {
  auto j = minimal();
  j["targets"][0]["base_url"] = "sim://rtx4090-48gb/llama-3.1-8b";
  const auto p = warnings_parse(j, with_profiles());
  EXPECT_FALSE(p.plan);
  const auto message = error_at(p, "/targets/0/base_url");
  EXPECT_THAT(message, HasSubstr("unknown simulator GPU profile 'rtx4090-48gb'"));
  EXPECT_THAT(message, HasSubstr("did you mean rtx4090-48g?"));
  EXPECT_THAT(message, HasSubstr("a100-80g-pcie, h100-pcie, h100-sxm, rtx4090-24g, rtx4090-48g"));
  EXPECT_EQ(p.errors.size(), 1u) << warnings_describe(p);
}

TEST(PlanWarnings, UnknownModelProfileIsRefused) {
  auto j = minimal();
  j["targets"][0]["base_url"] = "sim://rtx4090-48g/llama-3.1-7b";
  auto p = warnings_parse(j, with_profiles());
  EXPECT_THAT(error_at(p, "/targets/0/base_url"),
              HasSubstr("unknown simulator model profile 'llama-3.1-7b' (did you mean "
                        "llama-3.1-8b?); known model profiles: llama-3.1-70b, llama-3.1-8b, "
                        "qwen2.5-7b"));
  // Nothing near: the list without a guess.
  j["targets"][0]["base_url"] = "sim://rtx4090-48g/gpt-j";
  p = warnings_parse(j, with_profiles());
  const auto message = error_at(p, "/targets/0/base_url");
  EXPECT_THAT(message, HasSubstr("unknown simulator model profile 'gpt-j'"));
  EXPECT_THAT(message, ::testing::Not(HasSubstr("did you mean")));
}

TEST(PlanWarnings, BothNamesWrongAreTwoErrorsAtTheUrl) {
  auto j = minimal();
  j["targets"].push_back({{"name", "b"}, {"base_url", "sim://h100/llama-3.1-8b-instruct"}});
  const auto p = warnings_parse(j, with_profiles());
  int at_b = 0;
  for (const auto& e : p.errors) at_b += e.path == "/targets/1/base_url";
  EXPECT_EQ(at_b, 2) << warnings_describe(p);
  // "h100" is the start of two profiles' names: one of them is suggested.
  EXPECT_THAT(error_at(p, "/targets/1/base_url"), HasSubstr("did you mean h100-"));
}

TEST(PlanWarnings, UpperCaseUrlSuggestsTheKnownNames) {
  auto j = minimal();
  j["targets"][0]["base_url"] = "sim://RTX4090-48G/Llama-3.1-8B";
  const auto p = warnings_parse(j, with_profiles());
  EXPECT_THAT(error_at(p, "/targets/0/base_url"),
              HasSubstr("did you mean sim://rtx4090-48g/llama-3.1-8b?"));
}

TEST(PlanWarnings, ProfilesAreNotCheckedWithoutTheList) {
  // PlanLimits::none() re-reads stored plans, and callers without a catalogue check the form.
  auto j = minimal();
  j["targets"][0]["base_url"] = "sim://rtx4090-48gb/llama-3.1-8b";
  EXPECT_TRUE(warnings_parse(j).plan) << warnings_describe(warnings_parse(j));
  EXPECT_TRUE(warnings_parse(j, PlanLimits::none()).plan);
  j["targets"][0]["base_url"] = "sim://rtx4090-48g/llama-3.1-8b";
  EXPECT_TRUE(warnings_parse(j, with_profiles()).plan);
}

// ---------------------------------------------------------------------------------------------
// Did you mean (unknown keys)

TEST(PlanWarnings, UnknownKeySuggestsAnAlias) {
  auto j = minimal();
  j["sla"] = {{"ttft", {{"p95", 1000}}}};
  j["phases"][0].erase("levels");
  j["phases"][0]["concurrency"] = {1, 2};
  j["phases"].push_back({{"kind", "rate_sweep"}, {"rps", {1, 2}}});
  j["phases"].push_back({{"kind", "soak"}, {"rate", 1}, {"duration_s", 600}});
  const auto p = warnings_parse(j);
  EXPECT_EQ(error_at(p, "/sla/ttft"), "unknown key (did you mean ttft_ms?)")
      << warnings_describe(p);
  EXPECT_EQ(error_at(p, "/phases/0/concurrency"), "unknown key (did you mean levels?)");
  EXPECT_EQ(error_at(p, "/phases/1/rps"), "unknown key (did you mean rates_rps?)");
  // The same alias means the key of the level it was written at.
  EXPECT_EQ(error_at(p, "/phases/2/rate"), "unknown key (did you mean rate_rps?)");
}

TEST(PlanWarnings, UnknownKeySuggestsByEditDistanceAndUnit) {
  auto j = minimal();
  j["phases"][0]["duraton_s"] = 60;   // a letter left out
  j["phases"][0]["warmup"] = 10;      // the unit left off
  j["targets"][0]["Base_URL"] = "x";  // another case
  j["sla"] = {{"max_eror_rate", 0.01}, {"ttft_ms", {{"p95", 1000}}}};
  j["workload"] = {{"input_tokns", 100}};
  const auto p = warnings_parse(j);
  EXPECT_EQ(error_at(p, "/phases/0/duraton_s"), "unknown key (did you mean duration_s?)")
      << warnings_describe(p);
  EXPECT_EQ(error_at(p, "/phases/0/warmup"), "unknown key (did you mean warmup_s?)");
  EXPECT_EQ(error_at(p, "/sla/max_eror_rate"), "unknown key (did you mean max_error_rate?)");
  EXPECT_EQ(error_at(p, "/workload/input_tokns"), "unknown key (did you mean input_tokens?)");
  // base_url is given already: not suggested again; nothing else is near.
  EXPECT_EQ(error_at(p, "/targets/0/Base_URL"), "unknown key");
}

TEST(PlanWarnings, NestedUnknownKeysSuggestTheirLevelsKeys) {
  // The example of docs/plans.md, "How plans are checked".
  auto j = minimal();
  j["targets"][0]["hardware"] = {{"gpus", "H100"}};
  j["demand"] = {{"rpm", 90}};
  const auto p = warnings_parse(j);
  EXPECT_EQ(error_at(p, "/targets/0/hardware/gpus"), "unknown key (did you mean gpu?)")
      << warnings_describe(p);
  EXPECT_EQ(error_at(p, "/demand/rpm"), "unknown key (did you mean requests_per_minute?)");
}

TEST(PlanWarnings, NearestName) {
  const std::vector<std::string> gpus = {"a100-80g-pcie", "h100-pcie", "rtx4090-24g",
                                         "rtx4090-48g"};
  EXPECT_EQ(nearest_name("rtx4090-48gb", gpus), "rtx4090-48g");
  EXPECT_EQ(nearest_name("RTX4090_48G", gpus), "rtx4090-48g");          // case, '_' for '-'
  EXPECT_EQ(nearest_name("h100-pice", gpus), "h100-pcie");              // swapped neighbours
  EXPECT_EQ(nearest_name("a100", gpus), "a100-80g-pcie");               // the start of a name
  EXPECT_EQ(nearest_name("a100-80g-pcie-box", gpus), "a100-80g-pcie");  // a name and more
  EXPECT_EQ(nearest_name("mi300x", gpus), std::nullopt);
  // Aliases are for plan keys only.
  EXPECT_EQ(nearest_name("ttft", {"ttft_ms"}), "ttft_ms");  // the start, not the alias
  EXPECT_EQ(nearest_name("concurrency", {"levels"}), std::nullopt);
}

TEST(PlanWarnings, NothingNearSuggestsNothing) {
  auto j = minimal();
  j["zzz"] = 1;
  j["phases"][0]["bogus"] = 1;
  const auto p = warnings_parse(j);
  EXPECT_EQ(error_at(p, "/zzz"), "unknown key") << warnings_describe(p);
  EXPECT_EQ(error_at(p, "/phases/0/bogus"), "unknown key");
}

TEST(PlanWarnings, AKeyThatDoesNotApplyIsNotSuggested) {
  // max_duration_s applies only with requests: a time-mode phase does not suggest it.
  auto j = minimal();
  j["phases"][0]["max_duraton_s"] = 600;
  const auto p = warnings_parse(j);
  EXPECT_THAT(error_at(p, "/phases/0/max_duraton_s"), ::testing::StartsWith("unknown key"));
  EXPECT_THAT(error_at(p, "/phases/0/max_duraton_s"), ::testing::Not(HasSubstr("max_duration_s")));
}

// ---------------------------------------------------------------------------------------------
// Unit slips

TEST(PlanWarnings, LatencyBoundsBelowAnyGpuWarnWithTheField) {
  auto j = minimal();
  j["sla"] = {{"ttft_ms", {{"p95", 2}, {"p99", 2500}}},
              {"tpot_ms", {{"p95", 0.05}}},
              {"itl_ms", {{"p99", 1}}},
              {"e2e_ms", {{"p99_9", 30}}}};
  const auto p = warnings_parse(j);
  ASSERT_TRUE(p.plan) << warnings_describe(p);
  const auto ttft = warnings_at(p, "/sla/ttft_ms/p95");
  ASSERT_EQ(ttft.size(), 1u) << warnings_describe(p);
  EXPECT_THAT(ttft[0], HasSubstr("2 ms is below what any GPU delivers"));
  EXPECT_THAT(ttft[0], HasSubstr("did you mean 2000 (2 s)?"));
  EXPECT_TRUE(warnings_at(p, "/sla/ttft_ms/p99").empty());
  ASSERT_EQ(warnings_at(p, "/sla/tpot_ms/p95").size(), 1u);
  EXPECT_THAT(warnings_at(p, "/sla/tpot_ms/p95")[0], HasSubstr("did you mean 50 (0.05 s)?"));
  EXPECT_EQ(warnings_at(p, "/sla/itl_ms/p99").size(), 1u);
  // The percentile key as the user wrote it.
  EXPECT_EQ(warnings_at(p, "/sla/e2e_ms/p99_9").size(), 1u);
}

TEST(PlanWarnings, PlausibleBoundsDoNotWarn) {
  auto j = minimal();
  j["sla"] = {{"ttft_ms", {{"p95", 20}}}, {"ttft_service_ms", {{"p50", 150}}},
              {"tpot_ms", {{"p95", 2}}},  {"itl_ms", {{"p99", 40}}},
              {"e2e_ms", {{"p99", 50}}},  {"max_error_rate", 0.49}};
  const auto p = warnings_parse(j);
  ASSERT_TRUE(p.plan) << warnings_describe(p);
  EXPECT_TRUE(p.warnings.empty()) << warnings_describe(p);
}

TEST(PlanWarnings, ErrorRateOfAHundredPercentWarns) {
  auto j = minimal();
  j["sla"] = {{"ttft_ms", {{"p95", 1000}}}, {"max_error_rate", 1}};
  auto p = warnings_parse(j);
  ASSERT_TRUE(p.plan) << warnings_describe(p);
  const auto w = warnings_at(p, "/sla/max_error_rate");
  ASSERT_EQ(w.size(), 1u) << warnings_describe(p);
  EXPECT_THAT(w[0], HasSubstr("lets 100 % of requests fail"));
  EXPECT_THAT(w[0], HasSubstr("did you mean 0.01?"));
  j["sla"]["max_error_rate"] = 0.5;
  p = warnings_parse(j);
  ASSERT_EQ(warnings_at(p, "/sla/max_error_rate").size(), 1u) << warnings_describe(p);
  EXPECT_THAT(warnings_at(p, "/sla/max_error_rate")[0], HasSubstr("lets 50 % of requests fail"));
}

TEST(PlanWarnings, MixClassSlaIsCheckedAtItsPath) {
  auto j = minimal();
  j["workload"] = json::parse(R"({"mix": [
      {"name": "chat", "weight": 0.5, "input_tokens": 100, "output_tokens": 100,
       "sla": {"ttft_ms": {"p95": 3}, "max_error_rate": 1}},
      {"name": "rag", "weight": 0.5, "input_tokens": 2000, "output_tokens": 100}]})");
  const auto p = warnings_parse(j);
  ASSERT_TRUE(p.plan) << warnings_describe(p);
  EXPECT_EQ(warnings_at(p, "/workload/mix/0/sla/ttft_ms/p95").size(), 1u) << warnings_describe(p);
  EXPECT_EQ(warnings_at(p, "/workload/mix/0/sla/max_error_rate").size(), 1u);
}

TEST(PlanWarnings, DemandAboveAThousandRequestsPerSecondWarns) {
  auto j = minimal();
  j["demand"] = {{"requests_per_minute", 120000}};
  auto p = warnings_parse(j);
  ASSERT_TRUE(p.plan) << warnings_describe(p);
  const auto w = warnings_at(p, "/demand/requests_per_minute");
  ASSERT_EQ(w.size(), 1u) << warnings_describe(p);
  EXPECT_THAT(w[0], HasSubstr("is 2000 requests/s"));
  // 50 requests per minute is a plausible demand: no warning.
  j["demand"]["requests_per_minute"] = 50;
  p = warnings_parse(j);
  EXPECT_TRUE(warnings_at(p, "/demand/requests_per_minute").empty()) << warnings_describe(p);
}

TEST(PlanWarnings, DemandNeedingThousandsOfInstancesWarns) {
  // 6000 requests/min = 100 requests/s, × 1.3 headroom, at most 0.1 rps per instance: 1300.
  auto j = minimal();
  j["demand"] = {{"requests_per_minute", 6000}};
  j["phases"] =
      json::array({{{"kind", "rate_sweep"}, {"rates_rps", {0.05, 0.1}}, {"duration_s", 2000}}});
  auto p = warnings_parse(j);
  ASSERT_TRUE(p.plan) << warnings_describe(p);
  const auto w = warnings_at(p, "/demand/requests_per_minute");
  ASSERT_EQ(w.size(), 1u) << warnings_describe(p);
  EXPECT_THAT(w[0], HasSubstr("needs at least 1300 instances even if each carried 0.1 rps"));
  // A capacity search without high_rps may qualify up to its ceiling: nothing to tell.
  j["phases"].push_back({{"kind", "capacity_search"}, {"start_from", 2}, {"low_rps", 1}});
  j["sla"] = {{"ttft_ms", {{"p95", 1000}}}};
  p = warnings_parse(j);
  ASSERT_TRUE(p.plan) << warnings_describe(p);
  EXPECT_TRUE(warnings_at(p, "/demand/requests_per_minute").empty()) << warnings_describe(p);
  // A closed-loop sweep alone: its rates are known only once it runs.
  j["phases"] = json::array({{{"kind", "concurrency_sweep"}, {"levels", {1}}}});
  p = warnings_parse(j);
  EXPECT_TRUE(warnings_at(p, "/demand/requests_per_minute").empty()) << warnings_describe(p);
}

// ---------------------------------------------------------------------------------------------
// Windows and sla.min_requests

TEST(PlanWarnings, RateSweepWindowsShortOfMinRequests) {
  auto j = minimal();
  j["sla"] = {{"ttft_ms", {{"p95", 1000}}}, {"min_requests", 100}};
  // 0.02 rps × 3600 s = 72 < 100: inconclusive even lengthened. 1 rps × 60 s = 60 < 100:
  // lengthened. 2 rps × 60 s = 120: enough.
  j["phases"] =
      json::array({{{"kind", "rate_sweep"}, {"rates_rps", {0.02, 1, 2}}, {"duration_s", 60}}});
  const auto p = warnings_parse(j);
  ASSERT_TRUE(p.plan) << warnings_describe(p);
  const auto low = warnings_at(p, "/phases/0/rates_rps/0");
  ASSERT_EQ(low.size(), 1u) << warnings_describe(p);
  EXPECT_THAT(low[0], HasSubstr("the window at 0.02 rps holds about 72 requests < "
                                "sla.min_requests 100 even at max_duration_s 3600 s; steps at "
                                "that rate read inconclusive"));
  const auto mid = warnings_at(p, "/phases/0/rates_rps/1");
  ASSERT_EQ(mid.size(), 1u) << warnings_describe(p);
  // (100 + 3√100) / 1 rps = 130 s: the executor's margin over min_requests.
  EXPECT_THAT(mid[0], HasSubstr("steps at 1 rps will be lengthened to about 130 s to hold "
                                "sla.min_requests 100"));
  EXPECT_TRUE(warnings_at(p, "/phases/0/rates_rps/2").empty());
}

TEST(PlanWarnings, ManyShortRatesAreSummedUp) {
  auto j = minimal();
  json rates = json::array();
  for (int i = 1; i <= 8; ++i) rates.push_back(0.1 * i);
  j["phases"] = json::array({{{"kind", "rate_sweep"}, {"rates_rps", rates}}});
  const auto p = warnings_parse(j);
  ASSERT_TRUE(p.plan) << warnings_describe(p);
  EXPECT_EQ(p.warnings.size(), 6u) << warnings_describe(p);
  EXPECT_EQ(warnings_at(p, "/phases/0/rates_rps").size(), 1u);
  EXPECT_THAT(warnings_at(p, "/phases/0/rates_rps")[0], HasSubstr("and 3 more rates"));
}

TEST(PlanWarnings, DefaultMinRequestsIsTheSlaDefault) {
  // No sla.min_requests: 100. 3 rps × 30 s = 90 < 100.
  auto j = minimal();
  j["phases"] = json::array({{{"kind", "rate_sweep"}, {"rates_rps", {3}}}});
  const auto p = warnings_parse(j);
  ASSERT_EQ(warnings_at(p, "/phases/0/rates_rps/0").size(), 1u) << warnings_describe(p);
  EXPECT_THAT(warnings_at(p, "/phases/0/rates_rps/0")[0], HasSubstr("sla.min_requests 100"));
}

TEST(PlanWarnings, CapacitySearchLowRpsAndFloor) {
  auto j = minimal();
  j["sla"] = {{"ttft_ms", {{"p95", 2000}}}, {"min_requests", 100}};
  j["phases"] = json::array(
      {{{"kind", "capacity_search"}, {"low_rps", 0.5}, {"high_rps", 8}, {"duration_s", 60}}});
  auto p = warnings_parse(j);
  ASSERT_TRUE(p.plan) << warnings_describe(p);
  const auto low = warnings_at(p, "/phases/0/low_rps");
  ASSERT_EQ(low.size(), 1u) << warnings_describe(p);
  EXPECT_THAT(low[0], HasSubstr("steps at 0.5 rps will be lengthened to about 260 s"));
  // Without low_rps the search's floor (0.1 rps) is reached only when every rate above fails:
  // no warning while max_duration_s can hold min_requests there (0.1 × 3600 = 360 ≥ 100) ...
  j["phases"][0].erase("low_rps");
  j["phases"][0]["start_from"] = 2;
  p = warnings_parse(j);
  ASSERT_TRUE(p.plan) << warnings_describe(p);
  EXPECT_TRUE(p.warnings.empty()) << warnings_describe(p);
  // ... and one when it cannot (0.1 × 3600 = 360 < 500).
  j["sla"]["min_requests"] = 500;
  p = warnings_parse(j);
  const auto floor = warnings_at(p, "/phases/0");
  ASSERT_EQ(floor.size(), 1u) << warnings_describe(p);
  EXPECT_THAT(floor[0], HasSubstr("the window at 0.1 rps holds about 360 requests < "
                                  "sla.min_requests 500"));
  EXPECT_THAT(floor[0], HasSubstr("the search's lowest rate without low_rps"));
}

TEST(PlanWarnings, AtDemandAndSoakWindowsAreNotLengthened) {
  auto j = minimal();
  j["sla"] = {{"ttft_ms", {{"p95", 2000}}}};
  j["demand"] = {{"requests_per_minute", 60}};  // 1 rps
  j["phases"] = json::array({{{"kind", "at_demand"}, {"duration_s", 60}},
                             {{"kind", "at_demand"}, {"rate_rps", 5}, {"duration_s", 60}},
                             {{"kind", "soak"}, {"rate_rps", 0.5}, {"duration_s", 150}}});
  const auto p = warnings_parse(j);
  ASSERT_TRUE(p.plan) << warnings_describe(p);
  // The demand's rate: the warning is at the phase.
  ASSERT_EQ(warnings_at(p, "/phases/0").size(), 1u) << warnings_describe(p);
  EXPECT_THAT(warnings_at(p, "/phases/0")[0],
              HasSubstr("the window at 1 rps holds about 60 requests < sla.min_requests 100 "
                        "(duration_s 60 s); the step reads inconclusive (insufficient-samples): "
                        "raise duration_s to at least 100 s"));
  EXPECT_TRUE(warnings_at(p, "/phases/1/rate_rps").empty());  // 5 × 60 = 300
  ASSERT_EQ(warnings_at(p, "/phases/2/rate_rps").size(), 1u) << warnings_describe(p);
  EXPECT_THAT(warnings_at(p, "/phases/2/rate_rps")[0],
              HasSubstr("holds about 75 requests < sla.min_requests 100"));
  EXPECT_THAT(warnings_at(p, "/phases/2/rate_rps")[0], HasSubstr("at least 200 s"));
}

TEST(PlanWarnings, RequestCountStepsAreNotLengthened) {
  // A request-count window holds its count; only a cap at max_duration_s can thin it.
  auto j = minimal();
  j["sla"] = {{"ttft_ms", {{"p95", 2000}}}};
  j["phases"] = json::array({{{"kind", "rate_sweep"}, {"rates_rps", {0.5}}, {"requests", 150}}});
  auto p = warnings_parse(j);
  ASSERT_TRUE(p.plan) << warnings_describe(p);
  EXPECT_TRUE(p.warnings.empty()) << warnings_describe(p);
  j["phases"] = json::array({{{"kind", "capacity_search"},
                              {"start_from", 1},
                              {"low_rps", 0.02},
                              {"requests", 150},
                              {"max_duration_s", 1000}}});
  p = warnings_parse(j);
  ASSERT_TRUE(p.plan) << warnings_describe(p);
  ASSERT_EQ(warnings_at(p, "/phases/0/low_rps").size(), 1u) << warnings_describe(p);
  EXPECT_THAT(warnings_at(p, "/phases/0/low_rps")[0],
              HasSubstr("holds about 20 requests < sla.min_requests 100 even at max_duration_s "
                        "1000 s"));
}

TEST(PlanWarnings, TheDemoPlanHasNoWarnings) {
  // Long enough windows, plausible bounds and demand: a good plan is not nagged.
  auto j = minimal();
  j["sla"] = {{"ttft_ms", {{"p95", 1000}}}, {"tpot_ms", {{"p95", 35}}}, {"min_requests", 30}};
  j["demand"] = {{"requests_per_minute", 90}, {"mean_output_tokens", 240}};
  j["phases"] =
      json::array({{{"kind", "concurrency_sweep"}, {"levels", {1, 8, 32}}, {"duration_s", 40}},
                   {{"kind", "capacity_search"}, {"duration_s", 40}, {"max_steps", 14}}});
  const auto p = warnings_parse(j);
  ASSERT_TRUE(p.plan) << warnings_describe(p);
  EXPECT_TRUE(p.warnings.empty()) << warnings_describe(p);
}

}  // namespace
}  // namespace llmcap::api

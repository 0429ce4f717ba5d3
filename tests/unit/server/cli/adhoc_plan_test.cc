// The ad-hoc flags of `llmcapd run` (server/cli/adhoc_plan.h): which plan each builds, that the
// plan reader accepts what they build, and that every mistake names its flag.
#include "server/cli/adhoc_plan.h"

#include <gtest/gtest.h>

#include "api/plan_reader.h"

namespace llmcap::server {
namespace {

using nlohmann::ordered_json;

AdhocFlags issue_example() {
  AdhocFlags f;
  f.base_url = "http://127.0.0.1:8000";
  f.model = "m";
  f.concurrency = "1,8";
  f.num_prompts = "200";
  f.sla = "ttft_p95=1000ms";
  return f;
}

// The errors joined, for messages and substring checks.
std::string joined(const std::vector<std::string>& errors) {
  std::string out;
  for (const auto& e : errors) out += e + "\n";
  return out;
}

api::PlanParse read(const ordered_json& plan) { return api::parse_plan(plan.dump()); }

TEST(AdhocPlan, TheIssueExampleBuildsASweepOfRequestCountSteps) {
  const AdhocPlan built = build_adhoc_plan(issue_example());
  ASSERT_TRUE(built.errors.empty()) << joined(built.errors);
  const ordered_json& p = built.plan;
  EXPECT_EQ(p["version"], 1);
  ASSERT_EQ(p["targets"].size(), 1u);
  EXPECT_EQ(p["targets"][0]["base_url"], "http://127.0.0.1:8000");
  EXPECT_EQ(p["targets"][0]["name"], "127.0.0.1-8000");
  EXPECT_EQ(p["targets"][0]["model"], "m");
  EXPECT_FALSE(p["targets"][0].contains("api"));  // the reader's default, not written
  EXPECT_EQ(p["sla"], ordered_json::parse(R"({"ttft_ms": {"p95": 1000}})"));
  EXPECT_EQ(
      p["phases"],
      ordered_json::parse(R"([{"kind": "concurrency_sweep", "levels": [1, 8], "requests": 200}])"));
  EXPECT_FALSE(p.contains("workload"));
  EXPECT_NE(p["description"].get<std::string>().find("--concurrency 1,8 --num-prompts 200"),
            std::string::npos);

  const api::PlanParse parse = read(p);
  ASSERT_TRUE(parse.errors.empty())
      << parse.errors.front().path << ": " << parse.errors.front().message;
  EXPECT_EQ(parse.plan->phases.at(0).requests, 200);
  EXPECT_EQ(parse.plan->phases.at(0).levels, (std::vector<int>{1, 8}));
}

TEST(AdhocPlan, EveryFlagWritesItsPlanKey) {
  AdhocFlags f;
  f.base_url = "https://llm.example.com/v1base";
  f.name = "h100";
  f.model = "meta-llama/Llama-3.1-8B-Instruct";
  f.api = "chat";
  f.input_tokens = "512";
  f.output_tokens = "128";
  f.concurrency = "1, 4,16";
  f.request_rate = "0.5,2";
  f.search = true;
  f.duration = "2m";
  f.warmup = "10s";
  f.sla =
      "ttft_p95=1s,tpot_p99.9=35ms,e2e_p99=5s,itl_p50=20,ttft_service_p90=0.5s,error_rate=1%,"
      "min_requests=50";
  f.price = "1.79";
  f.currency = "EUR";
  f.seed = "7";
  const AdhocPlan built = build_adhoc_plan(f);
  ASSERT_TRUE(built.errors.empty()) << joined(built.errors);
  const ordered_json& p = built.plan;
  EXPECT_EQ(p["seed"], 7);
  EXPECT_EQ(p["targets"][0], ordered_json::parse(R"({"name": "h100",
      "base_url": "https://llm.example.com/v1base", "api": "chat",
      "model": "meta-llama/Llama-3.1-8B-Instruct", "price_per_hour": 1.79, "currency": "EUR"})"));
  EXPECT_EQ(p["workload"], ordered_json::parse(R"({"input_tokens": 512, "output_tokens": 128})"));
  EXPECT_EQ(p["sla"], ordered_json::parse(R"({"ttft_ms": {"p95": 1000}, "tpot_ms": {"p99.9": 35},
      "e2e_ms": {"p99": 5000}, "itl_ms": {"p50": 20}, "ttft_service_ms": {"p90": 500},
      "max_error_rate": 0.01, "min_requests": 50})"));
  EXPECT_EQ(p["phases"], ordered_json::parse(R"([
      {"kind": "concurrency_sweep", "levels": [1, 4, 16], "duration_s": 120, "warmup_s": 10},
      {"kind": "rate_sweep", "rates_rps": [0.5, 2], "duration_s": 120, "warmup_s": 10},
      {"kind": "capacity_search", "start_from": "knee", "duration_s": 120, "warmup_s": 10}])"));
  const api::PlanParse parse = read(p);
  EXPECT_TRUE(parse.errors.empty())
      << parse.errors.front().path << ": " << parse.errors.front().message;
}

TEST(AdhocPlan, SearchWithoutASweepStartsAtOneRequestPerSecond) {
  AdhocFlags f;
  f.base_url = "sim://a100-80g-pcie/llama-3.1-8b";
  f.request_rate = "search";
  f.sla = "ttft_p95=1000ms";
  const AdhocPlan built = build_adhoc_plan(f);
  ASSERT_TRUE(built.errors.empty()) << joined(built.errors);
  EXPECT_EQ(built.plan["targets"][0]["name"], "a100-80g-pcie");
  EXPECT_EQ(built.plan["phases"],
            ordered_json::parse(R"([{"kind": "capacity_search", "start_from": 1}])"));
  const api::PlanParse parse = read(built.plan);
  EXPECT_TRUE(parse.errors.empty())
      << parse.errors.front().path << ": " << parse.errors.front().message;
}

TEST(AdhocPlan, DatasetReplacesSyntheticPrompts) {
  AdhocFlags f = issue_example();
  f.dataset = "prompts.jsonl";
  f.output_tokens = "64";
  AdhocPlan built = build_adhoc_plan(f);
  ASSERT_TRUE(built.errors.empty()) << joined(built.errors);
  EXPECT_EQ(built.plan["workload"],
            ordered_json::parse(R"({"output_tokens": 64, "dataset": {"path": "prompts.jsonl"}})"));
  f.input_tokens = "100";
  built = build_adhoc_plan(f);
  EXPECT_NE(joined(built.errors).find("--input-tokens does not apply with --dataset"),
            std::string::npos)
      << joined(built.errors);
}

TEST(AdhocPlan, MistakesNameTheirFlagAndAreAllListed) {
  AdhocFlags f;
  f.concurrency = "1,x";
  f.num_prompts = "200";
  f.duration = "30";
  f.price = "cheap";
  f.seed = "-";
  f.input_tokens = "1k";
  f.search = true;
  const AdhocPlan built = build_adhoc_plan(f);
  EXPECT_TRUE(built.plan.is_null());
  const std::string all = joined(built.errors);
  for (const char* want : {"--base-url is required", "--concurrency: 'x' is not a whole number",
                           "--num-prompts and --duration: give one",
                           "--price: 'cheap' is not a number", "--seed: '-' is not a whole number",
                           "--input-tokens: '1k' is not a whole number", "--search needs --sla"})
    EXPECT_NE(all.find(want), std::string::npos) << want << " in\n" << all;
}

TEST(AdhocPlan, NoLoadFlagIsAnError) {
  AdhocFlags f;
  f.base_url = "http://h:1";
  const AdhocPlan built = build_adhoc_plan(f);
  EXPECT_NE(joined(built.errors).find("no load given: add --concurrency"), std::string::npos)
      << joined(built.errors);
  f.request_rate = "inf";
  EXPECT_NE(joined(build_adhoc_plan(f).errors).find("--request-rate: 'inf' is not a rate"),
            std::string::npos);
}

TEST(AdhocPlan, SlaEntriesParseUnitsAndPercentages) {
  ordered_json sla;
  EXPECT_TRUE(
      parse_sla_flag("ttft_p95=1.5s, tpot_p95=35, e2e_p99=2m, error_rate=0.5%", sla).empty());
  EXPECT_EQ(sla, ordered_json::parse(R"({"ttft_ms": {"p95": 1500}, "tpot_ms": {"p95": 35},
      "e2e_ms": {"p99": 120000}, "max_error_rate": 0.005})"));
  sla = nullptr;
  EXPECT_TRUE(parse_sla_flag("TTFT_P99=800ms,max_error_rate=0.02", sla).empty());
  EXPECT_EQ(sla, ordered_json::parse(R"({"ttft_ms": {"p99": 800}, "max_error_rate": 0.02})"));
}

TEST(AdhocPlan, BadSlaEntriesAreNamed) {
  ordered_json sla;
  const auto errors = parse_sla_flag(
      "ttft_p95=fast,tpot_p100=3,ttft=1s,latency_p95=1s,error_rate=120%,tpot_p95=30,tpot_p95=40,"
      "e2e_p99,"
      "min_requests=0",
      sla);
  const std::string all = joined(errors);
  for (const char* want :
       {"--sla: 'ttft_p95=fast': 'fast' is not a time",
        "--sla: 'tpot_p100=3': 'p100' is not a percentile",
        "--sla: 'ttft=1s': unknown bound 'ttft'", "--sla: 'latency_p95=1s': unknown bound",
        "--sla: 'error_rate=120%': '120%' is not an error rate",
        "--sla: 'tpot_p95=40': given twice", "--sla: 'e2e_p99': expected NAME=VALUE",
        "--sla: 'min_requests=0': '0' is not a whole number"})
    EXPECT_NE(all.find(want), std::string::npos) << want << " in\n" << all;
  EXPECT_EQ(errors.size(), 8u) << all;
  EXPECT_NE(joined(parse_sla_flag(" , ", sla)).find("--sla: no bounds given"), std::string::npos);
}

TEST(AdhocPlan, TargetNamesFromUrls) {
  EXPECT_EQ(target_name_from_url("http://127.0.0.1:8000"), "127.0.0.1-8000");
  EXPECT_EQ(target_name_from_url("https://user@LLM.Example.com/v1"), "llm.example.com");
  EXPECT_EQ(target_name_from_url("http://[::1]:8000/"), "--1-8000");
  EXPECT_EQ(target_name_from_url("sim://h100-sxm/llama-3.1-8b"), "h100-sxm");
  EXPECT_EQ(target_name_from_url(""), "target");
  EXPECT_EQ(target_name_from_url("http://" + std::string(100, 'a')).size(), 64u);
}

TEST(AdhocPlan, ErrorsOfThePlanReaderMapBackToTheirFlag) {
  const AdhocPlan built = build_adhoc_plan(issue_example());
  EXPECT_EQ(flag_for_pointer(built.sources, "/phases/0/levels/1"), "--concurrency");
  EXPECT_EQ(flag_for_pointer(built.sources, "/phases/0/requests"), "--num-prompts");
  EXPECT_EQ(flag_for_pointer(built.sources, "/phases/0"), "--concurrency");
  EXPECT_EQ(flag_for_pointer(built.sources, "/sla/ttft_ms/p95"), "--sla");
  EXPECT_EQ(flag_for_pointer(built.sources, "/targets/0/model"), "--model");
  EXPECT_EQ(flag_for_pointer(built.sources, "/targets/0/name"), "--base-url");
  EXPECT_EQ(flag_for_pointer(built.sources, "/targets/0/headers"), "");
  EXPECT_EQ(flag_for_pointer(built.sources, "/version"), "");
  // A later source on the same value wins: a --set names itself.
  PlanSources sources = built.sources;
  sources.emplace_back("/phases/0/requests", "--set phases.0.requests=5");
  EXPECT_EQ(flag_for_pointer(sources, "/phases/0/requests"), "--set phases.0.requests=5");
  // A prefix of a key is not its parent.
  EXPECT_EQ(flag_for_pointer({{"/sla", "--sla"}}, "/slash"), "");
}

TEST(AdhocPlan, GivenFlagsAreListedByName) {
  AdhocFlags f;
  EXPECT_TRUE(given_adhoc_flags(f).empty());
  f.search = true;
  f.model = "m";
  EXPECT_EQ(given_adhoc_flags(f), (std::vector<std::string>{"--model", "--search"}));
}

TEST(AdhocPlan, EveryFlagIsBoundWithHelp) {
  AdhocFlags f;
  Settings s("");
  bind_adhoc_flags(s, f);
  std::vector<std::string> positional;
  ASSERT_EQ(parse_flags(s,
                        {"--base-url", "http://h:1", "--request-rate", "2", "--search", "--sla",
                         "ttft_p95=1s", "--num-prompts", "300"},
                        positional),
            "");
  EXPECT_EQ(f.base_url, "http://h:1");
  EXPECT_TRUE(f.search);
  EXPECT_EQ(f.num_prompts, "300");
  const std::string help = s.help_text();
  for (const char* flag :
       {"--base-url", "--name", "--model", "--api", "--input-tokens", "--output-tokens",
        "--dataset", "--concurrency", "--request-rate", "--search", "--num-prompts", "--duration",
        "--warmup", "--sla", "--price", "--currency", "--seed"})
    EXPECT_NE(help.find(std::string(flag) + " "), std::string::npos) << flag;
}

}  // namespace
}  // namespace llmcap::server

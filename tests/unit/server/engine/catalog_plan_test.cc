// The catalogue plan of `llmcapd predict --catalog`: one target per GPU profile that can serve
// the plan, each with the plan's model, precision, sim options and a price; the rest excluded
// with their reason; price files parsed strictly.
#include "server/engine/catalog_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "api/plan_reader.h"
#include "sim/profile_catalog.h"

namespace llmcap::server {
namespace {

using nlohmann::json;

json plan_for(const std::string& base_url, const std::string& dtype = "bf16") {
  const json doc = {
      {"version", 1},
      {"name", "cat"},
      {"targets",
       {{{"name", "mine"},
         {"base_url", base_url},
         {"sim", {{"dtype", dtype}, {"time_scale", 4}}},
         {"price_per_hour", 0.6}}}},
      {"workload", {{"input_tokens", {{"fixed", 1024}}}, {"output_tokens", {{"fixed", 256}}}}},
      {"sla", {{"ttft_ms", {{"p95", 1000}}}, {"tpot_ms", {{"p95", 35}}}}},
      {"phases", {{{"kind", "concurrency_sweep"}, {"levels", {4, 16}}, {"duration_s", 20}}}}};
  const auto parse = api::parse_plan(doc.dump());
  EXPECT_TRUE(parse.errors.empty()) << (parse.errors.empty() ? "" : parse.errors[0].message);
  return parse.normalized;
}

std::vector<std::string> all_hardware() { return sim::ProfileCatalog::builtin().hardware_names(); }

TEST(CatalogPlan, OneTargetPerProfileThatFitsAndTheRestWithTheirReason) {
  const auto cat =
      build_catalog_plan(plan_for("sim://rtx4090-48g/llama-3.1-70b"), nullptr, {}, {1});
  ASSERT_TRUE(cat.error.empty()) << cat.error;
  EXPECT_EQ(cat.model, "llama-3.1-70b");
  EXPECT_EQ(cat.dtype, "bf16");
  // 70B in BF16 is 141 GB of weights: no single GPU of the catalogue holds it.
  EXPECT_TRUE(cat.hardware.empty());
  EXPECT_EQ(cat.excluded.size(), all_hardware().size());
  for (const auto& e : cat.excluded) EXPECT_NE(e.reason.find("fit"), std::string::npos) << e.reason;
}

TEST(CatalogPlan, TargetsCarryTheModelPrecisionOptionsAndPrices) {
  CatalogPrices prices;
  prices.currency = "EUR";
  prices.per_hour = {{"h100-sxm", 2.5}, {"a10", 0.4}};
  const auto cat = build_catalog_plan(plan_for("sim://rtx4090-48g/llama-3.1-8b"), &prices, {}, {1});
  ASSERT_TRUE(cat.error.empty()) << cat.error;
  // Every profile is either in the plan or excluded, never both.
  EXPECT_EQ(cat.hardware.size() + cat.excluded.size(), all_hardware().size());
  EXPECT_NE(std::find(cat.hardware.begin(), cat.hardware.end(), "h100-sxm"), cat.hardware.end());
  const auto& targets = cat.plan["targets"];
  ASSERT_EQ(targets.size(), cat.hardware.size());
  for (const auto& t : targets) {
    const std::string name = t["name"];
    EXPECT_EQ(t["base_url"], "sim://" + name + "/llama-3.1-8b");
    EXPECT_EQ(t["sim"]["dtype"], "bf16");
    EXPECT_EQ(t["hardware"]["gpu_count"], 1);
    EXPECT_EQ(t["hardware"]["precision"], "bf16");
    if (name == "h100-sxm") {
      EXPECT_EQ(t["price_per_hour"], 2.5);
      EXPECT_EQ(t["currency"], "EUR");
    } else if (name != "a10") {
      // A price file replaces the plan's prices: no price rather than one from elsewhere.
      EXPECT_FALSE(t.contains("price_per_hour")) << name;
    }
  }
  // The catalogue plan is a valid plan.
  api::PlanLimits limits;
  limits.max_targets = 64;
  EXPECT_TRUE(api::parse_plan(cat.plan.dump(), limits).errors.empty());
}

TEST(CatalogPlan, WithoutAPriceFileThePlansOwnPricesAreUsed) {
  const auto cat = build_catalog_plan(plan_for("sim://rtx4090-48g/llama-3.1-8b"), nullptr,
                                      {"rtx4090-48g", "h100-sxm"}, {1});
  ASSERT_TRUE(cat.error.empty()) << cat.error;
  ASSERT_EQ(cat.hardware, (std::vector<std::string>{"h100-sxm", "rtx4090-48g"}));
  for (const auto& t : cat.plan["targets"]) {
    if (t["name"] == "rtx4090-48g")
      EXPECT_EQ(t["price_per_hour"], 0.6);
    else
      EXPECT_FALSE(t.contains("price_per_hour"));
  }
}

TEST(CatalogPlan, Fp8ExcludesCardsWithoutFp8OrSaysWhy) {
  const auto cat =
      build_catalog_plan(plan_for("sim://h100-sxm/llama-3.1-8b", "fp8"), nullptr, {}, {1});
  ASSERT_TRUE(cat.error.empty()) << cat.error;
  EXPECT_EQ(cat.dtype, "fp8");
  EXPECT_EQ(cat.hardware.size() + cat.excluded.size(), all_hardware().size());
  EXPECT_NE(std::find(cat.hardware.begin(), cat.hardware.end(), "h100-sxm"), cat.hardware.end());
}

TEST(CatalogPlan, TensorParallelDegreesThatServeThePlanArePricedPerGpu) {
  CatalogPrices prices;
  prices.per_hour = {{"a100-80g-sxm", 1.8}, {"rtx4090-48g", 0.6}};
  const auto cat = build_catalog_plan(plan_for("sim://a100-80g-sxm/llama-3.1-70b", "fp8"), &prices,
                                      {"a100-80g-sxm", "rtx4090-48g", "rtx4090-24g"}, {1, 2, 3, 4});
  ASSERT_TRUE(cat.error.empty()) << cat.error;
  // 70B FP8 (71 GB of weights): split over 2 or 4 GPUs it fits 80 GB and 48 GB cards; 3 does not
  // divide its 64 heads and is never offered; two 24 GB cards cannot hold it, four can.
  for (const char* name : {"a100-80g-sxm-tp2", "a100-80g-sxm-tp4", "rtx4090-48g-tp2",
                           "rtx4090-48g-tp4", "rtx4090-24g-tp4"})
    EXPECT_NE(std::find(cat.hardware.begin(), cat.hardware.end(), name), cat.hardware.end())
        << name;
  for (const auto& n : cat.hardware) EXPECT_EQ(n.find("-tp3"), std::string::npos) << n;
  EXPECT_EQ(std::find(cat.hardware.begin(), cat.hardware.end(), "rtx4090-24g-tp2"),
            cat.hardware.end());
  // Every candidate not in the plan is listed with its reason, in catalogue order.
  EXPECT_EQ(cat.hardware.size() + cat.excluded.size(), 3u * 4u);
  std::map<std::string, std::string> why;
  for (const auto& e : cat.excluded) {
    why[e.name] = e.reason;
    EXPECT_EQ(e.name, e.tensor_parallel == 1
                          ? e.hardware
                          : e.hardware + "-tp" + std::to_string(e.tensor_parallel));
  }
  EXPECT_NE(why["a100-80g-sxm-tp3"].find("does not divide"), std::string::npos)
      << why["a100-80g-sxm-tp3"];
  EXPECT_NE(why["rtx4090-24g-tp2"].find("fit"), std::string::npos) << why["rtx4090-24g-tp2"];
  EXPECT_NE(why["rtx4090-24g"].find("fit"), std::string::npos) << why["rtx4090-24g"];
  for (const auto& t : cat.plan["targets"]) {
    const std::string name = t["name"];
    const int tp = t["sim"].value("tensor_parallel", 1);
    EXPECT_EQ(t["hardware"]["gpu_count"], tp) << name;
    if (name.rfind("a100-80g-sxm", 0) == 0) {
      EXPECT_DOUBLE_EQ(t["price_per_hour"].get<double>(), 1.8 * tp);
    }
  }
}

TEST(CatalogPlan, EveryProfileIsOfferedAtOneTwoFourAndEightGpusByDefault) {
  const auto cat = build_catalog_plan(plan_for("sim://h100-sxm/llama-3.1-8b"), nullptr);
  ASSERT_TRUE(cat.error.empty()) << cat.error;
  // Llama-3.1-8B BF16 fits every card of the catalogue of 24 GB and more at every degree.
  for (const char* name : {"h100-sxm", "h100-sxm-tp2", "h100-sxm-tp4", "h100-sxm-tp8"})
    EXPECT_NE(std::find(cat.hardware.begin(), cat.hardware.end(), name), cat.hardware.end())
        << name;
  for (const auto& n : cat.hardware) EXPECT_EQ(n.find("-tp3"), std::string::npos) << n;
}

TEST(CatalogPlan, ErrorsNameWhatIsWrong) {
  json real = plan_for("sim://h100-sxm/llama-3.1-8b");
  real["targets"][0]["base_url"] = "http://127.0.0.1:8000";
  real["targets"][0].erase("sim");
  auto cat = build_catalog_plan(real, nullptr);
  EXPECT_NE(cat.error.find("/targets"), std::string::npos) << cat.error;
  cat = build_catalog_plan(plan_for("sim://h100-sxm/llama-3.1-8b"), nullptr, {"tpu-v5"});
  EXPECT_NE(cat.error.find("--hardware: unknown profile 'tpu-v5'"), std::string::npos) << cat.error;
}

TEST(CatalogPrices, ParsesAndRefusesNamingTheKey) {
  const auto names = all_hardware();
  auto ok = parse_catalog_prices(
      R"({"currency": "EUR", "source": "offers", "_comment": "x",
          "prices_per_hour": {"h100-sxm": 2.5, "a10": 0}})",
      names);
  ASSERT_TRUE(ok.errors.empty());
  EXPECT_EQ(ok.prices->currency, "EUR");
  EXPECT_EQ(ok.prices->source, "offers");
  EXPECT_EQ(ok.prices->per_hour.at("h100-sxm"), 2.5);
  EXPECT_EQ(ok.prices->per_hour.at("a10"), 0);

  auto bad = parse_catalog_prices(
      R"({"currency": "dollars", "colour": 1,
          "prices_per_hour": {"h100-sxm": -1, "a10": "cheap", "tpu": 1}})",
      names);
  EXPECT_FALSE(bad.prices);
  std::vector<std::string> paths;
  for (const auto& e : bad.errors) paths.push_back(e.path);
  for (const char* p : {"/currency", "/colour", "/prices_per_hour/h100-sxm", "/prices_per_hour/a10",
                        "/prices_per_hour/tpu"})
    EXPECT_NE(std::find(paths.begin(), paths.end(), p), paths.end()) << p;

  EXPECT_FALSE(parse_catalog_prices("not json", names).errors.empty());
  EXPECT_EQ(parse_catalog_prices(R"({"currency": "USD"})", names).errors.at(0).path,
            "/prices_per_hour");
}

// A qualified target of a catalogue results document (the fields capacity_rows reads).
json qualified(const std::string& name, double price, double tokens_per_s, double cost_per_m) {
  return {{"name", name},
          {"price_per_hour", price},
          {"currency", "USD"},
          {"verdict", {{"outcome", "pass"}}},
          {"qualified",
           {{"basis", "open_loop"},
            {"offered_rate_rps", 2.0},
            {"output_tokens_per_s", tokens_per_s},
            {"cost_per_million_output_tokens", cost_per_m}}}};
}

json demand_line(const std::string& name, int instances, double hourly) {
  return {{"target", name},         {"feasible", true},
          {"instances", instances}, {"hourly_cost", hourly * instances},
          {"utilisation", 0.5},     {"monthly_cost", hourly * instances * 730}};
}

// Issue 32 #4: every candidate is in the ranking or says why not; with a demand the order is
// the fleet's monthly cost, not cost per token.
TEST(CatalogRanking, EveryCandidateRankedByTheFleetsMonthlyCostOrListedWithItsReason) {
  json results = {
      {"targets",
       {qualified("a100-80g-pcie", 1.5, 1000, 0.4167),
        qualified("a100-80g-pcie-tp8", 12, 9000, 0.37),
        qualified("rtx4090-48g", 0.6, 400, 0.4167),
        {{"name", "a100-80g-pcie-tp2"},
         {"price_per_hour", 3.0},
         {"currency", "USD"},
         {"qualified", nullptr},
         {"verdict",
          {{"outcome", "inconclusive"}, {"statement", "no confirmed rate: ttft_p95 at 4 rps"}}}},
        {{"name", "a10"},
         {"price_per_hour", 0.4},
         {"qualified", nullptr},
         {"verdict",
          {{"outcome", "fail"},
           {"statement", "no qualified capacity: the SLA failed at every level tried"}}}}}},
      // 800 tok/s: one A100 (1095 USD a month), two 4090s (876), one 8-GPU instance (8760).
      {"demand_plan",
       {{"required_output_tokens_per_s", 800},
        {"hours_per_month", 730},
        {"lines",
         {demand_line("a100-80g-pcie", 1, 1.5),
          demand_line("a100-80g-pcie-tp8", 1, 12),
          demand_line("rtx4090-48g", 2, 0.6),
          {{"target", "a100-80g-pcie-tp2"}, {"feasible", false}, {"instances", 0}}}}}},
      {"catalog",
       {{"excluded",
         {{{"hardware", "rtx4090-24g"},
           {"name", "rtx4090-24g-tp2"},
           {"tensor_parallel", 2},
           {"reason", "weights do not fit"}}}}}}};
  const json ranking = catalog_ranking(results);
  EXPECT_EQ(ranking["ranked_by"], "monthly_cost");
  EXPECT_NE(ranking["basis"].get<std::string>().find("800 output tok/s"), std::string::npos);
  const auto& c = ranking["candidates"];
  ASSERT_EQ(c.size(), 6u) << ranking.dump(1);
  std::vector<std::string> order;
  for (const auto& x : c) order.push_back(x["name"]);
  EXPECT_EQ(order, (std::vector<std::string>{"rtx4090-48g", "a100-80g-pcie", "a100-80g-pcie-tp8",
                                             "a100-80g-pcie-tp2", "a10", "rtx4090-24g-tp2"}));
  EXPECT_EQ(c[0]["rank"], 1);
  EXPECT_EQ(c[0]["instances"], 2);
  EXPECT_DOUBLE_EQ(c[0]["monthly_cost"].get<double>(), 876);
  EXPECT_DOUBLE_EQ(c[0]["cost_per_million_output_tokens"].get<double>(), 0.4167);
  EXPECT_TRUE(c[0]["reason"].is_null());
  EXPECT_EQ(c[2]["rank"], 3);
  EXPECT_EQ(c[2]["hardware"], "a100-80g-pcie");
  EXPECT_EQ(c[2]["tensor_parallel"], 8);
  EXPECT_EQ(c[3]["rank"], nullptr);
  EXPECT_EQ(c[3]["status"], "inconclusive");
  EXPECT_EQ(c[3]["tensor_parallel"], 2);
  EXPECT_EQ(c[3]["reason"], "inconclusive: no confirmed rate: ttft_p95 at 4 rps");
  EXPECT_EQ(c[4]["status"], "fail");
  EXPECT_EQ(c[4]["reason"], "fail: no qualified capacity: the SLA failed at every level tried");
  EXPECT_EQ(c[5]["status"], "cannot_serve");
  EXPECT_EQ(c[5]["hardware"], "rtx4090-24g");
  EXPECT_EQ(c[5]["reason"], "cannot serve the plan: weights do not fit");

  // Without a demand: cost per million output tokens (the 8-GPU instance is cheapest per token).
  results.erase("demand_plan");
  const json by_token = catalog_ranking(results);
  EXPECT_EQ(by_token["ranked_by"], "cost_per_million_output_tokens");
  EXPECT_NE(by_token["basis"].get<std::string>().find("no demand"), std::string::npos);
  EXPECT_EQ(by_token["candidates"][0]["name"], "a100-80g-pcie-tp8");
  EXPECT_TRUE(by_token["candidates"][0]["monthly_cost"].is_null());
  // Equal cost per token: the catalogue's order.
  EXPECT_EQ(by_token["candidates"][1]["name"], "a100-80g-pcie");
  EXPECT_EQ(by_token["candidates"][2]["name"], "rtx4090-48g");
  EXPECT_EQ(by_token["candidates"].size(), 6u);
}

}  // namespace
}  // namespace llmcap::server

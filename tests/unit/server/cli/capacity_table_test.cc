// The CLI's qualified-capacity table (server/cli/capacity_table.h): the same rows as every report
// format, money in the target's currency, "-" (never 0) where a target has no price, and the
// verdict word of each target's outcome.
#include "server/cli/capacity_table.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "tests/test_paths.h"

namespace llmcap::server {
namespace {

using nlohmann::json;

json two_targets() {
  std::ifstream in(std::string(LLMCAP_TEST_DATA_DIR) + "/results-two-targets.json");
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str());
}

std::string line_of(const std::string& table, const std::string& target) {
  std::istringstream in(table);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(target + " ", 0) == 0) return line;
  return "";
}

TEST(CapacityTable, MoneyCarriesTheTargetsCurrency) {
  json doc = two_targets();
  doc["targets"][0]["currency"] = "EUR";
  const std::string table = capacity_table_text(doc);
  const std::string line = line_of(table, "rtx4090-48g");
  ASSERT_FALSE(line.empty()) << table;
  EXPECT_NE(line.find("0.60 EUR"), std::string::npos) << line;
  EXPECT_EQ(line.find("USD"), std::string::npos) << line;
  EXPECT_NE(line.find("PASS"), std::string::npos) << line;
  EXPECT_NE(line_of(table, "a100-80g-pcie").find("USD"), std::string::npos) << table;
  // The demand plan's money too.
  EXPECT_NE(table.find("2.40 EUR /h"), std::string::npos) << table;
  EXPECT_EQ(table.find('$'), std::string::npos) << table;
}

TEST(CapacityTable, NoPriceIsADashNotZero) {
  json doc = two_targets();
  doc["targets"][0]["price_per_hour"] = nullptr;
  doc["targets"][0]["qualified"]["cost_per_million_output_tokens"] = nullptr;
  doc["demand_plan"]["lines"][0]["hourly_cost"] = nullptr;
  doc["demand_plan"]["lines"][0]["monthly_cost"] = nullptr;
  const std::string table = capacity_table_text(doc);
  const std::string line = line_of(table, "rtx4090-48g");
  EXPECT_EQ(line.find("USD"), std::string::npos) << line;  // no money figure at all
  EXPECT_EQ(line.find("0.0000"), std::string::npos) << line;
  EXPECT_NE(table.find("(no price)"), std::string::npos) << table;
}

TEST(CapacityTable, VerdictWordFollowsTheOutcome) {
  json doc = two_targets();
  doc["targets"][0]["qualified"] = nullptr;
  doc["targets"][0]["verdict"] = {{"outcome", "inconclusive"},
                                  {"statement", "no confirmed rate: ttft_p95 failed at 7 rps"}};
  doc["targets"][1]["qualified"] = nullptr;
  doc["targets"][1]["verdict"] = {{"outcome", "fail"},
                                  {"statement", "the SLA failed at every level tried"}};
  const std::string table = capacity_table_text(doc);
  EXPECT_NE(line_of(table, "rtx4090-48g").find("INCONCLUSIVE"), std::string::npos) << table;
  EXPECT_NE(line_of(table, "a100-80g-pcie").find("FAIL"), std::string::npos) << table;
  EXPECT_EQ(table.find("PASS"), std::string::npos) << table;
  EXPECT_NE(table.find("  rtx4090-48g: no confirmed rate"), std::string::npos) << table;
}

TEST(CapacityTable, ADocumentWithoutResultsIsAHeaderNotAThrow) {
  for (const json& doc : {json(), json::array(), json::object(), json{{"targets", 3}}}) {
    std::string table;
    EXPECT_NO_THROW(table = capacity_table_text(doc)) << doc.dump();
    EXPECT_EQ(table.rfind("target ", 0), 0u) << table;
  }
}

TEST(CapacityTable, SlaTextSpellsEveryBound) {
  const json sla = {{"ttft_ms", {{"p95", 1000}, {"p99.99", 3000}}},
                    {"tpot_ms", {{"p75", 35}}},
                    {"max_error_rate", 0.01}};
  EXPECT_EQ(sla_text(sla),
            "P95 ttft <= 1000 ms; P99.99 ttft <= 3000 ms; P75 tpot <= 35 ms; errors <= 1%");
}

// The catalogue as `llmcapd predict --catalog` leaves it: the two profiles of the test document
// (a small demand: one instance of either covers it, so the 4090 costs less a month although
// the A100 costs less per token), a profile without a price, one that failed, one inconclusive
// and two candidates that cannot serve the plan.
json catalogue() {
  json doc = two_targets();
  doc["demand_plan"]["lines"][0]["instances"] = 1;
  doc["demand_plan"]["lines"][0]["hourly_cost"] = 0.6;
  doc["demand_plan"]["lines"][0]["monthly_cost"] = 438.0;
  json unpriced = doc["targets"][1];
  unpriced["name"] = "h100-sxm";
  unpriced.erase("price_per_hour");
  unpriced["qualified"].erase("cost_per_million_output_tokens");
  doc["targets"].push_back(unpriced);
  json failed = doc["targets"][0];
  failed["name"] = "a10";
  failed["qualified"] = nullptr;
  failed["verdict"] = {{"outcome", "fail"},
                       {"statement",
                        "no qualified capacity: the SLA failed at every level tried: P95 tpot "
                        "over 35 ms at c=4"}};
  doc["targets"].push_back(failed);
  json inconclusive = doc["targets"][1];
  inconclusive["name"] = "a100-80g-pcie-tp2";
  inconclusive["qualified"] = nullptr;
  inconclusive["verdict"] = {{"outcome", "inconclusive"},
                             {"statement", "no confirmed rate: ttft_p95 failed at 9 rps"}};
  doc["targets"].push_back(inconclusive);
  doc["catalog"] = {{"excluded",
                     {{{"hardware", "rtx4090-24g"},
                       {"name", "rtx4090-24g"},
                       {"tensor_parallel", 1},
                       {"reason", "does not fit"}},
                      {{"hardware", "rtx4090-24g"},
                       {"name", "rtx4090-24g-tp8"},
                       {"tensor_parallel", 8},
                       {"reason", "tensor_parallel 8 does not divide the heads"}}}}};
  return doc;
}

// The line that starts after the newline at `newline`.
std::string line_after(const std::string& text, std::size_t newline) {
  const auto end = text.find('\n', newline + 1);
  return text.substr(newline + 1, end == std::string::npos ? std::string::npos : end - newline - 1);
}

std::vector<std::size_t> positions(const std::string& text,
                                   const std::vector<std::string>& starts) {
  std::vector<std::size_t> at;
  for (const auto& s : starts) at.push_back(text.find("\n" + s));
  return at;
}

TEST(CatalogRanking, ByTheMonthlyCostOfTheFleetThenUnpricedThenEveryCandidateThatCannotQualify) {
  const std::string text = catalog_ranking_text(catalogue());
  EXPECT_EQ(text.rfind("ranked by the monthly cost of the fleet the demand needs (468 output "
                       "tok/s with headroom, 730 h/month",
                       0),
            0u)
      << text;
  const auto at =
      positions(text, {"1    rtx4090-48g ", "2    a100-80g-pcie ", "3    h100-sxm ", "-    a10 ",
                       "-    a100-80g-pcie-tp2 ", "-    rtx4090-24g ", "-    rtx4090-24g-tp8 "});
  for (std::size_t i = 0; i < at.size(); ++i) {
    ASSERT_NE(at[i], std::string::npos) << i << "\n" << text;
    if (i > 0) {
      EXPECT_LT(at[i - 1], at[i]) << i << "\n" << text;
    }
  }
  // The fleet's monthly cost, with cost per million output tokens beside it.
  const std::string rtx = line_after(text, at[0]);
  EXPECT_NE(rtx.find("438 USD"), std::string::npos) << rtx;
  EXPECT_NE(rtx.find("1.2640 USD"), std::string::npos) << rtx;
  EXPECT_NE(rtx.find("PASS"), std::string::npos) << rtx;
  EXPECT_NE(line_after(text, at[4]).find("INCONCLUSIVE"), std::string::npos);
  EXPECT_NE(line_after(text, at[5]).find("CANNOT SERVE"), std::string::npos);
  // Why each one is where it is.
  for (const char* why :
       {"  h100-sxm: no price: ranked after the priced candidates",
        "  a10: fail: no qualified capacity: the SLA failed at every level tried",
        "  a100-80g-pcie-tp2: inconclusive: no confirmed rate: ttft_p95 failed at 9 rps",
        "  rtx4090-24g: cannot serve the plan: does not fit",
        "  rtx4090-24g-tp8: cannot serve the plan: tensor_parallel 8 does not divide"})
    EXPECT_NE(text.find(why), std::string::npos) << why << "\n" << text;
}

TEST(CatalogRanking, WithoutADemandByCostPerMillionOutputTokensAndSaysSo) {
  json doc = catalogue();
  doc.erase("demand_plan");
  const std::string text = catalog_ranking_text(doc);
  EXPECT_EQ(text.rfind("the plan has no demand: ranked by cost per million output tokens", 0), 0u)
      << text;
  const auto at = positions(text, {"1    a100-80g-pcie ", "2    rtx4090-48g ", "3    h100-sxm "});
  for (std::size_t i = 0; i < at.size(); ++i) {
    ASSERT_NE(at[i], std::string::npos) << i << "\n" << text;
    if (i > 0) {
      EXPECT_LT(at[i - 1], at[i]) << i << "\n" << text;
    }
  }
  EXPECT_EQ(text.find("per month"), std::string::npos) << text;
  EXPECT_NE(text.find("  rtx4090-24g-tp8: cannot serve the plan"), std::string::npos) << text;
}

}  // namespace
}  // namespace llmcap::server

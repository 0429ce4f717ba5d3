// The CLI's qualified-capacity table (server/cli/capacity_table.h): the same rows as every report
// format, money in the target's currency, "-" (never 0) where a target has no price, and the
// verdict word of each target's outcome.
#include "server/cli/capacity_table.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

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

TEST(CatalogRanking, CheapestFirstThenUnpricedThenUnqualifiedThenExcluded) {
  json doc = two_targets();
  // A third profile without a price, and the A100 (cheaper per token) listed second.
  json unpriced = doc["targets"][1];
  unpriced["name"] = "h100-sxm";
  unpriced.erase("price_per_hour");
  unpriced["qualified"].erase("cost_per_million_output_tokens");
  doc["targets"].push_back(unpriced);
  json failed = doc["targets"][0];
  failed["name"] = "a10";
  failed["qualified"] = nullptr;
  failed["verdict"] = {{"outcome", "fail"}, {"statement", "P95 tpot over 35 ms at c=4"}};
  doc["targets"].push_back(failed);
  doc["catalog"] = {{"excluded", {{{"hardware", "rtx4090-24g"}, {"reason", "does not fit"}}}}};
  const std::string text = catalog_ranking_text(doc);
  const auto a100 = text.find("1    a100-80g-pcie ");
  const auto rtx = text.find("2    rtx4090-48g ");
  const auto h100 = text.find("3    h100-sxm ");
  const auto a10 = text.find("-    a10 ");
  ASSERT_NE(a100, std::string::npos) << text;
  ASSERT_NE(rtx, std::string::npos) << text;
  ASSERT_NE(h100, std::string::npos) << text;
  ASSERT_NE(a10, std::string::npos) << text;
  EXPECT_LT(a100, rtx);
  EXPECT_LT(rtx, h100);
  EXPECT_LT(h100, a10);
  EXPECT_NE(text.find("a10: P95 tpot over 35 ms at c=4"), std::string::npos) << text;
  EXPECT_NE(text.find("cannot serve this plan:\n  rtx4090-24g: does not fit"), std::string::npos)
      << text;
}

}  // namespace
}  // namespace llmcap::server

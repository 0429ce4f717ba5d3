// A prediction beside a measurement (api/prediction_check.h): targets pair by name, else by
// base_url; errors are (measured − predicted) / predicted at the qualified points.
#include "api/prediction_check.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "api/report_html.h"
#include "api/report_tables.h"
#include "tests/test_paths.h"

namespace llmcap::api {
namespace {

using nlohmann::json;

json load(const std::string& name) {
  std::ifstream in(std::string(LLMCAP_TEST_DATA_DIR) + "/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str());
}

// The two-target results as a prediction, and a "measurement" 4 % below it on the A100.
std::pair<json, json> pair_of_documents() {
  json predicted = load("results-two-targets.json");
  predicted["predicted"] = true;
  predicted["job_id"] = "job_pred";
  json measured = load("results-two-targets.json");
  measured["predicted"] = false;
  measured["job"] = {{"id", "job_meas"}};
  auto& q = measured["targets"][1]["qualified"];
  q["offered_rate_rps"] = q["offered_rate_rps"].get<double>() * 0.96;
  q["ttft_ms"]["p95"] = q["ttft_ms"]["p95"].get<double>() * 1.10;
  return {predicted, measured};
}

TEST(PredictionCheck, PairsTargetsByNameAndGivesRelativeErrors) {
  auto [predicted, measured] = pair_of_documents();
  const json check = prediction_check(predicted, measured);
  EXPECT_EQ(check["predicted_job"], "job_pred");
  EXPECT_EQ(check["measured_job"], "job_meas");
  ASSERT_EQ(check["targets"].size(), 2u);
  const auto& a100 = check["targets"][1];
  EXPECT_EQ(a100["target"], "a100-80g-pcie");
  EXPECT_NEAR(a100["relative_error"]["qualified_rps"].get<double>(), -0.04, 1e-9);
  EXPECT_NEAR(a100["relative_error"]["ttft_p95_ms"].get<double>(), 0.10, 1e-9);
  EXPECT_NEAR(a100["relative_error"]["output_tokens_per_s"].get<double>(), 0, 1e-12);
  EXPECT_NEAR(a100["predicted"]["qualified_rps"].get<double>(), 16.2584, 1e-9);

  const auto lines = prediction_check_lines(check);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1].rfind("a100-80g-pcie: predicted 16.26 rps, measured 15.61 rps, -4.0 %", 0), 0u)
      << lines[1];
  EXPECT_NE(lines[1].find("P95 TTFT 211 vs 232 ms (+10.0 %)"), std::string::npos) << lines[1];
}

TEST(PredictionCheck, SignedPercentNeverPrintsMinusZero) {
  EXPECT_EQ(signed_percent(0.043), "+4.3 %");
  EXPECT_EQ(signed_percent(-0.008), "-0.8 %");
  EXPECT_EQ(signed_percent(-0.0001), "+0.0 %");
}

TEST(PredictionCheck, PairsByBaseUrlWhenNamesDiffer) {
  auto [predicted, measured] = pair_of_documents();
  measured["targets"][0]["name"] = "box-1";  // same base_url as the prediction's rtx4090-48g
  const json check = prediction_check(predicted, measured);
  ASSERT_EQ(check["targets"].size(), 2u);
  EXPECT_EQ(check["targets"][0]["target"], "rtx4090-48g");
  EXPECT_EQ(check["targets"][0]["measured"]["target"], "box-1");
}

TEST(PredictionCheck, NoQualifiedPointMeansNoErrorButTheOutcome) {
  auto [predicted, measured] = pair_of_documents();
  measured["targets"][1]["qualified"] = nullptr;
  measured["targets"][1]["verdict"] = {{"outcome", "fail"}, {"statement", "ttft"}};
  const json check = prediction_check(predicted, measured);
  const auto& a100 = check["targets"][1];
  EXPECT_TRUE(a100["relative_error"]["qualified_rps"].is_null());
  EXPECT_EQ(a100["measured"]["outcome"], "fail");
  EXPECT_NE(prediction_check_lines(check)[1].find("measured fail"), std::string::npos);
}

TEST(PredictionCheck, UnrelatedTargetsPairWithNothing) {
  auto [predicted, measured] = pair_of_documents();
  for (auto& t : measured["targets"]) {
    t["name"] = "other-" + t["name"].get<std::string>();
    t["base_url"] = "http://10.0.0.1:8000";
  }
  EXPECT_TRUE(prediction_check(predicted, measured)["targets"].empty());
}

TEST(PredictionCheck, ReportsMarkPredictionsAndShowTheCheck) {
  auto [predicted, measured] = pair_of_documents();
  EXPECT_TRUE(is_predicted(predicted));
  EXPECT_FALSE(is_predicted(measured));
  predicted["prediction_check"] = prediction_check(predicted, measured);
  const std::string md = render_markdown(predicted);
  EXPECT_EQ(md.rfind("# Predicted capacity report:", 0), 0u);
  EXPECT_NE(md.find("## Prediction vs measurement"), std::string::npos);
  EXPECT_NE(md.find("predicted 16.26 rps, measured 15.61 rps, -4.0 %"), std::string::npos);
  for (const auto& row : capacity_rows(predicted)) {
    EXPECT_NE(std::find(row.labels.begin(), row.labels.end(), "predicted"), row.labels.end());
  }
  for (const auto& row : capacity_rows(measured)) {
    EXPECT_EQ(std::find(row.labels.begin(), row.labels.end(), "predicted"), row.labels.end());
  }
  const std::string html = render_report_html(predicted);
  EXPECT_NE(html.find("<title>Predicted capacity report:"), std::string::npos);
  EXPECT_NE(html.find("id=\"predicted\""), std::string::npos);
  EXPECT_NE(html.find("id=\"prediction-check\""), std::string::npos);
  EXPECT_EQ(render_report_html(measured).find("id=\"predicted\""), std::string::npos);
}

}  // namespace
}  // namespace llmcap::api

#include "api/report_compare.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "api/report_html.h"
#include "api/report_tables.h"
#include "tests/test_paths.h"

namespace llmcap::api {
namespace {

using nlohmann::json;

json compare_load(const std::string& name) {
  std::ifstream in(std::string(LLMCAP_TEST_DATA_DIR) + "/" + name);
  EXPECT_TRUE(in.good()) << name;
  return json::parse(in);
}

json with_job(json doc, const std::string& id) {
  doc["job"] = json{{"id", id}, {"state", "succeeded"}};
  return doc;
}

TEST(ReportCompareTest, SameWorkloadCombinesCapacityRowsSideBySide) {
  const auto a = with_job(compare_load("results-two-targets.json"), "job-a");
  auto b = with_job(compare_load("results-two-targets.json"), "job-b");
  b["targets"][0]["price_per_hour"] = 0.3;  // a cheaper offer of the same card
  const auto out = compare_results({a, b}, false);
  ASSERT_TRUE(out.document) << out.error;
  EXPECT_TRUE(out.error.empty());
  EXPECT_TRUE(out.mismatched_jobs.empty());
  const auto& doc = *out.document;
  EXPECT_EQ(doc["comparison_label"], "same-config");
  EXPECT_EQ(doc["workloads_differ"], false);
  EXPECT_EQ(doc["workload_fingerprint"], a["workload_fingerprint"]);
  ASSERT_EQ(doc["jobs"].size(), 2u);
  EXPECT_EQ(doc["jobs"][1]["job_id"], "job-b");
  EXPECT_EQ(doc["jobs"][0]["label"], "A");
  EXPECT_EQ(doc["jobs"][1]["label"], "B");
  EXPECT_EQ(doc["jobs"][0]["kind"], "measured");
  EXPECT_EQ(doc["comparison_mode"], "A/B");
  EXPECT_FALSE(doc.contains("prediction_checks"));
  const auto rows = capacity_rows(doc);
  ASSERT_EQ(rows.size(), 4u);
  // Short names (the job's label, not its 26-character id) keep legends readable.
  EXPECT_EQ(rows[0].target, "rtx4090-48g (A)");
  EXPECT_EQ(rows[0].job_id, "job-a");
  EXPECT_EQ(rows[3].target, "a100-80g-pcie (B)");
  EXPECT_EQ(doc["targets"][2]["source_name"], "rtx4090-48g");
  EXPECT_EQ(doc["targets"][2]["job_label"], "B");
  EXPECT_EQ(doc["targets"][2]["phases"][0]["steps"][0]["target"], "rtx4090-48g (B)");
  EXPECT_EQ(rows[0].output_tokens_per_s, rows[2].output_tokens_per_s);
  // Each target against its namesake in job A (not everything against A's first target):
  // the 4090 at half the price → ×0.50 per token; the A100 unchanged → ×1.00.
  EXPECT_EQ(doc["comparison_basis"], "same-name targets");
  ASSERT_EQ(doc["comparison"].size(), 2u);
  EXPECT_EQ(doc["comparison"][0]["target"], "rtx4090-48g (B)");
  EXPECT_EQ(doc["comparison"][0]["baseline"], "rtx4090-48g (A)");
  EXPECT_NEAR(doc["comparison"][0]["relative_cost_per_token"].get<double>(), 0.5, 1e-4);
  EXPECT_EQ(doc["comparison"][1]["target"], "a100-80g-pcie (B)");
  EXPECT_EQ(doc["comparison"][1]["baseline"], "a100-80g-pcie (A)");
  EXPECT_NEAR(doc["comparison"][1]["relative_cost_per_token"].get<double>(), 1.0, 1e-4);
  // Same demand in both plans → one demand plan over four offers; the cheaper copy wins.
  ASSERT_TRUE(doc.contains("demand_plan"));
  EXPECT_EQ(doc["demand_basis"], "across jobs");
  EXPECT_EQ(doc["demand_plan"]["lines"].size(), 4u);
  EXPECT_EQ(doc["demand_plan"]["cheapest"], "rtx4090-48g (B)");
  // Renders like any results document.
  const auto html = render_report_html(doc, {});
  EXPECT_NE(html.find("<table id=\"jobs-table\">"), std::string::npos);
  EXPECT_NE(html.find("<tr data-target=\"a100-80g-pcie (B)\">"), std::string::npos);
  EXPECT_NE(html.find("data-series=\"rtx4090-48g (B)\""), std::string::npos);
  EXPECT_EQ(html.find("data-series=\"job-"), std::string::npos);
  EXPECT_NE(html.find("the same name in the first job"), std::string::npos);
}

TEST(ReportCompareTest, WithoutNamesakesEveryTargetIsComparedWithTheFirst) {
  auto a = with_job(compare_load("results-two-targets.json"), "job-a");
  auto b = with_job(compare_load("results-two-targets.json"), "job-b");
  b["targets"][0]["name"] = "rtx4090-other";
  b["targets"][1]["name"] = "a100-other";
  const auto out = compare_results({a, b}, false);
  ASSERT_TRUE(out.document) << out.error;
  const auto& doc = *out.document;
  EXPECT_EQ(doc["comparison_basis"], "first target");
  ASSERT_EQ(doc["comparison"].size(), 3u);
  for (const auto& c : doc["comparison"]) EXPECT_EQ(c["baseline"], "rtx4090-48g (A)");
}

TEST(ReportCompareTest, JobLabelsGoPastZ) {
  std::vector<json> docs;
  for (int i = 0; i < 28; ++i) docs.push_back(compare_load("results-tiny.json"));
  const auto out = compare_results(docs, false);
  ASSERT_TRUE(out.document) << out.error;
  EXPECT_EQ((*out.document)["jobs"][25]["label"], "Z");
  EXPECT_EQ((*out.document)["jobs"][26]["label"], "AA");
  EXPECT_EQ((*out.document)["targets"][27]["name"], "a100 (AB)");
}

TEST(ReportCompareTest, DifferentFingerprintsAreRefusedNamingTheJobs) {
  const auto a = with_job(compare_load("results-two-targets.json"), "job-a");
  const auto b = with_job(compare_load("results-tiny.json"), "job-b");
  ASSERT_NE(a["workload_fingerprint"], b["workload_fingerprint"]);
  const auto out = compare_results({a, b}, false);
  EXPECT_FALSE(out.document);
  EXPECT_NE(out.error.find("job-a"), std::string::npos) << out.error;
  EXPECT_NE(out.error.find("job-b"), std::string::npos) << out.error;
  EXPECT_NE(out.error.find(b["workload_fingerprint"].get<std::string>()), std::string::npos);
  EXPECT_EQ(out.mismatched_jobs, (std::vector<std::string>{"job-a", "job-b"}));
}

TEST(ReportCompareTest, DifferentFingerprintsAllowedAreLabelled) {
  const auto a = with_job(compare_load("results-two-targets.json"), "job-a");
  const auto b = with_job(compare_load("results-tiny.json"), "job-b");
  const auto out = compare_results({a, b}, true);
  ASSERT_TRUE(out.document) << out.error;
  const auto& doc = *out.document;
  EXPECT_EQ(doc["workloads_differ"], true);
  EXPECT_EQ(doc["comparison_label"], "different workloads");
  EXPECT_TRUE(doc["workload_fingerprint"].is_null());
  EXPECT_EQ(doc["targets"].size(), 3u);
  // Different workloads are not ranked in one demand table: one per job.
  EXPECT_FALSE(doc.contains("demand_plan"));
  EXPECT_EQ(doc["demand_basis"], "per job");
  EXPECT_EQ(doc["demand_per_job_reason"], "the jobs ran different workloads");
  ASSERT_EQ(doc["demand_plans"].size(), 2u);
  EXPECT_EQ(doc["demand_plans"][0]["demand_plan"]["lines"].size(), 2u);
  EXPECT_EQ(doc["demand_plans"][1]["demand_plan"]["lines"].size(), 1u);
  const auto html = render_report_html(doc, {});
  EXPECT_NE(html.find(">different workloads</span>"), std::string::npos);
}

TEST(ReportCompareTest, JobIdFallbacksAndBadInput) {
  json a = compare_load("results-tiny.json");
  a["job_id"] = "plain-id";
  json b = compare_load("results-tiny.json");
  const auto out = compare_results({a, b}, false);
  ASSERT_TRUE(out.document) << out.error;
  EXPECT_EQ((*out.document)["targets"][0]["job_id"], "plain-id");
  EXPECT_EQ((*out.document)["targets"][1]["job_id"], "job 2");
  EXPECT_EQ((*out.document)["targets"][1]["name"], "a100 (B)");

  const auto one = compare_results({a}, false);
  EXPECT_FALSE(one.document);
  EXPECT_NE(one.error.find("at least two"), std::string::npos);

  json unfinished{{"complete", false}, {"steps", json::array()}, {"job", {{"id", "j-running"}}}};
  const auto bad = compare_results({a, unfinished}, true);
  EXPECT_FALSE(bad.document);
  EXPECT_EQ(bad.mismatched_jobs, (std::vector<std::string>{"j-running"}));
  EXPECT_NE(bad.error.find("j-running"), std::string::npos);
}

TEST(ReportCompareTest, AnUnpricedTargetIsNeverFreeAndDifferentSlasDrawNoLines) {
  // Review finding: a target without a price entered the comparison as price 0 (ratio ×0.00,
  // "cheapest"); and job A's SLA lines were drawn over job B's points.
  const auto a = with_job(compare_load("results-two-targets.json"), "job-a");
  auto b = with_job(compare_load("results-two-targets.json"), "job-b");
  b["targets"][0]["price_per_hour"] = nullptr;
  b["targets"][0]["qualified"]["cost_per_million_output_tokens"] = nullptr;
  b["plan_document"]["sla"]["tpot_ms"] = json{{"p95", 35}};
  const auto out = compare_results({a, b}, false);
  ASSERT_TRUE(out.document) << out.error;
  const auto& doc = *out.document;
  for (const auto& c : doc["comparison"])
    EXPECT_NE(c["target"], "rtx4090-48g (B)") << c.dump();  // nothing to compare a price with
  if (doc.contains("demand_plan")) {
    EXPECT_NE(doc["demand_plan"]["cheapest"], "rtx4090-48g (B)");
    for (const auto& l : doc["demand_plan"]["lines"]) {
      if (l["target"] == "rtx4090-48g (B)") {
        EXPECT_TRUE(l["hourly_cost"].is_null()) << l.dump();
      }
    }
  }
  EXPECT_EQ(doc["slas_differ"], true);
  EXPECT_FALSE(doc["plan_document"].contains("sla"));
  EXPECT_NE(render_report_html(doc).find("id=\"slas-differ\""), std::string::npos);
}

json predicted(json doc) {
  doc["predicted"] = true;
  for (auto& t : doc["targets"]) t["simulated"] = true;
  return doc;
}

// Issue 40 #4: a prediction and a measurement of one plan compared each target with itself
// (×1.00), ranked the predicted row "cheapest" in one demand table with the measured rows, and
// did not say which job was the prediction.
TEST(ReportCompareTest, APredictionAndAMeasurementOfOnePlanArePairedNotRanked) {
  const auto p = with_job(predicted(compare_load("results-two-targets.json")), "job-p");
  auto m = with_job(compare_load("results-two-targets.json"), "job-m");
  // The box served 10 % less than predicted on the 4090.
  m["targets"][0]["qualified"]["output_tokens_per_s"] =
      p["targets"][0]["qualified"]["output_tokens_per_s"].get<double>() * 0.9;
  m["targets"][0]["qualified"]["offered_rate_rps"] = 2.7;
  const auto out = compare_results({p, m}, false);
  ASSERT_TRUE(out.document) << out.error;
  const auto& doc = *out.document;
  EXPECT_EQ(doc["comparison_mode"], "predicted vs measured");
  EXPECT_EQ(doc["plan"], "predicted vs measured: two-targets");
  ASSERT_EQ(doc["jobs"].size(), 2u);
  EXPECT_EQ(doc["jobs"][0]["kind"], "predicted");
  EXPECT_EQ(doc["jobs"][0]["job_id"], "job-p");
  EXPECT_EQ(doc["jobs"][0]["plan"], "two-targets");
  EXPECT_EQ(doc["jobs"][1]["kind"], "measured");
  EXPECT_EQ(doc["targets"][0]["job_kind"], "predicted");
  EXPECT_EQ(doc["targets"][2]["job_kind"], "measured");

  // No A/B row: nothing of one kind to compare with.
  EXPECT_TRUE(doc["comparison"].empty()) << doc["comparison"].dump();
  EXPECT_FALSE(doc.contains("comparison_basis"));
  // Each target against its counterpart: measured vs predicted, with the error.
  ASSERT_EQ(doc["prediction_checks"].size(), 1u);
  const auto& check = doc["prediction_checks"][0];
  EXPECT_EQ(check["predicted_job"], "job-p");
  EXPECT_EQ(check["measured_job"], "job-m");
  EXPECT_EQ(check["predicted_label"], "A");
  EXPECT_EQ(check["measured_label"], "B");
  EXPECT_EQ(check["slas_differ"], false);
  ASSERT_EQ(check["targets"].size(), 2u);
  EXPECT_EQ(check["targets"][0]["target"], "rtx4090-48g");
  EXPECT_NEAR(check["targets"][0]["relative_error"]["output_tokens_per_s"].get<double>(), -0.1,
              1e-9);
  EXPECT_NEAR(check["targets"][0]["relative_error"]["qualified_rps"].get<double>(), -0.1, 1e-9);
  EXPECT_NEAR(check["targets"][1]["relative_error"]["output_tokens_per_s"].get<double>(), 0, 1e-12);

  // One demand table per job, "cheapest" within each, never across the two.
  EXPECT_FALSE(doc.contains("demand_plan"));
  EXPECT_EQ(doc["demand_basis"], "per job");
  EXPECT_EQ(doc["demand_per_job_reason"], "the jobs are a prediction and a measurement");
  ASSERT_EQ(doc["demand_plans"].size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    const auto& per_job = doc["demand_plans"][i];
    const std::string label = i == 0 ? "A" : "B";
    EXPECT_EQ(per_job["label"], label);
    EXPECT_EQ(per_job["kind"], i == 0 ? "predicted" : "measured");
    ASSERT_EQ(per_job["demand_plan"]["lines"].size(), 2u);
    for (const auto& l : per_job["demand_plan"]["lines"])
      EXPECT_NE(l["target"].get<std::string>().find("(" + label + ")"), std::string::npos);
    const auto cheapest = per_job["demand_plan"]["cheapest"].get<std::string>();
    EXPECT_NE(cheapest.find("(" + label + ")"), std::string::npos) << cheapest;
  }
  // The predicted rows say so.
  const auto rows = capacity_rows(doc);
  ASSERT_EQ(rows.size(), 4u);
  auto labelled = [](const CapacityRow& r) {
    return std::find(r.labels.begin(), r.labels.end(), "predicted") != r.labels.end();
  };
  EXPECT_TRUE(labelled(rows[0]));
  EXPECT_TRUE(labelled(rows[1]));
  EXPECT_FALSE(labelled(rows[2]));
  EXPECT_FALSE(labelled(rows[3]));

  const auto html = render_report_html(doc, {});
  EXPECT_EQ(html.find("id=\"comparison-table\""), std::string::npos);
  EXPECT_EQ(html.find("×1.00"), std::string::npos);
  EXPECT_NE(html.find("id=\"predicted-vs-measured\""), std::string::npos);
  EXPECT_NE(html.find("<tr data-job=\"job-p\" data-kind=\"predicted\">"), std::string::npos);
  EXPECT_NE(html.find("<tr data-job=\"job-m\" data-kind=\"measured\">"), std::string::npos);
  EXPECT_NE(html.find("class=\"prediction-check-table\" data-predicted-job=\"job-p\" "
                      "data-measured-job=\"job-m\""),
            std::string::npos);
  EXPECT_NE(html.find("<td>-10.0 %</td>"), std::string::npos);
  EXPECT_EQ(html.find("id=\"demand-table\""), std::string::npos);
  EXPECT_NE(html.find("id=\"demand-table-A\""), std::string::npos);
  EXPECT_NE(html.find("id=\"demand-table-B\""), std::string::npos);
  EXPECT_NE(html.find("id=\"demand-per-job\""), std::string::npos);
  std::size_t cheapest_cells = 0;
  for (auto at = html.find(">cheapest<"); at != std::string::npos;
       at = html.find(">cheapest<", at + 1))
    ++cheapest_cells;
  EXPECT_EQ(cheapest_cells, 2u);  // one per job's table

  const auto md = render_markdown(doc);
  EXPECT_NE(md.find("- Comparison mode: predicted vs measured"), std::string::npos);
  EXPECT_NE(md.find("| A | predicted | job-p | two-targets |"), std::string::npos) << md;
  EXPECT_NE(md.find("| B | measured | job-m | two-targets |"), std::string::npos);
  EXPECT_NE(md.find("## Predicted vs measured"), std::string::npos);
  EXPECT_NE(md.find("rtx4090-48g: predicted 3.00 rps, measured 2.70 rps, -10.0 %"),
            std::string::npos)
      << md;
  EXPECT_EQ(md.find("## Comparison (relative cost"), std::string::npos);
  EXPECT_NE(md.find("## Demand plan: job A (predicted, `job-p`)"), std::string::npos);
}

TEST(ReportCompareTest, MeasurementsStayABBesideAPrediction) {
  // Two measured servers and a prediction of the same plan: A/B among the measured jobs only;
  // the prediction is checked against each measurement.
  const auto m1 = with_job(compare_load("results-two-targets.json"), "job-m1");
  const auto p = with_job(predicted(compare_load("results-two-targets.json")), "job-p");
  auto m2 = with_job(compare_load("results-two-targets.json"), "job-m2");
  m2["targets"][0]["price_per_hour"] = 0.3;
  const auto out = compare_results({m1, p, m2}, false);
  ASSERT_TRUE(out.document) << out.error;
  const auto& doc = *out.document;
  EXPECT_EQ(doc["comparison_mode"], "predicted vs measured");
  EXPECT_EQ(doc["comparison_basis"], "same-name targets");
  ASSERT_EQ(doc["comparison"].size(), 2u);
  for (const auto& c : doc["comparison"]) {
    EXPECT_NE(c["target"].get<std::string>().find("(C)"), std::string::npos) << c.dump();
    EXPECT_NE(c["baseline"].get<std::string>().find("(A)"), std::string::npos) << c.dump();
  }
  ASSERT_EQ(doc["prediction_checks"].size(), 2u);
  EXPECT_EQ(doc["prediction_checks"][0]["measured_job"], "job-m1");
  EXPECT_EQ(doc["prediction_checks"][1]["measured_job"], "job-m2");
  EXPECT_EQ(doc["prediction_checks"][1]["predicted_label"], "B");
  EXPECT_FALSE(doc.contains("demand_plan"));
  EXPECT_EQ(doc["demand_plans"].size(), 3u);
  const auto html = render_report_html(doc, {});
  EXPECT_NE(html.find("id=\"comparison-table\""), std::string::npos);
}

TEST(ReportCompareTest, MeasurementsUnderDifferentSlasGetADemandTableEach) {
  const auto a = with_job(compare_load("results-two-targets.json"), "job-a");
  auto b = with_job(compare_load("results-two-targets.json"), "job-b");
  b["plan_document"]["sla"]["ttft_ms"] = json{{"p95", 500}};
  const auto out = compare_results({a, b}, false);
  ASSERT_TRUE(out.document) << out.error;
  const auto& doc = *out.document;
  EXPECT_EQ(doc["comparison_mode"], "A/B");
  EXPECT_FALSE(doc.contains("demand_plan"));
  EXPECT_EQ(doc["demand_per_job_reason"], "the jobs were judged against different SLAs");
  EXPECT_EQ(doc["demand_plans"].size(), 2u);
}

}  // namespace
}  // namespace llmcap::api

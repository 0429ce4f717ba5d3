#include "api/report_html.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "api/report_format.h"
#include "api/report_tables.h"
#include "tests/test_paths.h"

namespace llmcap::api {
namespace {

using nlohmann::json;

json html_load(const std::string& name) {
  std::ifstream in(std::string(LLMCAP_TEST_DATA_DIR) + "/" + name);
  EXPECT_TRUE(in.good()) << name;
  return json::parse(in);
}

std::size_t html_count(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (auto pos = haystack.find(needle); pos != std::string::npos;
       pos = haystack.find(needle, pos + 1))
    ++n;
  return n;
}

// The first <svg class="chart" data-chart="KIND"...>...</svg> element, or "".
std::string chart(const std::string& html, const std::string& kind, std::size_t nth = 0) {
  const std::string open = "<svg class=\"chart\" data-chart=\"" + kind + "\"";
  std::size_t pos = html.find(open);
  for (std::size_t i = 0; i < nth && pos != std::string::npos; ++i) pos = html.find(open, pos + 1);
  if (pos == std::string::npos) return "";
  const auto end = html.find("</svg>", pos);
  return html.substr(pos, end + 6 - pos);
}

std::string element_by_id(const std::string& html, const std::string& tag, const std::string& id) {
  const auto pos = html.find("<" + tag + " id=\"" + id + "\"");
  if (pos == std::string::npos) return "";
  const auto end = html.find("</" + tag + ">", pos);
  return html.substr(pos, end - pos);
}

class ReportHtmlTest : public ::testing::Test {
 protected:
  json two_ = html_load("results-two-targets.json");
  std::string html_ = render_report_html(two_, {});
};

TEST_F(ReportHtmlTest, SelfContainedPageWithoutScriptsOrExternalAssets) {
  EXPECT_EQ(html_.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html_.find("<style>"), std::string::npos);
  EXPECT_EQ(html_.find("<script"), std::string::npos);
  EXPECT_EQ(html_.find("<link"), std::string::npos);
  EXPECT_EQ(html_.find("src="), std::string::npos);
  EXPECT_EQ(html_.find("url("), std::string::npos);
  // The only absolute URLs are SVG namespaces and the targets' own base URLs (as text).
  std::regex url("https?://[^\"<\\s]+");
  for (auto it = std::sregex_iterator(html_.begin(), html_.end(), url);
       it != std::sregex_iterator(); ++it)
    EXPECT_EQ(it->str(), "http://www.w3.org/2000/svg");
  EXPECT_NE(html_.find("<title>Capacity report: two-targets</title>"), std::string::npos);
  EXPECT_EQ(html_.substr(html_.size() - 8), "</html>\n");
}

TEST_F(ReportHtmlTest, RegionTableOnlyForScaleOutStepsWithRegions) {
  EXPECT_EQ(html_.find("id=\"regions\""), std::string::npos);
  json results = two_;
  results["targets"][0]["phases"][0]["steps"][0]["regions"] = json::parse(R"({
    "eu-west": {"requests": 7, "ttft_ms": {"p50": 41, "p95": 60}, "tpot_ms": {"p50": 7.5,
                "p95": 8.25}, "e2e_ms": {"p50": 160, "p95": 190}}})");
  const std::string html = render_report_html(results, {});
  const std::string table = element_by_id(html, "table", "regions-table");
  ASSERT_FALSE(table.empty());
  EXPECT_NE(table.find("all regions"), std::string::npos);
  EXPECT_NE(table.find("eu-west"), std::string::npos);
  EXPECT_NE(table.find(">190<"), std::string::npos) << table;
}

TEST_F(ReportHtmlTest, ConversationTableOnlyForConversationSteps) {
  EXPECT_EQ(html_.find("id=\"conversations\""), std::string::npos);
  json results = two_;
  results["targets"][0]["phases"][0]["steps"][0]["conversation"] = json::parse(R"({
    "sessions_started": 16, "sessions_completed": 10, "sessions_failed": 0,
    "sessions_context_limit": 0, "sessions_cut": 6, "turns_per_session_mean": 3.5,
    "session_duration_s": {"p50": 12.5, "p95": 20},
    "by_turn": [{"turn": 1, "requests": 16, "ttft_p50_ms": 96, "ttft_p95_ms": 180,
                 "input_tokens_mean": 512},
                {"turn": 2, "requests": 14, "ttft_p50_ms": 45, "ttft_p95_ms": 70,
                 "input_tokens_mean": 704}]})");
  const std::string html = render_report_html(results, {});
  const std::string table = element_by_id(html, "table", "conversation-table");
  ASSERT_FALSE(table.empty());
  EXPECT_NE(table.find("96/180, 45/70"), std::string::npos) << table;
  EXPECT_NE(table.find("512, 704"), std::string::npos) << table;
  EXPECT_NE(table.find(">3.50<"), std::string::npos) << table;
}

TEST_F(ReportHtmlTest, CapacityTableHasEveryTargetWithItsFigures) {
  const auto table = element_by_id(html_, "table", "capacity-table");
  ASSERT_FALSE(table.empty());
  const auto rows = capacity_rows(two_);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(html_count(table, "<tr data-target="), 2u);
  for (const auto& r : rows) {
    SCOPED_TRACE(r.target);
    const auto start = table.find("<tr data-target=\"" + r.target + "\">");
    ASSERT_NE(start, std::string::npos);
    const auto row = table.substr(start, table.find("</tr>", start) - start);
    ASSERT_TRUE(r.qualified);
    char buf[64];
    std::snprintf(buf, sizeof buf, "<td>%.1f</td>", *r.output_tokens_per_s);
    EXPECT_NE(row.find(buf), std::string::npos) << row;
    std::snprintf(buf, sizeof buf, "<td>%.4f USD</td>", *r.cost_per_million_output_tokens);
    EXPECT_NE(row.find(buf), std::string::npos) << row;
    std::snprintf(buf, sizeof buf, "<td>%.0f</td>", *r.ttft_p95_ms);
    EXPECT_NE(row.find(buf), std::string::npos);
    EXPECT_NE(row.find("<td>512 / 64</td>"), std::string::npos);
    EXPECT_NE(row.find(">simulated</span>"), std::string::npos);
    EXPECT_NE(row.find(">same-config</span>"), std::string::npos);
    EXPECT_NE(row.find(">qualified</td>"), std::string::npos);
  }
  EXPECT_NE(table.find("<td>0.60 USD</td>"), std::string::npos);
  EXPECT_NE(table.find("<td>1.50 USD</td>"), std::string::npos);
}

TEST_F(ReportHtmlTest, ThroughputChartsHaveAxesLegendAndTheQualifiedPoint) {
  const auto conc = chart(html_, "throughput-vs-concurrency");
  ASSERT_FALSE(conc.empty());
  EXPECT_NE(conc.find(">Concurrency (requests in flight)</text>"), std::string::npos);
  EXPECT_NE(conc.find(">Output throughput (tokens/s)</text>"), std::string::npos);
  EXPECT_NE(conc.find("data-series=\"rtx4090-48g\""), std::string::npos);
  EXPECT_NE(conc.find("data-series=\"a100-80g-pcie\""), std::string::npos);
  EXPECT_NE(conc.find("class=\"legend\""), std::string::npos);

  const auto rate = chart(html_, "throughput-vs-rate");
  ASSERT_FALSE(rate.empty());
  EXPECT_NE(rate.find(">Offered rate (requests/s)</text>"), std::string::npos);
  // Both targets qualified open loop: one ring each, at the qualified rate and tokens/s.
  EXPECT_EQ(html_count(rate, "class=\"mark qualified-point\""), 2u);
  for (const auto& t : two_["targets"]) {
    const auto& q = t["qualified"];
    ASSERT_EQ(q["basis"], "open_loop");
    const std::string at = "data-x=\"" + format_compact(q["offered_rate_rps"].get<double>()) +
                           "\" data-y=\"" + format_compact(q["output_tokens_per_s"].get<double>()) +
                           "\"";
    EXPECT_NE(rate.find(at), std::string::npos) << at;
  }
  EXPECT_NE(rate.find(">SLA-qualified point</text>"), std::string::npos);
}

TEST_F(ReportHtmlTest, LatencyChartsDrawTheSlaBounds) {
  for (const char* kind : {"ttft-vs-concurrency", "ttft-vs-rate"}) {
    const auto c = chart(html_, kind);
    ASSERT_FALSE(c.empty()) << kind;
    EXPECT_EQ(html_count(c, "<line class=\"threshold\" data-value=\"1000\""), 1u) << kind;
    EXPECT_NE(c.find("SLA P95 TTFT ≤ 1000 ms"), std::string::npos);
    EXPECT_NE(c.find("data-series=\"a100-80g-pcie P99\""), std::string::npos);
    EXPECT_NE(c.find("data-series=\"rtx4090-48g P50\""), std::string::npos);
    EXPECT_NE(c.find("TTFT (ms"), std::string::npos);
  }
  for (const char* kind : {"tpot-vs-concurrency", "tpot-vs-rate"}) {
    const auto c = chart(html_, kind);
    ASSERT_FALSE(c.empty()) << kind;
    EXPECT_EQ(html_count(c, "<line class=\"threshold\" data-value=\"50\""), 1u) << kind;
    EXPECT_NE(c.find("SLA P95 TPOT ≤ 50 ms"), std::string::npos);
  }
}

TEST_F(ReportHtmlTest, CdfsPerStepWithCaptionAndBurstTimeline) {
  const auto cdf = chart(html_, "cdf-ttft");
  ASSERT_FALSE(cdf.empty());
  EXPECT_NE(cdf.find(">Requests at or below (%)</text>"), std::string::npos);
  EXPECT_NE(cdf.find("data-series=\"c=1\""), std::string::npos);
  EXPECT_NE(html_.find("from the summary points min, P50, P90, P95, P99, P99.9 and max"),
            std::string::npos);
  EXPECT_FALSE(chart(html_, "cdf-tpot").empty());
  const auto burst = chart(html_, "burst-ttft");
  ASSERT_FALSE(burst.empty());
  EXPECT_NE(burst.find("<g class=\"band\">"), std::string::npos);
  EXPECT_NE(burst.find("<line class=\"threshold\""), std::string::npos);
  EXPECT_FALSE(chart(html_, "burst-in-flight").empty());
  EXPECT_EQ(html_count(element_by_id(html_, "table", "burst-table"), "<tr data-target="), 2u);
  EXPECT_EQ(html_count(element_by_id(html_, "table", "soak-table"), "<tr data-target="), 2u);
}

TEST_F(ReportHtmlTest, DemandComparisonStepsHardwareAndPlan) {
  const auto demand = element_by_id(html_, "table", "demand-table");
  EXPECT_EQ(html_count(demand, "<tr data-target="), 2u);
  EXPECT_NE(demand.find(">cheapest</td>"), std::string::npos);
  const auto cmp = element_by_id(html_, "table", "comparison-table");
  ASSERT_EQ(two_["comparison"].size(), 1u);
  char buf[32];
  std::snprintf(buf, sizeof buf, "×%.2f",
                two_["comparison"][0]["relative_cost_per_token"].get<double>());
  EXPECT_NE(cmp.find(buf), std::string::npos);
  EXPECT_EQ(html_count(html_, "<table class=\"steps-table\""), 2u);
  EXPECT_EQ(html_count(html_, "<tr data-outcome="), step_rows(two_).size());
  EXPECT_NE(html_.find("NVIDIA A100 80GB PCIe"), std::string::npos);
  EXPECT_NE(html_.find("Load generator CPU"), std::string::npos);
  const auto plan = element_by_id(html_, "pre", "plan-json");
  EXPECT_NE(plan.find("&quot;capacity_search&quot;"), std::string::npos);
}

// x coordinates of every <polyline> of a chart, one vector per polyline.
std::vector<std::vector<double>> polyline_xs(const std::string& svg) {
  std::vector<std::vector<double>> out;
  const std::regex points("<polyline[^>]* points=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), points); it != std::sregex_iterator();
       ++it) {
    std::vector<double> xs;
    std::istringstream in((*it)[1].str());
    std::string pair;
    while (in >> pair) xs.push_back(std::stod(pair.substr(0, pair.find(','))));
    out.push_back(std::move(xs));
  }
  return out;
}

TEST_F(ReportHtmlTest, StepsAtOneRateAreNotJoinedByVerticalLines) {
  // The 4090's soak runs at 3.00 rps, the a100's search confirm and trials repeat rates: the
  // line visits each rate once; the other steps there are dots.
  for (const char* kind : {"throughput-vs-rate", "ttft-vs-rate", "tpot-vs-rate"}) {
    SCOPED_TRACE(kind);
    const auto c = chart(html_, kind);
    const auto lines = polyline_xs(c);
    ASSERT_FALSE(lines.empty());
    for (const auto& xs : lines) {
      for (std::size_t i = 1; i < xs.size(); ++i) EXPECT_LT(xs[i - 1], xs[i]) << c.substr(0, 300);
    }
  }
  json doc = two_;
  // A soak at exactly a searched rate: without the split the line would go straight up there.
  auto& phases = doc["targets"][1]["phases"];
  phases[4]["steps"][0]["params"]["rate_rps"] = phases[2]["steps"][1]["params"]["rate_rps"];
  phases[4]["steps"][0]["stats"]["window_s"] = 60;
  const auto c = chart(render_report_html(doc, {}), "throughput-vs-rate");
  for (const auto& xs : polyline_xs(c)) {
    for (std::size_t i = 1; i < xs.size(); ++i) EXPECT_LT(xs[i - 1], xs[i]);
  }
  // The longer soak is on the line; the search step at that rate is a dot.
  const auto soak_y =
      format_compact(phases[4]["steps"][0]["stats"]["output_tokens_per_s"].get<double>());
  EXPECT_NE(c.find("a100-80g-pcie: 13, " + soak_y + "</title>"), std::string::npos) << c;
  EXPECT_NE(c.find("<g class=\"series\" data-series=\"a100-80g-pcie\"><circle"), std::string::npos);
}

TEST_F(ReportHtmlTest, EachStepOfACdfChartHasItsOwnColour) {
  for (std::size_t n = 0;; ++n) {
    const auto c = chart(html_, "cdf-ttft", n);
    if (c.empty()) {
      EXPECT_GT(n, 2u);
      break;
    }
    std::set<std::string> colours;
    std::size_t series = 0;
    const std::regex stroke(
        "<g class=\"series\"[^>]*><polyline fill=\"none\" stroke=\"(#[0-9A-F]+)\"");
    for (auto it = std::sregex_iterator(c.begin(), c.end(), stroke); it != std::sregex_iterator();
         ++it, ++series)
      colours.insert((*it)[1].str());
    EXPECT_EQ(colours.size(), series) << c.substr(0, 200);
  }
}

TEST_F(ReportHtmlTest, GoodputInTheStepsAndCapacityTables) {
  const auto cap = element_by_id(html_, "table", "capacity-table");
  EXPECT_NE(cap.find(">Goodput req/s (met SLO)</th>"), std::string::npos);
  EXPECT_NE(cap.find("<td class=\"wrap\">15.80 (100%)</td>"), std::string::npos) << cap;
  const auto start = html_.find("<table class=\"steps-table\" data-target=\"a100-80g-pcie\"");
  ASSERT_NE(start, std::string::npos);
  const auto steps = html_.substr(start, html_.find("</table>", start) - start);
  EXPECT_NE(steps.find(">Goodput req/s (met SLO)</th>"), std::string::npos);
  EXPECT_NE(steps.find("<td class=\"wrap\">13.60 ("), std::string::npos)
      << steps;  // the 26.01 rps trial
}

TEST_F(ReportHtmlTest, WithoutItsPlanTheReportSaysSoAndReportDocumentAddsIt) {
  json bare = two_;
  const json plan = bare["plan_document"];
  bare.erase("plan_document");  // what GET /v1/jobs/{id}/results holds
  const auto without = render_report_html(bare, {});
  EXPECT_EQ(html_count(without, "<line class=\"threshold\""), 0u);
  EXPECT_NE(without.find("id=\"no-plan\""), std::string::npos);
  EXPECT_NE(without.find("so its SLA bounds are not drawn"), std::string::npos);
  EXPECT_EQ(html_.find("id=\"no-plan\""), std::string::npos);

  const auto with = render_report_html(report_document(bare, plan), {});
  EXPECT_EQ(with.find("id=\"no-plan\""), std::string::npos);
  for (const char* kind :
       {"ttft-vs-concurrency", "ttft-vs-rate", "tpot-vs-concurrency", "tpot-vs-rate", "burst-ttft"})
    EXPECT_EQ(html_count(chart(with, kind), "<line class=\"threshold\""), 1u) << kind;
  EXPECT_EQ(with, html_);  // the same page as from the `llmcapd run --out` document
  // A plan that is not an object (a stored plan that did not parse) keeps the document's own.
  EXPECT_EQ(report_document(two_, json()), two_);
  EXPECT_EQ(report_document(json::array(), plan), json::array());
}

TEST(ReportHtmlEscapeTest, TargetNamedScriptComesOutEscaped) {
  json doc = html_load("results-tiny.json");
  doc["targets"][0]["name"] = "<script>alert(1)</script>";
  doc["targets"][0]["hardware"] = json{{"gpu", "<img src=x onerror=alert(2)>"}};
  doc["plan"] = "\"quoted\" & <b>";
  doc["plan_document"]["description"] = "<iframe>";
  const auto html = render_report_html(doc, {.title = "",
                                             .job_id = "<job>",
                                             .generated_at = "",
                                             .include_step_cdfs = true,
                                             .include_plan = true});
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_EQ(html.find("<iframe"), std::string::npos);
  EXPECT_EQ(html.find("<b>"), std::string::npos);
  EXPECT_EQ(html.find("<job>"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("data-target=\"&lt;script&gt;alert(1)&lt;/script&gt;\""), std::string::npos);
  EXPECT_NE(html.find("&quot;quoted&quot; &amp; &lt;b&gt;"), std::string::npos);
  EXPECT_NE(html.find("&lt;img src=x onerror=alert(2)&gt;"), std::string::npos);
}

TEST(ReportHtmlEdgeTest, EmptyOrPartialDocumentsStillRender) {
  const auto html = render_report_html(json::object(), {});
  EXPECT_NE(html.find("<table id=\"capacity-table\">"), std::string::npos);
  EXPECT_EQ(html.find("<svg"), std::string::npos);
  json failed{{"plan", "p"},
              {"state", "failed"},
              {"error", "target x: simulator cannot start"},
              {"targets", json::array({json{{"name", "x"}, {"qualified", nullptr}}})}};
  const auto h2 = render_report_html(failed, {.title = "T",
                                              .job_id = "",
                                              .generated_at = "2026-12-02T12:00:00Z",
                                              .include_step_cdfs = false,
                                              .include_plan = false});
  EXPECT_NE(h2.find("Error: target x: simulator cannot start"), std::string::npos);
  EXPECT_NE(h2.find(">no qualified capacity</td>"), std::string::npos);
  EXPECT_NE(h2.find("Generated 2026-12-02T12:00:00Z"), std::string::npos);
  EXPECT_EQ(h2.find("<pre id=\"plan-json\""), std::string::npos);
}

TEST(ReportHtmlEdgeTest, ClosedLoopQualifiedPointIsMarkedOnTheConcurrencyChart) {
  json doc = html_load("results-tiny.json");
  auto& t = doc["targets"][0];
  t["qualified"] = t["capacity"]["closed_loop"]["point"];
  t["qualified"]["basis"] = "closed_loop";
  const auto html = render_report_html(doc, {});
  const auto conc = chart(html, "throughput-vs-concurrency");
  EXPECT_EQ(html_count(conc, "class=\"mark qualified-point\""), 1u);
  EXPECT_NE(conc.find("data-x=\"8\""), std::string::npos);
  EXPECT_EQ(html_count(chart(html, "throughput-vs-rate"), "qualified-point"), 0u);
  EXPECT_NE(html.find(">client-bound steps present</span>"), std::string::npos);
}

}  // namespace
}  // namespace llmcap::api

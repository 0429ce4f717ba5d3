#include "api/report_tables.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "tests/test_paths.h"

namespace llmcap::api {
namespace {

using nlohmann::json;

json tables_load(const std::string& name) {
  std::ifstream in(std::string(LLMCAP_TEST_DATA_DIR) + "/" + name);
  EXPECT_TRUE(in.good()) << name;
  return json::parse(in);
}

std::vector<std::string> lines_of(const std::string& text, const std::string& eol) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (auto pos = text.find(eol); pos != std::string::npos; pos = text.find(eol, start)) {
    out.push_back(text.substr(start, pos - start));
    start = pos + eol.size();
  }
  EXPECT_EQ(start, text.size()) << "text must end with a line end";
  return out;
}

// Splits one RFC 4180 record (no embedded line ends needed here).
std::vector<std::string> csv_split(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

TEST(ReportTablesTest, CapacityRowOfTinySampleHasTheQualifiedFigures) {
  const auto rows = capacity_rows(tables_load("results-tiny.json"));
  ASSERT_EQ(rows.size(), 1u);
  const auto& r = rows[0];
  EXPECT_EQ(r.target, "a100");
  EXPECT_EQ(r.model, "llama-3.1-8b");
  EXPECT_EQ(r.precision, "bf16");
  EXPECT_TRUE(r.qualified);
  EXPECT_EQ(r.basis, "open_loop");
  EXPECT_NEAR(*r.offered_rate_rps, 29.4365, 1e-9);
  EXPECT_FALSE(r.concurrency);
  EXPECT_NEAR(*r.output_tokens_per_s, 855.7127, 1e-9);
  EXPECT_NEAR(*r.ttft_p95_ms, 79.5768, 1e-9);
  EXPECT_NEAR(*r.tpot_p95_ms, 20.9962, 1e-9);
  EXPECT_NEAR(*r.e2e_p95_ms, 683.6502, 1e-9);
  EXPECT_NEAR(*r.cost_per_million_output_tokens, 0.486923, 1e-6);
  EXPECT_EQ(r.price_per_hour, 1.5);
  EXPECT_EQ(lengths_text(r), "256 / 32");
  EXPECT_EQ(load_text(r), "29.44 rps");
  EXPECT_FALSE(r.memory_headroom_gb);
  EXPECT_EQ(r.labels,
            (std::vector<std::string>{"simulated", "same-config", "client-bound steps present"}));
}

TEST(ReportTablesTest, AFailedTargetShowsItsBestEvidenceUnpricedAndWhy) {
  // Issue 17: no confirm passed. The row shows the highest short-step pass as evidence
  // ("≥ R rps, not confirmed") with the achieved rate, never a cost, and the report says which
  // check failed where.
  json doc = tables_load("results-tiny.json");
  json& t = doc["targets"][0];
  json evidence = t["qualified"];
  evidence["basis"] = "open_loop";
  evidence["offered_rate_rps"] = 7.01;
  evidence["achieved_rate_rps"] = 6.93;
  evidence["cost_per_million_output_tokens"] = 1.23;  // must never be shown for evidence
  t["qualified"] = nullptr;
  t["best_evidence"] = evidence;
  t["insufficient_sample_steps"] = 1;
  t["verdict"] = {{"outcome", "fail"},
                  {"statement", "no qualified capacity: ttft_p95 failed at 7.38 rps (confirm)"}};
  doc["verdict"] = {{"outcome", "fail"}, {"statement", "a target failed its SLA"}};
  const auto rows = capacity_rows(doc);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_FALSE(rows[0].qualified);
  EXPECT_TRUE(rows[0].evidence_only);
  EXPECT_EQ(rows[0].verdict, "fail: no qualified capacity");
  EXPECT_FALSE(rows[0].cost_per_million_output_tokens);
  EXPECT_EQ(load_text(rows[0]), "≥ 7.01 rps (achieved 6.93), not confirmed");
  EXPECT_NE(std::find(rows[0].labels.begin(), rows[0].labels.end(), "insufficient-samples"),
            rows[0].labels.end());
  const auto md = render_markdown(doc);
  EXPECT_NE(md.find("- Verdict: **fail**"), std::string::npos) << md;
  EXPECT_NE(md.find("ttft_p95 failed at 7.38 rps (confirm)"), std::string::npos);
  EXPECT_EQ(md.find("1.2300"), std::string::npos);
}

TEST(ReportTablesTest, UnqualifiedTargetAndMemoryHeadroom) {
  json doc = tables_load("results-tiny.json");
  doc["targets"][0]["qualified"] = nullptr;
  doc["targets"][0]["memory_headroom_gb"] = 12.5;
  doc["comparison_label"] = "per-target optimised";
  doc["targets"][0]["client_bound_steps"] = 0;
  const auto rows = capacity_rows(doc);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_FALSE(rows[0].qualified);
  EXPECT_EQ(rows[0].verdict, "no qualified capacity");
  EXPECT_FALSE(rows[0].output_tokens_per_s);
  EXPECT_EQ(rows[0].memory_headroom_gb, 12.5);
  EXPECT_EQ(rows[0].labels, (std::vector<std::string>{"simulated", "per-target optimised"}));
  const auto md = render_markdown(doc);
  EXPECT_NE(md.find("| no qualified capacity |"), std::string::npos);
  EXPECT_NE(md.find("| 12.5 |"), std::string::npos);
}

TEST(ReportTablesTest, StepRowsCarryLoadsFiguresAndReasons) {
  const auto steps = step_rows(tables_load("results-tiny.json"));
  ASSERT_EQ(steps.size(), 2u + 4u);  // 2 sweep levels + 4 search steps
  EXPECT_EQ(steps[0].phase_kind, "concurrency_sweep");
  EXPECT_EQ(steps[0].concurrency, 1);
  EXPECT_FALSE(steps[0].offered_rate_rps);
  EXPECT_NEAR(*steps[0].output_tokens_per_s, 79.1162, 1e-9);
  EXPECT_EQ(steps[0].outcome, "pass");
  EXPECT_EQ(steps[0].reasons, (std::vector<std::string>{"all checks held"}));
  EXPECT_EQ(steps[2].phase_kind, "capacity_search");
  EXPECT_NEAR(*steps[2].offered_rate_rps, 14.71823250469356, 1e-9);
  bool some_failure_reason = false;
  for (const auto& s : steps) {
    if (s.outcome != "pass") {
      EXPECT_FALSE(s.reasons.empty()) << s.label;
      some_failure_reason = some_failure_reason || !s.reasons.empty();
    }
  }
  EXPECT_TRUE(some_failure_reason);
}

// A scale-out step with region labels (what plan_executor.cc stores under "regions").
json with_regions(json results) {
  json& step = results["targets"][0]["phases"][0]["steps"][0];
  step["regions"] = json::parse(R"({
    "eu-west": {"requests": 7, "ttft_ms": {"p50": 41, "p95": 60}, "tpot_ms": {"p50": 7.5,
                "p95": 8.25}, "e2e_ms": {"p50": 160, "p95": 190}},
    "us-east": {"requests": 5, "ttft_ms": {"p50": 120, "p95": 140}, "tpot_ms": {"p50": 7.6,
                "p95": 8.5}, "e2e_ms": {"p50": 240, "p95": 270}}})");
  return results;
}

TEST(ReportTablesTest, RegionLatencyBesideTheOverallFigure) {
  const json results = with_regions(tables_load("results-tiny.json"));
  const auto steps = step_rows(results);
  ASSERT_EQ(steps[0].regions.size(), 2u);
  EXPECT_TRUE(steps[1].regions.empty());
  EXPECT_TRUE(region_table(steps[1]).empty());
  const auto table = region_table(steps[0]);
  ASSERT_EQ(table.size(), 3u);
  EXPECT_EQ(table[0].region, "all regions");
  EXPECT_EQ(*table[0].requests, 12);
  EXPECT_EQ(table[0].ttft_p95_ms, steps[0].ttft_p95_ms);
  EXPECT_EQ(table[1].region, "eu-west");
  EXPECT_EQ(*table[2].e2e_p95_ms, 270);
  const std::string md = render_markdown(results);
  EXPECT_NE(md.find("## Client-side latency per region"), std::string::npos);
  EXPECT_NE(md.find("| us-east | 5 | 120 / 140 | 7.6 / 8.5 | 240 / 270 |"), std::string::npos)
      << md;
  EXPECT_EQ(render_markdown(tables_load("results-tiny.json")).find("per region"),
            std::string::npos);
}

TEST(ReportTablesTest, MixStepsHaveOneRowPerClass) {
  json results = tables_load("results-tiny.json");
  json& step = results["targets"][0]["phases"][0]["steps"][0];
  step["mix"] = json::parse(R"([
    {"name": "chat", "weight": 0.7, "share": 0.75, "input_tokens_mean": 256,
     "output_tokens_mean": 256,
     "stats": {"counts": {"intended": 9}, "ttft_ms": {"p50": 40, "p95": 90},
               "tpot_ms": {"p50": 20, "p95": 25.5}, "e2e_ms": {"p95": 6000},
               "error_rate": 0, "output_tokens_per_s": 100},
     "verdict": {"outcome": "pass", "reasons": []}},
    {"name": "rag", "weight": 0.3, "share": 0.25, "input_tokens_mean": 4000,
     "output_tokens_mean": 128,
     "stats": {"counts": {"intended": 3}, "ttft_ms": {"p50": 300, "p95": 800}},
     "verdict": {"outcome": "fail", "reasons": [{"status": "missed", "code": "ttft_p95",
                 "text": "ttft P95 800 ms > 600 ms limit"}]}}])");
  const auto steps = step_rows(results);
  ASSERT_EQ(steps[0].mix.size(), 2u);
  EXPECT_TRUE(steps[1].mix.empty());
  EXPECT_EQ(steps[0].mix[1].name, "rag");
  EXPECT_EQ(*steps[0].mix[1].requests, 3);
  EXPECT_EQ(steps[0].mix[1].reasons, std::vector<std::string>{"ttft P95 800 ms > 600 ms limit"});
  const std::string md = render_markdown(results);
  EXPECT_NE(md.find("## Workload mix: per-class results"), std::string::npos);
  EXPECT_NE(md.find("| rag | 30.00% / 25.00% | 3 | 4000 / 128 | - | 300 / 800 |"),
            std::string::npos)
      << md;
  EXPECT_EQ(render_markdown(tables_load("results-tiny.json")).find("per-class"), std::string::npos);
}

TEST(ReportTablesTest, ConversationStepsShowSessionsAndTtftByTurn) {
  json results = tables_load("results-tiny.json");
  json& step = results["targets"][0]["phases"][0]["steps"][0];
  step["conversation"] = json::parse(R"({
    "sessions_started": 16, "sessions_completed": 10, "sessions_failed": 1,
    "sessions_context_limit": 2, "sessions_cut": 3, "turns_per_session_mean": 3.25,
    "session_duration_s": {"p50": 12.5, "p95": 20.04, "mean": 13, "max": 22},
    "by_turn": [
      {"turn": 1, "requests": 16, "ok": 16, "ttft_p50_ms": 96, "ttft_p95_ms": 180,
       "input_tokens_mean": 512},
      {"turn": 2, "requests": 14, "ok": 14, "ttft_p50_ms": 45.4, "ttft_p95_ms": null,
       "input_tokens_mean": 704}]})");
  const auto steps = step_rows(results);
  ASSERT_TRUE(steps[0].conversation.has_value());
  EXPECT_FALSE(steps[1].conversation.has_value());
  const auto& c = *steps[0].conversation;
  EXPECT_EQ(*c.sessions_cut, 3);
  ASSERT_EQ(c.by_turn.size(), 2u);
  EXPECT_EQ(c.by_turn[1].turn, 2);
  EXPECT_FALSE(c.by_turn[1].ttft_p95_ms.has_value());
  const std::string md = render_markdown(results);
  EXPECT_NE(md.find("## Conversations: sessions and TTFT by turn"), std::string::npos);
  EXPECT_NE(md.find("| 16 / 10 / 1 / 2 / 3 | 3.25 | 12.5 / 20.0 | 96/180, 45/- | 512, 704 |"),
            std::string::npos)
      << md;
  EXPECT_EQ(render_markdown(tables_load("results-tiny.json")).find("Conversations"),
            std::string::npos);
}

TEST(ReportTablesTest, AWorkloadMatrixHasOneCapacityTablePerWorkload) {
  json results = tables_load("results-tiny.json");
  ASSERT_GE(results["targets"].size(), 1u);
  json a = results["targets"][0], b = results["targets"][0];
  a["name"] = "t@short";
  a["workload_name"] = "short";
  b["name"] = "t@long";
  b["workload_name"] = "long";
  results["targets"] = json::array({a, b});
  const auto rows = capacity_rows(results);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].workload, "short");
  EXPECT_EQ(rows[1].workload, "long");
  const std::string md = render_markdown(results);
  const auto first = md.find("### Workload `short`");
  const auto second = md.find("### Workload `long`");
  ASSERT_NE(first, std::string::npos) << md;
  ASSERT_NE(second, std::string::npos) << md;
  EXPECT_LT(md.find("| t@short |"), second);
  EXPECT_GT(md.find("| t@long |"), second);
  EXPECT_EQ(render_markdown(tables_load("results-tiny.json")).find("### Workload"),
            std::string::npos);
}

TEST(ReportTablesTest, MarkdownShapeAndEscaping) {
  json doc = tables_load("results-two-targets.json");
  doc["targets"][0]["name"] = "pipe|name";
  const auto md = render_markdown(doc);
  EXPECT_EQ(md.rfind("# Capacity report: two-targets\n", 0), 0u);
  for (const char* h : {"## Qualified capacity", "## Comparison (relative cost per output token)",
                        "## Demand plan", "## Steps"})
    EXPECT_NE(md.find(h), std::string::npos) << h;
  EXPECT_NE(md.find("| pipe\\|name |"), std::string::npos);
  EXPECT_NE(md.find("| a100-80g-pcie |"), std::string::npos);
  // Every table row has as many cells as its header.
  const auto lines = lines_of(md, "\n");
  std::size_t header_cells = 0;
  for (std::size_t i = 0; i + 1 < lines.size(); ++i) {
    auto cells = [](const std::string& l) {
      std::size_t n = 0;
      for (std::size_t k = 0; k < l.size(); ++k)
        if (l[k] == '|' && (k == 0 || l[k - 1] != '\\')) ++n;
      return n;
    };
    if (lines[i].empty() || lines[i][0] != '|') {
      header_cells = 0;
      continue;
    }
    if (header_cells == 0) {
      header_cells = cells(lines[i]);
      ASSERT_EQ(lines[i + 1].substr(0, 4), "|---") << lines[i];
    }
    EXPECT_EQ(cells(lines[i]), header_cells) << lines[i];
  }
}

TEST(ReportTablesTest, CapacityCsvIsRfc4180WithEveryTarget) {
  json doc = tables_load("results-two-targets.json");
  doc["targets"][1]["name"] = "a100, \"pcie\"";
  const auto csv = render_capacity_csv(doc);
  const auto lines = lines_of(csv, "\r\n");
  ASSERT_EQ(lines.size(), 1u + doc["targets"].size());
  const auto header = csv_split(lines[0]);
  EXPECT_EQ(header[1], "target");
  EXPECT_EQ(header[10], "output_tokens_per_s");
  EXPECT_EQ(header[18], "cost_per_million_output_tokens");
  for (std::size_t i = 1; i < lines.size(); ++i)
    EXPECT_EQ(csv_split(lines[i]).size(), header.size()) << lines[i];
  EXPECT_NE(lines[2].find("\"a100, \"\"pcie\"\"\""), std::string::npos);
  const auto row = csv_split(lines[2]);
  EXPECT_EQ(row[1], "a100, \"pcie\"");
  const auto& q = doc["targets"][1]["qualified"];
  ASSERT_TRUE(q.is_object());
  EXPECT_NEAR(std::stod(row[10]), q["output_tokens_per_s"].get<double>(), 1e-4);
  EXPECT_NEAR(std::stod(row[18]), q["cost_per_million_output_tokens"].get<double>(), 1e-4);
  EXPECT_EQ(csv_split(lines[1])[1], "rtx4090-48g");
}

// A job's own results document names its job at the top (job_id): every row of the capacity
// CSV carries it (`llmcapd report --format csv` left the column empty); a combined (compare)
// document's per-target job_id wins.
TEST(ReportTablesTest, CapacityCsvJobIdFromTheResultsDocument) {
  json doc = tables_load("results-two-targets.json");
  doc["job_id"] = "job_01TESTCSVJOBID0000000000";
  auto lines = lines_of(render_capacity_csv(doc), "\r\n");
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(csv_split(lines[0])[0], "job_id");
  EXPECT_EQ(csv_split(lines[1])[0], "job_01TESTCSVJOBID0000000000");
  EXPECT_EQ(csv_split(lines[2])[0], "job_01TESTCSVJOBID0000000000");
  doc["targets"][1]["job_id"] = "job_01OTHER";
  lines = lines_of(render_capacity_csv(doc), "\r\n");
  EXPECT_EQ(csv_split(lines[1])[0], "job_01TESTCSVJOBID0000000000");
  EXPECT_EQ(csv_split(lines[2])[0], "job_01OTHER");
  doc.erase("job_id");  // a document without one (written by hand): empty, never invented
  doc["targets"][1].erase("job_id");
  lines = lines_of(render_capacity_csv(doc), "\r\n");
  EXPECT_EQ(csv_split(lines[1])[0], "");
}

TEST(ReportTablesTest, StepsCsvHasOneLinePerStep) {
  const auto doc = tables_load("results-two-targets.json");
  const auto csv = render_steps_csv(doc);
  const auto lines = lines_of(csv, "\r\n");
  EXPECT_EQ(lines.size(), 1u + step_rows(doc).size());
  EXPECT_GT(lines.size(), 10u);
}

TEST(ReportTablesTest, GoodputOfEveryStepAndOfTheQualifiedPoint) {
  json doc = tables_load("results-two-targets.json");
  // The a100's point was measured in the 16.26 rps search step, the 4090's in its soak (the last
  // step at its rate with its figures).
  doc["targets"][1]["phases"][2]["steps"][3]["stats"]["sla_attainment"] = 0.926;
  const auto rows = capacity_rows(doc);
  ASSERT_EQ(rows.size(), 2u);
  ASSERT_TRUE(rows[0].goodput_rps && rows[1].goodput_rps);
  EXPECT_DOUBLE_EQ(*rows[0].goodput_rps, 1.8333);
  EXPECT_DOUBLE_EQ(*rows[1].goodput_rps, 15.8);
  EXPECT_DOUBLE_EQ(*rows[1].sla_attainment, 0.926);
  EXPECT_EQ(goodput_text(rows[1].goodput_rps, rows[1].sla_attainment), "15.80 (93% met SLO)");
  EXPECT_EQ(goodput_text(std::nullopt, 0.5), "-");
  // No step with the point's figures (a hand-made document): no goodput, never a guess.
  doc["targets"][1]["qualified"]["output_tokens_per_s"] = 1.0;
  EXPECT_FALSE(capacity_rows(doc)[1].goodput_rps);

  const auto steps = step_rows(doc);
  ASSERT_FALSE(steps.empty());
  for (const auto& s : steps) EXPECT_TRUE(s.goodput_rps) << s.label;
  const auto md = render_markdown(doc);
  EXPECT_NE(md.find("| Goodput req/s |"), std::string::npos);
  EXPECT_NE(md.find("| 1.83 (100% met SLO) |"), std::string::npos);
  const auto cap_header = csv_split(lines_of(render_capacity_csv(doc), "\r\n")[0]);
  EXPECT_EQ(cap_header[cap_header.size() - 2], "goodput_rps");
  const auto step_lines = lines_of(render_steps_csv(doc), "\r\n");
  const auto step_header = csv_split(step_lines[0]);
  EXPECT_EQ(step_header[step_header.size() - 2], "goodput_rps");
  EXPECT_EQ(csv_split(step_lines[1]).back(), "1");  // sla_attainment of the first step
}

TEST(ReportTablesTest, CsvFieldQuoting) {
  EXPECT_EQ(csv_field("plain"), "plain");
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(csv_field(""), "");
}

TEST(ReportTablesTest, DemandRowsOfTwoTargets) {
  const auto doc = tables_load("results-two-targets.json");
  const auto rows = demand_rows(doc);
  ASSERT_EQ(rows.size(), 2u);
  int cheapest = 0;
  for (const auto& r : rows) cheapest += r.cheapest;
  EXPECT_EQ(cheapest, 1);
  EXPECT_EQ(rows[0].target, "rtx4090-48g");
  EXPECT_EQ(rows[1].target, "a100-80g-pcie");
}

}  // namespace
}  // namespace llmcap::api

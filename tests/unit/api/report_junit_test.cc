#include "api/report_junit.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "api/report_format.h"
#include "tests/test_paths.h"

namespace llmcap::api {
namespace {

using nlohmann::json;

std::size_t junit_count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1))
    ++n;
  return n;
}

// The <testcase name="NAME" ...> element of suite `suite`, up to its end ("" when absent).
std::string test_case(const std::string& xml, const std::string& suite, const std::string& name) {
  const auto suite_at = xml.find("<testsuite name=\"" + suite + "\"");
  if (suite_at == std::string::npos) return "";
  const auto suite_end = xml.find("</testsuite>", suite_at);
  const auto at = xml.find("<testcase name=\"" + name + "\"", suite_at);
  if (at == std::string::npos || at > suite_end) return "";
  const auto self_closed = xml.find("/>\n", at);
  const auto open_end = xml.find(">\n", at);
  if (self_closed != std::string::npos && self_closed < open_end)
    return xml.substr(at, self_closed + 2 - at);
  return xml.substr(at, xml.find("</testcase>", at) + 11 - at);
}

json reason(const std::string& check, const std::string& code, const std::string& status,
            const std::string& text) {
  return json{{"check", check}, {"code", code}, {"status", status}, {"text", text}};
}

// Every check of an open-loop step that held, with the verdict code's texts.
json held_reasons() {
  return json::array({
      reason("bound", "ttft_p95", "held", "ttft P95 (from intended) 210.4 ms ≤ 1000.0 ms limit"),
      reason("bound", "tpot_p95", "held", "tpot P95 31.8 ms ≤ 35.0 ms limit"),
      reason("error_rate", "error_rate", "held", "error rate 0.0000 ≤ 0.0100 limit"),
      reason("send_rate", "send_rate", "held", "send rate 3.98 rps ≥ 3.80 rps required"),
      reason("target_clock", "target_clock", "not_applicable",
             "target clock: not a simulated target"),
      reason("sample_count", "sample_count", "held",
             "requests intended in the window 320 ≥ 100 required"),
  });
}

json step(const std::string& label, double rate_rps, double window_s, const std::string& outcome,
          json reasons, double requests_per_s = 3.9, double output_tokens_per_s = 1000) {
  return json{{"label", label},
              {"phase", "capacity_search"},
              {"params", {{"rate_rps", rate_rps}}},
              {"stats",
               {{"window_s", window_s},
                {"requests_per_s", requests_per_s},
                {"output_tokens_per_s", output_tokens_per_s}}},
              {"verdict", {{"outcome", outcome}, {"reasons", std::move(reasons)}}}};
}

json point(double rate_rps, double requests_per_s, double output_tokens_per_s) {
  return json{{"basis", "open_loop"},
              {"offered_rate_rps", rate_rps},
              {"achieved_rate_rps", 3.98},
              {"requests_per_s", requests_per_s},
              {"output_tokens_per_s", output_tokens_per_s},
              {"ttft_ms", {{"p95", 210.4}}},
              {"tpot_ms", {{"p95", 31.8}}}};
}

json target(const std::string& name, const std::string& outcome, const std::string& statement,
            json steps) {
  return json{{"name", name},
              {"model", "llama-3.1-8b"},
              {"verdict",
               {{"outcome", outcome},
                {"basis", "open_loop"},
                {"statement", statement},
                {"failures", json::array()}}},
              {"phases", json::array({json{{"name", "capacity_search"},
                                           {"kind", "capacity_search"},
                                           {"steps", std::move(steps)}}})}};
}

// A target that qualified at 4 rps: a short fail at 8 rps, a short pass and the confirm at 4.
json passing_target(const std::string& name) {
  json failed = held_reasons();
  failed[1] = reason("bound", "tpot_p95", "missed", "tpot P95 52.0 ms > 35.0 ms limit");
  json t = target(name, "pass", "highest confirmed open-loop level of 3 steps",
                  json::array({step("8.00 rps", 8, 30, "fail", failed, 7.5, 1900),
                               step("4.00 rps", 4, 30, "pass", held_reasons(), 3.95, 1010),
                               step("confirm 4.00 rps", 4, 60, "pass", held_reasons())}));
  t["qualified"] = point(4, 3.9, 1000);
  return t;
}

// A target whose SLA failed at 4, 2 and 3 rps (in that order; 1 rps could not be judged): the
// lowest failed level tells, not the last.
json failing_target() {
  json at_4 = held_reasons();
  at_4[1] = reason("bound", "tpot_p95", "missed", "tpot P95 61.0 ms > 35.0 ms limit");
  json at_2 = held_reasons();
  at_2[1] = reason("bound", "tpot_p95", "missed", "tpot P95 47.1 ms > 35.0 ms limit");
  at_2[3] = reason("send_rate", "send_rate", "missed", "send rate 1.50 rps < 1.80 rps required");
  at_2.push_back(reason("bound", "e2e_p99", "not_evaluated", "e2e P99: no data in the window"));
  json at_3 = held_reasons();
  at_3[1] = reason("bound", "tpot_p95", "missed", "tpot P95 52.5 ms > 35.0 ms limit");
  json at_1 = held_reasons();
  at_1[3] = reason("send_rate", "send_rate", "missed", "send rate 0.70 rps < 0.90 rps required");
  json t = target(
      "slow", "fail",
      "no qualified capacity: the SLA failed at every level tried: tpot_p95 failed "
      "at 4.00 rps; tpot_p95 failed at 2.00 rps; tpot_p95 failed at 3.00 rps",
      json::array({step("4.00 rps", 4, 30, "fail", at_4), step("2.00 rps", 2, 40, "fail", at_2),
                   step("3.00 rps", 3, 30, "fail", at_3),
                   step("1.00 rps", 1, 20, "inconclusive", at_1)}));
  t["verdict"]["failures"] =
      json::array({json{{"rate_rps", 4.0}, {"checks", {"tpot_p95"}}, {"confirming", false}},
                   json{{"rate_rps", 2.0}, {"checks", {"tpot_p95"}}, {"confirming", false}},
                   json{{"rate_rps", 3.0}, {"checks", {"tpot_p95"}}, {"confirming", false}}});
  return t;
}

// Short passes at 3 rps, the confirm there failed: inconclusive, best evidence 3 rps.
json inconclusive_target() {
  json confirm = held_reasons();
  confirm[1] = reason("bound", "tpot_p95", "missed", "tpot P95 36.2 ms > 35.0 ms limit");
  json t =
      target("edge", "inconclusive", "no confirmed rate: tpot_p95 failed at 3.00 rps (confirm)",
             json::array({step("3.00 rps", 3, 30, "pass", held_reasons(), 2.9, 700),
                          step("confirm 3.00 rps", 3, 60, "fail", confirm, 2.95, 720)}));
  t["verdict"]["failures"] =
      json::array({json{{"rate_rps", 3.0}, {"checks", {"tpot_p95"}}, {"confirming", true}}});
  t["best_evidence"] = point(3, 2.9, 700);
  return t;
}

json document(json targets) {
  return json{{"plan", "ci-gate"}, {"state", "succeeded"}, {"targets", std::move(targets)}};
}

TEST(ReportJunitTest, PassingTargetHasOneCasePerApplicableCheckAndTheVerdict) {
  const std::string xml = render_junit(document(json::array({passing_target("a100")})));
  EXPECT_EQ(xml.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites", 0), 0u) << xml;
  // 5 applicable checks (target_clock does not apply) + qualified_capacity.
  EXPECT_NE(xml.find("<testsuite name=\"a100\" tests=\"6\" failures=\"0\" errors=\"0\" "
                     "skipped=\"0\" time=\"120.000\">"),
            std::string::npos)
      << xml;
  EXPECT_EQ(test_case(xml, "a100", "target_clock"), "");
  // The checks of the confirm (60 s window), not of the failed short step at 8 rps.
  const std::string tpot = test_case(xml, "a100", "tpot_p95");
  EXPECT_NE(tpot.find("classname=\"a100\" time=\"60.000\""), std::string::npos) << tpot;
  EXPECT_NE(tpot.find("<system-out>tpot P95 31.8 ms ≤ 35.0 ms limit at confirm 4.00 rps "
                      "(capacity_search)</system-out>"),
            std::string::npos)
      << tpot;
  EXPECT_EQ(tpot.find("<failure"), std::string::npos);
  const std::string verdict = test_case(xml, "a100", "qualified_capacity");
  EXPECT_NE(verdict.find("time=\"120.000\""), std::string::npos) << verdict;
  EXPECT_NE(verdict.find("qualified capacity 4.00 rps (achieved 3.98): 1000.0 output tok/s, "
                         "3.90 req/s (highest confirmed open-loop level of 3 steps)"),
            std::string::npos)
      << verdict;
  EXPECT_EQ(junit_count(xml, "<failure"), 0u);
  EXPECT_EQ(junit_count(xml, "<skipped"), 0u);
}

TEST(ReportJunitTest, FailedCheckCarriesValueBoundAndLoadOfTheLowestFailedLevel) {
  const std::string xml = render_junit(document(json::array({failing_target()})));
  const std::string tpot = test_case(xml, "slow", "tpot_p95");
  EXPECT_NE(tpot.find("<failure message=\"tpot P95 47.1 ms &gt; 35.0 ms limit at 2.00 rps "
                      "(capacity_search)\" type=\"sla\">"),
            std::string::npos)
      << xml;
  EXPECT_NE(tpot.find("time=\"40.000\""), std::string::npos) << tpot;
  // A client-side miss in the same step says the load generator was short, not the server.
  const std::string send = test_case(xml, "slow", "send_rate");
  EXPECT_NE(send.find("<skipped message=\"send rate 1.50 rps &lt; 1.80 rps required at 2.00 rps "
                      "(capacity_search): the load generator was the bottleneck"),
            std::string::npos)
      << send;
  EXPECT_NE(test_case(xml, "slow", "e2e_p99").find("<skipped message=\"e2e P99: no data"),
            std::string::npos);
  EXPECT_NE(test_case(xml, "slow", "ttft_p95")
                .find("<system-out>ttft P95 (from intended) 210.4 ms ≤ 1000.0 ms limit at 2.00 "
                      "rps (capacity_search)</system-out>"),
            std::string::npos);
  const std::string verdict = test_case(xml, "slow", "qualified_capacity");
  EXPECT_NE(verdict.find("<failure message=\"FAIL: no qualified capacity: the SLA failed at "
                         "every level tried: tpot_p95 failed at 4.00 rps; tpot_p95 failed at "
                         "2.00 rps; tpot_p95 failed at 3.00 rps\" type=\"sla\">"),
            std::string::npos)
      << verdict;
  // ttft, tpot, error_rate, send_rate, sample_count, e2e_p99 + qualified_capacity.
  EXPECT_NE(xml.find("<testsuite name=\"slow\" tests=\"7\" failures=\"2\" errors=\"0\" "
                     "skipped=\"2\" time=\"120.000\">"),
            std::string::npos)
      << xml;
}

TEST(ReportJunitTest, InconclusiveIsSkippedNeverFailed) {
  const std::string xml = render_junit(document(json::array({inconclusive_target()})));
  EXPECT_EQ(junit_count(xml, "<failure"), 0u) << xml;
  const std::string verdict = test_case(xml, "edge", "qualified_capacity");
  EXPECT_NE(verdict.find("<skipped message=\"INCONCLUSIVE: no confirmed rate: tpot_p95 failed "
                         "at 3.00 rps (confirm)\"/>"),
            std::string::npos)
      << verdict;
  // The checks of the best evidence: the short pass at 3 rps (30 s), all held.
  EXPECT_NE(test_case(xml, "edge", "tpot_p95").find("time=\"30.000\""), std::string::npos);
  EXPECT_NE(xml.find("tests=\"6\" failures=\"0\" errors=\"0\" skipped=\"1\""), std::string::npos);
}

TEST(ReportJunitTest, MissesOfAnInconclusiveTargetAreSkippedEvenInAFailedStep) {
  // No best evidence and no inconclusive step: the checks come from the failed step, but the
  // verdict says the SLA may hold below it, so its misses do not fail the report.
  json failed = held_reasons();
  failed[1] = reason("bound", "tpot_p95", "missed", "tpot P95 40.2 ms > 35.0 ms limit");
  json t = target("open", "inconclusive",
                  "no qualified capacity: tpot_p95 failed at 6.00 rps; lower levels were not tried",
                  json::array({step("6.00 rps", 6, 30, "fail", failed)}));
  t["verdict"]["failures"] =
      json::array({json{{"rate_rps", 6.0}, {"checks", {"tpot_p95"}}, {"confirming", false}}});
  const std::string xml = render_junit(document(json::array({t})));
  EXPECT_EQ(junit_count(xml, "<failure"), 0u) << xml;
  EXPECT_NE(test_case(xml, "open", "tpot_p95")
                .find("<skipped message=\"tpot P95 40.2 ms &gt; 35.0 ms limit at 6.00 rps "
                      "(capacity_search): the target&#39;s verdict is inconclusive\"/>"),
            std::string::npos)
      << xml;
}

TEST(ReportJunitTest, TotalsSumTheSuitesAndATargetWithoutVerdictIsAnError) {
  json no_verdict = json{{"name", "broken"}, {"phases", json::array()}};
  const std::string xml = render_junit(document(
      json::array({passing_target("a100"), failing_target(), inconclusive_target(), no_verdict})));
  EXPECT_NE(xml.find("<testsuites name=\"llmcap: ci-gate\" tests=\"20\" failures=\"2\" "
                     "errors=\"1\" skipped=\"3\" time=\"330.000\">"),
            std::string::npos)
      << xml;
  EXPECT_EQ(junit_count(xml, "<testsuite name="), 4u);
  EXPECT_NE(test_case(xml, "broken", "qualified_capacity")
                .find("<error message=\"no verdict for this target (job state succeeded)\" "
                      "type=\"no_verdict\">"),
            std::string::npos)
      << xml;
  EXPECT_EQ(xml.substr(xml.size() - 14), "</testsuites>\n");
}

TEST(ReportJunitTest, OlderDocumentWithoutTargetVerdictsStillReportsItsCapacity) {
  std::ifstream in(std::string(LLMCAP_TEST_DATA_DIR) + "/results-two-targets.json");
  const std::string xml = render_junit(json::parse(in));
  EXPECT_EQ(junit_count(xml, "<testsuite name="), 2u);
  EXPECT_NE(test_case(xml, "rtx4090-48g", "qualified_capacity").find("qualified capacity"),
            std::string::npos)
      << xml;
  EXPECT_EQ(junit_count(xml, "<failure"), 0u);
}

TEST(ReportJunitTest, EscapesMarkupQuotesAndControlCharacters) {
  EXPECT_EQ(xml_escape("<a href=\"x\">Tom & Jerry's</a>"),
            "&lt;a href=&quot;x&quot;&gt;Tom &amp; Jerry&#39;s&lt;/a&gt;");
  // Tab, LF and CR survive attribute normalisation as references; other C0 characters are not
  // XML 1.0 characters at all.
  EXPECT_EQ(xml_escape(std::string("a\tb\nc\rd\x01"
                                   "e\x1f"
                                   "f\0g",
                                   13)),
            "a&#9;b&#10;c&#13;d\uFFFDe\uFFFDf\uFFFDg");
  // Well-formed UTF-8 stays; U+FFFE, a stray continuation byte, a truncated sequence, an overlong
  // form and a surrogate are each replaced.
  EXPECT_EQ(xml_escape("≤ 35 ms, 日本, 😀"), "≤ 35 ms, 日本, 😀");
  EXPECT_EQ(xml_escape("<\xEF\xBF\xBE\xEF\xBF\xBF>"), "&lt;\uFFFD\uFFFD&gt;");
  EXPECT_EQ(xml_escape("x\x80y"), "x\uFFFDy");
  EXPECT_EQ(xml_escape("\xE2\x89"), "\uFFFD\uFFFD");
  EXPECT_EQ(xml_escape("\xC0\xAF"), "\uFFFD\uFFFD");
  EXPECT_EQ(xml_escape("\xED\xA0\x80"), "\uFFFD\uFFFD\uFFFD");

  json t = passing_target(std::string("a<b>&\"c'\x07\n", 10));
  t["verdict"]["statement"] = "held <all> & \"more\"";
  const std::string xml = render_junit(document(json::array({t})));
  EXPECT_NE(xml.find("<testsuite name=\"a&lt;b&gt;&amp;&quot;c&#39;\uFFFD&#10;\""),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("(held &lt;all&gt; &amp; &quot;more&quot;)</system-out>"), std::string::npos);
  for (const char c : xml) {
    const auto byte = static_cast<unsigned char>(c);
    EXPECT_TRUE(byte >= 0x20 || c == '\n') << "raw control character " << int(byte);
  }
}

}  // namespace
}  // namespace llmcap::api

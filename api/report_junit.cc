#include "api/report_junit.h"

#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "api/prediction_check.h"
#include "api/report_format.h"
#include "api/report_tables.h"

namespace llmcap::api {

using nlohmann::json;

namespace {

// What a test case ends as; `message` goes into the element's attribute, `detail` into its text.
enum class CaseResult { kPassed, kFailure, kSkipped, kError };

struct TestCase {
  std::string name;
  double time_s = 0;
  CaseResult result = CaseResult::kPassed;
  std::string type;  // of a failure or error
  std::string message;
  std::string detail;
  std::string system_out;  // a passed qualified_capacity: the capacity found
};

struct TestSuite {
  std::string name;
  double time_s = 0;
  std::vector<std::pair<std::string, std::string>> properties;
  std::vector<TestCase> cases;
};

const json& steps_of(const json& phase) {
  static const json kEmpty = json::array();
  const auto& steps = json_member(phase, "steps");
  return steps.is_array() ? steps : kEmpty;
}

template <typename Visit>
void for_each_step(const json& target, Visit visit) {
  const auto& phases = json_member(target, "phases");
  if (!phases.is_array()) return;
  for (const auto& p : phases)
    for (const auto& s : steps_of(p)) visit(s);
}

std::string step_outcome(const json& step) {
  return json_string(json_member(step, "verdict"), "outcome");
}

double window_s(const json& step) {
  return json_number(json_member(step, "stats"), "window_s").value_or(0);
}

// The load of a step on the verdict's basis: its planned rate (open loop) or concurrency.
std::optional<double> step_load(const json& step, bool closed_loop) {
  return json_number(json_member(step, "params"), closed_loop ? "concurrency" : "rate_rps");
}

// The step with `outcome` at the lowest level of the target verdict's basis (its planned rate,
// or concurrency for a closed-loop basis); with `failed_levels_only`, only the levels the
// verdict's `failures` name (a fail's basis). Null when none matches.
const json* lowest_step(const json& target, const std::string& outcome, bool failed_levels_only) {
  const auto& verdict = json_member(target, "verdict");
  const bool closed = json_string(verdict, "basis") == "closed_loop";
  std::vector<double> failed_levels;
  if (const auto& failures = json_member(verdict, "failures"); failures.is_array()) {
    for (const auto& f : failures)
      if (auto level = json_number(f, closed ? "concurrency" : "rate_rps"))
        failed_levels.push_back(*level);
  }
  const auto named = [&](double level) {
    for (const double failed : failed_levels)  // `failures` round the rate to 4 decimals
      if (std::fabs(failed - level) <= 1e-3 * std::max(1.0, level)) return true;
    return false;
  };
  const json* lowest = nullptr;
  double lowest_level = std::numeric_limits<double>::infinity();
  for_each_step(target, [&](const json& step) {
    const auto level = step_load(step, closed);
    if (!level || step_outcome(step) != outcome || *level >= lowest_level) return;
    if (failed_levels_only && !named(*level)) return;
    lowest = &step;
    lowest_level = *level;
  });
  return lowest;
}

// The step the target's verdict rests on (report_junit.h); null when there is none.
const json* decisive_step(const json& target, const CapacityRow& row) {
  if (row.qualified) return step_of_point(target, json_member(target, "qualified"));
  if (row.outcome == "fail") return lowest_step(target, "fail", true);
  if (row.evidence_only) {
    if (const json* step = step_of_point(target, json_member(target, "best_evidence"))) return step;
  }
  if (const json* step = lowest_step(target, "inconclusive", false)) return step;
  return lowest_step(target, "fail", true);
}

bool is_server_side(const std::string& check) {
  return check == "bound" || check == "error_rate" || check == "incomplete_rate" ||
         check == "completion_rate" || check == "backlog";
}

// " at confirm 5.35 rps (capacity_search)": where a check was judged.
std::string where(const json& step) {
  const std::string label = json_string(step, "label");
  const std::string phase_name = json_string(step, "phase");
  std::string out =
      " at " + (label.empty() ? std::string("step ") + std::to_string(static_cast<long long>(
                                                           json_number(step, "step").value_or(0)))
                              : label);
  if (!phase_name.empty()) out += " (" + phase_name + ")";
  return out;
}

// One test case per check of `step` that applies there.
void add_check_cases(const json& step, const CapacityRow& row, std::vector<TestCase>& cases) {
  const auto& verdict = json_member(step, "verdict");
  const auto& reasons = json_member(verdict, "reasons");
  if (!reasons.is_array()) return;
  const std::string outcome = json_string(verdict, "outcome");
  const bool client_bound =
      json_member(step, "client_bound").is_boolean() && step["client_bound"].get<bool>();
  for (const auto& reason : reasons) {
    const std::string status = json_string(reason, "status");
    if (status == "not_applicable") continue;
    const std::string check = json_string(reason, "check");
    TestCase c;
    c.name = json_string(reason, "code", check);
    c.time_s = window_s(step);
    const std::string text = json_string(reason, "text", c.name) + where(step);
    if (status == "missed" && row.outcome == "fail" && outcome == "fail" && is_server_side(check)) {
      c.result = CaseResult::kFailure;
      c.type = "sla";
      c.message = text;
      c.detail = "target verdict: " + row.statement;
    } else if (status == "missed") {
      // Not a failure of the server: the step could not be judged, or the target's verdict is
      // inconclusive (a level above may fail while the SLA holds lower down, unconfirmed).
      c.result = CaseResult::kSkipped;
      c.message = text + (check == "sample_count" ? ": too few requests, the step is inconclusive"
                          : !is_server_side(check)
                              ? ": the load generator was the bottleneck, the step is inconclusive"
                          : client_bound ? ": not trusted, the step is client-bound (inconclusive)"
                                         : ": the target's verdict is inconclusive");
    } else if (status == "not_evaluated") {
      c.result = CaseResult::kSkipped;
      c.message = text;
    } else if (status == "held") {
      c.system_out = text;
    } else {
      continue;
    }
    cases.push_back(std::move(c));
  }
}

TestCase verdict_case(const CapacityRow& row, double time_s, const std::string& state) {
  TestCase c;
  c.name = "qualified_capacity";
  c.time_s = time_s;
  if (row.outcome == "pass" || (row.outcome.empty() && row.qualified)) {
    c.system_out = "qualified capacity " + load_text(row) + ": " +
                   (row.output_tokens_per_s ? format_fixed(*row.output_tokens_per_s, 1) : "-") +
                   " output tok/s, " +
                   (row.requests_per_s ? format_fixed(*row.requests_per_s, 2) : "-") + " req/s";
    if (!row.statement.empty()) c.system_out += " (" + row.statement + ")";
  } else if (row.outcome == "fail") {
    c.result = CaseResult::kFailure;
    c.type = "sla";
    c.message = "FAIL: " + (row.statement.empty() ? row.verdict : row.statement);
  } else if (row.outcome == "inconclusive") {
    c.result = CaseResult::kSkipped;
    c.message = "INCONCLUSIVE: " + (row.statement.empty() ? row.verdict : row.statement);
  } else {
    c.result = CaseResult::kError;
    c.type = "no_verdict";
    c.message =
        "no verdict for this target (job state " + (state.empty() ? "unknown" : state) + ")";
  }
  return c;
}

std::string seconds(double s) { return format_fixed(std::max(0.0, s), 3); }

struct Totals {
  int tests = 0, failures = 0, errors = 0, skipped = 0;
  void add(const TestCase& c) {
    ++tests;
    failures += c.result == CaseResult::kFailure;
    errors += c.result == CaseResult::kError;
    skipped += c.result == CaseResult::kSkipped;
  }
  std::string attributes() const {
    return " tests=\"" + std::to_string(tests) + "\" failures=\"" + std::to_string(failures) +
           "\" errors=\"" + std::to_string(errors) + "\" skipped=\"" + std::to_string(skipped) +
           "\"";
  }
};

std::string attribute(std::string_view name, std::string_view value) {
  return " " + std::string(name) + "=\"" + xml_escape(value) + "\"";
}

std::string render_case(const TestCase& c, const std::string& classname) {
  std::string out = "    <testcase" + attribute("name", c.name) +
                    attribute("classname", classname) + attribute("time", seconds(c.time_s));
  std::string body;
  switch (c.result) {
    case CaseResult::kPassed: break;
    case CaseResult::kFailure:
    case CaseResult::kError: {
      const char* element = c.result == CaseResult::kFailure ? "failure" : "error";
      body = "      <" + std::string(element) + attribute("message", c.message) +
             attribute("type", c.type) + ">" + xml_escape(c.detail.empty() ? c.message : c.detail) +
             "</" + element + ">\n";
      break;
    }
    case CaseResult::kSkipped: body = "      <skipped" + attribute("message", c.message) + "/>\n";
  }
  if (!c.system_out.empty())
    body += "      <system-out>" + xml_escape(c.system_out) + "</system-out>\n";
  if (body.empty()) return out + "/>\n";
  return out + ">\n" + body + "    </testcase>\n";
}

}  // namespace

std::string render_junit(const json& results) {
  const std::string state = json_string(results, "state");
  const auto rows = capacity_rows(results);
  const auto& targets = json_member(results, "targets");
  std::vector<TestSuite> suites;
  for (std::size_t i = 0; i < rows.size() && targets.is_array() && i < targets.size(); ++i) {
    const json& target = targets[i];
    const CapacityRow& row = rows[i];
    TestSuite suite;
    suite.name = row.workload.empty() ? row.target : row.target + " [" + row.workload + "]";
    for_each_step(target, [&](const json& step) { suite.time_s += window_s(step); });
    if (!row.job_id.empty()) suite.properties.emplace_back("job_id", row.job_id);
    if (!row.model.empty()) suite.properties.emplace_back("model", row.model);
    suite.properties.emplace_back("verdict", row.outcome.empty() ? row.verdict : row.outcome);
    if (!row.labels.empty()) {
      std::string labels;
      for (const auto& l : row.labels) labels += (labels.empty() ? "" : ", ") + l;
      suite.properties.emplace_back("labels", labels);
    }
    if (const json* step = decisive_step(target, row)) add_check_cases(*step, row, suite.cases);
    suite.cases.push_back(verdict_case(row, suite.time_s, state));
    suites.push_back(std::move(suite));
  }

  Totals all;
  double all_time_s = 0;
  std::string body;
  for (const auto& suite : suites) {
    Totals totals;
    for (const auto& c : suite.cases) {
      totals.add(c);
      all.add(c);
    }
    all_time_s += suite.time_s;
    body += "  <testsuite" + attribute("name", suite.name) + totals.attributes() +
            attribute("time", seconds(suite.time_s)) + ">\n";
    if (!suite.properties.empty()) {
      body += "    <properties>\n";
      for (const auto& [name, value] : suite.properties)
        body += "      <property" + attribute("name", name) + attribute("value", value) + "/>\n";
      body += "    </properties>\n";
    }
    for (const auto& c : suite.cases) body += render_case(c, suite.name);
    body += "  </testsuite>\n";
  }
  const std::string plan = json_string(results, "plan", "(unnamed plan)");
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites" +
         attribute("name",
                   std::string(is_predicted(results) ? "llmcap prediction: " : "llmcap: ") + plan) +
         all.attributes() + attribute("time", seconds(all_time_s)) + ">\n" + body +
         "</testsuites>\n";
}

}  // namespace llmcap::api

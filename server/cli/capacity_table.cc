#include "server/cli/capacity_table.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>

#include "api/at_demand.h"
#include "api/prediction_check.h"
#include "api/report_format.h"
#include "api/report_tables.h"
#include "server/engine/catalog_plan.h"

namespace llmcap::server {

using nlohmann::json;

namespace {

std::string fixed_or_dash(const std::optional<double>& v, int decimals, const char* suffix = "") {
  return v ? api::format_fixed(*v, decimals) + suffix : std::string("-");
}

std::string money(const std::optional<double>& v, int decimals, const std::string& currency) {
  return v ? api::format_fixed(*v, decimals) + " " + currency : std::string("-");
}

std::string verdict_word(const api::CapacityRow& r) {
  const std::string& o = r.outcome.empty() ? (r.qualified ? "pass" : "fail") : r.outcome;
  return o == "pass" ? "PASS" : o == "fail" ? "FAIL" : "INCONCLUSIVE";
}

std::string join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

}  // namespace

std::string at_demand_text(const json& results) {
  std::string out;
  char line[512];
  for (const auto& t : api::at_demand_tables(results)) {
    out += "at equal load (" + api::at_demand_title(t) + "): " + api::at_demand_load_text(t) +
           api::at_demand_equal_text(t) + "\n";
    std::snprintf(line, sizeof line, "  %-16s %8s %8s %10s %9s %9s %9s %6s %7s %9s %9s  %s\n",
                  "target", "offered", "achieved", "out tok/s", "P95 TTFT", "P95 TPOT", "P95 E2E",
                  "err%", "KV peak", "KV free", "headroom", "verdict");
    out += line;
    for (const auto& r : t.rows) {
      std::snprintf(
          line, sizeof line, "  %-16s %8s %8s %10s %9s %9s %9s %6s %7s %9s %9s  %s\n",
          r.target.c_str(), fixed_or_dash(r.offered_rate_rps, 2).c_str(),
          fixed_or_dash(r.achieved_rate_rps, 2).c_str(),
          fixed_or_dash(r.output_tokens_per_s, 1).c_str(),
          fixed_or_dash(r.ttft_p95_ms, 0, "ms").c_str(),
          fixed_or_dash(r.tpot_p95_ms, 1, "ms").c_str(),
          fixed_or_dash(r.e2e_p95_ms, 0, "ms").c_str(),
          r.error_rate ? api::format_fixed(*r.error_rate * 100, 2).c_str() : "-",
          r.kv_cache_usage_max ? (api::format_fixed(*r.kv_cache_usage_max * 100, 0) + "%").c_str()
                               : "-",
          fixed_or_dash(r.memory_headroom_gib, 1, "GiB").c_str(),
          r.capacity_headroom ? ("x" + api::format_fixed(*r.capacity_headroom, 2)).c_str() : "-",
          api::at_demand_verdict_text(r).c_str());
      out += line;
    }
  }
  if (!out.empty()) out += "  (" + std::string(api::kAtDemandLegend) + ")\n";
  return out;
}

std::string sla_text(const json& sla) {
  std::string out;
  if (!sla.is_object()) return "none";
  auto number = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.10g", v);
    return std::string(buf);
  };
  for (const char* name : {"ttft", "ttft_service", "tpot", "itl", "e2e"}) {
    const json& bounds = api::json_member(sla, std::string(name) + "_ms");
    if (!bounds.is_object()) continue;
    for (const auto& [key, limit] : bounds.items()) {
      if (!limit.is_number() || key.size() < 2) continue;
      std::string pct = key.substr(1);
      for (auto& c : pct) c = c == '_' ? '.' : c;
      out += (out.empty() ? "" : "; ") + std::string("P") + pct + " " + name +
             " <= " + number(limit.get<double>()) + " ms";
    }
  }
  if (const auto e = api::json_number(sla, "max_error_rate"))
    out += (out.empty() ? "" : "; ") + std::string("errors <= ") + number(*e * 100) + "%";
  return out.empty() ? "none" : out;
}

std::string capacity_table_text(const json& results) {
  const auto rows = api::capacity_rows(results);
  std::string out;
  char line[768];
  // "load" is what the schedule offered at the qualified point (the level's key: c=N closed
  // loop, R rps open loop); "req/s" the rate completed there.
  std::snprintf(line, sizeof line,
                "%-16s %-14s %-6s %-10s %-26s %7s %10s %9s %9s %9s %6s %11s %14s  %s\n", "target",
                "model", "prec", "in/out", "load", "req/s", "out tok/s", "P95 TTFT", "P95 TPOT",
                "P95 E2E", "err%", "price/h", "cost/M out tok", "verdict");
  out += line;
  std::map<std::string, std::string> currency_of;
  std::map<std::string, bool> dataset_lengths;  // in/out measured from a dataset's usage
  if (const auto& targets = api::json_member(results, "targets"); targets.is_array()) {
    for (const auto& t : targets)
      dataset_lengths[api::json_string(t, "name")] =
          api::json_string(api::json_member(t, "workload"), "source") == "dataset";
  }
  std::string statements;
  std::string workload_shown;
  for (const auto& r : rows) {
    if (!r.workload.empty() && r.workload != workload_shown) {
      // A workload matrix: one table per workload (rows "<target>@<workload>").
      workload_shown = r.workload;
      out += "workload " + r.workload + " (in/out " + fixed_or_dash(r.input_tokens_mean, 0) + "/" +
             fixed_or_dash(r.output_tokens_mean, 0) + "):\n";
    }
    currency_of[r.target] = r.currency;
    // Under its workload's heading a matrix row names the plan's target alone.
    const std::string suffix = "@" + r.workload;
    const std::string shown =
        !r.workload.empty() && r.target.size() > suffix.size() &&
                r.target.compare(r.target.size() - suffix.size(), suffix.size(), suffix) == 0
            ? r.target.substr(0, r.target.size() - suffix.size())
            : r.target;
    std::string verdict = verdict_word(r);
    std::vector<std::string> labels = r.labels;
    if (dataset_lengths[r.target]) labels.push_back("dataset-measured-lengths");
    if (!labels.empty()) verdict += " " + join(labels, ", ");
    const bool figures = r.qualified || r.evidence_only;
    std::snprintf(
        line, sizeof line, "%-16s %-14s %-6s %-10s %-26s %7s %10s %9s %9s %9s %6s %11s %14s  %s\n",
        shown.c_str(), r.model.c_str(), r.precision.c_str(),
        (fixed_or_dash(r.input_tokens_mean, 0) + "/" + fixed_or_dash(r.output_tokens_mean, 0))
            .c_str(),
        // The planned level; req/s is its own column, so no achieved rate here.
        figures ? api::load_text(r, false).c_str() : "-",
        figures ? fixed_or_dash(r.requests_per_s, 2).c_str() : "-",
        figures ? fixed_or_dash(r.output_tokens_per_s, 1).c_str() : "-",
        figures ? fixed_or_dash(r.ttft_p95_ms, 0, "ms").c_str() : "-",
        figures ? fixed_or_dash(r.tpot_p95_ms, 1, "ms").c_str() : "-",
        figures ? fixed_or_dash(r.e2e_p95_ms, 0, "ms").c_str() : "-",
        figures && r.error_rate ? api::format_fixed(*r.error_rate * 100, 2).c_str() : "-",
        money(r.price_per_hour, 2, r.currency).c_str(),
        money(r.cost_per_million_output_tokens, 4, r.currency).c_str(), verdict.c_str());
    out += line;
    if (!r.outcome.empty() && r.outcome != "pass" && !r.statement.empty())
      statements += "  " + r.target + ": " + r.statement + "\n";
  }
  out += statements;
  if (const auto& v = api::json_member(results, "verdict"); v.is_object())
    out += "verdict: " + api::json_string(v, "outcome") + " (" + api::json_string(v, "statement") +
           ")\n";
  if (const auto lines = api::prediction_check_lines(api::json_member(results, "prediction_check"));
      !lines.empty()) {
    out += "prediction vs measurement (error = (measured - predicted) / predicted):\n";
    for (const auto& l : lines) out += "  " + l + "\n";
  }
  out += "comparison: " + api::json_string(results, "comparison_label", "same-config") + "\n";
  const auto& comparison = api::json_member(results, "comparison");
  for (const auto& c : comparison.is_array() ? comparison : json::array()) {
    std::snprintf(line, sizeof line,
                  "  %s vs %s: throughput ×%.2f, price ×%.2f, relative cost per token ×%.2f\n",
                  c.value("target", "").c_str(), c.value("baseline", "").c_str(),
                  c.value("throughput_ratio", 0.0), c.value("price_ratio", 0.0),
                  c.value("relative_cost_per_token", 0.0));
    out += line;
  }
  if (const auto& d = api::json_member(results, "demand_plan"); d.is_object()) {
    std::snprintf(line, sizeof line,
                  "demand: %.0f output tok/s (with headroom: %.0f tok/s), %.0f h/month; "
                  "instances from each qualified point's %s output tok/s\n",
                  api::json_number(d, "demand_output_tokens_per_s").value_or(0),
                  api::json_number(d, "required_output_tokens_per_s").value_or(0),
                  api::json_number(d, "hours_per_month").value_or(0),
                  api::is_predicted(results) ? "predicted" : "measured");
    out += line;
    if (api::json_member(d, "currencies_differ").is_boolean() && d["currencies_differ"].get<bool>())
      out += "  (prices in different currencies: no target is named cheapest)\n";
    for (const auto& l : api::demand_rows(results)) {
      const std::string& currency = currency_of[l.target];
      if (l.feasible && l.instances) {
        std::snprintf(line, sizeof line, "  %-16s %3lld instance(s)  %14s /h  %16s /month%s\n",
                      l.target.c_str(), *l.instances, money(l.hourly_cost, 2, currency).c_str(),
                      money(l.monthly_cost, 2, currency).c_str(),
                      l.cheapest      ? "  <- cheapest"
                      : l.hourly_cost ? ""
                                      : "  (no price)");
      } else {
        std::snprintf(line, sizeof line, "  %-16s not feasible (no qualified capacity)\n",
                      l.target.c_str());
      }
      out += line;
    }
  }
  out += at_demand_text(results);
  return out;
}

std::string catalog_ranking_text(const json& results) {
  const json ranking = catalog_ranking(results);
  std::map<std::string, api::CapacityRow> rows;
  for (auto& r : api::capacity_rows(results)) rows[r.target] = r;
  const bool with_demand = ranking["ranked_by"] == "monthly_cost";
  auto number = [](const json& c, const char* key) -> std::optional<double> {
    return c.contains(key) && c[key].is_number() ? std::optional(c[key].get<double>())
                                                 : std::nullopt;
  };
  std::string out = ranking["basis"].get<std::string>() + "\n";
  char line[768];
  // With a demand the ranking figure (the fleet's monthly cost) comes before cost/M.
  const char* head = "%-4s %-18s %-22s %8s %10s %9s %9s %11s %9s %14s %14s  %s\n";
  if (with_demand)
    std::snprintf(line, sizeof line, head, "rank", "hardware", "load", "req/s", "out tok/s",
                  "P95 TTFT", "P95 TPOT", "price/h", "instances", "per month", "cost/M out tok",
                  "verdict");
  else
    std::snprintf(line, sizeof line, "%-4s %-18s %-22s %8s %10s %9s %9s %11s %14s  %s\n", "rank",
                  "hardware", "load", "req/s", "out tok/s", "P95 TTFT", "P95 TPOT", "price/h",
                  "cost/M out tok", "verdict");
  out += line;
  std::string notes;
  for (const auto& c : ranking["candidates"]) {
    const std::string name = c["name"].get<std::string>();
    const std::string status = c["status"].get<std::string>();
    const std::string currency = c["currency"].get<std::string>();
    const auto it = rows.find(name);
    const api::CapacityRow* r = it != rows.end() ? &it->second : nullptr;
    const bool figures = r && (r->qualified || r->evidence_only);
    const std::string rank = c["rank"].is_number() ? std::to_string(c["rank"].get<int>()) : "-";
    const std::string verdict = status == "qualified"      ? "PASS"
                                : status == "fail"         ? "FAIL"
                                : status == "inconclusive" ? "INCONCLUSIVE"
                                                           : "CANNOT SERVE";
    const std::string load = figures ? api::load_text(*r, false) : "-";
    const std::string rps = figures ? fixed_or_dash(r->requests_per_s, 2) : "-";
    const std::string tps = figures ? fixed_or_dash(r->output_tokens_per_s, 1) : "-";
    const std::string ttft = figures ? fixed_or_dash(r->ttft_p95_ms, 0, "ms") : "-";
    const std::string tpot = figures ? fixed_or_dash(r->tpot_p95_ms, 1, "ms") : "-";
    const std::string price = money(number(c, "price_per_hour"), 2, currency);
    const std::string per_m = money(number(c, "cost_per_million_output_tokens"), 4, currency);
    if (with_demand) {
      const auto instances = number(c, "instances");
      std::snprintf(line, sizeof line, head, rank.c_str(), name.c_str(), load.c_str(), rps.c_str(),
                    tps.c_str(), ttft.c_str(), tpot.c_str(), price.c_str(),
                    instances ? api::format_fixed(*instances, 0).c_str() : "-",
                    money(number(c, "monthly_cost"), 0, currency).c_str(), per_m.c_str(),
                    verdict.c_str());
    } else {
      std::snprintf(line, sizeof line, "%-4s %-18s %-22s %8s %10s %9s %9s %11s %14s  %s\n",
                    rank.c_str(), name.c_str(), load.c_str(), rps.c_str(), tps.c_str(),
                    ttft.c_str(), tpot.c_str(), price.c_str(), per_m.c_str(), verdict.c_str());
    }
    out += line;
    if (c["reason"].is_string())
      notes += "  " + name + ": " + c["reason"].get<std::string>() + "\n";
  }
  if (!notes.empty()) out += "not ranked, or ranked last, and why:\n" + notes;
  if (ranking["currencies"].size() > 1)
    out += "  (prices in different currencies: the ranking compares the figures as they are)\n";
  if (const auto& d = api::json_member(results, "demand_plan"); d.is_object()) {
    std::snprintf(line, sizeof line,
                  "demand: %.0f output tok/s (with headroom: %.0f tok/s), %.0f h/month; an "
                  "instance is one GPU, or N for <profile>-tpN\n",
                  api::json_number(d, "demand_output_tokens_per_s").value_or(0),
                  api::json_number(d, "required_output_tokens_per_s").value_or(0),
                  api::json_number(d, "hours_per_month").value_or(0));
    out += line;
  }
  return out;
}

}  // namespace llmcap::server

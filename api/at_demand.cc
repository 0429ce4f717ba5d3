#include "api/at_demand.h"

#include <algorithm>
#include <cstdio>
#include <tuple>
#include <utility>

#include "api/prediction_check.h"
#include "api/report_format.h"

namespace llmcap::api {

using nlohmann::json;

namespace {

json nullable(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

std::optional<double> positive(const std::optional<double>& v) {
  return v && *v > 0 ? v : std::nullopt;
}

// The target's qualified capacity (its `qualified` point, open loop) when it ran a
// capacity_search: without one, a passing at_demand step alone would make the demand its own
// "capacity" and the headroom a trivial ×1.
std::optional<double> searched_rate(const json& target) {
  const json& phases = json_member(target, "phases");
  const bool searched =
      phases.is_array() && std::any_of(phases.begin(), phases.end(), [](const json& p) {
        return json_string(p, "kind") == "capacity_search";
      });
  const json& qualified = json_member(target, "qualified");
  if (!searched || json_string(qualified, "basis") != "open_loop") return std::nullopt;
  return positive(json_number(qualified, "offered_rate_rps"));
}

// One target's row from its at_demand phase document (`info` is the phase's "at_demand").
json target_row(const json& target, const json& phase, const json& info) {
  const json& steps = json_member(phase, "steps");
  const json& step = steps.is_array() && !steps.empty() ? steps.back() : json();
  const json& stats = json_member(step, "stats");
  const json& verdict = json_member(step, "verdict");
  const json& telemetry = json_member(step, "telemetry");
  auto p95 = [&](const char* metric) { return json_number(json_member(stats, metric), "p95"); };
  const auto kv_max = json_number(telemetry, "kv_usage_max");
  const auto pool_gib = json_number(info, "kv_pool_gib");
  std::optional<double> free_gib;
  if (kv_max && pool_gib) free_gib = std::max(0.0, 1 - *kv_max) * *pool_gib;
  json missed = json::array();
  for (const auto& r :
       json_member(verdict, "reasons").is_array() ? verdict["reasons"] : json::array()) {
    if (json_string(r, "status") == "missed") missed.push_back(json_string(r, "code"));
  }
  const auto qualified = searched_rate(target);
  // Headroom against the demand (the business's rate); without a demand, against the rate the
  // phase offered.
  const auto reference = positive(json_number(info, "demand_rps"))
                             ? json_number(info, "demand_rps")
                             : positive(json_number(info, "offered_rate_rps"));
  std::optional<double> headroom;
  if (qualified && reference) headroom = *qualified / *reference;
  const bool has_step = step.is_object();
  return json{
      {"target", json_string(target, "name")},
      {"predicted",
       json_member(target, "predicted").is_boolean() && target["predicted"].get<bool>()},
      {"simulated",
       json_member(target, "simulated").is_boolean() && target["simulated"].get<bool>()},
      {"global_step", has_step ? json_member(step, "global_step") : json(nullptr)},
      {"label", json_string(step, "label")},
      {"partial", json_member(step, "partial").is_boolean() && step["partial"].get<bool>()},
      {"offered_rate_rps", nullable(json_number(info, "offered_rate_rps"))},
      {"achieved_rate_rps", nullable(json_number(stats, "achieved_rate_rps"))},
      {"requests_per_s", nullable(json_number(stats, "requests_per_s"))},
      {"output_tokens_per_s", nullable(json_number(stats, "output_tokens_per_s"))},
      {"ttft_p95_ms", nullable(p95("ttft_ms"))},
      {"tpot_p95_ms", nullable(p95("tpot_ms"))},
      {"e2e_p95_ms", nullable(p95("e2e_ms"))},
      {"error_rate", nullable(json_number(stats, "error_rate"))},
      {"kv_cache_usage_max", nullable(kv_max)},
      {"kv_pool_gib", nullable(pool_gib)},
      {"memory_headroom_gib", nullable(free_gib)},
      {"outcome", has_step ? json(json_string(verdict, "outcome", "inconclusive")) : json(nullptr)},
      {"missed", missed},
      {"client_bound",
       json_member(step, "client_bound").is_boolean() && step["client_bound"].get<bool>()},
      {"qualified_rate_rps", nullable(qualified)},
      {"capacity_headroom", nullable(headroom)}};
}

std::optional<double> opt_number(const json& j, const char* key) { return json_number(j, key); }

std::string fixed_or_dash(const std::optional<double>& v, int decimals, const char* suffix = "") {
  return v ? format_fixed(*v, decimals) + suffix : std::string("-");
}

}  // namespace

json at_demand_comparison(const json& results) {
  json out = json::array();
  const json& targets = json_member(results, "targets");
  if (!targets.is_array()) return out;
  // Tables in the order the phases first appear; rows in target order. A workload matrix
  // repeats every target per workload (targets[].workload_name): one table per workload.
  std::vector<std::tuple<std::string, int, std::string>> order;
  std::vector<json> tables;
  for (const auto& t : targets) {
    const json& phases = json_member(t, "phases");
    for (const auto& p : phases.is_array() ? phases : json::array()) {
      if (json_string(p, "kind") != "at_demand") continue;
      const json& info = json_member(p, "at_demand");
      if (!info.is_object()) continue;
      const std::string workload = json_string(t, "workload_name");
      const std::tuple<std::string, int, std::string> key{
          json_string(p, "name"),
          json_member(p, "repeat").is_number_integer() ? p["repeat"].get<int>() : 0, workload};
      auto it = std::find(order.begin(), order.end(), key);
      if (it == order.end()) {
        order.push_back(key);
        tables.push_back(json{
            {"phase", std::get<0>(key)},
            {"repeat", std::get<1>(key)},
            {"workload", workload.empty() ? json(nullptr) : json(workload)},
            {"source", json_string(info, "source")},
            {"offered_rate_rps", nullable(opt_number(info, "offered_rate_rps"))},
            {"demand_rps", nullable(opt_number(info, "demand_rps"))},
            {"with_headroom",
             json_member(info, "with_headroom").is_boolean() && info["with_headroom"].get<bool>()},
            {"headroom", json_number(info, "headroom").value_or(0)},
            {"mean_output_tokens", nullable(opt_number(info, "mean_output_tokens"))},
            {"offered_output_tokens_per_s",
             nullable(opt_number(info, "offered_output_tokens_per_s"))},
            {"targets", json::array()}});
        it = order.end() - 1;
      }
      tables[static_cast<std::size_t>(it - order.begin())]["targets"].push_back(
          target_row(t, p, info));
    }
  }
  for (auto& t : tables) out.push_back(std::move(t));
  return out;
}

std::vector<AtDemandTable> at_demand_tables(const json& results) {
  std::vector<AtDemandTable> out;
  const json& tables = json_member(results, "at_demand");
  if (!tables.is_array()) return out;
  for (const auto& t : tables) {
    if (!t.is_object()) continue;
    AtDemandTable table;
    table.phase = json_string(t, "phase");
    table.repeat = json_member(t, "repeat").is_number_integer() ? t["repeat"].get<int>() : 0;
    table.workload = json_string(t, "workload");
    table.source = json_string(t, "source");
    table.offered_rate_rps = json_number(t, "offered_rate_rps");
    table.demand_rps = json_number(t, "demand_rps");
    table.with_headroom = json_member(t, "with_headroom").is_boolean() && t["with_headroom"];
    table.headroom = json_number(t, "headroom").value_or(0);
    table.offered_output_tokens_per_s = json_number(t, "offered_output_tokens_per_s");
    table.same_config = json_string(results, "comparison_label") != "per-target optimised";
    const json& rows = json_member(t, "targets");
    for (const auto& r : rows.is_array() ? rows : json::array()) {
      AtDemandRow row;
      row.target = json_string(r, "target");
      row.predicted = json_member(r, "predicted").is_boolean() && r["predicted"].get<bool>();
      row.offered_rate_rps = json_number(r, "offered_rate_rps");
      row.achieved_rate_rps = json_number(r, "achieved_rate_rps");
      row.requests_per_s = json_number(r, "requests_per_s");
      row.output_tokens_per_s = json_number(r, "output_tokens_per_s");
      row.ttft_p95_ms = json_number(r, "ttft_p95_ms");
      row.tpot_p95_ms = json_number(r, "tpot_p95_ms");
      row.e2e_p95_ms = json_number(r, "e2e_p95_ms");
      row.error_rate = json_number(r, "error_rate");
      row.kv_cache_usage_max = json_number(r, "kv_cache_usage_max");
      row.memory_headroom_gib = json_number(r, "memory_headroom_gib");
      row.outcome = json_string(r, "outcome");
      row.partial = json_member(r, "partial").is_boolean() && r["partial"].get<bool>();
      const json& missed = json_member(r, "missed");
      for (const auto& m : missed.is_array() ? missed : json::array())
        if (m.is_string()) row.missed.push_back(m.get<std::string>());
      row.qualified_rate_rps = json_number(r, "qualified_rate_rps");
      row.capacity_headroom = json_number(r, "capacity_headroom");
      table.rows.push_back(std::move(row));
    }
    out.push_back(std::move(table));
  }
  return out;
}

std::string at_demand_title(const AtDemandTable& t) {
  std::string out = t.phase;
  if (t.repeat > 0) out += ", repeat " + std::to_string(t.repeat + 1);
  if (!t.workload.empty()) out += ", workload " + t.workload;
  return out;
}

std::string at_demand_load_text(const AtDemandTable& t) {
  std::string out = fixed_or_dash(t.offered_rate_rps, 2, " rps");
  char buf[160];
  if (t.source == "demand" && t.demand_rps) {
    std::snprintf(buf, sizeof buf, " = demand %.2f rps", *t.demand_rps);
    out += buf;
  } else if (t.source == "rate_rps" || t.source == "output_tokens_per_s") {
    out += " (phase " + t.source + ")";
  }
  if (t.with_headroom) {
    std::snprintf(buf, sizeof buf, " × %.2f (headroom)", 1 + t.headroom);
    out += buf;
  }
  if (t.offered_output_tokens_per_s)
    out += ", " + format_fixed(*t.offered_output_tokens_per_s, 0) + " output tok/s";
  return out;
}

const char* const kAtDemandLegend =
    "Each target's step at the same offered rate, judged with the plan's SLA. KV peak: the "
    "target's highest KV-cache use in the step (its telemetry); KV free: the KV pool left at that "
    "peak (simulated targets, whose pool is known; not the memory-fit headroom of the capacity "
    "table); capacity headroom: the target's qualified capacity ÷ the demand (without a demand, "
    "÷ the offered rate; only with a capacity_search). - where unknown.";

std::string at_demand_equal_text(const AtDemandTable& t) {
  return t.same_config ? ", the same arrivals and prompts on each"
                       : ", the same arrival times on each (a per-target optimised plan: prompts "
                         "and lengths may differ)";
}

std::string at_demand_verdict_text(const AtDemandRow& r) {
  // A step cut short never passes or fails the comparison (its window is not the planned one).
  std::string out = r.partial             ? "INCONCLUSIVE (partial)"
                    : r.outcome == "pass" ? "PASS"
                    : r.outcome == "fail" ? "FAIL"
                    : r.outcome.empty()   ? "-"
                                          : "INCONCLUSIVE";
  if (!r.missed.empty()) {
    out += " (";
    for (std::size_t i = 0; i < r.missed.size(); ++i) out += (i ? "+" : "") + r.missed[i];
    out += ")";
  }
  if (r.predicted) out += " predicted";
  return out;
}

std::string render_at_demand_markdown(const json& results) {
  std::string out;
  for (const auto& t : at_demand_tables(results)) {
    out += "\n## At equal load: " + markdown_cell(at_demand_title(t)) + "\n\n";
    out += "Every target offered " + markdown_cell(at_demand_load_text(t)) +
           at_demand_equal_text(t) + (is_predicted(results) ? " (predicted, virtual time)" : "") +
           ".\n\n";
    out += markdown_header({"Target", "Offered rps", "Achieved rps", "Output tok/s", "P95 TTFT ms",
                            "P95 TPOT ms", "P95 E2E ms", "Error rate", "KV use (peak)",
                            "KV free GiB (peak)", "Verdict", "Capacity headroom"},
                           "lrrrrrrrrrlr");
    for (const auto& r : t.rows) {
      out += markdown_row(
          {r.target, fixed_or_dash(r.offered_rate_rps, 2), fixed_or_dash(r.achieved_rate_rps, 2),
           fixed_or_dash(r.output_tokens_per_s, 1), fixed_or_dash(r.ttft_p95_ms, 0),
           fixed_or_dash(r.tpot_p95_ms, 1), fixed_or_dash(r.e2e_p95_ms, 0),
           r.error_rate ? format_fixed(*r.error_rate * 100, 2) + "%" : "-",
           r.kv_cache_usage_max ? format_fixed(*r.kv_cache_usage_max * 100, 0) + "%" : "-",
           fixed_or_dash(r.memory_headroom_gib, 1), at_demand_verdict_text(r),
           r.capacity_headroom ? "×" + format_fixed(*r.capacity_headroom, 2) : "-"});
    }
    out += "\n" + std::string(kAtDemandLegend) + "\n";
  }
  return out;
}

}  // namespace llmcap::api

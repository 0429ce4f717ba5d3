#include "api/report_tables.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "api/at_demand.h"
#include "api/prediction_check.h"
#include "api/report_format.h"

namespace llmcap::api {

using nlohmann::json;

namespace {

std::optional<double> p95_of(const json& q, const char* metric) {
  return json_number(json_member(q, metric), "p95");
}

// CSV number: plain, up to 4 decimals, no trailing zeros; empty when missing.
std::string csv_number(const std::optional<double>& v) {
  if (!v) return "";
  std::string s = format_fixed(*v, 4);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

std::string csv_line(const std::vector<std::string>& cells) {
  std::string out;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (i) out += ',';
    out += csv_field(cells[i]);
  }
  return out + "\r\n";
}

std::string step_load(const StepRow& s) {
  if (s.phase_kind == "concurrency_sweep" && s.concurrency)
    return "c=" + std::to_string(*s.concurrency);
  if (s.offered_rate_rps) return format_fixed(*s.offered_rate_rps, 2) + " rps";
  return "-";
}

bool near(const std::optional<double>& a, const std::optional<double>& b, double tolerance) {
  return a && b && std::fabs(*a - *b) <= tolerance * std::max(1.0, std::fabs(*b));
}

}  // namespace

std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"')
      out += "\"\"";
    else
      out += c;
  }
  return out + "\"";
}

const json* step_of_point(const json& target, const json& point) {
  const bool closed = json_string(point, "basis") == "closed_loop";
  const json* found = nullptr;
  const auto& phases = json_member(target, "phases");
  if (!phases.is_array()) return nullptr;
  for (const auto& p : phases) {
    const auto& steps = json_member(p, "steps");
    if (!steps.is_array()) continue;
    for (const auto& s : steps) {
      const auto& params = json_member(s, "params");
      const auto& st = json_member(s, "stats");
      const bool load_matches =
          closed
              ? near(json_number(params, "concurrency"), json_number(point, "concurrency"), 0)
              : near(json_number(params, "rate_rps"), json_number(point, "offered_rate_rps"), 1e-3);
      if (load_matches &&
          near(json_number(st, "output_tokens_per_s"), json_number(point, "output_tokens_per_s"),
               1e-3) &&
          near(json_number(st, "requests_per_s"), json_number(point, "requests_per_s"), 1e-3))
        found = &s;
    }
  }
  return found;
}

std::vector<CapacityRow> capacity_rows(const json& results) {
  std::vector<CapacityRow> rows;
  const std::string comparison_label = json_string(results, "comparison_label");
  for (const auto& t : targets_of(results)) {
    CapacityRow r;
    r.target = json_string(t, "name");
    r.workload = json_string(t, "workload_name");
    // A combined (compare) document names each target's job; a job's own results document
    // names its job once, at the top.
    r.job_id = json_string(t, "job_id", json_string(results, "job_id"));
    r.model = json_string(t, "model");
    r.precision = json_string(t, "precision");
    const auto& w = json_member(t, "workload");
    r.input_tokens_mean = json_number(w, "input_tokens_mean");
    r.output_tokens_mean = json_number(w, "output_tokens_mean");
    r.price_per_hour = json_number(t, "price_per_hour");
    r.currency = json_string(t, "currency", "USD");
    const auto& qualified = json_member(t, "qualified");
    const auto& evidence = json_member(t, "best_evidence");
    r.qualified = qualified.is_object();
    r.evidence_only = !r.qualified && evidence.is_object();
    const auto& q = r.qualified ? qualified : evidence;
    if (q.is_object()) {
      r.basis = json_string(q, "basis");
      r.achieved_rate_rps = json_number(q, "achieved_rate_rps");
      if (r.basis == "closed_loop") {
        if (auto c = json_number(q, "concurrency")) r.concurrency = static_cast<int>(*c);
      } else {
        r.offered_rate_rps = json_number(q, "offered_rate_rps");
      }
      r.requests_per_s = json_number(q, "requests_per_s");
      r.output_tokens_per_s = json_number(q, "output_tokens_per_s");
      r.ttft_p95_ms = p95_of(q, "ttft_ms");
      r.tpot_p95_ms = p95_of(q, "tpot_ms");
      r.e2e_p95_ms = p95_of(q, "e2e_ms");
      r.error_rate = json_number(q, "error_rate");
      // Evidence short of a qualified capacity is never priced.
      if (r.qualified)
        r.cost_per_million_output_tokens = json_number(q, "cost_per_million_output_tokens");
      r.memory_headroom_gb = json_number(q, "memory_headroom_gb");
      if (const json* step = step_of_point(t, q)) {
        r.goodput_rps = json_number(json_member(*step, "stats"), "goodput_rps");
        r.sla_attainment = json_number(json_member(*step, "stats"), "sla_attainment");
      }
    }
    if (!r.memory_headroom_gb) r.memory_headroom_gb = json_number(t, "memory_headroom_gb");
    if (!r.memory_headroom_gb)
      r.memory_headroom_gb = json_number(json_member(t, "memory"), "headroom_gb");
    const auto& tv = json_member(t, "verdict");
    r.outcome = json_string(tv, "outcome");
    r.statement = json_string(tv, "statement");
    if (r.outcome.empty() || r.outcome == "pass")
      r.verdict = r.qualified ? "qualified" : "no qualified capacity";
    else
      r.verdict = r.outcome + ": no qualified capacity";
    if (json_member(t, "simulated").is_boolean() && t["simulated"].get<bool>())
      r.labels.push_back("simulated");
    // A prediction (virtual time) says so on every row it reaches: tables, reports, comparisons.
    if ((json_member(t, "predicted").is_boolean() && t["predicted"].get<bool>()) ||
        is_predicted(results))
      r.labels.push_back("predicted");
    if (!comparison_label.empty()) r.labels.push_back(comparison_label);
    if (json_number(t, "client_bound_steps").value_or(0) > 0)
      r.labels.push_back("client-bound steps present");
    // A PASS rests on a confirmed step with enough samples (a pass needs them): thin steps
    // elsewhere are labelled only where they leave the answer open.
    if (json_number(t, "insufficient_sample_steps").value_or(0) > 0 && r.outcome != "pass")
      r.labels.push_back("insufficient-samples");
    if (json_member(q, "non_monotonic").is_boolean() && q["non_monotonic"].get<bool>())
      r.labels.push_back("non-monotonic");
    rows.push_back(std::move(r));
  }
  return rows;
}

std::vector<StepRow> step_rows(const json& results) {
  std::vector<StepRow> rows;
  for (const auto& t : targets_of(results)) {
    const auto& phases = json_member(t, "phases");
    if (!phases.is_array()) continue;
    for (const auto& p : phases) {
      const auto& steps = json_member(p, "steps");
      if (!steps.is_array()) continue;
      for (const auto& s : steps) {
        StepRow r;
        r.target = json_string(t, "name");
        r.phase = json_string(s, "phase", json_string(p, "name"));
        r.phase_kind = json_string(s, "phase_kind", json_string(p, "kind"));
        r.label = json_string(s, "label");
        const auto& params = json_member(s, "params");
        const auto& st = json_member(s, "stats");
        if (auto c = json_number(params, "concurrency")) r.concurrency = static_cast<int>(*c);
        r.offered_rate_rps = json_number(params, "rate_rps");
        if (!r.offered_rate_rps) {
          const auto o = json_number(st, "offered_rate_rps");
          if (o && *o > 0) r.offered_rate_rps = o;
        }
        r.requests_per_s = json_number(st, "requests_per_s");
        r.output_tokens_per_s = json_number(st, "output_tokens_per_s");
        const auto& ttft = json_member(st, "ttft_ms");
        const auto& tpot = json_member(st, "tpot_ms");
        r.ttft_p50_ms = json_number(ttft, "p50");
        r.ttft_p95_ms = json_number(ttft, "p95");
        r.ttft_p99_ms = json_number(ttft, "p99");
        r.tpot_p50_ms = json_number(tpot, "p50");
        r.tpot_p95_ms = json_number(tpot, "p95");
        r.tpot_p99_ms = json_number(tpot, "p99");
        r.e2e_p50_ms = json_number(json_member(st, "e2e_ms"), "p50");
        r.e2e_p95_ms = json_number(json_member(st, "e2e_ms"), "p95");
        const auto& regions = json_member(s, "regions");
        if (regions.is_object()) {
          for (const auto& [name, g] : regions.items()) {
            RegionLatency l;
            l.region = name;
            l.requests = json_number(g, "requests");
            l.ttft_p50_ms = json_number(json_member(g, "ttft_ms"), "p50");
            l.ttft_p95_ms = json_number(json_member(g, "ttft_ms"), "p95");
            l.tpot_p50_ms = json_number(json_member(g, "tpot_ms"), "p50");
            l.tpot_p95_ms = json_number(json_member(g, "tpot_ms"), "p95");
            l.e2e_p50_ms = json_number(json_member(g, "e2e_ms"), "p50");
            l.e2e_p95_ms = json_number(json_member(g, "e2e_ms"), "p95");
            r.regions.push_back(std::move(l));
          }
        }
        const auto& mix = json_member(s, "mix");
        if (mix.is_array()) {
          for (const auto& c : mix) {
            MixClassRow m;
            const auto& cs = json_member(c, "stats");
            m.name = json_string(c, "name");
            m.weight = json_number(c, "weight");
            m.share = json_number(c, "share");
            m.requests = json_number(json_member(cs, "counts"), "intended");
            m.input_tokens_mean = json_number(c, "input_tokens_mean");
            m.output_tokens_mean = json_number(c, "output_tokens_mean");
            m.output_tokens_per_s = json_number(cs, "output_tokens_per_s");
            m.ttft_p50_ms = json_number(json_member(cs, "ttft_ms"), "p50");
            m.ttft_p95_ms = json_number(json_member(cs, "ttft_ms"), "p95");
            m.tpot_p50_ms = json_number(json_member(cs, "tpot_ms"), "p50");
            m.tpot_p95_ms = json_number(json_member(cs, "tpot_ms"), "p95");
            m.itl_p95_ms = json_number(json_member(cs, "itl_ms"), "p95");
            m.e2e_p50_ms = json_number(json_member(cs, "e2e_ms"), "p50");
            m.e2e_p95_ms = json_number(json_member(cs, "e2e_ms"), "p95");
            m.error_rate = json_number(cs, "error_rate");
            const auto& cv = json_member(c, "verdict");
            m.outcome = json_string(cv, "outcome");
            const auto& creasons = json_member(cv, "reasons");
            if (creasons.is_array()) {
              for (const auto& reason : creasons) {
                const auto status = json_string(reason, "status");
                if (status == "missed" || status == "not_evaluated")
                  m.reasons.push_back(json_string(reason, "text", json_string(reason, "code")));
              }
            }
            r.mix.push_back(std::move(m));
          }
        }
        const auto& conv = json_member(s, "conversation");
        if (conv.is_object()) {
          ConversationRow c;
          c.sessions_started = json_number(conv, "sessions_started");
          c.sessions_completed = json_number(conv, "sessions_completed");
          c.sessions_failed = json_number(conv, "sessions_failed");
          c.sessions_context_limit = json_number(conv, "sessions_context_limit");
          c.sessions_cut = json_number(conv, "sessions_cut");
          c.turns_per_session_mean = json_number(conv, "turns_per_session_mean");
          const auto& d = json_member(conv, "session_duration_s");
          c.duration_p50_s = json_number(d, "p50");
          c.duration_p95_s = json_number(d, "p95");
          const auto& turns = json_member(conv, "by_turn");
          if (turns.is_array()) {
            for (const auto& t : turns) {
              ConversationTurnRow tr;
              tr.turn = static_cast<int>(json_number(t, "turn").value_or(0));
              tr.requests = json_number(t, "requests");
              tr.ttft_p50_ms = json_number(t, "ttft_p50_ms");
              tr.ttft_p95_ms = json_number(t, "ttft_p95_ms");
              tr.input_tokens_mean = json_number(t, "input_tokens_mean");
              c.by_turn.push_back(tr);
            }
          }
          r.conversation = std::move(c);
        }
        r.error_rate = json_number(st, "error_rate");
        r.goodput_rps = json_number(st, "goodput_rps");
        r.sla_attainment = json_number(st, "sla_attainment");
        r.client_bound =
            json_member(s, "client_bound").is_boolean() && s["client_bound"].get<bool>();
        r.partial = json_member(s, "partial").is_boolean() && s["partial"].get<bool>();
        const auto& v = json_member(s, "verdict");
        r.outcome = json_string(v, "outcome");
        const auto& reasons = json_member(v, "reasons");
        if (reasons.is_array()) {
          for (const auto& reason : reasons) {
            const auto status = json_string(reason, "status");
            if (status == "missed" || status == "not_evaluated")
              r.reasons.push_back(json_string(reason, "text", json_string(reason, "code")));
          }
        }
        if (r.reasons.empty() && r.outcome == "pass") r.reasons.push_back("all checks held");
        rows.push_back(std::move(r));
      }
    }
  }
  return rows;
}

std::vector<DemandRow> demand_rows(const json& results) {
  return demand_plan_rows(json_member(results, "demand_plan"));
}

std::vector<DemandRow> demand_plan_rows(const json& d) {
  std::vector<DemandRow> rows;
  const auto& lines = json_member(d, "lines");
  if (!lines.is_array()) return rows;
  const std::string cheapest = json_string(d, "cheapest");
  for (const auto& l : lines) {
    DemandRow r;
    r.target = json_string(l, "target");
    r.feasible = json_member(l, "feasible").is_boolean() && l["feasible"].get<bool>();
    if (auto n = json_number(l, "instances"))
      r.instances = static_cast<long long>(std::llround(*n));
    r.hourly_cost = json_number(l, "hourly_cost");
    r.monthly_cost = json_number(l, "monthly_cost");
    r.utilisation = json_number(l, "utilisation");
    r.cost_per_million_output_tokens = json_number(l, "cost_per_million_output_tokens");
    r.cheapest = !cheapest.empty() && cheapest == r.target;
    rows.push_back(std::move(r));
  }
  return rows;
}

std::string load_text(const CapacityRow& row, bool with_achieved) {
  std::string out;
  if (row.concurrency) {
    out = "c=" + std::to_string(*row.concurrency);
  } else if (row.offered_rate_rps) {
    out = format_fixed(*row.offered_rate_rps, 2) + " rps";
    if (with_achieved && row.achieved_rate_rps)
      out += " (achieved " + format_fixed(*row.achieved_rate_rps, 2) + ")";
  } else {
    return "-";
  }
  return row.evidence_only ? "≥ " + out + ", not confirmed" : out;
}

std::string goodput_text(const std::optional<double>& goodput_rps,
                         const std::optional<double>& sla_attainment) {
  if (!goodput_rps) return "-";
  std::string out = format_fixed(*goodput_rps, 2);
  if (sla_attainment) out += " (" + format_fixed(*sla_attainment * 100, 0) + "% met SLO)";
  return out;
}

std::string lengths_text(const CapacityRow& row) {
  if (!row.input_tokens_mean || !row.output_tokens_mean) return "-";
  return format_fixed(*row.input_tokens_mean, 0) + " / " + format_fixed(*row.output_tokens_mean, 0);
}

std::string render_markdown(const json& results) {
  const bool predicted = is_predicted(results);
  std::string out =
      std::string(predicted ? "# Predicted capacity report: " : "# Capacity report: ") +
      markdown_cell(json_string(results, "plan", "(unnamed plan)")) + "\n\n";
  if (predicted)
    out +=
        "> **Predicted**, not measured: the plan ran on simulated targets in virtual time "
        "(`llmcapd predict`, docs/prediction.md). Confirm it on the hardware with the same "
        "plan.\n\n";
  const auto desc = json_string(json_member(results, "plan_document"), "description");
  if (!desc.empty()) out += markdown_cell(desc) + "\n\n";
  out += "- State: " + markdown_cell(json_string(results, "state", "unknown")) + "\n";
  if (const auto& verdict = json_member(results, "verdict"); verdict.is_object())
    out += "- Verdict: **" + markdown_cell(json_string(verdict, "outcome")) + "** (" +
           markdown_cell(json_string(verdict, "statement")) + ")\n";
  out += "- Comparison: " + markdown_cell(json_string(results, "comparison_label", "same-config")) +
         "\n";
  const auto fp = json_string(results, "workload_fingerprint");
  if (!fp.empty()) out += "- Workload fingerprint: `" + fp + "`\n";
  if (const auto& jobs = json_member(results, "jobs"); jobs.is_array() && !jobs.empty()) {
    // A comparison (api/report_compare.h): which job is which, and which is a prediction.
    out += "- Comparison mode: " + markdown_cell(json_string(results, "comparison_mode", "A/B")) +
           "\n\n## Jobs compared\n\n" +
           markdown_header({"Label", "Kind", "Job", "Plan", "Workload fingerprint"}, "lllll");
    for (const auto& j : jobs)
      out += markdown_row({json_string(j, "label"), json_string(j, "kind", "measured"),
                           json_string(j, "job_id"), json_string(j, "plan"),
                           json_string(j, "workload_fingerprint")});
  }
  out += "\n## Qualified capacity\n\n";
  const std::string capacity_header = markdown_header(
      {"Target", "Model", "Precision", "In/out tokens", "Load", "Sustained req/s", "Goodput req/s",
       "Output tok/s", "P95 TTFT ms", "P95 TPOT ms", "P95 E2E ms", "Error rate",
       "Memory headroom GB", "Price/h", "Cost per M output tokens", "Verdict", "Labels"},
      "lllllrrrrrrrrrrll");
  const auto all_rows = capacity_rows(results);
  if (all_rows.empty() || all_rows.front().workload.empty()) out += capacity_header;
  std::string workload_shown;
  for (const auto& r : all_rows) {
    if (!r.workload.empty() && r.workload != workload_shown) {
      // A workload matrix: one table per workload (docs/plans.md, "Workload matrix").
      out += std::string(workload_shown.empty() ? "" : "\n") + "### Workload `" +
             markdown_cell(r.workload) + "`\n\n" + capacity_header;
      workload_shown = r.workload;
    }
    out += markdown_row(
        {r.target, r.model, r.precision, lengths_text(r), load_text(r),
         opt_fixed(r.requests_per_s, 2), goodput_text(r.goodput_rps, r.sla_attainment),
         opt_fixed(r.output_tokens_per_s, 1), opt_fixed(r.ttft_p95_ms, 0),
         opt_fixed(r.tpot_p95_ms, 1), opt_fixed(r.e2e_p95_ms, 0), percent(r.error_rate),
         opt_fixed(r.memory_headroom_gb, 1),
         r.price_per_hour ? format_fixed(*r.price_per_hour, 2) + " " + r.currency : "-",
         r.cost_per_million_output_tokens
             ? format_fixed(*r.cost_per_million_output_tokens, 4) + " " + r.currency
             : "-",
         r.verdict, join(r.labels, ", ")});
  }
  std::string why;
  for (const auto& r : capacity_rows(results)) {
    if (!r.outcome.empty() && r.outcome != "pass" && !r.statement.empty())
      why += "- " + markdown_cell(r.target) + ": " + markdown_cell(r.statement) + "\n";
  }
  if (!why.empty()) out += "\n" + why;
  if (const auto lines = prediction_check_lines(json_member(results, "prediction_check"));
      !lines.empty()) {
    const auto& check = results["prediction_check"];
    out += "\n## Prediction vs measurement\n\nPredicted job `" +
           markdown_cell(json_string(check, "predicted_job")) + "`, measured job `" +
           markdown_cell(json_string(check, "measured_job")) +
           "` (same workload fingerprint and SLA); error = (measured − predicted) / predicted.\n\n";
    for (const auto& l : lines) out += "- " + markdown_cell(l) + "\n";
  }
  // A comparison of a prediction with a measurement (api/report_compare.h).
  const auto& checks = json_member(results, "prediction_checks");
  if (checks.is_array() && !checks.empty()) {
    out += "\n## Predicted vs measured\n";
    for (const auto& check : checks) {
      out += "\nPredicted: job " + markdown_cell(json_string(check, "predicted_label")) + " `" +
             markdown_cell(json_string(check, "predicted_job")) + "` (plan " +
             markdown_cell(json_string(check, "predicted_plan")) + "); measured: job " +
             markdown_cell(json_string(check, "measured_label")) + " `" +
             markdown_cell(json_string(check, "measured_job")) + "` (plan " +
             markdown_cell(json_string(check, "measured_plan")) +
             "). Error = (measured − predicted) / predicted.";
      if (json_member(check, "slas_differ") == json(true))
        out += " The two jobs were judged against different SLAs.";
      out += "\n\n";
      const auto lines = prediction_check_lines(check);
      if (lines.empty()) out += "- No target of one job pairs with a target of the other.\n";
      for (const auto& l : lines) out += "- " + markdown_cell(l) + "\n";
    }
  }
  const auto& comparison = json_member(results, "comparison");
  if (comparison.is_array() && !comparison.empty()) {
    out += "\n## Comparison (relative cost per output token)\n\n";
    out += markdown_header(
        {"Target", "Baseline", "Throughput ratio", "Price ratio", "Relative cost per token"},
        "llrrr");
    for (const auto& c : comparison) {
      out += markdown_row({json_string(c, "target"), json_string(c, "baseline"),
                           opt_fixed(json_number(c, "throughput_ratio"), 2),
                           opt_fixed(json_number(c, "price_ratio"), 2),
                           opt_fixed(json_number(c, "relative_cost_per_token"), 2)});
    }
  }
  const auto demand_markdown = [](const json& d) {
    std::string md = "Demand " + opt_fixed(json_number(d, "demand_output_tokens_per_s"), 0) +
                     " output tok/s; with headroom " +
                     opt_fixed(json_number(d, "required_output_tokens_per_s"), 0) + " tok/s; " +
                     opt_fixed(json_number(d, "hours_per_month"), 0) + " h/month.\n\n";
    md += markdown_header({"Target", "Instances", "Hourly cost", "Monthly cost", "Utilisation",
                           "Cost per M output tokens", "Note"},
                          "lrrrrrl");
    for (const auto& r : demand_plan_rows(d)) {
      md += markdown_row({r.target, r.feasible && r.instances ? std::to_string(*r.instances) : "-",
                          r.feasible ? opt_fixed(r.hourly_cost, 2) : "-",
                          r.feasible ? opt_fixed(r.monthly_cost, 2) : "-",
                          r.feasible ? percent(r.utilisation) : "-",
                          opt_fixed(r.cost_per_million_output_tokens, 4),
                          !r.feasible  ? "not feasible (no qualified capacity)"
                          : r.cheapest ? "cheapest"
                                       : ""});
    }
    return md;
  };
  if (const auto& d = json_member(results, "demand_plan"); d.is_object())
    out += "\n## Demand plan\n\n" + demand_markdown(d);
  // A comparison whose jobs cannot share one table: one per job (api/report_compare.h).
  if (const auto& plans = json_member(results, "demand_plans"); plans.is_array()) {
    for (const auto& p : plans) {
      out += "\n## Demand plan: job " + markdown_cell(json_string(p, "label")) + " (" +
             markdown_cell(json_string(p, "kind")) + ", `" +
             markdown_cell(json_string(p, "job_id")) + "`)\n\nOne table per job: " +
             markdown_cell(json_string(results, "demand_per_job_reason")) + ".\n\n" +
             demand_markdown(json_member(p, "demand_plan"));
    }
  }
  out += render_at_demand_markdown(results);
  out += "\n## Steps\n\n";
  out += markdown_header({"Target", "Phase", "Step", "Load", "Req/s", "Goodput req/s",
                          "Output tok/s", "TTFT P50/P95/P99 ms", "TPOT P50/P95/P99 ms",
                          "P95 E2E ms", "Error rate", "Verdict", "Reasons"},
                         "llllrrrrrrrll");
  for (const auto& s : step_rows(results)) {
    out += markdown_row(
        {s.target, s.phase, s.label, step_load(s), opt_fixed(s.requests_per_s, 2),
         goodput_text(s.goodput_rps, s.sla_attainment), opt_fixed(s.output_tokens_per_s, 1),
         opt_fixed(s.ttft_p50_ms, 0) + " / " + opt_fixed(s.ttft_p95_ms, 0) + " / " +
             opt_fixed(s.ttft_p99_ms, 0),
         opt_fixed(s.tpot_p50_ms, 1) + " / " + opt_fixed(s.tpot_p95_ms, 1) + " / " +
             opt_fixed(s.tpot_p99_ms, 1),
         opt_fixed(s.e2e_p95_ms, 0), percent(s.error_rate),
         s.outcome.empty() ? "-" : s.outcome + (s.client_bound ? " (client-bound)" : ""),
         join(s.reasons, "; ")});
  }
  std::string regions;
  for (const auto& s : step_rows(results)) {
    for (const auto& r : region_table(s)) {
      regions += markdown_row({s.target, s.phase, s.label, r.region, opt_fixed(r.requests, 0),
                               opt_fixed(r.ttft_p50_ms, 0) + " / " + opt_fixed(r.ttft_p95_ms, 0),
                               opt_fixed(r.tpot_p50_ms, 1) + " / " + opt_fixed(r.tpot_p95_ms, 1),
                               opt_fixed(r.e2e_p50_ms, 0) + " / " + opt_fixed(r.e2e_p95_ms, 0)});
    }
  }
  out += render_mix_markdown(results);
  out += render_conversation_markdown(results);
  if (!regions.empty()) {
    out += "\n## Client-side latency per region\n\n";
    out += markdown_header({"Target", "Phase", "Step", "Region", "Requests", "TTFT P50/P95 ms",
                            "TPOT P50/P95 ms", "E2E P50/P95 ms"},
                           "llllrrrr");
    out += regions;
  }
  return out;
}

std::string render_mix_markdown(const json& results) {
  std::string rows;
  for (const auto& s : step_rows(results)) {
    for (const auto& m : s.mix) {
      rows += markdown_row(
          {s.target, s.phase, s.label, m.name, percent(m.weight) + " / " + percent(m.share),
           opt_fixed(m.requests, 0),
           opt_fixed(m.input_tokens_mean, 0) + " / " + opt_fixed(m.output_tokens_mean, 0),
           opt_fixed(m.output_tokens_per_s, 1),
           opt_fixed(m.ttft_p50_ms, 0) + " / " + opt_fixed(m.ttft_p95_ms, 0),
           opt_fixed(m.tpot_p50_ms, 1) + " / " + opt_fixed(m.tpot_p95_ms, 1),
           opt_fixed(m.e2e_p95_ms, 0), percent(m.error_rate), m.outcome.empty() ? "-" : m.outcome,
           join(m.reasons, "; ")});
    }
  }
  if (rows.empty()) return "";
  return "\n## Workload mix: per-class results\n\nEach class of a mix step judged on its own "
         "requests against its SLA; the step passes only when every class passes "
         "(docs/plans.md, \"Workload mixes\").\n\n" +
         markdown_header({"Target", "Phase", "Step", "Class", "Weight / share", "Requests",
                          "In/out tokens", "Output tok/s", "TTFT P50/P95 ms", "TPOT P50/P95 ms",
                          "P95 E2E ms", "Error rate", "Verdict", "Reasons"},
                         "llllrrrrrrrrll") +
         rows;
}

std::string render_conversation_markdown(const json& results) {
  std::string rows;
  for (const auto& s : step_rows(results)) {
    if (!s.conversation) continue;
    const ConversationRow& c = *s.conversation;
    std::vector<std::string> ttft, input;
    for (const auto& t : c.by_turn) {
      ttft.push_back(opt_fixed(t.ttft_p50_ms, 0) + "/" + opt_fixed(t.ttft_p95_ms, 0));
      input.push_back(opt_fixed(t.input_tokens_mean, 0));
    }
    rows += markdown_row(
        {s.target, s.phase, s.label,
         opt_fixed(c.sessions_started, 0) + " / " + opt_fixed(c.sessions_completed, 0) + " / " +
             opt_fixed(c.sessions_failed, 0) + " / " + opt_fixed(c.sessions_context_limit, 0) +
             " / " + opt_fixed(c.sessions_cut, 0),
         opt_fixed(c.turns_per_session_mean, 2),
         opt_fixed(c.duration_p50_s, 1) + " / " + opt_fixed(c.duration_p95_s, 1), join(ttft, ", "),
         join(input, ", ")});
  }
  if (rows.empty()) return "";
  return "\n## Conversations: sessions and TTFT by turn\n\nSessions started / completed / "
         "failed / ended at the context limit / cut by the window's end; the duration of the "
         "completed sessions (first turn's intended send → last reply's end); TTFT by turn index "
         "(turn 1, 2, …) as P50/P95 ms, with each turn's mean prompt length: later turns carry "
         "the history (docs/plans.md, \"Conversations\").\n\n" +
         markdown_header(
             {"Target", "Phase", "Step", "Sessions", "Turns/session",
              "Completed duration P50/P95 s", "TTFT P50/P95 ms by turn", "Prompt tokens by turn"},
             "lllrrrll") +
         rows;
}

std::vector<RegionLatency> region_table(const StepRow& step) {
  if (step.regions.empty()) return {};
  RegionLatency all;
  all.region = "all regions";
  double n = 0;
  for (const auto& r : step.regions) n += r.requests.value_or(0);
  all.requests = n;
  all.ttft_p50_ms = step.ttft_p50_ms;
  all.ttft_p95_ms = step.ttft_p95_ms;
  all.tpot_p50_ms = step.tpot_p50_ms;
  all.tpot_p95_ms = step.tpot_p95_ms;
  all.e2e_p50_ms = step.e2e_p50_ms;
  all.e2e_p95_ms = step.e2e_p95_ms;
  std::vector<RegionLatency> out{all};
  out.insert(out.end(), step.regions.begin(), step.regions.end());
  return out;
}

std::string render_capacity_csv(const json& results) {
  std::string out = csv_line({"job_id",
                              "target",
                              "model",
                              "precision",
                              "input_tokens_mean",
                              "output_tokens_mean",
                              "basis",
                              "offered_rate_rps",
                              "concurrency",
                              "sustained_requests_per_s",
                              "output_tokens_per_s",
                              "ttft_p95_ms",
                              "tpot_p95_ms",
                              "e2e_p95_ms",
                              "error_rate",
                              "memory_headroom_gb",
                              "price_per_hour",
                              "currency",
                              "cost_per_million_output_tokens",
                              "verdict",
                              "labels",
                              "goodput_rps",
                              "sla_attainment"});
  for (const auto& r : capacity_rows(results)) {
    out += csv_line({r.job_id,
                     r.target,
                     r.model,
                     r.precision,
                     csv_number(r.input_tokens_mean),
                     csv_number(r.output_tokens_mean),
                     r.basis,
                     csv_number(r.offered_rate_rps),
                     r.concurrency ? std::to_string(*r.concurrency) : "",
                     csv_number(r.requests_per_s),
                     csv_number(r.output_tokens_per_s),
                     csv_number(r.ttft_p95_ms),
                     csv_number(r.tpot_p95_ms),
                     csv_number(r.e2e_p95_ms),
                     csv_number(r.error_rate),
                     csv_number(r.memory_headroom_gb),
                     csv_number(r.price_per_hour),
                     r.currency,
                     csv_number(r.cost_per_million_output_tokens),
                     r.verdict,
                     join(r.labels, "; "),
                     csv_number(r.goodput_rps),
                     csv_number(r.sla_attainment)});
  }
  return out;
}

std::string render_steps_csv(const json& results) {
  std::string out = csv_line({"target",         "phase",
                              "phase_kind",     "step",
                              "concurrency",    "offered_rate_rps",
                              "requests_per_s", "output_tokens_per_s",
                              "ttft_p50_ms",    "ttft_p95_ms",
                              "ttft_p99_ms",    "tpot_p50_ms",
                              "tpot_p95_ms",    "tpot_p99_ms",
                              "e2e_p95_ms",     "error_rate",
                              "client_bound",   "partial",
                              "outcome",        "reasons",
                              "goodput_rps",    "sla_attainment"});
  for (const auto& s : step_rows(results)) {
    out += csv_line({s.target,
                     s.phase,
                     s.phase_kind,
                     s.label,
                     s.concurrency ? std::to_string(*s.concurrency) : "",
                     csv_number(s.offered_rate_rps),
                     csv_number(s.requests_per_s),
                     csv_number(s.output_tokens_per_s),
                     csv_number(s.ttft_p50_ms),
                     csv_number(s.ttft_p95_ms),
                     csv_number(s.ttft_p99_ms),
                     csv_number(s.tpot_p50_ms),
                     csv_number(s.tpot_p95_ms),
                     csv_number(s.tpot_p99_ms),
                     csv_number(s.e2e_p95_ms),
                     csv_number(s.error_rate),
                     s.client_bound ? "true" : "false",
                     s.partial ? "true" : "false",
                     s.outcome,
                     join(s.reasons, "; "),
                     csv_number(s.goodput_rps),
                     csv_number(s.sla_attainment)});
  }
  return out;
}

}  // namespace llmcap::api

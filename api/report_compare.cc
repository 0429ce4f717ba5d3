#include "api/report_compare.h"

#include <algorithm>

#include "analysis/cost.h"
#include "api/prediction_check.h"
#include "api/report_format.h"
#include "api/result_json.h"

namespace llmcap::api {

using nlohmann::json;

namespace {

std::string job_id_of(const json& doc, std::size_t index) {
  const auto id = json_string(json_member(doc, "job"), "id");
  if (!id.empty()) return id;
  const auto id2 = json_string(doc, "job_id");
  if (!id2.empty()) return id2;
  return "job " + std::to_string(index + 1);
}

// "A", "B", …, "Z", "AA", "AB", …: short labels that keep series names readable (job ids are
// 26 characters).
std::string job_label(std::size_t index) {
  std::string out;
  for (std::size_t n = index + 1; n > 0; n = (n - 1) / 26)
    out.insert(out.begin(), static_cast<char>('A' + (n - 1) % 26));
  return out;
}

const json& demand_of(const json& doc) {
  return json_member(json_member(doc, "plan_document"), "demand");
}

const json& sla_of(const json& doc) {
  return json_member(json_member(doc, "plan_document"), "sla");
}

// A plan's demand (docs/metrics.md §6.2) over the given offers.
json demand_plan_for(const json& demand_json, const std::vector<analysis::TargetOffer>& offers) {
  analysis::Demand demand;
  demand.requests_per_min = json_number(demand_json, "requests_per_minute").value_or(0);
  demand.mean_output_tokens = json_number(demand_json, "mean_output_tokens").value_or(0);
  demand.headroom = json_number(demand_json, "headroom").value_or(demand.headroom);
  return demand_plan_json(analysis::plan_demand(
      demand, offers,
      json_number(demand_json, "hours_per_month").value_or(analysis::kHoursPerMonth)));
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + v[i];
  return out;
}

}  // namespace

CompareOutcome compare_results(std::vector<json> results_docs, bool allow_different_workloads) {
  CompareOutcome out;
  if (results_docs.size() < 2) {
    out.error = "compare needs at least two jobs, got " + std::to_string(results_docs.size());
    return out;
  }
  std::vector<std::string> ids;
  for (std::size_t i = 0; i < results_docs.size(); ++i) {
    ids.push_back(job_id_of(results_docs[i], i));
    if (!results_docs[i].is_object() || !json_member(results_docs[i], "targets").is_array()) {
      out.mismatched_jobs.push_back(ids.back());
    }
  }
  if (!out.mismatched_jobs.empty()) {
    out.error = "job(s) " + join(out.mismatched_jobs) +
                " have no results document with targets (not finished?)";
    return out;
  }

  const std::string first_fp = json_string(results_docs[0], "workload_fingerprint");
  bool differ = false;
  for (std::size_t i = 1; i < results_docs.size(); ++i) {
    if (json_string(results_docs[i], "workload_fingerprint") != first_fp) differ = true;
  }
  if (differ) {
    // Name every job with its fingerprint so the caller sees which ones go together.
    std::vector<std::string> described;
    for (std::size_t i = 0; i < results_docs.size(); ++i) {
      const auto fp = json_string(results_docs[i], "workload_fingerprint", "(none)");
      described.push_back(ids[i] + " (" + fp + ")");
      if (i == 0 || fp != first_fp) out.mismatched_jobs.push_back(ids[i]);
    }
    if (!allow_different_workloads) {
      out.error =
          "jobs ran different workloads (workload_fingerprint differs): " + join(described) +
          "; pass allow_different_workloads to compare them anyway";
      return out;
    }
  } else {
    out.mismatched_jobs.clear();
  }

  // Each job's kind: a prediction (virtual time) or a measurement. Kinds never meet in the A/B
  // comparison or in one demand table; a prediction and a measurement are checked against each
  // other instead (api/prediction_check.h).
  std::vector<std::string> kinds;
  bool any_predicted = false, any_measured = false;
  for (const auto& doc : results_docs) {
    kinds.push_back(is_predicted(doc) ? "predicted" : "measured");
    (kinds.back() == "predicted" ? any_predicted : any_measured) = true;
  }
  const bool mixed = any_predicted && any_measured;

  json targets = json::array();
  json jobs = json::array();
  std::vector<analysis::TargetOffer> offers;
  std::vector<std::string> source_names;  // per offer
  std::vector<std::size_t> job_of;        // per offer
  bool per_target = false;
  std::vector<std::string> plans;
  for (std::size_t i = 0; i < results_docs.size(); ++i) {
    const auto& doc = results_docs[i];
    const auto label = json_string(doc, "comparison_label", "same-config");
    per_target = per_target || label == "per-target optimised";
    plans.push_back(json_string(doc, "plan", ids[i]));
    json names = json::array();
    for (auto t : doc["targets"]) {
      const auto source = json_string(t, "name");
      names.push_back(source);
      t["source_name"] = source;
      t["job_id"] = ids[i];
      t["job_label"] = job_label(i);
      t["job_kind"] = kinds[i];
      // capacity_rows labels the row "predicted" from the target when the document is mixed.
      if (kinds[i] == "predicted") t["predicted"] = true;
      t["name"] = source + " (" + job_label(i) + ")";
      if (json_member(t, "phases").is_array()) {
        for (auto& p : t["phases"]) {
          if (!json_member(p, "steps").is_array()) continue;
          for (auto& st : p["steps"]) st["target"] = t["name"];
        }
      }
      const auto& q = json_member(t, "qualified");
      // No price is no price (never 0), and each price keeps its currency.
      offers.push_back({t["name"].get<std::string>(), json_number(t, "price_per_hour"),
                        q.is_object() ? json_number(q, "output_tokens_per_s").value_or(0) : 0,
                        json_string(t, "currency", "USD")});
      source_names.push_back(source);
      job_of.push_back(i);
      targets.push_back(std::move(t));
    }
    jobs.push_back(json{{"job_id", ids[i]},
                        {"label", job_label(i)},
                        {"kind", kinds[i]},
                        {"plan", json_string(doc, "plan")},
                        {"workload_fingerprint", json_string(doc, "workload_fingerprint")},
                        {"comparison_label", label},
                        {"state", json_string(doc, "state")},
                        {"targets", names}});
  }

  // A prediction and a measurement of one plan: "predicted vs measured", as one plan's name.
  std::vector<std::string> distinct_plans;
  for (const auto& p : plans)
    if (std::find(distinct_plans.begin(), distinct_plans.end(), p) == distinct_plans.end())
      distinct_plans.push_back(p);
  json combined{{"plan", (mixed ? "predicted vs measured: " + join(distinct_plans)
                                : "compare: " + join(plans))},
                {"kind", "comparison"},
                {"comparison_mode", mixed ? "predicted vs measured" : "A/B"},
                {"jobs", jobs},
                {"workloads_differ", differ},
                {"workload_fingerprint", differ ? json(nullptr) : json(first_fp)},
                {"comparison_label", differ       ? "different workloads"
                                     : per_target ? "per-target optimised"
                                                  : "same-config"},
                {"targets", targets}};

  // A/B, among jobs of one kind only: a target against its own prediction is no comparison
  // (×1.00 price). Same-name targets across jobs: each against its namesake in the first job of
  // its kind that has it. Only when no name recurs is everything compared with the first target
  // of its kind.
  json comparisons = json::array();
  bool any_namesake = false, any_group = false;
  for (const std::string kind : {"measured", "predicted"}) {
    std::vector<std::size_t> group;  // offers of this kind
    std::vector<std::size_t> group_jobs;
    for (std::size_t i = 0; i < offers.size(); ++i) {
      if (kinds[job_of[i]] != kind) continue;
      group.push_back(i);
      if (std::find(group_jobs.begin(), group_jobs.end(), job_of[i]) == group_jobs.end())
        group_jobs.push_back(job_of[i]);
    }
    if (group_jobs.size() < 2) continue;
    any_group = true;
    bool namesake = false;
    for (std::size_t gi = 0; gi < group.size(); ++gi) {
      const std::size_t i = group[gi];
      for (std::size_t gb = 0; gb < gi; ++gb) {
        const std::size_t b = group[gb];
        if (source_names[b] != source_names[i] || job_of[b] == job_of[i]) continue;
        namesake = true;
        if (auto c = analysis::compare_targets(offers[b], offers[i]))
          comparisons.push_back(comparison_json(*c));
        break;
      }
    }
    if (!namesake) {
      for (std::size_t gi = 1; gi < group.size(); ++gi) {
        if (auto c = analysis::compare_targets(offers[group[0]], offers[group[gi]]))
          comparisons.push_back(comparison_json(*c));
      }
    }
    any_namesake = any_namesake || namesake;
  }
  combined["comparison"] = comparisons;
  if (any_group) combined["comparison_basis"] = any_namesake ? "same-name targets" : "first target";

  // Predicted vs measured: every prediction against every measurement, target by target (paired
  // by name, else base_url), from the jobs' own documents so the pairs keep their plan's names.
  if (mixed) {
    json checks = json::array();
    for (std::size_t p = 0; p < results_docs.size(); ++p) {
      if (kinds[p] != "predicted") continue;
      for (std::size_t m = 0; m < results_docs.size(); ++m) {
        if (kinds[m] != "measured") continue;
        json check = prediction_check(results_docs[p], results_docs[m]);
        check["predicted_job"] = ids[p];
        check["measured_job"] = ids[m];
        check["predicted_label"] = job_label(p);
        check["measured_label"] = job_label(m);
        check["predicted_plan"] = plans[p];
        check["measured_plan"] = plans[m];
        // Qualified capacities under different SLAs answer different questions: said, not hidden.
        check["slas_differ"] = sla_of(results_docs[p]) != sla_of(results_docs[m]);
        checks.push_back(std::move(check));
      }
    }
    combined["prediction_checks"] = std::move(checks);
  }

  // The demand plan: one table across every job only when they are all of one kind and planned
  // the same demand under the same SLA for the same workload (then "cheapest" compares like with
  // like). Otherwise one table per job, each over its own targets.
  const auto& d0 = demand_of(results_docs[0]);
  bool same_demand = d0.is_object(), same_sla = true;
  for (const auto& doc : results_docs) {
    same_demand = same_demand && demand_of(doc) == d0;
    same_sla = same_sla && sla_of(doc) == sla_of(results_docs[0]);
  }
  if (same_demand && same_sla && !mixed && !differ) {
    combined["demand_plan"] = demand_plan_for(d0, offers);
    combined["demand_basis"] = "across jobs";
  } else {
    json per_job = json::array();
    for (std::size_t i = 0; i < results_docs.size(); ++i) {
      const auto& d = demand_of(results_docs[i]);
      if (!d.is_object()) continue;
      std::vector<analysis::TargetOffer> own;
      for (std::size_t o = 0; o < offers.size(); ++o)
        if (job_of[o] == i) own.push_back(offers[o]);
      per_job.push_back(json{{"job_id", ids[i]},
                             {"label", job_label(i)},
                             {"kind", kinds[i]},
                             {"plan", plans[i]},
                             {"demand_plan", demand_plan_for(d, own)}});
    }
    if (!per_job.empty()) {
      combined["demand_plans"] = std::move(per_job);
      combined["demand_basis"] = "per job";
      combined["demand_per_job_reason"] = mixed    ? "the jobs are a prediction and a measurement"
                                          : differ ? "the jobs ran different workloads"
                                          : !same_sla
                                              ? "the jobs were judged against different SLAs"
                                              : "the jobs planned for different demands";
    }
  }
  // The first job's plan, so the page still shows what ran; the others are in their own jobs.
  // Its SLA lines are drawn only when every job judged against the same SLA: another job's
  // points against job A's bounds would mislead.
  if (results_docs[0].contains("plan_document")) {
    combined["plan_document"] = results_docs[0]["plan_document"];
    if (!same_sla) {
      combined["plan_document"].erase("sla");
      combined["slas_differ"] = true;
    }
  }
  bool all_succeeded = true, all_qualified = true;
  for (const auto& doc : results_docs) {
    all_succeeded = all_succeeded && json_string(doc, "state", "succeeded") == "succeeded";
    all_qualified = all_qualified && json_member(doc, "all_qualified").is_boolean() &&
                    doc["all_qualified"].get<bool>();
  }
  combined["state"] = all_succeeded ? "succeeded" : "mixed";
  combined["all_qualified"] = all_qualified;
  out.document = std::move(combined);
  return out;
}

}  // namespace llmcap::api

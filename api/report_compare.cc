#include "api/report_compare.h"

#include "analysis/cost.h"
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

  json targets = json::array();
  json jobs = json::array();
  std::vector<analysis::TargetOffer> offers;
  std::vector<std::string> source_names;  // per offer
  std::vector<std::size_t> job_of;        // per offer
  bool per_target = false;
  std::vector<std::string> plans;
  for (std::size_t i = 0; i < results_docs.size(); ++i) {
    auto& doc = results_docs[i];
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
                        {"plan", json_string(doc, "plan")},
                        {"workload_fingerprint", json_string(doc, "workload_fingerprint")},
                        {"comparison_label", label},
                        {"state", json_string(doc, "state")},
                        {"targets", names}});
  }

  json combined{{"plan", "compare: " + join(plans)},
                {"kind", "comparison"},
                {"jobs", jobs},
                {"workloads_differ", differ},
                {"workload_fingerprint", differ ? json(nullptr) : json(first_fp)},
                {"comparison_label", differ       ? "different workloads"
                                     : per_target ? "per-target optimised"
                                                  : "same-config"},
                {"targets", targets}};
  // Same-name targets across jobs: each against its namesake in the first job that has it.
  // Only when no name recurs is everything compared with the first job's first target.
  json comparisons = json::array();
  bool any_namesake = false;
  for (std::size_t i = 0; i < offers.size(); ++i) {
    for (std::size_t b = 0; b < i; ++b) {
      if (source_names[b] != source_names[i] || job_of[b] == job_of[i]) continue;
      any_namesake = true;
      if (auto c = analysis::compare_targets(offers[b], offers[i]))
        comparisons.push_back(comparison_json(*c));
      break;
    }
  }
  if (!any_namesake) {
    for (std::size_t i = 1; i < offers.size(); ++i) {
      if (auto c = analysis::compare_targets(offers[0], offers[i]))
        comparisons.push_back(comparison_json(*c));
    }
  }
  combined["comparison"] = comparisons;
  combined["comparison_basis"] = any_namesake ? "same-name targets" : "first target";

  // Demand plan over all targets, when every job planned for the same demand.
  const auto& d0 = json_member(json_member(results_docs[0], "plan_document"), "demand");
  bool same_demand = d0.is_object();
  for (const auto& doc : results_docs) {
    same_demand = same_demand && json_member(json_member(doc, "plan_document"), "demand") == d0;
  }
  if (same_demand) {
    analysis::Demand demand;
    demand.requests_per_min = json_number(d0, "requests_per_minute").value_or(0);
    demand.mean_output_tokens = json_number(d0, "mean_output_tokens").value_or(0);
    demand.headroom = json_number(d0, "headroom").value_or(demand.headroom);
    combined["demand_plan"] = demand_plan_json(analysis::plan_demand(
        demand, offers, json_number(d0, "hours_per_month").value_or(analysis::kHoursPerMonth)));
  }
  // The first job's plan, so the page still shows what ran; the others are in their own jobs.
  // Its SLA lines are drawn only when every job judged against the same SLA: another job's
  // points against job A's bounds would mislead.
  if (results_docs[0].contains("plan_document")) {
    combined["plan_document"] = results_docs[0]["plan_document"];
    const auto& sla0 = json_member(results_docs[0]["plan_document"], "sla");
    bool same_sla = true;
    for (const auto& doc : results_docs)
      same_sla = same_sla && json_member(json_member(doc, "plan_document"), "sla") == sla0;
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

#include "api/prediction_check.h"

#include <cmath>
#include <cstdio>
#include <tuple>

#include "api/report_format.h"
#include "api/report_tables.h"

namespace llmcap::api {

using nlohmann::json;

namespace {

std::string job_of(const json& doc) {
  const auto id = json_string(json_member(doc, "job"), "id");
  return id.empty() ? json_string(doc, "job_id") : id;
}

std::string base_url_of(const json& doc, const std::string& target) {
  const auto& targets = json_member(doc, "targets");
  for (const auto& t : targets.is_array() ? targets : json::array())
    if (json_string(t, "name") == target) return json_string(t, "base_url");
  return "";
}

// The qualified rate: the planned open-loop rate, else what a closed-loop level sustained.
std::optional<double> rate_of(const CapacityRow& r) {
  if (!r.qualified) return std::nullopt;
  return r.offered_rate_rps ? r.offered_rate_rps : r.requests_per_s;
}

json side(const CapacityRow& r) {
  auto num = [](const std::optional<double>& v) { return v ? json(*v) : json(); };
  return json{{"target", r.target},
              {"outcome", r.outcome.empty() ? (r.qualified ? "pass" : "fail") : r.outcome},
              {"qualified_rps", num(rate_of(r))},
              {"output_tokens_per_s", r.qualified ? num(r.output_tokens_per_s) : json()},
              {"ttft_p95_ms", r.qualified ? num(r.ttft_p95_ms) : json()},
              {"tpot_p95_ms", r.qualified ? num(r.tpot_p95_ms) : json()},
              {"e2e_p95_ms", r.qualified ? num(r.e2e_p95_ms) : json()}};
}

}  // namespace

std::string signed_percent(double fraction) {
  double pct = fraction * 100;
  if (std::abs(pct) < 0.05) pct = 0;  // never "-0.0 %"
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f %%", pct);
  return buf;
}

bool is_predicted(const json& results) {
  const auto& p = json_member(results, "predicted");
  return p.is_boolean() && p.get<bool>();
}

json prediction_check(const json& predicted, const json& measured) {
  json out{{"predicted_job", job_of(predicted)},
           {"measured_job", job_of(measured)},
           {"targets", json::array()}};
  const auto prows = capacity_rows(predicted);
  const auto mrows = capacity_rows(measured);
  std::vector<bool> used(mrows.size(), false);
  for (const auto& p : prows) {
    std::optional<std::size_t> match;
    for (std::size_t i = 0; i < mrows.size() && !match; ++i)
      if (!used[i] && mrows[i].target == p.target) match = i;
    const std::string url = base_url_of(predicted, p.target);
    for (std::size_t i = 0; i < mrows.size() && !match && !url.empty(); ++i)
      if (!used[i] && base_url_of(measured, mrows[i].target) == url) match = i;
    if (!match) continue;
    used[*match] = true;
    const CapacityRow& m = mrows[*match];
    json pair{{"target", p.target}, {"predicted", side(p)}, {"measured", side(m)}};
    json errors = json::object();
    for (const char* key :
         {"qualified_rps", "output_tokens_per_s", "ttft_p95_ms", "tpot_p95_ms", "e2e_p95_ms"}) {
      const auto pv = json_number(pair["predicted"], key);
      const auto mv = json_number(pair["measured"], key);
      errors[key] = pv && mv && *pv > 0 ? json((*mv - *pv) / *pv) : json();
    }
    pair["relative_error"] = std::move(errors);
    out["targets"].push_back(std::move(pair));
  }
  return out;
}

std::vector<std::string> prediction_check_lines(const json& check) {
  std::vector<std::string> lines;
  const auto& targets = json_member(check, "targets");
  for (const auto& t : targets.is_array() ? targets : json::array()) {
    const auto& p = json_member(t, "predicted");
    const auto& m = json_member(t, "measured");
    const auto& e = json_member(t, "relative_error");
    const auto pr = json_number(p, "qualified_rps");
    const auto mr = json_number(m, "qualified_rps");
    std::string line = json_string(t, "target") + ": predicted " +
                       (pr ? format_fixed(*pr, 2) + " rps" : json_string(p, "outcome")) +
                       ", measured " +
                       (mr ? format_fixed(*mr, 2) + " rps" : json_string(m, "outcome"));
    if (const auto err = json_number(e, "qualified_rps")) line += ", " + signed_percent(*err);
    for (const auto& [key, name, unit, decimals] :
         {std::tuple{"output_tokens_per_s", "output tok/s", "", 1},
          std::tuple{"ttft_p95_ms", "P95 TTFT", " ms", 0},
          std::tuple{"tpot_p95_ms", "P95 TPOT", " ms", 1},
          std::tuple{"e2e_p95_ms", "P95 E2E", " ms", 0}}) {
      const auto pv = json_number(p, key);
      const auto mv = json_number(m, key);
      const auto err = json_number(e, key);
      if (!pv || !mv || !err) continue;
      line += "; " + std::string(name) + " " + format_fixed(*pv, decimals) + " vs " +
              format_fixed(*mv, decimals) + unit + " (" + signed_percent(*err) + ")";
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

}  // namespace llmcap::api

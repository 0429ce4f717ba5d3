#include "server/engine/catalog_plan.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <set>

#include "analysis/cost.h"
#include "analysis/memory_fit.h"
#include "api/plan_reader.h"
#include "api/report_format.h"
#include "api/report_tables.h"
#include "server/engine/embedded_sims.h"
#include "server/engine/plan_conversion.h"
#include "server/engine/plan_executor.h"
#include "sim/profile_catalog.h"
#include "sim/sim_options.h"

namespace llmcap::server {

using nlohmann::json;

namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// The catalogue the template target's simulator would see: built-in profiles plus its
// sim.profiles_file, if any.
std::optional<std::string> load_catalog(const json& sim, sim::ProfileCatalog& catalog) {
  catalog = sim::ProfileCatalog::builtin();
  if (sim.is_object() && sim.contains("profiles_file") && sim["profiles_file"].is_string()) {
    const std::string file = sim["profiles_file"].get<std::string>();
    if (!file.empty()) {
      if (auto err = catalog.add_file(file)) return "sim/profiles_file: " + *err;
    }
  }
  return std::nullopt;
}

// "<profile>-tp<N>" -> (profile, N); any other name is a profile at TP 1.
std::pair<std::string, int> split_candidate(const std::string& name) {
  const auto at = name.rfind("-tp");
  if (at == std::string::npos || at + 3 >= name.size() || name.size() - at > 5) return {name, 1};
  const std::string digits = name.substr(at + 3);
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return {name, 1};
  return {name.substr(0, at), std::stoi(digits)};
}

json number_or_null(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

}  // namespace

CatalogPricesParse parse_catalog_prices(std::string_view text,
                                        const std::vector<std::string>& known_hardware) {
  CatalogPricesParse out;
  const json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    out.errors.push_back({"",
                          "a price file is a JSON object: {\"currency\": \"USD\", "
                          "\"prices_per_hour\": {\"<hardware profile>\": 1.79}}"});
    return out;
  }
  CatalogPrices prices;
  for (const auto& [key, value] : doc.items()) {
    if (key == "currency") {
      const bool ok = value.is_string() && value.get<std::string>().size() == 3 &&
                      std::all_of(value.get_ref<const std::string&>().begin(),
                                  value.get_ref<const std::string&>().end(),
                                  [](char c) { return c >= 'A' && c <= 'Z'; });
      if (!ok)
        out.errors.push_back({"/currency", "must be a 3-letter ISO 4217 code such as USD"});
      else
        prices.currency = value.get<std::string>();
    } else if (key == "source" || key.starts_with("_")) {
      if (!value.is_string())
        out.errors.push_back({"/" + key, "must be a string"});
      else if (key == "source")
        prices.source = value.get<std::string>();
    } else if (key == "prices_per_hour") {
      if (!value.is_object()) {
        out.errors.push_back({"/prices_per_hour", "must be an object of profile name -> price"});
        continue;
      }
      for (const auto& [hw, price] : value.items()) {
        const std::string at = "/prices_per_hour/" + hw;
        if (std::find(known_hardware.begin(), known_hardware.end(), hw) == known_hardware.end()) {
          out.errors.push_back(
              {at, "unknown hardware profile (known: " + joined(known_hardware) + ")"});
        } else if (!price.is_number() || price.get<double>() < 0 || price.get<double>() > 1e6) {
          out.errors.push_back({at, "must be a price per hour in 0..1000000"});
        } else {
          prices.per_hour[hw] = price.get<double>();
        }
      }
    } else {
      out.errors.push_back({"/" + key,
                            "unknown key (a price file has currency, source and "
                            "prices_per_hour)"});
    }
  }
  if (!doc.contains("prices_per_hour"))
    out.errors.push_back({"/prices_per_hour", "required: the hourly price of each profile"});
  if (out.errors.empty()) out.prices = std::move(prices);
  return out;
}

CatalogPlan build_catalog_plan(const json& normalized_plan, const CatalogPrices* prices,
                               const std::vector<std::string>& only,
                               const std::vector<int>& tensor_parallel) {
  CatalogPlan out;
  const json& targets = normalized_plan.contains("targets") ? normalized_plan["targets"] : json();
  const json* tmpl = nullptr;
  if (targets.is_array()) {
    for (const auto& t : targets) {
      if (t.is_object() && EmbeddedSimulators::is_sim_url(t.value("base_url", ""))) {
        tmpl = &t;
        break;
      }
    }
  }
  if (!tmpl) {
    out.error =
        "/targets: --catalog takes the model and precision from a sim://<hardware>/<model> "
        "target; the plan has none";
    return out;
  }
  const std::string url = tmpl->value("base_url", "");
  out.model = url.substr(url.rfind('/') + 1);
  const json sim = tmpl->contains("sim") ? (*tmpl)["sim"] : json::object();
  {
    const auto made = EmbeddedSimulators::sim_options_for(url, sim.dump(), 0);
    if (!made.options) {
      out.error = "/targets: the first sim:// target's simulator: " + made.error;
      return out;
    }
    out.dtype = made.options->dtype;
  }
  sim::ProfileCatalog catalog;
  if (auto err = load_catalog(sim, catalog)) {
    out.error = "/targets: " + *err;
    return out;
  }
  std::vector<std::string> names = catalog.hardware_names();
  if (!only.empty()) {
    for (const auto& n : only) {
      if (std::find(names.begin(), names.end(), n) == names.end()) {
        out.error = "--hardware: unknown profile '" + n + "' (known: " + joined(names) + ")";
        return out;
      }
    }
    std::erase_if(names, [&](const std::string& n) {
      return std::find(only.begin(), only.end(), n) == only.end();
    });
  }

  // Prices the plan itself gives a profile (a target on it), used when the price file has none.
  std::map<std::string, std::pair<double, std::string>> plan_prices;
  for (const auto& t : targets) {
    const std::string u = t.value("base_url", "");
    if (!EmbeddedSimulators::is_sim_url(u) || !t.contains("price_per_hour")) continue;
    const std::string rest = u.substr(std::string("sim://").size());
    const std::string hw = rest.substr(0, rest.find('/'));
    plan_prices.emplace(hw, std::make_pair(t["price_per_hour"].get<double>(),
                                           t.value("currency", std::string("USD"))));
  }

  json plan = normalized_plan;
  plan["name"] = normalized_plan.value("name", std::string("plan")) + "-catalog";
  plan["description"] = "Every GPU profile of the simulator's catalogue serving " + out.model +
                        " " + out.dtype + " with the workload, SLA, phases and demand of plan '" +
                        normalized_plan.value("name", std::string("plan")) +
                        "', predicted in virtual time (llmcapd predict --catalog).";
  plan["targets"] = json::array();
  // One candidate per (profile, tensor-parallel degree) the model's layout takes.
  struct Candidate {
    std::string profile;
    int tp = 1;
    std::string name;
  };
  std::vector<Candidate> candidates;
  // Every candidate that cannot serve the plan, by (profile index, degree): catalogue order.
  std::map<std::pair<std::size_t, int>, CatalogExclusion> excluded;
  const auto model_spec = catalog.model(out.model);
  for (std::size_t n = 0; n < names.size(); ++n) {
    const std::string& name = names[n];
    for (int tp : tensor_parallel.empty() ? std::vector<int>{1} : tensor_parallel) {
      const std::string cand = tp == 1 ? name : name + "-tp" + std::to_string(tp);
      if (const auto problem =
              model_spec ? analysis::tensor_parallel_problem(*model_spec, tp) : std::nullopt) {
        excluded[{n, tp}] = {name, *problem, cand, tp};
        continue;
      }
      candidates.push_back({name, tp, cand});
    }
  }
  for (const auto& cand : candidates) {
    const std::string& name = cand.profile;
    const auto hw = catalog.hardware(name);
    json t = *tmpl;
    t["name"] = cand.name;
    t["base_url"] = "sim://" + name + "/" + out.model;
    if (!t.contains("sim") || !t["sim"].is_object()) t["sim"] = json::object();
    t["sim"].erase("tensor_parallel");
    if (cand.tp > 1) t["sim"]["tensor_parallel"] = cand.tp;
    json hardware = {{"gpu", hw->display_name},
                     {"gpu_count", cand.tp},
                     {"memory_gb_visible", hw->nominal_memory_gb},
                     {"engine", "llmcap-sim"},
                     {"precision", out.dtype}};
    if (!hw->form_factor.empty()) hardware["form_factor"] = hw->form_factor;
    if (!hw->interconnect.empty()) hardware["interconnect"] = hw->interconnect;
    t["hardware"] = std::move(hardware);
    t.erase("price_per_hour");
    t.erase("currency");
    // Prices are per GPU-hour: an instance of N GPUs costs N times one.
    if (prices && prices->per_hour.contains(name)) {
      t["price_per_hour"] = prices->per_hour.at(name) * cand.tp;
      t["currency"] = prices->currency;
    } else if (!prices || prices->per_hour.empty()) {
      if (auto it = plan_prices.find(name); it != plan_prices.end()) {
        t["price_per_hour"] = it->second.first * cand.tp;
        t["currency"] = it->second.second;
      }
    }
    plan["targets"].push_back(std::move(t));
  }

  if (candidates.empty()) {  // no degree the model's layout takes: nothing to run
    for (auto& [key, e] : excluded) out.excluded.push_back(std::move(e));
    plan["targets"] = json::array();
    out.plan = std::move(plan);
    return out;
  }
  // Which candidates can serve the plan: the same checks a prediction makes before it runs.
  api::PlanLimits limits;
  limits.max_targets = std::max<int>(limits.max_targets, static_cast<int>(candidates.size()));
  const auto parse = api::parse_plan(plan.dump(), limits);
  if (!parse.errors.empty()) {
    out.error = parse.errors.front().path + ": " + parse.errors.front().message;
    return out;
  }
  RunPlan run;
  if (auto err = to_run_plan(parse, run); !err.empty()) {
    out.error = err;
    return out;
  }
  std::set<std::size_t> drop;
  for (const auto& problem : PlanExecutor::prediction_problems(run)) {
    // "/targets/<i>/<field>: <reason>"
    const std::string prefix = "/targets/";
    if (!problem.starts_with(prefix)) continue;
    const std::size_t i = std::stoul(problem.substr(prefix.size()));
    const auto colon = problem.find(": ");
    const std::string field =
        problem.substr(prefix.size(), colon == std::string::npos ? 0 : colon - prefix.size());
    std::string reason = colon == std::string::npos ? problem : problem.substr(colon + 2);
    // A sim option this profile refuses is named; a base_url problem is the profile itself.
    if (field.find('/') != std::string::npos && !field.ends_with("/base_url"))
      reason = field.substr(field.find('/') + 1) + ": " + reason;
    if (reason.starts_with("simulator cannot start: "))
      reason = reason.substr(std::string("simulator cannot start: ").size());
    if (i >= candidates.size() || !drop.insert(i).second) continue;  // its first problem
    const auto& c = candidates[i];
    const auto n =
        static_cast<std::size_t>(std::find(names.begin(), names.end(), c.profile) - names.begin());
    excluded[{n, c.tp}] = {c.profile, reason, c.name, c.tp};
  }
  json kept = json::array();
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (drop.contains(i)) continue;
    kept.push_back(plan["targets"][i]);
    out.hardware.push_back(candidates[i].name);
  }
  for (auto& [key, e] : excluded) out.excluded.push_back(std::move(e));
  plan["targets"] = std::move(kept);
  out.plan = std::move(plan);
  return out;
}

json catalog_ranking(const json& results) {
  const bool with_demand = api::json_member(results, "demand_plan").is_object();
  std::map<std::string, api::DemandRow> demand;
  for (auto& d : api::demand_rows(results)) demand[d.target] = d;
  // Groups, in ranking order: 0 priced and qualified, 1 qualified without a price, 2 no
  // qualified capacity, 3 cannot serve the plan.
  struct Entry {
    json doc;
    int group = 0;
    double cost = 0;       // the ranking figure of group 0
    double tie_break = 0;  // cost per million output tokens (demand) or -tok/s (group 1)
  };
  std::vector<Entry> entries;
  std::set<std::string> currencies;
  for (const auto& r : api::capacity_rows(results)) {
    const auto [profile, tp] = split_candidate(r.target);
    Entry e;
    e.doc = {{"rank", nullptr},
             {"name", r.target},
             {"hardware", profile},
             {"tensor_parallel", tp},
             {"status", "qualified"},
             {"reason", nullptr},
             {"output_tokens_per_s", r.qualified ? number_or_null(r.output_tokens_per_s) : json()},
             {"price_per_hour", number_or_null(r.price_per_hour)},
             {"currency", r.currency},
             {"cost_per_million_output_tokens", number_or_null(r.cost_per_million_output_tokens)},
             {"instances", nullptr},
             {"hourly_cost", nullptr},
             {"monthly_cost", nullptr}};
    const auto d = demand.find(r.target);
    const bool fleet = r.qualified && d != demand.end() && d->second.feasible &&
                       d->second.instances && d->second.monthly_cost;
    if (r.qualified && d != demand.end() && d->second.feasible && d->second.instances)
      e.doc["instances"] = *d->second.instances;
    if (fleet) {
      e.doc["hourly_cost"] = number_or_null(d->second.hourly_cost);
      e.doc["monthly_cost"] = *d->second.monthly_cost;
    }
    if (r.qualified && (with_demand ? fleet : r.cost_per_million_output_tokens.has_value())) {
      e.group = 0;
      e.cost = with_demand ? *d->second.monthly_cost : *r.cost_per_million_output_tokens;
      e.tie_break = r.cost_per_million_output_tokens.value_or(0);
      currencies.insert(r.currency);
    } else if (r.qualified) {
      e.group = 1;
      e.tie_break = -r.output_tokens_per_s.value_or(0);
      e.doc["reason"] = r.cost_per_million_output_tokens
                            ? "no monthly cost in the demand plan: ranked after those with one"
                            : "no price: ranked after the priced candidates, by output tok/s";
    } else {
      e.group = 2;
      const bool failed = r.outcome == "fail" || r.outcome.empty();
      e.doc["status"] = failed ? "fail" : "inconclusive";
      e.doc["reason"] = std::string(failed ? "fail: " : "inconclusive: ") +
                        (r.statement.empty() ? "no qualified capacity" : r.statement);
      e.doc["cost_per_million_output_tokens"] = nullptr;  // nothing qualified to price
    }
    entries.push_back(std::move(e));
  }
  const auto& excluded = api::json_member(api::json_member(results, "catalog"), "excluded");
  for (const auto& x : excluded.is_array() ? excluded : json::array()) {
    const std::string profile = api::json_string(x, "hardware");
    const std::string name = api::json_string(x, "name", profile);
    Entry e;
    e.group = 3;
    e.doc = {
        {"rank", nullptr},
        {"name", name},
        {"hardware", profile},
        {"tensor_parallel", api::json_number(x, "tensor_parallel")
                                ? json(static_cast<int>(*api::json_number(x, "tensor_parallel")))
                                : json(split_candidate(name).second)},
        {"status", "cannot_serve"},
        {"reason", "cannot serve the plan: " + api::json_string(x, "reason")},
        {"output_tokens_per_s", nullptr},
        {"price_per_hour", nullptr},
        {"currency", ""},
        {"cost_per_million_output_tokens", nullptr},
        {"instances", nullptr},
        {"hourly_cost", nullptr},
        {"monthly_cost", nullptr}};
    entries.push_back(std::move(e));
  }
  // Ties keep the catalogue's order.
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    if (a.group != b.group) return a.group < b.group;
    if (a.group == 0 && a.cost != b.cost) return a.cost < b.cost;
    if (a.group <= 1) return a.tie_break < b.tie_break;
    return false;
  });
  json candidates = json::array();
  int rank = 0;
  for (auto& e : entries) {
    if (e.group <= 1) e.doc["rank"] = ++rank;
    candidates.push_back(std::move(e.doc));
  }
  std::string basis;
  if (with_demand) {
    const auto& d = results["demand_plan"];
    char buf[320];
    std::snprintf(buf, sizeof buf,
                  "ranked by the monthly cost of the fleet the demand needs (%.0f output tok/s "
                  "with headroom, %.0f h/month: instances x price per hour x hours), cost per "
                  "million output tokens beside it",
                  api::json_number(d, "required_output_tokens_per_s").value_or(0),
                  api::json_number(d, "hours_per_month").value_or(analysis::kHoursPerMonth));
    basis = buf;
  } else {
    basis =
        "the plan has no demand: ranked by cost per million output tokens at each candidate's "
        "qualified capacity (add `demand` to the plan to rank by the monthly cost of the fleet "
        "it needs)";
  }
  return json{{"ranked_by", with_demand ? "monthly_cost" : "cost_per_million_output_tokens"},
              {"basis", basis},
              {"currencies", currencies},
              {"candidates", std::move(candidates)}};
}

}  // namespace llmcap::server

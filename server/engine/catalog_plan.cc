#include "server/engine/catalog_plan.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "analysis/memory_fit.h"
#include "api/plan_reader.h"
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
  const auto model_spec = catalog.model(out.model);
  for (const auto& name : names) {
    for (int tp : tensor_parallel.empty() ? std::vector<int>{1} : tensor_parallel) {
      if (model_spec && analysis::tensor_parallel_problem(*model_spec, tp)) continue;
      candidates.push_back({name, tp, tp == 1 ? name : name + "-tp" + std::to_string(tp)});
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

  // Which profiles can serve the plan: the same checks a prediction makes before it runs.
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
  std::map<std::string, std::string> why;  // profile -> why its last candidate cannot serve
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
    if (drop.insert(i).second) why[candidates[i].profile] = reason;
  }
  json kept = json::array();
  std::set<std::string> served;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (drop.contains(i)) continue;
    kept.push_back(plan["targets"][i]);
    out.hardware.push_back(candidates[i].name);
    served.insert(candidates[i].profile);
  }
  // A profile is excluded when no degree serves the plan; the reason is its largest degree's.
  for (const auto& name : names)
    if (!served.contains(name) && why.contains(name)) out.excluded.push_back({name, why[name]});
  plan["targets"] = std::move(kept);
  out.plan = std::move(plan);
  return out;
}

}  // namespace llmcap::server

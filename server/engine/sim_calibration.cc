#include "server/engine/sim_calibration.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <stop_token>

#include "api/plan_reader.h"
#include "server/engine/embedded_sims.h"
#include "server/engine/plan_conversion.h"
#include "server/engine/plan_executor.h"
#include "sim/embedded_profiles.h"

namespace llmcap::server {

using nlohmann::json;

namespace {

// A parameter's profile key, its physical range and its unit in the profile file.
struct ParameterSpec {
  const char* key;
  double lo, hi;
  double fallback;  // when the base profile does not set it (sim/profiles/hardware.json _comment)
};
constexpr ParameterSpec kParameters[] = {
    {"bandwidth_efficiency", 0.3, 1.0, 0.8},
    {"compute_efficiency", 0.15, 1.0, 0.75},
    // A profile's step_overhead_ms overrides its engine's (sim/roofline.h EngineProfile); the
    // fit starts from vLLM's current figure when the profile leaves it to the engine.
    {"step_overhead_ms", 0.0, 20.0, 0.5},
};
constexpr std::size_t kParameterCount = std::size(kParameters);

// One step to replay: where it sits in the replay plan and what was measured there.
struct ReplayStep {
  std::string label;
  bool closed_loop = false;
  // TTFT is fitted where it measures the box: one request at a time, or open-loop arrivals. In a
  // closed loop of N > 1 with fixed lengths the requests move in cohorts whose phase a real
  // client's jitter shifts, so its TTFT median jumps between the cohorts' modes.
  bool ttft_fitted = false;
  double tpot_mean = 0, ttft_p50 = 0, output_tokens_per_s = 0;
};

double number_at(const json& j, std::initializer_list<const char*> path) {
  const json* at = &j;
  for (const char* k : path) {
    if (!at->is_object() || !at->contains(k)) return 0;
    at = &(*at)[k];
  }
  return at->is_number() ? at->get<double>() : 0;
}

std::optional<json> base_profile(const std::string& name, const std::string& profiles_file,
                                 std::string& error) {
  std::optional<json> found;
  auto search = [&](const json& doc) {
    if (!doc.is_object() || !doc.contains("hardware") || !doc["hardware"].is_array()) return;
    for (const auto& h : doc["hardware"])
      if (h.is_object() && h.value("name", "") == name) found = h;
  };
  for (std::size_t i = 0; i < sim::embedded::kFileCount; ++i) {
    if (sim::embedded::kFiles[i].name.find("hardware") == std::string_view::npos) continue;
    search(json::parse(sim::embedded::kFiles[i].content, nullptr, false));
  }
  if (!profiles_file.empty()) {
    std::ifstream in(profiles_file);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const json doc = json::parse(text, nullptr, false);
    if (!in || doc.is_discarded()) {
      error = "--profiles-file: cannot read '" + profiles_file + "' as JSON";
      return std::nullopt;
    }
    search(doc);  // a user entry replaces the built-in one of the same name
  }
  if (!found) error = "--hardware: no hardware profile named '" + name + "'";
  return found;
}

// The replay plan's phase for a measured phase's steps (closed loop: a concurrency sweep;
// open loop: a rate sweep at the planned rates), keeping the source phase's window, warm-up,
// arrival process and drain. `confirm`: a capacity search's confirm steps, with its
// confirm_duration_s.
json replay_phase(const json& source, bool closed_loop, const std::vector<double>& levels,
                  bool confirm) {
  json p = {{"kind", closed_loop ? "concurrency_sweep" : "rate_sweep"}};
  for (const char* k : {"warmup_s", "drain", "requests", "max_duration_s"})
    if (source.contains(k)) p[k] = source[k];
  if (!closed_loop)
    for (const char* k : {"arrival", "burstiness", "max_in_flight"})
      if (source.contains(k)) p[k] = source[k];
  if (confirm && source.contains("confirm_duration_s")) {
    p["duration_s"] = source["confirm_duration_s"];
    p.erase("requests");
  } else if (source.contains("duration_s") && !p.contains("requests")) {
    p["duration_s"] = source["duration_s"];
  }
  json values = json::array();
  for (double v : levels) {
    if (closed_loop)
      values.push_back(static_cast<std::int64_t>(std::llround(v)));
    else
      values.push_back(v);
  }
  p[closed_loop ? "levels" : "rates_rps"] = std::move(values);
  return p;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

class Replay {
 public:
  Replay(json plan, std::vector<ReplayStep> steps, json entry, std::string path)
      : plan_(std::move(plan)),
        steps_(std::move(steps)),
        entry_(std::move(entry)),
        path_(std::move(path)) {}

  // Predicts the replayed steps with the profile's parameters set to `values`; the figures in
  // step order, or an error.
  std::optional<std::vector<std::array<double, 3>>> predict(const std::vector<double>& values,
                                                            std::string& error) {
    json profile = entry_;
    for (std::size_t i = 0; i < kParameterCount; ++i) profile[kParameters[i].key] = values[i];
    {
      std::ofstream out(path_);
      out << json{{"hardware", json::array({profile})}}.dump();
      if (!out) {
        error = "cannot write '" + path_ + "'";
        return std::nullopt;
      }
    }
    api::PlanLimits limits = api::PlanLimits::none();
    const auto parse = api::parse_plan(plan_.dump(), limits);
    if (!parse.errors.empty()) {
      error = "replay plan: " + parse.errors.front().path + ": " + parse.errors.front().message;
      return std::nullopt;
    }
    RunPlan run;
    if (auto err = to_run_plan(parse, run); !err.empty()) {
      error = "replay plan: " + err;
      return std::nullopt;
    }
    if (auto err = use_profiles_file(run, path_); !err.empty()) {
      error = err;
      return std::nullopt;
    }
    ExecutionSink sink;
    PlanExecutor executor(sims_, sink, nullptr, ExecutionMode::kPredict);
    std::stop_source stop;
    const auto result = executor.run(run, stop.get_token());
    if (!result.error.empty()) {
      error = result.error;
      return std::nullopt;
    }
    std::vector<std::array<double, 3>> out;
    for (const auto& t : result.results.value("targets", json::array()))
      for (const auto& p : t.value("phases", json::array()))
        for (const auto& s : p.value("steps", json::array())) {
          // A level judged again over a longer window (its planned one held too few request
          // lifetimes) runs twice; the step at the planned window is the measured one's twin.
          if (s.contains("params") && s["params"].value("judged_again_for_trend", false)) continue;
          out.push_back({number_at(s, {"stats", "tpot_ms", "mean"}),
                         number_at(s, {"stats", "ttft_ms", "p50"}),
                         number_at(s, {"stats", "output_tokens_per_s"})});
        }
    if (out.size() != steps_.size()) {
      error = "the replay ran " + std::to_string(out.size()) + " steps, expected " +
              std::to_string(steps_.size());
      return std::nullopt;
    }
    return out;
  }

  // Sum of squared log errors over every measured figure.
  double loss(const std::vector<std::array<double, 3>>& predicted) const {
    double sum = 0;
    auto term = [&sum](double p, double m) {
      if (m > 0 && p > 0) sum += std::pow(std::log(p / m), 2);
    };
    for (std::size_t i = 0; i < steps_.size(); ++i) {
      term(predicted[i][0], steps_[i].tpot_mean);
      if (steps_[i].ttft_fitted) term(predicted[i][1], steps_[i].ttft_p50);
      if (steps_[i].closed_loop) term(predicted[i][2], steps_[i].output_tokens_per_s);
    }
    return sum;
  }

  double median_error(const std::vector<std::array<double, 3>>& predicted) const {
    std::vector<double> errors;
    auto add = [&errors](double p, double m) {
      if (m > 0) errors.push_back(std::abs(p - m) / m);
    };
    for (std::size_t i = 0; i < steps_.size(); ++i) {
      add(predicted[i][0], steps_[i].tpot_mean);
      if (steps_[i].ttft_fitted) add(predicted[i][1], steps_[i].ttft_p50);
      if (steps_[i].closed_loop) add(predicted[i][2], steps_[i].output_tokens_per_s);
    }
    return median(errors);
  }

  const std::vector<ReplayStep>& steps() const { return steps_; }

 private:
  json plan_;
  std::vector<ReplayStep> steps_;
  json entry_;
  std::string path_;
  EmbeddedSimulators sims_;  // unused in virtual time; PlanExecutor needs one
};

std::string temp_profile_path() {
  static std::atomic<int> counter{0};
  return (std::filesystem::temp_directory_path() /
          ("llmcap-calibrate-" + std::to_string(::getpid()) + "-" +
           std::to_string(counter.fetch_add(1)) + ".json"))
      .string();
}

}  // namespace

std::string use_profiles_file(RunPlan& plan, const std::string& path) {
  for (auto& t : plan.targets) {
    if (!EmbeddedSimulators::is_sim_url(t.base_url)) continue;
    json options = t.sim_options_json.empty() ? json::object()
                                              : json::parse(t.sim_options_json, nullptr, false);
    if (!options.is_object()) return "target " + t.name + ": sim options are not an object";
    if (!options.contains("profiles_file")) options["profiles_file"] = path;
    t.sim_options_json = options.dump();
  }
  return "";
}

CalibrationResult calibrate(const CalibrationInput& input) {
  CalibrationResult out;
  const json& doc = input.measured;
  const json& plan_doc = doc.contains("plan_document") ? doc["plan_document"] : json();
  if (!plan_doc.is_object()) {
    out.error =
        "RESULTS: no plan_document: give a `llmcapd run --out` results file, or a daemon job's "
        "results with its plan (llmcapd report JOB_ID keeps it)";
    return out;
  }
  const json* target = nullptr;
  static const json kNone = json::array();
  // Both arms lvalues: `target` points into the document itself, never into a copy.
  const json& targets =
      doc.contains("targets") && doc["targets"].is_array() ? doc["targets"] : kNone;
  for (const auto& t : targets) {
    if (!t.is_object()) continue;
    if (input.target.empty() || t.value("name", "") == input.target) {
      target = &t;
      break;
    }
  }
  if (!target) {
    out.error = input.target.empty() ? "RESULTS: no targets"
                                     : "--target: no target named '" + input.target + "'";
    return out;
  }
  std::string hardware = input.hardware, model = input.model;
  const std::string url = target->value("base_url", "");
  if (EmbeddedSimulators::is_sim_url(url)) {
    const std::string rest = url.substr(std::string("sim://").size());
    if (hardware.empty()) hardware = rest.substr(0, rest.find('/'));
    if (model.empty()) model = rest.substr(rest.find('/') + 1);
  }
  if (hardware.empty() || model.empty()) {
    out.error = "--hardware and --model: target '" + target->value("name", "") +
                "' is not a sim:// target; name the profile to start from";
    return out;
  }
  // The target's own sim options, when it was simulated (kv cache dtype, batch limits…).
  json sim = json::object();
  for (const auto& t : plan_doc.value("targets", json::array()))
    if (t.value("name", "") == target->value("name", "") && t.contains("sim")) sim = t["sim"];
  std::string dtype = input.dtype;
  if (dtype.empty()) dtype = target->value("precision", "");
  if (dtype.empty()) dtype = sim.value("dtype", "");
  if (dtype.empty()) dtype = "bf16";
  out.model = model;
  out.dtype = dtype;
  out.profile_name = input.profile_name.empty() ? hardware + "-calibrated" : input.profile_name;

  std::string error;
  auto entry = base_profile(hardware, input.profiles_file, error);
  if (!entry) {
    out.error = error;
    return out;
  }
  (*entry)["name"] = out.profile_name;
  (*entry)["display_name"] =
      entry->value("display_name", hardware) + " (calibrated to a measured job)";

  // The measured steps, phase by phase, as replay phases (closed loop, open loop, confirms).
  std::map<std::string, json> source_phases;
  for (const auto& p : plan_doc.value("phases", json::array()))
    source_phases[p.value("name", p.value("kind", ""))] = p;
  json phases = json::array();
  std::vector<ReplayStep> steps;
  for (const auto& ph : target->value("phases", json::array())) {
    const std::string kind = ph.value("kind", "");
    if (kind != "concurrency_sweep" && kind != "rate_sweep" && kind != "capacity_search")
      continue;  // bursts and soaks are judged over time, not one steady level
    const json& source = source_phases[ph.value("name", kind)];
    const bool closed = kind == "concurrency_sweep";
    for (const bool confirm : {false, true}) {
      std::vector<double> levels;
      for (const auto& s : ph.value("steps", json::array())) {
        const json& params = s.contains("params") ? s["params"] : json();
        if (params.value("confirm", false) != confirm) continue;
        if (params.value("judged_again_for_trend", false)) continue;  // as the replay (above)
        const double level =
            closed ? number_at(params, {"concurrency"}) : number_at(params, {"rate_rps"});
        if (level <= 0 || std::find(levels.begin(), levels.end(), level) != levels.end()) continue;
        ReplayStep r;
        r.label = s.value("label", "");
        r.closed_loop = closed;
        r.ttft_fitted = !closed || level == 1;
        r.tpot_mean = number_at(s, {"stats", "tpot_ms", "mean"});
        r.ttft_p50 = number_at(s, {"stats", "ttft_ms", "p50"});
        r.output_tokens_per_s = number_at(s, {"stats", "output_tokens_per_s"});
        if (r.tpot_mean <= 0 && r.ttft_p50 <= 0) continue;  // nothing measured there
        levels.push_back(level);
        steps.push_back(std::move(r));
      }
      if (!levels.empty()) phases.push_back(replay_phase(source, closed, levels, confirm));
    }
  }
  if (steps.empty()) {
    out.error = "RESULTS: target '" + target->value("name", "") +
                "' has no concurrency, rate or search step with measured latencies";
    return out;
  }

  const std::string path = temp_profile_path();
  json replay_sim = sim;
  for (const char* k : {"time_scale", "faults", "seed", "address", "port"}) replay_sim.erase(k);
  replay_sim["dtype"] = dtype;
  json plan = plan_doc;
  plan.erase("agents");
  plan.erase("demand");
  plan["name"] = "calibration";
  plan["phases"] = phases;
  plan["targets"] = json::array({{{"name", "calibration"},
                                  {"base_url", "sim://" + out.profile_name + "/" + model},
                                  {"sim", replay_sim}}});
  Replay replay(std::move(plan), std::move(steps), *entry, path);

  std::vector<double> start(kParameterCount);
  for (std::size_t i = 0; i < kParameterCount; ++i) {
    const double v = entry->value(kParameters[i].key, kParameters[i].fallback);
    start[i] =
        std::clamp(v < 0 ? kParameters[i].fallback : v, kParameters[i].lo, kParameters[i].hi);
  }
  // Nelder–Mead on the parameters scaled to [0, 1] of their ranges, clamped to them.
  auto to_values = [](const std::vector<double>& u) {
    std::vector<double> v(kParameterCount);
    for (std::size_t i = 0; i < kParameterCount; ++i)
      v[i] =
          kParameters[i].lo + std::clamp(u[i], 0.0, 1.0) * (kParameters[i].hi - kParameters[i].lo);
    return v;
  };
  std::string eval_error;
  auto evaluate = [&](const std::vector<double>& u) {
    ++out.evaluations;
    const auto p = replay.predict(to_values(u), eval_error);
    return p ? replay.loss(*p) : std::numeric_limits<double>::infinity();
  };
  std::vector<double> u0(kParameterCount);
  for (std::size_t i = 0; i < kParameterCount; ++i)
    u0[i] = (start[i] - kParameters[i].lo) / (kParameters[i].hi - kParameters[i].lo);
  const auto before = replay.predict(start, eval_error);
  if (!before) {
    out.error = "the replay cannot run: " + eval_error;
    std::filesystem::remove(path);
    return out;
  }
  std::vector<std::vector<double>> simplex{u0};
  for (std::size_t i = 0; i < kParameterCount; ++i) {
    auto v = u0;
    v[i] = v[i] + 0.15 <= 1.0 ? v[i] + 0.15 : v[i] - 0.15;
    simplex.push_back(v);
  }
  std::vector<double> f;
  for (const auto& v : simplex) f.push_back(evaluate(v));
  while (out.evaluations < input.max_evaluations) {
    std::vector<std::size_t> order(simplex.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](auto a, auto b) { return f[a] < f[b]; });
    const std::size_t best = order.front(), worst = order.back(), second = order[order.size() - 2];
    if (f[worst] - f[best] < 1e-9) break;
    std::vector<double> centroid(kParameterCount, 0);
    for (std::size_t k : order)
      if (k != worst)
        for (std::size_t i = 0; i < kParameterCount; ++i)
          centroid[i] += simplex[k][i] / static_cast<double>(kParameterCount);
    auto along = [&](double t) {
      std::vector<double> v(kParameterCount);
      for (std::size_t i = 0; i < kParameterCount; ++i)
        v[i] = std::clamp(centroid[i] + t * (simplex[worst][i] - centroid[i]), 0.0, 1.0);
      return v;
    };
    const auto reflected = along(-1.0);
    const double fr = evaluate(reflected);
    if (fr < f[best]) {
      const auto expanded = along(-2.0);
      const double fe = evaluate(expanded);
      simplex[worst] = fe < fr ? expanded : reflected;
      f[worst] = std::min(fe, fr);
    } else if (fr < f[second]) {
      simplex[worst] = reflected;
      f[worst] = fr;
    } else {
      const auto contracted = along(0.5);
      const double fc = evaluate(contracted);
      if (fc < f[worst]) {
        simplex[worst] = contracted;
        f[worst] = fc;
      } else {  // shrink towards the best
        for (std::size_t k : order) {
          if (k == best) continue;
          for (std::size_t i = 0; i < kParameterCount; ++i)
            simplex[k][i] = simplex[best][i] + 0.5 * (simplex[k][i] - simplex[best][i]);
          f[k] = evaluate(simplex[k]);
        }
      }
    }
  }
  const std::size_t best =
      static_cast<std::size_t>(std::min_element(f.begin(), f.end()) - f.begin());
  const auto fitted = to_values(simplex[best]);
  const auto after = replay.predict(fitted, eval_error);
  std::filesystem::remove(path);
  if (!after) {
    out.error = "the replay cannot run: " + eval_error;
    return out;
  }
  for (std::size_t i = 0; i < kParameterCount; ++i) {
    out.parameters.push_back({kParameters[i].key, start[i], fitted[i]});
    (*entry)[kParameters[i].key] = std::round(fitted[i] * 1e4) / 1e4;
  }
  out.median_error_before = replay.median_error(*before);
  out.median_error_after = replay.median_error(*after);
  for (std::size_t i = 0; i < replay.steps().size(); ++i) {
    const auto& m = replay.steps()[i];
    CalibrationStep s;
    s.label = m.label;
    s.measured_tpot_mean_ms = m.tpot_mean;
    s.measured_ttft_p50_ms = m.ttft_p50;
    s.measured_output_tokens_per_s = m.output_tokens_per_s;
    s.before_tpot_mean_ms = (*before)[i][0];
    s.before_ttft_p50_ms = (*before)[i][1];
    s.before_output_tokens_per_s = (*before)[i][2];
    s.after_tpot_mean_ms = (*after)[i][0];
    s.after_ttft_p50_ms = (*after)[i][1];
    s.after_output_tokens_per_s = (*after)[i][2];
    out.steps.push_back(s);
  }
  char comment[512];
  std::snprintf(comment, sizeof comment,
                "Calibrated by llmcapd sim calibrate from %s (target %s): %s's bandwidth, compute "
                "and per-step parameters fitted to %zu measured steps of %s %s; median step error "
                "%.1f %% before, %.1f %% after (docs/prediction.md).",
                doc.value("plan", std::string("a results document")).c_str(),
                target->value("name", "").c_str(), hardware.c_str(), out.steps.size(),
                model.c_str(), dtype.c_str(), out.median_error_before * 100,
                out.median_error_after * 100);
  out.profile_file = {{"_comment", comment}, {"hardware", json::array({*entry})}};
  return out;
}

std::string calibration_text(const CalibrationResult& r) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "profile %s (%s %s), %d predictions of the replayed steps\n",
                r.profile_name.c_str(), r.model.c_str(), r.dtype.c_str(), r.evaluations);
  out += line;
  for (const auto& p : r.parameters) {
    std::snprintf(line, sizeof line, "  %-22s %8.4f -> %8.4f\n", p.key.c_str(), p.before, p.after);
    out += line;
  }
  std::snprintf(line, sizeof line, "%-14s %26s %26s %32s\n", "step",
                "TPOT mean ms (meas/before/after)", "TTFT p50 ms", "out tok/s");
  out += line;
  for (const auto& s : r.steps) {
    std::snprintf(
        line, sizeof line, "%-14s %8.2f %8.2f %8.2f   %8.1f %8.1f %8.1f   %9.1f %9.1f %9.1f\n",
        s.label.c_str(), s.measured_tpot_mean_ms, s.before_tpot_mean_ms, s.after_tpot_mean_ms,
        s.measured_ttft_p50_ms, s.before_ttft_p50_ms, s.after_ttft_p50_ms,
        s.measured_output_tokens_per_s, s.before_output_tokens_per_s, s.after_output_tokens_per_s);
    out += line;
  }
  std::snprintf(line, sizeof line,
                "median |error| over the step figures: %.1f %% before, %.1f %% after\n",
                r.median_error_before * 100, r.median_error_after * 100);
  out += line;
  return out;
}

}  // namespace llmcap::server

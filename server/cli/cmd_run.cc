// `llmcapd run PLAN.json [--out results.json]`: runs a plan once, without a daemon, with the
// same parser, executor and analysis as the daemon; prints a line per step (redrawn live on a
// terminal) and the qualified-capacity table, and keeps the results: by default
// llmcap-results/<plan>_<targets>_<UTC time>.json and the HTML report beside it. Embedded
// simulators serve sim:// targets. `llmcapd predict PLAN.json` is the same command in virtual
// time (ExecutionMode::kPredict). Instead of PLAN.json both take the ad-hoc flags (--base-url,
// --concurrency, --sla, ...; adhoc_plan.h), which build the plan document a user could write; and
// --set key.path=value (plan_override.h) changes either before the plan is read. Either way the
// document goes through the one plan reader; --print-plan prints it and stops.
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stop_token>
#include <thread>
#include <vector>

#include "api/plan_reader.h"
#include "api/report_html.h"
#include "api/report_junit.h"
#include "api/report_tables.h"
#include "server/cli/adhoc_plan.h"
#include "server/cli/capacity_table.h"
#include "server/cli/command_line.h"
#include "server/cli/commands.h"
#include "server/cli/console_sink.h"
#include "server/cli/exit_codes.h"
#include "server/cli/plan_override.h"
#include "server/engine/catalog_plan.h"
#include "server/engine/dataset_policy.h"
#include "server/engine/embedded_sims.h"
#include "server/engine/plan_conversion.h"
#include "server/engine/plan_executor.h"
#include "server/engine/sim_calibration.h"
#include "server/logging.h"
#include "server/settings.h"
#include "server/text_file.h"
#include "sim/profile_catalog.h"

namespace llmcap::server {

namespace {
std::stop_source* g_stop = nullptr;
extern "C" void on_signal(int) {
  if (g_stop) g_stop->request_stop();
}
}  // namespace

std::string read_file(const std::string& path, std::string& error) {
  auto text = read_text_file(path);
  if (!text) error = "cannot read '" + path + "'";
  return text ? std::move(*text) : std::string();
}

// Parses and converts a plan file; prints every error with its path. Returns kExitOk or kExitUsage.
// `profiles`: the simulator profiles its sim:// targets may name (the built-in ones plus
// --profiles-file). `sources`: the flags that wrote parts of the plan (ad-hoc flags, --set),
// named after each error found there.
int load_plan(const std::string& path, const std::string& text, const sim::ProfileCatalog& profiles,
              api::PlanParse& parse, RunPlan& plan, const char* who, const PlanSources& sources,
              std::uint64_t dataset_max_bytes) {
  auto from = [&sources](const std::string& pointer) {
    const std::string flag = flag_for_pointer(sources, pointer);
    return flag.empty() ? std::string() : " (from " + flag + ")";
  };
  api::PlanLimits limits;
  limits.sim_hardware = profiles.hardware_names();
  limits.sim_models = profiles.model_names();
  parse = api::parse_plan(text, limits);
  if (!parse.errors.empty()) {
    std::cerr << who << ": " << path << ": invalid plan (" << parse.errors.size() << " error"
              << (parse.errors.size() == 1 ? "" : "s") << ")\n";
    for (const auto& e : parse.errors) {
      std::cerr << "  " << (e.path.empty() ? "(document)" : e.path) << ": " << e.message
                << from(e.path) << "\n";
    }
    return kExitUsage;
  }
  // Dataset files are read and parsed now, so a missing or malformed one is a plan error.
  if (const auto problems = check_plan_datasets(*parse.plan, parse.normalized,
                                                DatasetPolicy{false, "", dataset_max_bytes});
      !problems.empty()) {
    std::cerr << who << ": " << path << ": dataset not usable\n";
    for (const auto& e : problems)
      std::cerr << "  " << e.path << ": " << e.message << from(e.path) << "\n";
    return kExitUsage;
  }
  if (auto err = to_run_plan(parse, plan); !err.empty()) {
    std::cerr << who << ": " << path << ": " << err << "\n";
    return kExitUsage;
  }
  for (auto& t : plan.targets) t.workload.dataset_max_bytes = dataset_max_bytes;
  return kExitOk;
}

std::string results_file_name(const std::string& plan_name, const RunPlan& plan,
                              std::chrono::system_clock::time_point now) {
  // Only characters every file system and shell takes as they are.
  auto safe = [](std::string s) {
    for (auto& c : s)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') c = '-';
    return s.empty() ? std::string("plan") : s;
  };
  std::string targets;
  for (const auto& t : plan.targets) targets += (targets.empty() ? "" : "+") + t.name;
  if (plan.targets.size() > 3) targets = std::to_string(plan.targets.size()) + "-targets";
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
  return safe(plan_name) + "_" + safe(targets) + "_" + stamp;
}

namespace {

// `llmcapd predict --catalog`: replaces the plan by its catalogue plan (one sim:// target per GPU
// profile that can serve it, server/engine/catalog_plan.h) and describes it in `info` (the
// results' "catalog"). Prints what is wrong and returns the exit code, or kExitOk.
int load_catalog_plan(const std::string& who, const std::string& plan_path,
                      const std::string& prices_path, const std::string& hardware_list,
                      const std::string& tp_list, api::PlanParse& parse, RunPlan& plan,
                      nlohmann::json& info) {
  std::optional<CatalogPrices> prices;
  if (!prices_path.empty()) {
    std::string error;
    const std::string text = read_file(prices_path, error);
    if (!error.empty()) {
      std::cerr << who << ": --prices: " << error << "\n";
      return kExitUsage;
    }
    auto parsed = parse_catalog_prices(text, sim::ProfileCatalog::builtin().hardware_names());
    if (!parsed.errors.empty()) {
      std::cerr << who << ": " << prices_path << ": invalid price file\n";
      for (const auto& e : parsed.errors)
        std::cerr << "  " << (e.path.empty() ? "(document)" : e.path) << ": " << e.message << "\n";
      return kExitUsage;
    }
    prices = std::move(parsed.prices);
  }
  std::vector<std::string> only;
  for (std::size_t at = 0; at < hardware_list.size();) {
    const auto comma = std::min(hardware_list.find(',', at), hardware_list.size());
    if (comma > at) only.push_back(hardware_list.substr(at, comma - at));
    at = comma + 1;
  }
  std::vector<int> degrees;
  for (std::size_t at = 0; at < tp_list.size();) {
    const auto comma = std::min(tp_list.find(',', at), tp_list.size());
    const std::string item = tp_list.substr(at, comma - at);
    at = comma + 1;
    if (item.empty()) continue;
    char* end = nullptr;
    const long n = std::strtol(item.c_str(), &end, 10);
    if (*end != '\0' || n < 1 || n > 64) {
      std::cerr << who << ": --tensor-parallel: '" << item << "' is not a degree 1..64\n";
      return kExitUsage;
    }
    degrees.push_back(static_cast<int>(n));
  }
  if (degrees.empty()) degrees.push_back(1);
  auto cat = build_catalog_plan(parse.normalized, prices ? &*prices : nullptr, only, degrees);
  if (!cat.error.empty()) {
    std::cerr << who << ": " << plan_path << ": " << cat.error << "\n";
    return kExitUsage;
  }
  info = {{"model", cat.model},
          {"dtype", cat.dtype},
          {"hardware", cat.hardware},
          {"excluded", nlohmann::json::array()},
          {"tensor_parallel", degrees}};
  if (prices) {
    info["prices"] = {
        {"file", prices_path}, {"currency", prices->currency}, {"source", prices->source}};
  }
  for (const auto& e : cat.excluded)
    info["excluded"].push_back({{"hardware", e.hardware},
                                {"name", e.name},
                                {"tensor_parallel", e.tensor_parallel},
                                {"reason", e.reason}});
  if (cat.hardware.empty()) {
    std::cerr << who << ": no GPU profile can serve " << cat.model << " " << cat.dtype << "\n";
    for (const auto& e : cat.excluded) std::cerr << "  " << e.name << ": " << e.reason << "\n";
    return kExitSlaFailed;
  }
  api::PlanLimits limits;
  limits.max_targets = std::max<int>(limits.max_targets, static_cast<int>(cat.hardware.size()));
  parse = api::parse_plan(cat.plan.dump(), limits);
  plan = RunPlan{};
  if (!parse.errors.empty()) {
    std::cerr << who << ": catalogue plan: " << parse.errors.front().path << ": "
              << parse.errors.front().message << "\n";
    return kExitRuntime;
  }
  if (auto err = to_run_plan(parse, plan); !err.empty()) {
    std::cerr << who << ": catalogue plan: " << err << "\n";
    return kExitRuntime;
  }
  return kExitOk;
}

int run_plan_command(const std::vector<std::string>& args, ExecutionMode mode) {
  const bool predict = mode == ExecutionMode::kPredict;
  const std::string name = predict ? "predict" : "run";
  const std::string who = "llmcapd " + name;
  std::string out_path;
  std::string out_dir = "llmcap-results";
  bool no_out = false;
  bool help = false;
  bool quiet = false;
  LogOptions log;
  log.level = "warn";
  Settings s("");
  s.add("out",
        "write the results document (JSON) to this file (default: "
        "OUT_DIR/<plan>_<targets>_<UTC time>.json, with the HTML report beside it)",
        &out_path);
  s.add("out_dir", "folder of the default results file", &out_dir);
  s.add("no_out", "write no results file", &no_out);
  std::string junit_path;
  s.add("junit",
        "also write the SLA verdicts as JUnit XML to this file for CI test reports (a test suite "
        "per target, a test case per check and one for the qualified capacity), also when the "
        "SLA fails; nothing when the run ends in an error without results (docs/plans.md, "
        "\"JUnit XML for CI\")",
        &junit_path);
  s.add("quiet", "print only the final table", &quiet);
  s.add("log_level", "trace|debug|info|warn|error|critical|off", &log.level);
  s.add("log_json", "write logs as JSON lines", &log.json);
  s.add("help", "show this help", &help);
  std::string profiles_file;
  s.add("profiles_file",
        "extra simulator profiles (JSON, e.g. from llmcapd sim calibrate) for the plan's sim:// "
        "targets",
        &profiles_file);
  bool catalog = false;
  std::string prices_path;
  std::string hardware_list;
  std::string tp_list = "1,2,4,8";
  if (predict) {
    s.add("catalog",
          "rank every GPU profile at every tensor-parallel degree by the monthly cost of the "
          "fleet the plan's demand needs (without a demand: by cost per million output tokens) "
          "at its predicted qualified capacity; candidates that cannot qualify are listed with "
          "the reason",
          &catalog);
    s.add("prices",
          "with --catalog: a price file {\"currency\": \"USD\", \"prices_per_hour\": "
          "{\"<profile>\": 1.79}} (deploy/prices/example.json)",
          &prices_path);
    s.add("hardware", "with --catalog: only these profiles (comma-separated names)",
          &hardware_list);
    s.add("tensor_parallel",
          "with --catalog: tensor-parallel degrees to offer each profile at (comma-separated)",
          &tp_list);
  }
  AdhocFlags adhoc;
  bind_adhoc_flags(s, adhoc);
  std::vector<std::string> overrides;
  s.add_repeated("set",
                 "change the plan (PLAN.json or the ad-hoc one) before it is read: KEY.PATH=VALUE, "
                 "dots between keys, numbers index arrays, VALUE as JSON else a string, null "
                 "removes (e.g. --set phases.0.duration_s=60 --set sla.ttft_ms.p95=800)",
                 &overrides);
  // The largest dataset or trace file a plan may name: the daemon's max_dataset_mib, from
  // LLMCAP_MAX_DATASET_MIB when set, the flag winning over both.
  double max_dataset_mib = 256;
  if (const char* env = std::getenv("LLMCAP_MAX_DATASET_MIB"); env != nullptr && *env != '\0') {
    char* end = nullptr;
    max_dataset_mib = std::strtod(env, &end);
    if (end == env || *end != '\0' || !(max_dataset_mib > 0 && max_dataset_mib <= 65536)) {
      std::cerr << who << ": LLMCAP_MAX_DATASET_MIB: must be a number in (0, 65536] (MiB)\n";
      return kExitUsage;
    }
  }
  s.add("max_dataset_mib",
        "largest dataset or trace file a plan may use, MiB (default 256, or "
        "LLMCAP_MAX_DATASET_MIB); files are read as they stream in, so memory follows the "
        "requests kept, not the file",
        &max_dataset_mib);
  bool print_plan = false;
  s.add("print_plan",
        "print the plan (built from the ad-hoc flags, --set applied) as JSON after checking it, "
        "and exit without running",
        &print_plan);
  std::vector<std::string> positional;
  const std::string exits =
      "\nExit 0 when the verdict is pass (every target has a confirmed qualified capacity), 1 "
      "when a target failed its SLA, 2 for a bad plan, 3 on runtime errors (target "
      "unreachable), 4 when inconclusive.";
  const std::string usage =
      predict ? "Usage: llmcapd predict PLAN.json [flags]\n       llmcapd predict --catalog "
                "PLAN.json [flags]\n       llmcapd predict --base-url sim://<hardware>/<model> "
                "(--concurrency 1,4,16 | --request-rate R | --search) [ad-hoc flags]\n\nPredicts "
                "the plan's results in virtual time: every "
                "target must be sim://<hardware>/<model>; the load generator's schedule and the "
                "simulated engine share one discrete-event clock (no sockets, no sleeping), and "
                "the same statistics, verdicts, capacity search and cost code judge it. Same plan "
                "and seed, same results on any machine. Results are marked \"predicted\".\n"
                "--catalog ranks every GPU profile, alone and split over 2/4/8 GPUs, by the "
                "monthly cost of the fleet the plan's demand needs at its predicted qualified "
                "capacity (without a demand: by cost per million output tokens), and says why "
                "each candidate that cannot qualify does not (docs/prediction.md)." +
                    exits + " With --catalog: 0 when at least one profile qualified, else 1."
              : "Usage: llmcapd run PLAN.json [flags]\n       llmcapd run --base-url URL "
                "[--model M] (--concurrency 1,4,16 | --request-rate R | --search) "
                "[--num-prompts N | --duration S] [--sla ttft_p95=1000ms,...] [flags]\n\nRuns a "
                "test plan once without a daemon and prints the qualified-capacity table. Without "
                "PLAN.json the ad-hoc flags build the plan (--print-plan shows it; docs/plans.md, "
                "\"Ad-hoc runs\")." +
                    exits;
  const CommandLine cl{name, usage, 1};
  if (auto rc = parse_command_line(cl, s, args, help, positional)) return *rc;
  const std::vector<std::string> adhoc_given = given_adhoc_flags(adhoc);
  if (!adhoc_given.empty() && !positional.empty()) {
    std::cerr << who << ": " << adhoc_given.front()
              << " builds a plan from flags: give PLAN.json or the ad-hoc flags, not both (--set "
                 "KEY.PATH=VALUE changes a plan file)\n";
    return kExitUsage;
  }
  if (adhoc_given.empty() && positional.size() != 1) {
    std::cerr << who << ": expected a plan file, or --base-url URL and the ad-hoc flags (see "
              << who << " --help)\n";
    return kExitUsage;
  }
  if (auto err = setup_logging(log); !err.empty()) {
    std::cerr << who << ": " << err << "\n";
    return kExitUsage;
  }
  // The plan document: the file's text, or the one the ad-hoc flags build; --set edits it.
  const std::string plan_path = adhoc_given.empty() ? positional[0] : "ad-hoc plan";
  std::string text;
  nlohmann::ordered_json document;  // null: `text` is the plan as given
  PlanSources sources;
  if (adhoc_given.empty()) {
    std::string error;
    text = read_file(plan_path, error);
    if (!error.empty()) {
      std::cerr << who << ": " << error << "\n";
      return kExitUsage;
    }
    // A file that is not JSON is left to the plan reader, which says where it breaks.
    if (!overrides.empty() || print_plan)
      document = nlohmann::ordered_json::parse(text, nullptr, false);
    if (document.is_discarded()) document = nullptr;
  } else {
    AdhocPlan built = build_adhoc_plan(adhoc);
    if (!built.errors.empty()) {
      for (const auto& e : built.errors) std::cerr << who << ": " << e << "\n";
      return kExitUsage;
    }
    document = std::move(built.plan);
    sources = std::move(built.sources);
  }
  if (!overrides.empty() && !document.is_null()) {
    for (const auto& assignment : overrides) {
      const PlanOverride o = apply_plan_override(document, assignment);
      if (!o.error.empty()) {
        std::cerr << who << ": --set " << o.error << "\n";
        return kExitUsage;
      }
      sources.emplace_back(o.pointer, "--set " + assignment);
    }
  }
  if (!document.is_null()) text = document.dump();
  // The profiles are read first: the plan's sim:// targets may name those of --profiles-file.
  sim::ProfileCatalog profiles = sim::ProfileCatalog::builtin();
  if (!profiles_file.empty()) {
    if (auto err = profiles.add_file(profiles_file)) {
      std::cerr << who << ": --profiles-file: " << *err << "\n";
      return kExitUsage;
    }
  }
  api::PlanParse parse;
  RunPlan plan;
  if (!(max_dataset_mib > 0 && max_dataset_mib <= 65536)) {
    std::cerr << who << ": --max-dataset-mib: must be in (0, 65536]\n";
    return kExitUsage;
  }
  const auto dataset_max_bytes = static_cast<std::uint64_t>(max_dataset_mib * 1024 * 1024);
  if (int rc = load_plan(plan_path, text, profiles, parse, plan, who.c_str(), sources,
                         dataset_max_bytes);
      rc != kExitOk)
    return rc;
  if (print_plan) {
    // Checked as it would run; what is printed is the document as given or built (not the
    // normalised one with every default), to save and edit.
    for (const auto& w : parse.warnings) std::cerr << "warning: " << w << "\n";
    std::cout << document.dump(2) << "\n";
    return kExitOk;
  }
  if (!catalog && (!prices_path.empty() || !hardware_list.empty() || tp_list != "1,2,4,8")) {
    std::cerr << who << ": --prices, --hardware and --tensor-parallel go with --catalog\n";
    return kExitUsage;
  }
  nlohmann::json catalog_info;
  if (catalog) {
    if (int rc = load_catalog_plan(who, plan_path, prices_path, hardware_list, tp_list, parse, plan,
                                   catalog_info);
        rc != kExitOk)
      return rc;
  }
  if (!profiles_file.empty()) {
    if (auto err = use_profiles_file(plan, profiles_file); !err.empty()) {
      std::cerr << who << ": " << err << "\n";
      return kExitUsage;
    }
  }
  if (parse.plan->agents && !predict) {
    // Shards need the daemon's /v1/jobs/{id}/shards routes; running them in-process instead
    // would silently measure a different set-up than the plan asks for.
    std::cerr << who << ": " << plan_path
              << ": /agents: a plan with agents runs only in the daemon (llmcapd serve, then "
                 "POST /v1/jobs); remove /agents to run it here with one in-process agent\n";
    return kExitUsage;
  }
  if (predict) {
    // Only simulated targets that fit their GPU can run in virtual time: refused before anything
    // runs.
    if (const auto problems = PlanExecutor::prediction_problems(plan); !problems.empty()) {
      std::cerr << who << ": " << plan_path << ": cannot predict\n";
      for (const auto& p : problems) std::cerr << "  " << p << "\n";
      return kExitUsage;
    }
  }
  for (const auto& w : parse.warnings) std::cerr << "warning: " << w << "\n";
  std::cerr << "plan " << (plan.name.empty() ? plan_path : plan.name) << ": " << plan.targets.size()
            << " target(s), "
            << (predict ? "predicted in virtual time (measured it would take at most "
                        : "estimated at most ")
            << duration_text(parse.estimated_duration_s) << (predict ? ")" : "") << "\n";
  std::string html_path;
  if (out_path.empty() && !no_out) {
    const std::string stem =
        results_file_name(
            plan.name.empty() ? std::filesystem::path(plan_path).stem().string() : plan.name, plan,
            std::chrono::system_clock::now()) +
        (predict ? "_predicted" : "");
    std::error_code ec;
    std::filesystem::create_directories(out_dir, ec);
    if (ec) {
      std::cerr << who << ": --out-dir: cannot create '" << out_dir << "': " << ec.message()
                << " (or give --out PATH, or --no-out)\n";
      return kExitUsage;
    }
    out_path = (std::filesystem::path(out_dir) / (stem + ".json")).string();
    html_path = (std::filesystem::path(out_dir) / (stem + ".html")).string();
  }

  std::stop_source stop;
  g_stop = &stop;
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  EmbeddedSimulators sims;
  std::ostringstream discard;
  // Live progress only where someone watches: stderr is a terminal.
  ConsoleSink sink(quiet ? static_cast<std::ostream&>(discard) : std::cerr,
                   !quiet && ::isatty(STDERR_FILENO) == 1);
  PlanExecutor executor(sims, sink, nullptr, mode);
  ExecutionResult result = executor.run(plan, stop.get_token());
  g_stop = nullptr;
  sims.stop();

  result.results = api::report_document(std::move(result.results), parse.normalized);
  if (catalog) {
    result.results["catalog"] = catalog_info;
    result.results["catalog"]["ranking"] = catalog_ranking(result.results);
    std::cout << "\nCatalogue ranking, predicted (virtual time): "
              << catalog_info["model"].get<std::string>() << " "
              << catalog_info["dtype"].get<std::string>()
              << ", prices per GPU-hour × the tensor-parallel degree; SLA: "
              << sla_text(parse.normalized.value("sla", nlohmann::json())) << "\n"
              << catalog_ranking_text(result.results);
  } else {
    std::cout << (predict ? "\nPredicted qualified capacity (virtual time, sim:// models; SLA: "
                          : "\nQualified capacity (SLA: ")
              << sla_text(parse.normalized.value("sla", nlohmann::json())) << ")\n"
              << capacity_table_text(result.results);
  }
  // Each file the run keeps: its path, what it holds, the label of the line that names it.
  struct Output {
    const std::string& path;
    std::string text;
    const char* label;
  };
  std::vector<Output> outputs;
  if (!out_path.empty()) outputs.push_back({out_path, result.results.dump(2) + "\n", "results:"});
  if (!html_path.empty())
    outputs.push_back({html_path, api::render_report_html(result.results), "report: "});
  // A run that ended in an error or was cancelled has no verdict to report: no JUnit file, so a
  // CI does not show a stale or partial one as the answer (the exit code says what happened).
  if (!junit_path.empty() && result.error.empty() && !result.cancelled)
    outputs.push_back({junit_path, api::render_junit(result.results), "junit:  "});
  for (const Output& o : outputs) {
    std::ofstream file(o.path);
    file << o.text;
    if (!file) {
      std::cerr << who << ": cannot write '" << o.path << "'\n";
      return kExitRuntime;
    }
    std::cout << o.label << " " << o.path << "\n";
  }
  if (!result.error.empty()) {
    std::cerr << who << ": " << result.error << "\n";
    return kExitRuntime;
  }
  if (result.cancelled) {
    std::cerr << who << ": cancelled; results are partial\n";
    return kExitRuntime;
  }
  if (catalog) {
    // The ranking is the answer: it holds when at least one profile qualified.
    for (const auto& r : api::capacity_rows(result.results))
      if (r.qualified) return kExitOk;
    return kExitSlaFailed;
  }
  switch (result.verdict) {
    case analysis::Outcome::kPass: return kExitOk;
    case analysis::Outcome::kFail: return kExitSlaFailed;
    case analysis::Outcome::kInconclusive: break;
  }
  return kExitInconclusive;
}

}  // namespace

int cmd_run(const std::vector<std::string>& args) {
  return run_plan_command(args, ExecutionMode::kMeasure);
}

int cmd_predict(const std::vector<std::string>& args) {
  return run_plan_command(args, ExecutionMode::kPredict);
}

}  // namespace llmcap::server

// `llmcapd sim calibrate RESULTS.json --out PROFILE.json`: fits a simulator hardware profile to a
// measured job (server/engine/sim_calibration.h) and writes it as a profile file.
#include <fstream>
#include <iostream>

#include "server/cli/command_line.h"
#include "server/cli/commands.h"
#include "server/cli/exit_codes.h"
#include "server/engine/sim_calibration.h"
#include "server/logging.h"
#include "server/settings.h"
#include "server/text_file.h"

namespace llmcap::server {

int cmd_sim_calibrate(const std::vector<std::string>& args) {
  CalibrationInput in;
  std::string out_path;
  bool help = false;
  Settings s("");
  s.add("out", "write the calibrated profile file here (required)", &out_path);
  s.add("target", "the target of the results to fit (default: the first)", &in.target);
  s.add("hardware",
        "the profile to start from (default: the target's sim:// hardware; required for a real "
        "target)",
        &in.hardware);
  s.add("model", "the model profile (default: the target's sim:// model)", &in.model);
  s.add("dtype", "weight dtype (default: the target's precision, else bf16)", &in.dtype);
  s.add("name", "name of the calibrated profile (default: <hardware>-calibrated)",
        &in.profile_name);
  s.add("profiles_file", "extra profiles to find --hardware in", &in.profiles_file);
  s.add("max_evaluations", "predictions of the replayed steps the fit may make",
        &in.max_evaluations);
  LogOptions log;
  log.level = "warn";
  s.add("log_level", "trace|debug|info|warn|error|critical|off", &log.level);
  s.add("help", "show this help", &help);
  std::vector<std::string> positional;
  const CommandLine cl{
      "sim calibrate",
      "Usage: llmcapd sim calibrate RESULTS.json --out PROFILE.json [flags]\n\nFits a simulator "
      "hardware profile to a measured job: replays its concurrency, rate and search steps in "
      "virtual time and fits the achieved bandwidth and compute fractions and the per-step "
      "cost to their median TPOT, TTFT and throughput. Use the profile with a "
      "sim://<name>/<model> target and llmcapd run|predict PLAN.json --profiles-file "
      "PROFILE.json (docs/prediction.md).",
      1};
  if (auto rc = parse_command_line(cl, s, args, help, positional)) return *rc;
  if (positional.size() != 1) {
    std::cerr << "llmcapd sim calibrate: expected one results file (see --help)\n";
    return kExitUsage;
  }
  if (auto err = setup_logging(log); !err.empty()) {
    std::cerr << "llmcapd sim calibrate: " << err << "\n";
    return kExitUsage;
  }
  if (out_path.empty()) {
    std::cerr << "llmcapd sim calibrate: --out: where to write the profile is required\n";
    return kExitUsage;
  }
  if (in.max_evaluations < 10 || in.max_evaluations > 10000) {
    std::cerr << "llmcapd sim calibrate: max_evaluations: must be 10..10000\n";
    return kExitUsage;
  }
  const auto text = read_text_file(positional[0]);
  if (!text) {
    std::cerr << "llmcapd sim calibrate: cannot read '" << positional[0] << "'\n";
    return kExitUsage;
  }
  in.measured = nlohmann::json::parse(*text, nullptr, false);
  if (!in.measured.is_object() || !in.measured.contains("targets")) {
    std::cerr << "llmcapd sim calibrate: " << positional[0] << " is not a results document\n";
    return kExitUsage;
  }
  const auto result = calibrate(in);
  if (!result.error.empty()) {
    std::cerr << "llmcapd sim calibrate: " << result.error << "\n";
    return result.error.rfind("the replay", 0) == 0 ? kExitRuntime : kExitUsage;
  }
  std::cout << calibration_text(result);
  std::ofstream out(out_path);
  out << result.profile_file.dump(2) << "\n";
  if (!out) {
    std::cerr << "llmcapd sim calibrate: cannot write '" << out_path << "'\n";
    return kExitRuntime;
  }
  std::cout << "profile: " << out_path << " (a sim://" << result.profile_name << "/" << result.model
            << " target with llmcapd run|predict --profiles-file " << out_path << ")\n";
  return kExitOk;
}

}  // namespace llmcap::server

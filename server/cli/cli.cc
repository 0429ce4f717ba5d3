#include "server/cli/cli.h"

#include <cstdio>
#include <iostream>

#include "server/cli/commands.h"
#include "server/cli/exit_codes.h"
#include "server/settings.h"
#include "server/version.h"

namespace llmcap::server {

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {"demo", "start a daemon with simulated GPUs, run the example plan, print the table",
       &cmd_demo},
      {"serve", "run the daemon: REST API, job scheduler, SQLite storage, /metrics", &cmd_serve},
      {"run", "run a test plan once without a daemon and print the capacity table", &cmd_run},
      {"predict", "predict a plan on sim:// targets in virtual time (seconds), or rank GPUs",
       &cmd_predict},
      {"report", "render a results file or job as an HTML report (or Markdown/CSV)", &cmd_report},
      {"sim", "run a simulated GPU inference server (OpenAI-compatible)", &cmd_sim},
      {"agent", "run one shard of a job's load for a daemon (scale-out, plan `agents`)",
       &cmd_agent},
      {"estimate", "memory fit of a model on a GPU (exit 1 when it does not fit)", &cmd_estimate},
      {"k8s-manifest", "print the Kubernetes Indexed Job of a job's agents (kubectl apply -f -)",
       &cmd_k8s_manifest},
      {"version", "print the version and build information", &cmd_version},
  };
  return table;
}

std::string usage_text() {
  std::string out = "llmcapd " + std::string(kVersion) +
                    " - capacity testing for LLM inference servers\n\n"
                    "Usage: llmcapd <command> [flags]\n"
                    "       llmcapd <command> --help     flags of one command\n\n"
                    "Commands:\n";
  for (const auto& c : commands()) {
    std::string name = "  " + std::string(c.name);
    name.resize(16, ' ');
    out += name + c.summary + "\n";
  }
  out +=
      "\nGlobal flags: --help, --version\n"
      "Settings come from defaults < config file (--config or LLMCAP_CONFIG) < environment\n"
      "(LLMCAP_<KEY>) < flags (--<key>); unknown keys are errors.\n\n"
      "Exit codes:\n"
      "  0  success (for run/demo: verdict pass, every target has a confirmed qualified\n"
      "     capacity under its SLA)\n"
      "  1  the run finished and a target failed its SLA (verdict fail)\n"
      "  2  usage or configuration error (bad flag, config key or plan)\n"
      "  3  runtime error (cannot listen, database error, target unreachable)\n"
      "  4  the run finished without a verdict (inconclusive: no confirmed rate, client-bound\n"
      "     or too few requests)\n";
  return out;
}

int cmd_version(const std::vector<std::string>& args) {
  if (!args.empty()) {
    std::cerr << "llmcapd version: unexpected argument '" << args.front() << "'\n";
    return kExitUsage;
  }
  std::cout << "llmcapd " << kVersion << " (" << kGitRevision << ", " << kBuildType << ")\n";
  return kExitOk;
}

int run_cli(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::cerr << usage_text();
    return kExitUsage;
  }
  const std::string first = args.front();
  if (first == "--help" || first == "-h" || first == "help") {
    std::cout << usage_text();
    return kExitOk;
  }
  if (first == "--version") return cmd_version({});
  for (const auto& c : commands()) {
    if (first == c.name) {
      args.erase(args.begin());
      try {
        return c.run(args);
      } catch (const std::exception& e) {
        std::cerr << "llmcapd " << c.name << ": " << e.what() << "\n";
        return kExitRuntime;
      }
    }
  }
  std::vector<std::string> names;
  for (const auto& c : commands()) names.push_back(c.name);
  std::cerr << "llmcapd: unknown command or flag '" << first << "'" << did_you_mean(first, names)
            << " (see llmcapd --help)\n";
  return kExitUsage;
}

}  // namespace llmcap::server

// `llmcapd serve`: the long-running daemon (REST API, scheduler, storage, metrics).
#include <iostream>

#include "server/cli/commands.h"
#include "server/cli/exit_codes.h"
#include "server/daemon.h"
#include "server/logging.h"

namespace llmcap::server {

// Loads defaults < file (--config or LLMCAP_CONFIG) < LLMCAP_* environment < flags.
// Returns kExitOk, or kExitUsage after printing the error; sets `help` when --help was given.
int load_daemon_config(const std::vector<std::string>& args, const char* who, DaemonConfig& config,
                       bool& help) {
  Settings settings;
  config.bind(settings);
  std::string config_path;
  if (const char* env = std::getenv("LLMCAP_CONFIG")) config_path = env;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--config" && i + 1 < args.size()) config_path = args[i + 1];
    if (args[i].rfind("--config=", 0) == 0) config_path = args[i].substr(9);
  }
  Settings flags;
  config.bind(flags);
  std::string ignored_config;
  flags.add("config", "JSON config file (also LLMCAP_CONFIG)", &ignored_config);
  flags.add("help", "show this help", &help);
  if (!config_path.empty()) {
    if (auto err = settings.apply_file(config_path); !err.empty()) {
      std::cerr << who << ": " << err << "\n";
      return kExitUsage;
    }
  }
  // Variables the other subcommands read (report's token, an agent's identity) are not daemon
  // settings: a shell that exports them for those commands can still start the daemon.
  if (auto err = settings.apply_environment({"LLMCAP_CONFIG", "LLMCAP_TOKEN", "LLMCAP_DAEMON_URL",
                                             "LLMCAP_JOB_ID", "LLMCAP_AGENT_TOKEN", "LLMCAP_REGION",
                                             "LLMCAP_SHARD_INDEX"});
      !err.empty()) {
    std::cerr << who << ": " << err << "\n";
    return kExitUsage;
  }
  std::vector<std::string> positional;
  if (auto err = parse_flags(flags, args, positional); !err.empty()) {
    std::cerr << who << ": " << err << "\n";
    return kExitUsage;
  }
  if (help) {
    std::cout << "Flags (each also a config-file key and an LLMCAP_<KEY> variable):\n"
              << flags.help_text();
    return kExitOk;
  }
  if (!positional.empty()) {
    std::cerr << who << ": unexpected argument '" << positional.front() << "'\n";
    return kExitUsage;
  }
  if (auto err = config.validate(); !err.empty()) {
    std::cerr << who << ": " << err << "\n";
    return kExitUsage;
  }
  return kExitOk;
}

int cmd_serve(const std::vector<std::string>& args) {
  DaemonConfig config;
  bool help = false;
  if (std::find(args.begin(), args.end(), "--help") != args.end())
    std::cout << "Usage: llmcapd serve [flags]\n\nThe capacity-testing daemon: REST API under /v1, "
                 "/metrics, /healthz, /readyz.\n\n";
  if (int rc = load_daemon_config(args, "llmcapd serve", config, help); rc != kExitOk || help)
    return rc;
  if (auto err = setup_logging({config.log_level, config.log_json}); !err.empty()) {
    std::cerr << "llmcapd serve: " << err << "\n";
    return kExitUsage;
  }
  Daemon daemon(config);
  try {
    daemon.start();
  } catch (const std::exception& e) {
    std::cerr << "llmcapd serve: " << e.what() << "\n";
    return kExitRuntime;
  }
  std::cout << "listening on http://" << config.listen_address << ":" << daemon.port() << "\n"
            << std::flush;
  daemon.run_until_signal();
  return kExitOk;
}

}  // namespace llmcap::server

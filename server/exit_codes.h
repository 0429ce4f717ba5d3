// Process exit codes of llmcapd (documented in README and `llmcapd --help`).
#pragma once

namespace llmcap::server {

enum ExitCode : int {
  kExitOk = 0,         // success; for run/demo: every target has a verdict and the SLA held
  kExitSlaFailed = 1,  // the run finished but a target failed its SLA (no qualified capacity)
  kExitUsage = 2,      // bad command line, config key, or plan
  kExitRuntime = 3,    // runtime failure: cannot listen, database error, target unreachable...
};

}  // namespace llmcap::server

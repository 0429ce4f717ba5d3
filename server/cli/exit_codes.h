// Process exit codes of llmcapd (documented in README and `llmcapd --help`).
#pragma once

namespace llmcap::server {

enum ExitCode : int {
  kExitOk = 0,            // success; for run/demo: the job's verdict is pass (every target passed)
  kExitSlaFailed = 1,     // the run finished and a target failed its SLA (verdict fail)
  kExitUsage = 2,         // bad command line, config key, or plan
  kExitRuntime = 3,       // runtime failure: cannot listen, database error, target unreachable...
  kExitInconclusive = 4,  // the run finished without a verdict for every target (no confirmed
                          // rate, client-bound or too few requests): nothing to sign
};

}  // namespace llmcap::server

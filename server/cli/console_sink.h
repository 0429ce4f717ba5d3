// ConsoleSink: prints a one-shot run's progress for people to a stream (stderr by default, so
// stdout stays for tables): a line per target, and per step its verdict and headline figures.
// On a terminal (`live`), the running step's line is redrawn about once a second with the
// elapsed time, the request counts and the job's ETA; on a pipe or file nothing is redrawn,
// so logs hold one line per step. Used by `llmcapd run`; `llmcapd demo` prints the same step
// line from the daemon's results (step_result_text).
//
// Thread-safety: on_progress() runs on the load generator's thread, the other callbacks on the
// executor's; one mutex orders their writes.
#pragma once

#include <chrono>
#include <iosfwd>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "server/engine/job_eta.h"
#include "server/engine/plan_executor.h"

namespace llmcap::server {

// " pass  45.2 out tok/s, 1.00 req/s, goodput 0.98 req/s, TTFT p50/p95 24/25 ms, TPOT p95 22.0
// ms, E2E p95 706 ms, err 0.00%\n" then one indented line per missed check, from a step's
// entry in the results document (its `stats` and `verdict`).
std::string step_result_text(const nlohmann::json& step);

// "4m05s", "52s", "1h02m".
std::string duration_text(double seconds);

class ConsoleSink final : public ExecutionSink {
 public:
  ConsoleSink(std::ostream& out, bool live);
  void on_target_started(const RunTarget& target, const std::string& url,
                         const std::string& description) override;
  void on_step_started(const StepContext& ctx) override;
  void on_progress(const StepContext& ctx, const agent::StepProgress& p) override;
  bool on_step_finished(const StepContext& ctx, const StepOutcome& step,
                        std::string& error) override;

 private:
  std::string step_prefix(const StepContext& ctx) const;

  std::ostream& out_;
  const bool live_;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::mutex mu_;
  std::int64_t steps_done_ = 0;  // GUARDED_BY(mu_)
};

}  // namespace llmcap::server

// ConsoleSink: prints a one-shot run's progress for people — one line per step with its
// verdict and headline figures — to a stream (stderr by default, so stdout stays for tables).
// Used by `llmcapd run`. Not thread-safe beyond the executor's contract (on_progress is
// ignored, so only the executor's thread writes).
#pragma once

#include <iosfwd>

#include "server/engine/plan_executor.h"

namespace llmcap::server {

class ConsoleSink final : public ExecutionSink {
 public:
  explicit ConsoleSink(std::ostream& out);
  void on_target_started(const RunTarget& target, const std::string& url,
                         const std::string& description) override;
  void on_step_started(const StepContext& ctx) override;
  bool on_step_finished(const StepContext& ctx, const StepOutcome& step,
                        std::string& error) override;

 private:
  std::ostream& out_;
};

}  // namespace llmcap::server

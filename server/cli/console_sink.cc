#include "server/cli/console_sink.h"

#include <cstdio>
#include <ostream>

namespace llmcap::server {

ConsoleSink::ConsoleSink(std::ostream& out) : out_(out) {}

void ConsoleSink::on_target_started(const RunTarget& target, const std::string& url,
                                    const std::string& description) {
  out_ << "== target " << target.name << " (" << target.base_url;
  if (url != target.base_url) out_ << " -> " << url;
  out_ << ")\n";
  if (!description.empty()) out_ << "   " << description << "\n";
  out_.flush();
}

void ConsoleSink::on_step_started(const StepContext& ctx) {
  char line[256];
  std::snprintf(line, sizeof line, "   [%lld/%lld] %s %s (%.0f s) ...",
                static_cast<long long>(ctx.global_step + 1),
                static_cast<long long>(ctx.planned_steps), ctx.phase.c_str(), ctx.label.c_str(),
                ctx.planned_s);
  out_ << line << std::flush;
}

bool ConsoleSink::on_step_finished(const StepContext&, const StepOutcome& step, std::string&) {
  const analysis::StepStats& s = step.stats;
  char line[512];
  std::snprintf(line, sizeof line,
                " %s  %.1f out tok/s, %.2f req/s, TTFT p50/p95 %.0f/%.0f ms, TPOT p95 %.1f ms, "
                "E2E p95 %.0f ms, err %.2f%%%s\n",
                std::string(analysis::to_string(step.verdict.outcome)).c_str(),
                s.output_tokens_per_s, s.requests_per_s, s.ttft_ns.p50 / 1e6, s.ttft_ns.p95 / 1e6,
                s.tpot_ns.p95 / 1e6, s.e2e_ns.p95 / 1e6, s.error_rate * 100,
                step.partial() ? " (partial)" : "");
  out_ << line;
  for (const auto& r : step.verdict.reasons) {
    if (r.status == analysis::CheckStatus::kMissed) out_ << "        " << r.text << "\n";
  }
  out_.flush();
  return true;
}

}  // namespace llmcap::server

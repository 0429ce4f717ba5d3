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

bool ConsoleSink::on_step_finished(const StepContext&, const agent::StepResult&,
                                   const std::vector<agent::TelemetryPoint>&,
                                   const nlohmann::json& step, std::string&) {
  const auto& s = step["stats"];
  auto p = [&](const char* metric, const char* q) {
    const auto& m = s[metric];
    return m.contains(q) ? m[q].get<double>() : 0.0;
  };
  char line[512];
  std::snprintf(line, sizeof line,
                " %s  %.1f out tok/s, %.2f req/s, TTFT p50/p95 %.0f/%.0f ms, TPOT p95 %.1f ms, "
                "E2E p95 %.0f ms, err %.2f%%%s\n",
                step["verdict"]["outcome"].get<std::string>().c_str(),
                s["output_tokens_per_s"].get<double>(), s["requests_per_s"].get<double>(),
                p("ttft_ms", "p50"), p("ttft_ms", "p95"), p("tpot_ms", "p95"), p("e2e_ms", "p95"),
                s["error_rate"].get<double>() * 100,
                step["partial"].get<bool>() ? " (partial)" : "");
  out_ << line;
  for (const auto& r : step["verdict"]["reasons"]) {
    if (r["status"] == "missed") out_ << "        " << r["text"].get<std::string>() << "\n";
  }
  out_.flush();
  return true;
}

}  // namespace llmcap::server

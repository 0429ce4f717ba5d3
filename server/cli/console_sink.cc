#include "server/cli/console_sink.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>

#include "api/report_format.h"

namespace llmcap::server {

using nlohmann::json;

namespace {
constexpr const char* kClearLine = "\r\x1b[K";

double ms(const json& stats, const char* metric, const char* pct) {
  return api::json_number(api::json_member(stats, metric), pct).value_or(0.0);
}
}  // namespace

std::string duration_text(double seconds) {
  const long long s = std::max(0LL, std::llround(seconds));
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, s % 3600 / 60);
  else if (s >= 60)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%llds", s);
  return buf;
}

std::string step_result_text(const json& step) {
  const json& s = api::json_member(step, "stats");
  const json& v = api::json_member(step, "verdict");
  char line[512];
  std::snprintf(line, sizeof line,
                " %s  %.1f out tok/s, %.2f req/s, goodput %.2f req/s, TTFT p50/p95 %.0f/%.0f ms, "
                "TPOT p95 %.1f ms, E2E p95 %.0f ms, err %.2f%%%s\n",
                api::json_string(v, "outcome", "?").c_str(),
                api::json_number(s, "output_tokens_per_s").value_or(0),
                api::json_number(s, "requests_per_s").value_or(0),
                api::json_number(s, "goodput_rps").value_or(0), ms(s, "ttft_ms", "p50"),
                ms(s, "ttft_ms", "p95"), ms(s, "tpot_ms", "p95"), ms(s, "e2e_ms", "p95"),
                api::json_number(s, "error_rate").value_or(0) * 100,
                api::json_member(step, "partial").is_boolean() && step["partial"].get<bool>()
                    ? " (partial)"
                    : "");
  std::string out = line;
  const json& mix = api::json_member(step, "mix");
  if (mix.is_array()) {
    // A workload mix: one line per class with its own percentiles and verdict.
    for (const auto& c : mix) {
      const json& cs = api::json_member(c, "stats");
      std::snprintf(line, sizeof line,
                    "        class %-12s %5.1f%% of requests: TTFT p50/p95 %.0f/%.0f ms, TPOT p95 "
                    "%.1f ms, E2E p95 %.0f ms, err %.2f%%  %s\n",
                    api::json_string(c, "name").c_str(),
                    api::json_number(c, "share").value_or(0) * 100, ms(cs, "ttft_ms", "p50"),
                    ms(cs, "ttft_ms", "p95"), ms(cs, "tpot_ms", "p95"), ms(cs, "e2e_ms", "p95"),
                    api::json_number(cs, "error_rate").value_or(0) * 100,
                    api::json_string(api::json_member(c, "verdict"), "outcome", "?").c_str());
      out += line;
    }
  }
  const json& reasons = api::json_member(v, "reasons");
  if (reasons.is_array()) {
    for (const auto& r : reasons)
      if (api::json_string(r, "status") == "missed")
        out += "        " + api::json_string(r, "text") + "\n";
  }
  return out;
}

ConsoleSink::ConsoleSink(std::ostream& out, bool live) : out_(out), live_(live) {}

void ConsoleSink::on_target_started(const RunTarget& target, const std::string& url,
                                    const std::string& description) {
  std::lock_guard lock(mu_);
  out_ << "== target " << target.name << " (" << target.base_url;
  if (url != target.base_url) out_ << " -> " << url;
  out_ << ")\n";
  if (!description.empty()) out_ << "   " << description << "\n";
  out_.flush();
}

std::string ConsoleSink::step_prefix(const StepContext& ctx) const {
  char line[256];
  std::snprintf(line, sizeof line, "   [%lld/%lld] %s %s (%.0f s) ...",
                static_cast<long long>(ctx.global_step + 1),
                static_cast<long long>(ctx.planned_steps), ctx.phase.c_str(), ctx.label.c_str(),
                ctx.planned_s / (ctx.time_scale > 0 ? ctx.time_scale : 1.0));  // wall-clock
  return line;
}

void ConsoleSink::on_step_started(const StepContext& ctx) {
  std::lock_guard lock(mu_);
  out_ << step_prefix(ctx) << std::flush;
}

void ConsoleSink::on_progress(const StepContext& ctx, const agent::StepProgress& p) {
  if (!live_) return;
  std::lock_guard lock(mu_);
  // Wall-clock throughout: a simulated target runs its plan time time_scale× faster.
  const double k = ctx.time_scale > 0 ? ctx.time_scale : 1.0;
  const double step_s = static_cast<double>(p.elapsed_ns) / 1e9;
  const double job_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  const double eta = eta_seconds(job_s, steps_done_, ctx.planned_steps, step_s, ctx.planned_s / k);
  char live[256];
  std::snprintf(live, sizeof live,
                " %.0f/%.0f s %s, %llu sent, %llu ok, %llu failed, %llu in flight; job ETA %s",
                step_s, ctx.planned_s / k,
                p.draining    ? "draining"
                : p.in_window ? "measuring"
                              : "warming up",
                static_cast<unsigned long long>(p.sent),
                static_cast<unsigned long long>(p.completed_ok),
                static_cast<unsigned long long>(p.failed),
                static_cast<unsigned long long>(p.in_flight), duration_text(eta).c_str());
  out_ << kClearLine << step_prefix(ctx) << live << std::flush;
}

bool ConsoleSink::on_step_finished(const StepContext& ctx, const StepOutcome& step, std::string&) {
  std::lock_guard lock(mu_);
  ++steps_done_;
  if (live_) out_ << kClearLine << step_prefix(ctx);
  out_ << step_result_text(step.document);
  out_.flush();
  return true;
}

}  // namespace llmcap::server

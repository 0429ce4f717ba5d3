#include "analysis/target_verdict.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace llmcap::analysis {

namespace {

std::string level_text(const LevelFailure& f) {
  char buf[64];
  if (f.concurrency > 0)
    std::snprintf(buf, sizeof buf, "c=%d", f.concurrency);
  else
    std::snprintf(buf, sizeof buf, "%.2f rps", f.rate_rps);
  return std::string(buf) + (f.confirming ? " (confirm)" : "");
}

std::string join_codes(const std::vector<std::string>& codes) {
  std::string out;
  for (const auto& c : codes) out += (out.empty() ? "" : "+") + c;
  return out.empty() ? "a check" : out;
}

// "ttft_p95 failed at 7.38 rps (confirm), 7.01 rps (confirm)" for up to four failures.
std::string failures_text(const std::vector<LevelFailure>& failures) {
  std::string out;
  std::size_t shown = 0;
  for (const auto& f : failures) {
    if (shown == 4) {
      out += "; and " + std::to_string(failures.size() - shown) + " more";
      break;
    }
    out += (shown ? "; " : "") + join_codes(f.codes) + " failed at " + level_text(f);
    ++shown;
  }
  return out;
}

}  // namespace

TargetVerdict judge_target(std::span<const JudgedStep> steps, std::span<const StepVerdict> verdicts,
                           const QualifiedCapacity& capacity) {
  if (steps.size() != verdicts.size())
    throw std::invalid_argument("judge_target: steps and verdicts differ in length");
  TargetVerdict v;
  bool open_levels = false, closed_levels = false;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (verdicts[i].client_bound) ++v.client_bound_steps;
    if (verdicts[i].insufficient_samples) ++v.insufficient_sample_steps;
    if (steps[i].role == StepRole::kExcluded) continue;
    if (steps[i].planned_rate_rps > 0)
      open_levels = true;
    else if (steps[i].stats.concurrency > 0)
      closed_levels = true;
  }
  if (!open_levels && !closed_levels) {
    v.statement = "no load level was judged";
    return v;
  }
  const bool open = open_levels;
  v.basis = open ? "open_loop" : "closed_loop";
  const LoadCapacity& cap = open ? capacity.open_loop : capacity.closed_loop;
  bool confirm_failed = false;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const JudgedStep& s = steps[i];
    if (s.role == StepRole::kExcluded || s.outcome != Outcome::kFail) continue;
    if (open != (s.planned_rate_rps > 0)) continue;
    LevelFailure f;
    f.rate_rps = s.planned_rate_rps;
    f.concurrency = open ? 0 : s.stats.concurrency;
    f.confirming = s.confirming();
    f.codes = verdicts[i].missed_server_codes();
    confirm_failed = confirm_failed || f.confirming;
    v.failures.push_back(std::move(f));
  }
  if (cap.point) {
    v.outcome = Outcome::kPass;
    v.statement = cap.statement;
    return v;
  }
  // Confirms first: they are what decided that no rate qualified.
  std::vector<LevelFailure> shown = v.failures;
  std::stable_partition(shown.begin(), shown.end(),
                        [](const LevelFailure& f) { return f.confirming; });
  bool anything_passed = false;
  // The lowest failing level, and whether a level below it could not be judged: the SLA may
  // hold there, so the target is not proven to fail (docs/metrics.md §5.4).
  double lowest_fail = 0;
  for (const auto& f : v.failures) {
    const double level = open ? f.rate_rps : f.concurrency;
    if (lowest_fail == 0 || level < lowest_fail) lowest_fail = level;
  }
  bool unjudged_below = false;
  for (const auto& s : steps) {
    if (s.role == StepRole::kExcluded || open != (s.planned_rate_rps > 0)) continue;
    if (s.outcome == Outcome::kPass) anything_passed = true;
    const double level = open ? s.planned_rate_rps : s.stats.concurrency;
    if (s.outcome == Outcome::kInconclusive && level < lowest_fail) unjudged_below = true;
  }
  if (!v.failures.empty() && !anything_passed && !unjudged_below) {
    v.outcome = Outcome::kFail;
    v.statement =
        "no qualified capacity: the SLA failed at every level tried: " + failures_text(shown);
    return v;
  }
  v.outcome = Outcome::kInconclusive;
  if (confirm_failed) {
    // Short steps passed but their longer confirms did not hold (noise at the SLA boundary,
    // or load a short step does not show): no rate is confirmed, and none is refuted below.
    v.statement = "no confirmed rate: " + failures_text(shown);
    if (cap.best_evidence) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "; best evidence ≥ %.2f rps short-step pass, not confirmed",
                    cap.best_evidence->offered_rate_rps);
      v.statement += buf;
    }
    v.statement += " (more search steps or longer windows may confirm a lower rate)";
  } else if (unjudged_below && !anything_passed) {
    v.statement = "no qualified capacity: " + failures_text(shown) +
                  "; lower levels could not be judged (inconclusive), so the SLA may hold there";
  } else {
    v.statement = "no qualified capacity: " + cap.statement;
  }
  if (v.client_bound_steps > 0)
    v.statement += "; " + std::to_string(v.client_bound_steps) + " client-bound step(s)";
  if (v.insufficient_sample_steps > 0)
    v.statement +=
        "; " + std::to_string(v.insufficient_sample_steps) + " step(s) with too few requests";
  return v;
}

Outcome overall_outcome(std::span<const TargetVerdict> targets) {
  if (targets.empty()) return Outcome::kInconclusive;
  bool all_pass = true;
  for (const auto& t : targets) {
    if (t.outcome == Outcome::kFail) return Outcome::kFail;
    all_pass = all_pass && t.outcome == Outcome::kPass;
  }
  return all_pass ? Outcome::kPass : Outcome::kInconclusive;
}

}  // namespace llmcap::analysis

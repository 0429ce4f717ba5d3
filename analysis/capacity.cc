#include "analysis/capacity.h"

#include <map>

namespace llmcap::analysis {

namespace {

QualifiedPoint point_from(const StepStats& s) {
  QualifiedPoint p;
  p.offered_rate_rps = s.offered_rate_rps;
  p.concurrency = s.concurrency;
  p.output_tokens_per_s = s.output_tokens_per_s;
  p.input_tokens_per_s = s.input_tokens_per_s;
  p.requests_per_s = s.requests_per_s;
  p.ttft_p50_ns = s.ttft_ns.p50;
  p.ttft_p95_ns = s.ttft_ns.p95;
  p.ttft_p99_ns = s.ttft_ns.p99;
  p.tpot_p50_ns = s.tpot_ns.p50;
  p.tpot_p95_ns = s.tpot_ns.p95;
  p.tpot_p99_ns = s.tpot_ns.p99;
  p.e2e_p50_ns = s.e2e_ns.p50;
  p.e2e_p95_ns = s.e2e_ns.p95;
  p.e2e_p99_ns = s.e2e_ns.p99;
  p.error_rate = s.error_rate;
  return p;
}

struct Level {
  bool any_pass = false;
  bool no_fail = true;
  bool confirmed = false;
  const JudgedStep* best = nullptr;  // longest passing window
};

LoadCapacity judge_levels(const std::map<double, Level>& levels, std::size_t considered,
                          const char* kind) {
  LoadCapacity out;
  out.steps_considered = considered;
  const Level* chosen = nullptr;
  double chosen_level = 0;
  for (const auto& [level, l] : levels) {
    if (l.any_pass && l.no_fail) {
      chosen = &l;
      chosen_level = level;
    }
  }
  if (!chosen) {
    out.statement = "no passing step among " + std::to_string(considered) + " " + kind + " steps";
    return out;
  }
  QualifiedPoint p = point_from(chosen->best->stats);
  p.confirmed = chosen->confirmed;
  for (const auto& [level, l] : levels) {
    if (level < chosen_level && !l.no_fail) p.non_monotonic = true;
  }
  out.point = p;
  out.statement = std::string("highest passing ") + kind + " level of " +
                  std::to_string(considered) + " steps" + (p.confirmed ? " (confirmed)" : "") +
                  (p.non_monotonic ? "; a lower level failed" : "");
  return out;
}

void add(std::map<double, Level>& levels, double level, const JudgedStep& s) {
  Level& l = levels[level];
  if (s.outcome == Outcome::kPass) {
    l.any_pass = true;
    if (s.confirm) l.confirmed = true;
    if (!l.best || s.stats.window_s > l.best->stats.window_s) l.best = &s;
  } else if (s.outcome == Outcome::kFail) {
    l.no_fail = false;
  }
}

}  // namespace

QualifiedCapacity qualified_capacity(std::span<const JudgedStep> steps) {
  std::map<double, Level> open, closed;
  std::size_t open_n = 0, closed_n = 0;
  for (const auto& s : steps) {
    if (s.stats.offered_rate_rps > 0) {
      ++open_n;
      add(open, s.stats.offered_rate_rps, s);
    } else if (s.stats.concurrency > 0) {
      ++closed_n;
      add(closed, s.stats.concurrency, s);
    }
  }
  QualifiedCapacity out;
  out.open_loop = judge_levels(open, open_n, "open-loop");
  out.closed_loop = judge_levels(closed, closed_n, "closed-loop");
  return out;
}

}  // namespace llmcap::analysis

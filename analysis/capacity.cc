#include "analysis/capacity.h"

#include <cstdio>
#include <map>

namespace llmcap::analysis {

namespace {

QualifiedPoint point_from(const StepStats& s, double level_rps) {
  QualifiedPoint p;
  p.offered_rate_rps = level_rps;
  p.achieved_rate_rps = s.achieved_rate_rps;
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
  bool no_fail = true;
  const JudgedStep* best_pass = nullptr;     // longest passing window
  const JudgedStep* best_confirm = nullptr;  // longest passing confirming window
};

bool longer(const JudgedStep* a, const JudgedStep& b) {
  return !a || b.stats.window_s > a->stats.window_s;
}

std::string rate_text(double rps) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f rps", rps);
  return buf;
}

LoadCapacity judge_levels(const std::map<double, Level>& levels, std::size_t considered,
                          bool open_loop) {
  LoadCapacity out;
  out.steps_considered = considered;
  const char* kind = open_loop ? "open-loop" : "closed-loop";
  // Open loop qualifies on a passing confirm; closed loop on any pass.
  auto qualifying = [open_loop](const Level& l) {
    return l.no_fail && (open_loop ? l.best_confirm != nullptr : l.best_pass != nullptr);
  };
  const Level* chosen = nullptr;
  double chosen_level = 0;
  const Level* evidence = nullptr;
  double evidence_level = 0;
  for (const auto& [level, l] : levels) {
    if (qualifying(l)) {
      chosen = &l;
      chosen_level = level;
    }
    if (l.no_fail && l.best_pass) {
      evidence = &l;
      evidence_level = level;
    }
  }
  const std::string n = std::to_string(considered);
  if (!chosen) {
    if (open_loop && evidence) {
      out.best_evidence = point_from(evidence->best_pass->stats, evidence_level);
      out.statement = "no confirmed level among " + n + " open-loop steps; best evidence ≥ " +
                      rate_text(evidence_level) + " short-step pass, not confirmed";
    } else {
      out.statement = std::string("no passing step among ") + n + " " + kind + " steps";
    }
    return out;
  }
  const JudgedStep& source = open_loop ? *chosen->best_confirm : *chosen->best_pass;
  QualifiedPoint p = point_from(source.stats, open_loop ? chosen_level : 0);
  p.confirmed = open_loop;
  for (const auto& [level, l] : levels) {
    if (level < chosen_level && !l.no_fail) p.non_monotonic = true;
  }
  out.point = p;
  out.statement = std::string("highest ") + (open_loop ? "confirmed " : "passing ") + kind +
                  " level of " + n + " steps" + (p.non_monotonic ? "; a lower level failed" : "");
  return out;
}

void add(std::map<double, Level>& levels, double level, const JudgedStep& s) {
  Level& l = levels[level];
  if (s.outcome == Outcome::kPass) {
    if (longer(l.best_pass, s)) l.best_pass = &s;
    if (s.confirming() && longer(l.best_confirm, s)) l.best_confirm = &s;
  } else if (s.outcome == Outcome::kFail) {
    l.no_fail = false;
  }
}

}  // namespace

QualifiedCapacity qualified_capacity(std::span<const JudgedStep> steps) {
  std::map<double, Level> open, closed;
  std::size_t open_n = 0, closed_n = 0;
  for (const auto& s : steps) {
    if (s.role == StepRole::kExcluded) continue;
    if (s.planned_rate_rps > 0) {
      ++open_n;
      add(open, s.planned_rate_rps, s);
    } else if (s.stats.concurrency > 0) {
      ++closed_n;
      add(closed, s.stats.concurrency, s);
    }
  }
  QualifiedCapacity out;
  out.open_loop = judge_levels(open, open_n, true);
  out.closed_loop = judge_levels(closed, closed_n, false);
  return out;
}

}  // namespace llmcap::analysis

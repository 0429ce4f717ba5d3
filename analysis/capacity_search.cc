#include "analysis/capacity_search.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace llmcap::analysis {

std::optional<double> rate_from_knee(double concurrency, double mean_e2e_ns) {
  if (!(concurrency > 0) || !(mean_e2e_ns > 0)) return std::nullopt;
  return concurrency / (mean_e2e_ns / 1e9);
}

std::optional<double> rate_from_knee(const Knee& knee) {
  return rate_from_knee(knee.point.concurrency, knee.point.mean_e2e_ns);
}

std::string_view to_string(SearchEnd e) {
  switch (e) {
    case SearchEnd::kRunning: return "running";
    case SearchEnd::kConfirmed: return "confirmed";
    case SearchEnd::kNoPassingRate: return "no_passing_rate";
    case SearchEnd::kConfirmFailed: return "confirm_failed";
    case SearchEnd::kStepLimit: return "step_limit";
  }
  return "running";
}

CapacitySearch::CapacitySearch(CapacitySearchOptions o) : options_(o) {
  auto positive = [](double v) { return std::isfinite(v) && v > 0; };
  if (!positive(o.min_rate_rps)) throw std::invalid_argument("min_rate_rps: must be positive");
  if (!positive(o.max_rate_rps) || o.max_rate_rps < o.min_rate_rps) {
    throw std::invalid_argument("max_rate_rps: must be ≥ min_rate_rps");
  }
  if (!positive(o.initial_rate_rps)) {
    throw std::invalid_argument("initial_rate_rps: must be positive");
  }
  if (!(o.expand_factor > 1) || !std::isfinite(o.expand_factor)) {
    throw std::invalid_argument("expand_factor: must be > 1");
  }
  if (!(o.relative_resolution >= 0) || !(o.absolute_resolution_rps >= 0) ||
      (o.relative_resolution == 0 && o.absolute_resolution_rps == 0)) {
    throw std::invalid_argument(
        "relative_resolution: it or absolute_resolution_rps must be positive, neither negative");
  }
  if (o.inconclusive_retries < 0) throw std::invalid_argument("inconclusive_retries: must be ≥ 0");
  if (!positive(o.confirm_duration_factor)) {
    throw std::invalid_argument("confirm_duration_factor: must be positive");
  }
  if (!(o.confirm_step_down > 0 && o.confirm_step_down < 1)) {
    throw std::invalid_argument("confirm_step_down: must be in (0, 1)");
  }
  if (o.max_confirm_attempts < 1) throw std::invalid_argument("max_confirm_attempts: must be ≥ 1");
  if (o.max_steps < 1) throw std::invalid_argument("max_steps: must be ≥ 1");
}

void CapacitySearch::finish(SearchEnd end) {
  result_.end = end;
  pending_.reset();
}

std::optional<SearchStep> CapacitySearch::next_rate() {
  if (done()) return std::nullopt;
  if (!pending_) pending_ = plan_next();
  return pending_;
}

std::optional<SearchStep> CapacitySearch::plan_next() {
  if (result_.steps >= options_.max_steps) {
    finish(SearchEnd::kStepLimit);
    return std::nullopt;
  }
  const double min = options_.min_rate_rps, max = options_.max_rate_rps;
  SearchStep step;
  if (!confirming_) {
    if (!lo_ && !hi_) {
      step.rate_rps = std::clamp(options_.initial_rate_rps, min, max);
    } else if (lo_ && !hi_) {
      if (*lo_ >= max) {
        confirming_ = true;
        confirm_rate_ = *lo_;
        result_.at_max_rate = true;
      } else {
        step.rate_rps = std::min(*lo_ * options_.expand_factor, max);
      }
    } else if (!lo_ && hi_) {
      if (*hi_ <= min) {
        finish(SearchEnd::kNoPassingRate);
        return std::nullopt;
      }
      step.rate_rps = std::max(*hi_ / options_.expand_factor, min);
    } else {
      const double width = *hi_ - *lo_;
      if (width <=
          std::max(options_.relative_resolution * *lo_, options_.absolute_resolution_rps)) {
        confirming_ = true;
        confirm_rate_ = *lo_;
      } else {
        step.rate_rps = (*lo_ + *hi_) / 2;
      }
    }
  }
  if (confirming_) {
    step.rate_rps = confirm_rate_;
    step.confirm = true;
    step.duration_factor = options_.confirm_duration_factor;
  }
  return step;
}

void CapacitySearch::report(double rate_rps, Outcome outcome) {
  if (done()) throw std::logic_error("CapacitySearch::report: the search is over");
  if (!pending_ || std::fabs(pending_->rate_rps - rate_rps) > 1e-9 * std::max(1.0, rate_rps)) {
    throw std::logic_error("CapacitySearch::report: rate was not the one next_rate() asked for");
  }
  ++result_.steps;
  SearchTrial trial{*pending_, outcome, false};
  if (outcome == Outcome::kInconclusive) {
    if (retries_used_ < options_.inconclusive_retries) {
      ++retries_used_;
      result_.trials.push_back(trial);
      ++pending_->attempt;
      if (result_.steps >= options_.max_steps) finish(SearchEnd::kStepLimit);
      return;
    }
    trial.treated_as_fail = true;
    ++result_.inconclusive_treated_as_fail;
  }
  result_.trials.push_back(trial);
  retries_used_ = 0;
  const SearchStep step = *pending_;
  pending_.reset();
  const bool passed = outcome == Outcome::kPass;

  if (!step.confirm) {
    if (passed) {
      lo_ = lo_ ? std::max(*lo_, rate_rps) : rate_rps;
      short_passes_.push_back(rate_rps);
      result_.highest_pass_rps = std::max(result_.highest_pass_rps.value_or(rate_rps), rate_rps);
    } else {
      hi_ = hi_ ? std::min(*hi_, rate_rps) : rate_rps;
      result_.lowest_fail_rps = hi_;
    }
    return;
  }
  if (passed) {
    result_.qualified_rate_rps = rate_rps;
    result_.at_max_rate = rate_rps >= options_.max_rate_rps;
    finish(SearchEnd::kConfirmed);
    return;
  }
  ++confirm_attempts_;
  result_.lowest_fail_rps = std::min(result_.lowest_fail_rps.value_or(rate_rps), rate_rps);
  result_.at_max_rate = false;
  // Everything above a step down from the failed confirm counts as failed; the search resumes
  // below it from the short-step evidence there (see the header).
  const double ceiling = rate_rps * (1 - options_.confirm_step_down);
  if (confirm_attempts_ >= options_.max_confirm_attempts || ceiling < options_.min_rate_rps) {
    finish(SearchEnd::kConfirmFailed);
    return;
  }
  hi_ = ceiling;
  lo_.reset();
  for (const double r : short_passes_) {
    if (r <= ceiling) lo_ = lo_ ? std::max(*lo_, r) : r;
  }
  confirming_ = false;
}

}  // namespace llmcap::analysis

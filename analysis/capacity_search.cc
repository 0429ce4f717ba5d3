#include "analysis/capacity_search.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace llmcap::analysis {

std::optional<double> rate_from_knee(double concurrency, double mean_e2e_ns) {
  if (!(concurrency > 0) || !(mean_e2e_ns > 0)) return std::nullopt;
  return concurrency / (mean_e2e_ns / 1e9);
}

std::optional<double> rate_from_knee(const Knee& knee) {
  return rate_from_knee(knee.point.concurrency, knee.point.mean_e2e_ns);
}

double confirm_window_s(double confirm_duration_s, double lifetime_s) {
  if (!(lifetime_s > 0) || !std::isfinite(lifetime_s)) return confirm_duration_s;
  return std::max(confirm_duration_s, std::ceil(kConfirmLifetimes * lifetime_s));
}

std::string_view to_string(SearchEnd e) {
  switch (e) {
    case SearchEnd::kRunning: return "running";
    case SearchEnd::kConfirmed: return "confirmed";
    case SearchEnd::kNoPassingRate: return "no_passing_rate";
    case SearchEnd::kConfirmFailed: return "confirm_failed";
    case SearchEnd::kStepLimit: return "step_limit";
    case SearchEnd::kInsufficientSamples: return "insufficient_samples";
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
  if (o.first_step_factor != 0 &&
      (!(o.first_step_factor > 1) || !(o.first_step_factor <= o.expand_factor))) {
    throw std::invalid_argument("first_step_factor: must be 0 or in (1, expand_factor]");
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
  if (o.max_steps < 1) throw std::invalid_argument("max_steps: must be ≥ 1");
  step_factor_ = o.first_step_factor > 0 ? o.first_step_factor : o.expand_factor;
  if (o.planned_high_rps != 0 && !(o.planned_high_rps > o.initial_rate_rps))
    throw std::invalid_argument("planned_high_rps: must be 0 or above initial_rate_rps");
}

bool CapacitySearch::narrow(double lo, double hi) const {
  const double width =
      std::max(options_.relative_resolution * lo, options_.absolute_resolution_rps);
  return hi - lo <= width * (1 + 1e-9);
}

void CapacitySearch::finish(SearchEnd end) {
  if (confirmed_ && (end == SearchEnd::kStepLimit || end == SearchEnd::kInsufficientSamples ||
                     end == SearchEnd::kConfirmFailed))
    end = SearchEnd::kConfirmed;  // the highest confirmed pass stands, at a coarser resolution
  result_.end = end;
  pending_.reset();
  if (!confirmed_) {
    result_.at_max_rate = false;
    return;
  }
  result_.qualified_rate_rps = confirmed_;
  result_.bracket_low_rps = confirmed_;
  for (const auto& t : result_.trials) {
    const bool failed = t.outcome == Outcome::kFail || t.treated_as_fail;
    if (failed && t.step.rate_rps > *confirmed_)
      result_.bracket_high_rps =
          std::min(result_.bracket_high_rps.value_or(t.step.rate_rps), t.step.rate_rps);
  }
  result_.at_max_rate = *confirmed_ >= options_.max_rate_rps;
  result_.resolution_reached =
      result_.at_max_rate ||
      (result_.bracket_high_rps && narrow(*confirmed_, *result_.bracket_high_rps));
}

std::optional<SearchStep> CapacitySearch::next_rate() {
  if (done()) return std::nullopt;
  if (!pending_) pending_ = plan_next();
  return pending_;
}

std::optional<double> CapacitySearch::next_long_rate() {
  // Every step is confirm-length; the bracket is [highest confirmed pass, lowest fail].
  const double min = options_.min_rate_rps;
  if (confirmed_) {
    if (!hi_ || narrow(*confirmed_, *hi_)) {
      finish(SearchEnd::kConfirmed);
      return std::nullopt;
    }
    return (*confirmed_ + *hi_) / 2;
  }
  if (*hi_ <= min) {
    finish(SearchEnd::kConfirmFailed);
    return std::nullopt;
  }
  // Just below the lowest fail: a pass there is already within the resolution of it.
  const double just_below =
      std::min(*hi_ / (1 + options_.relative_resolution), *hi_ - options_.absolute_resolution_rps);
  double r = just_below;
  // A short pass already within the resolution of the failed rate is confirmed first.
  for (const double p : short_passes_) {
    if (p < *hi_ && narrow(p, *hi_) && p > r) r = p;
  }
  if (just_below_tried_) {
    // Galloping down: the factor squares on every further failed confirm, up to expand_factor
    // (1.05, 1.10, 1.22, 1.48, 2 at the default resolution), so a confirm-length capacity a
    // little below the short steps' costs a step or two, one far below a few more.
    down_factor_ = std::min(down_factor_ * down_factor_, options_.expand_factor);
    r = *hi_ / down_factor_;
  } else {
    down_factor_ = std::min(1 + options_.relative_resolution, options_.expand_factor);
  }
  just_below_tried_ = true;
  r = std::max(r, min);
  if (thin_ && r <= *thin_) {
    finish(SearchEnd::kInsufficientSamples);
    return std::nullopt;
  }
  return r;
}

std::optional<SearchStep> CapacitySearch::plan_next() {
  if (result_.steps >= options_.max_steps) {
    finish(SearchEnd::kStepLimit);
    return std::nullopt;
  }
  const int left = options_.max_steps - result_.steps;
  const double min = options_.min_rate_rps, max = options_.max_rate_rps;
  SearchStep step;
  if (long_mode_) {
    const auto r = next_long_rate();
    if (!r) return std::nullopt;
    step.rate_rps = *r;
    step.confirm = true;
    step.duration_factor = options_.confirm_duration_factor;
    return step;
  }
  if (!confirm_now_) {
    if (!lo_ && !hi_) {
      if (!thin_) {
        step.rate_rps = std::clamp(options_.initial_rate_rps, min, max);
      } else if (*thin_ >= max) {  // higher rates hold more requests; none is left
        finish(SearchEnd::kInsufficientSamples);
        return std::nullopt;
      } else {
        step.rate_rps = std::min(*thin_ * step_factor_, max);
      }
    } else if (lo_ && !hi_) {
      if (*lo_ >= max) {
        confirm_now_ = true;
        result_.at_max_rate = true;
      } else if (options_.planned_high_rps > 0 && !planned_high_tried_ && left > 2) {
        // A planned search checks the prediction's bracket: the step that failed just above
        // its answer there (a short step or a confirm, as it was).
        planned_high_tried_ = planned_high_pending_ = true;
        step.rate_rps = std::min(options_.planned_high_rps, max);
        if (options_.planned_high_confirm) {
          step.confirm = true;
          step.duration_factor = options_.confirm_duration_factor;
        }
        return step;
      } else if (left <= 1) {
        confirm_now_ = true;
      } else {
        step.rate_rps = std::min(*lo_ * step_factor_, max);
      }
    } else if (!lo_ && hi_) {
      if (*hi_ <= min) {
        finish(SearchEnd::kNoPassingRate);
        return std::nullopt;
      }
      const double r = std::max(*hi_ / step_factor_, min);
      if (thin_ && r <= *thin_) {
        finish(SearchEnd::kInsufficientSamples);
        return std::nullopt;
      }
      step.rate_rps = r;
    } else if (narrow(*lo_, *hi_) || left <= 1) {
      confirm_now_ = true;
    } else {
      step.rate_rps = (*lo_ + *hi_) / 2;
    }
  }
  if (confirm_now_) {
    step.rate_rps = *lo_;
    step.confirm = true;
    step.duration_factor = options_.confirm_duration_factor;
  }
  return step;
}

void CapacitySearch::record_fail(double rate_rps) {
  hi_ = std::min(hi_.value_or(rate_rps), rate_rps);
  result_.lowest_fail_rps = hi_;
}

void CapacitySearch::report(double rate_rps, Outcome outcome, bool insufficient_samples) {
  if (done()) throw std::logic_error("CapacitySearch::report: the search is over");
  if (!pending_ || std::fabs(pending_->rate_rps - rate_rps) > 1e-9 * std::max(1.0, rate_rps)) {
    throw std::logic_error("CapacitySearch::report: rate was not the one next_rate() asked for");
  }
  ++result_.steps;
  SearchTrial trial{*pending_, outcome, false, false};
  const SearchStep step = *pending_;

  if (outcome == Outcome::kInconclusive && insufficient_samples) {
    // Never a fail: this rate (and every lower one) cannot be judged on its window.
    trial.insufficient_samples = true;
    result_.trials.push_back(trial);
    retries_used_ = 0;
    pending_.reset();
    thin_ = std::max(thin_.value_or(rate_rps), rate_rps);
    result_.insufficient_samples_at_rps = thin_;
    if (step.confirm) {
      finish(SearchEnd::kInsufficientSamples);  // kConfirmed when a lower rate was confirmed
    } else if (lo_) {
      confirm_now_ = true;  // nothing between the pass and here can be judged better
    }
    return;
  }
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
  pending_.reset();
  const bool passed = outcome == Outcome::kPass;
  const bool planned_high = std::exchange(planned_high_pending_, false);
  if (planned_high && step.confirm && passed) {
    // The target holds more than its prediction: a confirm there is evidence like a short
    // pass (the answer still needs a short pass and a confirm at one rate).
    lo_ = std::max(lo_.value_or(rate_rps), rate_rps);
    short_passes_.push_back(rate_rps);
    result_.highest_pass_rps = std::max(result_.highest_pass_rps.value_or(rate_rps), rate_rps);
    direction_ = 1;
    return;
  }

  if (!step.confirm) {
    if (passed) {
      if (direction_ == 1)
        step_factor_ = std::min(step_factor_ * step_factor_, options_.expand_factor);
      direction_ = 1;
      lo_ = std::max(lo_.value_or(rate_rps), rate_rps);
      short_passes_.push_back(rate_rps);
      result_.highest_pass_rps = std::max(result_.highest_pass_rps.value_or(rate_rps), rate_rps);
    } else {
      if (direction_ == -1)
        step_factor_ = std::min(step_factor_ * step_factor_, options_.expand_factor);
      direction_ = -1;
      record_fail(rate_rps);
    }
    return;
  }
  if (passed) {
    confirmed_ = std::max(confirmed_.value_or(rate_rps), rate_rps);
    if (!long_mode_) {
      finish(SearchEnd::kConfirmed);
      return;
    }
    if (!hi_ || narrow(*confirmed_, *hi_)) finish(SearchEnd::kConfirmed);
    return;
  }
  // A failed confirm: short steps overstate what a long run holds at this load. Every later
  // step is confirm-length, starting just below this rate (see the header).
  record_fail(rate_rps);
  long_mode_ = true;
  confirm_now_ = false;
}

}  // namespace llmcap::analysis

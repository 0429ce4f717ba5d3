#include "agent/step_spec.h"

#include <algorithm>
#include <cmath>

#include "agent/endpoint.h"
#include "agent/request_builder.h"

namespace llmcap::agent {

namespace {

void check_length(const analysis::LengthDistribution& d, const std::string& field,
                  std::vector<std::string>& errors) {
  using K = analysis::LengthDistribution::Kind;
  if (d.min_tokens < 0 || d.max_tokens < d.min_tokens)
    errors.push_back(field + ": need 0 <= min_tokens <= max_tokens");
  switch (d.kind) {
    case K::kFixed:
      if (d.mean < 0) errors.push_back(field + ".mean: must be >= 0");
      break;
    case K::kUniform:
      if (d.low < 0 || d.high < d.low) errors.push_back(field + ": need 0 <= low <= high");
      break;
    case K::kNormal:
    case K::kLognormal:
      if (!(d.mean > 0) || d.stddev < 0) errors.push_back(field + ": need mean > 0, stddev >= 0");
      break;
    case K::kEmpirical:
      if (d.values.empty()) errors.push_back(field + ".values: must not be empty");
      break;
  }
}

// A uniform draw in [0, 1) that is a pure function of (seed, index, salt): splitmix64, with a
// salt per use so that the draws of abandonment, prefix groups and mix classes are independent
// of each other and of the lengths.
double unit_draw(std::uint64_t seed, std::uint64_t index, std::uint64_t salt) {
  std::uint64_t x = seed ^ (0x9e3779b97f4a7c15ULL * (index + 1)) ^ salt;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return static_cast<double>(x >> 11) * 0x1.0p-53;
}

// The index of the share that `u` falls in (shares summing to 1; the last one takes what
// rounding leaves).
template <typename Items, typename Share>
int pick_by_share(const Items& items, double u, Share share) {
  double cumulative = 0;
  for (std::size_t i = 0; i < items.size(); ++i) {
    cumulative += share(items[i]);
    if (u < cumulative) return static_cast<int>(i);
  }
  return static_cast<int>(items.size()) - 1;
}

bool has_ctl(std::string_view s) {
  for (char c : s)
    if (c == '\r' || c == '\n' || c == '\0') return true;
  return false;
}

}  // namespace

bool abandons(const AbandonSpec& abandon, std::uint64_t seed, std::uint64_t index) {
  if (!abandon.enabled()) return false;
  return unit_draw(seed, index, 0xab5a4d0aULL) < abandon.share;
}

int prefix_group_of(const std::vector<PrefixGroup>& groups, std::uint64_t seed,
                    std::uint64_t index) {
  if (groups.empty()) return -1;
  return pick_by_share(groups, unit_draw(seed, index, 0x9f3e1d2c5b7a6948ULL),
                       [](const PrefixGroup& g) { return g.share; });
}

int mix_class_of(const std::vector<MixClassSpec>& mix, std::uint64_t seed, std::uint64_t index) {
  if (mix.empty()) return -1;
  return pick_by_share(mix, unit_draw(seed, index, 0x3c6ef372fe94f82bULL),
                       [](const MixClassSpec& c) { return c.weight; });
}

std::uint64_t mix_class_seed(std::uint64_t seed, std::size_t c) {
  std::uint64_t x = seed + 0x9e3779b97f4a7c15ULL * (c + 1) + 0x6d1c4e5b9a3f2e17ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

double WorkloadSpec::planned_input_mean() const {
  if (mix.empty()) return input_tokens.nominal_mean();
  double sum = 0;
  for (const auto& c : mix) sum += c.weight * c.input_tokens.nominal_mean();
  return sum;
}

double WorkloadSpec::planned_output_mean() const {
  if (mix.empty()) return output_tokens.nominal_mean();
  double sum = 0;
  for (const auto& c : mix) sum += c.weight * c.output_tokens.nominal_mean();
  return sum;
}

TraceWindowPlan plan_trace_window(const Trace& trace, double speed, double warmup_s) {
  TraceWindowPlan out;
  if (!(speed > 0)) return out;
  const auto warmup_ns = static_cast<std::int64_t>(std::llround(warmup_s * 1e9));
  std::int64_t last_ns = -1;
  for (const auto& r : trace.records()) {
    const std::int64_t at = replay_time_ns(r, speed);
    if (at < warmup_ns) continue;
    ++out.arrivals;
    last_ns = at;
  }
  if (last_ns >= 0)
    out.window_s = std::max(0.001, static_cast<double>(last_ns - warmup_ns) / 1e9 + 0.001);
  return out;
}

double planned_window_s(const StepSpec& spec) {
  if (spec.window_requests <= 0 || spec.load.kind != LoadKind::kOpen) return spec.duration_s;
  const auto t =
      spec.load.rate.time_for_arrivals(spec.warmup_s, static_cast<double>(spec.window_requests));
  return t ? std::min(*t, spec.duration_s) : spec.duration_s;
}

std::vector<std::string> validate(const StepSpec& s) {
  std::vector<std::string> e;
  if (auto ep = parse_endpoint(s.target.base_url); !ep)
    e.push_back("target.base_url: " + ep.error());
  for (std::size_t i = 0; i < s.target.headers.size(); ++i) {
    const auto& [k, v] = s.target.headers[i];
    if (k.empty() || has_ctl(k) || k.find(':') != std::string::npos ||
        k.find(' ') != std::string::npos || has_ctl(v))
      e.push_back("target.headers[" + std::to_string(i) + "]: invalid header name or value");
  }
  if (s.deadlines.connect_ms <= 0) e.push_back("deadlines.connect_ms: must be > 0");
  if (s.deadlines.first_token_ms < 0) e.push_back("deadlines.first_token_ms: must be >= 0");
  if (s.deadlines.idle_ms < 0) e.push_back("deadlines.idle_ms: must be >= 0");
  if (s.deadlines.total_ms < 0) e.push_back("deadlines.total_ms: must be >= 0");
  const auto& w = s.workload;
  if (w.source == WorkloadSource::kSynthetic)
    check_length(w.input_tokens, "workload.input_tokens", e);
  check_length(w.output_tokens, "workload.output_tokens", e);
  if (w.source == WorkloadSource::kDataset && w.dataset_path.empty())
    e.push_back("workload.dataset_path: required for a dataset workload");
  if (w.source == WorkloadSource::kTrace && w.trace_path.empty())
    e.push_back("workload.trace.path: required for a trace workload");
  if (w.source == WorkloadSource::kTrace && w.trace_block_tokens < 1)
    e.push_back("workload.trace.block_tokens: must be >= 1");
  if (!(w.abandon.share >= 0 && w.abandon.share <= 1))
    e.push_back("workload.abandon.share: must be in 0..1");
  if (w.abandon.after_ms < 0 || w.abandon.after_tokens < 0 ||
      (w.abandon.after_ms > 0 && w.abandon.after_tokens > 0))
    e.push_back("workload.abandon: give one of after_ms and after_tokens, > 0");
  for (auto& err : validate_conversation(w.conversation)) e.push_back(std::move(err));
  if (w.conversation.enabled()) {
    if (w.source != WorkloadSource::kSynthetic)
      e.push_back(
          "workload.conversation: applies to synthetic prompts only (not with dataset "
          "or trace)");
    if (s.load.kind == LoadKind::kTrace)
      e.push_back("load.kind: a trace replay cannot carry workload.conversation");
    if (s.window_requests > 0)
      e.push_back(
          "window_requests: request-count windows do not apply to "
          "workload.conversation (a session's turns are not independent requests)");
  }
  if (w.shared_prefix_tokens < 0) e.push_back("workload.shared_prefix_tokens: must be >= 0");
  if (!w.mix.empty()) {
    double sum = 0;
    for (std::size_t c = 0; c < w.mix.size(); ++c) {
      const std::string at = "workload.mix[" + std::to_string(c) + "]";
      if (!(w.mix[c].weight > 0)) e.push_back(at + ".weight: must be > 0");
      sum += w.mix[c].weight;
      check_length(w.mix[c].input_tokens, at + ".input_tokens", e);
      check_length(w.mix[c].output_tokens, at + ".output_tokens", e);
      if (w.mix[c].prefix_tokens < 0) e.push_back(at + ".prefix_tokens: must be >= 0");
    }
    if (std::abs(sum - 1.0) > 1e-6) e.push_back("workload.mix: the weights must sum to 1");
    if (w.mix.size() > kMaxMixClasses)
      e.push_back("workload.mix: at most " + std::to_string(kMaxMixClasses) + " classes");
    if (w.source != WorkloadSource::kSynthetic)
      e.push_back("workload.mix: applies to synthetic prompts only");
    if (!w.prefix_groups.empty() || w.shared_prefix_tokens > 0)
      e.push_back(
          "workload.mix: give prefix_tokens per class, not prefix_groups or "
          "shared_prefix_tokens");
  }

  if (!(w.default_tokens_per_word > 0))
    e.push_back("workload.default_tokens_per_word: must be > 0");
  if (auto err = RequestBuilder::check_json_object(w.extra_body_json, "workload.extra_body"))
    e.push_back(*err);
  if (s.load.kind == LoadKind::kClosed) {
    if (s.load.concurrency < 1 || s.load.concurrency > 100'000)
      e.push_back("load.concurrency: must be in 1..100000");
  } else if (s.load.kind == LoadKind::kTrace) {
    if (w.source != WorkloadSource::kTrace)
      e.push_back("load.kind: a trace replay needs a trace workload (workload.trace)");
    if (!(s.load.trace_speed > 0) || !std::isfinite(s.load.trace_speed))
      e.push_back("load.trace_speed: must be > 0");
    if (s.load.in_flight_cap < 1) e.push_back("load.in_flight_cap: must be >= 1");
  } else {
    if (auto err = s.load.rate.validate()) e.push_back("load.rate: " + *err);
    if (!(s.load.burstiness > 0)) e.push_back("load.burstiness: must be > 0");
    if (s.load.in_flight_cap < 1) e.push_back("load.in_flight_cap: must be >= 1");
  }
  if (!(s.warmup_s >= 0) || !std::isfinite(s.warmup_s)) e.push_back("warmup_s: must be >= 0");
  if (!(s.duration_s > 0) || !std::isfinite(s.duration_s)) e.push_back("duration_s: must be > 0");
  if (s.window_requests < 0) e.push_back("window_requests: must be >= 0");
  if (!(s.drain_timeout_s >= 0)) e.push_back("drain_timeout_s: must be >= 0");
  if (s.progress_interval_ms <= 0) e.push_back("progress_interval_ms: must be > 0");
  if (s.in_flight_sample_ms <= 0) e.push_back("in_flight_sample_ms: must be > 0");
  return e;
}

}  // namespace llmcap::agent

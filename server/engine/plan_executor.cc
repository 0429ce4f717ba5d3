#include "server/engine/plan_executor.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>

#include "analysis/burst.h"
#include "analysis/capacity.h"
#include "analysis/capacity_search.h"
#include "analysis/cost.h"
#include "analysis/knee.h"
#include "analysis/region_latency.h"
#include "analysis/repeatability.h"
#include "analysis/sample_window.h"
#include "analysis/step_stats.h"
#include "analysis/target_verdict.h"
#include "analysis/verdict.h"
#include "analysis/windowed.h"
#include "api/at_demand.h"
#include "api/result_json.h"
#include "server/engine/embedded_sims.h"
#include "server/engine/plan_conversion.h"
#include "server/engine/virtual_step_backend.h"
#include "sim/sim_model.h"

namespace llmcap::server {

using nlohmann::json;

std::string phase_key(std::size_t target_index, std::size_t phase_index, int repeat_index) {
  return std::to_string(target_index) + "/" + std::to_string(phase_index) + "/" +
         std::to_string(repeat_index);
}

namespace {

std::shared_ptr<spdlog::logger> log() {
  if (auto l = spdlog::get("server")) return l;
  return spdlog::default_logger();
}

constexpr double kNsPerS = 1e9;

std::string rate_label(double rps) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.2f rps", rps);
  return buf;
}

// Draw keys (StepRequest::draw_key) start here, apart from step indices.
constexpr int kDrawKeyBase = 1 << 20;

// The draw key of a step whose planned window (before lengthening for min_requests) is
// `planned_s` long: steps of one length share their draws at every rate, steps of another
// length draw anew (a confirm is fresh evidence, not the short step's draws again), and a
// rate_sweep as long as a search's confirms draws what they draw. A retry draws anew.
int draw_key_for(double planned_s, int attempt) {
  const auto ms = static_cast<int>(std::llround(planned_s * 1000) % 100'000'000);
  return ms + 100'000'000 * std::min(attempt - 1, 9);
}

// Seeds differ per step but are equal across targets, so every target sees the same prompts.
std::uint64_t step_seed(std::uint64_t plan_seed, std::size_t phase, int repeat, int step) {
  std::uint64_t x = plan_seed ^ (0x9e3779b97f4a7c15ULL * (phase + 1)) ^
                    (0xbf58476d1ce4e5b9ULL * static_cast<std::uint64_t>(repeat + 1)) ^
                    (0x94d049bb133111ebULL * static_cast<std::uint64_t>(step + 1));
  x ^= x >> 31;
  return x;
}

// Time compression for simulated targets with time_scale k: the step runs k× faster (durations
// ÷ k, rates × k) and every measured time is scaled back × k before analysis.
agent::RateProfile compress(const agent::RateProfile& p, double k) {
  std::vector<agent::RateProfile::Segment> segs = p.segments();
  for (auto& s : segs) {
    s.start_s /= k;
    s.end_s /= k;
    s.rate_start *= k;
    s.rate_end *= k;
  }
  return agent::RateProfile::from_segments(std::move(segs));
}

void expand(agent::StepResult& r, double k) {
  auto scale = [k](std::int64_t& t) {
    if (t >= 0) t = static_cast<std::int64_t>(std::llround(static_cast<double>(t) * k));
  };
  for (auto& s : r.samples) {
    scale(s.t_intended_ns);
    scale(s.t_send_ns);
    scale(s.connect_ns);
    scale(s.tls_ns);
    scale(s.t_headers_ns);
    scale(s.t_first_token_ns);
    scale(s.t_last_token_ns);
    scale(s.t_end_ns);
    scale(s.max_itl_ns);
    for (auto& t : s.token_times_ns) scale(t);
  }
  analysis::LogHistogram itl;
  for (const auto& b : r.itl_ns.buckets())
    itl.record(analysis::LogHistogram::bucket_value(b.index) * k, b.count);
  r.itl_ns = itl;
  for (auto& by_class : r.itl_ns_by_class) {
    analysis::LogHistogram scaled;
    for (const auto& b : by_class.buckets())
      scaled.record(analysis::LogHistogram::bucket_value(b.index) * k, b.count);
    by_class = scaled;
  }
  for (auto& [t, n] : r.in_flight_series) scale(t);
  scale(r.window_start_ns);
  scale(r.window_end_ns);
  scale(r.end_ns);
  // The client's own figures (schedule, dispatch and timer lag) stay in wall-clock time: they
  // judge the load generator, which ran in real time (a 3 ms hiccup is 3 ms at any k).
}

// A workload mix's class in one step: its requests' statistics and its own verdict.
struct MixClassRecord {
  analysis::StepStats stats;
  analysis::StepVerdict verdict;
};

// One judged step, kept for the target's capacity and the phase analyses.
struct StepRecord {
  analysis::JudgedStep judged;
  analysis::StepVerdict verdict;
  std::vector<MixClassRecord> classes;           // workload mix: one per class, else empty
  std::vector<analysis::RequestSample> samples;  // kept only for burst/soak analyses
  std::vector<analysis::InFlightPoint> in_flight;
};

class TargetRun {
 public:
  TargetRun(const RunPlan& plan, const RunTarget& target, std::size_t target_index,
            ExecutionSink& sink, std::stop_token stop, const ResumeState& resume,
            std::int64_t& global_step, std::int64_t planned_steps, StepBackend& backend)
      : plan_(plan),
        target_(target),
        target_index_(target_index),
        sink_(sink),
        stop_(std::move(stop)),
        resume_(resume),
        global_step_(global_step),
        planned_steps_(planned_steps),
        backend_(backend) {}

  // Runs every phase; returns the target's results document.
  json run(std::string& error, bool& cancelled);
  // Simulated targets: reads the simulator's lost wall-clock time (EmbeddedSimulators).
  void set_target_clock(std::function<std::int64_t()> lost_ns) {
    clock_lost_ns_ = std::move(lost_ns);
  }
  // start_from "prediction": the rate the plan's prediction qualified, by phase name, on this
  // target; or why there is none (`unavailable`).
  void set_predicted_starts(std::map<std::string, PlannedSearch> by_phase,
                            std::string unavailable) {
    predicted_starts_ = std::move(by_phase);
    prediction_unavailable_ = std::move(unavailable);
  }

 private:
  // One run of one phase: where it sits, and the step documents it has produced so far.
  struct PhaseRun {
    const PlanPhase& phase;
    std::size_t index;
    int repeat;
    std::string& error;
    json steps = json::array();
    // Resumed: the steps an earlier run of this phase stored, in run order (else empty), and
    // how many of them take_step() has reused so far.
    const std::vector<json>& stored;
    std::size_t reused = 0;
    // The phase ran to its end (every level, or the search decided): its document is complete
    // even when a stop arrived after its last step.
    bool finished = false;
  };
  // What the load generator produced for a step, already in simulated real time.
  struct Measured {
    agent::StepResult result;
    json agents;  // scale-out: the backend's per-shard figures (null when local)
    agent::TelemetryResult telemetry;
    std::string metrics_url;  // "" when the target's telemetry was not scraped
    std::int64_t clock_lost_ns = 0;
    std::uint64_t seed = 0;  // the step's (assigns a workload mix's classes)
  };
  // What a step asks of the load generator.
  struct StepRequest {
    int step_index = 0;
    agent::LoadSpec load;
    double duration_s = 0;             // the window (request-count steps: its cap)
    std::int64_t window_requests = 0;  // > 0: a request-count window (agent/step_spec.h)
    double planned_window_s = 0;       // for progress and ETA; 0: duration_s
    std::string label;
    json params;
    analysis::StepRole role = analysis::StepRole::kLevel;
    double planned_rate_rps = 0;  // the capacity level it measures (analysis/capacity.h)
    bool keep_samples = false;    // burst and soak analyses read them
    // ≥ 0: the step's draws (arrivals, lengths, classes) are seeded by this key instead of
    // step_index, so the steps of a rate sweep or capacity search that share it see the same
    // requests at every rate (common random numbers: a verdict changes with the rate, not with
    // the luck of the draw). The prompts' words stay per step (StepSpec::content_seed).
    int draw_key = -1;
    // > 0: a verdict that rests on an in-flight trend over too few request lifetimes (a pass,
    // or a fail on the trend alone) is deferred (analysis::defer_short_trend) and may be judged
    // again over a window up to this long.
    double rejudge_max_window_s = 0;
  };

  // The phase's steps, one function per kind; each returns the keys it adds to the phase
  // document (knee, search, burst, soak).
  json run_phase(const PlanPhase& phase, std::size_t phase_index, int repeat, std::string& error,
                 const std::vector<json>& stored, bool& finished);
  json run_concurrency_sweep(PhaseRun& run);
  json run_rate_sweep(PhaseRun& run);
  json run_capacity_search(PhaseRun& run);
  json run_burst(PhaseRun& run);
  json run_soak(PhaseRun& run);
  json run_trace_replay(PhaseRun& run);
  json run_at_demand(PhaseRun& run);
  // An open-loop load at `rate` with the phase's arrival settings.
  static agent::LoadSpec open_load(const PlanPhase& phase, agent::RateProfile rate);
  // Request-count mode: an open-loop step at `rate` holds phase.requests in a window of
  // requests / rate s (at most max_duration_s). No-op in time mode.
  // Open-loop time windows hold the SLA's min_requests: a window that would hold fewer at its
  // rate is lengthened (up to the phase's max_duration_s) to hold min_requests + 3√min_requests
  // on average, so a Poisson count falls short about once in a thousand steps. A rate too low
  // for even that reads inconclusive (insufficient samples), never failed.
  void lengthen_for_samples(const PlanPhase& phase, double rate, StepRequest& step) const {
    if (step.window_requests > 0 || !(rate > 0)) return;
    const double needed_s = analysis::window_for_min_requests_s(rate, plan_.sla.min_requests);
    if (needed_s <= step.duration_s) return;
    const double lengthened = std::min(needed_s, std::max(phase.max_duration_s, step.duration_s));
    if (lengthened <= step.duration_s) return;
    if (!step.params.contains("lengthened_from_s"))
      step.params["lengthened_from_s"] = step.duration_s;
    step.duration_s = lengthened;
  }
  static void set_requests_window(const PlanPhase& phase, double rate, StepRequest& step) {
    if (phase.requests <= 0) return;
    step.duration_s = api::planned_window_s(phase, rate, 0, 0);
    step.window_requests = phase.requests;
    step.params["requests"] = phase.requests;
  }
  double mean_output_tokens() const { return target_.workload.planned_output_mean(); }

  // Runs one step: build its spec, measure, judge, document, hand it to the sink. nullopt when
  // it was cancelled before it produced anything, it failed (run.error), or the sink failed.
  std::optional<StepRecord> run_step(PhaseRun& run, StepRequest request);
  // run_step(), unless the phase has a stored step left from an earlier run: then that step,
  // checked to be the one asked for, is reused as it was stored (never run again). A stored
  // step that is not the one asked for fails the job (run.error), nullopt.
  std::optional<StepRecord> take_step(PhaseRun& run, StepRequest request);
  // take_step() for an open-loop step at one rate in a time window (a rate sweep's level, a
  // capacity search's step): when its verdict was deferred because its window held too few
  // request lifetimes to judge the in-flight trend (analysis::defer_short_trend), the same rate
  // and draws run again over the longer window as step `next_index` (incremented), and that
  // step's record, whose verdict stands, is returned.
  std::optional<StepRecord> take_rate_step(PhaseRun& run, StepRequest request, int& next_index);
  StepContext step_context(const PhaseRun& run, const StepRequest& request) const;
  agent::StepSpec build_spec(const PhaseRun& run, const StepRequest& request) const;
  // Runs the spec (compressed for simulated targets) with the target's telemetry scraped, and
  // brings every time back to simulated real time. nullopt: nothing to judge (run.error says
  // why when the step failed).
  std::optional<Measured> measure(PhaseRun& run, const StepContext& ctx,
                                  const agent::StepSpec& spec);
  StepRecord judge(const Measured& m, const StepRequest& request) const;
  // Workload mix: each class's statistics and verdict from the step's input, and the step's
  // verdict combined from them (docs/plans.md, "Workload mixes").
  void judge_mix(const Measured& m, const analysis::StepInput& input, StepRecord& record) const;
  json document(const StepContext& ctx, const PhaseRun& run, const StepRequest& request,
                const StepRecord& record, const Measured& m) const;
  double time_scale() const { return target_.time_scale > 0 ? target_.time_scale : 1.0; }

  // Steps of a phase resumed from its stored document, back into the capacity judgement.
  void adopt_stored_steps(const json& phase_doc);
  // One stored step document as the record run_step() made of it (no samples).
  static StepRecord stored_record(const json& step);
  // Measured mean input/output tokens per completed request over every step of the target.
  json measured_lengths() const;
  json sweep_analysis(const std::vector<StepRecord>& steps);

  const RunPlan& plan_;
  const RunTarget& target_;
  std::size_t target_index_;
  ExecutionSink& sink_;
  std::stop_token stop_;
  const ResumeState& resume_;
  std::int64_t& global_step_;
  std::int64_t planned_steps_;
  StepBackend& backend_;
  std::string model_;
  std::vector<analysis::JudgedStep> all_judged_;
  std::vector<analysis::StepVerdict> all_verdicts_;  // parallel to all_judged_
  std::optional<analysis::SweepPoint> knee_;
  std::map<std::string, PlannedSearch> predicted_starts_;
  std::string prediction_unavailable_;
  std::optional<double> qualified_rate_;
  std::function<std::int64_t()> clock_lost_ns_;  // empty for real targets
};

StepContext TargetRun::step_context(const PhaseRun& run, const StepRequest& request) const {
  StepContext ctx;
  ctx.target_index = target_index_;
  ctx.target = target_.name;
  ctx.phase_index = run.index;
  ctx.phase = run.phase.name;
  ctx.kind = run.phase.kind;
  ctx.repeat_index = run.repeat;
  ctx.step_index = request.step_index;
  ctx.global_step = global_step_;
  ctx.label = request.label;
  ctx.params = request.params;
  ctx.planned_s = run.phase.warmup_s +
                  (request.planned_window_s > 0 ? request.planned_window_s : request.duration_s);
  ctx.time_scale = time_scale();
  ctx.planned_steps = planned_steps_;
  return ctx;
}

agent::StepSpec TargetRun::build_spec(const PhaseRun& run, const StepRequest& request) const {
  agent::StepSpec spec;
  spec.target = target_.spec;
  if (!model_.empty()) spec.target.model = model_;
  spec.deadlines = plan_.deadlines;
  spec.workload = target_.workload;
  spec.load = request.load;
  spec.warmup_s = run.phase.warmup_s;
  spec.duration_s = request.duration_s;
  spec.window_requests = request.window_requests;
  const double k = time_scale();
  if (k != 1.0) {
    spec.warmup_s /= k;
    spec.duration_s /= k;
    spec.drain_timeout_s /= k;
    spec.load.rate = compress(spec.load.rate, k);
    spec.load.trace_speed *= k;
    auto shrink = [k](std::int64_t& ms) {
      if (ms > 0) ms = std::max<std::int64_t>(1, static_cast<std::int64_t>(ms / k));
    };
    shrink(spec.deadlines.first_token_ms);
    shrink(spec.deadlines.idle_ms);
    shrink(spec.deadlines.total_ms);
    shrink(spec.workload.abandon.after_ms);
    spec.workload.conversation.think_time_s /= k;  // the users think in compressed time too
  }
  spec.drain = to_drain_policy(run.phase.drain);
  spec.seed =
      step_seed(plan_.seed, run.index, run.repeat,
                request.draw_key >= 0 ? kDrawKeyBase + request.draw_key : request.step_index);
  if (request.draw_key >= 0)
    spec.content_seed = step_seed(plan_.seed, run.index, run.repeat, request.step_index);
  return spec;
}

std::optional<TargetRun::Measured> TargetRun::measure(PhaseRun& run, const StepContext& ctx,
                                                      const agent::StepSpec& spec) {
  const double k = time_scale();
  Measured m;
  m.seed = spec.seed;
  // Target telemetry (docs/metrics.md §8.2: the reason behind a verdict must be visible): the
  // plan's metrics_url, or the embedded simulator's own /metrics.
  m.metrics_url = target_.metrics_url;
  if (m.metrics_url.empty() && EmbeddedSimulators::is_sim_url(target_.base_url))
    m.metrics_url = target_.spec.base_url + "/metrics";
  if (backend_.provides_telemetry()) m.metrics_url.clear();  // the backend reports it
  std::optional<agent::TelemetryScraper> scraper;
  const auto scrape_epoch = std::chrono::steady_clock::now().time_since_epoch();
  if (!m.metrics_url.empty()) {
    agent::TelemetryScraperOptions so;
    so.metrics_url = m.metrics_url;
    so.interval_ns = static_cast<std::int64_t>(plan_.telemetry_interval_s * 1e9 / k);
    so.tls = target_.spec.tls;
    // The plan's metrics_url is checked (also beside an embedded simulator); the simulator's
    // own /metrics is not.
    if (!target_.metrics_url.empty()) so.address_allowlist = target_.address_allowlist;
    scraper.emplace(so);
    scraper->start(std::chrono::duration_cast<std::chrono::nanoseconds>(scrape_epoch).count());
  }

  auto progress = [this, &ctx](const agent::StepProgress& p) { sink_.on_progress(ctx, p); };
  const std::int64_t clock_lost_before = clock_lost_ns_ ? clock_lost_ns_() : 0;
  BackendStep produced = backend_.run(spec, ctx.global_step, stop_, progress);
  m.clock_lost_ns = clock_lost_ns_ ? clock_lost_ns_() - clock_lost_before : 0;
  m.result = std::move(produced.result);
  m.agents = std::move(produced.extra);
  if (produced.telemetry) {
    m.telemetry = std::move(*produced.telemetry);
    m.metrics_url = "virtual engine of " + target_.base_url;
  }
  if (produced.telemetry) {
    // Already on the samples' clock, in plan time.
  } else if (scraper) {
    m.telemetry = scraper->stop();
    // Onto the samples' clock (the step epoch), then out of compressed time.
    const std::int64_t offset =
        m.result.epoch_steady_ns -
        std::chrono::duration_cast<std::chrono::nanoseconds>(scrape_epoch).count();
    for (auto& p : m.telemetry.points) {
      p.t_ns = static_cast<std::int64_t>(static_cast<double>(p.t_ns - offset) * k);
    }
  } else {
    m.metrics_url.clear();
  }
  ++global_step_;
  if (!m.result.fatal_error.empty()) {
    run.error = "target " + target_.name + ", " + run.phase.name + " " + ctx.label + ": " +
                m.result.fatal_error;
    return std::nullopt;
  }
  if (model_.empty()) model_ = m.result.model;
  if (m.result.window_end_ns <= m.result.window_start_ns) {
    // Stopped before its window opened (model discovery, calibration, warm-up): nothing was
    // measured, so there is no step to judge or store.
    if (m.result.cancelled) return std::nullopt;
    // Not stopped, and still no window: agents' uploads that each ended their window where it
    // began (the shard codec accepts such a window, e.g. a shard with nothing to send). Judging
    // it used to throw and fail the job as "internal error" (issue 35 #6; found by
    // tests/fuzz/shard_upload_fuzz.cc): the job fails saying what happened instead.
    run.error = "target " + target_.name + ", " + run.phase.name + " " + ctx.label +
                ": the step's measurement window is empty (it ends where it starts, at " +
                std::to_string(m.result.window_start_ns) +
                " ns): nothing was measured to judge; the steps stored before it are kept";
    return std::nullopt;
  }
  if (k != 1.0) expand(m.result, k);
  return m;
}

StepRecord TargetRun::judge(const Measured& m, const StepRequest& request) const {
  const agent::StepResult& result = m.result;
  const double k = time_scale();
  analysis::StepInput input;
  input.samples = result.samples;
  input.window_start_ns = result.window_start_ns;
  input.window_end_ns = result.window_end_ns;
  if (request.load.kind != agent::LoadKind::kClosed) {
    // Offered rate over the measurement window (the profile may vary: bursts; a trace replay's
    // is its average), in the plan's (uncompressed) time.
    const double t0 = static_cast<double>(result.window_start_ns) / kNsPerS;
    const double t1 = static_cast<double>(result.window_end_ns) / kNsPerS;
    const auto& offered = request.load.rate;
    input.offered_rate_rps =
        t1 > t0 ? (offered.cumulative(t1) - offered.cumulative(t0)) / (t1 - t0) : 0;
    if (!result.conversation.empty() && t1 > t0) {
      // Conversations: the rate is of sessions; the server is offered their turns, whose
      // times follow the replies (docs/plans.md, "Conversations"). The turns intended in the
      // window are the offered request rate the completion and backlog checks judge.
      std::uint64_t turns = 0;
      for (const auto& s : result.samples)
        turns +=
            s.t_intended_ns >= result.window_start_ns && s.t_intended_ns < result.window_end_ns;
      input.offered_rate_rps = static_cast<double>(turns + result.dropped_arrivals) / (t1 - t0);
    }
  } else {
    input.concurrency = request.load.concurrency;
  }
  input.itl_ns = result.itl_ns;
  input.dropped_arrivals = result.dropped_arrivals;
  input.client_cpu_utilisation = result.client_cpu_utilisation;
  // Client saturation is judged in wall-clock time on the window's requests (step_stats.h),
  // not from the agent's whole-step lag (warm-up and connects included) scaled by k.
  input.time_scale = k;
  if (clock_lost_ns_) {
    input.target_clock_lost_ns = static_cast<double>(m.clock_lost_ns);
    input.target_clock_span_ns = static_cast<double>(result.end_ns) / k;  // end_ns was × k
  }
  input.sla = plan_.sla;
  for (const auto& [t, n] : result.in_flight_series) input.in_flight.push_back({t, double(n)});

  StepRecord record;
  record.judged.stats = analysis::compute_step_stats(input);
  if (target_.workload.mix.empty()) {
    record.verdict = analysis::judge_step(record.judged.stats, plan_.sla);
  } else {
    judge_mix(m, input, record);
  }
  if (request.rejudge_max_window_s > 0 && !result.cancelled)
    analysis::defer_short_trend(record.judged.stats, record.verdict, request.rejudge_max_window_s);
  record.judged.outcome =
      result.cancelled ? analysis::Outcome::kInconclusive : record.verdict.outcome;
  record.judged.role = request.role;
  record.judged.planned_rate_rps = request.planned_rate_rps;
  if (request.keep_samples) record.in_flight = std::move(input.in_flight);
  return record;
}

void TargetRun::judge_mix(const Measured& m, const analysis::StepInput& input,
                          StepRecord& record) const {
  const auto& mix = target_.workload.mix;
  const agent::StepResult& result = m.result;
  // Each sample's class from its index (agent/step_spec.h, mix_class_of).
  std::vector<std::vector<analysis::RequestSample>> samples(mix.size());
  std::vector<std::uint64_t> in_window(mix.size(), 0);
  std::uint64_t window_total = 0;
  for (const auto& s : result.samples) {
    const auto c = static_cast<std::size_t>(agent::mix_class_of(mix, m.seed, s.index));
    samples[c].push_back(s);
    if (s.t_intended_ns >= result.window_start_ns && s.t_intended_ns < result.window_end_ns) {
      ++in_window[c];
      ++window_total;
    }
  }
  // The whole step: the load rules (rates, backlog, client, sample count, errors up to the
  // loosest class's limit). Latency is judged per class, each against its own bounds: a mixture
  // whose every class holds "P95 <= L" holds it too, so whole-step bounds would add nothing.
  analysis::SlaSpec whole = plan_.sla;
  whole.bounds.clear();
  for (const auto& sla : target_.mix_slas)
    whole.max_error_rate = std::max(whole.max_error_rate, sla.max_error_rate);
  record.verdict = analysis::judge_step(record.judged.stats, whole);
  analysis::StepVerdict combined = record.verdict;
  std::uint64_t met_slo = 0, met_slo_ended = 0;
  for (std::size_t c = 0; c < mix.size(); ++c) {
    const analysis::SlaSpec& sla = c < target_.mix_slas.size() ? target_.mix_slas[c] : plan_.sla;
    analysis::StepInput in;
    in.samples = samples[c];
    in.window_start_ns = input.window_start_ns;
    in.window_end_ns = input.window_end_ns;
    // The class's share of the offered load is its share of the window's arrivals (exact: the
    // classes are known per request), so the rate checks judge the class's own completions.
    const double share = window_total > 0
                             ? static_cast<double>(in_window[c]) / static_cast<double>(window_total)
                             : mix[c].weight;
    in.offered_rate_rps = input.offered_rate_rps * share;
    in.concurrency = input.concurrency;
    if (c < result.itl_ns_by_class.size()) in.itl_ns = result.itl_ns_by_class[c];
    in.client_cpu_utilisation = input.client_cpu_utilisation;
    in.time_scale = input.time_scale;
    in.target_clock_lost_ns = input.target_clock_lost_ns;
    in.target_clock_span_ns = input.target_clock_span_ns;
    in.sla = sla;
    // Dropped arrivals and the backlog belong to the whole step (judged above).
    MixClassRecord cr;
    cr.stats = analysis::compute_step_stats(in);
    cr.verdict = analysis::judge_step(cr.stats, sla);
    for (auto& reason : cr.verdict.reasons) {
      if (reason.kind != analysis::CheckKind::kBacklog) continue;
      reason.status = analysis::CheckStatus::kNotApplicable;  // the in-flight count is shared
      reason.text = "in-flight trend: judged on the whole step";
    }
    met_slo += cr.stats.met_slo;
    met_slo_ended += cr.stats.met_slo_ended;
    // A mix step passes only when every class passes: a class fail fails it, else a class
    // inconclusive (too few requests, client-bound, no data for a bound) makes it inconclusive.
    const auto rank = [](analysis::Outcome o) {
      return o == analysis::Outcome::kFail ? 2 : o == analysis::Outcome::kInconclusive ? 1 : 0;
    };
    if (rank(cr.verdict.outcome) > rank(combined.outcome)) combined.outcome = cr.verdict.outcome;
    combined.client_bound = combined.client_bound || cr.verdict.client_bound;
    combined.insufficient_samples =
        combined.insufficient_samples || cr.verdict.insufficient_samples;
    for (const auto& reason : cr.verdict.reasons) {
      if (reason.status != analysis::CheckStatus::kMissed &&
          reason.status != analysis::CheckStatus::kNotEvaluated)
        continue;
      analysis::VerdictReason r = reason;
      r.code = mix[c].name + ":" + r.code;
      r.text = "[" + mix[c].name + "] " + r.text;
      combined.reasons.push_back(std::move(r));
    }
    record.classes.push_back(std::move(cr));
  }
  // Goodput: requests that met their own class's SLOs.
  auto& st = record.judged.stats;
  st.met_slo = met_slo;
  st.met_slo_ended = met_slo_ended;
  st.goodput_rps = st.window_s > 0 ? static_cast<double>(met_slo_ended) / st.window_s : 0;
  const double eligible = static_cast<double>(st.intended - st.abandoned + st.dropped_arrivals);
  st.sla_attainment = eligible > 0 ? static_cast<double>(met_slo) / eligible : 0;
  record.verdict = std::move(combined);
}

json TargetRun::document(const StepContext& ctx, const PhaseRun& run, const StepRequest& request,
                         const StepRecord& record, const Measured& m) const {
  const agent::StepResult& result = m.result;
  const double k = time_scale();
  const analysis::StepRole role = request.role;
  json step_json{
      {"global_step", ctx.global_step},
      {"target", target_.name},
      {"phase", run.phase.name},
      {"phase_kind", to_string(run.phase.kind)},
      {"repeat", run.repeat},
      {"step", request.step_index},
      {"label", ctx.label},
      {"params", ctx.params},
      {"partial", result.cancelled || !result.completed},
      {"model", result.model},
      {"stats", api::step_stats_json(record.judged.stats)},
      {"verdict", api::verdict_json(record.verdict)},
      {"client_bound", record.verdict.client_bound},
      {"insufficient_samples", record.verdict.insufficient_samples},
      {"rejudge_window_s",
       record.verdict.rejudge_window_s ? json(*record.verdict.rejudge_window_s) : json(nullptr)},
      {"planned_rate_rps",
       request.planned_rate_rps > 0 ? json(request.planned_rate_rps) : json(nullptr)},
      {"role", role == analysis::StepRole::kConfirm    ? "confirm"
               : role == analysis::StepRole::kSoak     ? "soak"
               : role == analysis::StepRole::kExcluded ? "excluded"
                                                       : "level"},
      {"time_scale", k},
      {"client",
       json{{"cpu_utilisation", result.client_cpu_utilisation},
            // Wall clock, whole step (warm-up and connection set-up included); the verdict
            // judges the window's dispatch lag (stats.client_dispatch_lag_p99_ms).
            {"schedule_lag_p99_ms", static_cast<double>(result.schedule_lag.p99_ns) / 1e6},
            {"schedule_lag_max_ms", static_cast<double>(result.schedule_lag.max_ns) / 1e6},
            {"dispatch_lag_p99_ms", static_cast<double>(result.dispatch_lag.p99_ns) / 1e6},
            {"dropped_arrivals_warmup", result.dropped_arrivals_warmup},
            {"target_clock_lost_ms",
             clock_lost_ns_ ? json(static_cast<double>(m.clock_lost_ns) / 1e6) : json(nullptr)},
            {"timer_lag_p99_ms", static_cast<double>(result.timer_lag.p99_ns) / 1e6},
            {"connections_opened", result.connections_opened}}},
      {"calibration",
       json{{"method", result.calibration.method},
            {"tokens_per_word", result.calibration.tokens_per_word_final},
            {"planned_input_mean_tokens", result.calibration.planned_input_mean_tokens},
            {"real_input_mean_tokens", result.calibration.real_input_mean_tokens},
            {"mean_abs_error_tokens", result.calibration.mean_abs_error_tokens},
            {"note", result.calibration.note}}},
  };
  if (!target_.workload_name.empty()) step_json["workload"] = target_.workload_name;
  if (!record.classes.empty()) {
    // Workload mix: each class's statistics and verdict (docs/plans.md, "Workload mixes").
    json classes = json::array();
    const auto& mix = target_.workload.mix;
    std::uint64_t total = 0;
    for (const auto& c : record.classes) total += c.stats.intended;
    for (std::size_t c = 0; c < record.classes.size() && c < mix.size(); ++c) {
      const auto& cr = record.classes[c];
      classes.push_back(json{{"name", mix[c].name},
                             {"weight", mix[c].weight},
                             {"share", total > 0 ? json(static_cast<double>(cr.stats.intended) /
                                                        static_cast<double>(total))
                                                 : json(nullptr)},
                             {"input_tokens_mean", mix[c].input_tokens.nominal_mean()},
                             {"output_tokens_mean", mix[c].output_tokens.nominal_mean()},
                             {"stats", api::step_stats_json(cr.stats)},
                             {"verdict", api::verdict_json(cr.verdict)}});
    }
    step_json["mix"] = std::move(classes);
  }
  if (request.window_requests > 0) {
    // Request-count steps: true when max_duration_s ended the window before it held
    // `requests` (dropped arrivals were intended too).
    const auto& st = record.judged.stats;
    step_json["window_capped"] =
        st.intended + st.dropped_arrivals < static_cast<std::uint64_t>(request.window_requests);
  }
  if (!result.conversation.empty()) {
    // workload.conversation: session-level figures (TTFT by turn index, session durations).
    step_json["conversation"] = json::parse(
        agent::conversation_stats_json(agent::conversation_stats(
            result.samples, result.conversation, result.window_start_ns, result.window_end_ns)),
        nullptr, false);
  }
  if (!m.agents.is_null()) {
    // Scale-out (issue 11): per-shard figures, and client-side latency per region from the
    // merged (time-expanded) samples, whose region labels come parallel to them.
    json agents = m.agents;
    if (agents.contains("sample_regions")) {
      const auto regions = agents["sample_regions"].get<std::vector<std::string>>();
      agents.erase("sample_regions");
      if (auto by_region = analysis::region_latency(result.samples, regions, result.window_start_ns,
                                                    result.window_end_ns);
          !by_region.empty())
        step_json["regions"] = api::region_latency_json(by_region);
    }
    step_json["agents"] = std::move(agents);
  }
  if (!m.metrics_url.empty()) {
    step_json["telemetry"] =
        json::parse(agent::telemetry_summary_json(m.telemetry.summary), nullptr, false);
    step_json["telemetry"]["source"] = m.metrics_url;
    step_json["telemetry"]["errors"] = m.telemetry.errors;
    if (k != 1.0)
      step_json["telemetry"]["note"] = "server-side latencies are in compressed simulator time";
  }
  return step_json;
}

std::optional<StepRecord> TargetRun::run_step(PhaseRun& run, StepRequest request) {
  if (stop_.stop_requested()) return std::nullopt;
  const StepContext ctx = step_context(run, request);
  const agent::StepSpec spec = build_spec(run, request);
  sink_.on_step_started(ctx);
  auto measured = measure(run, ctx, spec);
  if (!measured) return std::nullopt;
  StepRecord record = judge(*measured, request);
  const json step_json = document(ctx, run, request, record, *measured);
  const StepOutcome outcome{measured->result, measured->telemetry.points, record.judged.stats,
                            record.verdict, step_json};
  if (!sink_.on_step_finished(ctx, outcome, run.error)) return std::nullopt;
  run.steps.push_back(step_json);
  all_judged_.push_back(record.judged);
  all_verdicts_.push_back(record.verdict);
  if (request.keep_samples) record.samples = std::move(measured->result.samples);
  log()->info(
      "{} {} {}: {} — {:.1f} out tok/s, P95 TTFT {:.0f} ms, P95 TPOT {:.1f} ms, err {:.2f}%",
      target_.name, run.phase.name, ctx.label, analysis::to_string(record.verdict.outcome),
      record.judged.stats.output_tokens_per_s, record.judged.stats.ttft_ns.p95 / 1e6,
      record.judged.stats.tpot_ns.p95 / 1e6, record.judged.stats.error_rate * 100);
  return record;
}

// Whether a stored step's params are those of the step asked for now. Numbers compare within a
// relative 1e-6: a resumed run re-derives some from stored figures (a confirm's lifetime from a
// mean E2E stored to 0.1 µs, a knee's mean E2E through its JSON text), which moves their last
// digits; two steps a phase means to be different differ by far more (a search's resolution).
bool same_params(const json& stored, const json& asked) {
  if (stored.is_number() && asked.is_number()) {
    const double a = stored.get<double>(), b = asked.get<double>();
    return std::fabs(a - b) <= 1e-6 * std::max({1.0, std::fabs(a), std::fabs(b)});
  }
  if (stored.is_object() && asked.is_object()) {
    if (stored.size() != asked.size()) return false;
    for (const auto& [key, value] : asked.items()) {
      const auto it = stored.find(key);
      if (it == stored.end() || !same_params(*it, value)) return false;
    }
    return true;
  }
  return stored == asked;
}

std::optional<StepRecord> TargetRun::take_step(PhaseRun& run, StepRequest request) {
  if (run.reused >= run.stored.size()) return run_step(run, std::move(request));
  const json& stored = run.stored[run.reused];
  const json params = stored.value("params", json::object());
  if (stored.value("step", -1) != request.step_index || !same_params(params, request.params)) {
    // The phase decides differently from the run that stored its steps (the plan's prediction,
    // or llmcapd, changed in between): the stored steps cannot stand for the ones asked for,
    // and running these beside them would measure the phase twice.
    run.error = "target " + target_.name + ", " + run.phase.name + ": cannot resume: stored step " +
                std::to_string(stored.value("step", -1)) + " (" + stored.value("label", "") + ", " +
                params.dump() + ") is not the step the phase asks for now (" +
                std::to_string(request.step_index) + ", " + request.label + ", " +
                request.params.dump() + "); its stored steps are kept";
    return std::nullopt;
  }
  ++run.reused;
  StepRecord record = stored_record(stored);
  run.steps.push_back(stored);
  all_judged_.push_back(record.judged);
  all_verdicts_.push_back(record.verdict);
  if (model_.empty()) model_ = stored.value("model", "");
  log()->info("{} {} {}: {} (stored before the restart, kept)", target_.name, run.phase.name,
              request.label, analysis::to_string(record.verdict.outcome));
  return record;
}

std::optional<StepRecord> TargetRun::take_rate_step(PhaseRun& run, StepRequest request,
                                                    int& next_index) {
  if (request.window_requests == 0)
    request.rejudge_max_window_s = std::max(run.phase.max_duration_s, request.duration_s);
  StepRequest again = request;
  auto r = take_step(run, std::move(request));
  if (!r || !r->verdict.rejudge_window_s) return r;
  again.step_index = next_index++;
  if (!again.params.contains("lengthened_from_s"))
    again.params["lengthened_from_s"] = again.duration_s;
  again.params["judged_again_for_trend"] = true;
  again.duration_s = *r->verdict.rejudge_window_s;
  again.rejudge_max_window_s = 0;  // its verdict stands
  again.label += " (again, " + std::to_string(static_cast<long>(again.duration_s)) + " s)";
  return take_step(run, std::move(again));
}

json TargetRun::sweep_analysis(const std::vector<StepRecord>& steps) {
  std::vector<analysis::SweepPoint> points;
  json skipped = json::array();
  for (const auto& s : steps) {
    const auto& st = s.judged.stats;
    // A level where no request intended in the window completed says nothing about latency
    // (the step was shorter than one request): leave it out of the knee and say so.
    if (st.e2e_ns.empty()) {
      skipped.push_back(st.concurrency);
      continue;
    }
    points.push_back({st.concurrency, st.output_tokens_per_s, st.e2e_ns.p95, st.e2e_ns.mean});
  }
  auto knee = analysis::find_knee(points);
  if (!knee) return json{{"found", false}, {"levels_without_data", skipped}};
  if (knee->point.mean_e2e_ns > 0) knee_ = knee->point;
  return json{{"found", knee->found},
              {"concurrency", knee->point.concurrency},
              {"output_tokens_per_s", knee->point.output_tokens_per_s},
              {"mean_e2e_ms", knee->point.mean_e2e_ns / 1e6},
              {"initial_gain_per_stream", knee->initial_gain_per_stream},
              {"gain_after_per_stream", knee->gain_after_per_stream},
              {"levels_without_data", skipped}};
}

// A burst's or soak's analysis reads the step's samples, which a resumed run does not hold when
// the daemon stopped after storing the step and before storing its phase: the step stands (its
// verdict counts), the analysis says why it is missing. The samples are stored with the step
// (GET /v1/jobs/{id}/requests?step=N).
json analysis_not_kept(const char* what) {
  return json{{"analysis_available", false},
              {"statement", std::string(what) +
                                " not available: llmcapd stopped after storing the step and "
                                "before its analysis; the step and its samples are kept"}};
}

agent::LoadSpec TargetRun::open_load(const PlanPhase& phase, agent::RateProfile rate) {
  agent::LoadSpec load;
  load.kind = agent::LoadKind::kOpen;
  load.rate = std::move(rate);
  load.inter_arrival = to_inter_arrival(phase.arrival);
  load.burstiness = phase.burstiness;
  load.in_flight_cap = phase.max_in_flight;
  return load;
}

json TargetRun::run_phase(const PlanPhase& phase, std::size_t phase_index, int repeat,
                          std::string& error, const std::vector<json>& stored, bool& finished) {
  PhaseRun run{phase, phase_index, repeat, error, json::array(), stored};
  json extra = json::object();
  switch (phase.kind) {
    case PhaseKind::kConcurrencySweep: extra = run_concurrency_sweep(run); break;
    case PhaseKind::kRateSweep: extra = run_rate_sweep(run); break;
    case PhaseKind::kCapacitySearch: extra = run_capacity_search(run); break;
    case PhaseKind::kBurst: extra = run_burst(run); break;
    case PhaseKind::kSoak: extra = run_soak(run); break;
    case PhaseKind::kTraceReplay: extra = run_trace_replay(run); break;
    case PhaseKind::kAtDemand: extra = run_at_demand(run); break;
  }
  json doc{{"kind", to_string(phase.kind)}, {"name", phase.name}, {"repeat", repeat}};
  if (!target_.workload_name.empty()) doc["workload"] = target_.workload_name;  // a matrix
  doc["steps"] = std::move(run.steps);
  if (run.finished && error.empty() && run.reused < run.stored.size()) {
    // The phase decided it was done before it came to every stored step (it decides differently
    // from the run that stored them): they would stand in no phase's results.
    error = "target " + target_.name + ", " + phase.name +
            ": cannot resume: the phase ends after " + std::to_string(run.reused) + " of its " +
            std::to_string(run.stored.size()) + " stored steps; its stored steps are kept";
  }
  // Resumed mid-phase: how many of its steps an earlier run stored (kept, not run again).
  if (run.reused > 0) doc["resumed_steps"] = run.reused;
  finished = run.finished && error.empty();
  for (auto& [k, v] : extra.items()) doc[k] = v;
  return doc;
}

json TargetRun::run_concurrency_sweep(PhaseRun& run) {
  const PlanPhase& phase = run.phase;
  std::vector<StepRecord> records;
  int i = 0;
  for (const auto level : phase.levels) {
    StepRequest step;
    step.step_index = i++;
    step.load.kind = agent::LoadKind::kClosed;
    step.load.concurrency = level;
    step.duration_s = phase.duration_s;
    step.params = json{{"concurrency", level}};
    if (phase.requests > 0) {
      // Closed loop: the window ends on its count; max_duration_s stops it regardless.
      step.duration_s = phase.max_duration_s;
      step.window_requests = phase.requests;
      step.planned_window_s = api::planned_window_s(phase, 0, level, mean_output_tokens());
      step.params["requests"] = phase.requests;
    }
    step.label = "c=" + std::to_string(level);
    auto r = take_step(run, std::move(step));
    if (!r) break;
    records.push_back(std::move(*r));
  }
  run.finished = records.size() == phase.levels.size();
  return json{{"knee", sweep_analysis(records)}};
}

json TargetRun::run_rate_sweep(PhaseRun& run) {
  const PlanPhase& phase = run.phase;
  int i = 0;
  for (const auto rate : phase.rates_rps) {
    StepRequest step;
    step.step_index = i++;
    step.load = open_load(phase, agent::RateProfile::constant(rate));
    step.duration_s = phase.duration_s;
    step.params = json{{"rate_rps", rate}};
    // The same requests at every rate (common random numbers).
    step.draw_key = draw_key_for(phase.duration_s, 1);
    set_requests_window(phase, rate, step);
    lengthen_for_samples(phase, rate, step);
    step.label = rate_label(rate);
    step.planned_rate_rps = rate;
    if (!take_rate_step(run, std::move(step), i)) return json::object();
  }
  run.finished = true;
  return json::object();
}

json TargetRun::run_capacity_search(PhaseRun& run) {
  const PlanPhase& phase = run.phase;
  analysis::CapacitySearchOptions o;
  std::string start_reason;
  const auto predicted = predicted_starts_.find(phase.name);
  if (phase.start_from_prediction && predicted != predicted_starts_.end()) {
    // Planned from the twin: start at its answer, check the step that failed just above it
    // there, then confirm: a target that behaves like its twin costs three steps. (Confirming
    // the answer first was tried on the demo: the 4090's confirm passed at 1.83 rps where the
    // short step fails, an answer above what short and long steps both hold.)
    o.initial_rate_rps = predicted->second.rate_rps;
    o.first_step_factor = std::min(1 + phase.resolution, o.expand_factor);
    if (predicted->second.high_rps > o.initial_rate_rps) {
      o.planned_high_rps = predicted->second.high_rps;
      o.planned_high_confirm = predicted->second.high_confirm;
    }
    start_reason = "prediction in virtual time";
  } else if (phase.start_rps > 0) {
    o.initial_rate_rps = phase.start_rps;
    start_reason = "start_from";
  } else if (phase.low_rps > 0 && phase.high_rps > phase.low_rps) {
    o.initial_rate_rps = std::sqrt(phase.low_rps * phase.high_rps);
    start_reason = "bracket midpoint (geometric)";
  } else if (knee_) {
    o.initial_rate_rps =
        analysis::rate_from_knee(knee_->concurrency, knee_->mean_e2e_ns).value_or(1.0);
    start_reason =
        "Little's law at the sweep's knee (c=" + std::to_string(knee_->concurrency) + ")";
  } else {
    o.initial_rate_rps = 1.0;
    start_reason = "no knee available: 1 rps";
  }
  if (phase.start_from_prediction && predicted == predicted_starts_.end()) {
    start_reason = "no prediction (" +
                   (prediction_unavailable_.empty() ? std::string("none qualified")
                                                    : prediction_unavailable_) +
                   "); " + start_reason;
  }
  if (phase.high_rps > 0) o.max_rate_rps = phase.high_rps;
  if (phase.low_rps > 0) o.min_rate_rps = phase.low_rps;
  o.initial_rate_rps = std::clamp(o.initial_rate_rps, o.min_rate_rps, o.max_rate_rps);
  o.relative_resolution = phase.resolution;
  o.max_steps = phase.max_steps;
  o.confirm_duration_factor = phase.confirm_duration_s / std::max(1.0, phase.duration_s);
  analysis::CapacitySearch search(o);
  // The request lifetimes (mean E2E, s) the passing steps measured, by rate: a confirm's window
  // holds analysis::kConfirmLifetimes of the one at its rate, else at the nearest rate above
  // (a longer lifetime), else the highest rate below.
  std::map<double, double> lifetime_at;
  const auto lifetime_near = [&lifetime_at](double rate) {
    if (lifetime_at.empty()) return 0.0;
    auto it = lifetime_at.lower_bound(rate * (1 - 1e-9));
    if (it == lifetime_at.end()) --it;
    return it->second;
  };
  int i = 0;
  while (auto next = search.next_rate()) {
    StepRequest step;
    step.step_index = i++;
    step.load = open_load(phase, agent::RateProfile::constant(next->rate_rps));
    step.duration_s = phase.duration_s * next->duration_factor;
    // Request-count search steps hold `requests` each; the confirm is a run in time.
    if (next->confirm && phase.requests > 0) step.duration_s = phase.confirm_duration_s;
    step.label = (next->confirm ? "confirm " : "") + rate_label(next->rate_rps) +
                 (next->attempt > 1 ? " (retry " + std::to_string(next->attempt) + ")" : "");
    step.params = json{{"rate_rps", next->rate_rps}, {"confirm", next->confirm}};
    // Every short step of the search draws the same requests, and so does every confirm (their
    // own, apart from the short steps'), as a rate sweep does: outcomes then change with the
    // rate alone, and bisection sees a monotone target. A retry draws anew.
    step.draw_key =
        draw_key_for(next->confirm ? phase.confirm_duration_s : phase.duration_s, next->attempt);
    if (!next->confirm) set_requests_window(phase, next->rate_rps, step);
    if (next->confirm) {
      const double settled =
          analysis::confirm_window_s(step.duration_s, lifetime_near(next->rate_rps));
      const double lengthened = std::min(settled, std::max(phase.max_duration_s, step.duration_s));
      if (lengthened > step.duration_s) {
        step.params["lengthened_from_s"] = step.duration_s;
        step.params["lengthened_for_lifetimes_s"] = lifetime_near(next->rate_rps);
        step.duration_s = lengthened;
      }
    }
    lengthen_for_samples(phase, next->rate_rps, step);
    step.role = next->confirm ? analysis::StepRole::kConfirm : analysis::StepRole::kLevel;
    step.planned_rate_rps = next->rate_rps;
    // Resumed: the stored steps come back in the order the search asked for them, so reporting
    // their stored verdicts walks it through the same decisions again.
    auto r = take_rate_step(run, std::move(step), i);
    if (!r) break;
    if (r->judged.outcome == analysis::Outcome::kPass && r->judged.stats.e2e_ns.mean > 0)
      lifetime_at[next->rate_rps] = r->judged.stats.e2e_ns.mean / 1e9;
    search.report(next->rate_rps, r->judged.outcome, r->verdict.insufficient_samples);
  }
  run.finished = search.done();
  const auto& res = search.result();
  if (res.qualified_rate_rps) qualified_rate_ = res.qualified_rate_rps;
  json s = api::search_json(res);
  s["start_rate_rps"] = o.initial_rate_rps;
  s["start_reason"] = start_reason;
  return json{{"search", s}};
}

json TargetRun::run_burst(PhaseRun& run) {
  const PlanPhase& phase = run.phase;
  // Pre-burst baseline of one window, the burst, then the observation period.
  const double pre_s = phase.window_s;
  const double total_s = pre_s + phase.burst_s + phase.observe_s;
  char label[64];
  std::snprintf(label, sizeof label, "burst %.2f rps ×%.1f for %.0f s", phase.base_rps,
                phase.multiplier, phase.burst_s);
  StepRequest step;
  step.load = open_load(phase, agent::RateProfile::burst(phase.base_rps, phase.multiplier,
                                                         phase.warmup_s + pre_s, phase.burst_s));
  step.duration_s = total_s;
  step.label = label;
  step.params = json{{"base_rps", phase.base_rps},
                     {"multiplier", phase.multiplier},
                     {"burst_s", phase.burst_s},
                     {"observe_s", phase.observe_s}};
  step.role = analysis::StepRole::kExcluded;
  step.keep_samples = true;
  auto r = take_step(run, std::move(step));
  if (!r) return json::object();
  run.finished = true;
  if (run.reused > 0) return json{{"burst", analysis_not_kept("burst recovery")}};
  analysis::BurstRecoveryInput in;
  in.samples = r->samples;
  in.in_flight = r->in_flight;
  in.burst_start_ns = static_cast<std::int64_t>((phase.warmup_s + pre_s) * kNsPerS);
  in.burst_end_ns = static_cast<std::int64_t>((phase.warmup_s + pre_s + phase.burst_s) * kNsPerS);
  in.observation_end_ns = static_cast<std::int64_t>((phase.warmup_s + total_s) * kNsPerS);
  in.window_ns = static_cast<std::int64_t>(phase.window_s * kNsPerS);
  in.ttft_definition = plan_.sla.ttft_definition;
  for (const auto& b : plan_.sla.bounds) {
    if (b.metric == analysis::SlaMetric::kTtft && std::abs(b.percentile - 95) < 1e-9)
      in.ttft_p95_limit_ms = b.limit_ms;
  }
  const auto rec = analysis::burst_recovery(in);
  analysis::WindowOptions wo{0, in.observation_end_ns,
                             std::max<std::int64_t>(in.window_ns / 5, 1'000'000'000)};
  json timeline = json::array();
  for (const auto& p : analysis::windowed_p95_ttft(r->samples, wo, in.ttft_definition)) {
    timeline.push_back(
        json{{"t_s", static_cast<double>(p.start_ns) / kNsPerS},
             {"count", p.count},
             {"p95_ttft_ms", p.p95_ttft_ns ? json(*p.p95_ttft_ns / 1e6) : json(nullptr)}});
  }
  json in_flight = json::array();
  for (const auto& p : r->in_flight) {
    if (in_flight.empty() || p.t_ns - in_flight.back()["t_ns"].get<std::int64_t>() >= 500'000'000)
      in_flight.push_back(json{{"t_ns", p.t_ns}, {"in_flight", p.in_flight}});
  }
  return json{
      {"burst",
       json{{"recovered", rec.recovered},
            {"recovery_s",
             rec.recovery_ns ? json(double(*rec.recovery_ns) / kNsPerS) : json(nullptr)},
            {"latency_recovered_s", rec.latency_recovered_ns
                                        ? json(double(*rec.latency_recovered_ns) / kNsPerS)
                                        : json(nullptr)},
            {"backlog_drained_s", rec.backlog_drained_ns
                                      ? json(double(*rec.backlog_drained_ns) / kNsPerS)
                                      : json(nullptr)},
            {"pre_burst_in_flight", rec.pre_burst_in_flight},
            {"peak_in_flight", rec.peak_in_flight},
            {"statement", rec.recovered ? "recovered" : "did not recover within the window"},
            {"timeline", timeline},
            {"in_flight", in_flight}}}};
}

json TargetRun::run_soak(PhaseRun& run) {
  const PlanPhase& phase = run.phase;
  double rate = phase.rate_rps;
  if (phase.soak_at_qualified) {
    if (!qualified_rate_) {
      run.finished = true;  // nothing to run
      return json{{"soak", json{{"skipped", true},
                                {"statement",
                                 "no qualified rate to soak at (the "
                                 "capacity search found none)"}}}};
    }
    rate = *qualified_rate_;
  }
  StepRequest step;
  step.load = open_load(phase, agent::RateProfile::constant(rate));
  step.duration_s = phase.duration_s;
  step.label = "soak " + rate_label(rate);
  step.params = json{{"rate_rps", rate}};
  step.role = analysis::StepRole::kSoak;
  step.planned_rate_rps = rate;
  step.keep_samples = true;
  auto r = take_step(run, std::move(step));
  if (!r) return json::object();
  run.finished = true;
  if (run.reused > 0) {
    json soak = analysis_not_kept("windowed compliance");
    soak["rate_rps"] = rate;
    return json{{"soak", soak}};
  }
  analysis::WindowOptions wo{r->judged.stats.window_start_ns, r->judged.stats.window_end_ns,
                             static_cast<std::int64_t>(phase.window_s * kNsPerS)};
  const auto wc = analysis::windowed_compliance(r->samples, plan_.sla, wo);
  json bounds = json::array();
  for (const auto& b : wc.bounds) {
    bounds.push_back(json{{"metric", std::string(analysis::to_string(b.bound.metric))},
                          {"percentile", b.bound.percentile},
                          {"limit_ms", b.bound.limit_ms},
                          {"windows_with_data", b.windows_with_data},
                          {"windows_held", b.windows_held},
                          {"share_held", b.share_held}});
  }
  return json{{"soak", json{{"rate_rps", rate},
                            {"window_s", phase.window_s},
                            {"windows", wc.windows.size()},
                            {"bounds", bounds},
                            {"error_rate_share_held", wc.error_rate_share_held},
                            {"all_held_share", wc.all_held_share}}}};
}

json TargetRun::run_trace_replay(PhaseRun& run) {
  const PlanPhase& phase = run.phase;
  const agent::WorkloadSpec& w = target_.workload;
  agent::DatasetLimits limits;
  limits.max_bytes = w.dataset_max_bytes;
  // The plan check read this file already; read again, it decides each step's window.
  auto trace = agent::Trace::load(w.trace_path, w.trace_format, limits);
  if (!trace) {
    run.error =
        "target " + target_.name + ", " + phase.name + ": workload.trace.path: " + trace.error();
    return json::object();
  }
  const agent::Trace replayed = trace->window(w.trace_window);
  int i = 0;
  for (const double speed : phase.speeds) {
    const agent::TraceWindowPlan window = agent::plan_trace_window(replayed, speed, phase.warmup_s);
    StepRequest step;
    step.step_index = i++;
    step.load.kind = agent::LoadKind::kTrace;
    step.load.trace_speed = speed;
    step.load.in_flight_cap = phase.max_in_flight;
    // Judged at the average rate the window offers (the trace's own arrivals are what is sent).
    step.load.rate =
        agent::RateProfile::constant(static_cast<double>(window.arrivals) / window.window_s);
    step.duration_s = window.window_s;
    char label[48];
    std::snprintf(label, sizeof label, "trace x%g", speed);
    step.label = label;
    step.params = json{{"speed", speed},
                       {"trace_requests", replayed.records().size()},
                       {"window_requests", window.arrivals}};
    // A replay is judged like a burst: a realistic load, not a capacity level.
    step.role = analysis::StepRole::kExcluded;
    if (!take_step(run, std::move(step))) break;
    run.finished = i == static_cast<int>(phase.speeds.size());
  }
  return json{{"trace", json{{"format", std::string(agent::to_string(w.trace_format))},
                             {"requests", replayed.records().size()},
                             {"span_s", static_cast<double>(replayed.span_ns()) / kNsPerS},
                             {"skipped_rows", replayed.skipped()},
                             {"block_tokens", w.trace_block_tokens}}}};
}

// Simulated targets: the KV pool of one instance (every GPU of it) in GiB, which turns the
// telemetry's peak KV use into free memory; nullopt for real targets (their pool is unknown).
std::optional<double> sim_kv_pool_gib(const RunTarget& target, std::uint64_t seed) {
  if (!EmbeddedSimulators::is_sim_url(target.base_url)) return std::nullopt;
  auto made = EmbeddedSimulators::sim_options_for(target.base_url, target.sim_options_json, seed);
  if (!made.options) return std::nullopt;
  try {
    const sim::SimModel model = sim::build_sim_model(*made.options);
    return model.fit.kv_pool_bytes * std::max(1, model.fit.tensor_parallel) /
           (1024.0 * 1024.0 * 1024.0);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// Equal-load comparison (docs/plans.md, "Equal-load comparison"): one open-loop step at the rate
// parse_plan() resolved, the same on every target, with the same seed (step_seed depends on the
// phase, repeat and step, never on the target), so every target gets the same arrivals and
// prompts. A long step at one rate, judged like a soak: a pass is confirming evidence.
json TargetRun::run_at_demand(PhaseRun& run) {
  const PlanPhase& phase = run.phase;
  const api::AtDemandLoad& load = phase.at_demand;
  double rate = load.rate_rps;
  double mean_output = load.mean_output_tokens;
  if (!target_.workload_name.empty() && load.source == "output_tokens_per_s") {
    // A workload matrix: the same output tok/s for every workload, each at its own request rate
    // (parse_plan() checked each against the rate limit; a matrix has no demand, no headroom).
    mean_output = target_.workload.planned_output_mean();
    rate = phase.output_tokens_per_s / mean_output;
  }
  StepRequest step;
  step.load = open_load(phase, agent::RateProfile::constant(rate));
  step.duration_s = phase.duration_s;
  step.label = "at_demand " + rate_label(rate);
  step.params = json{{"rate_rps", rate}};
  set_requests_window(phase, rate, step);
  step.role = analysis::StepRole::kSoak;
  step.planned_rate_rps = rate;
  auto nullable = [](double v) { return v > 0 ? json(v) : json(nullptr); };
  const auto pool_gib = sim_kv_pool_gib(target_, plan_.seed);
  json info{{"offered_rate_rps", rate},
            {"source", load.source},
            {"demand_rps", nullable(load.demand_rps)},
            {"with_headroom", phase.with_headroom},
            {"headroom", load.headroom},
            {"mean_output_tokens", nullable(mean_output)},
            {"offered_output_tokens_per_s", nullable(rate * mean_output)},
            {"kv_pool_gib", pool_gib ? json(*pool_gib) : json(nullptr)}};
  run.finished = take_step(run, std::move(step)).has_value();
  return json{{"at_demand", info}};
}

void TargetRun::adopt_stored_steps(const json& phase_doc) {
  if (!phase_doc.contains("steps") || !phase_doc["steps"].is_array()) return;
  for (const json& step : phase_doc["steps"]) {
    StepRecord record = stored_record(step);
    all_judged_.push_back(std::move(record.judged));
    all_verdicts_.push_back(std::move(record.verdict));
  }
}

StepRecord TargetRun::stored_record(const json& step) {
  auto ms_summary = [](const json& j) {
    analysis::Summary out;
    if (!j.is_object()) return out;
    out.count = j.value("count", std::uint64_t{0});
    out.mean = j.value("mean", 0.0) * 1e6;
    out.p50 = j.value("p50", 0.0) * 1e6;
    out.p95 = j.value("p95", 0.0) * 1e6;
    out.p99 = j.value("p99", 0.0) * 1e6;
    return out;
  };
  auto token_summary = [](const json& j) {
    analysis::Summary out;
    if (!j.is_object()) return out;
    out.count = j.value("count", std::uint64_t{0});
    out.mean = j.value("mean", 0.0);
    return out;
  };
  const json& st = step.contains("stats") ? step["stats"] : json::object();
  const json& vj = step.contains("verdict") ? step["verdict"] : json::object();
  analysis::JudgedStep j;
  analysis::StepVerdict v;
  const std::string outcome = vj.value("outcome", "inconclusive");
  v.outcome = outcome == "pass"   ? analysis::Outcome::kPass
              : outcome == "fail" ? analysis::Outcome::kFail
                                  : analysis::Outcome::kInconclusive;
  v.client_bound = step.value("client_bound", false);
  v.insufficient_samples = step.value("insufficient_samples", false);
  if (const auto it = step.find("rejudge_window_s"); it != step.end() && it->is_number())
    v.rejudge_window_s = it->get<double>();
  for (const json& r : vj.value("reasons", json::array())) {
    if (r.value("status", "") != "missed") continue;
    analysis::VerdictReason reason;
    reason.status = analysis::CheckStatus::kMissed;
    reason.code = r.value("code", "");
    for (int k = 0; k <= static_cast<int>(analysis::kLastCheckKind); ++k) {
      if (analysis::to_string(static_cast<analysis::CheckKind>(k)) == r.value("check", ""))
        reason.kind = static_cast<analysis::CheckKind>(k);
    }
    v.reasons.push_back(std::move(reason));
  }
  const json& params = step.contains("params") ? step["params"] : json::object();
  const std::string role = step.value("role", params.value("confirm", false) ? "confirm" : "");
  const std::string kind = step.value("phase_kind", "");
  j.role = role == "confirm"                       ? analysis::StepRole::kConfirm
           : role == "soak" || kind == "soak"      ? analysis::StepRole::kSoak
           : role == "excluded" || kind == "burst" ? analysis::StepRole::kExcluded
                                                   : analysis::StepRole::kLevel;
  // Documents stored before planned_rate_rps existed carry the rate in params only.
  const auto planned = step.find("planned_rate_rps");
  j.planned_rate_rps = planned != step.end() && planned->is_number()
                           ? planned->get<double>()
                           : params.value("rate_rps", 0.0);
  j.outcome = step.value("partial", false) ? analysis::Outcome::kInconclusive : v.outcome;
  j.stats.window_s = st.value("window_s", 0.0);
  j.stats.offered_rate_rps = st.value("offered_rate_rps", 0.0);
  j.stats.concurrency = st.value("concurrency", 0);
  j.stats.output_tokens_per_s = st.value("output_tokens_per_s", 0.0);
  j.stats.input_tokens_per_s = st.value("input_tokens_per_s", 0.0);
  j.stats.requests_per_s = st.value("requests_per_s", 0.0);
  j.stats.achieved_rate_rps = st.value("achieved_rate_rps", 0.0);
  j.stats.error_rate = st.value("error_rate", 0.0);
  j.stats.ttft_ns = ms_summary(st.value("ttft_ms", json()));
  j.stats.tpot_ns = ms_summary(st.value("tpot_ms", json()));
  j.stats.e2e_ns = ms_summary(st.value("e2e_ms", json()));
  if (st.contains("tokens")) {
    j.stats.input_tokens = token_summary(st["tokens"].value("input", json()));
    j.stats.output_tokens = token_summary(st["tokens"].value("output", json()));
  }
  StepRecord record;
  record.judged = std::move(j);
  record.verdict = std::move(v);
  return record;
}

json TargetRun::measured_lengths() const {
  double in_sum = 0, out_sum = 0;
  std::uint64_t in_n = 0, out_n = 0;
  for (const auto& j : all_judged_) {
    in_sum += j.stats.input_tokens.mean * static_cast<double>(j.stats.input_tokens.count);
    in_n += j.stats.input_tokens.count;
    out_sum += j.stats.output_tokens.mean * static_cast<double>(j.stats.output_tokens.count);
    out_n += j.stats.output_tokens.count;
  }
  auto mean = [](double sum, std::uint64_t n) {
    return n > 0 ? json(std::round(sum / static_cast<double>(n) * 10) / 10) : json(nullptr);
  };
  return json{{"input_tokens_mean", mean(in_sum, in_n)},
              {"output_tokens_mean", mean(out_sum, out_n)},
              {"input_requests", in_n},
              {"output_requests", out_n},
              {"note", "per completed request of every step, from usage (input: prompt_tokens)"}};
}

json TargetRun::run(std::string& error, bool& cancelled) {
  json phases = json::array();
  std::vector<std::optional<double>> search_repeats;
  for (std::size_t p = 0; p < plan_.phases.size() && error.empty(); ++p) {
    const auto& phase = plan_.phases[p];
    for (int rep = 0; rep < std::max(1, phase.repeat) && error.empty(); ++rep) {
      if (stop_.stop_requested()) break;
      const auto key = phase_key(target_index_, p, rep);
      json doc;
      if (auto it = resume_.completed_phases.find(key); it != resume_.completed_phases.end()) {
        doc = it->second;  // resumed: reuse the stored phase and what later phases need
        doc["resumed"] = true;
        adopt_stored_steps(doc);
        if (doc.contains("knee") && doc["knee"].value("found", false)) {
          analysis::SweepPoint k;
          k.concurrency = doc["knee"].value("concurrency", 0);
          k.output_tokens_per_s = doc["knee"].value("output_tokens_per_s", 0.0);
          k.mean_e2e_ns = doc["knee"].value("mean_e2e_ms", 0.0) * 1e6;
          knee_ = k;
        }
        if (doc.contains("search") && doc["search"]["qualified_rate_rps"].is_number())
          qualified_rate_ = doc["search"]["qualified_rate_rps"].get<double>();
      } else {
        static const std::vector<json> kNoneStored;
        const auto stored = resume_.stored_steps.find(key);
        bool finished = false;
        doc = run_phase(phase, p, rep, error,
                        stored != resume_.stored_steps.end() ? stored->second : kNoneStored,
                        finished);
        StepContext ctx;
        ctx.target_index = target_index_;
        ctx.target = target_.name;
        ctx.phase_index = p;
        ctx.phase = phase.name;
        ctx.kind = phase.kind;
        ctx.repeat_index = rep;
        ctx.global_step = global_step_;
        // A phase that ran to its end is stored even when a stop came after its last step (a
        // shutdown): a resumed job reuses it instead of finding its steps without it.
        if (error.empty() && (finished || !stop_.stop_requested()))
          sink_.on_phase_finished(ctx, doc);
      }
      if (phase.kind == PhaseKind::kCapacitySearch) {
        const auto& s = doc.contains("search") ? doc["search"] : json();
        search_repeats.push_back(s.is_object() && s["qualified_rate_rps"].is_number()
                                     ? std::optional<double>(s["qualified_rate_rps"].get<double>())
                                     : std::nullopt);
      }
      phases.push_back(std::move(doc));
    }
  }
  cancelled = stop_.stop_requested();

  // Qualified capacity and the target's verdict over every judged step of this target
  // (docs/metrics.md §5; analysis/capacity.h, analysis/target_verdict.h). Steps of resumed phases
  // were adopted from their stored documents.
  const auto capacity = analysis::qualified_capacity(all_judged_);
  const auto verdict = analysis::judge_target(all_judged_, all_verdicts_, capacity);
  json cap = api::capacity_json(capacity);
  json qualified = nullptr;
  json best_evidence = nullptr;
  const analysis::LoadCapacity* basis_capacity = verdict.basis == "open_loop" ? &capacity.open_loop
                                                 : verdict.basis == "closed_loop"
                                                     ? &capacity.closed_loop
                                                     : nullptr;
  if (basis_capacity && basis_capacity->point && verdict.outcome == analysis::Outcome::kPass) {
    const analysis::QualifiedPoint& point = *basis_capacity->point;
    qualified = api::qualified_point_json(point);
    qualified["basis"] = verdict.basis;
    // Cost comes from the measured output throughput at the qualified point (docs/metrics.md §6.1).
    const auto cost = target_.price_per_hour
                          ? analysis::cost_per_million_output_tokens(*target_.price_per_hour,
                                                                     point.output_tokens_per_s)
                          : std::nullopt;
    qualified["cost_per_million_output_tokens"] = cost ? json(*cost) : json(nullptr);
  } else if (basis_capacity && basis_capacity->best_evidence) {
    // Evidence short of a qualified capacity: shown, never priced or planned with.
    best_evidence = api::qualified_point_json(*basis_capacity->best_evidence);
    best_evidence["basis"] = verdict.basis;
  }
  json workload{
      {"input_tokens_mean", target_.workload.planned_input_mean()},
      {"output_tokens_mean", target_.workload.planned_output_mean()},
      {"source", target_.workload.source == agent::WorkloadSource::kSynthetic ? "synthetic"
                 : target_.workload.source == agent::WorkloadSource::kTrace   ? "trace"
                                                                              : "dataset"},
      {"overridden", target_.workload_overridden},
      {"measured", measured_lengths()}};
  if (!target_.workload.mix.empty()) {
    json mix = json::array();
    for (const auto& c : target_.workload.mix)
      mix.push_back(json{{"name", c.name},
                         {"weight", c.weight},
                         {"input_tokens_mean", c.input_tokens.nominal_mean()},
                         {"output_tokens_mean", c.output_tokens.nominal_mean()}});
    workload["mix"] = std::move(mix);
  }
  if (target_.workload.source != agent::WorkloadSource::kSynthetic) {
    // A dataset's lengths are what its requests measured (usage), not the plan's defaults.
    const json& m = workload["measured"];
    workload["input_tokens_mean"] = m["input_tokens_mean"];
    workload["output_tokens_mean"] = m["output_tokens_mean"];
  }
  json doc{
      {"name", target_.name},
      {"base_url", target_.base_url},
      {"simulated",
       EmbeddedSimulators::is_sim_url(target_.base_url) || target_.simulator_over_http},
      {"model", model_.empty() ? target_.spec.model : model_},
      {"precision", target_.precision},
      {"api", std::string(agent::to_string(target_.spec.api))},
      {"workload", workload},
      {"hardware",
       json::parse(target_.hardware_json.empty() ? "{}" : target_.hardware_json, nullptr, false)},
      {"price_per_hour", target_.price_per_hour ? json(*target_.price_per_hour) : json(nullptr)},
      {"currency", target_.currency},
      {"phases", phases},
      {"capacity", cap},
      {"qualified", qualified},
      {"best_evidence", best_evidence},
      {"verdict", api::target_verdict_json(verdict)},
      {"client_bound_steps", verdict.client_bound_steps},
      {"insufficient_sample_steps", verdict.insufficient_sample_steps},
      {"time_scale", target_.time_scale}};
  if (search_repeats.size() > 1) {
    const auto rep = analysis::assess_repeatability(search_repeats);
    doc["repeatability"] = json{{"runs", rep.runs},
                                {"mean_rps", rep.mean},
                                {"min_rps", rep.min},
                                {"max_rps", rep.max},
                                {"relative_spread", rep.relative_spread},
                                {"ci_low_rps", rep.ci_low ? json(*rep.ci_low) : json(nullptr)},
                                {"ci_high_rps", rep.ci_high ? json(*rep.ci_high) : json(nullptr)},
                                {"inconclusive", rep.inconclusive},
                                {"reason", rep.reason}};
  }
  return doc;
}

// Prediction: the target's simulator as a virtual-time backend, or why it cannot be one.
struct VirtualTarget {
  std::unique_ptr<VirtualStepBackend> backend;
  std::string description;
  std::string error;
};

VirtualTarget make_virtual_backend(const RunTarget& target, const RunPlan& plan) {
  VirtualTarget out;
  if (!EmbeddedSimulators::is_sim_url(target.base_url)) {
    out.error = "prediction needs a sim://<hardware>/<model> target; base_url is " +
                target.base_url + " (measure it with llmcapd run or POST /v1/jobs)";
    return out;
  }
  auto made =
      EmbeddedSimulators::sim_options_for(target.base_url, target.sim_options_json, plan.seed);
  if (!made.options) {
    out.error = "simulator cannot start: " + made.error;
    return out;
  }
  if (auto why = VirtualStepBackend::unsupported(*made.options, target.workload)) {
    out.error = *why;
    return out;
  }
  try {
    sim::SimModel model = sim::build_sim_model(*made.options);
    out.description = "virtual time: " + sim::describe(model);
    out.backend = std::make_unique<VirtualStepBackend>(std::move(model), *made.options,
                                                       plan.telemetry_interval_s);
  } catch (const std::exception& e) {
    out.error = std::string("simulator cannot start: ") + e.what();
  }
  return out;
}

}  // namespace

PlanExecutor::PlanExecutor(EmbeddedSimulators& sims, ExecutionSink& sink, StepBackend* backend,
                           ExecutionMode mode)
    : sims_(sims), sink_(sink), backend_(backend ? backend : &local_), mode_(mode) {}

std::vector<std::string> PlanExecutor::prediction_problems(const RunPlan& plan) {
  std::vector<std::string> problems;
  for (std::size_t i = 0; i < plan.targets.size(); ++i) {
    const VirtualTarget made = make_virtual_backend(plan.targets[i], plan);
    if (made.error.empty()) continue;
    const std::string& e = made.error;
    // Errors naming a plan field already ("sim.faults: ...", "workload.dataset_path: ...") get
    // the target's path in front; the rest are about the simulator the target asks for.
    const auto colon = e.find(':');
    const std::string head = colon == std::string::npos ? "" : e.substr(0, colon);
    const bool field = !head.empty() && head.find(' ') == std::string::npos;
    // A workload matrix repeats each target once per workload: the plan's target's path.
    const std::size_t index =
        plan.targets[i].workload_name.empty() ? i : plan.targets[i].plan_target_index;
    const std::string at = "/targets/" + std::to_string(index) + "/";
    if (!EmbeddedSimulators::is_sim_url(plan.targets[i].base_url)) {
      problems.push_back(at + "base_url: " + e);
    } else if (field) {
      std::string path = head;
      std::replace(path.begin(), path.end(), '.', '/');
      problems.push_back(at + path + e.substr(colon));
    } else {
      problems.push_back(at + "base_url: " + e);
    }
  }
  // Each problem once (a matrix target repeats its own for every workload).
  std::vector<std::string> unique;
  for (auto& p : problems)
    if (std::find(unique.begin(), unique.end(), p) == unique.end()) unique.push_back(std::move(p));
  return unique;
}

std::int64_t PlanExecutor::planned_steps(const RunPlan& plan) {
  std::int64_t per_target = 0;
  for (const auto& p : plan.phases) {
    std::int64_t n = 0;
    switch (p.kind) {
      case PhaseKind::kConcurrencySweep: n = static_cast<std::int64_t>(p.levels.size()); break;
      case PhaseKind::kRateSweep: n = static_cast<std::int64_t>(p.rates_rps.size()); break;
      case PhaseKind::kCapacitySearch: n = p.max_steps; break;
      case PhaseKind::kBurst:
      case PhaseKind::kSoak:
      case PhaseKind::kAtDemand: n = 1; break;
      case PhaseKind::kTraceReplay: n = static_cast<std::int64_t>(p.speeds.size()); break;
    }
    per_target += n * std::max(1, p.repeat);
  }
  return per_target * static_cast<std::int64_t>(plan.targets.size());
}

std::vector<std::map<std::string, PlannedSearch>> PlanExecutor::predicted_search_starts(
    const RunPlan& plan, std::stop_token stop, std::string& unavailable) {
  std::vector<std::map<std::string, PlannedSearch>> starts;
  const bool wanted = std::any_of(plan.phases.begin(), plan.phases.end(), [](const auto& p) {
    return p.kind == PhaseKind::kCapacitySearch && p.start_from_prediction;
  });
  if (!wanted) return starts;
  if (mode_ == ExecutionMode::kPredict) {
    unavailable = "the prediction itself starts from the knee";
    return starts;
  }
  if (const auto problems = prediction_problems(plan); !problems.empty()) {
    unavailable = "the plan cannot be predicted: " + problems.front();
    return starts;
  }
  ExecutionSink quiet;
  PlanExecutor predictor(sims_, quiet, nullptr, ExecutionMode::kPredict);
  const ExecutionResult predicted = predictor.run(plan, std::move(stop));
  if (!predicted.error.empty()) {
    unavailable = "the prediction failed: " + predicted.error;
    return starts;
  }
  for (const auto& target : predicted.results.value("targets", json::array())) {
    auto& by_phase = starts.emplace_back();
    for (const auto& phase : target.value("phases", json::array())) {
      const json search = phase.value("search", json::object());
      if (phase.value("repeat", 0) != 0 || !search.contains("qualified_rate_rps") ||
          !search["qualified_rate_rps"].is_number())
        continue;
      PlannedSearch planned;
      planned.rate_rps = search["qualified_rate_rps"].get<double>();
      if (search.contains("bracket_high_rps") && search["bracket_high_rps"].is_number()) {
        planned.high_rps = search["bracket_high_rps"].get<double>();
        for (const auto& t : search.value("trials", json::array())) {
          if (std::fabs(t.value("rate_rps", 0.0) - planned.high_rps) < 1e-4 &&
              t.value("outcome", "") != "pass")
            planned.high_confirm = t.value("confirm", false);
        }
      }
      by_phase[phase.value("name", "")] = planned;
    }
  }
  return starts;
}

ExecutionResult PlanExecutor::run(const RunPlan& plan, std::stop_token stop,
                                  const ResumeState& resume) {
  ExecutionResult out;
  json targets = json::array();
  std::int64_t global_step = resume.completed_steps;
  const auto planned = planned_steps(plan);
  std::vector<analysis::TargetOffer> offers;
  std::vector<analysis::TargetVerdict> verdicts;
  json verdict_targets = json::array();
  double measured_output_sum = 0;
  int measured_output_targets = 0;
  std::string prediction_unavailable;
  const auto predicted_starts = predicted_search_starts(plan, stop, prediction_unavailable);

  for (std::size_t t = 0; t < plan.targets.size() && out.error.empty(); ++t) {
    if (stop.stop_requested()) break;
    RunTarget target = plan.targets[t];
    std::string description;
    std::function<std::int64_t()> clock_lost_ns;
    std::unique_ptr<VirtualStepBackend> virtual_backend;
    if (mode_ == ExecutionMode::kPredict) {
      auto made = make_virtual_backend(target, plan);
      if (!made.error.empty()) {
        out.error = "target " + target.name + ": " + made.error;
        break;
      }
      virtual_backend = std::move(made.backend);
      description = made.description;
      target.spec.base_url = target.base_url;
      target.time_scale = 1.0;  // virtual time needs no compression
      // The simulator is a simulated target that loses no time: its clock is the only clock.
      clock_lost_ns = [] { return std::int64_t{0}; };
    } else if (EmbeddedSimulators::is_sim_url(target.base_url)) {
      auto resolved = sims_.resolve(target.base_url, target.sim_options_json, plan.seed);
      if (!resolved.error.empty()) {
        out.error = "target " + target.name + ": simulator cannot start: " + resolved.error;
        break;
      }
      target.spec.base_url = resolved.base_url;
      description = resolved.description;
      clock_lost_ns = resolved.clock_lost_ns;
    } else {
      target.spec.base_url = target.base_url;
      // A standalone `llmcapd sim` runs its GPU time_scale times faster than real time: its
      // steps are compressed and scaled back as a sim:// target's, or it reads that much
      // optimistic. Unless the plan gave the target a time_scale of its own.
      if (target.time_scale == 1.0) {
        if (const auto id = backend_->identify(target.spec)) {
          target.time_scale = id->time_scale;
          target.simulator_over_http = true;
          char k[32];
          std::snprintf(k, sizeof k, "%g", id->time_scale);
          description = "llmcap simulator at " + target.base_url + " (" + id->hardware + " / " +
                        id->model + ", time_scale " + k + "): measured in simulated time";
        }
      }
    }
    sink_.on_target_started(target, target.spec.base_url, description);
    bool cancelled = false;
    StepBackend& backend = virtual_backend ? *virtual_backend : *backend_;
    TargetRun run(plan, target, t, sink_, stop, resume, global_step, planned, backend);
    run.set_target_clock(std::move(clock_lost_ns));
    run.set_predicted_starts(
        t < predicted_starts.size() ? predicted_starts[t] : std::map<std::string, PlannedSearch>{},
        prediction_unavailable);
    json doc = run.run(out.error, cancelled);
    if (!description.empty()) doc["simulator"] = description;
    doc["predicted"] = mode_ == ExecutionMode::kPredict;
    if (!target.workload_name.empty()) {
      // A workload matrix: the plan's target and the workload this row measured.
      doc["target"] = target.plan_target;
      doc["workload_name"] = target.workload_name;
      doc["workload"]["name"] = target.workload_name;
    }
    const bool qualified = doc["qualified"].is_object();
    {
      // The job's verdict is judged from the targets' (analysis/target_verdict.h).
      analysis::TargetVerdict tv;
      const std::string o = doc["verdict"].value("outcome", "inconclusive");
      tv.outcome = o == "pass"   ? analysis::Outcome::kPass
                   : o == "fail" ? analysis::Outcome::kFail
                                 : analysis::Outcome::kInconclusive;
      verdicts.push_back(tv);
      verdict_targets.push_back(json{{"name", target.name},
                                     {"outcome", o},
                                     {"statement", doc["verdict"].value("statement", "")}});
    }
    if (const json& m = doc["workload"]["measured"]["output_tokens_mean"]; m.is_number()) {
      measured_output_sum += m.get<double>();
      ++measured_output_targets;
    }
    offers.push_back({target.name, target.price_per_hour,
                      qualified ? doc["qualified"].value("output_tokens_per_s", 0.0) : 0.0,
                      target.currency});
    targets.push_back(std::move(doc));
    if (cancelled) break;
  }
  out.cancelled = stop.stop_requested();

  json results{
      {"plan", plan.name},
      {"predicted", mode_ == ExecutionMode::kPredict},
      {"workload_fingerprint", plan.fingerprint},
      {"comparison_label", plan.per_target_optimised ? "per-target optimised" : "same-config"},
      {"targets", targets}};
  // Comparison against the first target (docs/metrics.md §6.2: relative cost = price ratio /
  // throughput ratio), only between targets that qualified; with a workload matrix against the
  // first target of the same workload (offers are in plan.targets' order).
  json comparisons = json::array();
  for (std::size_t i = 1; i < offers.size(); ++i) {
    std::size_t base = 0;
    while (base < i && plan.targets[base].workload_name != plan.targets[i].workload_name) ++base;
    if (base == i) continue;
    if (auto c = analysis::compare_targets(offers[base], offers[i])) {
      comparisons.push_back(api::comparison_json(*c));
      if (!plan.targets[i].workload_name.empty())
        comparisons.back()["workload"] = plan.targets[i].workload_name;
    }
  }
  results["comparison"] = comparisons;
  // Equal-load comparison: every target at the at_demand phase's rate, side by side.
  if (std::any_of(plan.phases.begin(), plan.phases.end(),
                  [](const PlanPhase& p) { return p.kind == PhaseKind::kAtDemand; }))
    results["at_demand"] = api::at_demand_comparison(results);
  if (plan.demand && !offers.empty()) {
    analysis::Demand demand = *plan.demand;
    json basis = "plan";
    if (demand.mean_output_tokens <= 0 && measured_output_targets > 0) {
      // A dataset workload: the demand's output length is the one measured (docs/plans.md).
      demand.mean_output_tokens = measured_output_sum / measured_output_targets;
      basis = "measured";
    }
    results["demand_plan"] =
        api::demand_plan_json(analysis::plan_demand(demand, offers, plan.hours_per_month));
    results["demand_plan"]["mean_output_tokens"] = demand.mean_output_tokens;
    results["demand_plan"]["mean_output_tokens_from"] = basis;
  }
  // Every target judged, and the job's verdict is pass only when every one passed: a cancelled
  // or failed job, or one whose later targets never ran, has no pass.
  analysis::Outcome overall = analysis::overall_outcome(verdicts);
  std::string overall_statement;
  if (!out.error.empty() || out.cancelled || verdicts.size() != plan.targets.size()) {
    if (overall == analysis::Outcome::kPass) overall = analysis::Outcome::kInconclusive;
    overall_statement = !out.error.empty() ? "the job failed before every target was judged"
                        : out.cancelled    ? "cancelled before every target was judged"
                                           : "not every target was judged";
  } else {
    overall_statement = overall == analysis::Outcome::kPass ? "every target qualified"
                        : overall == analysis::Outcome::kFail
                            ? "a target failed its SLA"
                            : "no verdict for every target (see each target's statement)";
  }
  out.verdict = overall;
  results["verdict"] = json{{"outcome", std::string(analysis::to_string(overall))},
                            {"statement", overall_statement},
                            {"targets", verdict_targets}};
  results["all_qualified"] = overall == analysis::Outcome::kPass;
  out.all_qualified = overall == analysis::Outcome::kPass;
  results["state"] = !out.error.empty() ? "failed" : out.cancelled ? "cancelled" : "succeeded";
  if (!out.error.empty()) results["error"] = out.error;
  out.results = std::move(results);
  return out;
}

}  // namespace llmcap::server

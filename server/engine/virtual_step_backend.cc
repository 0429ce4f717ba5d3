#include "server/engine/virtual_step_backend.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <queue>
#include <utility>
#include <vector>

#include "agent/arrival_process.h"
#include "agent/prompt_factory.h"

namespace llmcap::server {

namespace {

using analysis::ErrorClass;
using analysis::RequestSample;

constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMs = 1'000'000;
// A request the simulator refuses at once (prompt + max_tokens beyond max_model_len) still
// takes a round trip; without one a closed loop would spin at a single instant.
constexpr std::int64_t kRefusalRoundTripNs = 100'000;
// The stop token is polled every this many events.
constexpr std::uint64_t kStopPollEvents = 4096;

std::int64_t to_ns(double s) { return static_cast<std::int64_t>(std::llround(s * 1e9)); }

enum class DeadlineKind { kFirstToken, kIdle, kTotal };

struct Deadline {
  std::int64_t at = 0;
  std::uint64_t id = 0;
  DeadlineKind kind = DeadlineKind::kTotal;
  bool operator>(const Deadline& o) const {
    return at != o.at ? at > o.at : id != o.id ? id > o.id : kind > o.kind;
  }
};

// One request in flight: its sample and what the client has received of it.
struct InFlight {
  RequestSample sample;
  std::int64_t max_tokens = 0;
  std::int64_t generated = 0;    // tokens the engine produced for it
  std::int64_t unsent = 0;       // generated tokens not yet carried by an event
  std::int64_t last_event = -1;  // step-epoch ns of its latest token event
  bool in_window = false;
  std::vector<std::int64_t> gaps;  // ITL gaps (ns), kept for in-window requests only
};

// The discrete-event run of one step; lives on run()'s stack.
class VirtualStep {
 public:
  VirtualStep(const agent::StepSpec& spec, sim::BatchEngine& engine, const sim::SimModel& model,
              const sim::SimOptions& options, std::uint64_t& next_engine_id,
              double telemetry_interval_s)
      : spec_(spec),
        engine_(engine),
        model_(model),
        options_(options),
        next_engine_id_(next_engine_id),
        prompts_(spec.workload.input_tokens, spec.workload.output_tokens,
                 spec.workload.shared_prefix_tokens, spec.seed),
        arrivals_(spec.load.rate, spec.load.inter_arrival, spec.load.burstiness,
                  spec.seed ^ 0xa5a5a5a5ULL),
        tick_every_(std::max<std::int64_t>(1, spec.in_flight_sample_ms) * kMs),
        telemetry_every_(std::max<std::int64_t>(1, to_ns(telemetry_interval_s))) {
    // A workload mix draws each class's lengths from its own factory, seeded as the real
    // runner's (agent/step_runner.cc), so both see the same lengths for the same request.
    for (std::size_t c = 0; c < spec.workload.mix.size(); ++c)
      mix_prompts_.emplace_back(spec.workload.mix[c].input_tokens,
                                spec.workload.mix[c].output_tokens, 0,
                                agent::mix_class_seed(spec.seed, c));
    result_.itl_ns_by_class.resize(spec.workload.mix.size());
  }

  agent::StepResult run(const std::stop_token& stop, agent::TelemetryResult& telemetry);

 private:
  bool open_loop() const { return spec_.load.kind == agent::LoadKind::kOpen; }
  void start_request(std::int64_t t_intended);
  void closed_slot_freed();
  void deliver(const sim::StepOutcome& outcome);
  void finish(std::uint64_t id, ErrorClass error, std::string message);
  void cancel_all();
  void expire(const Deadline& d);
  void end_window();
  void begin_step();
  // In-flight series and telemetry ticks up to t, from the state since the last event.
  void sample_until(std::int64_t t);
  std::int64_t next_event() const;
  static constexpr int kMixKeyBase = 1000;
  // The block hashes of prefix `key` (0: shared_prefix_tokens, g + 1: group g, kMixKeyBase + c:
  // mix class c) of `tokens`
  // tokens: stand-in token ids unique to the key, hashed as the simulator hashes a prompt.
  const std::vector<std::uint64_t>& prefix_hashes(int key, std::int64_t tokens);

  const agent::StepSpec& spec_;
  sim::BatchEngine& engine_;
  const sim::SimModel& model_;
  const sim::SimOptions& options_;
  std::uint64_t& next_engine_id_;
  agent::PromptFactory prompts_;
  std::vector<agent::PromptFactory> mix_prompts_;  // workload mix: one factory per class
  agent::ArrivalProcess arrivals_;
  agent::StepResult result_;
  agent::TelemetryResult* telemetry_ = nullptr;

  std::int64_t now_ = 0;
  std::int64_t window_start_ = 0;
  std::int64_t window_end_ = 0;
  std::int64_t drain_deadline_ = kNever;
  std::optional<std::int64_t> next_arrival_;
  bool sending_closed_ = false;
  bool stopping_ = false;

  std::map<std::uint64_t, InFlight> in_flight_;              // by engine id (= order of sending)
  std::map<int, std::vector<std::uint64_t>> prefix_hashes_;  // by prefix key
  std::priority_queue<Deadline, std::vector<Deadline>, std::greater<>> deadlines_;
  int closed_restarts_ = 0;  // closed-loop slots freed at now_, restarted after the step began
  std::int64_t window_intended_ = 0;
  std::int64_t last_window_intended_ = 0;
  std::uint64_t next_index_ = 0;

  bool busy_ = false;
  std::int64_t step_end_ = kNever;
  sim::StepOutcome current_;

  std::int64_t tick_every_;
  std::int64_t next_tick_ = 0;
  std::int64_t telemetry_every_;
  std::int64_t next_telemetry_ = 0;
  std::int64_t preemptions_at_start_ = 0;
  std::int64_t prefix_queries_at_start_ = 0;
  std::int64_t prefix_hits_at_start_ = 0;
  double running_sum_ = 0, waiting_sum_ = 0;
  std::size_t telemetry_samples_ = 0;
};

const std::vector<std::uint64_t>& VirtualStep::prefix_hashes(int key, std::int64_t tokens) {
  auto [it, inserted] = prefix_hashes_.try_emplace(key);
  if (inserted && tokens > 0) {
    std::vector<std::int64_t> ids(static_cast<std::size_t>(tokens));
    for (std::int64_t i = 0; i < tokens; ++i)
      ids[static_cast<std::size_t>(i)] = (static_cast<std::int64_t>(key) << 40) + i;
    it->second = sim::prefix_block_hashes(ids, model_.engine_config.block_tokens);
  }
  return it->second;
}

void VirtualStep::start_request(std::int64_t t_intended) {
  const std::uint64_t index = next_index_++;
  ++result_.counts.sent;
  const int mix_class = agent::mix_class_of(spec_.workload.mix, spec_.seed, index);
  const agent::PlannedLengths lengths =
      mix_class >= 0 ? mix_prompts_[static_cast<std::size_t>(mix_class)].next_lengths()
                     : prompts_.next_lengths();
  RequestSample s;
  s.index = index;
  s.t_intended_ns = t_intended;
  s.t_send_ns = now_;
  s.planned_input_tokens = lengths.input_tokens;
  s.planned_output_tokens = lengths.output_tokens;
  // The prompt the simulator counts: the planned length (calibrated to the simulator's one
  // token per word), never shorter than the shared prefix plus the request's unique header.
  // The prefix (a prefix group's, else shared_prefix_tokens) is what the prompt shares with
  // others: its full blocks' hashes go to the engine, as the real simulator's tokenizer would
  // produce them for the factory's text, so predicted prefix-cache hits match measured ones.
  const int group = agent::prefix_group_of(spec_.workload.prefix_groups, spec_.seed, index);
  std::int64_t shared =
      group >= 0 ? spec_.workload.prefix_groups[static_cast<std::size_t>(group)].prefix_tokens
                 : spec_.workload.shared_prefix_tokens;
  // A mix class's prefix has its own key (kMixKeyBase + class), apart from the groups'.
  int prefix_key = group + 1;
  if (mix_class >= 0) {
    shared = spec_.workload.mix[static_cast<std::size_t>(mix_class)].prefix_tokens;
    prefix_key = kMixKeyBase + mix_class;
  }
  const std::int64_t prompt = std::max<std::int64_t>({1, lengths.input_tokens, shared + 1});
  const std::int64_t max_tokens =
      lengths.output_tokens > 0 ? lengths.output_tokens : options_.default_max_tokens;
  const std::uint64_t id = next_engine_id_++;
  InFlight r;
  r.max_tokens = max_tokens;
  r.in_window = t_intended >= window_start_ && t_intended < window_end_;
  if (prompt + max_tokens > model_.max_model_len) {
    s.http_status = 400;
    s.error = ErrorClass::kHttp4xx;
    s.error_message = "HTTP 400: This model's maximum context length is " +
                      std::to_string(model_.max_model_len) + " tokens; the request has " +
                      std::to_string(prompt) + " prompt tokens and asks for " +
                      std::to_string(max_tokens) + " (simulated)";
    s.t_headers_ns = s.t_end_ns = now_ + kRefusalRoundTripNs;
    r.sample = std::move(s);
    in_flight_.emplace(id, std::move(r));
    deadlines_.push({now_ + kRefusalRoundTripNs, id, DeadlineKind::kTotal});
    return;
  }
  if (!engine_.add(sim::EngineRequest{id, prompt, max_tokens, prefix_hashes(prefix_key, shared)})) {
    s.error = ErrorClass::kTruncated;
    s.error_message = "the simulated engine cannot hold this request's KV cache";
    s.t_end_ns = now_ + kRefusalRoundTripNs;
    r.sample = std::move(s);
    in_flight_.emplace(id, std::move(r));
    deadlines_.push({now_ + kRefusalRoundTripNs, id, DeadlineKind::kTotal});
    return;
  }
  s.http_status = spec_.target.stream ? 200 : 0;
  s.t_headers_ns = spec_.target.stream ? now_ : -1;
  s.input_tokens = static_cast<std::int32_t>(prompt);
  r.sample = std::move(s);
  const auto& d = spec_.deadlines;
  if (spec_.target.stream && d.first_token_ms > 0)
    deadlines_.push({now_ + d.first_token_ms * kMs, id, DeadlineKind::kFirstToken});
  if (d.total_ms > 0) deadlines_.push({now_ + d.total_ms * kMs, id, DeadlineKind::kTotal});
  in_flight_.emplace(id, std::move(r));
  // An idle engine starts a step the moment a request arrives (SimEngineRunner wakes on it).
  // Requests "at the same instant" never reach a real server at once: the next one arrives
  // while this step runs and waits for the following step — as two closed-loop clients that
  // finish together do against the real-time simulator (one prefill alone, the other after it).
  if (!busy_) begin_step();
}

void VirtualStep::closed_slot_freed() {
  // StepRun::closed_worker: the slot's next request, intended now.
  if (stopping_ || sending_closed_ || now_ >= window_end_) return;
  if (spec_.window_requests > 0 && now_ >= window_start_) {
    if (window_intended_ >= spec_.window_requests) {
      window_end_ = std::max(now_, last_window_intended_ + 1);
      result_.window_end_ns = window_end_;
      return;
    }
    ++window_intended_;
    last_window_intended_ = now_;
  }
  ++result_.counts.intended;
  start_request(now_);
}

void VirtualStep::finish(std::uint64_t id, ErrorClass error, std::string message) {
  auto it = in_flight_.find(id);
  if (it == in_flight_.end()) return;
  InFlight& r = it->second;
  RequestSample& s = r.sample;
  if (s.error == ErrorClass::kNone) {
    s.error = error;
    if (error != ErrorClass::kNone) s.error_message = std::move(message);
  }
  if (s.t_end_ns < 0 || s.t_end_ns > now_) s.t_end_ns = now_;
  if (s.error == ErrorClass::kNone) {
    s.finish_reason = analysis::FinishReason::kLength;
    s.output_tokens = static_cast<std::int32_t>(r.generated);
    if (!spec_.target.stream) {
      s.http_status = 200;
      s.t_headers_ns = now_;
    }
    ++result_.counts.ok;
    result_.counts.output_tokens += static_cast<std::uint64_t>(r.generated);
    if (r.in_window) {
      for (const auto g : r.gaps) result_.itl_ns.record(static_cast<double>(g));
      if (!result_.itl_ns_by_class.empty()) {
        auto& by_class = result_.itl_ns_by_class[static_cast<std::size_t>(
            agent::mix_class_of(spec_.workload.mix, spec_.seed, s.index))];
        for (const auto g : r.gaps) by_class.record(static_cast<double>(g));
      }
    }
  } else if (s.error == ErrorClass::kCancelled) {
    ++result_.counts.cancelled;
  } else {
    ++result_.counts.failed;
  }
  if (s.error != ErrorClass::kNone) engine_.cancel(id);  // the client went away
  result_.samples.push_back(std::move(s));
  in_flight_.erase(it);
  if (!open_loop()) ++closed_restarts_;
}

void VirtualStep::deliver(const sim::StepOutcome& outcome) {
  const std::int64_t per_event = std::max<std::int64_t>(1, options_.tokens_per_event);
  std::vector<std::uint64_t> done;
  for (const std::uint64_t id : outcome.emitted) {
    auto it = in_flight_.find(id);
    if (it == in_flight_.end()) continue;  // cancelled while the step ran
    InFlight& r = it->second;
    ++r.generated;
    ++r.unsent;
    const bool last = r.generated >= r.max_tokens;
    if (!spec_.target.stream) {
      if (last) done.push_back(id);
      continue;
    }
    if (r.unsent < per_event && !last) continue;
    RequestSample& s = r.sample;
    r.unsent = 0;
    ++s.token_events;
    if (r.last_event < 0) {
      s.t_first_token_ns = now_;
    } else {
      const std::int64_t gap = now_ - r.last_event;
      s.max_itl_ns = std::max(s.max_itl_ns, gap);
      if (r.in_window) r.gaps.push_back(gap);
    }
    r.last_event = now_;
    s.t_last_token_ns = now_;
    if (spec_.record_token_times) s.token_times_ns.push_back(now_);
    if (last) {
      done.push_back(id);
    } else if (spec_.deadlines.idle_ms > 0) {
      deadlines_.push({now_ + spec_.deadlines.idle_ms * kMs, id, DeadlineKind::kIdle});
    }
  }
  for (const std::uint64_t id : done) finish(id, ErrorClass::kNone, {});
}

void VirtualStep::expire(const Deadline& d) {
  auto it = in_flight_.find(d.id);
  if (it == in_flight_.end()) return;
  const InFlight& r = it->second;
  if (r.sample.error != ErrorClass::kNone) {  // a refusal's round trip is over
    finish(d.id, r.sample.error, r.sample.error_message);
    return;
  }
  switch (d.kind) {
    case DeadlineKind::kFirstToken:
      if (r.last_event >= 0) return;
      finish(d.id, ErrorClass::kTimeoutFirstToken,
             "no token within " + std::to_string(spec_.deadlines.first_token_ms) + " ms");
      return;
    case DeadlineKind::kIdle:
      if (r.last_event + spec_.deadlines.idle_ms * kMs != d.at) return;  // a later event came
      finish(d.id, ErrorClass::kTimeoutIdle,
             "no event for " + std::to_string(spec_.deadlines.idle_ms) + " ms");
      return;
    case DeadlineKind::kTotal:
      finish(d.id, ErrorClass::kTimeoutTotal,
             "not finished within " + std::to_string(spec_.deadlines.total_ms) + " ms");
      return;
  }
}

void VirtualStep::cancel_all() {
  std::vector<std::uint64_t> ids;
  ids.reserve(in_flight_.size());
  for (const auto& [id, r] : in_flight_) ids.push_back(id);
  for (const auto id : ids) finish(id, ErrorClass::kCancelled, "cancelled at the end of the step");
  closed_restarts_ = 0;
}

void VirtualStep::end_window() {
  sending_closed_ = true;
  closed_restarts_ = 0;
  if (spec_.drain == agent::DrainPolicy::kCancel || stopping_) {
    cancel_all();
  } else if (!in_flight_.empty()) {
    drain_deadline_ = now_ + to_ns(spec_.drain_timeout_s);
  }
}

void VirtualStep::begin_step() {
  if (busy_ || engine_.idle()) return;
  current_ = engine_.step();
  if (current_.scheduled_seqs == 0) return;  // nothing schedulable (cannot happen after add())
  busy_ = true;
  step_end_ = now_ + std::max<std::int64_t>(1, to_ns(current_.cost.total_s));
}

void VirtualStep::sample_until(std::int64_t t) {
  const auto in_flight = static_cast<std::int32_t>(in_flight_.size());
  while (next_tick_ <= t) {
    result_.in_flight_series.emplace_back(next_tick_, in_flight);
    next_tick_ += tick_every_;
  }
  while (next_telemetry_ <= t) {
    const double running = static_cast<double>(engine_.running());
    const double waiting = static_cast<double>(engine_.waiting());
    const double kv = engine_.kv_usage();
    auto& pts = telemetry_->points;
    const std::string labels = "model_name=\"" + model_.model.name + "\"";
    pts.push_back({next_telemetry_, "vllm:num_requests_running", labels, running});
    pts.push_back({next_telemetry_, "vllm:num_requests_waiting", labels, waiting});
    pts.push_back({next_telemetry_, "vllm:kv_cache_usage_perc", labels, kv});
    pts.push_back({next_telemetry_, "vllm:num_preemptions_total", labels,
                   static_cast<double>(engine_.preemptions_total())});
    if (model_.engine_config.enable_prefix_caching) {
      pts.push_back({next_telemetry_, "vllm:prefix_cache_queries_total", labels,
                     static_cast<double>(engine_.prefix_cache_queries_total())});
      pts.push_back({next_telemetry_, "vllm:prefix_cache_hits_total", labels,
                     static_cast<double>(engine_.prefix_cache_hits_total())});
    }
    auto& sum = telemetry_->summary;
    sum.kv_usage_max = std::max(sum.kv_usage_max.value_or(0), kv);
    sum.running_max = std::max(sum.running_max.value_or(0), running);
    sum.waiting_max = std::max(sum.waiting_max.value_or(0), waiting);
    running_sum_ += running;
    waiting_sum_ += waiting;
    ++telemetry_samples_;
    next_telemetry_ += telemetry_every_;
  }
}

std::int64_t VirtualStep::next_event() const {
  std::int64_t t = kNever;
  if (busy_) t = std::min(t, step_end_);
  if (!deadlines_.empty()) t = std::min(t, deadlines_.top().at);
  if (open_loop() && next_arrival_ && !sending_closed_) t = std::min(t, *next_arrival_);
  if (!sending_closed_) t = std::min(t, window_end_);
  if (sending_closed_ && !in_flight_.empty()) t = std::min(t, drain_deadline_);
  return t;
}

agent::StepResult VirtualStep::run(const std::stop_token& stop, agent::TelemetryResult& telemetry) {
  telemetry_ = &telemetry;
  telemetry.summary.engines = {"vllm"};
  preemptions_at_start_ = engine_.preemptions_total();
  prefix_queries_at_start_ = engine_.prefix_cache_queries_total();
  prefix_hits_at_start_ = engine_.prefix_cache_hits_total();
  result_.model = spec_.target.model.empty() ? model_.model.name : spec_.target.model;
  result_.calibration.method = "virtual";
  result_.calibration.tokens_per_word_initial = result_.calibration.tokens_per_word_final = 1.0;
  result_.calibration.note = "virtual time: input lengths are the planned token counts";
  window_start_ = to_ns(spec_.warmup_s);
  window_end_ = window_start_ + to_ns(agent::planned_window_s(spec_));
  result_.window_start_ns = window_start_;
  result_.window_end_ns = window_end_;

  if (open_loop()) {
    arrivals_.set_exact_count_segments(
        {spec_.warmup_s, spec_.warmup_s + agent::planned_window_s(spec_)});
    next_arrival_ = arrivals_.next();
  } else {
    for (std::int32_t i = 0; i < spec_.load.concurrency; ++i) closed_slot_freed();
  }
  begin_step();

  std::uint64_t events = 0;
  while (true) {
    if (++events % kStopPollEvents == 0 && stop.stop_requested() && !stopping_) {
      stopping_ = true;
      result_.cancelled = true;
      if (now_ < window_end_) result_.window_end_ns = std::max(now_, window_start_);
      if (!sending_closed_) end_window();
      cancel_all();
    }
    if (sending_closed_ && in_flight_.empty()) break;
    const std::int64_t t = next_event();
    if (t == kNever) break;  // cannot happen: a window end or a deadline is always ahead
    sample_until(t);
    now_ = t;

    // 1. The running step ends: its tokens reach the clients, and the engine begins the next
    //    step at once, before any client reacts (SimEngineRunner::loop).
    if (busy_ && step_end_ == now_) {
      busy_ = false;
      step_end_ = kNever;
      const sim::StepOutcome outcome = std::move(current_);
      deliver(outcome);
      begin_step();
    }
    // 2. Deadlines due now.
    while (!deadlines_.empty() && deadlines_.top().at <= now_) {
      const Deadline d = deadlines_.top();
      deadlines_.pop();
      expire(d);
    }
    // 3. The clients' new requests: closed-loop slots freed now, open-loop arrivals due now.
    while (closed_restarts_ > 0) {
      --closed_restarts_;
      closed_slot_freed();
    }
    while (open_loop() && !sending_closed_ && next_arrival_ && *next_arrival_ <= now_) {
      const std::int64_t at = *next_arrival_;
      next_arrival_ = arrivals_.next();
      if (at >= window_end_) {
        next_arrival_.reset();
        break;
      }
      ++result_.counts.intended;
      if (in_flight_.size() >= static_cast<std::size_t>(spec_.load.in_flight_cap)) {
        if (at >= window_start_)
          ++result_.dropped_arrivals;
        else
          ++result_.dropped_arrivals_warmup;
        continue;
      }
      start_request(at);
    }
    // 4. The window closes; 5. the drain's time is up.
    if (!sending_closed_ && now_ >= window_end_) end_window();
    if (sending_closed_ && now_ >= drain_deadline_ && !in_flight_.empty()) cancel_all();
    // An idle engine starts on the requests that just arrived.
    begin_step();
  }
  result_.end_ns = now_;
  sample_until(now_);
  result_.completed = !stopping_;

  auto& sum = telemetry.summary;
  sum.scrapes_ok = telemetry_samples_;
  if (telemetry_samples_ > 0) {
    sum.running_mean = running_sum_ / static_cast<double>(telemetry_samples_);
    sum.waiting_mean = waiting_sum_ / static_cast<double>(telemetry_samples_);
  }
  sum.preemptions = static_cast<double>(engine_.preemptions_total() - preemptions_at_start_);
  if (model_.engine_config.enable_prefix_caching) {
    const double queries =
        static_cast<double>(engine_.prefix_cache_queries_total() - prefix_queries_at_start_);
    const double hits =
        static_cast<double>(engine_.prefix_cache_hits_total() - prefix_hits_at_start_);
    sum.prefix_cache_queries = queries;
    sum.prefix_cache_hits = hits;
    if (queries > 0) sum.prefix_cache_hit_rate = hits / queries;
  }

  std::sort(result_.samples.begin(), result_.samples.end(),
            [](const RequestSample& a, const RequestSample& b) { return a.index < b.index; });
  result_.response_ids.assign(result_.samples.size(), std::string());
  std::vector<std::int64_t> zeros;
  for (const auto& s : result_.samples)
    if (s.t_send_ns >= 0) zeros.push_back(0);
  result_.schedule_lag = agent::exact_lag_stats(zeros);
  result_.dispatch_lag = result_.schedule_lag;
  result_.timer_lag = agent::exact_lag_stats({});
  for (const auto& s : result_.samples) {
    if (!s.ok()) continue;
    if (s.planned_output_tokens > 0 && s.output_tokens != s.planned_output_tokens)
      ++result_.counts.output_length_mismatch;
  }
  double planned = 0, real = 0;
  std::uint64_t n = 0;
  for (const auto& s : result_.samples) {
    if (s.input_tokens < 0 || s.planned_input_tokens < 0) continue;
    ++n;
    planned += s.planned_input_tokens;
    real += s.input_tokens;
  }
  result_.calibration.samples_with_usage = n;
  if (n > 0) {
    result_.calibration.planned_input_mean_tokens = planned / static_cast<double>(n);
    result_.calibration.real_input_mean_tokens = real / static_cast<double>(n);
  }
  return std::move(result_);
}

}  // namespace

VirtualStepBackend::VirtualStepBackend(sim::SimModel model, sim::SimOptions options,
                                       double telemetry_interval_s)
    : model_(std::move(model)),
      options_(std::move(options)),
      telemetry_interval_s_(telemetry_interval_s > 0 ? telemetry_interval_s : 1.0),
      engine_(model_.roofline, model_.engine_config) {}

std::optional<std::string> VirtualStepBackend::unsupported(const sim::SimOptions& options,
                                                           const agent::WorkloadSpec& workload) {
  const auto& f = options.faults;
  if (f.error_rate > 0 || f.rate_limit_rate > 0 || f.stall_rate > 0 || f.reset_rate > 0 ||
      f.malformed_rate > 0 || f.slow_headers_rate > 0)
    return std::string(
        "sim.faults: fault injection is not modelled in virtual time; run the plan "
        "measured (llmcapd run) to test faults");
  if (workload.source == agent::WorkloadSource::kTrace)
    return std::string(
        "workload.trace: trace replay is not modelled in virtual time (its prompts share "
        "blocks the virtual engine does not cache); run the plan measured (llmcapd run)");
  if (workload.source != agent::WorkloadSource::kSynthetic)
    return std::string(
        "workload.dataset_path: prediction supports synthetic workloads only; run "
        "the plan measured (llmcapd run) for a dataset");
  if (workload.conversation.enabled())
    return std::string(
        "workload.conversation: multi-turn sessions are not modelled in virtual time yet; run "
        "the plan measured (llmcapd run) against the sim:// target");
  if (workload.abandon.enabled())
    return std::string(
        "workload.abandon: user abandonment is not modelled in virtual time; run the plan "
        "measured (llmcapd run)");
  return std::nullopt;
}

BackendStep VirtualStepBackend::run(const agent::StepSpec& spec, std::int64_t /*global_step*/,
                                    std::stop_token stop, const agent::ProgressCallback& progress) {
  BackendStep out;
  agent::StepSpec checked = spec;
  checked.target.base_url = "http://127.0.0.1";  // a sim:// target has no URL to connect to
  if (auto errors = agent::validate(checked); !errors.empty()) {
    for (const auto& e : errors)
      out.result.fatal_error += (out.result.fatal_error.empty() ? "" : "; ") + e;
    return out;
  }
  if (auto why = unsupported(options_, spec.workload)) {
    out.result.fatal_error = *why;
    return out;
  }
  agent::TelemetryResult telemetry;
  VirtualStep step(spec, engine_, model_, options_, next_engine_id_, telemetry_interval_s_);
  out.result = step.run(stop, telemetry);
  out.telemetry = std::move(telemetry);
  if (progress) {
    agent::StepProgress p;
    p.elapsed_ns = out.result.end_ns;
    p.intended = out.result.counts.intended;
    p.sent = out.result.counts.sent;
    p.completed_ok = out.result.counts.ok;
    p.failed = out.result.counts.failed;
    p.cancelled = out.result.counts.cancelled;
    p.dropped_arrivals = out.result.dropped_arrivals;
    p.output_tokens = out.result.counts.output_tokens;
    progress(p);
  }
  return out;
}

}  // namespace llmcap::server

#include "server/engine/virtual_step_backend.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <queue>
#include <unordered_map>
#include <utility>
#include <vector>

#include "agent/arrival_process.h"
#include "agent/conversation.h"
#include "agent/prompt_factory.h"
#include "sim/kv_block_pool.h"

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
  // Its idle deadline is in deadlines_: one entry per request, moved on lazily when it comes
  // due after a later event (expire) — one push per token event made the heap hold every
  // event of the last idle_ms, and its sifting was half the twin's CPU time.
  bool idle_armed = false;
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
        user_prompts_(spec.workload.conversation.user_tokens, spec.workload.output_tokens, 0,
                      spec.seed ^ 0x7573657273ULL),
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
  bool conversation() const { return spec_.workload.conversation.enabled(); }
  // A conversation turn's request: its lengths and block hashes instead of the factory's draws.
  struct TurnRequest {
    std::uint64_t session = 0;
    std::int32_t turn = 0;
    std::int64_t prompt_tokens = 0;
    std::int64_t max_tokens = 0;
    std::int32_t planned_input = 0;
    std::int32_t planned_output = 0;
    const std::vector<std::uint64_t>* hashes = nullptr;
  };
  void start_request(std::int64_t t_intended, const TurnRequest* turn = nullptr);
  // workload.conversation, as agent/step_runner.cc's run_session does it: a session starts
  // (its first turn intended at t_intended), a turn is sent, a turn ended, a session ended.
  struct Session {
    std::uint64_t id = 0;
    std::int32_t planned_turns = 0;
    std::int32_t turns_sent = 0;
    std::int64_t id_base = 0;  // stand-in token ids of its own text: id_base + position
    std::int64_t next_position = 0;
    std::vector<std::uint64_t> hashes;  // full blocks of its history (prompt + replies)
    std::vector<std::int64_t> tail;     // ids after the last full block
    std::int64_t context_tokens = 0;    // last turn's prompt + reply
  };
  void start_session(std::int64_t t_intended);
  void send_turn(Session& session, std::int64_t t_intended);
  void turn_finished(std::uint64_t engine_id, bool ok, bool cancelled, std::int64_t generated);
  void end_session(std::uint64_t session, agent::SessionEnd end);
  // Appends token ids to the session's history, continuing its chain of block hashes.
  void extend(Session& session, std::vector<std::int64_t> ids);
  void extend_own(Session& session, std::int64_t tokens);
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
  agent::PromptFactory user_prompts_;              // conversations: later turns' messages
  std::map<std::uint64_t, Session> sessions_;      // running sessions by number
  std::uint64_t next_session_ = 0;
  std::unordered_map<std::uint64_t, std::uint64_t> session_of_engine_id_;  // in-flight turns
  std::unordered_map<std::uint64_t, agent::ConversationTurn> turn_of_index_;
  std::unordered_map<std::uint64_t, std::int64_t> turn_prompt_of_engine_id_;
  // Turns due after their think time: (intended time, session), earliest first.
  std::priority_queue<std::pair<std::int64_t, std::uint64_t>,
                      std::vector<std::pair<std::int64_t, std::uint64_t>>, std::greater<>>
      next_turns_;
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

  // By engine id (ids grow in the order of sending; cancel_all() finishes them in that order).
  std::unordered_map<std::uint64_t, InFlight> in_flight_;
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

void VirtualStep::start_request(std::int64_t t_intended, const TurnRequest* turn) {
  const std::uint64_t index = next_index_++;
  ++result_.counts.sent;
  const int mix_class = turn ? -1 : agent::mix_class_of(spec_.workload.mix, spec_.seed, index);
  const agent::PlannedLengths lengths =
      turn             ? agent::PlannedLengths{turn->planned_input, turn->planned_output}
      : mix_class >= 0 ? mix_prompts_[static_cast<std::size_t>(mix_class)].next_lengths()
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
  const std::int64_t prompt =
      turn ? turn->prompt_tokens : std::max<std::int64_t>({1, lengths.input_tokens, shared + 1});
  const std::int64_t max_tokens = turn                        ? turn->max_tokens
                                  : lengths.output_tokens > 0 ? lengths.output_tokens
                                                              : options_.default_max_tokens;
  const std::uint64_t id = next_engine_id_++;
  if (turn) {
    turn_of_index_[index] = {turn->session, turn->turn};
    session_of_engine_id_[id] = turn->session;
  }
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
  if (!engine_.add(sim::EngineRequest{id, prompt, max_tokens,
                                      turn ? *turn->hashes : prefix_hashes(prefix_key, shared)})) {
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

void VirtualStep::extend(Session& session, std::vector<std::int64_t> ids) {
  std::vector<std::int64_t> all = std::move(session.tail);
  all.insert(all.end(), ids.begin(), ids.end());
  const std::size_t before = session.hashes.size();
  sim::append_block_hashes(session.hashes, all, model_.engine_config.block_tokens);
  const auto used =
      static_cast<std::ptrdiff_t>((session.hashes.size() - before) *
                                  static_cast<std::size_t>(model_.engine_config.block_tokens));
  session.tail.assign(all.begin() + used, all.end());
}

void VirtualStep::extend_own(Session& session, std::int64_t tokens) {
  std::vector<std::int64_t> ids(static_cast<std::size_t>(std::max<std::int64_t>(0, tokens)));
  for (auto& x : ids) x = session.id_base + session.next_position++;
  extend(session, std::move(ids));
}

void VirtualStep::start_session(std::int64_t t_intended) {
  const auto& conv = spec_.workload.conversation;
  Session s;
  s.id = next_session_++;
  s.planned_turns = agent::session_turns(conv, spec_.seed, s.id);
  // Its own text's ids: a range no other session of any step reaches (62-bit hash base).
  std::uint64_t h = (spec_.seed ^ 0x636f6e76ULL) + s.id * 0x9e3779b97f4a7c15ULL;
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
  s.id_base = static_cast<std::int64_t>((h ^ (h >> 31)) >> 2);
  auto [it, inserted] = sessions_.emplace(s.id, std::move(s));
  send_turn(it->second, t_intended);
}

void VirtualStep::send_turn(Session& s, std::int64_t t_intended) {
  const auto& conv = spec_.workload.conversation;
  const std::int32_t turn = s.turns_sent + 1;
  TurnRequest r;
  r.session = s.id;
  r.turn = turn;
  // Lengths and prefix group keyed on (session, turn), as the real-time runner draws them.
  const std::uint64_t key = agent::turn_draw_key(s.id, turn);
  if (turn == 1) {
    // The first message: the planned input, starting with its prefix group's (or the shared)
    // prefix, whose ids are those prefix_hashes() gives every other prompt with that prefix.
    const agent::PlannedLengths lengths = prompts_.lengths_at(key);
    const int group = agent::prefix_group_of(spec_.workload.prefix_groups, spec_.seed, key);
    const std::int64_t shared =
        group >= 0 ? spec_.workload.prefix_groups[static_cast<std::size_t>(group)].prefix_tokens
                   : spec_.workload.shared_prefix_tokens;
    r.prompt_tokens = std::max<std::int64_t>({1, lengths.input_tokens, shared + 1});
    r.planned_input = lengths.input_tokens;
    r.planned_output = lengths.output_tokens;
    std::vector<std::int64_t> prefix(static_cast<std::size_t>(shared));
    for (std::int64_t i = 0; i < shared; ++i)
      prefix[static_cast<std::size_t>(i)] = (static_cast<std::int64_t>(group + 1) << 40) + i;
    extend(s, std::move(prefix));
    extend_own(s, r.prompt_tokens - shared);
  } else {
    // The history (the simulator's tokens of the previous prompt and reply) + the new message,
    // whose planned length the runner's calibration makes include its chat template tokens.
    const agent::PlannedLengths user = user_prompts_.lengths_at(key);
    r.planned_input = static_cast<std::int32_t>(s.context_tokens) + user.input_tokens;
    r.planned_output = user.output_tokens;
    if (conv.max_context_tokens > 0 &&
        r.planned_input + std::max(0, user.output_tokens) > conv.max_context_tokens) {
      end_session(s.id, agent::SessionEnd::kContextLimit);
      return;
    }
    const std::int64_t added = user.input_tokens;
    r.prompt_tokens = s.context_tokens + added;
    extend_own(s, added);
  }
  r.max_tokens = r.planned_output > 0 ? r.planned_output : options_.default_max_tokens;
  // The request's hashes go on over the reply it will get (the simulator caches output blocks);
  // the next turn sends that reply back, so the session's history is those tokens too.
  extend_own(s, r.max_tokens);
  r.hashes = &s.hashes;
  ++s.turns_sent;
  if (turn > 1) ++result_.counts.intended;
  start_request(t_intended, &r);
}

void VirtualStep::turn_finished(std::uint64_t engine_id, bool ok, bool cancelled,
                                std::int64_t generated) {
  const auto it = session_of_engine_id_.find(engine_id);
  if (it == session_of_engine_id_.end()) return;
  const std::uint64_t id = it->second;
  session_of_engine_id_.erase(it);
  const auto prompt_it = turn_prompt_of_engine_id_.find(engine_id);
  const std::int64_t prompt = prompt_it != turn_prompt_of_engine_id_.end() ? prompt_it->second : 0;
  if (prompt_it != turn_prompt_of_engine_id_.end()) turn_prompt_of_engine_id_.erase(prompt_it);
  Session& s = sessions_.at(id);
  if (!ok) {
    // As in the real-time runner: a turn the step's end cancelled cuts its session.
    end_session(id, cancelled ? agent::SessionEnd::kWindowEnd : agent::SessionEnd::kFailed);
    return;
  }
  s.context_tokens = prompt + generated;
  if (s.turns_sent >= s.planned_turns) {
    end_session(id, agent::SessionEnd::kCompleted);
    return;
  }
  const std::int64_t at =
      now_ + agent::think_time_ns(spec_.workload.conversation, spec_.seed, id, s.turns_sent + 1);
  if (stopping_ || sending_closed_ || at >= window_end_) {
    end_session(id, agent::SessionEnd::kWindowEnd);
    return;
  }
  next_turns_.push({at, id});
}

void VirtualStep::end_session(std::uint64_t id, agent::SessionEnd end) {
  const auto it = sessions_.find(id);
  if (it == sessions_.end()) return;
  if (it->second.turns_sent > 0)
    result_.conversation.sessions.push_back(
        {id, it->second.planned_turns, it->second.turns_sent, end});
  sessions_.erase(it);
  // Closed loop: the user starts a new session at once (not after the window: it stops).
  if (!open_loop() && end != agent::SessionEnd::kWindowEnd) ++closed_restarts_;
}

void VirtualStep::closed_slot_freed() {
  // StepRun::closed_worker: the slot's next request, intended now.
  if (stopping_ || sending_closed_ || now_ >= window_end_) return;
  if (conversation()) {
    ++result_.counts.intended;  // a user's next session (StepRun::conversation_user)
    start_session(now_);
    return;
  }
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
  const bool ok = s.error == ErrorClass::kNone;
  const bool cancelled = s.error == ErrorClass::kCancelled;
  const std::int64_t generated = r.generated;
  if (session_of_engine_id_.count(id)) turn_prompt_of_engine_id_[id] = s.input_tokens;
  result_.samples.push_back(std::move(s));
  in_flight_.erase(it);
  if (conversation()) {
    turn_finished(id, ok, cancelled, generated);  // a closed-loop user restarts when its
                                                  // session ends
  } else if (!open_loop()) {
    ++closed_restarts_;
  }
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
    } else if (spec_.deadlines.idle_ms > 0 && !r.idle_armed) {
      r.idle_armed = true;
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
    case DeadlineKind::kIdle: {
      const std::int64_t due = r.last_event + spec_.deadlines.idle_ms * kMs;
      if (due > d.at) {  // a later event came: the deadline moves to idle_ms after it
        deadlines_.push({due, d.id, DeadlineKind::kIdle});
        return;
      }
      finish(d.id, ErrorClass::kTimeoutIdle,
             "no event for " + std::to_string(spec_.deadlines.idle_ms) + " ms");
      return;
    }
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
  std::sort(ids.begin(), ids.end());
  for (const auto id : ids) finish(id, ErrorClass::kCancelled, "cancelled at the end of the step");
  closed_restarts_ = 0;
}

void VirtualStep::end_window() {
  sending_closed_ = true;
  // Sessions thinking between turns are cut: their next turn would come after the window.
  while (!next_turns_.empty()) {
    end_session(next_turns_.top().second, agent::SessionEnd::kWindowEnd);
    next_turns_.pop();
  }
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
  if (!next_turns_.empty() && !sending_closed_) t = std::min(t, next_turns_.top().first);
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
    // 3. The clients' new requests: conversation turns due after their think time, closed-loop
    //    slots freed now, open-loop arrivals due now.
    while (!sending_closed_ && !next_turns_.empty() && next_turns_.top().first <= now_) {
      const auto [at, session] = next_turns_.top();
      next_turns_.pop();
      if (auto it = sessions_.find(session); it != sessions_.end()) send_turn(it->second, at);
    }
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
      if (conversation())
        start_session(at);  // the rate is of sessions (docs/plans.md, "Conversations")
      else
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
  if (conversation()) {
    // Sessions still open (a stop) end with the window; turns parallel to the samples.
    std::vector<std::uint64_t> open;
    for (const auto& [id, session] : sessions_) open.push_back(id);
    for (const auto id : open) end_session(id, agent::SessionEnd::kWindowEnd);
    for (const auto& s : result_.samples)
      result_.conversation.turns.push_back(turn_of_index_[s.index]);
  }
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
  if (workload.conversation.enabled() && !workload.mix.empty())
    return std::string(
        "workload.conversation: conversations with a workload mix are not modelled in virtual "
        "time; run the plan measured (llmcapd run)");
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

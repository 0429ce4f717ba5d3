#include "agent/step_runner.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "agent/conversation.h"
#include "agent/endpoint.h"
#include "agent/http_client.h"
#include "agent/length_calibrator.h"
#include "agent/prompt_factory.h"
#include "agent/refusal_tracker.h"
#include "agent/request_builder.h"
#include "agent/stream_recorder.h"
#include "agent/tokenize_response.h"
#include "net/use_nothrow.h"

namespace llmcap::agent {

namespace asio = boost::asio;
using analysis::ErrorClass;
using json = nlohmann::json;

namespace {

using net::use_nothrow;
constexpr std::int64_t kMs = 1'000'000;
// Upper bounds of the set-up requests; the plan's first-token timeout bounds them further
// (StepRun::setup_fetch), and a stop cancels them at once.
constexpr std::int64_t kDiscoveryTimeoutNs = 15'000 * kMs;
constexpr std::int64_t kProbeTimeoutNs = 60'000 * kMs;
// Keys of set-up requests in StepRun::cancellers (request indices count up from 0).
constexpr std::uint64_t kSetupCancellerKey = ~std::uint64_t{0};
// A calibration probe got no answer at all (timeout, refused, cancelled): no further probe is
// sent, since each would wait its whole deadline too.
constexpr std::int32_t kProbeNoAnswer = -2;

bool no_answer(const FetchResult& r) {
  switch (r.exchange.error) {
    case ErrorClass::kConnect:
    case ErrorClass::kTimeoutConnect:
    case ErrorClass::kTimeoutFirstToken:
    case ErrorClass::kTimeoutIdle:
    case ErrorClass::kTimeoutTotal:
    case ErrorClass::kCancelled: return true;
    default: return false;
  }
}

std::chrono::steady_clock::time_point tp(std::int64_t abs_ns) {
  return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(abs_ns));
}

std::shared_ptr<spdlog::logger> logger() {
  static auto l = [] {
    auto existing = spdlog::get("agent");
    return existing ? existing : spdlog::default_logger()->clone("agent");
  }();
  return l;
}

// All state of one running step; lives on the stack of StepRunner::run, used only on the
// agent thread (io.run()).
struct StepRun {
  StepRun(const StepSpec& s, const ProgressCallback& p)
      : spec(s),
        progress(p),
        window_timer(io),
        drain_timer(io),
        sched_timer(io),
        tick_timer(io),
        calibrator(s.workload.default_tokens_per_word, 0) {}

  const StepSpec& spec;
  const ProgressCallback& progress;
  asio::io_context io{1};
  asio::steady_timer window_timer;
  asio::steady_timer drain_timer;
  asio::steady_timer sched_timer;
  asio::steady_timer tick_timer;
  std::unique_ptr<HttpClient> client;
  StepResult result;
  LengthCalibrator calibrator;
  std::optional<PromptFactory> prompts;
  std::vector<PromptFactory> mix_prompts;  // workload mix: one factory per class
  std::optional<Dataset> dataset;
  std::optional<DatasetCursor> cursor;
  std::optional<analysis::LengthSampler> dataset_output;
  std::optional<Trace> trace;  // source kTrace: the windowed trace
  // workload.conversation: the later turns' user messages, the next session's number and the
  // think-time timers of sessions between turns (cancelled when sending closes or on stop).
  std::optional<PromptFactory> user_prompts;
  std::uint64_t next_session = 0;
  std::unordered_set<asio::steady_timer*> think_timers;
  std::unordered_map<std::uint64_t, RequestCanceller*> cancellers;
  std::vector<std::int64_t> timer_lags;
  RefusalTracker refusals;
  // Credential header values: never in an error message (StreamRecorder, issue 23).
  std::vector<std::string> secrets = credential_values(spec.target.headers);
  std::int64_t epoch = 0;
  std::int64_t window_start = 0;  // absolute steady ns
  std::int64_t window_end = 0;
  std::uint64_t next_index = 0;
  std::uint64_t in_flight = 0;
  // Closed-loop request-count window (spec.window_requests): requests intended in the window so
  // far, and the latest of their intended times.
  std::int64_t window_intended = 0;
  std::int64_t last_window_intended = 0;
  bool stopping = false;
  bool sending_closed = false;
  bool draining = false;
  bool finished = false;

  asio::awaitable<void> main();
  // Runs one request; returns its error class, from which a closed-loop slot decides whether
  // to back off (kConnect: refused, the target is not listening; kClientResources: this
  // process is short of descriptors, ports or socket memory).
  // trace_record: the trace record to send (a trace replay); kByIndex: the workload's next item.
  static constexpr std::size_t kByIndex = ~std::size_t{0};
  // A conversation turn's request (run_session): its prompt goes in, its outcome comes out.
  struct TurnIo {
    ConversationTurn tag;
    PromptItem item;
    std::string reply;                // the answer's text as streamed
    std::size_t reply_max_bytes = 0;  // what the session's history has left (kMaxHistoryBytes)
    bool reply_truncated = false;
    bool ok = false;
    bool cancelled = false;  // cut by the step's end, a drain timeout or a stop: not a failure
    std::int64_t t_end_abs = 0;
    std::int32_t input_tokens = -1;
    std::int32_t output_tokens = -1;
  };
  asio::awaitable<ErrorClass> run_one(std::uint64_t index, std::int64_t t_intended_abs,
                                      std::size_t trace_record = kByIndex, TurnIo* turn = nullptr);
  // One conversation session whose first turn is intended at first_intended_abs (already
  // counted as intended when first_counted). Returns its last turn's error class.
  asio::awaitable<ErrorClass> run_session(std::int64_t first_intended_abs, bool first_counted);
  // How long a closed-loop slot pauses after a request failed with `error`, its
  // kClientResources failures in a row counted in client_resource_failures (reset otherwise).
  std::int64_t slot_backoff_ns(ErrorClass error, std::uint32_t& client_resource_failures) const;
  // Closed loop with conversations: one user holding sessions back to back.
  asio::awaitable<void> conversation_user();
  void cancel_think_timers();
  void note_connect_outcome(const analysis::RequestSample& sample);
  asio::awaitable<void> closed_worker();
  asio::awaitable<void> open_scheduler();
  asio::awaitable<void> trace_scheduler();
  // Waits until `at` (absolute steady ns) unless it has passed; false when stopped meanwhile.
  asio::awaitable<bool> wait_until(std::int64_t at);
  // An arrival due at `at` was taken from the schedule: counted, then sent unless the in-flight
  // cap refuses it (counted as dropped). trace_record as for run_one().
  void dispatch(std::int64_t at, std::size_t trace_record);
  asio::awaitable<void> ticker();
  asio::awaitable<bool> discover_model();
  asio::awaitable<void> calibrate();
  asio::awaitable<std::int32_t> tokenize_count(const std::string& text);
  asio::awaitable<std::int32_t> usage_probe(const std::string& text);
  // A set-up request (model discovery, /tokenize, usage probe): at most `cap_ns`, and at most
  // the plan's first-token timeout; cancelled by on_stop() (cancel, SIGTERM) like any request.
  asio::awaitable<FetchResult> setup_fetch(const OutgoingRequest& req, std::int64_t cap_ns);
  PromptItem next_item(std::uint64_t index, std::size_t trace_record);
  // A synthetic prompt of the given lengths, its prefix group drawn with `draw_key` (the
  // request's index, or a conversation turn's key).
  PromptItem grouped_item(std::uint64_t index, std::uint64_t draw_key, PlannedLengths lengths);
  void on_stop();
  void cancel_all();
  void emit_progress();
  void finalize();
};

void StepRun::cancel_all() {
  // Copy: cancel() closes sockets, completions run later on this thread.
  std::vector<RequestCanceller*> all;
  all.reserve(cancellers.size());
  for (auto& [idx, c] : cancellers) all.push_back(c);
  for (auto* c : all) c->cancel();
}

void StepRun::on_stop() {
  if (stopping) return;
  stopping = true;
  result.cancelled = true;
  if (epoch != 0 && !finished) {
    // Stopped inside the window: the window ends now, so rates are over the time that ran.
    // Before it opened (warm-up, calibration), it is empty: the step measured nothing.
    const std::int64_t now = HttpClient::now_ns();
    if (now < window_end) result.window_end_ns = std::max(now, window_start) - epoch;
  }
  window_timer.cancel();
  sched_timer.cancel();
  drain_timer.cancel();
  cancel_think_timers();
  cancel_all();
}

void StepRun::cancel_think_timers() {
  for (auto* t : think_timers) t->cancel();
}

void StepRun::emit_progress() {
  if (!progress) return;
  StepProgress p;
  const std::int64_t now = HttpClient::now_ns();
  p.elapsed_ns = now - epoch;
  p.in_window = now >= window_start && now < window_end && !sending_closed;
  p.draining = draining;
  p.intended = result.counts.intended;
  p.sent = result.counts.sent;
  p.completed_ok = result.counts.ok;
  p.failed = result.counts.failed;
  p.cancelled = result.counts.cancelled;
  p.in_flight = in_flight;
  p.dropped_arrivals = result.dropped_arrivals;
  p.output_tokens = result.counts.output_tokens;
  try {
    progress(p);
  } catch (const std::exception& e) {
    logger()->warn("progress callback threw: {}", e.what());
  }
}

PromptItem StepRun::grouped_item(std::uint64_t index, std::uint64_t draw_key,
                                 PlannedLengths lengths) {
  const int group = prefix_group_of(spec.workload.prefix_groups, spec.seed, draw_key);
  return prompts->make(
      index, lengths, calibrator, group,
      group >= 0 ? spec.workload.prefix_groups[static_cast<std::size_t>(group)].prefix_tokens : 0);
}

PromptItem StepRun::next_item(std::uint64_t index, std::size_t trace_record) {
  if (trace) {
    // A trace replay names its record; any other load takes the trace in order (wrapping).
    const auto& records = trace->records();
    const auto& r = records[trace_record != kByIndex ? trace_record : index % records.size()];
    return prompts->from_blocks(index, r.input_tokens, r.output_tokens, r.hash_ids,
                                spec.workload.trace_block_tokens, calibrator);
  }
  if (!mix_prompts.empty()) {
    // A workload mix: the class's own lengths and prefix (step_spec.h, mix_class_of).
    const int c = mix_class_of(spec.workload.mix, spec.seed, index);
    const auto& mc = spec.workload.mix[static_cast<std::size_t>(c)];
    return mix_prompts[static_cast<std::size_t>(c)].next(
        index, calibrator, mc.prefix_tokens > 0 ? kMixPrefixGroupBase + c : -1, mc.prefix_tokens);
  }
  if (prompts) return grouped_item(index, index, prompts->next_lengths());
  const DatasetEntry& e = cursor->next();
  PromptItem item;
  item.prompt = e.prompt;
  item.messages_json = e.messages_json;
  item.planned_input_tokens = e.input_tokens_hint;
  item.planned_output_tokens = e.max_tokens > 0 ? e.max_tokens : dataset_output->next();
  return item;
}

asio::awaitable<ErrorClass> StepRun::run_one(std::uint64_t index, std::int64_t t_intended_abs,
                                             std::size_t trace_record, TurnIo* turn) {
  ++in_flight;
  ++result.counts.sent;
  analysis::RequestSample sample;
  sample.index = index;
  sample.t_intended_ns = t_intended_abs - epoch;
  std::string response_id;
  PromptItem item = turn ? std::move(turn->item) : next_item(index, trace_record);
  sample.planned_input_tokens = item.planned_input_tokens;
  sample.planned_output_tokens = item.planned_output_tokens;

  RequestBodySpec body;
  body.api = spec.target.api;
  body.model = result.model;
  body.prompt = std::move(item.prompt);
  body.messages_json = std::move(item.messages_json);
  body.max_tokens = item.planned_output_tokens;
  if (spec.workload.send_min_tokens && item.planned_output_tokens > 0)
    body.min_tokens = item.planned_output_tokens;
  body.ignore_eos = spec.workload.ignore_eos;
  body.temperature = spec.workload.temperature;
  body.stream = spec.target.stream;
  body.extra_body_json = spec.workload.extra_body_json;
  auto built = RequestBuilder::build(body);

  if (!built) {
    sample.error = ErrorClass::kProtocol;
    sample.error_message = "cannot build request: " + built.error();
    sample.t_end_ns = HttpClient::now_ns() - epoch;
  } else {
    OutgoingRequest req;
    req.method = "POST";
    req.path = std::string(api_path(spec.target.api));
    req.body = std::move(built).value();
    req.accept = spec.target.stream ? "text/event-stream" : "application/json";
    req.headers = spec.target.headers;
    RecorderConfig rc;
    rc.api = spec.target.api;
    rc.streaming = spec.target.stream;
    rc.epoch_ns = epoch;
    rc.start_ns = HttpClient::now_ns();
    rc.first_token_timeout_ns = spec.deadlines.first_token_ms * kMs;
    rc.idle_timeout_ns = spec.deadlines.idle_ms * kMs;
    rc.total_timeout_ns = spec.deadlines.total_ms * kMs;
    rc.record_token_times = spec.record_token_times;
    rc.secrets = &secrets;
    if (turn) {
      rc.reply_text = &turn->reply;
      rc.reply_max_bytes = turn->reply_max_bytes;
    }
    if (abandons(spec.workload.abandon, spec.seed,
                 turn ? turn_draw_key(turn->tag.session, turn->tag.turn) : index)) {
      // The user leaves: after_ms on the user's clock (from t_intended), or after N tokens.
      if (spec.workload.abandon.after_ms > 0)
        rc.abandon_at_ns = t_intended_abs + spec.workload.abandon.after_ms * kMs;
      rc.abandon_after_token_events = spec.workload.abandon.after_tokens;
    }
    StreamRecorder recorder(rc, sample);
    RequestCanceller canceller;
    cancellers.emplace(index, &canceller);
    if (stopping) canceller.cancel();
    ExchangeResult x;
    try {
      x = co_await client->exchange(req, recorder, &canceller);
    } catch (const std::exception& e) {
      x.error = ErrorClass::kProtocol;
      x.error_message = std::string("internal error: ") + e.what();
      x.t_end_ns = HttpClient::now_ns();
    }
    cancellers.erase(index);
    recorder.finish(x);
    response_id = recorder.response_id();
    if (turn) turn->reply_truncated = recorder.reply_truncated();
    const bool in_window = t_intended_abs >= window_start && t_intended_abs < window_end;
    if (sample.ok() && in_window) {
      for (const auto gap : recorder.itl_gaps_ns()) result.itl_ns.record(static_cast<double>(gap));
      if (!result.itl_ns_by_class.empty()) {
        auto& by_class = result.itl_ns_by_class[static_cast<std::size_t>(
            mix_class_of(spec.workload.mix, spec.seed, index))];
        for (const auto gap : recorder.itl_gaps_ns()) by_class.record(static_cast<double>(gap));
      }
    }
    if (sample.ok() && prompts && item.words > 0 && sample.input_tokens >= 0) {
      calibrator.observe(item.words, sample.input_tokens);
    }
  }
  if (sample.ok()) {
    ++result.counts.ok;
    if (sample.output_tokens > 0)
      result.counts.output_tokens += static_cast<std::uint64_t>(sample.output_tokens);
  } else if (sample.error == ErrorClass::kCancelled) {
    ++result.counts.cancelled;
  } else if (sample.error == ErrorClass::kAbandoned) {
    ++result.counts.abandoned;
  } else {
    ++result.counts.failed;
  }
  const ErrorClass error = sample.error;
  note_connect_outcome(sample);
  if (turn) {
    turn->ok = sample.ok();
    turn->cancelled = sample.error == ErrorClass::kCancelled;
    turn->t_end_abs = sample.t_end_ns + epoch;
    turn->input_tokens = sample.input_tokens;
    turn->output_tokens = sample.output_tokens;
    result.conversation.turns.push_back(turn->tag);  // parallel to samples
  }
  result.samples.push_back(std::move(sample));
  result.response_ids.push_back(std::move(response_id));
  --in_flight;
  if (in_flight == 0 && sending_closed) drain_timer.cancel();
  co_return error;
}

std::int64_t StepRun::slot_backoff_ns(ErrorClass error,
                                      std::uint32_t& client_resource_failures) const {
  if (error == ErrorClass::kConnect) {
    client_resource_failures = 0;
    return refusals.backoff_ns();
  }
  if (error != ErrorClass::kClientResources) {
    client_resource_failures = 0;
    return 0;
  }
  // This process ran out of descriptors, ports or socket memory: the slot waits 10 ms doubling
  // to 1 s, as for a refusal, but by itself (the slots holding connections keep running), so a
  // step at 900 slots with room for 200 records a few hundred such failures a second, not
  // hundreds of thousands, and the step still ends inconclusive (verdict.h, client_resources).
  const std::uint32_t doublings = std::min<std::uint32_t>(client_resource_failures++, 20);
  return std::min(RefusalTracker::kMaxBackoffNs, RefusalTracker::kFirstBackoffNs << doublings);
}

void StepRun::note_connect_outcome(const analysis::RequestSample& sample) {
  if (sample.error == ErrorClass::kConnect) {
    refusals.on_refused(HttpClient::now_ns());
  } else if (sample.t_headers_ns >= 0 || (client && client->connections_opened() > 0)) {
    // Headers came, or some connection of the step was accepted: the target is there (a slow
    // one may not have finished a request yet), so it is never declared unreachable.
    refusals.on_answer();
  }
  if (refusals.unreachable(HttpClient::now_ns()) && result.fatal_error.empty() && !stopping) {
    // The target never answered in this step and keeps refusing: an error of the target, not
    // a measurement (the step ends; its plan fails with this message).
    result.fatal_error = "target unreachable: " + std::to_string(refusals.refused()) +
                         " connection attempts refused or failed over " +
                         std::to_string(refusals.span_ms(HttpClient::now_ns())) +
                         " ms and none answered (last: " + sample.error_message + ")";
    on_stop();
  }
}

asio::awaitable<void> StepRun::closed_worker() {
  asio::steady_timer backoff(io);
  std::uint32_t client_resource_failures = 0;  // this slot's, in a row
  while (!stopping && !sending_closed) {
    const std::int64_t now = HttpClient::now_ns();
    if (now >= window_end) break;
    if (spec.window_requests > 0 && now >= window_start) {
      if (window_intended >= spec.window_requests) {
        // The (N+1)-th would start now: the window ends here, holding exactly N (ended at the
        // N-th start instead, N / length would overstate the rate by N / (N − 1)).
        window_end = std::max(now, last_window_intended + 1);
        result.window_end_ns = window_end - epoch;
        window_timer.cancel();
        break;
      }
      ++window_intended;
      last_window_intended = now;
    }
    const std::uint64_t index = next_index++;
    ++result.counts.intended;
    // Closed loop: t_intended is when the slot freed, i.e. now (docs/metrics.md §2.1).
    const ErrorClass error = co_await run_one(index, now);
    const std::int64_t pause_ns = slot_backoff_ns(error, client_resource_failures);
    if (pause_ns > 0 && !stopping) {
      // A refused connection (or one this process had no descriptor for) frees the slot at
      // once: without a pause, N workers would make tens of thousands of attempts a second.
      backoff.expires_after(std::chrono::nanoseconds(pause_ns));
      co_await backoff.async_wait(use_nothrow);
    }
  }
}

asio::awaitable<bool> StepRun::wait_until(std::int64_t at) {
  if (HttpClient::now_ns() < at) {
    sched_timer.expires_at(tp(at));
    co_await sched_timer.async_wait(use_nothrow);
    if (stopping) co_return false;
  }
  co_return true;
}

void StepRun::dispatch(std::int64_t at, std::size_t trace_record) {
  // The schedule never waits for the server: when we wake late, every due arrival is sent
  // at once and keeps its planned time as t_intended (coordinated-omission correct,
  // docs/metrics.md §2.1).
  timer_lags.push_back(HttpClient::now_ns() - at);
  ++result.counts.intended;
  if (in_flight >= static_cast<std::uint64_t>(spec.load.in_flight_cap)) {
    // Counted where the verdict counts intended requests: the window (warm-up drops apart).
    if (at >= window_start)
      ++result.dropped_arrivals;
    else
      ++result.dropped_arrivals_warmup;
    return;
  }
  if (spec.workload.conversation.enabled()) {
    asio::co_spawn(io, run_session(at, true), asio::detached);  // the arrival of a session
    return;
  }
  asio::co_spawn(io, run_one(next_index++, at, trace_record), asio::detached);
}

asio::awaitable<void> StepRun::open_scheduler() {
  ArrivalProcess arrivals(spec.load.rate, spec.load.inter_arrival, spec.load.burstiness,
                          spec.seed ^ 0xa5a5a5a5ULL);
  // The window carries exactly the planned number of arrivals (arrival_process.h): the rate a
  // step is judged at is the rate it offered, not a Poisson draw ±10 % around it.
  arrivals.set_exact_count_segments({spec.warmup_s, spec.warmup_s + planned_window_s(spec)});
  while (!stopping) {
    const auto next = arrivals.next();
    if (!next) break;
    const std::int64_t at = epoch + *next;
    if (at >= window_end) break;
    if (!co_await wait_until(at)) break;
    dispatch(at, kByIndex);
  }
}

asio::awaitable<void> StepRun::trace_scheduler() {
  // The trace's own times, sped up: record i is due at its timestamp / speed (agent/trace.h).
  const auto& records = trace->records();
  for (std::size_t i = 0; i < records.size() && !stopping; ++i) {
    const std::int64_t at = epoch + replay_time_ns(records[i], spec.load.trace_speed);
    if (at >= window_end) break;
    if (!co_await wait_until(at)) break;
    dispatch(at, i);
  }
}

asio::awaitable<ErrorClass> StepRun::run_session(std::int64_t first_intended_abs,
                                                 bool first_counted) {
  const ConversationSpec& conv = spec.workload.conversation;
  const std::uint64_t session = next_session++;
  SessionRecord record;
  record.session = session;
  record.planned_turns = session_turns(conv, spec.seed, session);
  record.end = SessionEnd::kCompleted;
  ConversationHistory history(spec.target.api);
  asio::steady_timer think(io);
  std::int64_t t_intended = first_intended_abs;
  std::int32_t context_tokens = 0;  // the last turn's prompt + reply (usage, else planned)
  ErrorClass last_error = ErrorClass::kNone;
  for (std::int32_t turn = 1; turn <= record.planned_turns; ++turn) {
    if (turn > 1) {
      // The user reads the reply, thinks, then sends: the turn is intended then, however late
      // the agent wakes (schedule lag, docs/metrics.md §2.1).
      t_intended += think_time_ns(conv, spec.seed, session, turn);
      if (HttpClient::now_ns() < t_intended && !stopping && !sending_closed) {
        think_timers.insert(&think);
        think.expires_at(tp(t_intended));
        co_await think.async_wait(use_nothrow);
        think_timers.erase(&think);
      }
      if (stopping || sending_closed || t_intended >= window_end) {
        record.end = SessionEnd::kWindowEnd;
        break;
      }
    }
    const std::uint64_t index = next_index++;
    TurnIo io_turn;
    io_turn.tag = {session, turn};
    // The turn's lengths and prefix group are keyed on (session, turn), not on the request's
    // index, which depends on how sessions interleave (virtual_step_backend.cc draws the same).
    const std::uint64_t key = turn_draw_key(session, turn);
    if (turn == 1) {
      io_turn.item = grouped_item(index, key, prompts->lengths_at(key));
    } else {
      PromptItem user = user_prompts->make(index, user_prompts->lengths_at(key), calibrator);
      const std::int32_t planned_input = context_tokens + user.planned_input_tokens;
      if ((conv.max_context_tokens > 0 &&
           planned_input + std::max(0, user.planned_output_tokens) > conv.max_context_tokens) ||
          history.bytes() + user.prompt.size() > kMaxHistoryBytes) {
        record.end = SessionEnd::kContextLimit;
        break;
      }
      io_turn.item.planned_input_tokens = planned_input;
      io_turn.item.planned_output_tokens = user.planned_output_tokens;
      io_turn.item.prompt = std::move(user.prompt);
      io_turn.item.words = 0;  // the history's words are not all ours: no calibration feedback
    }
    history.add_user(std::move(io_turn.item.prompt));
    io_turn.reply_max_bytes = kMaxHistoryBytes - std::min(kMaxHistoryBytes, history.bytes());
    if (spec.target.api == ApiKind::kChat) {
      io_turn.item.prompt.clear();
      io_turn.item.messages_json = history.messages_json();
    } else {
      io_turn.item.prompt = history.prompt();
    }
    if (turn > 1 || !first_counted) ++result.counts.intended;
    const std::int32_t planned_input = io_turn.item.planned_input_tokens;
    const std::int32_t planned_output = io_turn.item.planned_output_tokens;
    last_error = co_await run_one(index, t_intended, kByIndex, &io_turn);
    record.turns_sent = turn;
    if (!io_turn.ok) {
      // A turn the step's end cancelled cuts its session like the window's end does.
      record.end = io_turn.cancelled ? SessionEnd::kWindowEnd : SessionEnd::kFailed;
      break;
    }
    context_tokens = (io_turn.input_tokens >= 0 ? io_turn.input_tokens : planned_input) +
                     (io_turn.output_tokens >= 0 ? io_turn.output_tokens : planned_output);
    if (io_turn.reply_truncated) {
      record.end = turn < record.planned_turns ? SessionEnd::kContextLimit : record.end;
      break;
    }
    history.add_reply(std::move(io_turn.reply));
    t_intended = io_turn.t_end_abs;
  }
  if (record.turns_sent > 0) result.conversation.sessions.push_back(record);
  co_return last_error;
}

asio::awaitable<void> StepRun::conversation_user() {
  asio::steady_timer backoff(io);
  std::uint32_t client_resource_failures = 0;  // this slot's, in a row
  while (!stopping && !sending_closed) {
    const std::int64_t now = HttpClient::now_ns();
    if (now >= window_end) break;
    // Closed loop: a new session starts the moment the user's previous one ended.
    const ErrorClass error = co_await run_session(now, false);
    const std::int64_t pause_ns = slot_backoff_ns(error, client_resource_failures);
    if (pause_ns > 0 && !stopping) {
      backoff.expires_after(std::chrono::nanoseconds(pause_ns));
      co_await backoff.async_wait(use_nothrow);
    }
  }
}

asio::awaitable<void> StepRun::ticker() {
  const std::int64_t sample_every = spec.in_flight_sample_ms * kMs;
  const std::int64_t progress_every = spec.progress_interval_ms * kMs;
  std::int64_t next_sample = epoch;
  std::int64_t next_progress = epoch + progress_every;
  while (!finished) {
    const std::int64_t now = HttpClient::now_ns();
    if (now >= next_sample) {
      result.in_flight_series.emplace_back(now - epoch, static_cast<std::int32_t>(in_flight));
      next_sample += sample_every;
      if (next_sample <= now) next_sample = now + sample_every;  // skip missed ticks
    }
    if (now >= next_progress) {
      emit_progress();
      next_progress += progress_every;
      if (next_progress <= now) next_progress = now + progress_every;
    }
    tick_timer.expires_at(tp(std::min(next_sample, next_progress)));
    co_await tick_timer.async_wait(use_nothrow);
  }
}

asio::awaitable<bool> StepRun::discover_model() {
  OutgoingRequest req;
  req.method = "GET";
  req.path = "/v1/models";
  req.accept = "application/json";
  req.headers = spec.target.headers;
  auto r = co_await setup_fetch(req, kDiscoveryTimeoutNs);
  if (stopping) co_return false;  // cancelled: the step ends cancelled, not failed
  if (r.exchange.error != ErrorClass::kNone || r.exchange.http_status != 200) {
    result.fatal_error =
        "target.model: not given and GET /v1/models failed: " +
        (r.exchange.error != ErrorClass::kNone ? r.exchange.error_message
                                               : "HTTP " + std::to_string(r.exchange.http_status));
    co_return false;
  }
  json doc = json::parse(r.body, nullptr, false);
  if (doc.is_object() && doc.contains("data") && doc["data"].is_array() && !doc["data"].empty() &&
      doc["data"][0].is_object() && doc["data"][0].contains("id") &&
      doc["data"][0]["id"].is_string()) {
    result.model = doc["data"][0]["id"].get<std::string>();
    co_return true;
  }
  result.fatal_error = "target.model: not given and GET /v1/models returned no model id";
  co_return false;
}

asio::awaitable<std::int32_t> StepRun::tokenize_count(const std::string& text) {
  // vLLM shape first ({"model", "prompt"} → {"count"}), then llama.cpp ({"content"} →
  // {"tokens": [...]}). llama.cpp answers the vLLM shape with 200 {"tokens": []}, which
  // TokenizeResponse reads as "not understood" so that the second shape is tried.
  for (int shape = 0; shape < 2; ++shape) {
    json body =
        shape == 0 ? json{{"model", result.model}, {"prompt", text}} : json{{"content", text}};
    OutgoingRequest req;
    req.path = "/tokenize";
    req.accept = "application/json";
    req.body = body.dump();
    req.headers = spec.target.headers;
    auto r = co_await setup_fetch(req, kProbeTimeoutNs);
    if (no_answer(r)) co_return kProbeNoAnswer;
    if (r.exchange.error != ErrorClass::kNone || r.exchange.http_status != 200) {
      if (r.exchange.http_status == 404) co_return -1;  // no such endpoint
      continue;
    }
    const std::int32_t n = TokenizeResponse::count(r.body, text.size());
    if (n >= 0) co_return n;
  }
  co_return -1;
}

asio::awaitable<FetchResult> StepRun::setup_fetch(const OutgoingRequest& req, std::int64_t cap_ns) {
  std::int64_t timeout = cap_ns;
  if (spec.deadlines.first_token_ms > 0)
    timeout = std::min(timeout, spec.deadlines.first_token_ms * kMs);
  RequestCanceller canceller;
  if (stopping) canceller.cancel();
  cancellers.emplace(kSetupCancellerKey, &canceller);
  FetchResult r = co_await client->fetch(req, timeout, 4 * 1024 * 1024, &canceller);
  cancellers.erase(kSetupCancellerKey);
  co_return r;
}

asio::awaitable<std::int32_t> StepRun::usage_probe(const std::string& text) {
  RequestBodySpec b;
  b.api = spec.target.api;
  b.model = result.model;
  b.prompt = text;
  b.max_tokens = 1;
  b.temperature = spec.workload.temperature;
  b.stream = false;
  b.extra_body_json = spec.workload.extra_body_json;
  auto built = RequestBuilder::build(b);
  if (!built) co_return -1;
  OutgoingRequest req;
  req.path = std::string(api_path(spec.target.api));
  req.accept = "application/json";
  req.body = std::move(built).value();
  req.headers = spec.target.headers;
  auto r = co_await setup_fetch(req, kProbeTimeoutNs);
  if (no_answer(r)) co_return kProbeNoAnswer;
  if (r.exchange.error != ErrorClass::kNone || r.exchange.http_status != 200) co_return -1;
  json doc = json::parse(r.body, nullptr, false);
  if (doc.is_object() && doc.contains("usage") && doc["usage"].is_object() &&
      doc["usage"].contains("prompt_tokens") && doc["usage"]["prompt_tokens"].is_number_integer())
    co_return doc["usage"]["prompt_tokens"].get<std::int32_t>();
  co_return -1;
}

asio::awaitable<void> StepRun::calibrate() {
  auto& info = result.calibration;
  info.method = "default";
  info.tokens_per_word_initial = calibrator.tokens_per_word();
  if (!spec.workload.calibrate) {
    info.note = "calibration disabled by the plan";
    co_return;
  }
  // Two probe sizes around the planned mean give slope (tokens/word) and intercept.
  double planned_mean = spec.workload.planned_input_mean();
  if (trace) {
    double sum = 0;
    for (const auto& r : trace->records()) sum += r.input_tokens;
    planned_mean = sum / static_cast<double>(trace->records().size());
  }
  const double mean = std::max(16.0, planned_mean);
  const std::int32_t w_small = 16;
  const std::int32_t w_large = std::max<std::int32_t>(64, static_cast<std::int32_t>(mean / 1.3));
  const std::string small = prompts->probe_text(w_small, 1'000'000'001ULL);
  const std::string large = prompts->probe_text(w_large, 1'000'000'002ULL);
  auto unanswered = [&info, this] {
    info.note = "the target did not answer a calibration probe within " +
                std::to_string(
                    std::min<std::int64_t>(kProbeTimeoutNs / kMs, spec.deadlines.first_token_ms)) +
                " ms; default ratio used";
  };
  const std::int32_t ts = co_await tokenize_count(small);
  if (stopping) co_return;
  if (ts == kProbeNoAnswer) {
    unanswered();
    co_return;
  }
  const std::int32_t tl = ts >= 0 ? co_await tokenize_count(large) : -1;
  if (stopping) co_return;
  if (tl == kProbeNoAnswer) {
    unanswered();
    co_return;
  }
  if (ts >= 0 && tl >= 0) {
    calibrator.fit({{w_small, ts}, {w_large, tl}});
    info.method = "tokenize";
    if (spec.target.api == ApiKind::kChat) {
      // /tokenize sees raw text; the chat template adds tokens only usage shows.
      const std::int32_t u = co_await usage_probe(large);
      if (u >= 0) {
        calibrator = LengthCalibrator(calibrator.tokens_per_word(),
                                      u - calibrator.tokens_per_word() * w_large);
        info.method = "tokenize+usage-probe";
      }
    }
  } else {
    const std::int32_t us = co_await usage_probe(small);
    if (stopping) co_return;
    if (us == kProbeNoAnswer) {
      unanswered();
      co_return;
    }
    const std::int32_t ul = us >= 0 ? co_await usage_probe(large) : -1;
    if (us >= 0 && ul >= 0) {
      calibrator.fit({{w_small, us}, {w_large, ul}});
      info.method = "usage-probe";
      info.note = "no /tokenize on the target";
    } else {
      info.note = "neither /tokenize nor usage.prompt_tokens available; default ratio used";
    }
  }
  info.tokens_per_word_initial = calibrator.tokens_per_word();
  info.overhead_tokens = calibrator.overhead_tokens();
}

asio::awaitable<void> StepRun::main() {
  if (result.model.empty()) {
    if (!(co_await discover_model())) co_return;
  }
  if (stopping) co_return;
  if (prompts) {
    co_await calibrate();
  } else {
    result.calibration.method = "dataset";
  }
  if (stopping) co_return;

  epoch = HttpClient::now_ns();
  result.epoch_steady_ns = epoch;
  window_start = epoch + static_cast<std::int64_t>(std::llround(spec.warmup_s * 1e9));
  window_end = window_start + static_cast<std::int64_t>(std::llround(planned_window_s(spec) * 1e9));
  result.window_start_ns = window_start - epoch;
  result.window_end_ns = window_end - epoch;
  CpuMeter cpu;
  cpu.start();
  asio::co_spawn(io, ticker(), asio::detached);

  if (spec.load.kind == LoadKind::kClosed && spec.workload.conversation.enabled()) {
    for (std::int32_t i = 0; i < spec.load.concurrency; ++i)
      asio::co_spawn(io, conversation_user(), asio::detached);
  } else if (spec.load.kind == LoadKind::kClosed) {
    for (std::int32_t i = 0; i < spec.load.concurrency; ++i)
      asio::co_spawn(io, closed_worker(), asio::detached);
  } else if (spec.load.kind == LoadKind::kTrace) {
    asio::co_spawn(io, trace_scheduler(), asio::detached);
  } else {
    asio::co_spawn(io, open_scheduler(), asio::detached);
  }
  if (!stopping && HttpClient::now_ns() < window_end) {
    window_timer.expires_at(tp(window_end));
    co_await window_timer.async_wait(use_nothrow);
  }
  sending_closed = true;
  draining = true;
  sched_timer.cancel();
  cancel_think_timers();
  if (spec.drain == DrainPolicy::kCancel || stopping) {
    cancel_all();
  } else if (in_flight > 0) {
    drain_timer.expires_at(tp(HttpClient::now_ns() +
                              static_cast<std::int64_t>(std::llround(spec.drain_timeout_s * 1e9))));
    co_await drain_timer.async_wait(use_nothrow);
    if (in_flight > 0) cancel_all();
  }
  // Cancelled requests complete promptly (their sockets are closed); wait for them.
  while (in_flight > 0) {
    drain_timer.expires_after(std::chrono::milliseconds(1));
    co_await drain_timer.async_wait(use_nothrow);
  }
  result.end_ns = HttpClient::now_ns() - epoch;
  result.cpu = cpu.stop();
  result.client_cpu_utilisation = result.cpu.thread_utilisation();
  result.completed = !stopping;
  finished = true;
  tick_timer.cancel();
  emit_progress();
  client->close_idle();
}

void StepRun::finalize() {
  // Samples sorted by index (order of intention), response ids kept parallel.
  std::vector<std::size_t> order(result.samples.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [this](std::size_t a, std::size_t b) {
    return result.samples[a].index < result.samples[b].index;
  });
  std::vector<analysis::RequestSample> samples;
  std::vector<std::string> ids;
  samples.reserve(order.size());
  ids.reserve(order.size());
  for (auto i : order) {
    samples.push_back(std::move(result.samples[i]));
    ids.push_back(std::move(result.response_ids[i]));
  }
  result.samples = std::move(samples);
  result.response_ids = std::move(ids);
  if (!result.conversation.turns.empty()) {
    std::vector<ConversationTurn> turns;
    turns.reserve(order.size());
    for (auto i : order) turns.push_back(result.conversation.turns[i]);
    result.conversation.turns = std::move(turns);
  }

  std::vector<std::int64_t> lags;
  std::vector<std::int64_t> dispatch;
  lags.reserve(result.samples.size());
  dispatch.reserve(result.samples.size());
  for (const auto& s : result.samples) {
    if (s.t_send_ns < 0) continue;
    lags.push_back(s.t_send_ns - s.t_intended_ns);
    dispatch.push_back(s.t_send_ns - s.t_intended_ns - std::max<std::int64_t>(0, s.connect_ns) -
                       std::max<std::int64_t>(0, s.tls_ns));
    if (!s.ok()) continue;
    if (s.output_tokens_estimated || s.input_tokens < 0) ++result.counts.usage_missing;
    if (s.planned_output_tokens > 0 && s.output_tokens != s.planned_output_tokens)
      ++result.counts.output_length_mismatch;
  }
  result.schedule_lag = exact_lag_stats(std::move(lags));
  result.dispatch_lag = exact_lag_stats(std::move(dispatch));
  if (result.counts.output_length_mismatch > 0) {
    logger()->warn(
        "{} of {} ok requests returned a different output length than planned "
        "(max_tokens{}): the target may not honour the length (docs/metrics.md §9.2)",
        result.counts.output_length_mismatch, result.counts.ok,
        spec.workload.ignore_eos ? " + ignore_eos" : "");
  }
  if (result.counts.usage_missing > 0) {
    logger()->warn("{} ok requests had no usage: output tokens counted from events (estimated)",
                   result.counts.usage_missing);
  }
  result.timer_lag = exact_lag_stats(std::move(timer_lags));

  auto& info = result.calibration;
  info.tokens_per_word_final = calibrator.tokens_per_word();
  double planned = 0, real = 0, abs_err = 0;
  std::uint64_t n = 0;
  for (const auto& s : result.samples) {
    if (s.input_tokens < 0 || s.planned_input_tokens < 0) continue;
    ++n;
    planned += s.planned_input_tokens;
    real += s.input_tokens;
    abs_err += std::abs(s.input_tokens - s.planned_input_tokens);
  }
  info.samples_with_usage = n;
  if (n > 0) {
    info.planned_input_mean_tokens = planned / static_cast<double>(n);
    info.real_input_mean_tokens = real / static_cast<double>(n);
    info.mean_abs_error_tokens = abs_err / static_cast<double>(n);
  }
  if (client) result.connections_opened = client->connections_opened();
}

}  // namespace

StepResult StepRunner::run(const StepSpec& spec, std::stop_token stop,
                           const ProgressCallback& progress) {
  StepRun run(spec, progress);
  if (auto errors = validate(spec); !errors.empty()) {
    std::string all;
    for (const auto& e : errors) all += (all.empty() ? "" : "; ") + e;
    run.result.fatal_error = all;
    return std::move(run.result);
  }
  run.result.model = spec.target.model;
  const auto endpoint = parse_endpoint(spec.target.base_url);
  HttpClientOptions copts;
  copts.tls = spec.target.tls;
  copts.connect_timeout_ns = spec.deadlines.connect_ms * kMs;
  copts.allowed = net::AddressFilter(spec.target.address_allowlist);
  try {
    run.client = std::make_unique<HttpClient>(run.io, *endpoint, copts);
  } catch (const std::exception& e) {
    run.result.fatal_error = std::string("target.tls: ") + e.what();
    return std::move(run.result);
  }
  if (spec.workload.source == WorkloadSource::kTrace) {
    DatasetLimits limits;
    limits.max_bytes = spec.workload.dataset_max_bytes;
    auto tr = Trace::load(spec.workload.trace_path, spec.workload.trace_format, limits);
    if (!tr) {
      run.result.fatal_error = "workload.trace.path: " + tr.error();
      return std::move(run.result);
    }
    run.trace.emplace(tr->window(spec.workload.trace_window));
    if (run.trace->records().empty()) {
      run.result.fatal_error = "workload.trace: no request of the trace lies in its window";
      return std::move(run.result);
    }
    // Synthetic text for the trace's lengths and blocks (calibrated like synthetic prompts).
    run.prompts.emplace(spec.workload.input_tokens, spec.workload.output_tokens, 0, spec.seed,
                        spec.content_seed);
  } else if (spec.workload.source == WorkloadSource::kSynthetic) {
    run.prompts.emplace(spec.workload.input_tokens, spec.workload.output_tokens,
                        spec.workload.shared_prefix_tokens, spec.seed, spec.content_seed);
    const auto content = [&](std::uint64_t salted) {
      return spec.content_seed != 0 ? spec.content_seed ^ salted : 0;
    };
    if (spec.workload.conversation.enabled())
      run.user_prompts.emplace(spec.workload.conversation.user_tokens, spec.workload.output_tokens,
                               0, spec.seed ^ 0x7573657273ULL, content(0x7573657273ULL));
    for (std::size_t c = 0; c < spec.workload.mix.size(); ++c)
      run.mix_prompts.emplace_back(spec.workload.mix[c].input_tokens,
                                   spec.workload.mix[c].output_tokens, 0,
                                   mix_class_seed(spec.seed, c), content(mix_class_seed(1, c)));
    run.result.itl_ns_by_class.resize(spec.workload.mix.size());
  } else {
    DatasetLimits limits;
    limits.max_bytes = spec.workload.dataset_max_bytes;
    auto ds = Dataset::load(spec.workload.dataset_path, limits);
    if (!ds) {
      run.result.fatal_error = "workload.dataset_path: " + ds.error();
      return std::move(run.result);
    }
    if (ds->has_messages() && spec.target.api == ApiKind::kCompletions) {
      run.result.fatal_error =
          "workload.dataset_path: dataset has \"messages\" lines but target.api is completions";
      return std::move(run.result);
    }
    run.dataset.emplace(std::move(ds).value());
    run.cursor.emplace(*run.dataset, spec.workload.dataset_order, spec.seed);
    run.dataset_output.emplace(spec.workload.output_tokens, spec.seed ^ 0x77ULL);
  }

  std::stop_callback on_stop(stop, [&run] { asio::post(run.io, [&run] { run.on_stop(); }); });
  asio::co_spawn(run.io, run.main(), [&run](std::exception_ptr e) {
    if (!e) return;
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      run.result.fatal_error = std::string("internal error in the load generator: ") + ex.what();
    }
    run.finished = true;
    run.on_stop();
  });
  run.io.run();
  run.finalize();
  return std::move(run.result);
}

}  // namespace llmcap::agent

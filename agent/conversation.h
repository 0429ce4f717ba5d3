// Multi-turn conversations (workload.conversation, docs/plans.md "Conversations"): simulated
// users who hold sessions of several turns. Each turn's prompt is the whole history so far —
// every earlier user message and the reply the server actually streamed — plus a new user
// message; between a reply's end and the next turn the user thinks.
//
// This header holds the pure parts shared by the load generator (agent/step_runner.cc) and its
// tests: the session plan (turns per session and think times, pure functions of the step seed
// and the session number, so every run and every target sees the same sessions), the history
// of one session and how it becomes a request (chat messages or one completions prompt), and
// the session-level statistics of a step (TTFT by turn index, session durations).
//
// Memory: a session's history is bounded by the plan's max_context_tokens (the session ends
// before a turn that would not fit) and, whatever the plan, by kMaxHistoryBytes.
// Thread-safety: plain values and pure functions; a ConversationHistory belongs to one session.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/api_kind.h"
#include "analysis/length_distribution.h"
#include "analysis/request_sample.h"

namespace llmcap::agent {

struct ConversationSpec {
  // Turns per session: uniform over [turns_min, turns_max]. 0 = not a conversation workload.
  std::int32_t turns_min = 0;
  std::int32_t turns_max = 0;
  // Length of each later turn's new user message (the first turn's is workload.input_tokens).
  analysis::LengthDistribution user_tokens = analysis::LengthDistribution::fixed(64);
  double think_time_s = 0;              // pause from a reply's end to the next turn's send
  bool think_time_exponential = false;  // true: exponential with mean think_time_s
  // > 0: a session ends before a turn whose prompt (estimated from the last turn's
  // usage.prompt_tokens + its output + the new message) plus max_tokens exceeds this.
  std::int32_t max_context_tokens = 0;
  bool enabled() const { return turns_min > 0; }
};

// Hard bound on one session's history text, whatever the plan says (16 MiB).
inline constexpr std::size_t kMaxHistoryBytes = 16u << 20;
// Most turns a session may have (plan limit).
inline constexpr std::int32_t kMaxSessionTurns = 256;

// Turns of session `session` of a step seeded `seed`: a pure function of the two.
std::int32_t session_turns(const ConversationSpec& spec, std::uint64_t seed, std::uint64_t session);
// The think time (ns) before turn `turn` (≥ 2) of `session`: a pure function of the arguments.
std::int64_t think_time_ns(const ConversationSpec& spec, std::uint64_t seed, std::uint64_t session,
                           std::int32_t turn);
// The key of turn `turn` of `session` for the draws made per request (its lengths, its prefix
// group, whether its user abandons it): a pure function of the two, distinct for every (session,
// turn), so a turn gets the same draws however sessions interleave (in real time and in
// virtual time alike). Other workloads key these draws on the request's index.
std::uint64_t turn_draw_key(std::uint64_t session, std::int32_t turn);
// Problems with the spec, each naming its field ("workload.conversation.turns: ..."). Empty: ok.
std::vector<std::string> validate_conversation(const ConversationSpec& spec);

// One session's history: alternating user messages and the server's replies, as sent.
//   chat:        messages [{"role":"user",...}, {"role":"assistant",...}, ...]
//   completions: user₁ + reply₁ + "\n\n" + user₂ + reply₂ + "\n\n" + user₃ … — so each prompt is
//                exactly the previous prompt + its reply + the separator + the new message.
class ConversationHistory {
 public:
  static constexpr std::string_view kCompletionsSeparator = "\n\n";

  explicit ConversationHistory(ApiKind api) : api_(api) {}
  void add_user(std::string text);
  void add_reply(std::string text);
  // The completions prompt (the history as one text).
  std::string prompt() const;
  // The chat messages as a JSON array.
  std::string messages_json() const;
  // Bytes of text held (messages and replies).
  std::size_t bytes() const { return bytes_; }

 private:
  ApiKind api_;
  std::vector<std::string> parts_;  // user, assistant, user, ...
  std::size_t bytes_ = 0;
};

// How a session ended.
enum class SessionEnd : std::uint8_t {
  kCompleted,     // every planned turn answered
  kFailed,        // a turn failed (error, timeout, abandoned): the user leaves
  kContextLimit,  // the next turn would not fit max_context_tokens (or kMaxHistoryBytes)
  kWindowEnd,     // the measurement window ended (or the step was stopped) between turns
};
std::string_view to_string(SessionEnd end);

// Which session and turn (from 1) a sample was.
struct ConversationTurn {
  std::uint64_t session = 0;
  std::int32_t turn = 0;
};

struct SessionRecord {
  std::uint64_t session = 0;
  std::int32_t planned_turns = 0;
  std::int32_t turns_sent = 0;
  SessionEnd end = SessionEnd::kCompleted;
};

// A conversation step's sessions: turns parallel to StepResult::samples (empty for other
// workloads), one record per session that sent at least one turn.
struct ConversationLog {
  std::vector<ConversationTurn> turns;
  std::vector<SessionRecord> sessions;
  bool empty() const { return turns.empty(); }
};

// TTFT (from intended) of turn index `turn` over the turns intended in the window.
struct TurnStats {
  std::int32_t turn = 0;
  std::uint64_t requests = 0;  // turns with this index intended in the window
  std::uint64_t ok = 0;
  std::optional<double> ttft_p50_ms;  // nearest rank over ok turns
  std::optional<double> ttft_p95_ms;
  std::optional<double> input_tokens_mean;  // usage.prompt_tokens of ok turns
};

// Session-level figures of a step: sessions whose first turn was intended in the window.
struct ConversationStats {
  std::uint64_t sessions_started = 0;
  std::uint64_t sessions_completed = 0;
  std::uint64_t sessions_failed = 0;
  std::uint64_t sessions_context_limit = 0;
  std::uint64_t sessions_cut = 0;     // ended by the window end
  double turns_per_session_mean = 0;  // turns sent, over started sessions
  // Completed sessions: first turn's intended send time → last reply's end.
  std::optional<double> duration_p50_s;
  std::optional<double> duration_p95_s;
  std::optional<double> duration_mean_s;
  std::optional<double> duration_max_s;
  std::vector<TurnStats> by_turn;  // turn 1, 2, ...
};

ConversationStats conversation_stats(const std::vector<analysis::RequestSample>& samples,
                                     const ConversationLog& log, std::int64_t window_start_ns,
                                     std::int64_t window_end_ns);
// The stats as a JSON object (the step document's "conversation").
std::string conversation_stats_json(const ConversationStats& stats);

}  // namespace llmcap::agent

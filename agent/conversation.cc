#include "agent/conversation.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

namespace llmcap::agent {

using json = nlohmann::json;

namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A uniform draw in [0, 1) from a hash (53 bits).
double unit(std::uint64_t h) { return static_cast<double>(h >> 11) * 0x1.0p-53; }

// Nearest-rank percentile of sorted values.
double nearest_rank(const std::vector<double>& sorted, double p) {
  const auto n = sorted.size();
  auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(n)));
  rank = std::clamp<std::size_t>(rank, 1, n);
  return sorted[rank - 1];
}

json opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

}  // namespace

std::int32_t session_turns(const ConversationSpec& spec, std::uint64_t seed,
                           std::uint64_t session) {
  if (spec.turns_max <= spec.turns_min) return spec.turns_min;
  const auto span = static_cast<std::uint64_t>(spec.turns_max - spec.turns_min + 1);
  const std::uint64_t h = splitmix64(splitmix64(seed ^ 0x636f6e76ULL) ^ session);
  return spec.turns_min + static_cast<std::int32_t>(h % span);
}

std::int64_t think_time_ns(const ConversationSpec& spec, std::uint64_t seed, std::uint64_t session,
                           std::int32_t turn) {
  if (spec.think_time_s <= 0) return 0;
  double s = spec.think_time_s;
  if (spec.think_time_exponential) {
    const std::uint64_t h = splitmix64(splitmix64(splitmix64(seed ^ 0x7468696eULL) ^ session) ^
                                       static_cast<std::uint64_t>(turn));
    s = -spec.think_time_s * std::log1p(-unit(h));
  }
  return static_cast<std::int64_t>(std::llround(s * 1e9));
}

std::uint64_t turn_draw_key(std::uint64_t session, std::int32_t turn) {
  // Turns are 1..kMaxSessionTurns (< 512): session and turn packed without overlap.
  static_assert(kMaxSessionTurns < 512);
  return (session << 9) | static_cast<std::uint64_t>(turn & 511);
}

std::vector<std::string> validate_conversation(const ConversationSpec& spec) {
  std::vector<std::string> errors;
  if (!spec.enabled()) return errors;
  if (spec.turns_min < 1 || spec.turns_max < spec.turns_min || spec.turns_max > kMaxSessionTurns)
    errors.push_back("workload.conversation.turns: must be 1 ≤ low ≤ high ≤ " +
                     std::to_string(kMaxSessionTurns));
  if (!(spec.think_time_s >= 0) || spec.think_time_s > 86'400)
    errors.push_back("workload.conversation.think_time_s: must be between 0 and 86400");
  if (spec.max_context_tokens < 0)
    errors.push_back("workload.conversation.max_context_tokens: must be ≥ 0");
  return errors;
}

void ConversationHistory::add_user(std::string text) {
  if (parts_.size() % 2 == 1) parts_.emplace_back();  // two user messages in a row: empty reply
  bytes_ += text.size();
  parts_.push_back(std::move(text));
}

void ConversationHistory::add_reply(std::string text) {
  if (parts_.size() % 2 == 0) return;  // no question to answer
  bytes_ += text.size();
  parts_.push_back(std::move(text));
}

std::string ConversationHistory::prompt() const {
  std::string out;
  out.reserve(bytes_ + parts_.size() * kCompletionsSeparator.size());
  for (std::size_t i = 0; i < parts_.size(); ++i) {
    // A reply directly follows its question; the next question follows the separator.
    if (i > 0 && i % 2 == 0) out.append(kCompletionsSeparator);
    out.append(parts_[i]);
  }
  return out;
}

std::string ConversationHistory::messages_json() const {
  json messages = json::array();
  for (std::size_t i = 0; i < parts_.size(); ++i)
    messages.push_back({{"role", i % 2 == 0 ? "user" : "assistant"}, {"content", parts_[i]}});
  // Replies are the server's text, which may hold invalid UTF-8 (a multi-byte character cut by a
  // truncated stream): replaced, never a reason to fail the turn.
  return messages.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string_view to_string(SessionEnd end) {
  switch (end) {
    case SessionEnd::kCompleted: return "completed";
    case SessionEnd::kFailed: return "failed";
    case SessionEnd::kContextLimit: return "context_limit";
    case SessionEnd::kWindowEnd: return "window_end";
  }
  return "completed";
}

ConversationStats conversation_stats(const std::vector<analysis::RequestSample>& samples,
                                     const ConversationLog& log, std::int64_t window_start_ns,
                                     std::int64_t window_end_ns) {
  ConversationStats st;
  if (log.turns.size() != samples.size()) return st;
  auto in_window = [&](std::int64_t t) { return t >= window_start_ns && t < window_end_ns; };

  // Per turn index, over turns intended in the window.
  std::map<std::int32_t, std::vector<double>> ttft_ms;
  std::map<std::int32_t, std::pair<double, std::uint64_t>> input;  // sum, count
  std::map<std::int32_t, TurnStats> by_turn;
  // Per session: its first turn's intended time and its last turn's end.
  struct Span {
    std::int64_t first_intended = -1;
    std::int32_t first_turn = 0;
    std::int64_t last_end = -1;
    std::int32_t last_turn = 0;
  };
  std::unordered_map<std::uint64_t, Span> spans;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const auto& s = samples[i];
    const ConversationTurn& t = log.turns[i];
    Span& span = spans[t.session];
    if (span.first_turn == 0 || t.turn < span.first_turn) {
      span.first_turn = t.turn;
      span.first_intended = s.t_intended_ns;
    }
    if (t.turn >= span.last_turn) {
      span.last_turn = t.turn;
      span.last_end = s.t_end_ns;
    }
    if (!in_window(s.t_intended_ns)) continue;
    TurnStats& ts = by_turn[t.turn];
    ts.turn = t.turn;
    ++ts.requests;
    if (!s.ok()) continue;
    ++ts.ok;
    if (s.t_first_token_ns >= 0)
      ttft_ms[t.turn].push_back(static_cast<double>(s.t_first_token_ns - s.t_intended_ns) / 1e6);
    if (s.input_tokens >= 0) {
      auto& [sum, n] = input[t.turn];
      sum += s.input_tokens;
      ++n;
    }
  }
  for (auto& [turn, ts] : by_turn) {
    if (auto it = ttft_ms.find(turn); it != ttft_ms.end() && !it->second.empty()) {
      std::sort(it->second.begin(), it->second.end());
      ts.ttft_p50_ms = nearest_rank(it->second, 50);
      ts.ttft_p95_ms = nearest_rank(it->second, 95);
    }
    if (auto it = input.find(turn); it != input.end() && it->second.second > 0)
      ts.input_tokens_mean = it->second.first / static_cast<double>(it->second.second);
    st.by_turn.push_back(ts);
  }

  std::vector<double> durations;
  std::uint64_t turns_sent = 0;
  for (const SessionRecord& r : log.sessions) {
    const auto it = spans.find(r.session);
    if (it == spans.end() || it->second.first_turn != 1 || !in_window(it->second.first_intended))
      continue;
    ++st.sessions_started;
    turns_sent += static_cast<std::uint64_t>(r.turns_sent);
    switch (r.end) {
      case SessionEnd::kCompleted:
        ++st.sessions_completed;
        if (it->second.last_end >= it->second.first_intended)
          durations.push_back(static_cast<double>(it->second.last_end - it->second.first_intended) /
                              1e9);
        break;
      case SessionEnd::kFailed: ++st.sessions_failed; break;
      case SessionEnd::kContextLimit: ++st.sessions_context_limit; break;
      case SessionEnd::kWindowEnd: ++st.sessions_cut; break;
    }
  }
  if (st.sessions_started > 0)
    st.turns_per_session_mean =
        static_cast<double>(turns_sent) / static_cast<double>(st.sessions_started);
  if (!durations.empty()) {
    std::sort(durations.begin(), durations.end());
    st.duration_p50_s = nearest_rank(durations, 50);
    st.duration_p95_s = nearest_rank(durations, 95);
    double sum = 0;
    for (const double d : durations) sum += d;
    st.duration_mean_s = sum / static_cast<double>(durations.size());
    st.duration_max_s = durations.back();
  }
  return st;
}

std::string conversation_stats_json(const ConversationStats& st) {
  json by_turn = json::array();
  for (const TurnStats& t : st.by_turn)
    by_turn.push_back({{"turn", t.turn},
                       {"requests", t.requests},
                       {"ok", t.ok},
                       {"ttft_p50_ms", opt(t.ttft_p50_ms)},
                       {"ttft_p95_ms", opt(t.ttft_p95_ms)},
                       {"input_tokens_mean", opt(t.input_tokens_mean)}});
  json j{{"sessions_started", st.sessions_started},
         {"sessions_completed", st.sessions_completed},
         {"sessions_failed", st.sessions_failed},
         {"sessions_context_limit", st.sessions_context_limit},
         {"sessions_cut", st.sessions_cut},
         {"turns_per_session_mean", st.turns_per_session_mean},
         {"session_duration_s",
          {{"p50", opt(st.duration_p50_s)},
           {"p95", opt(st.duration_p95_s)},
           {"mean", opt(st.duration_mean_s)},
           {"max", opt(st.duration_max_s)}}},
         {"by_turn", std::move(by_turn)}};
  return j.dump();
}

}  // namespace llmcap::agent

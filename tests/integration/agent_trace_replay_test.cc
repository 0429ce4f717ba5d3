// Trace replay and user abandonment of the load generator against tests/fakes/scripted_target,
// whose truth is known: it records when each request arrived, the prompt it received and every
// token it wrote.
//   - A Mooncake-style trace replayed at its own times: every request is intended exactly at
//     its trace time / speed and sent within 1 ms of it at P99 (wall clock: label `timing`);
//     requests that share hash_ids share exactly those blocks as their prompt's prefix (the
//     prompts the fake received), and each prompt has the trace's input length.
//   - Abandonment: the requests abandons() picks, and only those, end as kAbandoned after
//     their N-th token event or after_ms, counted apart (never failed), and the server sees the
//     connection close (it wrote fewer tokens than asked for).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "agent/step_runner.h"
#include "tests/fakes/scripted_target.h"

namespace llmcap::agent {
namespace {

using analysis::ErrorClass;
using fakes::Script;
using fakes::ScriptedTarget;
using fakes::ServedStream;

constexpr std::int64_t kReplayMs = 1'000'000;
constexpr std::int32_t kBlockTokens = 16;

// A Mooncake-format trace: `n` requests over about `span_ms`, each listing 0-4 blocks of a few
// shared "system prompts" and then blocks of its own.
std::string write_trace(const std::string& name, int n, double span_ms, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  const std::vector<std::vector<int>> groups = {{1, 2, 3, 4}, {10, 11}, {20, 21, 22}, {30}};
  std::string text;
  int unique = 1000;
  double t = 0;
  for (int i = 0; i < n; ++i) {
    t += -std::log(1 - u(rng)) * span_ms / n;
    const auto& g = groups[rng() % groups.size()];
    std::vector<int> ids(g.begin(), g.begin() + static_cast<long>(1 + rng() % g.size()));
    for (int k = static_cast<int>(rng() % 3); k > 0; --k) ids.push_back(unique++);
    const int input = static_cast<int>(ids.size() - 1) * kBlockTokens + 4 +
                      static_cast<int>(rng() % (kBlockTokens - 4));
    std::string list;
    for (const int id : ids) list += (list.empty() ? "" : ", ") + std::to_string(id);
    char line[512];
    std::snprintf(line, sizeof line,
                  "{\"timestamp\": %.3f, \"input_length\": %d, \"output_length\": 3, "
                  "\"hash_ids\": [%s]}\n",
                  t, input, list.c_str());
    text += line;
  }
  const auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path.string();
}

StepSpec trace_spec(const ScriptedTarget& fake, const std::string& path, double speed) {
  const Trace trace = Trace::load(path, TraceFormat::kMooncake).value();
  StepSpec s;
  s.target.base_url = fake.base_url();
  s.target.model = "scripted-model";
  s.workload.source = WorkloadSource::kTrace;
  s.workload.trace_path = path;
  s.workload.trace_block_tokens = kBlockTokens;
  s.load.kind = LoadKind::kTrace;
  s.load.trace_speed = speed;
  s.duration_s = plan_trace_window(trace, speed, 0).window_s;
  s.seed = 5;
  return s;
}

Script replay_quick() {
  Script s;
  s.ttft_us = 2'000;
  s.itl_us = 1'000;
  s.tokens = 3;
  return s;
}

// The host's own timer noise over the same stretch of time: a bare thread that only sleeps
// until each of the trace's replay times (from `start`) and notes how late it woke, in ms.
std::vector<double> bare_wake_lateness_ms(const Trace& trace, double speed,
                                          std::chrono::steady_clock::time_point start) {
  std::vector<double> late;
  late.reserve(trace.records().size());
  for (const auto& rec : trace.records()) {
    const auto at = start + std::chrono::nanoseconds(replay_time_ns(rec, speed));
    std::this_thread::sleep_until(at);
    late.push_back(static_cast<double>((std::chrono::steady_clock::now() - at).count()) /
                   kReplayMs);
  }
  return late;
}

double p99(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[std::min(v.size() - 1, static_cast<std::size_t>(0.99 * v.size()))];
}

std::vector<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// Whole words the two prompts have in common from their start.
std::size_t common_words(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

// Sample i of the step ↔ the fake's record of it (by response id).
std::map<std::size_t, ServedStream> served_by_sample(const StepResult& r,
                                                     const std::vector<ServedStream>& served) {
  std::unordered_map<std::string, const ServedStream*> by_id;
  for (const auto& s : served) by_id[s.id] = &s;
  std::map<std::size_t, ServedStream> out;
  for (std::size_t i = 0; i < r.samples.size(); ++i) {
    const auto it = by_id.find(r.response_ids[i]);
    if (it != by_id.end()) out[i] = *it->second;
  }
  return out;
}

TEST(AgentTraceReplay, SendTimesMatchTheTraceWithin1MsAtP99) {
  // 240 requests over 4.8 s of trace, replayed twice as fast: 2.4 s, 100 requests/s on average
  // with Poisson gaps (bursts of several requests within a millisecond).
  const std::string path = write_trace("llmcap_trace_timing.jsonl", 240, 4800, 3);
  const Trace trace = Trace::load(path, TraceFormat::kMooncake).value();
  // Every attempt: each request intended exactly at its trace time / speed, none early, the
  // median send error under 0.2 ms. The 1 ms P99 bound is the client's timeliness, which the
  // host spoils in episodes of a few ms when it deschedules the agent's thread: measured on the
  // 2-core VMs here, a bare thread that only sleeps until the same instants wakes 0.4-3.7 ms late
  // at P99 (spinning instead of sleeping does not help: the vCPU itself is preempted). So each
  // attempt runs that bare sleeper beside the agent, over the same 2.4 s, and the bound is 1 ms,
  // or the host's own P99 + 0.5 ms where the host could not wake a bare thread within 1 ms; the
  // agent's own share (send - wake-up, P99 of dispatch lag - P99 of timer lag) stays under
  // 0.5 ms. It must hold in one of up to 3 attempts (as for AgentOpenLoop); a systematic delay
  // of the agent fails all.
  bool within_bound = false;
  for (int attempt = 1; attempt <= 3 && !within_bound; ++attempt) {
    ScriptedTarget fake(replay_quick());
    std::vector<double> bare_ms;
    std::thread bare(
        [&] { bare_ms = bare_wake_lateness_ms(trace, 2.0, std::chrono::steady_clock::now()); });
    const StepResult r = StepRunner().run(trace_spec(fake, path, 2.0));
    bare.join();
    ASSERT_TRUE(r.fatal_error.empty()) << r.fatal_error;
    ASSERT_EQ(r.samples.size(), trace.records().size());
    EXPECT_EQ(r.dropped_arrivals, 0u);
    std::vector<double> send_err_ms, arrive_err_ms, dispatch_ms;
    const auto served = served_by_sample(r, fake.records());
    for (std::size_t i = 0; i < r.samples.size(); ++i) {
      const auto& s = r.samples[i];
      EXPECT_TRUE(s.ok()) << s.error_message;
      EXPECT_EQ(s.t_intended_ns, replay_time_ns(trace.records()[s.index], 2.0)) << i;
      send_err_ms.push_back(static_cast<double>(s.t_send_ns - s.t_intended_ns) / kReplayMs);
      dispatch_ms.push_back(static_cast<double>(s.dispatch_lag_ns()) / kReplayMs);
      if (const auto it = served.find(i); it != served.end())
        arrive_err_ms.push_back(
            static_cast<double>(it->second.t_received_ns - r.epoch_steady_ns - s.t_intended_ns) /
            kReplayMs);
    }
    ASSERT_EQ(arrive_err_ms.size(), r.samples.size());
    std::sort(send_err_ms.begin(), send_err_ms.end());
    std::sort(bare_ms.begin(), bare_ms.end());
    const double send_p99 = p99(send_err_ms);
    const double bare_p99 = p99(bare_ms);
    std::printf(
        "trace replay attempt %d, %zu requests at x2: send - trace time p50 %.3f p99 %.3f max "
        "%.3f ms (dispatch lag p99 %.3f ms, timer lag p99 %.3f ms, %llu connections); server "
        "receipt - trace time p99 %.3f ms; bare thread's wake lateness p50 %.3f p99 %.3f ms\n",
        attempt, send_err_ms.size(), send_err_ms[send_err_ms.size() / 2], send_p99,
        send_err_ms.back(), p99(dispatch_ms), static_cast<double>(r.timer_lag.p99_ns) / kReplayMs,
        static_cast<unsigned long long>(r.connections_opened), p99(arrive_err_ms),
        bare_ms[bare_ms.size() / 2], bare_p99);
    EXPECT_GE(send_err_ms.front(), 0.0);
    EXPECT_LT(send_err_ms[send_err_ms.size() / 2], 0.2);
    const double own_p99 = p99(dispatch_ms) - static_cast<double>(r.timer_lag.p99_ns) / kReplayMs;
    within_bound = own_p99 < 0.5 && send_p99 < std::max(1.0, bare_p99 + 0.5);
  }
  EXPECT_TRUE(within_bound) << "send time - trace time p99 at or above max(1 ms, the host's bare "
                               "thread p99 + 0.5 ms) in all 3 attempts";
  std::filesystem::remove(path);
}

TEST(AgentTraceReplay, RequestsSharingHashIdsShareExactPrefixes) {
  const std::string path = write_trace("llmcap_trace_prefix.jsonl", 60, 600, 7);
  fakes::ScriptedTargetOptions o;
  o.tokens_per_word = 1.0;  // the fake's tokenizer: one token a word, + 1 BOS token
  ScriptedTarget fake(replay_quick(), o);
  const StepSpec spec = trace_spec(fake, path, 4.0);
  const Trace trace = Trace::load(path, TraceFormat::kMooncake).value();
  const StepResult r = StepRunner().run(spec);
  ASSERT_TRUE(r.fatal_error.empty()) << r.fatal_error;
  ASSERT_EQ(r.samples.size(), 60u);
  const auto served = served_by_sample(r, fake.records());
  ASSERT_EQ(served.size(), 60u);
  std::vector<std::vector<std::string>> prompt(60);
  for (const auto& [i, rec] : served) {
    const auto& record = trace.records()[r.samples[i].index];
    prompt[i] = words(rec.prompt);
    // The trace's input length, as the server counted it (calibrated on its /tokenize).
    EXPECT_EQ(rec.prompt_tokens, record.input_tokens) << i;
    EXPECT_EQ(rec.max_tokens, record.output_tokens);
  }
  int pairs_sharing = 0;
  for (std::size_t i = 0; i < 60; ++i) {
    for (std::size_t j = i + 1; j < 60; ++j) {
      const auto& a = trace.records()[r.samples[i].index];
      const auto& b = trace.records()[r.samples[j].index];
      // Whole blocks of each that fit its input length; the leading ids both list.
      const std::size_t fit_a =
          std::min<std::size_t>(a.hash_ids.size(), a.input_tokens / kBlockTokens);
      const std::size_t fit_b =
          std::min<std::size_t>(b.hash_ids.size(), b.input_tokens / kBlockTokens);
      std::size_t shared = 0;
      while (shared < fit_a && shared < fit_b && a.hash_ids[shared] == b.hash_ids[shared]) ++shared;
      const std::size_t common = common_words(prompt[i], prompt[j]);
      // Exactly the shared blocks (a chance word of the tails may follow: at most 1 more).
      EXPECT_GE(common, shared * kBlockTokens) << i << " " << j;
      EXPECT_LE(common, shared * kBlockTokens + 1) << i << " " << j;
      pairs_sharing += shared > 0 ? 1 : 0;
    }
  }
  EXPECT_GT(pairs_sharing, 100);  // the trace does share blocks
  std::filesystem::remove(path);
}

TEST(AgentTraceReplay, OtherLoadsTakeTheTraceInOrder) {
  const std::string path = write_trace("llmcap_trace_closed.jsonl", 5, 100, 9);
  ScriptedTarget fake(replay_quick());
  StepSpec spec = trace_spec(fake, path, 1.0);
  spec.load.kind = LoadKind::kClosed;
  spec.load.concurrency = 1;
  spec.window_requests = 12;
  spec.duration_s = 30;
  const Trace trace = Trace::load(path, TraceFormat::kMooncake).value();
  const StepResult r = StepRunner().run(spec);
  ASSERT_TRUE(r.fatal_error.empty()) << r.fatal_error;
  ASSERT_EQ(r.samples.size(), 12u);
  for (const auto& s : r.samples)
    EXPECT_EQ(s.planned_input_tokens, trace.records()[s.index % 5].input_tokens);
  std::filesystem::remove(path);
}

TEST(AgentTraceReplay, ABadTraceFailsTheStepNamingTheField) {
  ScriptedTarget fake(replay_quick());
  const auto path = (std::filesystem::temp_directory_path() / "llmcap_trace_bad.jsonl").string();
  std::ofstream(path) << "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 1}\n{}\n";
  StepSpec spec;
  spec.target.base_url = fake.base_url();
  spec.target.model = "m";
  spec.workload.source = WorkloadSource::kTrace;
  spec.workload.trace_path = path;
  spec.load.kind = LoadKind::kTrace;
  const StepResult r = StepRunner().run(spec);
  EXPECT_EQ(r.fatal_error,
            "workload.trace.path: " + path + ": trace line 2: \"timestamp\" is required (ms)");
  EXPECT_TRUE(r.samples.empty());
  spec.workload.source = WorkloadSource::kSynthetic;
  EXPECT_NE(StepRunner().run(spec).fatal_error.find("load.kind: a trace replay needs a trace"),
            std::string::npos);
  std::filesystem::remove(path);
}

// ---------------------------------------------------------------------------------------------
// User abandonment

StepSpec abandon_spec(const ScriptedTarget& fake, AbandonSpec abandon) {
  StepSpec s;
  s.target.base_url = fake.base_url();
  s.target.model = "scripted-model";
  s.workload.input_tokens = analysis::LengthDistribution::fixed(32);
  s.workload.output_tokens = analysis::LengthDistribution::fixed(20);
  s.workload.abandon = abandon;
  s.load.kind = LoadKind::kClosed;
  s.load.concurrency = 8;
  s.window_requests = 80;
  s.duration_s = 30;
  s.seed = 77;
  return s;
}

TEST(AgentAbandon, AfterTokensAbandonsThePickedRequestsAtTheirNthToken) {
  Script s = replay_quick();
  s.tokens = 20;
  s.itl_us = 2'000;
  ScriptedTarget fake(s);
  const AbandonSpec abandon{0.3, 0, 5};
  const StepResult r = StepRunner().run(abandon_spec(fake, abandon));
  ASSERT_TRUE(r.fatal_error.empty()) << r.fatal_error;
  ASSERT_GE(r.samples.size(), 80u);
  std::uint64_t picked = 0;
  const auto served = served_by_sample(r, fake.records());
  for (std::size_t i = 0; i < r.samples.size(); ++i) {
    const auto& x = r.samples[i];
    if (abandons(abandon, 77, x.index)) {
      ++picked;
      EXPECT_EQ(x.error, ErrorClass::kAbandoned) << x.error_message;
      EXPECT_EQ(x.token_events, 5u);
      EXPECT_GE(x.t_first_token_ns, 0);
      EXPECT_NE(x.error_message.find("abandoned by the client after 5 token events"),
                std::string::npos)
          << x.error_message;
      // The server saw the client go: it could not write all 20 tokens.
      const auto it = served.find(i);
      ASSERT_NE(it, served.end());
      EXPECT_LT(it->second.token_write_ns.size(), 20u);
    } else {
      EXPECT_TRUE(x.ok()) << x.error_message;
      EXPECT_EQ(x.output_tokens, 20);
    }
  }
  EXPECT_EQ(r.counts.abandoned, picked);
  EXPECT_EQ(r.counts.failed, 0u);
  EXPECT_EQ(r.counts.ok + r.counts.abandoned + r.counts.cancelled, r.samples.size());
  // About the share asked for (a seeded pick: 30 % of ~80, not exactly).
  EXPECT_GT(picked, 10u);
  EXPECT_LT(picked, 40u);
}

TEST(AgentAbandon, AfterMsAbandonsOnTheUsersClock) {
  Script s = replay_quick();
  s.ttft_us = 60'000;  // the first token comes after 60 ms, so 30 ms abandons before it
  ScriptedTarget fake(s);
  const AbandonSpec abandon{0.5, 30, 0};
  StepSpec spec = abandon_spec(fake, abandon);
  spec.window_requests = 40;
  const StepResult r = StepRunner().run(spec);
  ASSERT_TRUE(r.fatal_error.empty()) << r.fatal_error;
  std::uint64_t picked = 0;
  for (const auto& x : r.samples) {
    if (!abandons(abandon, 77, x.index)) {
      EXPECT_TRUE(x.ok()) << x.error_message;
      continue;
    }
    ++picked;
    EXPECT_EQ(x.error, ErrorClass::kAbandoned) << x.error_message;
    EXPECT_EQ(x.t_first_token_ns, -1);
    EXPECT_NE(x.error_message.find("abandoned by the client 30 ms after its intended send"),
              std::string::npos)
        << x.error_message;
    // Ended at t_intended + 30 ms (not measured for accuracy here: ASan runs this too).
    EXPECT_GE(x.t_end_ns - x.t_intended_ns, 30 * kReplayMs);
  }
  EXPECT_EQ(r.counts.abandoned, picked);
  EXPECT_GT(picked, 5u);
  EXPECT_EQ(r.counts.failed, 0u);
}

TEST(AgentAbandon, SelectionIsSeededAndFollowsTheShare) {
  const AbandonSpec a{0.1, 1000, 0};
  int n = 0;
  for (std::uint64_t i = 0; i < 100'000; ++i) n += abandons(a, 42, i) ? 1 : 0;
  EXPECT_NEAR(n, 10'000, 400);  // 4 standard deviations
  for (std::uint64_t i = 0; i < 1000; ++i) EXPECT_EQ(abandons(a, 42, i), abandons(a, 42, i));
  int differ = 0;
  for (std::uint64_t i = 0; i < 1000; ++i) differ += abandons(a, 42, i) != abandons(a, 43, i);
  EXPECT_GT(differ, 100);  // another seed picks other requests
  EXPECT_FALSE(abandons(AbandonSpec{0, 1000, 0}, 42, 0));
  EXPECT_FALSE(abandons(AbandonSpec{1, 0, 0}, 42, 0));  // neither after_ms nor after_tokens
  EXPECT_TRUE(abandons(AbandonSpec{1, 0, 3}, 42, 0));
}

}  // namespace
}  // namespace llmcap::agent

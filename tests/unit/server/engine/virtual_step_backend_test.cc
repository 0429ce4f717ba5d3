// VirtualStepBackend: the load generator's schedule and the simulated engine on one virtual
// clock. The engine's own single-request prediction, exact counts, deadlines, drain and
// determinism are the truths checked here.
#include "server/engine/virtual_step_backend.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <stop_token>

#include "sim/sim_model.h"

namespace llmcap::server {
namespace {

using analysis::ErrorClass;

sim::SimOptions options(std::int64_t max_model_len = 0) {
  sim::SimOptions o;
  o.hardware = "rtx4090-48g";
  o.model = "llama-3.1-8b";
  o.max_model_len = max_model_len;
  return o;
}

VirtualStepBackend backend(const sim::SimOptions& o = options()) {
  return VirtualStepBackend(sim::build_sim_model(o), o);
}

agent::StepSpec closed(std::int32_t c, std::int32_t in, std::int32_t out, double duration_s) {
  agent::StepSpec s;
  s.target.base_url = "sim://rtx4090-48g/llama-3.1-8b";
  s.workload.input_tokens = analysis::LengthDistribution::fixed(in);
  s.workload.output_tokens = analysis::LengthDistribution::fixed(out);
  s.load.kind = agent::LoadKind::kClosed;
  s.load.concurrency = c;
  s.duration_s = duration_s;
  s.seed = 7;
  return s;
}

agent::StepSpec open(double rps, double duration_s) {
  agent::StepSpec s = closed(1, 256, 32, duration_s);
  s.load.kind = agent::LoadKind::kOpen;
  s.load.rate = agent::RateProfile::constant(rps);
  s.load.inter_arrival = agent::InterArrival::kPoisson;
  return s;
}

agent::StepResult run(VirtualStepBackend& b, const agent::StepSpec& spec,
                      std::stop_token stop = {}) {
  BackendStep out = b.run(spec, 0, stop, {});
  EXPECT_EQ(out.result.fatal_error, "");
  EXPECT_TRUE(out.telemetry.has_value());
  return std::move(out.result);
}

TEST(VirtualStepBackend, OneRequestAtATimeSeesTheEnginesSingleRequestLatency) {
  auto b = backend();
  const auto r = run(b, closed(1, 512, 64, 10));
  const auto p =
      sim::BatchEngine::predict_single(b.model().roofline, b.model().engine_config, 512, 64);
  ASSERT_GT(r.samples.size(), 5u);
  for (std::size_t i = 0; i < r.samples.size(); ++i) {
    const auto& s = r.samples[i];
    ASSERT_TRUE(s.ok()) << s.error_message;
    EXPECT_EQ(s.output_tokens, 64);
    EXPECT_EQ(s.input_tokens, 512);
    EXPECT_NEAR(static_cast<double>(*s.ttft_ns()) / 1e9, p.ttft_s, 1e-6);
    EXPECT_NEAR(*s.tpot_ns() / 1e9, p.tpot_s, 1e-6);
    EXPECT_NEAR(static_cast<double>(*s.e2e_ns()) / 1e9, p.e2e_s, 1e-6);
    // Closed loop: the next request is intended the instant this one ended.
    if (i + 1 < r.samples.size()) {
      EXPECT_EQ(r.samples[i + 1].t_intended_ns, s.t_end_ns);
    }
  }
  EXPECT_TRUE(r.completed);
  EXPECT_EQ(r.counts.ok, r.samples.size());
  EXPECT_EQ(r.itl_ns.count(), r.samples.size() * 63);
}

TEST(VirtualStepBackend, TheSameSpecGivesTheSameResultOnEveryRun) {
  auto a = backend();
  auto b = backend();
  const auto spec = open(6, 20);
  const auto x = run(a, spec);
  const auto y = run(b, spec);
  ASSERT_EQ(x.samples.size(), y.samples.size());
  for (std::size_t i = 0; i < x.samples.size(); ++i) {
    EXPECT_EQ(x.samples[i].t_intended_ns, y.samples[i].t_intended_ns);
    EXPECT_EQ(x.samples[i].t_first_token_ns, y.samples[i].t_first_token_ns);
    EXPECT_EQ(x.samples[i].t_end_ns, y.samples[i].t_end_ns);
  }
  EXPECT_EQ(x.in_flight_series, y.in_flight_series);
}

TEST(VirtualStepBackend, OpenLoopWindowHoldsExactlyThePlannedArrivals) {
  auto b = backend();
  auto spec = open(5, 10);
  spec.warmup_s = 2;
  const auto r = run(b, spec);
  std::size_t in_window = 0;
  for (const auto& s : r.samples) {
    if (s.t_intended_ns >= r.window_start_ns && s.t_intended_ns < r.window_end_ns) ++in_window;
  }
  EXPECT_EQ(in_window, 50u);  // 5 rps × 10 s, exact counts (arrival_process.h)
  EXPECT_EQ(r.counts.intended, r.samples.size());
  EXPECT_EQ(r.counts.ok, r.samples.size());
  EXPECT_EQ(r.dropped_arrivals, 0u);
}

TEST(VirtualStepBackend, ArrivalsBeyondTheInFlightCapAreDroppedAndCounted) {
  auto b = backend();
  auto spec = open(20, 5);
  spec.load.in_flight_cap = 1;
  const auto r = run(b, spec);
  EXPECT_GT(r.dropped_arrivals, 0u);
  EXPECT_EQ(r.counts.intended, r.samples.size() + r.dropped_arrivals);
  for (std::size_t i = 1; i < r.samples.size(); ++i) {  // never two in flight
    EXPECT_GE(r.samples[i].t_send_ns, r.samples[i - 1].t_end_ns);
  }
}

TEST(VirtualStepBackend, AFirstTokenDeadlineTimesRequestsOutAndFreesTheEngine) {
  auto b = backend();
  auto spec = closed(4, 8000, 16, 3);
  spec.deadlines.first_token_ms = 1;  // a 8000-token prefill takes far longer
  const auto r = run(b, spec);
  ASSERT_FALSE(r.samples.empty());
  for (const auto& s : r.samples) {
    EXPECT_EQ(s.error, ErrorClass::kTimeoutFirstToken);
    EXPECT_EQ(s.t_end_ns - s.t_send_ns, 1'000'000);
  }
  EXPECT_EQ(r.counts.failed, r.samples.size());
  // The engine dropped them all: the next step starts on an idle engine.
  const auto again = run(b, closed(1, 512, 64, 2));
  const auto p =
      sim::BatchEngine::predict_single(b.model().roofline, b.model().engine_config, 512, 64);
  EXPECT_NEAR(static_cast<double>(*again.samples.front().ttft_ns()) / 1e9, p.ttft_s, 1e-6);
}

TEST(VirtualStepBackend, AnIdleDeadlineEndsARequestIdleMsAfterItsLastEvent) {
  // Long prompts arriving at random while others decode stall the decoders for a prefill:
  // their gaps are mostly a decode step and sometimes a prefill long. An idle deadline between
  // the two must end exactly the requests with such a stall, idle_ms after their last event,
  // however many events came before (the deadline moves on with each event).
  auto spec = open(0.8, 30);
  spec.workload.input_tokens = analysis::LengthDistribution::fixed(4000);
  spec.workload.output_tokens = analysis::LengthDistribution::fixed(64);
  auto b = backend();
  const auto free_run = run(b, spec);
  std::int64_t max_gap = 0;
  for (const auto& s : free_run.samples) max_gap = std::max(max_gap, s.max_itl_ns);
  const auto itl_p50 = free_run.itl_ns.quantile(0.5);
  ASSERT_GT(static_cast<double>(max_gap), 3 * itl_p50);  // stalls to tell from decode gaps
  const std::int64_t idle_ms =
      static_cast<std::int64_t>((static_cast<double>(max_gap) + itl_p50) / 2 / 1e6);
  spec.deadlines.idle_ms = idle_ms;
  auto fresh = backend();
  const auto r = run(fresh, spec);
  std::size_t timed_out = 0, after_several = 0;
  for (const auto& s : r.samples) {
    if (s.error == ErrorClass::kTimeoutIdle) {
      ++timed_out;
      after_several += s.token_events > 2 ? 1 : 0;
      EXPECT_EQ(s.t_end_ns - s.t_last_token_ns, idle_ms * 1'000'000);
    } else {
      EXPECT_EQ(s.error, ErrorClass::kNone);
      EXPECT_LE(s.max_itl_ns, idle_ms * 1'000'000);
    }
  }
  EXPECT_GT(after_several, 0u);
  EXPECT_LT(timed_out, r.samples.size());
}

TEST(VirtualStepBackend, DrainCancelEndsInFlightRequestsAtTheWindowEnd) {
  auto b = backend();
  auto spec = closed(8, 256, 2000, 5);  // 2000 tokens outlast a 5 s window
  spec.drain = agent::DrainPolicy::kCancel;
  const auto r = run(b, spec);
  EXPECT_EQ(r.counts.cancelled, 8u);
  for (const auto& s : r.samples) {
    EXPECT_EQ(s.error, ErrorClass::kCancelled);
    EXPECT_EQ(s.t_end_ns, r.window_end_ns);
  }
  EXPECT_EQ(r.end_ns, r.window_end_ns);
}

TEST(VirtualStepBackend, DrainWaitLetsThemFinishWithinTheTimeout) {
  auto b = backend();
  auto spec = closed(8, 256, 200, 2);
  spec.drain = agent::DrainPolicy::kWait;
  spec.drain_timeout_s = 60;
  const auto r = run(b, spec);
  EXPECT_EQ(r.counts.cancelled, 0u);
  EXPECT_EQ(r.counts.ok, r.samples.size());
  EXPECT_GT(r.end_ns, r.window_end_ns);
}

TEST(VirtualStepBackend, APromptBeyondMaxModelLenIsRefusedAsTheSimulatorDoes) {
  auto b = backend(options(1024));
  const auto r = run(b, closed(1, 1000, 100, 1));
  ASSERT_FALSE(r.samples.empty());
  EXPECT_EQ(r.samples.front().error, ErrorClass::kHttp4xx);
  EXPECT_EQ(r.samples.front().http_status, 400);
  EXPECT_NE(r.samples.front().error_message.find("1024"), std::string::npos);
}

TEST(VirtualStepBackend, ARequestCountWindowHoldsExactlyN) {
  auto b = backend();
  auto spec = closed(3, 256, 32, 3600);
  spec.window_requests = 20;
  spec.warmup_s = 1;
  const auto r = run(b, spec);
  std::size_t in_window = 0;
  for (const auto& s : r.samples) {
    if (s.t_intended_ns >= r.window_start_ns && s.t_intended_ns < r.window_end_ns) ++in_window;
  }
  EXPECT_EQ(in_window, 20u);
  EXPECT_LT(r.window_end_ns, r.window_start_ns + 60'000'000'000LL);
}

TEST(VirtualStepBackend, AStopCancelsTheStep) {
  auto b = backend();
  std::stop_source stop;
  stop.request_stop();
  const auto r = run(b, open(50, 600), stop.get_token());
  EXPECT_TRUE(r.cancelled);
  EXPECT_FALSE(r.completed);
  EXPECT_LT(r.end_ns, 600'000'000'000LL);
}

TEST(VirtualStepBackend, TelemetryFollowsTheEnginesState) {
  auto b = backend();
  BackendStep out = b.run(closed(16, 1024, 128, 10), 0, {}, {});
  ASSERT_TRUE(out.telemetry);
  const auto& sum = out.telemetry->summary;
  ASSERT_TRUE(sum.running_max);
  EXPECT_EQ(*sum.running_max, 16);
  ASSERT_TRUE(sum.kv_usage_max);
  EXPECT_GT(*sum.kv_usage_max, 0);
  EXPECT_LT(*sum.kv_usage_max, 1);
  EXPECT_GE(out.telemetry->points.size(), 10u * 4);
}

// Prefix groups: the engine gets the groups' shared blocks, so the predicted hit rate is the
// groups' share of cached prompt tokens, (0.7 × 1024 + 0.3 × 512) / 1536, less the first
// request of each group; TTFT is lower than with caching off.
TEST(VirtualStepBackend, PrefixGroupsHitThePrefixCache) {
  agent::StepSpec spec = closed(4, 1536, 16, 10);
  spec.workload.prefix_groups = {{0.7, 1024}, {0.3, 512}};
  auto on = backend();
  BackendStep hit = on.run(spec, 0, {}, {});
  ASSERT_TRUE(hit.telemetry);
  const auto& sum = hit.telemetry->summary;
  ASSERT_TRUE(sum.prefix_cache_hit_rate && sum.prefix_cache_queries);
  EXPECT_GT(*sum.prefix_cache_queries, 40 * 1536);
  EXPECT_NEAR(*sum.prefix_cache_hit_rate, (0.7 * 1024 + 0.3 * 512) / 1536, 0.02);
  auto o = options();
  o.enable_prefix_caching = false;
  auto off = backend(o);
  BackendStep miss = off.run(spec, 0, {}, {});
  ASSERT_TRUE(miss.telemetry);
  EXPECT_FALSE(miss.telemetry->summary.prefix_cache_hit_rate);
  const auto mean_ttft_ns = [](const agent::StepResult& r) {
    double sum_ns = 0;
    int n = 0;
    for (const auto& x : r.samples)
      if (x.ok()) sum_ns += static_cast<double>(*x.ttft_ns()), ++n;
    return n > 0 ? sum_ns / n : 0.0;
  };
  EXPECT_LT(mean_ttft_ns(hit.result), 0.8 * mean_ttft_ns(miss.result));
}

TEST(VirtualStepBackend, AMixSendsEachClassItsLengthsPrefixAndGaps) {
  agent::StepSpec spec = closed(4, 1, 1, 20);
  spec.workload.mix.resize(2);
  spec.workload.mix[0] = {"chat", 0.75, analysis::LengthDistribution::fixed(200),
                          analysis::LengthDistribution::fixed(40), 0};
  spec.workload.mix[1] = {"rag", 0.25, analysis::LengthDistribution::fixed(3000),
                          analysis::LengthDistribution::fixed(8), 2048};
  auto b = backend();
  BackendStep out = b.run(spec, 0, {}, {});
  ASSERT_EQ(out.result.fatal_error, "");
  const auto& r = out.result;
  ASSERT_GT(r.samples.size(), 40u);
  std::uint64_t gaps[2] = {0, 0};
  int rag = 0;
  for (const auto& s : r.samples) {
    // Each request's class from its index (the executor finds it the same way).
    const int c = agent::mix_class_of(spec.workload.mix, spec.seed, s.index);
    ASSERT_TRUE(s.ok()) << s.error_message;
    EXPECT_EQ(s.planned_input_tokens, c == 0 ? 200 : 3000);
    EXPECT_EQ(s.output_tokens, c == 0 ? 40 : 8);
    if (s.t_intended_ns >= r.window_start_ns && s.t_intended_ns < r.window_end_ns)
      gaps[c] += static_cast<std::uint64_t>(s.output_tokens - 1);
    rag += c;
  }
  EXPECT_NEAR(static_cast<double>(rag) / static_cast<double>(r.samples.size()), 0.25, 0.12);
  // The pooled ITL gaps, split by class.
  ASSERT_EQ(r.itl_ns_by_class.size(), 2u);
  EXPECT_EQ(r.itl_ns_by_class[0].count(), gaps[0]);
  EXPECT_EQ(r.itl_ns_by_class[1].count(), gaps[1]);
  EXPECT_EQ(r.itl_ns.count(), gaps[0] + gaps[1]);
  // The RAG class's 2048-token prefix is cached: about 0.25 × 2048 / mean prompt of the tokens.
  ASSERT_TRUE(out.telemetry && out.telemetry->summary.prefix_cache_hit_rate);
  EXPECT_GT(*out.telemetry->summary.prefix_cache_hit_rate, 0.3);
}

TEST(VirtualStepBackend, FaultsAndDatasetsAreRefusedNamingTheField) {
  auto o = options();
  o.faults.error_rate = 0.1;
  agent::WorkloadSpec w;
  auto why = VirtualStepBackend::unsupported(o, w);
  ASSERT_TRUE(why);
  EXPECT_EQ(why->rfind("sim.faults:", 0), 0u);
  w.source = agent::WorkloadSource::kDataset;
  why = VirtualStepBackend::unsupported(options(), w);
  ASSERT_TRUE(why);
  EXPECT_EQ(why->rfind("workload.dataset_path:", 0), 0u);
  // Trace replay and abandonment (issue 21) are not modelled in virtual time either.
  w.source = agent::WorkloadSource::kTrace;
  why = VirtualStepBackend::unsupported(options(), w);
  ASSERT_TRUE(why);
  EXPECT_EQ(why->rfind("workload.trace:", 0), 0u);
  w.source = agent::WorkloadSource::kSynthetic;
  w.abandon = {0.1, 0, 32};
  why = VirtualStepBackend::unsupported(options(), w);
  ASSERT_TRUE(why);
  EXPECT_EQ(why->rfind("workload.abandon:", 0), 0u);
}

// Conversations (issue 21) in virtual time, as agent/step_runner.cc runs them: each turn's prompt
// is the previous prompt + its reply + the new message, intended at the reply's end + the think
// time, and the engine's prefix cache finds every full block of the previous prompt and reply.
TEST(VirtualStepBackend, ConversationTurnsGrowTheHistoryAndHitThePreviousPromptAndReply) {
  auto b = backend();
  agent::StepSpec spec = closed(4, 256, 32, 20);
  spec.workload.conversation.turns_min = 2;
  spec.workload.conversation.turns_max = 5;
  spec.workload.conversation.user_tokens = analysis::LengthDistribution::fixed(40);
  spec.workload.conversation.think_time_s = 0.5;
  BackendStep out = b.run(spec, 0, {}, {});
  ASSERT_EQ(out.result.fatal_error, "");
  const auto& r = out.result;
  ASSERT_EQ(r.conversation.turns.size(), r.samples.size());
  ASSERT_GT(r.samples.size(), 40u);
  EXPECT_EQ(r.counts.intended, r.samples.size());
  std::map<std::uint64_t, std::size_t> last;  // session → its previous turn's sample
  double expected_hits = 0, prompts = 0;
  std::size_t later = 0;
  for (std::size_t i = 0; i < r.samples.size(); ++i) {
    const auto& s = r.samples[i];
    const auto& t = r.conversation.turns[i];
    ASSERT_TRUE(s.ok()) << s.error_message;
    prompts += s.input_tokens;
    const auto it = last.find(t.session);
    if (t.turn == 1) {
      EXPECT_EQ(it, last.end());
      EXPECT_EQ(s.input_tokens, 256);
    } else {
      ASSERT_NE(it, last.end());
      const auto& prev = r.samples[it->second];
      EXPECT_EQ(r.conversation.turns[it->second].turn, t.turn - 1);
      EXPECT_EQ(s.input_tokens, prev.input_tokens + prev.output_tokens + 40);
      EXPECT_EQ(s.t_intended_ns, prev.t_end_ns + 500'000'000);
      expected_hits += std::min<double>((prev.input_tokens + prev.output_tokens - 1) / 16,
                                        (s.input_tokens - 1) / 16) *
                       16;
      ++later;
    }
    last[t.session] = i;
  }
  EXPECT_GT(later, 20u);
  ASSERT_TRUE(out.telemetry && out.telemetry->summary.prefix_cache_hits);
  EXPECT_EQ(*out.telemetry->summary.prefix_cache_queries, prompts);
  EXPECT_EQ(*out.telemetry->summary.prefix_cache_hits, expected_hits);
  std::size_t completed = 0;
  for (const auto& rec : r.conversation.sessions) {
    EXPECT_EQ(rec.planned_turns,
              agent::session_turns(spec.workload.conversation, spec.seed, rec.session));
    if (rec.end == agent::SessionEnd::kCompleted) {
      ++completed;
      EXPECT_EQ(rec.turns_sent, rec.planned_turns);
    } else {
      EXPECT_EQ(rec.end, agent::SessionEnd::kWindowEnd);
    }
  }
  EXPECT_GT(completed, 10u);

  // Open loop: the rate is of sessions; each arrival starts one.
  auto b2 = backend();
  agent::StepSpec o = open(2, 10);
  o.workload.conversation = spec.workload.conversation;
  o.workload.conversation.max_context_tokens = 400;  // 256+32, +40+32 fits; a third turn does not
  out = b2.run(o, 0, {}, {});
  ASSERT_EQ(out.result.fatal_error, "");
  std::set<std::uint64_t> sessions;
  for (const auto& t : out.result.conversation.turns) {
    sessions.insert(t.session);
    EXPECT_LE(t.turn, 2);
  }
  EXPECT_EQ(sessions.size(), 20u);  // exactly the planned arrivals of the window
}

TEST(VirtualStepBackend, ATurnsLengthsDependOnItsSessionAndTurnNotOnTheTargetsSpeed) {
  // Drawn lengths on two targets of different speed: sessions reach their turns in another
  // order, yet session s's turn k has the same first message, user message and max_tokens.
  agent::StepSpec spec = closed(6, 256, 32, 30);
  analysis::LengthDistribution in, out, user;
  in.kind = out.kind = user.kind = analysis::LengthDistribution::Kind::kUniform;
  in.low = 100, in.high = 400, out.low = 8, out.high = 64, user.low = 10, user.high = 90;
  spec.workload.input_tokens = in;
  spec.workload.output_tokens = out;
  spec.workload.conversation.turns_min = 2;
  spec.workload.conversation.turns_max = 6;
  spec.workload.conversation.user_tokens = user;
  spec.workload.conversation.think_time_s = 0.2;
  spec.workload.conversation.think_time_exponential = true;
  // (session, turn) → (user message tokens, max_tokens) on one target.
  using Turns = std::map<std::pair<std::uint64_t, std::int32_t>, std::pair<int, int>>;
  const auto turns_on = [&](const char* hardware, std::vector<std::uint64_t>* order) {
    sim::SimOptions o = options();
    o.hardware = hardware;
    auto b = backend(o);
    BackendStep r = b.run(spec, 0, {}, {});
    EXPECT_EQ(r.result.fatal_error, "");
    Turns turns;
    std::map<std::uint64_t, std::size_t> last;
    for (std::size_t i = 0; i < r.result.samples.size(); ++i) {
      const auto& s = r.result.samples[i];
      const auto& t = r.result.conversation.turns[i];
      int message = s.planned_input_tokens;
      if (t.turn > 1) {
        const auto& prev = r.result.samples[last.at(t.session)];
        message -= prev.input_tokens + prev.output_tokens;
      }
      turns[{t.session, t.turn}] = {message, s.planned_output_tokens};
      last[t.session] = i;
      order->push_back(t.session);
    }
    return turns;
  };
  std::vector<std::uint64_t> order_slow, order_fast;
  const Turns slow = turns_on("rtx4090-48g", &order_slow);
  const Turns fast = turns_on("h100-sxm", &order_fast);
  ASSERT_NE(order_slow, order_fast);  // the interleaving differs
  std::size_t common = 0;
  std::set<int> messages, outputs;
  for (const auto& [key, v] : slow) {
    const auto it = fast.find(key);
    if (it == fast.end()) continue;
    ++common;
    EXPECT_EQ(v, it->second) << "session " << key.first << " turn " << key.second;
    messages.insert(v.first);
    outputs.insert(v.second);
  }
  EXPECT_GT(common, 60u);
  EXPECT_GT(messages.size(), 20u);  // the lengths were drawn, not fixed
  EXPECT_GT(outputs.size(), 20u);
}

}  // namespace
}  // namespace llmcap::server

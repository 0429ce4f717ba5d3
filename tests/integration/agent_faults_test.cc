// Fault tests of the load generator (issue 9): a target that refuses, does not resolve, does
// not speak TLS, resets, stalls, trickles, throttles, fails, sends garbage, never ends, sends an
// enormous event, the wrong content type, an HTTP/1.0 close-delimited body, or restarts during
// the step. In every case the failed request carries the right ErrorClass (analysis/
// request_sample.h), the other requests of the step still succeed, StepRunner returns normally
// and the counts add up. Faulty and good requests are mixed with a cycle of scripts (request n
// follows cycle[n % size]); closed loop at concurrency 1 keeps sample index = request number.
//
// Targets: tests/fakes/scripted_target.h (net::HttpServer based) and tests/fakes/raw_target.h
// (raw bytes, for wire-level faults). Both run on their own threads; the agent runs on this one.
#include <dirent.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "agent/refusal_tracker.h"
#include "agent/step_runner.h"
#include "agent/stream_recorder.h"
#include "analysis/step_stats.h"
#include "analysis/verdict.h"
#include "tests/fakes/raw_target.h"
#include "tests/fakes/scripted_target.h"
#include "tests/sanitizers.h"

namespace llmcap::agent {
namespace {

using analysis::ErrorClass;
using fakes::RawReply;
using fakes::RawTarget;
using fakes::Script;
using fakes::ScriptedTarget;
using fakes::ScriptedTargetOptions;

constexpr std::int64_t kFaultsMs = 1'000'000;

Script faults_quick() {
  Script s;
  s.ttft_us = 5'000;
  s.itl_us = 2'000;
  s.tokens = 5;
  return s;
}

StepSpec faults_spec_for(const std::string& base_url, double duration_s = 0.3) {
  StepSpec s;
  s.target.base_url = base_url;
  s.target.model = "scripted-model";
  s.workload.input_tokens = analysis::LengthDistribution::fixed(32);
  s.workload.output_tokens = analysis::LengthDistribution::fixed(5);
  s.workload.calibrate = false;
  s.load.concurrency = 1;
  s.duration_s = duration_s;
  s.deadlines.connect_ms = 2'000;
  s.deadlines.first_token_ms = 2'000;
  s.deadlines.idle_ms = 2'000;
  s.deadlines.total_ms = 10'000;
  s.drain_timeout_s = 5;
  return s;
}

// The step ran to its end and every count agrees with the samples.
void expect_counts_add_up(const StepResult& r) {
  EXPECT_TRUE(r.fatal_error.empty()) << r.fatal_error;
  EXPECT_TRUE(r.completed);
  EXPECT_FALSE(r.cancelled);
  EXPECT_EQ(r.counts.sent, r.samples.size());
  EXPECT_EQ(r.counts.intended, r.counts.sent);  // closed loop: nothing dropped
  EXPECT_EQ(r.counts.ok + r.counts.failed + r.counts.cancelled, r.counts.sent);
  std::uint64_t ok = 0, failed = 0, cancelled = 0, tokens = 0;
  for (std::size_t i = 0; i < r.samples.size(); ++i) {
    const auto& s = r.samples[i];
    EXPECT_EQ(s.index, i);
    EXPECT_LE(s.error_message.size(), 256u);
    if (s.ok()) {
      ++ok;
      tokens += static_cast<std::uint64_t>(std::max(0, s.output_tokens));
      EXPECT_TRUE(s.error_message.empty()) << s.error_message;
    } else if (s.error == ErrorClass::kCancelled) {
      ++cancelled;
    } else {
      ++failed;
      EXPECT_FALSE(s.error_message.empty());
    }
  }
  EXPECT_EQ(r.counts.ok, ok);
  EXPECT_EQ(r.counts.failed, failed);
  EXPECT_EQ(r.counts.cancelled, cancelled);
  EXPECT_EQ(r.counts.output_tokens, tokens);
}

std::map<ErrorClass, std::uint64_t> by_class(const StepResult& r) {
  std::map<ErrorClass, std::uint64_t> m;
  for (const auto& s : r.samples) ++m[s.error];
  return m;
}

// A good request of the quick() script.
void expect_good(const analysis::RequestSample& s, std::uint32_t tokens = 5) {
  EXPECT_TRUE(s.ok()) << s.index << ": " << to_string(s.error) << " " << s.error_message;
  EXPECT_EQ(s.token_events, tokens) << s.index;
  EXPECT_EQ(s.output_tokens, static_cast<std::int32_t>(tokens)) << s.index;
  EXPECT_FALSE(s.output_tokens_estimated) << s.index;
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// Runs a step against a cycle {fault, good × (period − 1)} and checks both kinds of request.
// Returns the result for case-specific checks of the faulty samples (index % period == 0).
StepResult run_cycle(ScriptedTarget& fake, const Script& fault, std::size_t period, StepSpec spec,
                     ErrorClass expected, const std::string& message_part) {
  std::vector<Script> cycle(period, faults_quick());
  cycle[0] = fault;
  fake.set_script_cycle(cycle);
  StepResult r = StepRunner().run(spec);
  expect_counts_add_up(r);
  EXPECT_EQ(fake.completion_requests(), r.samples.size());  // no hidden retries
  EXPECT_GE(r.samples.size(), 2 * period) << "too few requests to mix faults and good ones";
  std::uint64_t faulty = 0;
  for (const auto& s : r.samples) {
    if (s.index % period != 0) {
      expect_good(s);
      continue;
    }
    ++faulty;
    EXPECT_EQ(s.error, expected) << s.index << ": " << to_string(s.error) << " " << s.error_message;
    EXPECT_TRUE(contains(s.error_message, message_part)) << s.index << ": " << s.error_message;
  }
  EXPECT_EQ(r.counts.failed, faulty);
  EXPECT_EQ(r.counts.ok, r.samples.size() - faulty);
  return r;
}

// Runs a step of duration_s against a fresh target from make_target() and, while it sent fewer
// than min_samples requests, again against a fresh target with a step twice as long (at most
// four steps: up to 8× the nominal length, so a broken case stays well under 30 s). The checks are
// on the requests actually sent, so a slow machine (sanitizers, a loaded CI host) gets a longer
// step instead of a failure; a fresh target per try keeps request n = sample n = cycle[n % size]. A
// handling that is missing or hangs still fails: its samples are misclassified, or the last,
// longest step still has too few of them. before_step runs right before each step (e.g. to reset a
// resource measurement).
template <class Target>
StepResult run_with_at_least(std::unique_ptr<Target>& target, std::size_t min_samples,
                             double duration_s,
                             const std::function<std::unique_ptr<Target>()>& make_target,
                             const std::function<void()>& before_step = {}) {
  StepResult r;
  for (int attempt = 1; attempt <= 4; ++attempt, duration_s *= 2) {
    target.reset();
    target = make_target();
    if (before_step) before_step();
    r = StepRunner().run(faults_spec_for(target->base_url(), duration_s));
    if (r.samples.size() >= min_samples || !r.fatal_error.empty()) break;
    std::printf("step of %.1f s sent %zu < %zu requests; retrying with a longer step\n", duration_s,
                r.samples.size(), min_samples);
  }
  return r;
}

// ---- Connection-level faults: every request fails the same way; the step still ends.

// A loopback port of ours that answers nothing: bound but not listening (connections are
// refused), or listening (the backlog completes the handshake) but never accepting or answering.
struct LoopbackPort {
  int fd = -1;
  int port = 0;
  explicit LoopbackPort(bool listening) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return;
    if (listening) ::listen(fd, 128);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~LoopbackPort() {
    if (fd >= 0) ::close(fd);
  }
  LoopbackPort(const LoopbackPort&) = delete;
  LoopbackPort& operator=(const LoopbackPort&) = delete;
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port); }
};

TEST(AgentFaults, ConnectionRefusedOnAPortWithNothingListening) {
  // A bound but not listening socket: the port is ours, and connecting to it is refused.
  std::optional<LoopbackPort> refusing(std::in_place, false);
  ASSERT_GT(refusing->port, 0);
  const std::string port = std::to_string(refusing->port);
  const StepResult r = StepRunner().run(faults_spec_for(refusing->url(), 0.1));
  refusing.reset();
  expect_counts_add_up(r);
  ASSERT_FALSE(r.samples.empty());
  EXPECT_EQ(r.counts.failed, r.samples.size());
  for (const auto& s : r.samples) {
    ASSERT_EQ(s.error, ErrorClass::kConnect) << to_string(s.error) << " " << s.error_message;
    EXPECT_TRUE(contains(s.error_message, "connect to 127.0.0.1:" + port)) << s.error_message;
    EXPECT_EQ(s.t_send_ns, -1);  // nothing was sent
    EXPECT_EQ(s.http_status, 0);
  }
  EXPECT_EQ(r.connections_opened, 0u);
}

TEST(AgentFaults, DnsFailureUnderDotInvalid) {
  // RFC 6761: names under .invalid never resolve. The answer ("not found") is a connect error.
  // Some resolvers answer late (a lost UDP reply costs resolv.conf's 5 s timeout): then the
  // request ends at its connect deadline, not when getaddrinfo finally returns, and the step
  // is not held by the lookup.
  StepSpec spec = faults_spec_for("http://llmcap-fault-test.invalid:8000", 0.1);
  spec.deadlines.connect_ms = 1'000;
  const StepResult r = StepRunner().run(spec);
  expect_counts_add_up(r);
  ASSERT_FALSE(r.samples.empty());
  for (const auto& s : r.samples) {
    EXPECT_TRUE(contains(s.error_message, "cannot resolve llmcap-fault-test.invalid: "))
        << s.error_message;
    if (contains(s.error_message, "no answer before the deadline")) {
      EXPECT_EQ(s.error, ErrorClass::kTimeoutConnect) << s.error_message;
      EXPECT_LT(s.t_end_ns - s.t_intended_ns, 1'300 * kFaultsMs);
    } else {
      EXPECT_EQ(s.error, ErrorClass::kConnect) << to_string(s.error) << " " << s.error_message;
    }
    EXPECT_EQ(s.t_send_ns, -1);
  }
  EXPECT_LT(r.end_ns, 1'500 * kFaultsMs);
}

// Issue 23 #1 (DNS rebinding): the daemon checked the plan's host names against its
// target_allowlist when the plan was accepted; the load generator checks what a name resolves to
// again before every connection. "localhost" resolving to 127.0.0.1 stands for a name that
// resolved to an allowed address at submit and to an internal one now.
TEST(AgentFaults, ANameResolvingOutsideTheAllowlistIsRefusedAtConnect) {
  ScriptedTarget fake(faults_quick());
  const std::string url = "http://localhost:" + std::to_string(fake.port());
  StepSpec refused = faults_spec_for(url, 0.1);
  refused.target.address_allowlist = {"10.0.0.0/8"};
  const StepResult r = StepRunner().run(refused);
  ASSERT_FALSE(r.samples.empty()) << r.fatal_error;
  for (const auto& s : r.samples) {
    ASSERT_EQ(s.error, ErrorClass::kConnect) << to_string(s.error) << " " << s.error_message;
    EXPECT_TRUE(contains(s.error_message, "host localhost now resolves to")) << s.error_message;
    EXPECT_TRUE(contains(s.error_message, "outside target_allowlist")) << s.error_message;
    EXPECT_EQ(s.t_send_ns, -1);
  }
  EXPECT_EQ(r.connections_opened, 0u);
  EXPECT_EQ(fake.completion_requests(), 0u);

  // The same name passes when its addresses are inside, or when the name itself is listed.
  for (const std::vector<std::string>& allow : {std::vector<std::string>{"127.0.0.0/8", "::1/128"},
                                                std::vector<std::string>{"localhost"}}) {
    StepSpec allowed = faults_spec_for(url, 0.1);
    allowed.target.address_allowlist = allow;
    const StepResult ok = StepRunner().run(allowed);
    expect_counts_add_up(ok);
    EXPECT_EQ(ok.counts.failed, 0u) << allow.front();
    EXPECT_GT(ok.counts.ok, 0u) << allow.front();
  }
}

TEST(AgentFaults, TlsAgainstAPlainHttpPort) {
  ScriptedTarget fake(faults_quick());
  const std::string url = "https://127.0.0.1:" + std::to_string(fake.port());
  const StepResult r = StepRunner().run(faults_spec_for(url, 0.1));
  expect_counts_add_up(r);
  ASSERT_FALSE(r.samples.empty());
  for (const auto& s : r.samples) {
    ASSERT_EQ(s.error, ErrorClass::kTls) << to_string(s.error) << " " << s.error_message;
    EXPECT_TRUE(contains(s.error_message, "TLS handshake with 127.0.0.1")) << s.error_message;
    EXPECT_GE(s.connect_ns, 0);  // TCP connected, the handshake failed
    EXPECT_EQ(s.t_send_ns, -1);
  }
  EXPECT_EQ(fake.completion_requests(), 0u);
}

// ---- Stream faults mixed with good requests.

TEST(AgentFaults, ResetMidStreamKeepsWhatArrived) {
  ScriptedTarget fake(faults_quick());
  Script fault = faults_quick();
  fault.reset_after_tokens = 2;
  const StepResult r = run_cycle(fake, fault, 3, faults_spec_for(fake.base_url()),
                                 ErrorClass::kTruncated, "connection closed mid-response");
  for (const auto& s : r.samples) {
    if (s.index % 3 == 0) {
      EXPECT_EQ(s.token_events, 2u) << s.index;
    }
  }
  EXPECT_EQ(r.itl_ns.count(), r.counts.ok * 4);  // only good requests feed ITL
}

TEST(AgentFaults, StallAfterHeadersIsAFirstTokenTimeoutAtThePlanDeadline) {
  ScriptedTarget fake(faults_quick());
  StepSpec spec = faults_spec_for(fake.base_url(), 0.8);
  spec.target.api = ApiKind::kChat;  // the role-only chunk arrives, and is not a token
  spec.deadlines.first_token_ms = 250;
  Script fault = faults_quick();
  fault.stall_after_tokens = 0;
  fault.stall_us = 3'000'000;
  const StepResult r =
      run_cycle(fake, fault, 2, spec, ErrorClass::kTimeoutFirstToken, "deadline passed");
  for (const auto& s : r.samples) {
    if (s.index % 2 != 0) continue;
    EXPECT_EQ(s.http_status, 200);
    EXPECT_GE(s.t_headers_ns, 0);  // headers came; the stall is after them
    EXPECT_EQ(s.token_events, 0u);
    EXPECT_EQ(s.t_first_token_ns, -1);
    const std::int64_t waited = s.t_end_ns - s.t_intended_ns;
    EXPECT_GE(waited, 250 * kFaultsMs);
    EXPECT_LT(waited, 450 * kFaultsMs);
  }
}

TEST(AgentFaults, StallAfterNTokensIsAnIdleTimeoutAtThePlanDeadline) {
  ScriptedTarget fake(faults_quick());
  StepSpec spec = faults_spec_for(fake.base_url(), 0.6);
  spec.deadlines.idle_ms = 150;
  Script fault = faults_quick();
  fault.stall_after_tokens = 3;
  fault.stall_us = 3'000'000;
  const StepResult r = run_cycle(fake, fault, 2, spec, ErrorClass::kTimeoutIdle, "deadline passed");
  for (const auto& s : r.samples) {
    if (s.index % 2 != 0) continue;
    EXPECT_EQ(s.token_events, 3u);
    const std::int64_t gap = s.t_end_ns - s.t_last_token_ns;
    EXPECT_GE(gap, 150 * kFaultsMs);
    EXPECT_LT(gap, 350 * kFaultsMs);
  }
}

TEST(AgentFaults, Http429WithRetryAfterIsCountedNotRetriedNorWaitedFor) {
  ScriptedTarget fake(faults_quick());
  Script fault = faults_quick();
  fault.status = 429;
  fault.retry_after = "30";
  const StepSpec spec = faults_spec_for(fake.base_url());
  const StepResult r = run_cycle(fake, fault, 2, spec, ErrorClass::kHttp429, "HTTP 429: {");
  for (const auto& s : r.samples) {
    if (s.index % 2 == 0) {
      EXPECT_EQ(s.http_status, 429);
    }
  }
  // A capacity test measures throttling; sleeping 30 s on Retry-After would hide it (and
  // overrun the step).
  EXPECT_LT(r.end_ns, static_cast<std::int64_t>(spec.duration_s * 1e9) + 500 * kFaultsMs);
}

TEST(AgentFaults, Http5xxBursts) {
  std::vector<Script> cycle(8, faults_quick());
  for (int i = 0; i < 3; ++i) cycle[static_cast<std::size_t>(i)].status = 503;
  cycle[3].status = 500;
  std::unique_ptr<ScriptedTarget> fake;
  const StepResult r = run_with_at_least<ScriptedTarget>(fake, 16, 0.4, [&] {
    auto t = std::make_unique<ScriptedTarget>(faults_quick());
    t->set_script_cycle(cycle);
    return t;
  });
  expect_counts_add_up(r);
  ASSERT_GE(r.samples.size(), 16u);  // two whole bursts and their recoveries
  EXPECT_EQ(fake->completion_requests(), r.samples.size());  // no hidden retries
  for (const auto& s : r.samples) {
    const std::size_t k = s.index % 8;
    if (k < 4) {
      EXPECT_EQ(s.error, ErrorClass::kHttp5xx) << s.index << " " << s.error_message;
      EXPECT_EQ(s.http_status, k < 3 ? 503 : 500);
      EXPECT_TRUE(contains(s.error_message, "scripted failure")) << s.error_message;
    } else {
      expect_good(s);
    }
  }
  const auto m = by_class(r);
  EXPECT_EQ(m.at(ErrorClass::kHttp5xx), r.counts.failed);
}

TEST(AgentFaults, MalformedJsonIsAProtocolErrorWithTruncatedOffendingBytes) {
  ScriptedTarget fake(faults_quick());
  Script fault = faults_quick();
  fault.malformed_after_tokens = 2;
  fault.malformed_payload = "{\"choices\":[{\"text\":\"" + std::string(10'000, 'y');
  const StepResult r = run_cycle(fake, fault, 3, faults_spec_for(fake.base_url()),
                                 ErrorClass::kProtocol, "malformed JSON in SSE event (");
  for (const auto& s : r.samples) {
    if (s.index % 3 != 0) continue;
    EXPECT_TRUE(contains(s.error_message, "{\"choices\":[{\"text\":\"yyyy")) << s.error_message;
    EXPECT_LE(s.error_message.size(), 256u);
    EXPECT_EQ(s.token_events, 2u);  // what arrived before the bad event is kept
  }
}

TEST(AgentFaults, MalformedSseAndChunkFraming) {
  // 0: SSE data that is not JSON; 1: a 200 event stream with no data event at all (garbage
  // lines, a close-delimited body); 2: broken chunk framing; 3: good.
  RawReply not_json;
  not_json.head =
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
      "data: <!DOCTYPE html><html>\n\n";
  RawReply no_events;
  no_events.head =
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
      "this is not\nserver-sent events\n\n";
  RawReply bad_chunk;
  bad_chunk.head =
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
      "Connection: close\r\n\r\nzz\r\ndata: {}\r\n";
  std::unique_ptr<RawTarget> fake;
  const StepResult r = run_with_at_least<RawTarget>(fake, 8, 0.2, [&] {
    return std::make_unique<RawTarget>(
        std::vector<RawReply>{not_json, no_events, bad_chunk, RawTarget::ok_chunked(5)});
  });
  expect_counts_add_up(r);
  ASSERT_GE(r.samples.size(), 8u);  // each reply twice
  EXPECT_EQ(fake->served().size(), r.samples.size());
  const char* expected_message[] = {"malformed JSON in SSE event", "without any SSE data event",
                                    "read response body"};
  for (const auto& s : r.samples) {
    const std::size_t k = s.index % 4;
    if (k == 3) {
      expect_good(s);
      continue;
    }
    EXPECT_EQ(s.error, ErrorClass::kProtocol) << s.index << " " << s.error_message;
    EXPECT_TRUE(contains(s.error_message, expected_message[k]))
        << s.index << " " << s.error_message;
  }
}

TEST(AgentFaults, SlowTrickleOneByteAtATimeIsStillCorrect) {
  RawReply trickle = RawTarget::ok_chunked(3);
  trickle.byte_interval_us = 100;  // headers, chunk framing and events: one byte per write
  // The trickled reply takes head.size() timer-paced writes: on a loaded machine each one can
  // be late, so the step is as long as it takes to see two trickled and two normal replies.
  std::unique_ptr<RawTarget> fake;
  const StepResult r = run_with_at_least<RawTarget>(fake, 4, 0.3, [&] {
    return std::make_unique<RawTarget>(std::vector<RawReply>{trickle, RawTarget::ok_chunked(5)});
  });
  expect_counts_add_up(r);
  ASSERT_GE(r.samples.size(), 4u);
  bool stamps_differ = false;
  for (const auto& s : r.samples) {
    expect_good(s, s.index % 2 == 0 ? 3 : 5);
    EXPECT_EQ(s.finish_reason, analysis::FinishReason::kLength);
    EXPECT_EQ(s.input_tokens, 10);
    EXPECT_LE(s.t_first_token_ns, s.t_last_token_ns) << s.index;
    if (s.index % 2 == 0 && s.t_last_token_ns > s.t_first_token_ns) stamps_differ = true;
  }
  // All of it, byte by byte, up to the whole answer (the usage event). The fake counts a write
  // when its completion handler runs, which on a loaded machine can come after the client read
  // the last byte and sent its next request (CI under load: 582 of 591 counted), so the counts
  // are awaited (up to 10 s) rather than read once. After the usage event the answer is whole
  // and the client waits only a grace (StreamRecorder::kAfterCompleteGraceNs) for [DONE] and
  // the last chunk; one byte per timer tick can outlast it on a loaded machine (CI: 581 of 591
  // written when the client closed), so the reply is either written whole or cut after the
  // answer by the client's close. The last reply's count is not checked (the step may have
  // ended inside it).
  const std::size_t answer_end = trickle.head.find("data: [DONE]");
  ASSERT_NE(answer_end, std::string::npos);
  const auto counted = [&](const fakes::RawServed& s) {
    return s.bytes_written == trickle.head.size() ||
           (s.write_failed && s.bytes_written >= answer_end);
  };
  const auto all_counted = [&](const std::vector<fakes::RawServed>& served) {
    for (std::size_t i = 0; i + 1 < served.size(); i += 2)
      if (!counted(served[i])) return false;
    return true;
  };
  auto served = fake->served();
  for (int tries = 0; tries < 1000 && !all_counted(served); ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    served = fake->served();
  }
  ASSERT_EQ(served.size(), r.samples.size());
  for (std::size_t i = 0; i + 1 < served.size(); i += 2) {
    EXPECT_TRUE(counted(served[i])) << i << ": " << served[i].bytes_written << " of "
                                    << trickle.head.size() << " bytes written, answer ends at "
                                    << answer_end << ", write failed: " << served[i].write_failed;
  }
  // The three events came in separate bytes, ≥ 100 µs apart each, so their stamps differ (a
  // scheduler delay of the agent thread can merge them in one read now and then, not always).
  EXPECT_TRUE(stamps_differ) << "every trickled reply had one stamp for all its tokens";
}

TEST(AgentFaults, BodyThatNeverEndsHitsTheTotalDeadline) {
  ScriptedTarget fake(faults_quick());
  StepSpec spec = faults_spec_for(fake.base_url(), 1.0);  // 400 + 13 + 400 ms: four requests start
  spec.deadlines.total_ms = 400;
  Script fault = faults_quick();
  fault.endless = true;
  fault.itl_us = 10'000;
  const StepResult r =
      run_cycle(fake, fault, 2, spec, ErrorClass::kTimeoutTotal, "deadline passed");
  for (const auto& s : r.samples) {
    if (s.index % 2 != 0) continue;
    EXPECT_GE(s.token_events, 20u);  // tokens kept coming; only the total deadline ends it
    const std::int64_t took = s.t_end_ns - s.t_intended_ns;
    EXPECT_GE(took, 400 * kFaultsMs);
    EXPECT_LT(took, 600 * kFaultsMs);
  }
}

// Peak resident set of this process (VmHWM), bytes; 0 when /proc is not readable.
std::int64_t peak_rss_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  return 0;
}

TEST(AgentFaults, EnormousEventIsBoundedAndAProtocolError) {
  constexpr std::uint64_t kHugeBytes = 50ull * 1024 * 1024;  // one event, no line end
  RawReply huge;
  huge.head =
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\ndata: ";
  huge.filler_bytes = kHugeBytes;
  huge.tail = "\n\n";
  std::unique_ptr<RawTarget> fake;
  std::int64_t rss_before = 0;
  const StepResult r = run_with_at_least<RawTarget>(
      fake, 4, 0.8,
      [&] {
        return std::make_unique<RawTarget>(std::vector<RawReply>{huge, RawTarget::ok_chunked(5)});
      },
      [&] {
        // Reset the peak RSS so it measures this step (Linux: "5" > clear_refs).
        { std::ofstream("/proc/self/clear_refs") << "5"; }
        rss_before = peak_rss_bytes();
      });
  const std::int64_t rss_growth = peak_rss_bytes() - rss_before;
  expect_counts_add_up(r);
  ASSERT_GE(r.samples.size(), 4u);  // huge, good, huge, good, ...
  for (const auto& s : r.samples) {
    if (s.index % 2 != 0) {
      expect_good(s);
      continue;
    }
    EXPECT_EQ(s.error, ErrorClass::kProtocol) << s.index << " " << s.error_message;
    EXPECT_TRUE(contains(s.error_message, "SSE event exceeds 4194304 bytes")) << s.error_message;
  }
  const auto served = fake->served();
  ASSERT_GE(served.size(), 4u);
  for (const std::size_t i : {0, 2}) {
    EXPECT_TRUE(served[i].write_failed) << i;                 // the agent stopped reading
    EXPECT_LT(served[i].bytes_written, kHugeBytes / 2) << i;  // long before the end
  }
  std::printf("enormous event: server wrote %.1f MB before the agent gave up; peak RSS +%.1f MB\n",
              static_cast<double>(served[0].bytes_written) / 1e6,
              static_cast<double>(rss_growth) / 1e6);
  // Memory stays bounded: an unbounded 50 MB event alone would exceed this. Not under ASan,
  // whose quarantine keeps freed buffers resident and recycles them when it likes (measured
  // here: +24 to +56 MB for the same bounded step, depending on earlier tests), so peak RSS
  // says nothing there either way; the wire-level checks above (the agent stopped reading
  // long before the end) still fail under ASan if the bound is gone.
  if (test_support::kUnderSanitizers) {
    std::printf("peak RSS bound not checked under ASan (quarantine)\n");
  } else if (rss_before > 0) {
    EXPECT_LT(rss_growth, 32ll * 1024 * 1024);
  }
}

TEST(AgentFaults, WrongContentTypeHtml200) {
  ScriptedTarget fake(faults_quick());
  Script fault = faults_quick();
  fault.html_page = true;
  run_cycle(fake, fault, 2, faults_spec_for(fake.base_url()), ErrorClass::kProtocol,
            "expected Content-Type text/event-stream, got 'text/html");
}

TEST(AgentFaults, Http10CloseDelimitedBodyIsReadToTheEnd) {
  // HTTP/1.0: no length, no chunking; the body ends when the server closes (with and without
  // [DONE]).
  RawReply with_done;
  with_done.head =
      "HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + RawTarget::sse_events(4, true);
  RawReply without_done = with_done;
  without_done.head = "HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" +
                      RawTarget::sse_events(4, false);
  RawTarget fake({with_done, without_done});
  const StepResult r = StepRunner().run(faults_spec_for(fake.base_url(), 0.2));
  expect_counts_add_up(r);
  ASSERT_GE(r.samples.size(), 4u);
  for (const auto& s : r.samples) {
    expect_good(s, 4);
    EXPECT_EQ(s.http_status, 200);
    EXPECT_EQ(s.input_tokens, 10);
  }
  EXPECT_EQ(r.connections_opened, r.samples.size());  // never reused after a close
  EXPECT_EQ(fake.served().size(), r.samples.size());
}

// Three of 24 token events, no finish_reason, no usage, no [DONE]: a cut answer, whatever framing
// carried it — never an ok request with 3 estimated tokens.
std::string three_bare_tokens() {
  std::string s;
  for (int i = 0; i < 3; ++i)
    s += "data: {\"id\":\"cmpl-cut\",\"choices\":[{\"index\":0,\"text\":\" tok\","
         "\"finish_reason\":null}]}\n\n";
  return s;
}

TEST(AgentFaults, TruncatedStreamsAreTruncatedErrorsForEveryFraming) {
  RawReply close_delimited;  // HTTP/1.1, Connection: close, no length: the close ends the body
  close_delimited.head =
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n" +
      three_bare_tokens();
  RawReply chunked_clean;  // chunked, and a clean last chunk after 3 tokens
  chunked_clean.head =
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
      "Connection: close\r\n\r\n" +
      RawTarget::chunked(three_bare_tokens());
  RawReply short_length;  // Content-Length promises more than arrives before the FIN
  const std::string body = three_bare_tokens();
  short_length.head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: " +
                      std::to_string(body.size() * 8) + "\r\n\r\n" + body;
  RawReply bare_done = close_delimited;  // [DONE] without usage or finish_reason
  bare_done.head += "data: [DONE]\n\n";
  std::unique_ptr<RawTarget> fake;
  const StepResult r = run_with_at_least<RawTarget>(fake, 10, 0.2, [&] {
    return std::make_unique<RawTarget>(std::vector<RawReply>{
        close_delimited, chunked_clean, short_length, bare_done, RawTarget::ok_chunked(5)});
  });
  expect_counts_add_up(r);
  ASSERT_GE(r.samples.size(), 10u);
  for (const auto& s : r.samples) {
    if (s.index % 5 == 4) {
      expect_good(s);
      continue;
    }
    EXPECT_EQ(s.error, ErrorClass::kTruncated) << s.index << " " << s.error_message;
    EXPECT_EQ(s.token_events, 3u) << s.index;  // what arrived is kept
    EXPECT_FALSE(s.ok());
  }
  std::uint64_t good = 0;
  for (const auto& s : r.samples) good += s.index % 5 == 4 ? 1 : 0;
  EXPECT_EQ(r.counts.ok, good);
}

TEST(AgentFaults, DoneEndsTheRequestWhenTheServerHoldsTheConnection) {
  // [DONE], then the server keeps the connection open for 3 s: the request is over at [DONE]
  // (plus the recorder's short grace), ok, never timeout-total.
  RawReply held;
  held.head =
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: keep-alive\r\n\r\n" +
      RawTarget::sse_events(4, true);
  held.hold_open_ms = 3'000;
  RawTarget fake({held});
  StepSpec spec = faults_spec_for(fake.base_url(), 0.3);
  spec.deadlines.total_ms = 1'000;  // holding to the end would be a total timeout
  const auto t0 = std::chrono::steady_clock::now();
  const StepResult r = StepRunner().run(spec);
  const double took_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  expect_counts_add_up(r);
  ASSERT_FALSE(r.samples.empty());
  for (const auto& s : r.samples) {
    expect_good(s, 4);
    // E2E ends at the last token, within the grace of [DONE], not when the server hangs up.
    EXPECT_LT(s.t_end_ns - s.t_last_token_ns,
              StreamRecorder::kAfterCompleteGraceNs + 250 * kFaultsMs)
        << s.index;
  }
  EXPECT_LT(took_s, 2.5);  // the step did not wait for any held connection
}

TEST(AgentFaults, AnUnreachableTargetEndsTheStepAsAnErrorAfterBackingOff) {
  // 64 closed-loop slots against a port nobody listens on: refusals back off (10 ms doubling
  // to 1 s, shared by the slots) and the step ends with "target unreachable" once 2 s passed
  // without an answer — not tens of thousands of connects and a measured step.
  std::optional<LoopbackPort> refusing(std::in_place, false);
  ASSERT_GT(refusing->port, 0);
  StepSpec spec = faults_spec_for(refusing->url(), 10);
  spec.load.concurrency = 64;
  const auto t0 = std::chrono::steady_clock::now();
  const StepResult r = StepRunner().run(spec);
  const double took_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  refusing.reset();
  EXPECT_TRUE(contains(r.fatal_error, "target unreachable")) << r.fatal_error;
  EXPECT_LT(took_s, 5.0);
  // 64 slots × (1 + ~8 backed-off retries in 2 s) at most: hundreds, not tens of thousands.
  EXPECT_LT(r.samples.size(), 64u * 12u) << r.samples.size();
  EXPECT_GE(r.samples.size(), RefusalTracker::kMinRefusals);
}

TEST(AgentFaults, CalibrationProbesAreBoundedByThePlansTimeoutAndGiveUpOnSilence) {
  // Issue 24 #3 / issue 23 #8: a target that answers nothing held a 1 s step for 62 s (60 s
  // probes). A probe waits at most the plan's first-token timeout, and the first unanswered
  // probe ends calibration (the default ratio is used).
  LoopbackPort silent(true);
  ASSERT_GT(silent.port, 0);
  StepSpec spec = faults_spec_for(silent.url(), 0.3);
  spec.workload.calibrate = true;
  spec.deadlines.first_token_ms = 300;
  spec.drain = DrainPolicy::kCancel;
  const auto t0 = std::chrono::steady_clock::now();
  const StepResult r = StepRunner().run(spec);
  const double took_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(took_s, 3.0);
  EXPECT_TRUE(contains(r.calibration.note, "did not answer a calibration probe within 300 ms"))
      << r.calibration.note;
  EXPECT_EQ(r.calibration.method, "default");
}

TEST(AgentFaults, CancelInterruptsACalibrationProbeAtOnce) {
  LoopbackPort silent(true);
  ASSERT_GT(silent.port, 0);
  StepSpec spec = faults_spec_for(silent.url(), 10);
  spec.workload.calibrate = true;
  spec.deadlines.first_token_ms = 120'000;  // the probe alone would wait 60 s
  std::stop_source stop;
  std::thread canceller([&stop] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stop.request_stop();
  });
  const auto t0 = std::chrono::steady_clock::now();
  const StepResult r = StepRunner().run(spec, stop.get_token());
  const double took_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  canceller.join();
  EXPECT_TRUE(r.cancelled);
  EXPECT_LT(took_s, 1.5);
  EXPECT_TRUE(r.samples.empty());
}

TEST(AgentFaults, TargetRestartingDuringAStep) {
  Script s = faults_quick();
  s.itl_us = 20'000;  // ≈ 85 ms per request: some are in flight when the target goes away
  auto fake = std::make_unique<ScriptedTarget>(s);
  ScriptedTargetOptions same_port;
  same_port.port = fake->port();
  StepSpec spec = faults_spec_for(fake->base_url(), 1.2);
  spec.load.concurrency = 2;
  StepResult r;
  std::thread agent([&] { r = StepRunner().run(spec); });
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  fake.reset();  // stop: open streams are closed, new connections refused
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  fake = std::make_unique<ScriptedTarget>(s, same_port);
  agent.join();

  expect_counts_add_up(r);
  const auto m = by_class(r);
  for (const auto& [error, n] : m) {
    EXPECT_TRUE(error == ErrorClass::kNone || error == ErrorClass::kConnect ||
                error == ErrorClass::kProtocol || error == ErrorClass::kTruncated)
        << to_string(error) << " × " << n;
  }
  EXPECT_GT(m.count(ErrorClass::kConnect), 0u) << "no request saw the target down";
  // Good requests before the stop and after the restart.
  std::int64_t first_ok_end = -1, last_ok_end = -1;
  for (const auto& x : r.samples) {
    if (!x.ok()) continue;
    EXPECT_EQ(x.token_events, 5u);
    if (first_ok_end < 0) first_ok_end = x.t_end_ns;
    last_ok_end = x.t_end_ns;
  }
  EXPECT_GE(first_ok_end, 0);
  EXPECT_LT(first_ok_end, 400 * kFaultsMs);
  EXPECT_GT(last_ok_end, 700 * kFaultsMs);
  EXPECT_GT(fake->completion_requests(), 0u);  // the restarted target served the rest
}

// ---- The client's own limits (issue 35 #5).

// Descriptors open in this process now.
int open_descriptors() {
  int n = 0;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (const dirent* e = ::readdir(d)) n += e->d_name[0] != '.';
    ::closedir(d);
    --n;  // the directory's own
  }
  return n;
}

// A ScriptedTarget in a child process, so that lowering this process's descriptor limit leaves
// the target's alone (in one process, the target could not accept either). The child serves
// until the parent closes its end of the pipe (or dies).
class TargetInChildProcess {
 public:
  explicit TargetInChildProcess(const Script& script) {
    int port_pipe[2], hold_pipe[2];
    if (::pipe(port_pipe) != 0 || ::pipe(hold_pipe) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(port_pipe[0]);
      ::close(hold_pipe[1]);
      {
        ScriptedTarget target(script);
        const std::uint16_t port = target.port();
        if (::write(port_pipe[1], &port, sizeof port) != sizeof port) ::_exit(1);
        char byte;
        while (::read(hold_pipe[0], &byte, 1) > 0) {
        }
      }
      ::_exit(0);
    }
    ::close(port_pipe[1]);
    ::close(hold_pipe[0]);
    hold_fd_ = hold_pipe[1];
    if (pid_ > 0 && ::read(port_pipe[0], &port_, sizeof port_) != sizeof port_) port_ = 0;
    ::close(port_pipe[0]);
  }
  ~TargetInChildProcess() {
    if (hold_fd_ >= 0) ::close(hold_fd_);
    if (pid_ > 0) ::waitpid(pid_, nullptr, 0);
  }
  TargetInChildProcess(const TargetInChildProcess&) = delete;
  TargetInChildProcess& operator=(const TargetInChildProcess&) = delete;
  std::uint16_t port() const { return port_; }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  pid_t pid_ = -1;
  int hold_fd_ = -1;
  std::uint16_t port_ = 0;
};

// Lowers this process's soft descriptor limit for its lifetime.
class ScopedDescriptorLimit {
 public:
  explicit ScopedDescriptorLimit(rlim_t soft) {
    ::getrlimit(RLIMIT_NOFILE, &saved_);
    rlimit lowered = saved_;
    lowered.rlim_cur = soft;
    ok_ = ::setrlimit(RLIMIT_NOFILE, &lowered) == 0;
  }
  ~ScopedDescriptorLimit() { ::setrlimit(RLIMIT_NOFILE, &saved_); }
  ScopedDescriptorLimit(const ScopedDescriptorLimit&) = delete;
  ScopedDescriptorLimit& operator=(const ScopedDescriptorLimit&) = delete;
  bool ok() const { return ok_; }

 private:
  rlimit saved_{};
  bool ok_ = false;
};

TEST(AgentFaults, RunningOutOfDescriptorsIsTheClientsFailureAndTheStepInconclusive) {
  // Labelled `timing` (tests/integration/CMakeLists.txt), so the sanitizer lane never runs it:
  // the sanitizer runtimes do not survive running out of descriptors.
  if (test_support::kUnderSanitizers)
    GTEST_SKIP() << "exhausting descriptors breaks the sanitizer runtime; runs in the release lane";
  // 96 closed-loop slots with room for about 24 connections (ulimit -n, as in the issue's
  // c=900 run): the requests that found no descriptor are client-resources failures naming
  // EMFILE and ulimit -n, never connect errors of the target; the slots that connected keep
  // measuring; the step's error rate leaves them out and its verdict is inconclusive,
  // client-bound — never a pass or a fail.
  Script script = faults_quick();
  script.itl_us = 10'000;  // ≈ 45 ms a request
  TargetInChildProcess target(script);
  ASSERT_GT(target.port(), 0);
  StepSpec spec = faults_spec_for(target.base_url(), 0.6);
  spec.load.concurrency = 96;
  StepResult r;
  {
    // The io_context's epoll, eventfd and timerfd and the resolver's thread take a few; the
    // rest is for connections.
    ScopedDescriptorLimit limit(static_cast<rlim_t>(open_descriptors() + 30));
    ASSERT_TRUE(limit.ok());
    r = StepRunner().run(spec);
  }
  EXPECT_TRUE(r.fatal_error.empty()) << r.fatal_error;
  const auto m = by_class(r);
  for (const auto& [error, n] : m) {
    EXPECT_TRUE(error == ErrorClass::kNone || error == ErrorClass::kClientResources ||
                error == ErrorClass::kCancelled)
        << to_string(error) << " × " << n;
  }
  for (const auto& s : r.samples) {
    if (s.error == ErrorClass::kConnect) {
      ADD_FAILURE() << "a connect error of the target: " << s.error_message;
      break;
    }
  }
  ASSERT_GT(m.count(ErrorClass::kClientResources), 0u) << "no slot ran out of descriptors";
  EXPECT_GT(m.count(ErrorClass::kNone), 0u) << "the slots that connected measured nothing";
  std::size_t short_of_descriptors = 0;
  for (const auto& s : r.samples) {
    if (s.error != ErrorClass::kClientResources) continue;
    ++short_of_descriptors;
    EXPECT_TRUE(contains(s.error_message, "client resources exhausted: connect to 127.0.0.1:"))
        << s.error_message;
    EXPECT_TRUE(contains(s.error_message, "EMFILE (Too many open files)")) << s.error_message;
    EXPECT_TRUE(contains(s.error_message, "ulimit -n")) << s.error_message;
    EXPECT_EQ(s.t_send_ns, -1);  // nothing reached the target
  }
  std::printf("%zu samples: %zu ok, %zu short of descriptors, %llu connections opened\n",
              r.samples.size(),
              static_cast<std::size_t>(m.count(ErrorClass::kNone) ? m.at(ErrorClass::kNone) : 0),
              short_of_descriptors, static_cast<unsigned long long>(r.connections_opened));
  // Each starved slot backs off (10 ms doubling): a few per slot over the step, not thousands.
  EXPECT_LT(short_of_descriptors, 96u * 15u);

  analysis::StepInput in;
  in.samples = r.samples;
  in.window_start_ns = r.window_start_ns;
  in.window_end_ns = r.window_end_ns;
  in.concurrency = spec.load.concurrency;
  in.itl_ns = r.itl_ns;
  analysis::SlaSpec sla;
  sla.bounds = {{analysis::SlaMetric::kTtft, 95, 60'000}};
  sla.min_requests = 1;
  in.sla = sla;
  const analysis::StepStats st = analysis::compute_step_stats(in);
  EXPECT_GT(st.client_resources, 0u);
  EXPECT_EQ(st.client_resources_in_step, short_of_descriptors);
  EXPECT_EQ(st.failed + st.timed_out, 0u);
  EXPECT_DOUBLE_EQ(st.error_rate, 0);  // the target erred on nothing
  const analysis::StepVerdict v = analysis::judge_step(st, sla);
  EXPECT_EQ(v.outcome, analysis::Outcome::kInconclusive);
  EXPECT_TRUE(v.client_bound);
  bool named = false;
  for (const auto& reason : v.reasons) {
    if (reason.code != "client_resources") continue;
    named = true;
    EXPECT_EQ(reason.status, analysis::CheckStatus::kMissed);
    EXPECT_TRUE(contains(reason.text, "client resources exhausted: " +
                                          std::to_string(short_of_descriptors) + " request(s)"))
        << reason.text;
    EXPECT_TRUE(contains(reason.text, "EMFILE")) << reason.text;
  }
  EXPECT_TRUE(named);
}

}  // namespace
}  // namespace llmcap::agent

// Tests of ShardCoordinator (server/fleet/shard_coordinator.h) driven directly, with fake agents on
// threads: the step is split and merged, a duplicate upload is stored once, a clock offset
// over the bound and missing agents fail the step with reasons naming the shards.
#include "server/fleet/shard_coordinator.h"

#include <gtest/gtest.h>

#include <thread>

#include "server/fleet/shard_codec.h"

namespace llmcap::server {
namespace {

using nlohmann::json;

api::PlanAgents agents(int count) {
  api::PlanAgents a;
  a.count = count;
  a.launch = "manual";
  a.regions = {"eu", "us"};
  a.start_delay_ms = 0;
  a.register_timeout_s = 2;
  a.result_timeout_s = 2;
  return a;
}

agent::StepSpec closed_spec(int concurrency) {
  agent::StepSpec s;
  s.load.kind = agent::LoadKind::kClosed;
  s.load.concurrency = concurrency;
  s.warmup_s = 0;
  s.duration_s = 0.1;
  return s;
}

// A fake agent: polls for the assignment, "runs" it by producing one sample per client, and
// uploads (twice when `twice`).
void fake_agent(ShardCoordinator& c, int shard, bool twice) {
  for (int i = 0; i < 400; ++i) {
    const auto a = c.next_assignment(shard, -1);
    if (a.http_status == 200 && a.body["status"] == "run") {
      agent::StepSpec spec;
      ASSERT_EQ(step_spec_from_json(a.body["spec"], spec), "");
      agent::StepResult r;
      r.completed = true;
      r.window_end_ns = 100'000'000;
      for (int k = 0; k < spec.load.concurrency; ++k) {
        analysis::RequestSample s;
        s.index = static_cast<std::uint64_t>(k);
        s.t_intended_ns = 1000 * (shard + 10 * k);
        s.t_send_ns = s.t_intended_ns + 7;
        r.samples.push_back(s);
        r.response_ids.push_back("");
        ++r.counts.sent;
      }
      const json body{{"step", a.body["step"]}, {"result", step_result_to_json(r)}};
      const std::string key = a.body["idempotency_key"];
      EXPECT_EQ(c.upload(shard, key, body).body["stored"], true);
      if (twice) {
        const auto again = c.upload(shard, key, body);
        EXPECT_EQ(again.http_status, 200);
        EXPECT_EQ(again.body["duplicate"], true);
      }
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ADD_FAILURE() << "shard " << shard << " got no assignment";
}

TEST(ShardCoordinator, SplitsRunsAndMergesAStep) {
  ShardCoordinator c({"job_1", agents(3), {}, {}});
  for (int k = 0; k < 3; ++k) {
    const auto r = c.register_shard(k, {{"clock_offset_ms", 0.2}, {"rtt_ms", 0.1}});
    ASSERT_EQ(r.http_status, 200) << r.error;
  }
  EXPECT_EQ(c.register_shard(3, {{"clock_offset_ms", 0}, {"rtt_ms", 0}}).http_status, 404);
  std::vector<std::thread> fakes;
  for (int k = 0; k < 3; ++k) fakes.emplace_back(fake_agent, std::ref(c), k, k == 1);
  const BackendStep step = c.run(closed_spec(7), 5, {}, {});
  for (auto& t : fakes) t.join();
  EXPECT_EQ(step.result.fatal_error, "");
  EXPECT_EQ(step.result.samples.size(), 7u);  // 3 + 2 + 2 clients; the duplicate stored once
  EXPECT_EQ(step.result.counts.sent, 7u);
  for (std::size_t i = 0; i < 7; ++i) EXPECT_EQ(step.result.samples[i].index, i);
  EXPECT_EQ(step.result.schedule_lag.p99_ns, 7);
  ASSERT_EQ(step.extra["shards"].size(), 3u);
  EXPECT_EQ(step.extra["shards"][1]["region"], "us");
  EXPECT_EQ(step.extra["sample_regions"].size(), 7u);
  // The step is over: a late upload is refused, and after finish() agents are told "done".
  EXPECT_EQ(c.upload(0, "k", {{"step", 5}, {"result", step_result_to_json({})}}).http_status, 409);
  c.finish("finished");
  EXPECT_EQ(c.next_assignment(0, 5).body["status"], "done");
}

TEST(ShardCoordinator, ClockOffsetOverTheBoundIsRefusedAndFailsTheStep) {
  ShardCoordinator c({"job_2", agents(2), {}, {}});
  ASSERT_EQ(c.register_shard(0, {{"clock_offset_ms", 1}, {"rtt_ms", 0.1}}).http_status, 200);
  const auto r = c.register_shard(1, {{"clock_offset_ms", -12.5}, {"rtt_ms", 0.3}});
  EXPECT_EQ(r.http_status, 422);
  EXPECT_NE(r.error.find("shard 1 rejected: its clock is -12.5 ms off"), std::string::npos)
      << r.error;
  EXPECT_NE(r.error.find("max_clock_offset_ms 5"), std::string::npos) << r.error;
  const BackendStep step = c.run(closed_spec(2), 0, {}, {});
  EXPECT_EQ(step.result.fatal_error, r.error);
}

TEST(ShardCoordinator, MissingAgentsAreNamed) {
  auto a = agents(3);
  a.register_timeout_s = 1;
  ShardCoordinator c({"job_3", a, {}, {}});
  ASSERT_EQ(c.register_shard(1, {{"clock_offset_ms", 0}, {"rtt_ms", 0}}).http_status, 200);
  const BackendStep step = c.run(closed_spec(3), 0, {}, {});
  EXPECT_NE(step.result.fatal_error.find("missing shard(s) 0, 2 of 3"), std::string::npos)
      << step.result.fatal_error;
}

TEST(ShardCoordinator, MissingUploadsAreNamedAfterTheResultTimeout) {
  auto a = agents(2);
  a.result_timeout_s = 1;
  ShardCoordinator c({"job_4", a, {}, {}});
  for (int k = 0; k < 2; ++k)
    ASSERT_EQ(c.register_shard(k, {{"clock_offset_ms", 0}, {"rtt_ms", 0}}).http_status, 200);
  std::thread only(fake_agent, std::ref(c), 0, false);
  const BackendStep step = c.run(closed_spec(2), 0, {}, {});
  only.join();
  EXPECT_NE(step.result.fatal_error.find("no result from shard(s) 1 of 2"), std::string::npos)
      << step.result.fatal_error;
}

TEST(ShardCoordinator, KubernetesLaunchWithoutALauncherSaysSo) {
  auto a = agents(1);
  a.launch = "kubernetes";
  ShardCoordinator c({"job_5", a, {}, {}});
  EXPECT_NE(c.run(closed_spec(1), 0, {}, {}).result.fatal_error.find("no Kubernetes launcher"),
            std::string::npos);
  std::string launched;
  ShardCoordinator d({"job_6",
                      a,
                      [&](const std::string& job, const api::PlanAgents&) {
                        launched = job;
                        return std::string("forbidden: RBAC");
                      },
                      {}});
  EXPECT_EQ(d.run(closed_spec(1), 0, {}, {}).result.fatal_error, "forbidden: RBAC");
  EXPECT_EQ(launched, "job_6");
}

}  // namespace
}  // namespace llmcap::server

// Tests of ShardHub (server/fleet/shard_hub.h): coordinators by job id, closed jobs answer "done",
// and the Kubernetes launcher from K8sOptions: mode "print" launches (renders the manifest) and
// a bad setting fails the step with the launcher's message; mode "off" says none is configured.
#include "server/fleet/shard_hub.h"

#include <gtest/gtest.h>

namespace llmcap::server {
namespace {

api::PlanAgents hub_agents(const std::string& launch) {
  api::PlanAgents a;
  a.count = 2;
  a.launch = launch;
  a.register_timeout_s = 1;
  return a;
}

agent::StepSpec one_client() {
  agent::StepSpec s;
  s.load.concurrency = 1;
  s.duration_s = 0.1;
  return s;
}

TEST(ShardHub, OpenFindCloseAndDone) {
  ShardHub hub;
  EXPECT_EQ(hub.find("job_a"), nullptr);
  auto c = hub.open("job_a", hub_agents("manual"));
  EXPECT_EQ(hub.find("job_a"), c);
  ASSERT_EQ(c->register_shard(0, {{"clock_offset_ms", 0}, {"rtt_ms", 0}}).http_status, 200);
  hub.close("job_a", "finished");
  ASSERT_NE(hub.find("job_a"), nullptr);  // kept, so polling agents hear "done"
  EXPECT_EQ(hub.find("job_a")->next_assignment(0, -1).body["status"], "done");
  for (std::size_t i = 0; i < ShardHub::kKeepClosed; ++i) {
    const std::string id = "job_" + std::to_string(i);
    hub.open(id, hub_agents("manual"));
    hub.close(id, "finished");
  }
  EXPECT_EQ(hub.find("job_a"), nullptr);  // evicted after kKeepClosed newer ones
}

TEST(ShardHub, PrintedManifestLaunchesThenWaitsForTheAgents) {
  ShardHub hub;
  K8sOptions o;
  o.mode = "print";
  o.agent_image = "registry.example/llmcapd:1";
  o.daemon_url = "http://llmcapd.llmcap.svc:8080";
  hub.use_kubernetes(o);
  auto c = hub.open("job_k", hub_agents("kubernetes"));
  const BackendStep step = c->run(one_client(), 0, {}, {});
  // Launched (printed), so the step waits for registrations and names the missing shards.
  EXPECT_NE(step.result.fatal_error.find("missing shard(s) 0, 1 of 2"), std::string::npos)
      << step.result.fatal_error;
  EXPECT_TRUE(c->fleet_launched());
  hub.close("job_k", "failed");
}

TEST(ShardHub, LauncherErrorsAndNoLauncherAreClear) {
  ShardHub hub;
  K8sOptions o;
  o.mode = "print";  // no agent_image: the manifest cannot be made
  o.daemon_url = "http://llmcapd:8080";
  hub.use_kubernetes(o);
  auto c = hub.open("job_b", hub_agents("kubernetes"));
  const auto err = c->run(one_client(), 0, {}, {}).result.fatal_error;
  EXPECT_NE(err.find("launching the agents"), std::string::npos) << err;
  EXPECT_NE(err.find("image"), std::string::npos) << err;
  EXPECT_FALSE(c->fleet_launched());

  ShardHub off;
  K8sOptions none;
  none.mode = "off";
  off.use_kubernetes(none);
  const auto msg = off.open("job_c", hub_agents("kubernetes"))->run(one_client(), 0, {}, {});
  EXPECT_NE(msg.result.fatal_error.find("no Kubernetes launcher"), std::string::npos);
}

}  // namespace
}  // namespace llmcap::server

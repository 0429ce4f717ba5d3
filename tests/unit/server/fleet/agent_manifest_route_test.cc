#include "server/fleet/agent_manifest_route.h"

#include <gtest/gtest.h>

namespace llmcap::server {
namespace {

using nlohmann::json;

K8sOptions route_options() {
  K8sOptions o;
  o.agent_image = "llmcapd:0.1.0";
  o.daemon_url = "http://llmcapd.llmcap.svc:8080";
  o.service_account_dir = "/nonexistent/llmcap-test";
  return o;
}

const json kPlan = {{"name", "p"},
                    {"agents",
                     {{"count", 3},
                      {"regions", {"eu", "us"}},
                      {"placement", {{"spread", "zone"}, {"node_selector", {{"pool", "loadgen"}}}}},
                      {"launch", "kubernetes"}}}};

TEST(AgentManifestRoute, YamlOfThePlansFleet) {
  const auto r = agent_manifest_response(route_options(), "job_01ABC", kPlan, false);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find("completions: 3\n"), std::string::npos);
  EXPECT_NE(r.body.find("\"eu,us,eu\""), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("topology.kubernetes.io/zone"), std::string::npos);
  EXPECT_NE(r.body.find("pool: \"loadgen\""), std::string::npos);
  bool yaml_type = false;
  for (const auto& [k, v] : r.headers) yaml_type |= (v == "application/yaml");
  EXPECT_TRUE(yaml_type);
}

TEST(AgentManifestRoute, JsonWhenAsked) {
  const auto r = agent_manifest_response(route_options(), "job_01ABC", kPlan, true);
  ASSERT_EQ(r.status, 200);
  const json job = json::parse(r.body);
  EXPECT_EQ(job["spec"]["completionMode"], "Indexed");
  EXPECT_EQ(job["metadata"]["namespace"], "llmcap");  // no pod namespace outside a cluster
}

TEST(AgentManifestRoute, PlanWithoutAgentsIs404) {
  const auto r = agent_manifest_response(route_options(), "job_01ABC", json{{"name", "p"}}, false);
  EXPECT_EQ(r.status, 404);
  EXPECT_NE(r.body.find("no agents"), std::string::npos);
}

TEST(AgentManifestRoute, MissingImageSettingIs409NamingIt) {
  K8sOptions o = route_options();
  o.agent_image.clear();
  const auto r = agent_manifest_response(o, "job_01ABC", kPlan, false);
  EXPECT_EQ(r.status, 409);
  EXPECT_NE(r.body.find("k8s_agent_image"), std::string::npos) << r.body;
}

}  // namespace
}  // namespace llmcap::server

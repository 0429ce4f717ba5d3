#include "server/fleet/k8s_launcher.h"

#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "api/test_plan.h"

namespace llmcap::server {
namespace {

K8sOptions outside_cluster(std::string mode) {
  K8sOptions o;
  o.mode = std::move(mode);
  o.service_account_dir = "/nonexistent/llmcap-test/serviceaccount";
  return o;
}

TEST(K8sLauncher, ModesPickTheLauncher) {
  std::string why;
  EXPECT_EQ(make_agent_launcher(outside_cluster("off"), &why), nullptr);
  EXPECT_NE(why.find("off"), std::string::npos);
  auto print = make_agent_launcher(outside_cluster("print"), &why);
  ASSERT_NE(print, nullptr);
  EXPECT_EQ(print->kind(), "manifest");
  // auto without a mounted service account falls back to printing, and says why.
  auto fallback = make_agent_launcher(outside_cluster("auto"), &why);
  ASSERT_NE(fallback, nullptr);
  EXPECT_EQ(fallback->kind(), "manifest");
  EXPECT_NE(why.find("printing"), std::string::npos) << why;
  // api outside a cluster is a start-up error.
  EXPECT_THROW(make_agent_launcher(outside_cluster("api")), std::runtime_error);
}

TEST(K8sLauncher, OptionsValidationNamesTheKey) {
  K8sOptions o;
  EXPECT_EQ(validate_k8s_options(o), "");
  o.mode = "sometimes";
  EXPECT_EQ(validate_k8s_options(o).rfind("k8s_mode:", 0), 0u);
  o = K8sOptions{};
  o.namespace_name = "Not_A_Label";
  EXPECT_EQ(validate_k8s_options(o).rfind("k8s_namespace:", 0), 0u);
  o = K8sOptions{};
  o.daemon_url = "llmcapd:8080";
  EXPECT_EQ(validate_k8s_options(o).rfind("k8s_daemon_url:", 0), 0u);
  o = K8sOptions{};
  o.agent_image = "bad image";
  EXPECT_EQ(validate_k8s_options(o).rfind("k8s_agent_image:", 0), 0u);
  o = K8sOptions{};
  o.agent_token_secret = "UPPER";
  EXPECT_EQ(validate_k8s_options(o).rfind("k8s_agent_token_secret:", 0), 0u);
  o = K8sOptions{};
  o.api_timeout_ms = 5;
  EXPECT_EQ(validate_k8s_options(o).rfind("k8s_api_timeout_ms:", 0), 0u);
}

TEST(K8sLauncher, FleetSpecDefaultsComeFromTheOptions) {
  K8sOptions o;
  o.agent_image = "registry/llmcapd:1";
  o.daemon_url = "http://llmcapd.llmcap.svc:8080";
  o.agent_token_secret = "fleet-token";
  o.agent_service_account = "llmcap-agent";
  AgentFleetSpec s = fleet_spec_defaults(o, "perf");
  EXPECT_EQ(s.image, "registry/llmcapd:1");
  EXPECT_EQ(s.daemon_url, "http://llmcapd.llmcap.svc:8080");
  EXPECT_EQ(s.token_secret_name, "fleet-token");
  EXPECT_EQ(s.service_account, "llmcap-agent");
  EXPECT_EQ(s.namespace_name, "perf");  // the pod's own namespace
  EXPECT_EQ(fleet_spec_defaults(o, "").namespace_name, "llmcap");
  o.namespace_name = "agents";
  EXPECT_EQ(fleet_spec_defaults(o, "perf").namespace_name, "agents");  // explicit wins
}

TEST(K8sLauncher, FleetSpecForPlanCyclesRegionsAndMapsPlacement) {
  K8sOptions o;
  o.agent_image = "llmcapd:0.1.0";
  o.daemon_url = "http://llmcapd.llmcap.svc:8080";
  api::PlanAgents agents;
  agents.count = 5;
  agents.regions = {"eu", "us"};
  agents.placement.spread = "zone";
  agents.placement.node_selector = {{"pool", "loadgen"}};
  const AgentFleetSpec s = fleet_spec_for_plan(o, "llmcap", "job_01ABC", agents);
  EXPECT_EQ(s.job_id, "job_01ABC");
  EXPECT_EQ(s.count, 5);
  EXPECT_EQ(s.regions, (std::vector<std::string>{"eu", "us", "eu", "us", "eu"}));
  EXPECT_TRUE(s.placement.spread_by_zone);
  EXPECT_FALSE(s.placement.spread_by_hostname);
  EXPECT_EQ(s.placement.node_selector.at("pool"), "loadgen");
  EXPECT_TRUE(build_agent_job(s).ok());
  agents.placement.spread = "node";
  agents.regions = {"eu"};
  const AgentFleetSpec one = fleet_spec_for_plan(o, "llmcap", "job_01ABC", agents);
  EXPECT_EQ(one.regions, std::vector<std::string>{"eu"});
  EXPECT_TRUE(one.placement.spread_by_hostname);
  agents.placement.spread = "none";
  agents.regions.clear();
  const AgentFleetSpec none = fleet_spec_for_plan(o, "llmcap", "job_01ABC", agents);
  EXPECT_FALSE(none.placement.spread_by_zone || none.placement.spread_by_hostname);
  EXPECT_TRUE(none.regions.empty());
}

TEST(K8sLauncher, ServiceAccountNamespaceFromTheMountedFile) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("llmcap-k8s-ns-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "namespace") << "perf-team\n";
  K8sOptions o;
  o.service_account_dir = dir.string();
  EXPECT_EQ(service_account_namespace(o), "perf-team");
  std::filesystem::remove_all(dir);
  EXPECT_EQ(service_account_namespace(o), "");
}

TEST(K8sLauncher, ErrorNamesAreStable) {
  EXPECT_EQ(launch_error_name(LaunchError::kForbidden), "forbidden");
  EXPECT_EQ(launch_error_name(LaunchError::kAlreadyExists), "already_exists");
  EXPECT_EQ(launch_error_name(LaunchError::kUnreachable), "unreachable");
  EXPECT_EQ(launch_error_name(LaunchError::kNone), "none");
}

}  // namespace
}  // namespace llmcap::server

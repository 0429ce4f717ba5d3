#include "server/daemon_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "api/plan_reader.h"
#include "sim/profile_catalog.h"

namespace llmcap::server {
namespace {

TEST(DaemonConfig, DefaultsAreValid) {
  DaemonConfig c;
  EXPECT_EQ(c.validate(), "");
  EXPECT_TRUE(c.auth_disabled());
}

TEST(DaemonConfig, EveryFieldIsBound) {
  DaemonConfig c;
  Settings s("");
  c.bind(s);
  for (const char* key : {"listen_address", "port", "database", "log_level", "max_queued_jobs",
                          "admin_tokens", "target_allowlist", "shutdown_grace_s"}) {
    EXPECT_TRUE(s.has(key)) << key;
  }
  EXPECT_EQ(s.apply_json_text(R"({"port": 0, "max_concurrent_jobs": 2})", "t"), "");
  EXPECT_EQ(c.port, 0);
  EXPECT_EQ(c.max_concurrent_jobs, 2);
}

TEST(DaemonConfig, ValidationNamesTheField) {
  DaemonConfig c;
  c.max_concurrent_jobs = 0;
  EXPECT_EQ(c.validate().rfind("max_concurrent_jobs", 0), 0u);
  c = DaemonConfig{};
  c.admin_tokens = {"short"};
  EXPECT_EQ(c.validate().rfind("admin_tokens", 0), 0u);
}

TEST(DaemonConfig, KubernetesKeysReachTheLauncherOptions) {
  DaemonConfig c;
  Settings s("");
  c.bind(s);
  EXPECT_EQ(s.apply_json_text(R"({"k8s_mode": "print", "k8s_namespace": "perf",
      "k8s_agent_image": "registry/llmcapd:0.1.0",
      "k8s_daemon_url": "http://llmcapd.perf.svc:8080", "k8s_agent_token_secret": "tok",
      "k8s_agent_service_account": "agents", "k8s_api_timeout_ms": 2000})",
                              "t"),
            "");
  EXPECT_EQ(c.validate(), "");
  const K8sOptions o = c.k8s_options();
  EXPECT_EQ(o.mode, "print");
  EXPECT_EQ(o.namespace_name, "perf");
  EXPECT_EQ(o.agent_image, "registry/llmcapd:0.1.0");
  EXPECT_EQ(o.daemon_url, "http://llmcapd.perf.svc:8080");
  EXPECT_EQ(o.agent_token_secret, "tok");
  EXPECT_EQ(o.agent_service_account, "agents");
  EXPECT_EQ(o.api_timeout_ms, 2000);
  c.k8s_mode = "always";
  EXPECT_EQ(c.validate().rfind("k8s_mode", 0), 0u);
  c = DaemonConfig{};
  c.k8s_daemon_url = "llmcapd:8080";
  EXPECT_EQ(c.validate().rfind("k8s_daemon_url", 0), 0u);
}

// Validation, job submission and predictions read plans under the REST options' limits: they
// carry the simulator's profiles, so a misspelt sim:// GPU is refused before a job is stored.
TEST(DaemonConfig, PlanLimitsKnowTheSimulatorProfiles) {
  const api::PlanLimits limits = DaemonConfig{}.rest_options().plan_limits;
  const auto catalog = sim::ProfileCatalog::builtin();
  EXPECT_EQ(limits.sim_hardware, catalog.hardware_names());
  EXPECT_EQ(limits.sim_models, catalog.model_names());
  const std::string plan = R"({"version": 1,
      "targets": [{"name": "a", "base_url": "sim://rtx4090-48gb/llama-3.1-8b"}],
      "phases": [{"kind": "concurrency_sweep", "levels": [1]}]})";
  const auto parse = api::parse_plan(plan, limits);
  ASSERT_EQ(parse.errors.size(), 1u);
  EXPECT_EQ(parse.errors[0].path, "/targets/0/base_url");
  EXPECT_THAT(parse.errors[0].message, ::testing::HasSubstr("did you mean rtx4090-48g?"));
  EXPECT_THAT(parse.errors[0].message, ::testing::HasSubstr("h100-sxm"));  // the list
  // The profiles of the demo are known.
  EXPECT_TRUE(api::parse_plan(R"({"version": 1,
      "targets": [{"name": "a", "base_url": "sim://a100-80g-pcie/llama-3.1-8b"}],
      "phases": [{"kind": "concurrency_sweep", "levels": [1]}]})",
                              limits)
                  .plan);
}

}  // namespace
}  // namespace llmcap::server

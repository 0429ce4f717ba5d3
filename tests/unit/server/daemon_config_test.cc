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

// Tenants (issue 35 #4): tenant_tokens from a config file become the REST API's tokens beside
// admin_tokens and read_tokens (the tenant "default"); a bad entry or a token given twice is
// refused by a message that names the entry, never the token.
TEST(DaemonConfig, TenantTokensReachTheRestOptions) {
  DaemonConfig c;
  Settings s("");
  c.bind(s);
  ASSERT_EQ(s.apply_json_text(R"({"admin_tokens": ["legacy-admin-0123456789"],
      "tenant_tokens": ["teamA:admin:teamA-admin-0123456789", "teamB:read:teamB-read-0123456789",
                        "*:read:global-read-0123456789"]})",
                              "t"),
            "");
  EXPECT_EQ(c.validate(), "");
  EXPECT_FALSE(c.auth_disabled());
  const auto tokens = c.rest_options().tokens;
  ASSERT_EQ(tokens.size(), 4u);
  EXPECT_EQ(tokens[0].tenant, "default");
  EXPECT_TRUE(tokens[0].admin);
  EXPECT_EQ(tokens[1].tenant, "teamA");
  EXPECT_EQ(tokens[1].token, "teamA-admin-0123456789");
  EXPECT_TRUE(tokens[1].admin);
  EXPECT_EQ(tokens[2].tenant, "teamB");
  EXPECT_FALSE(tokens[2].admin);
  EXPECT_EQ(tokens[3].tenant, "*");
  EXPECT_EQ(tokens[1].id, token_id("teamA-admin-0123456789"));

  DaemonConfig only_tenants;
  only_tenants.tenant_tokens = {"teamA:read:teamA-read-0123456789"};
  EXPECT_FALSE(only_tenants.auth_disabled());
  EXPECT_FALSE(only_tenants.open_to_network());
}

TEST(DaemonConfig, BadTenantTokensAreRefusedWithoutTheToken) {
  const std::string secret = "secret-0123456789-abcdef";
  for (const std::string& entry :
       {"teamA:owner:" + secret, "team A:admin:" + secret, ":admin:" + secret,
        std::string("teamA:admin:short"), "teamA-" + secret, "teamA:admin" + secret}) {
    DaemonConfig c;
    c.tenant_tokens = {entry};
    const std::string why = c.validate();
    EXPECT_EQ(why.rfind("tenant_tokens[0]: ", 0), 0u) << entry << ": " << why;
    EXPECT_EQ(why.find(secret), std::string::npos) << why;
  }
  DaemonConfig twice;
  twice.read_tokens = {secret};
  twice.tenant_tokens = {"teamA:admin:" + secret};
  EXPECT_THAT(twice.validate(), ::testing::HasSubstr("given twice"));
  EXPECT_EQ(twice.validate().find(secret), std::string::npos);
}

TEST(ApiTokens, TokenIdIsTheStartOfSha256AndTokensMayHoldColons) {
  // printf %s abc | sha256sum: ba7816bf8f01cfea...
  EXPECT_EQ(token_id("abc"), "ba7816bf");
  ApiToken t;
  EXPECT_EQ(parse_tenant_token("team.a-1:read:with:colons-0123456789", t), "");
  EXPECT_EQ(t.tenant, "team.a-1");
  EXPECT_EQ(t.token, "with:colons-0123456789");
  EXPECT_FALSE(t.admin);
  EXPECT_TRUE(valid_tenant_name("*"));
  EXPECT_FALSE(valid_tenant_name(std::string(65, 'a')));
  EXPECT_FALSE(valid_tenant_name("a/b"));
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

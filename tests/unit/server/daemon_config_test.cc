#include "server/daemon_config.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace llmcap::server

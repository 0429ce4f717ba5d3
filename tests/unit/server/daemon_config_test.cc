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

}  // namespace
}  // namespace llmcap::server

#include "server/fleet/manifest_printer.h"

#include <gtest/gtest.h>

namespace llmcap::server {
namespace {

AgentFleetSpec spec() {
  AgentFleetSpec s;
  s.job_id = "job_01ABC";
  s.count = 2;
  s.image = "llmcapd:0.1.0";
  s.daemon_url = "http://llmcapd.llmcap.svc:8080";
  return s;
}

TEST(ManifestPrinter, LaunchRendersLogsAndReturnsTheYaml) {
  std::vector<std::pair<std::string, std::string>> printed;
  ManifestPrinter printer(
      [&](const std::string& id, const std::string& yaml) { printed.emplace_back(id, yaml); });
  EXPECT_EQ(printer.kind(), "manifest");
  const LaunchResult r = printer.launch(spec());
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.job_name, "llmcap-agents-job-01abc");
  EXPECT_EQ(r.namespace_name, "llmcap");
  EXPECT_EQ(r.manifest_text, agent_job_yaml(spec()).value());
  ASSERT_EQ(printed.size(), 1u);
  EXPECT_EQ(printed[0].first, "job_01ABC");
  EXPECT_EQ(printed[0].second, r.manifest_text);
}

TEST(ManifestPrinter, InvalidSpecIsNotPrinted) {
  int calls = 0;
  ManifestPrinter printer([&](const std::string&, const std::string&) { ++calls; });
  AgentFleetSpec bad = spec();
  bad.image.clear();
  const LaunchResult r = printer.launch(bad);
  EXPECT_EQ(r.error, LaunchError::kInvalidSpec);
  EXPECT_EQ(r.message.rfind("image:", 0), 0u);
  EXPECT_EQ(calls, 0);
}

TEST(ManifestPrinter, RemoveSaysWhichKubectlCommandDeletes) {
  ManifestPrinter printer([](const std::string&, const std::string&) {});
  const LaunchResult r = printer.remove("job_01ABC", "llmcap");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.message, "kubectl -n llmcap delete job llmcap-agents-job-01abc");
  EXPECT_EQ(printer.remove("___", "llmcap").error, LaunchError::kInvalidSpec);
}

TEST(ManifestPrinter, DefaultSinkLogsWithoutThrowing) {
  ManifestPrinter printer;
  EXPECT_TRUE(printer.launch(spec()).ok());
}

}  // namespace
}  // namespace llmcap::server

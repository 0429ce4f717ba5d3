// The subcommands of llmcapd; each returns an ExitCode. See cli.cc for the table.
#pragma once

#include <string>
#include <vector>

namespace llmcap::server {

int cmd_agent(const std::vector<std::string>& args);
int cmd_version(const std::vector<std::string>& args);
int cmd_report(const std::vector<std::string>& args);
int cmd_run(const std::vector<std::string>& args);
int cmd_predict(const std::vector<std::string>& args);
int cmd_serve(const std::vector<std::string>& args);
int cmd_sim(const std::vector<std::string>& args);
// `llmcapd sim calibrate` (cmd_sim_calibrate.cc), dispatched by cmd_sim.
int cmd_sim_calibrate(const std::vector<std::string>& args);
int cmd_demo(const std::vector<std::string>& args);
int cmd_estimate(const std::vector<std::string>& args);
int cmd_k8s_manifest(const std::vector<std::string>& args);

}  // namespace llmcap::server

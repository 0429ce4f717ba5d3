// `llmcapd agent`: runs one shard of a job's steps for a daemon (scale-out, issue 11); the
// work is ShardAgent's (server/fleet/shard_agent.h). The shard index comes from --shard, else
// LLMCAP_SHARD_INDEX, else JOB_COMPLETION_INDEX (a Kubernetes Indexed Job's pod index).
#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdlib>
#include <iostream>
#include <stop_token>

#include "server/cli/command_line.h"
#include "server/cli/commands.h"
#include "server/cli/exit_codes.h"
#include "server/fleet/shard_agent.h"
#include "server/logging.h"
#include "server/settings.h"

namespace llmcap::server {

namespace {

std::stop_source* g_agent_stop = nullptr;
extern "C" void on_agent_signal(int) {
  if (g_agent_stop) g_agent_stop->request_stop();
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

// Entry k of a comma-separated list, cycled ("" when the list is empty).
std::string list_entry(const std::string& list, std::int64_t k) {
  std::vector<std::string> items;
  std::size_t start = 0;
  while (start <= list.size()) {
    const auto comma = list.find(',', start);
    const auto end = comma == std::string::npos ? list.size() : comma;
    if (end > start) items.push_back(list.substr(start, end - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (items.empty() || k < 0) return "";
  return items[static_cast<std::size_t>(k) % items.size()];
}

}  // namespace

int cmd_agent(const std::vector<std::string>& args) {
  ShardAgentOptions o;
  std::int64_t shard = -1;
  std::string region_list;
  bool help = false;
  LogOptions log;
  o.daemon_url = env("LLMCAP_DAEMON_URL");
  o.job_id = env("LLMCAP_JOB_ID");
  o.token = env("LLMCAP_AGENT_TOKEN");
  o.region = env("LLMCAP_REGION");
  for (const char* name : {"LLMCAP_SHARD_INDEX", "JOB_COMPLETION_INDEX"}) {
    if (shard < 0 && !env(name).empty()) {
      char* end = nullptr;
      const std::string v = env(name);
      const long long k = std::strtoll(v.c_str(), &end, 10);
      if (end == v.c_str() || *end != '\0' || k < 0) {
        std::cerr << "llmcapd agent: " << name << "='" << v << "' is not a shard index\n";
        return kExitUsage;
      }
      shard = k;
    }
  }
  Settings s("");
  s.add("daemon", "daemon URL, http://host:port (env LLMCAP_DAEMON_URL)", &o.daemon_url);
  s.add("job", "job id (env LLMCAP_JOB_ID)", &o.job_id);
  s.add("shard", "shard index 0..count-1 (env LLMCAP_SHARD_INDEX, else JOB_COMPLETION_INDEX)",
        &shard);
  s.add("region", "region label of this agent (env LLMCAP_REGION); default: the plan's", &o.region);
  s.add("region_list", "comma-separated region labels; shard k takes entry k (cycled)",
        &region_list);
  s.add("token", "admin token of the daemon (env LLMCAP_AGENT_TOKEN)", &o.token);
  s.add("clock_rounds", "round trips of the clock-offset exchange", &o.clock_rounds);
  s.add("register_timeout_s", "keep trying to register this long", &o.register_timeout_s);
  s.add("daemon_timeout_s", "give up when the daemon is unreachable this long",
        &o.daemon_timeout_s);
  s.add("upload_attempts", "attempts per result upload (exponential backoff)", &o.upload_attempts);
  s.add("test_clock_offset_ms", "testing only: pretend the wall clock is this far ahead",
        &o.test_clock_offset_ms);
  s.add("test_upload_twice", "testing only: upload every result twice (idempotency)",
        &o.test_upload_twice);
  s.add("log_level", "trace|debug|info|warn|error|critical|off", &log.level);
  s.add("log_json", "write logs as JSON lines", &log.json);
  s.add("help", "show this help", &help);
  std::vector<std::string> positional;
  const CommandLine cl{
      "agent",
      "Usage: llmcapd agent --daemon http://HOST:PORT --job ID --shard K [flags]\n\n"
      "Runs shard K of every step of a job whose plan has `agents` and reports its\n"
      "samples to the daemon (docs/plans.md, Agents). Exits 0 when the job is done."};
  if (auto rc = parse_command_line(cl, s, args, help, positional)) return *rc;
  if (o.daemon_url.empty() || o.job_id.empty() || shard < 0) {
    std::cerr << "llmcapd agent: --daemon, --job and --shard (or LLMCAP_SHARD_INDEX / "
                 "JOB_COMPLETION_INDEX) are required\n";
    return kExitUsage;
  }
  if (shard > 1'000'000) {
    std::cerr << "llmcapd agent: shard: " << shard << " is not a shard index\n";
    return kExitUsage;
  }
  o.shard = static_cast<std::int32_t>(shard);
  if (o.region.empty() && !region_list.empty()) o.region = list_entry(region_list, shard);
  if (auto err = setup_logging(log); !err.empty()) {
    std::cerr << "llmcapd agent: " << err << "\n";
    return kExitUsage;
  }
  auto logger = spdlog::get("server");
  o.log = [logger](const std::string& line) {
    if (logger)
      logger->info("{}", line);
    else
      std::cerr << line << "\n";
  };
  std::stop_source stop;
  g_agent_stop = &stop;
  std::signal(SIGINT, on_agent_signal);
  std::signal(SIGTERM, on_agent_signal);
  ShardAgent agent(o);
  const int rc = agent.run(stop.get_token());
  g_agent_stop = nullptr;
  if (rc != 0) {
    std::cerr << "llmcapd agent: " << agent.error() << "\n";
    return rc == 2 ? kExitUsage : kExitRuntime;
  }
  return kExitOk;
}

}  // namespace llmcap::server

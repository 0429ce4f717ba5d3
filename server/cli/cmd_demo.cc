// `llmcapd demo`: the README's main job with nothing to set up. Starts an llmcapd daemon in this
// process (loopback, free port, throwaway database) with its embedded simulated targets,
// submits the example plan (deploy/plans/demo-4090-vs-a100.json, compiled in) through the
// public REST API, follows the job's progress, and prints the qualified-capacity table.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "net/blocking_client.h"
#include "server/cli/capacity_table.h"
#include "server/cli/command_line.h"
#include "server/cli/commands.h"
#include "server/cli/demo_plan.h"
#include "server/cli/exit_codes.h"
#include "server/daemon.h"
#include "server/engine/plan_executor.h"
#include "server/logging.h"
#include "server/settings.h"

namespace llmcap::server {

std::string read_file(const std::string& path, std::string& error);  // cmd_run.cc

int cmd_demo(const std::vector<std::string>& args) {
  std::string plan_path;
  std::string out_path;
  std::string keep_db;
  bool help = false;
  LogOptions log;
  log.level = "warn";
  Settings s("");
  s.add("plan", "run this plan instead of the built-in example", &plan_path);
  s.add("out", "also write the results document (JSON) here", &out_path);
  s.add("database", "keep the demo's database at this path (default: a temporary file)", &keep_db);
  s.add("log_level", "trace|debug|info|warn|error|critical|off", &log.level);
  s.add("help", "show this help", &help);
  std::vector<std::string> positional;
  const CommandLine cl{"demo",
                       "Usage: llmcapd demo [flags]\n\nRuns llmcapd with embedded simulated GPUs "
                       "(RTX 4090 48GB vs A100 80GB PCIe, Llama-3.1-8B BF16), submits the example "
                       "plan over the REST API and prints the qualified-capacity table."};
  if (auto rc = parse_command_line(cl, s, args, help, positional)) return *rc;
  if (auto err = setup_logging(log); !err.empty()) {
    std::cerr << "llmcapd demo: " << err << "\n";
    return kExitUsage;
  }
  std::string plan_text(embedded_demo_plan());
  if (!plan_path.empty()) {
    std::string error;
    plan_text = read_file(plan_path, error);
    if (!error.empty()) {
      std::cerr << "llmcapd demo: " << error << "\n";
      return kExitUsage;
    }
  }

  DaemonConfig config;
  config.port = 0;
  config.log_level = log.level;
  const auto tmp_dir =
      std::filesystem::temp_directory_path() / ("llmcap-demo-" + std::to_string(::getpid()));
  std::filesystem::create_directories(tmp_dir);
  config.database = keep_db.empty() ? (tmp_dir / "demo.db").string() : keep_db;
  int rc = kExitOk;
  {
    Daemon daemon(config);
    try {
      daemon.start();
    } catch (const std::exception& e) {
      std::cerr << "llmcapd demo: " << e.what() << "\n";
      return kExitRuntime;
    }
    const auto port = daemon.port();
    std::cout << "llmcapd serving on http://127.0.0.1:" << port << " (database " << config.database
              << ")\n";
    const net::BlockingClient client("http://127.0.0.1:" + std::to_string(port), "");
    auto created = client.request("POST", "/v1/jobs", plan_text);
    if (created.status != 201) {
      std::cerr << "llmcapd demo: POST /v1/jobs -> " << created.status << " " << created.error
                << created.body << "\n";
      daemon.stop(0);
      return created.status == 422 || created.status == 400 ? kExitUsage : kExitRuntime;
    }
    const auto job = nlohmann::json::parse(created.body);
    const std::string id = job["id"];
    std::cout << "submitted job " << id << "; following GET /v1/jobs/" << id << "\n";
    std::string state = "queued";
    std::string last_line;
    const auto t0 = std::chrono::steady_clock::now();
    while (state == "queued" || state == "running") {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      auto r = client.request("GET", "/v1/jobs/" + id);
      if (r.status != 200) continue;
      const auto j = nlohmann::json::parse(r.body, nullptr, false);
      state = j.value("state", "unknown");
      const auto& p = j["progress"];
      if (p.is_object() && p.contains("target")) {
        char line[256];
        std::snprintf(line, sizeof line, "  [%3.0f%%] %-14s %-18s %-22s", p.value("percent", 0.0),
                      p.value("target", "").c_str(), p.value("phase", "").c_str(),
                      p.value("step", "").c_str());
        if (line != last_line) {
          const auto elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0);
          std::cout << line << " t=" << static_cast<int>(elapsed.count()) << " s\n" << std::flush;
          last_line = line;
        }
      }
    }
    auto results = client.request("GET", "/v1/jobs/" + id + "/results");
    const auto doc = nlohmann::json::parse(results.body, nullptr, false);
    std::cout << "\njob " << id << " " << state << "\n\nQualified capacity\n"
              << capacity_table_text(doc);
    if (!out_path.empty()) {
      FILE* f = std::fopen(out_path.c_str(), "w");
      if (f) {
        const auto text = doc.dump(2);
        std::fwrite(text.data(), 1, text.size(), f);
        std::fclose(f);
      }
    }
    const std::string verdict =
        doc.contains("verdict") ? doc["verdict"].value("outcome", "") : std::string();
    if (state != "succeeded")
      rc = kExitRuntime;
    else if (verdict == "fail")
      rc = kExitSlaFailed;
    else if (verdict != "pass")
      rc = kExitInconclusive;
    daemon.stop(0);
  }
  if (keep_db.empty()) std::filesystem::remove_all(tmp_dir);
  return rc;
}

}  // namespace llmcap::server

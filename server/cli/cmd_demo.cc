// `llmcapd demo`: the README's main job with nothing to set up. Starts an llmcapd daemon in this
// process (loopback, free port, throwaway database) with its embedded simulated targets,
// submits the example plan (deploy/plans/demo-4090-vs-a100.json, compiled in) through the
// public REST API, follows the job (each step's verdict as it ends; on a terminal a live line
// with the job's ETA), prints the qualified-capacity table and keeps the results document and
// the daemon's HTML report in llmcap-results/.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "api/plan_reader.h"
#include "api/prediction_check.h"
#include "api/report_format.h"
#include "api/report_html.h"
#include "net/blocking_client.h"
#include "server/cli/capacity_table.h"
#include "server/cli/command_line.h"
#include "server/cli/commands.h"
#include "server/cli/console_sink.h"
#include "server/cli/demo_plan.h"
#include "server/cli/exit_codes.h"
#include "server/daemon.h"
#include "server/engine/plan_executor.h"
#include "server/logging.h"
#include "server/settings.h"

namespace llmcap::server {

std::string read_file(const std::string& path, std::string& error);  // cmd_run.cc

namespace {
bool write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  return static_cast<bool>(out);
}
}  // namespace

int cmd_demo(const std::vector<std::string>& args) {
  std::string plan_path;
  std::string out_path;
  std::string out_dir = "llmcap-results";
  std::string keep_db;
  bool help = false;
  LogOptions log;
  log.level = "warn";
  Settings s("");
  s.add("plan", "run this plan instead of the built-in example", &plan_path);
  s.add("out",
        "write the results document (JSON) here (default: OUT_DIR/<job id>.json, with the HTML "
        "report beside it)",
        &out_path);
  s.add("out_dir", "folder of the default results file", &out_dir);
  s.add("database", "keep the demo's database at this path (default: a temporary file)", &keep_db);
  s.add("log_level", "trace|debug|info|warn|error|critical|off", &log.level);
  s.add("help", "show this help", &help);
  std::vector<std::string> positional;
  const CommandLine cl{
      "demo",
      "Usage: llmcapd demo [flags]\n\nRuns llmcapd with embedded simulated GPUs "
      "(RTX 4090 48GB vs A100 80GB PCIe, Llama-3.1-8B BF16), submits the example "
      "plan over the REST API and prints the qualified-capacity table: first as predicted in "
      "virtual time (POST /v1/predictions, seconds), then as measured in real time "
      "against the simulators' HTTP servers, with the prediction's error."};
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
    const auto sla_line =
        sla_text(api::json_member(nlohmann::json::parse(plan_text, nullptr, false), "sla"));
    // First the answer in seconds: the same plan predicted in virtual time (POST
    // /v1/predictions), then the measured run it is checked against.
    nlohmann::json predicted_doc;
    if (auto pr = client.request("POST", "/v1/predictions", plan_text); pr.status == 201) {
      const std::string pid = nlohmann::json::parse(pr.body)["id"];
      const auto p0 = std::chrono::steady_clock::now();
      std::string pstate = "queued";
      while ((pstate == "queued" || pstate == "running") &&
             std::chrono::steady_clock::now() - p0 < std::chrono::minutes(2)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        auto r = client.request("GET", "/v1/jobs/" + pid);
        const auto j = nlohmann::json::parse(r.body, nullptr, false);
        if (r.status == 200 && j.is_object()) pstate = j.value("state", "unknown");
      }
      auto res = client.request("GET", "/v1/jobs/" + pid + "/results");
      predicted_doc = nlohmann::json::parse(res.body, nullptr, false);
      const double secs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - p0).count();
      if (pstate == "succeeded" && predicted_doc.is_object()) {
        char took[64];
        std::snprintf(took, sizeof took, "%.1f s", secs);
        std::cout << "\nPredicted qualified capacity (prediction " << pid << ", virtual time, "
                  << took << "; SLA: " << sla_line << ")\n"
                  << capacity_table_text(predicted_doc)
                  << "\nNow measuring the same plan in real time against the simulators' HTTP "
                     "servers:\n"
                  << std::flush;
      } else {
        std::cerr << "llmcapd demo: prediction " << pid << " ended " << pstate
                  << "; measuring only\n";
        predicted_doc = nlohmann::json();
      }
    } else if (pr.status != 422) {
      std::cerr << "llmcapd demo: POST /v1/predictions -> " << pr.status << " " << pr.error
                << "; measuring only\n";
    }  // 422: the plan cannot be predicted (not all sim:// targets): measured only.
    auto created = client.request("POST", "/v1/jobs", plan_text);
    if (created.status != 201) {
      std::cerr << "llmcapd demo: POST /v1/jobs -> " << created.status << " " << created.error
                << created.body << "\n";
      daemon.stop(0);
      return created.status == 422 || created.status == 400 ? kExitUsage : kExitRuntime;
    }
    const auto job = nlohmann::json::parse(created.body);
    const std::string id = job["id"];
    std::cout << "submitted job " << id << "; following GET /v1/jobs/" << id << "\n" << std::flush;
    const bool live = ::isatty(STDOUT_FILENO) == 1;
    std::string state = "queued";
    std::set<std::int64_t> printed;  // global_step of each step line printed
    std::int64_t steps_planned = 0;
    // Prints the finished steps not printed yet, in order: "[3/20] target phase label  pass ...".
    auto print_steps = [&](const nlohmann::json& steps) {
      std::vector<const nlohmann::json*> fresh;
      for (const auto& st : steps)
        if (st.is_object() && !printed.count(st.value("global_step", std::int64_t{-1})))
          fresh.push_back(&st);
      std::sort(fresh.begin(), fresh.end(), [](const auto* a, const auto* b) {
        return a->value("global_step", 0) < b->value("global_step", 0);
      });
      for (const auto* st : fresh) {
        const auto n = st->value("global_step", std::int64_t{0});
        printed.insert(n);
        char head[256];
        std::snprintf(
            head, sizeof head, "  [%lld/%lld] %-14s %-17s %-18s", static_cast<long long>(n + 1),
            static_cast<long long>(std::max(steps_planned, n + 1)), st->value("target", "").c_str(),
            st->value("phase", "").c_str(), st->value("label", "").c_str());
        std::cout << (live ? "\r\x1b[K" : "") << head << step_result_text(*st);
      }
      std::cout << std::flush;
    };
    const auto t0 = std::chrono::steady_clock::now();
    while (state == "queued" || state == "running") {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      auto r = client.request("GET", "/v1/jobs/" + id);
      if (r.status != 200) continue;
      const auto j = nlohmann::json::parse(r.body, nullptr, false);
      if (!j.is_object()) continue;
      state = j.value("state", "unknown");
      const auto& p = api::json_member(j, "progress");
      if (!p.is_object()) continue;
      steps_planned = p.value("steps_planned", steps_planned);
      if (p.value("steps_done", std::int64_t{0}) > static_cast<std::int64_t>(printed.size())) {
        // Finished steps with their verdicts: the job's partial results.
        auto res = client.request("GET", "/v1/jobs/" + id + "/results");
        const auto doc = nlohmann::json::parse(res.body, nullptr, false);
        if (doc.is_object() && doc.contains("steps")) print_steps(doc["steps"]);
      }
      if (live && p.contains("target")) {
        const auto elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0);
        const auto eta = p.value("eta_s", nlohmann::json());
        char line[320];
        std::snprintf(line, sizeof line, "  [%lld/%lld] %-14s %-17s %-18s running, %s elapsed%s%s",
                      static_cast<long long>(p.value("steps_done", 0) + 1),
                      static_cast<long long>(steps_planned), p.value("target", "").c_str(),
                      p.value("phase", "").c_str(), p.value("step", "").c_str(),
                      duration_text(elapsed.count()).c_str(), eta.is_number() ? ", job ETA " : "",
                      eta.is_number() ? duration_text(eta.get<double>()).c_str() : "");
        std::cout << "\r\x1b[K" << line << std::flush;
      }
    }
    auto results = client.request("GET", "/v1/jobs/" + id + "/results");
    auto parsed = nlohmann::json::parse(results.body, nullptr, false);
    // The results with the plan they ran, as `llmcapd run --out` writes them (so `llmcapd report
    // FILE` draws the SLA lines from the kept file too).
    auto doc =
        api::report_document(parsed.is_object() ? std::move(parsed) : nlohmann::json::object(),
                             api::parse_plan(plan_text).normalized);
    if (predicted_doc.is_object() && doc.contains("targets"))
      doc["prediction_check"] = api::prediction_check(predicted_doc, doc);
    nlohmann::json all_steps = nlohmann::json::array();
    for (const auto& t : doc.value("targets", nlohmann::json::array()))
      for (const auto& ph : t.value("phases", nlohmann::json::array()))
        for (const auto& st : ph.value("steps", nlohmann::json::array())) all_steps.push_back(st);
    print_steps(all_steps);
    const auto total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0);
    std::cout << (live ? "\r\x1b[K" : "") << "\njob " << id << " " << state << " after "
              << duration_text(total.count()) << "\n\nQualified capacity (SLA: " << sla_line
              << ")\n"
              << capacity_table_text(doc);
    // Keep what the run produced: the results document and the daemon's HTML report (the
    // database is a temporary file unless --database was given).
    if (out_path.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(out_dir, ec);
      out_path = (std::filesystem::path(out_dir) / (id + ".json")).string();
    }
    if (write_file(out_path, doc.dump(2) + "\n"))
      std::cout << "\nresults: " << out_path << "\n";
    else
      std::cerr << "llmcapd demo: cannot write '" << out_path << "'\n";
    auto report =
        client.request("GET", "/v1/jobs/" + id + "/report", "", {{"Accept", "text/html"}});
    const std::string html_path =
        (std::filesystem::path(out_path).parent_path() / (id + ".html")).string();
    if (report.status == 200 && write_file(html_path, report.body))
      std::cout << "report:  " << html_path << "  (open it in a browser)\n";
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

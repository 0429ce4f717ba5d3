// `llmcapd report FILE|JOB --out report.html`: renders a results document (a file written by
// `llmcapd run --out`, or a job of a running daemon) as the self-contained HTML report, or as
// Markdown / CSV tables, or its SLA verdicts as JUnit XML (api/report_junit.h).
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "api/prediction_check.h"
#include "api/report_html.h"
#include "api/report_junit.h"
#include "api/report_tables.h"
#include "net/blocking_client.h"
#include "server/cli/command_line.h"
#include "server/cli/commands.h"
#include "server/cli/exit_codes.h"
#include "server/settings.h"

namespace llmcap::server {

std::string read_file(const std::string& path, std::string& error);  // cmd_run.cc

int cmd_report(const std::vector<std::string>& args) {
  std::string out_path;
  std::string format = "html";
  std::string host = "127.0.0.1";
  std::uint16_t port = 8080;
  const char* env_token = std::getenv("LLMCAP_TOKEN");
  std::string token = env_token ? env_token : "";
  bool help = false;
  Settings s("");
  s.add("out", "write the report here (default: standard output)", &out_path);
  s.add("format",
        "html, markdown, csv (the capacity table) or junit (the SLA verdicts as JUnit XML for "
        "CI: a test suite per target, a test case per check and one for the qualified "
        "capacity; docs/plans.md, \"JUnit XML for CI\")",
        &format);
  s.add("host", "host of the llmcapd serving the job, when a job id is given", &host);
  s.add("port", "its port", &port);
  s.add("token", "a read or admin token of that daemon (default: env LLMCAP_TOKEN)", &token);
  std::string against;
  s.add("against",
        "with a results file: a results file of the other kind (a measurement for a prediction, "
        "or the reverse) to show beside it, target by target (Prediction vs measurement)",
        &against);
  s.add("help", "show this help", &help);
  std::vector<std::string> positional;
  const CommandLine cl{
      "report",
      "Usage: llmcapd report RESULTS.json|JOB_ID [flags]\n\nRenders the capacity "
      "report (HTML with inline SVG charts, or Markdown/CSV tables), or its SLA verdicts as "
      "JUnit XML.",
      1};
  if (auto rc = parse_command_line(cl, s, args, help, positional)) return *rc;
  if (positional.size() != 1) {
    std::cerr << "llmcapd report: expected one results file or job id\n";
    return kExitUsage;
  }
  if (format != "html" && format != "markdown" && format != "csv" && format != "junit") {
    std::cerr << "llmcapd report: format: expected html, markdown, csv or junit\n";
    return kExitUsage;
  }
  std::string rendered;
  const std::string& source = positional[0];
  if (source.rfind("job_", 0) == 0 && !against.empty()) {
    std::cerr << "llmcapd report: --against goes with a results file; the daemon's report of a "
                 "job finds its counterpart itself\n";
    return kExitUsage;
  }
  if (source.rfind("job_", 0) == 0) {
    // The daemon renders it from the job's stored results and stored plan
    // (api::report_document, as `llmcapd run --out` writes its file); GET .../results alone
    // does not carry the plan, so a report built from it would have no SLA lines.
    const std::string base = std::string("http://") +
                             (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
                             std::to_string(port);
    const net::BlockingClient daemon(base, token);
    const std::string accept = format == "markdown" ? "text/markdown"
                               : format == "csv"    ? "text/csv"
                               : format == "junit"  ? "application/xml"
                                                    : "text/html";
    // ?format= wins over Accept on the daemon (api/report_negotiation.h), and JUnit has no
    // Accept type of its own (application/xml is generic): always name the format.
    const std::string query = "?format=" + format;
    auto r =
        daemon.request("GET", "/v1/jobs/" + source + "/report" + query, "", {{"Accept", accept}});
    if (r.status != 200) {
      std::cerr << "llmcapd report: GET " << base << "/v1/jobs/" << source
                << "/report: " << (r.status ? std::to_string(r.status) : r.error);
      if (r.status == 401 || r.status == 403)
        std::cerr << " (give a read token with --token or env LLMCAP_TOKEN)";
      std::cerr << "\n";
      return r.status == 404 ? kExitUsage : kExitRuntime;
    }
    rendered = std::move(r.body);
  } else {
    std::string error;
    const std::string text = read_file(source, error);
    if (!error.empty()) {
      std::cerr << "llmcapd report: " << error << "\n";
      return kExitUsage;
    }
    auto doc = nlohmann::json::parse(text, nullptr, false);
    if (!doc.is_object() || !doc.contains("targets")) {
      std::cerr << "llmcapd report: " << source << " is not a results document\n";
      return kExitUsage;
    }
    if (!against.empty()) {
      const std::string other_text = read_file(against, error);
      const auto other = nlohmann::json::parse(other_text, nullptr, false);
      if (!error.empty() || !other.is_object() || !other.contains("targets")) {
        std::cerr << "llmcapd report: --against: "
                  << (error.empty() ? against + " is not a results document" : error) << "\n";
        return kExitUsage;
      }
      if (api::is_predicted(doc) == api::is_predicted(other)) {
        std::cerr << "llmcapd report: --against: " << source << " and " << against << " are both "
                  << (api::is_predicted(doc) ? "predictions" : "measurements")
                  << "; give one of each\n";
        return kExitUsage;
      }
      doc["prediction_check"] = api::is_predicted(doc) ? api::prediction_check(doc, other)
                                                       : api::prediction_check(other, doc);
    }
    if (format == "markdown")
      rendered = api::render_markdown(doc);
    else if (format == "csv")
      rendered = api::render_capacity_csv(doc);
    else if (format == "junit")
      rendered = api::render_junit(doc);
    else {
      api::ReportOptions o;
      if (doc.contains("job_id") && doc["job_id"].is_string()) o.job_id = doc["job_id"];
      rendered = api::render_report_html(doc, o);
    }
  }
  if (out_path.empty()) {
    std::cout << rendered;
    return kExitOk;
  }
  std::ofstream out(out_path, std::ios::binary);
  out << rendered;
  if (!out) {
    std::cerr << "llmcapd report: cannot write '" << out_path << "'\n";
    return kExitRuntime;
  }
  std::cerr << "wrote " << out_path << " (" << rendered.size() << " bytes)\n";
  return kExitOk;
}

}  // namespace llmcap::server

// End-to-end check of the HTML report in a real browser: renders the two-target sample
// (tests/data/results-two-targets.json) with render_report_html, and a compare page of two such
// jobs (compare_results), loads them in headless Debian Chromium and checks what the browser
// parsed and laid out:
//   - the DOM (--dump-dom): SVG charts with their data-chart kinds and axis titles, the capacity
//     table's rows, no script;
//   - the layout at 1400 px and 800 px windows: a copy of each page gets the test-only probe
//     tests/e2e/report_probe.js, which writes what overflowed (page, table frames, cells, chart
//     texts, legend entries) and each latency chart's SLA-line count into the DOM;
//   - a 1280 px wide screenshot must be a real PNG of that width.
// Fails with a clear message when /usr/bin/chromium is missing (install the Debian package
// `chromium`).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "api/report_compare.h"
#include "api/report_html.h"
#include "api/report_tables.h"

namespace {

namespace fs = std::filesystem;
constexpr const char* kChromium = "/usr/bin/chromium";

struct CommandResult {
  int exit_code = -1;
  std::string output;
};

// Runs a shell command (bounded by `timeout`), capturing stdout.
CommandResult run(const std::string& command) {
  CommandResult r;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return r;
  std::array<char, 65536> buf{};
  std::size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  const int status = ::pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::size_t count(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (auto pos = haystack.find(needle); pos != std::string::npos;
       pos = haystack.find(needle, pos + 1))
    ++n;
  return n;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class ReportBrowserTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/llmcap-report-e2e-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::ifstream in(std::string(LLMCAP_TEST_DATA_DIR) + "/results-two-targets.json");
    ASSERT_TRUE(in.good());
    results_ = nlohmann::json::parse(in);
    html_path_ = dir_ / "report.html";
    write(html_path_, llmcap::api::render_report_html(results_, {.title = "",
                                                                 .job_id = "e2e-sample",
                                                                 .generated_at = "",
                                                                 .include_step_cdfs = true,
                                                                 .include_plan = true}));
    // Two jobs of the same plan, with daemon-style 26-character ids; B's 4090 is cheaper.
    auto a = results_, b = results_;
    a["job"] = {{"id", "job_01JD8ZK3Q4W5E6R7T8Y9U0I1O2"}};
    b["job"] = {{"id", "job_01JD8ZM9A8S7D6F5G4H3J2K1L0"}};
    b["targets"][0]["price_per_hour"] = 0.3;
    auto compared = llmcap::api::compare_results({a, b}, false);
    ASSERT_TRUE(compared.document) << compared.error;
    compare_path_ = dir_ / "compare.html";
    write(compare_path_, llmcap::api::render_report_html(*compared.document, {}));
  }

  static void write(const fs::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
    ASSERT_TRUE(out.good()) << path;
  }

  // Loads a copy of `page` with the layout probe in a `width_px` wide window; its findings.
  std::vector<std::string> probe(const fs::path& page, int width_px) const {
    const std::string script = read_text(fs::path(LLMCAP_E2E_DIR) / "report_probe.js");
    EXPECT_FALSE(script.empty()) << "tests/e2e/report_probe.js";
    std::string html = read_text(page);
    const auto body_end = html.rfind("</body>");
    EXPECT_NE(body_end, std::string::npos);
    html.insert(body_end, "<script>" + script + "</script>");
    const auto probed =
        dir_ / ("probe-" + std::to_string(width_px) + "-" + page.filename().string());
    write(probed, html);
    const auto r = run(chromium(probed, "--virtual-time-budget=5000 --dump-dom", width_px));
    EXPECT_EQ(r.exit_code, 0) << chromium_log();
    const auto begin = r.output.find("PROBE-BEGIN\n");
    const auto end = r.output.find("PROBE-END", begin == std::string::npos ? 0 : begin);
    EXPECT_NE(begin, std::string::npos) << "the probe did not run: " << chromium_log();
    if (begin == std::string::npos || end == std::string::npos) return {"probe did not run"};
    std::vector<std::string> findings;
    std::istringstream lines(r.output.substr(begin + 12, end - begin - 12));
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty()) findings.push_back(line);
    }
    return findings;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  std::string chromium(const fs::path& page, const std::string& mode_flags,
                       int width_px = 1280) const {
    return std::string("timeout 90 ") + kChromium +
           " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
           " --disable-background-networking --disable-component-update --disable-sync"
           " --disable-dev-shm-usage --user-data-dir=" +
           (dir_ / "profile").string() + " --window-size=" + std::to_string(width_px) + ",2000 " +
           mode_flags + " file://" + page.string() + " 2>" + (dir_ / "chromium.log").string();
  }
  std::string chromium(const std::string& mode_flags) const {
    return chromium(html_path_, mode_flags);
  }

  std::string chromium_log() const {
    std::ifstream in(dir_ / "chromium.log");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  fs::path dir_;
  fs::path html_path_;
  fs::path compare_path_;
  nlohmann::json results_;
};

TEST_F(ReportBrowserTest, DomHasChartsAxesAndCapacityRows) {
  ASSERT_TRUE(fs::exists(kChromium))
      << kChromium << " is missing: install the Debian package `chromium` (deploy/install-deps.sh)";
  const auto r = run(chromium("--dump-dom"));
  ASSERT_EQ(r.exit_code, 0) << chromium_log();
  const std::string& dom = r.output;
  ASSERT_NE(dom.find("<table id=\"capacity-table\">"), std::string::npos) << dom.substr(0, 2000);
  for (const char* kind : {"throughput-vs-concurrency", "throughput-vs-rate", "ttft-vs-concurrency",
                           "ttft-vs-rate", "tpot-vs-concurrency", "tpot-vs-rate", "cdf-ttft",
                           "cdf-tpot", "burst-ttft", "burst-in-flight"}) {
    EXPECT_NE(dom.find("<svg class=\"chart\" data-chart=\"" + std::string(kind) + "\""),
              std::string::npos)
        << kind;
  }
  EXPECT_GE(count(dom, "<svg class=\"chart\""), 10u);
  EXPECT_EQ(count(dom, "<svg class=\"chart\""), count(dom, "class=\"axis-title x-title\""));
  EXPECT_NE(dom.find(">Offered rate (requests/s)</text>"), std::string::npos);
  EXPECT_NE(dom.find(">Output throughput (tokens/s)</text>"), std::string::npos);
  EXPECT_GE(count(dom, "class=\"mark qualified-point\""), 1u);
  EXPECT_GE(count(dom, "<line class=\"threshold\""), 4u);
  for (const auto& row : llmcap::api::capacity_rows(results_)) {
    EXPECT_NE(dom.find("<tr data-target=\"" + row.target + "\">"), std::string::npos) << row.target;
  }
  EXPECT_EQ(dom.find("<script"), std::string::npos);
}

TEST_F(ReportBrowserTest, ScreenshotIsA1280PixelWidePng) {
  ASSERT_TRUE(fs::exists(kChromium))
      << kChromium << " is missing: install the Debian package `chromium` (deploy/install-deps.sh)";
  const auto png = dir_ / "report.png";
  const auto r = run(chromium("--hide-scrollbars --screenshot=" + png.string()));
  ASSERT_EQ(r.exit_code, 0) << chromium_log();
  ASSERT_TRUE(fs::exists(png)) << chromium_log();
  std::ifstream in(png, std::ios::binary);
  std::string head(24, '\0');
  in.read(head.data(), 24);
  ASSERT_EQ(head.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  auto be32 = [&](std::size_t at) {
    return (static_cast<unsigned>(static_cast<unsigned char>(head[at])) << 24) |
           (static_cast<unsigned>(static_cast<unsigned char>(head[at + 1])) << 16) |
           (static_cast<unsigned>(static_cast<unsigned char>(head[at + 2])) << 8) |
           static_cast<unsigned>(static_cast<unsigned char>(head[at + 3]));
  };
  EXPECT_EQ(be32(16), 1280u);  // IHDR width
  EXPECT_EQ(be32(20), 2000u);  // IHDR height
  // A blank page compresses to a few KB; a page of tables and charts does not.
  EXPECT_GT(fs::file_size(png), 60'000u);
  if (const char* keep = std::getenv("LLMCAP_REPORT_SCREENSHOT")) {
    fs::copy_file(png, keep, fs::copy_options::overwrite_existing);
  }
}

// Every finding except the SLA-line counts, which are checked on their own; at 800 px the
// 16-column capacity table may scroll inside its frame (and only it).
std::vector<std::string> overflows(const std::vector<std::string>& findings, int width_px) {
  std::vector<std::string> out;
  for (const auto& f : findings) {
    if (f.rfind("sla ", 0) == 0) continue;
    if (width_px < 1000 && f.rfind("frame capacity-table ", 0) == 0) continue;
    out.push_back(f);
  }
  return out;
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += "\n  " + s;
  return out;
}

TEST_F(ReportBrowserTest, ReportAndComparePagesFitAt1400And800PixelsWithTheirSlaLines) {
  ASSERT_TRUE(fs::exists(kChromium))
      << kChromium << " is missing: install the Debian package `chromium` (deploy/install-deps.sh)";
  for (const auto& page : {html_path_, compare_path_}) {
    for (const int width : {1400, 800}) {
      SCOPED_TRACE(page.filename().string() + " at " + std::to_string(width) + " px");
      const auto findings = probe(page, width);
      const auto bad = overflows(findings, width);
      EXPECT_TRUE(bad.empty()) << "overflowing:" << joined(bad);
      int latency_charts = 0;
      for (const auto& f : findings) {
        if (f.rfind("sla ", 0) != 0) continue;
        ++latency_charts;
        EXPECT_NE(f.substr(f.rfind(' ')), " 0") << "a latency chart without its SLA line: " << f;
      }
      EXPECT_EQ(latency_charts, 4) << joined(findings);  // TTFT and TPOT, closed and open loop
    }
  }
}

TEST_F(ReportBrowserTest, TheProbeCatchesAClippedColumnAndAMissingSlaLine) {
  ASSERT_TRUE(fs::exists(kChromium))
      << kChromium << " is missing: install the Debian package `chromium` (deploy/install-deps.sh)";
  // The same page without its plan (what the daemon rendered before it joined the stored plan),
  // and with a long reason in a Reasons column that may not wrap (the old clipped column).
  auto doc = results_;
  doc.erase("plan_document");
  std::string long_reason;
  for (int i = 0; i < 20; ++i) long_reason += "ttft P95 missed ";
  doc["targets"][0]["phases"][0]["steps"][0]["verdict"]["reasons"][0]["status"] = "missed";
  doc["targets"][0]["phases"][0]["steps"][0]["verdict"]["reasons"][0]["text"] = long_reason;
  std::string html = llmcap::api::render_report_html(doc, {});
  html.insert(html.find("</head>"), "<style>td.reasons { white-space: nowrap; }</style>");
  const auto page = dir_ / "broken.html";
  write(page, html);
  const auto findings = probe(page, 1400);
  EXPECT_NE(joined(findings).find("sla ttft-vs-rate 0"), std::string::npos) << joined(findings);
  EXPECT_NE(joined(findings).find("frame steps-table[rtx4090-48g]"), std::string::npos)
      << joined(findings);
}

}  // namespace

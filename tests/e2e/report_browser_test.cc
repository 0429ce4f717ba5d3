// End-to-end check of the HTML report in a real browser: renders the two-target sample
// (tests/data/results-two-targets.json) with render_report_html, loads the file in headless
// Debian Chromium, and checks what the browser parsed (--dump-dom): the SVG charts with their
// data-chart kinds and axis titles, the capacity table's rows, no script. A 1280 px wide
// screenshot must be a real PNG of that width. Fails with a clear message when
// /usr/bin/chromium is missing (install the Debian package `chromium`).
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
    std::ofstream out(html_path_);
    out << llmcap::api::render_report_html(results_, {.title = "",
                                                      .job_id = "e2e-sample",
                                                      .generated_at = "",
                                                      .include_step_cdfs = true,
                                                      .include_plan = true});
    ASSERT_TRUE(out.good());
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  std::string chromium(const std::string& mode_flags) const {
    return std::string("timeout 90 ") + kChromium +
           " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
           " --disable-background-networking --disable-component-update --disable-sync"
           " --disable-dev-shm-usage --user-data-dir=" +
           (dir_ / "profile").string() + " --window-size=1280,2000 " + mode_flags + " file://" +
           html_path_.string() + " 2>" + (dir_ / "chromium.log").string();
  }

  std::string chromium_log() const {
    std::ifstream in(dir_ / "chromium.log");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  fs::path dir_;
  fs::path html_path_;
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

}  // namespace

#include "server/process_metrics.h"

#include "server/text_file.h"

#include <prometheus/client_metric.h>
#include <prometheus/metric_family.h>
#include <prometheus/metric_type.h>
#include <sys/resource.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace llmcap::server {

namespace {

std::optional<double> to_number(std::string_view field) {
  double v = 0;
  const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
  if (ec != std::errc() || end != field.data() + field.size()) return std::nullopt;
  return v;
}

prometheus::MetricFamily family(const char* name, prometheus::MetricType type, const char* help,
                                double value) {
  prometheus::ClientMetric m;
  if (type == prometheus::MetricType::Counter) {
    m.counter.value = value;
  } else {
    m.gauge.value = value;
  }
  return prometheus::MetricFamily{name, help, type, {m}};
}

// The families, by name, type and help (the names tests/integration/deploy_promql.py reads).
struct ProcessFamily {
  const char* name;
  prometheus::MetricType type;
  const char* help;
};
constexpr ProcessFamily kCpu{"process_cpu_seconds_total", prometheus::MetricType::Counter,
                             "Total user and system CPU time spent in seconds"};
constexpr ProcessFamily kRss{"process_resident_memory_bytes", prometheus::MetricType::Gauge,
                             "Resident memory size in bytes"};
constexpr ProcessFamily kVsize{"process_virtual_memory_bytes", prometheus::MetricType::Gauge,
                               "Virtual memory size in bytes"};
constexpr ProcessFamily kOpenFds{"process_open_fds", prometheus::MetricType::Gauge,
                                 "Number of open file descriptors"};
constexpr ProcessFamily kMaxFds{"process_max_fds", prometheus::MetricType::Gauge,
                                "Maximum number of open file descriptors (soft RLIMIT_NOFILE)"};
constexpr ProcessFamily kStart{"process_start_time_seconds", prometheus::MetricType::Gauge,
                               "Start time of the process since the Unix epoch in seconds"};

prometheus::MetricFamily family(const ProcessFamily& f, double value) {
  return family(f.name, f.type, f.help, value);
}

}  // namespace

std::optional<ProcStat> parse_proc_stat(std::string_view text) {
  const auto close = text.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  // Fields from 3 (state) on, space-separated; field n is at index n - 3.
  std::vector<std::string_view> fields;
  std::string_view rest = text.substr(close + 1);
  while (!rest.empty()) {
    const auto start = rest.find_first_not_of(" \n");
    if (start == std::string_view::npos) break;
    rest.remove_prefix(start);
    const auto end = rest.find_first_of(" \n");
    fields.push_back(rest.substr(0, end));
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end);
  }
  if (fields.size() < 22) return std::nullopt;
  auto at = [&fields](int n) { return to_number(fields[static_cast<std::size_t>(n - 3)]); };
  const auto utime = at(14), stime = at(15), start = at(22), vsize = at(23), rss = at(24);
  if (!utime || !stime || !start || !vsize || !rss) return std::nullopt;
  return ProcStat{*utime, *stime, *start, *vsize, *rss};
}

std::optional<double> parse_boot_time(std::string_view text) {
  for (std::size_t pos = 0; pos < text.size();) {
    auto eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    const std::string_view line = text.substr(pos, eol - pos);
    if (line.rfind("btime ", 0) == 0) return to_number(line.substr(6));
    pos = eol + 1;
  }
  return std::nullopt;
}

ProcessCollector::ProcessCollector(std::string proc_root)
    : proc_root_(std::move(proc_root)),
      start_time_s_(
          std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
              .count()) {
  const auto stat_text = read_text_file(proc_root_ + "/self/stat");
  const auto boot_text = read_text_file(proc_root_ + "/stat");
  const long ticks = sysconf(_SC_CLK_TCK);
  if (!stat_text || !boot_text || ticks <= 0) return;
  const auto stat = parse_proc_stat(*stat_text);
  const auto boot = parse_boot_time(*boot_text);
  if (stat && boot) start_time_s_ = *boot + stat->starttime_ticks / static_cast<double>(ticks);
}

std::vector<prometheus::MetricFamily> ProcessCollector::Collect() const {
  std::vector<prometheus::MetricFamily> out;
  const long ticks = sysconf(_SC_CLK_TCK);
  const long page = sysconf(_SC_PAGESIZE);
  if (const auto text = read_text_file(proc_root_ + "/self/stat")) {
    if (const auto s = parse_proc_stat(*text); s && ticks > 0 && page > 0) {
      out.push_back(family(kCpu, (s->utime_ticks + s->stime_ticks) / static_cast<double>(ticks)));
      out.push_back(family(kRss, s->rss_pages * static_cast<double>(page)));
      out.push_back(family(kVsize, s->vsize_bytes));
    }
  }
  std::error_code ec;
  std::filesystem::directory_iterator fds(proc_root_ + "/self/fd", ec);
  if (!ec) {
    double open = 0;
    for (auto it = fds; it != std::filesystem::directory_iterator(); it.increment(ec)) {
      if (ec) break;
      ++open;
    }
    // The directory iterator's own descriptor is one of the entries counted.
    if (!ec) out.push_back(family(kOpenFds, open > 0 ? open - 1 : 0));
  }
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    out.push_back(family(kMaxFds, static_cast<double>(limit.rlim_cur)));
  out.push_back(family(kStart, start_time_s_));
  return out;
}

}  // namespace llmcap::server

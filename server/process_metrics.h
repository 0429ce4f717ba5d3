// ProcessCollector: the standard process_* metrics of a Prometheus client (the names and units
// client_golang and client_python export), read from /proc/self at every scrape. prometheus-cpp
// core has no process collector; DaemonMetrics serialises this one beside its registry.
//
//   process_cpu_seconds_total      counter  user + system CPU time (/proc/self/stat utime+stime)
//   process_resident_memory_bytes  gauge    resident set size (/proc/self/stat rss × page size)
//   process_virtual_memory_bytes   gauge    virtual memory size (/proc/self/stat vsize)
//   process_open_fds               gauge    entries in /proc/self/fd
//   process_max_fds                gauge    soft RLIMIT_NOFILE
//   process_start_time_seconds     gauge    start time, seconds since the Unix epoch
//
// The start time is /proc/self/stat starttime (clock ticks after boot) + /proc/stat btime; where
// /proc/stat is hidden (systemd ProcSubset=pid) it is the time the collector was created, which
// llmcapd does first thing at start-up. A file that cannot be read leaves its families out of
// the scrape (never a made-up 0).
//
// Thread-safety: Collect() may be called from any thread; the collector's state is set once in
// its constructor.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <prometheus/collectable.h>

namespace llmcap::server {

// The fields of /proc/<pid>/stat the collector uses, in the file's units.
struct ProcStat {
  double utime_ticks = 0;
  double stime_ticks = 0;
  double starttime_ticks = 0;  // after boot
  double vsize_bytes = 0;
  double rss_pages = 0;
};

// Parses the text of /proc/<pid>/stat; nullopt when it is not one. The command name (field 2)
// may hold spaces and parentheses: fields are counted after its last ')'.
std::optional<ProcStat> parse_proc_stat(std::string_view text);
// The `btime` line of /proc/stat: boot time in seconds since the epoch.
std::optional<double> parse_boot_time(std::string_view proc_stat_text);

class ProcessCollector final : public prometheus::Collectable {
 public:
  // proc_root: "/proc" (a test may point it elsewhere).
  explicit ProcessCollector(std::string proc_root = "/proc");
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  std::string proc_root_;
  double start_time_s_;  // seconds since the epoch, computed once
};

}  // namespace llmcap::server

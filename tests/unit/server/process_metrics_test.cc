#include "server/process_metrics.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <prometheus/metric_family.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <string>

namespace llmcap::server {
namespace {

double value_of(const std::vector<prometheus::MetricFamily>& families, const std::string& name) {
  for (const auto& f : families) {
    if (f.name != name) continue;
    return f.type == prometheus::MetricType::Counter ? f.metric.at(0).counter.value
                                                     : f.metric.at(0).gauge.value;
  }
  ADD_FAILURE() << "no family " << name;
  return -1;
}

TEST(ProcessMetrics, ParsesProcStatWithSpacesAndParenthesesInTheCommand) {
  // Fields 1..24 of proc(5): pid (comm) state ppid ... utime(14) stime(15) ... starttime(22)
  // vsize(23) rss(24) and more.
  const std::string text =
      "4242 (llm cap) (d)) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 50 0 0 20 0 7 0 "
      "123456 987654321 4321 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0\n";
  const auto s = parse_proc_stat(text);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->utime_ticks, 250);
  EXPECT_EQ(s->stime_ticks, 50);
  EXPECT_EQ(s->starttime_ticks, 123456);
  EXPECT_EQ(s->vsize_bytes, 987654321);
  EXPECT_EQ(s->rss_pages, 4321);
  EXPECT_FALSE(parse_proc_stat("4242 (x) S 1 2 3"));
  EXPECT_FALSE(parse_proc_stat("no parenthesis at all"));
  EXPECT_FALSE(parse_proc_stat(
      "1 (x) S 1 1 1 0 -1 0 0 0 0 0 abc 50 0 0 20 0 7 0 1 2 3 4 5 6 7 8 9 10 11 12"));
}

TEST(ProcessMetrics, ParsesBootTime) {
  EXPECT_EQ(parse_boot_time("cpu  1 2 3\nintr 5\nbtime 1700000000\nprocesses 9\n"), 1700000000);
  EXPECT_FALSE(parse_boot_time("cpu 1 2 3\n"));
}

TEST(ProcessMetrics, OpenFdsCountsTheProcesssDescriptors) {
  ProcessCollector c;
  const double before = value_of(c.Collect(), "process_open_fds");
  const int fd = ::open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  const double during = value_of(c.Collect(), "process_open_fds");
  ::close(fd);
  EXPECT_EQ(during, before + 1);
  EXPECT_EQ(value_of(c.Collect(), "process_open_fds"), before);
}

TEST(ProcessMetrics, CpuTimeGrowsWithWork) {
  ProcessCollector c;
  const double before = value_of(c.Collect(), "process_cpu_seconds_total");
  // Spin for 0.25 s of this process's CPU time (not wall time: the machine may be busy).
  volatile double x = 0;
  const std::clock_t start = std::clock();
  while (std::clock() - start < CLOCKS_PER_SEC / 4) x = x + 1;
  EXPECT_GT(value_of(c.Collect(), "process_cpu_seconds_total"), before + 0.2);
}

TEST(ProcessMetrics, AMissingProcLeavesItsFamiliesOut) {
  ProcessCollector c("/nonexistent-proc");
  const auto families = c.Collect();
  for (const auto& f : families) {
    EXPECT_NE(f.name, "process_cpu_seconds_total");
    EXPECT_NE(f.name, "process_open_fds");
  }
  // The start time falls back to when the collector was created.
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_NEAR(value_of(families, "process_start_time_seconds"), now, 5);
}

}  // namespace
}  // namespace llmcap::server

#include "agent/cpu_meter.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace llmcap::agent {
namespace {

TEST(CpuMeter, BusyThreadShowsCpuSleepingDoesNot) {
  CpuMeter m;
  m.start();
  volatile std::uint64_t x = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
  while (std::chrono::steady_clock::now() < until) x = x + 1;
  const CpuUsage busy = m.stop();
  EXPECT_GT(busy.thread_cpu_ns, 10'000'000);  // at least 10 ms of the 50 ms spent spinning
  EXPECT_GE(busy.process_cpu_ns, busy.thread_cpu_ns - 5'000'000);
  EXPECT_GE(busy.wall_ns, 50'000'000);

  m.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const CpuUsage idle = m.stop();
  EXPECT_LT(idle.thread_cpu_ns, 10'000'000);
  EXPECT_LT(idle.thread_utilisation(), 0.2);
  EXPECT_GE(idle.wall_ns, 50'000'000);
  EXPECT_GE(idle.involuntary_context_switches, 0);
}

TEST(CpuMeter, UtilisationOfEmptyWindowIsZero) { EXPECT_EQ(CpuUsage{}.thread_utilisation(), 0); }

}  // namespace
}  // namespace llmcap::agent

#include "agent/cpu_meter.h"

#include <gtest/gtest.h>

#include <time.h>

#include <chrono>
#include <thread>

namespace llmcap::agent {
namespace {

// This thread's CPU time read directly, independent of CpuMeter.
std::int64_t own_thread_cpu_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

TEST(CpuMeter, BusyThreadShowsCpuSleepingDoesNot) {
  CpuMeter m;
  m.start();
  // Spin until this thread has really run 50 ms (not for 50 ms of wall time: on a loaded
  // machine the thread may get a fraction of that). The wall-clock cap only guards a hang.
  constexpr std::int64_t kBusyNs = 50'000'000;
  const std::int64_t cpu0 = own_thread_cpu_ns();
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  volatile std::uint64_t x = 0;
  while (own_thread_cpu_ns() - cpu0 < kBusyNs && std::chrono::steady_clock::now() < give_up)
    x = x + 1;
  const std::int64_t spun_ns = own_thread_cpu_ns() - cpu0;
  const CpuUsage busy = m.stop();
  ASSERT_GE(spun_ns, kBusyNs) << "the spinning thread got under 50 ms of CPU in 20 s";
  // The meter sees (at least) the CPU this thread burnt, within 1 ms of clock granularity.
  EXPECT_GE(busy.thread_cpu_ns, spun_ns - 1'000'000);
  EXPECT_GE(busy.process_cpu_ns, busy.thread_cpu_ns - 5'000'000);
  // One thread cannot run faster than the clock (the two clocks are read at slightly different
  // moments: allow 1 ms).
  EXPECT_GE(busy.wall_ns, busy.thread_cpu_ns - 1'000'000);

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

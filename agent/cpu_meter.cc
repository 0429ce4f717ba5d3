#include "agent/cpu_meter.h"

#include <sys/resource.h>
#include <time.h>

#include <chrono>

namespace llmcap::agent {

std::int64_t CpuMeter::thread_cpu_now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::int64_t CpuMeter::process_cpu_now_ns() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const auto us = [](const timeval& tv) {
    return static_cast<std::int64_t>(tv.tv_sec) * 1'000'000 + tv.tv_usec;
  };
  return (us(ru.ru_utime) + us(ru.ru_stime)) * 1000;
}

std::int64_t CpuMeter::monotonic_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::int64_t CpuMeter::thread_involuntary_switches_now() {
  rusage ru{};
  getrusage(RUSAGE_THREAD, &ru);
  return ru.ru_nivcsw;
}

void CpuMeter::start() {
  nivcsw0_ = thread_involuntary_switches_now();
  wall0_ = monotonic_now_ns();
  thread0_ = thread_cpu_now_ns();
  process0_ = process_cpu_now_ns();
}

CpuUsage CpuMeter::stop() const {
  CpuUsage u;
  u.wall_ns = monotonic_now_ns() - wall0_;
  u.thread_cpu_ns = thread_cpu_now_ns() - thread0_;
  u.process_cpu_ns = process_cpu_now_ns() - process0_;
  u.involuntary_context_switches = thread_involuntary_switches_now() - nivcsw0_;
  return u;
}

}  // namespace llmcap::agent

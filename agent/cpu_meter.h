// CpuMeter: the load generator's own CPU use (docs/metrics.md §8.2, §4.1: a saturated client
// makes a step inconclusive). Thread CPU (CLOCK_THREAD_CPUTIME_ID of the thread that calls
// start/stop — the agent's I/O thread), process CPU (getrusage RUSAGE_SELF: user + system) and wall
// time. start() and stop() must be called on the same thread; not thread-safe otherwise.
#pragma once

#include <cstdint>

namespace llmcap::agent {

struct CpuUsage {
  std::int64_t wall_ns = 0;
  std::int64_t thread_cpu_ns = 0;   // the agent I/O thread
  std::int64_t process_cpu_ns = 0;  // the whole process (includes other components)
  // Times the agent thread was preempted while runnable (getrusage RUSAGE_THREAD ru_nivcsw):
  // each one can delay timestamps by a scheduler slice, so a high count flags timing noise
  // from a busy machine rather than from the target.
  std::int64_t involuntary_context_switches = 0;
  // thread_cpu / wall: 1.0 = the agent thread was never idle (client saturated).
  double thread_utilisation() const {
    return wall_ns > 0 ? static_cast<double>(thread_cpu_ns) / static_cast<double>(wall_ns) : 0;
  }
};

class CpuMeter {
 public:
  void start();
  // Usage since start().
  CpuUsage stop() const;

  static std::int64_t thread_cpu_now_ns();
  static std::int64_t process_cpu_now_ns();
  static std::int64_t monotonic_now_ns();
  static std::int64_t thread_involuntary_switches_now();

 private:
  std::int64_t wall0_ = 0;
  std::int64_t thread0_ = 0;
  std::int64_t process0_ = 0;
  std::int64_t nivcsw0_ = 0;
};

}  // namespace llmcap::agent

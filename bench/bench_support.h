// Helpers shared by the macro benchmarks (bench_client_firehose, bench_concurrency,
// bench_open_loop, bench_sim_streams): `--name=value` flags, process memory from /proc, the
// open-file limit, a server forked into its own process (so the client's CPU and memory are
// measured alone), medians, and a step spec aimed at a local firehose. Not thread-safe;
// call from main().
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "agent/step_spec.h"
#include "analysis/request_sample.h"
#include "bench/firehose_server.h"

namespace llmcap::bench {

// `--name=value` arguments; unknown names are an error (listed with the known ones).
class BenchFlags {
 public:
  BenchFlags(int argc, char** argv);
  double number(const std::string& name, double fallback);
  std::string text(const std::string& name, const std::string& fallback);
  // Exits with a message when a flag was given that no number()/text() call asked for.
  void check_all_used() const;

 private:
  std::map<std::string, std::string> given_;
  std::map<std::string, bool> used_;
  std::vector<std::string> known_;
  std::string program_;
};

// VmRSS / VmHWM of this process in KiB (from /proc/self/status); -1 when unreadable.
std::int64_t rss_kib();
std::int64_t peak_rss_kib();
// Raises RLIMIT_NOFILE's soft limit to min(want, hard limit); returns the limit now in effect.
std::int64_t raise_nofile(std::int64_t want);

// A server running in a forked child process. start() must be called before this process
// creates any thread. The child runs `serve`, which must write the listening port to the given
// fd and then block serving (it is killed with SIGTERM by stop()).
class ForkedServer {
 public:
  ForkedServer() = default;
  ~ForkedServer();
  ForkedServer(const ForkedServer&) = delete;
  ForkedServer& operator=(const ForkedServer&) = delete;
  void start(const std::function<void(int port_fd)>& serve);
  std::uint16_t port() const { return port_; }
  // Kills and reaps the child; returns its CPU time (user + system) in ns over its life.
  std::int64_t stop();

 private:
  pid_t pid_ = -1;
  std::uint16_t port_ = 0;
};

// The child side of a forked firehose: raises RLIMIT_NOFILE, serves on one thread forever.
void serve_firehose(const FirehoseOptions& options, int port_fd);

double median(std::vector<double> v);
// A closed-loop completions step against http://127.0.0.1:port, calibration off, fixed
// input/output lengths, model "firehose" (no /v1/models probe).
agent::StepSpec local_step(std::uint16_t port, std::int32_t concurrency, std::int32_t input_tokens,
                           std::int32_t output_tokens, double duration_s);
// Sum of token events over all samples of a result.
std::uint64_t total_token_events(const std::vector<analysis::RequestSample>& samples);

}  // namespace llmcap::bench

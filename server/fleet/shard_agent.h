// ShardAgent: the worker behind `llmcapd agent` (scale-out, issue 11). It runs one shard of
// every step of one job:
//   1. clock exchange with the daemon (NTP-style: t0 sent, t1/t2 at the daemon, t3 received;
//      offset = ((t1 − t0) + (t2 − t3)) / 2, delay = (t3 − t0) − (t2 − t1)) over several round
//      trips, keeping the one with the smallest delay; then registers with that offset;
//   2. polls for its next assignment (a shard StepSpec and a wall-clock start time), sleeps
//      until the start on its monotonic clock (the wall clock is read once to convert), runs
//      it with agent::StepRunner, whose times are all on its own monotonic clock;
//   3. uploads the raw samples and histograms with an idempotency key, retrying with bounded
//      exponential backoff (a retried upload is stored once);
//   4. exits when the daemon says the job is done.
// Expected failures (daemon unreachable for too long, refused registration, an upload that
// never went through) end run() with a non-zero code and error() saying why.
// Thread-safety: run() on one thread; stop it with the stop token from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <stop_token>
#include <string>

namespace llmcap::server {

struct ShardAgentOptions {
  std::string daemon_url;  // http://host:port
  std::string job_id;
  std::int32_t shard = -1;
  std::string region;  // "" = the plan's label for this shard
  std::string token;   // admin token of the daemon ("" when its API is open)
  int clock_rounds = 8;
  double register_timeout_s = 300;  // keep retrying while the job has no fleet yet
  double daemon_timeout_s = 60;     // daemon unreachable this long while polling → give up
  int upload_attempts = 8;          // backoff 250 ms, 500 ms, ... capped at 8 s
  std::int64_t request_deadline_ms = 30'000;
  // Test hooks (tests/integration): pretend the wall clock is this far ahead; upload twice.
  double test_clock_offset_ms = 0;
  bool test_upload_twice = false;
  std::function<void(const std::string&)> log;  // progress lines; default: stderr
};

class ShardAgent {
 public:
  explicit ShardAgent(ShardAgentOptions options);
  // 0 when the daemon said the job is done; 2 for bad options; 3 for a runtime failure.
  int run(std::stop_token stop = {});
  const std::string& error() const { return error_; }
  // The measured clock offset (daemon − agent, ms) and its round trip, after registration.
  double clock_offset_ms() const { return offset_ms_; }
  double clock_rtt_ms() const { return rtt_ms_; }

 private:
  std::int64_t wall_now_ns() const;
  bool measure_clock(std::string& why);
  int fail(int code, std::string message);

  ShardAgentOptions o_;
  std::string error_;
  double offset_ms_ = 0;
  double rtt_ms_ = 0;
};

}  // namespace llmcap::server

// Free helpers shared by the macro benchmarks (bench_client_firehose, bench_concurrency,
// bench_open_loop, bench_sim_streams): process memory from /proc, the open-file limit, the
// child side of a forked firehose, medians, and a step spec aimed at a local server.
// Not thread-safe; call from main().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agent/step_spec.h"
#include "analysis/request_sample.h"
#include "bench/bench_flags.h"
#include "bench/firehose_server.h"
#include "bench/forked_server.h"

namespace llmcap::bench {

// VmRSS / VmHWM of this process in KiB (from /proc/self/status); -1 when unreadable.
std::int64_t rss_kib();
std::int64_t peak_rss_kib();
// Raises RLIMIT_NOFILE's soft limit to min(want, hard limit); returns the limit now in effect.
std::int64_t raise_nofile(std::int64_t want);

// The child side of a forked firehose: raises RLIMIT_NOFILE, serves on one thread forever.
void serve_firehose(const FirehoseOptions& options, int port_fd);

// --server (asio|raw) and --phases (aligned|spread, spread needs raw) of the paced
// benchmarks; false after printing which flag is wrong.
bool paced_server_flags_ok(const std::string& server, const std::string& phases);

double median(std::vector<double> v);
// A closed-loop completions step against http://127.0.0.1:port, calibration off, fixed
// input/output lengths, model "firehose" (no /v1/models probe).
agent::StepSpec local_step(std::uint16_t port, std::int32_t concurrency, std::int32_t input_tokens,
                           std::int32_t output_tokens, double duration_s);
// Sum of token events over all samples of a result.
std::uint64_t total_token_events(const std::vector<analysis::RequestSample>& samples);

}  // namespace llmcap::bench

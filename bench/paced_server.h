// serve_paced_raw: a paced token server with the least per-event cost this kernel allows
// (issue 10, ITL at 10,000 streams). Nearly the firehose's paced-mode contract (a bad
// max_tokens gets the default instead of a 400; no pipelining)
// (FirehoseServer, interval_ms > 0): POST /v1/completions and /v1/chat/completions answer
// `max_tokens` vLLM-shaped token events, one per stream every interval_ms on absolute
// deadlines (t_headers + k × interval), then the finish, usage and `[DONE]` events; keep-alive
// HTTP/1.1 with chunked bodies; other paths get 404. Where the firehose pays ≈ 10 µs of CPU per
// event (Asio coroutines, a timer per stream, net::HttpServer's chunked writer), this server
// is one thread on level-triggered epoll with one deadline heap for all streams and one
// epoll_pwait2 timeout per wake-up, and writes each event with one send() of pre-built bytes.
// That keeps the truth the client is judged against accurate at counts where the firehose's
// own timers fall behind.
//
// Runs in the calling thread until SIGTERM (ForkedServer::stop), then prints to stderr what it
// saw: requests, events, its worst pacing lag and its own gap error P50/P99 (|gap between a
// stream's consecutive writes − interval|), as the firehose does. A write queued behind
// unsent bytes counts as written. Buffers and sockets have no limits or deadlines (bench only).
// Throws std::runtime_error when it cannot listen, std::invalid_argument for bad options.
#pragma once

#include "bench/firehose_server.h"

namespace llmcap::bench {

// Uses options.address, port, interval_ms (> 0), default_max_tokens, max_connections, model,
// spread_phases.
// Writes the bound port (std::uint16_t) to port_fd, then closes it.
void serve_paced_raw(const FirehoseOptions& options, int port_fd);

}  // namespace llmcap::bench

// RawTarget: a fake HTTP target that answers each request with scripted raw bytes, for faults
// below what net::HttpServer (and so tests/fakes/scripted_target.h) can produce: an HTTP/1.0
// close-delimited body, broken chunk framing, a whole response trickled one byte per write, an
// enormous event with no line end. One request per connection; after its reply the connection
// ends (FIN, or a TCP reset when asked), so a client never reuses it.
//
// Request n (counted from 0 over the target's life) gets cycle[n % size], which mixes faulty and
// good replies in one step. Every socket operation has a deadline (10 s), so a client that stops
// reading never wedges the fake.
//
// Runs its own io_context thread (never the agent's). Thread safety: all public functions may be
// called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace llmcap::fakes {

struct RawReply {
  std::string head;                   // written first: status line, headers, start of the body
  std::uint64_t filler_bytes = 0;     // then this many 'x' bytes, in 64 KiB writes
  std::string tail;                   // then these
  std::int64_t byte_interval_us = 0;  // > 0: head and tail one byte per write, this far apart
  bool reset = false;                 // end with a TCP reset instead of a FIN
  std::int64_t hold_open_ms = 0;      // > 0: after the reply, keep the connection open this long
};

// What the fake did for one request.
struct RawServed {
  std::string request_line;         // e.g. "POST /v1/completions HTTP/1.1"
  std::uint64_t bytes_written = 0;  // reply bytes the kernel accepted
  bool write_failed = false;        // the client went away before the reply was written
};

class RawTarget {
 public:
  explicit RawTarget(std::vector<RawReply> cycle);
  ~RawTarget();
  RawTarget(const RawTarget&) = delete;
  RawTarget& operator=(const RawTarget&) = delete;

  std::uint16_t port() const;
  std::string base_url() const;  // "http://127.0.0.1:PORT"
  std::vector<RawServed> served() const;

  // The SSE events of a completions stream: `tokens` token events ("tok"), a vLLM-style usage
  // chunk (prompt 10, completion `tokens`) and, when `done`, the [DONE] sentinel.
  static std::string sse_events(int tokens, bool done = true);
  // A good reply: HTTP/1.1 200 text/event-stream, chunked (one chunk per event), Connection: close.
  static RawReply ok_chunked(int tokens);
  // Wraps `body` as one HTTP/1.1 chunk per SSE event ("size\r\ndata\r\n"), plus the last chunk.
  static std::string chunked(const std::string& body);

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace llmcap::fakes

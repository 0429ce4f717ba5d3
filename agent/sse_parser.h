// SseParser: an incremental parser of a text/event-stream body (WHATWG "server-sent events")
// that stamps every event with the arrival time of the read that completed it.
//
// The caller feeds each read as it arrives together with its steady-clock arrival time; bytes
// may split events anywhere (inside a line, between '\r' and '\n'). Handles '\n', '\r\n' and
// lone '\r' line ends, comment lines (':' ...), multi-line `data:` (joined with '\n'),
// `event:` and `id:` fields; other fields are ignored as the spec says. An event is dispatched
// at a blank line; finish() dispatches a trailing event the stream ended without a blank line
// for (lenient: such an event is marked `unterminated`).
//
// One parser per response; not thread-safe. Cost: one pass over the bytes, one copy of each
// data line into the event.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace llmcap::agent {

struct SseEvent {
  std::string data;               // data lines joined with '\n' (no trailing '\n')
  std::string event;              // `event:` field; empty = "message"
  std::int64_t t_arrival_ns = 0;  // arrival time of the read that completed the event
  bool unterminated = false;      // dispatched by finish() without its blank line
};

class SseParser {
 public:
  // max_event_bytes bounds one event's buffered data; beyond it feed() fails.
  explicit SseParser(std::size_t max_event_bytes = 4 * 1024 * 1024);

  // Parses `bytes` that arrived at `t_arrival_ns`, appending completed events to `out`.
  // Returns false (and sets error()) when an event exceeds max_event_bytes; the parser is
  // then unusable.
  bool feed(std::string_view bytes, std::int64_t t_arrival_ns, std::vector<SseEvent>& out);
  // End of stream: dispatches a pending event that has data (marked unterminated).
  void finish(std::int64_t t_arrival_ns, std::vector<SseEvent>& out);

  const std::string& error() const { return error_; }
  std::uint64_t bytes_seen() const { return bytes_seen_; }

 private:
  void process_line(std::string_view line, std::int64_t t_ns, std::vector<SseEvent>& out);
  void dispatch(std::int64_t t_ns, bool unterminated, std::vector<SseEvent>& out);

  std::size_t max_event_bytes_;
  std::string line_;       // partial line carried between feeds
  bool skip_lf_ = false;   // last byte was '\r': a following '\n' belongs to it
  bool has_data_ = false;  // at least one data line in the pending event
  SseEvent pending_;
  std::string error_;
  std::uint64_t bytes_seen_ = 0;
};

}  // namespace llmcap::agent

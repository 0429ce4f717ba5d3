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
// One parser per response; not thread-safe. Cost (issue 10): one pass over the bytes (each
// byte is looked at by one memchr for '\n' and one for '\r', amortised over the read). With an
// SseSink, an event whose single data line lies inside one read is handed over as a view into
// that read — no copy; only an event split across reads (or with several data lines) is
// assembled in a buffer the parser reuses. The vector overload copies each event out (tests).
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

// One dispatched event, valid only during the SseSink::on_event call it is passed to.
struct SseEventView {
  std::string_view data;          // data lines joined with '\n' (no trailing '\n')
  std::string_view event;         // `event:` field; empty = "message"
  std::int64_t t_arrival_ns = 0;  // arrival time of the read that completed the event
  bool unterminated = false;      // dispatched by finish() without its blank line
};

// Receives events as the parser dispatches them, on the caller's thread.
class SseSink {
 public:
  virtual ~SseSink() = default;
  // Return false to stop parsing (the caller found the stream unusable).
  virtual bool on_event(const SseEventView& event) = 0;
};

class SseParser {
 public:
  // max_event_bytes bounds one event's buffered data; beyond it feed() fails.
  explicit SseParser(std::size_t max_event_bytes = 4 * 1024 * 1024);

  // Parses `bytes` that arrived at `t_arrival_ns`, passing completed events to `sink`.
  // Returns false when an event exceeds max_event_bytes (error() says so) or the sink returned
  // false (error() empty); either way the parser is then unusable.
  bool feed(std::string_view bytes, std::int64_t t_arrival_ns, SseSink& sink);
  // End of stream: dispatches a pending event that has data (marked unterminated).
  void finish(std::int64_t t_arrival_ns, SseSink& sink);

  // The same, appending copies of the completed events to `out`.
  bool feed(std::string_view bytes, std::int64_t t_arrival_ns, std::vector<SseEvent>& out);
  void finish(std::int64_t t_arrival_ns, std::vector<SseEvent>& out);

  const std::string& error() const { return error_; }
  std::uint64_t bytes_seen() const { return bytes_seen_; }

 private:
  // `in_read`: line views the bytes of the current feed (valid until it returns), not line_.
  bool process_line(std::string_view line, bool in_read, std::int64_t t_ns, SseSink& sink);
  bool dispatch(std::int64_t t_ns, bool unterminated, SseSink& sink);
  std::size_t data_size() const { return data_in_read_ ? data_view_.size() : data_.size(); }
  // Moves a data view into data_ (before the read it points into goes away).
  void own_data();
  bool fail_oversized();

  std::size_t max_event_bytes_;
  std::string line_;           // partial line carried between feeds
  bool skip_lf_ = false;       // last byte was '\r': a following '\n' belongs to it
  bool has_data_ = false;      // at least one data line in the pending event
  bool data_in_read_ = false;  // the pending data is data_view_ (into the current read)
  std::string_view data_view_;
  std::string data_;   // pending data when assembled (reused between events)
  std::string event_;  // pending `event:` field
  bool stopped_ = false;
  std::string error_;
  std::uint64_t bytes_seen_ = 0;
};

}  // namespace llmcap::agent

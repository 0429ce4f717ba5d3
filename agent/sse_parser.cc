#include "agent/sse_parser.h"

#include <cstring>

namespace llmcap::agent {

namespace {

// Copies every event out; for callers that want values (tests, fuzzing).
class VectorSink final : public SseSink {
 public:
  explicit VectorSink(std::vector<SseEvent>& out) : out_(out) {}
  bool on_event(const SseEventView& e) override {
    out_.push_back(
        SseEvent{std::string(e.data), std::string(e.event), e.t_arrival_ns, e.unterminated});
    return true;
  }

 private:
  std::vector<SseEvent>& out_;
};

const char* find_or_end(const char* begin, const char* end, char c) {
  const void* hit = std::memchr(begin, c, static_cast<std::size_t>(end - begin));
  return hit ? static_cast<const char*>(hit) : end;
}

}  // namespace

SseParser::SseParser(std::size_t max_event_bytes) : max_event_bytes_(max_event_bytes) {}

bool SseParser::fail_oversized() {
  error_ = "SSE event exceeds " + std::to_string(max_event_bytes_) + " bytes";
  return false;
}

void SseParser::own_data() {
  if (data_in_read_) {
    data_.assign(data_view_);
    data_in_read_ = false;
    data_view_ = {};
  }
}

bool SseParser::feed(std::string_view bytes, std::int64_t t_arrival_ns, SseSink& sink) {
  if (!error_.empty() || stopped_) return false;
  bytes_seen_ += bytes.size();
  const char* p = bytes.data();
  const char* const end = p + bytes.size();
  // Next '\n' and '\r' at or after p (end = none left in this read). Each is searched again
  // only once p has passed it, so the read is scanned once per character, not once per line.
  const char* next_lf = nullptr;
  const char* next_cr = nullptr;
  bool ok = true;
  while (p < end) {
    if (skip_lf_) {
      skip_lf_ = false;
      if (*p == '\n') {
        ++p;
        continue;
      }
    }
    if (next_lf == nullptr || (next_lf < p)) next_lf = find_or_end(p, end, '\n');
    if (next_cr == nullptr || (next_cr < p)) next_cr = find_or_end(p, end, '\r');
    const char* eol = next_lf < next_cr ? next_lf : next_cr;
    const std::size_t len = static_cast<std::size_t>(eol - p);
    if (eol == end) {
      line_.append(p, len);
      if (line_.size() + data_size() > max_event_bytes_) {
        ok = fail_oversized();
      }
      break;
    }
    if (*eol == '\r') skip_lf_ = true;
    if (line_.empty()) {
      ok = process_line(std::string_view(p, len), true, t_arrival_ns, sink);
    } else {
      line_.append(p, len);
      ok = process_line(line_, false, t_arrival_ns, sink);
      line_.clear();
    }
    if (!ok) break;
    if (data_size() > max_event_bytes_) {
      ok = fail_oversized();
      break;
    }
    p = eol + 1;
  }
  own_data();  // the read's bytes are gone after this call
  return ok;
}

bool SseParser::process_line(std::string_view line, bool in_read, std::int64_t t_ns,
                             SseSink& sink) {
  if (line.empty()) return dispatch(t_ns, false, sink);
  if (line.front() == ':') return true;  // comment (keep-alive pings)
  std::string_view field = line;
  std::string_view value;
  const auto colon = line.find(':');
  if (colon != std::string_view::npos) {
    field = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (field == "data") {
    if (!has_data_ && in_read) {
      data_view_ = value;  // the common case: one data line inside one read, no copy
      data_in_read_ = true;
    } else {
      own_data();
      if (has_data_) data_.push_back('\n');
      data_.append(value);
    }
    has_data_ = true;
  } else if (field == "event") {
    event_.assign(value);
  }
  // id, retry and unknown fields do not affect measurement; ignored as the spec says.
  return true;
}

bool SseParser::dispatch(std::int64_t t_ns, bool unterminated, SseSink& sink) {
  bool go_on = true;
  if (has_data_) {
    const SseEventView e{data_in_read_ ? data_view_ : std::string_view(data_), event_, t_ns,
                         unterminated};
    go_on = sink.on_event(e);
    if (!go_on) stopped_ = true;
  }
  data_.clear();
  data_view_ = {};
  data_in_read_ = false;
  event_.clear();
  has_data_ = false;
  return go_on;
}

void SseParser::finish(std::int64_t t_arrival_ns, SseSink& sink) {
  if (!error_.empty() || stopped_) return;
  if (!line_.empty()) {
    std::string last = std::move(line_);
    line_.clear();
    if (!process_line(last, false, t_arrival_ns, sink)) return;
  }
  dispatch(t_arrival_ns, true, sink);
}

bool SseParser::feed(std::string_view bytes, std::int64_t t_arrival_ns,
                     std::vector<SseEvent>& out) {
  VectorSink sink(out);
  return feed(bytes, t_arrival_ns, sink);
}

void SseParser::finish(std::int64_t t_arrival_ns, std::vector<SseEvent>& out) {
  VectorSink sink(out);
  finish(t_arrival_ns, sink);
}

}  // namespace llmcap::agent

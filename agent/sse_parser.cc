#include "agent/sse_parser.h"

#include <cstring>

namespace llmcap::agent {

SseParser::SseParser(std::size_t max_event_bytes) : max_event_bytes_(max_event_bytes) {}

bool SseParser::feed(std::string_view bytes, std::int64_t t_arrival_ns,
                     std::vector<SseEvent>& out) {
  if (!error_.empty()) return false;
  bytes_seen_ += bytes.size();
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    if (skip_lf_) {
      skip_lf_ = false;
      if (bytes[pos] == '\n') {
        ++pos;
        continue;
      }
    }
    // Find the next line end ('\r' or '\n') from pos.
    const char* begin = bytes.data() + pos;
    const std::size_t left = bytes.size() - pos;
    const void* lf = std::memchr(begin, '\n', left);
    const void* cr = std::memchr(begin, '\r', left);
    const char* end = nullptr;
    if (lf && cr)
      end = static_cast<const char*>(lf) < static_cast<const char*>(cr)
                ? static_cast<const char*>(lf)
                : static_cast<const char*>(cr);
    else if (lf)
      end = static_cast<const char*>(lf);
    else if (cr)
      end = static_cast<const char*>(cr);
    if (end == nullptr) {
      line_.append(begin, left);
      if (line_.size() + pending_.data.size() > max_event_bytes_) {
        error_ = "SSE event exceeds " + std::to_string(max_event_bytes_) + " bytes";
        return false;
      }
      return true;
    }
    const std::size_t len = static_cast<std::size_t>(end - begin);
    if (*end == '\r') skip_lf_ = true;
    if (line_.empty()) {
      process_line(std::string_view(begin, len), t_arrival_ns, out);
    } else {
      line_.append(begin, len);
      process_line(line_, t_arrival_ns, out);
      line_.clear();
    }
    if (pending_.data.size() > max_event_bytes_) {
      error_ = "SSE event exceeds " + std::to_string(max_event_bytes_) + " bytes";
      return false;
    }
    pos += len + 1;
  }
  return true;
}

void SseParser::process_line(std::string_view line, std::int64_t t_ns, std::vector<SseEvent>& out) {
  if (line.empty()) {
    dispatch(t_ns, false, out);
    return;
  }
  if (line.front() == ':') return;  // comment (keep-alive pings)
  std::string_view field = line;
  std::string_view value;
  const auto colon = line.find(':');
  if (colon != std::string_view::npos) {
    field = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (field == "data") {
    if (has_data_) pending_.data.push_back('\n');
    pending_.data.append(value);
    has_data_ = true;
  } else if (field == "event") {
    pending_.event.assign(value);
  }
  // id, retry and unknown fields do not affect measurement; ignored as the spec says.
}

void SseParser::dispatch(std::int64_t t_ns, bool unterminated, std::vector<SseEvent>& out) {
  if (has_data_) {
    pending_.t_arrival_ns = t_ns;
    pending_.unterminated = unterminated;
    out.push_back(std::move(pending_));
  }
  pending_ = SseEvent{};
  has_data_ = false;
}

void SseParser::finish(std::int64_t t_arrival_ns, std::vector<SseEvent>& out) {
  if (!error_.empty()) return;
  if (!line_.empty()) {
    std::string last = std::move(line_);
    line_.clear();
    process_line(last, t_arrival_ns, out);
  }
  dispatch(t_arrival_ns, true, out);
}

}  // namespace llmcap::agent

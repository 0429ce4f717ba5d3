#include "agent/trace.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>

namespace llmcap::agent {

using json = nlohmann::json;

namespace {

constexpr std::size_t kMaxHashIds = 1 << 16;  // per request (65536 blocks)

std::string trace_line_error(std::uint32_t line, const std::string& what) {
  return "trace line " + std::to_string(line) + ": " + what;
}

// Calls f(line_no, line) for every line that is not blank (a trailing \r removed).
template <class F>
std::optional<std::string> for_each_line(std::string_view text, F&& f) {
  std::uint32_t line_no = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t nl = text.find('\n', pos);
    std::string_view line =
        text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    if (auto err = f(line_no, line)) return err;
  }
  return std::nullopt;
}

// A whole number in [lo, hi] (2 and 2.0 alike), or nullopt.
std::optional<std::int64_t> whole(const json& v, double lo, double hi) {
  if (!v.is_number() || v.is_boolean()) return std::nullopt;
  const double d = v.get<double>();
  if (!std::isfinite(d) || std::floor(d) != d || d < lo || d > hi) return std::nullopt;
  return static_cast<std::int64_t>(d);
}

std::string_view trace_trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  return s;
}

// Splits one CSV line at commas (quoted fields may not contain commas: BurstGPT's do not).
std::vector<std::string_view> split_csv(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t pos = 0;
  while (true) {
    const std::size_t comma = line.find(',', pos);
    out.push_back(trace_trim(
        line.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos)));
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return out;
}

std::optional<double> parse_double(std::string_view s) {
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace

std::string_view to_string(TraceFormat f) {
  return f == TraceFormat::kBurstGpt ? "burstgpt" : "mooncake";
}

std::optional<TraceFormat> parse_trace_format(std::string_view s) {
  if (s == "mooncake") return TraceFormat::kMooncake;
  if (s == "burstgpt") return TraceFormat::kBurstGpt;
  return std::nullopt;
}

Expected<Trace> Trace::parse(std::string_view text, TraceFormat format) {
  auto t = format == TraceFormat::kMooncake ? parse_mooncake(text) : parse_burstgpt(text);
  if (!t) return t;
  if (t->records_.empty()) {
    return Expected<Trace>::failure(t->skipped_ > 0 ? "trace has no usable requests (" +
                                                          std::to_string(t->skipped_) +
                                                          " failed row(s) skipped)"
                                                    : "trace has no requests");
  }
  t->finish();
  return t;
}

Expected<Trace> Trace::parse_mooncake(std::string_view text) {
  Trace trace;
  auto err = for_each_line(
      text, [&trace](std::uint32_t no, std::string_view line) -> std::optional<std::string> {
        const json doc = json::parse(line.begin(), line.end(), nullptr, false);
        if (doc.is_discarded()) return trace_line_error(no, "invalid JSON");
        if (!doc.is_object()) return trace_line_error(no, "must be a JSON object");
        TraceRecord r;
        r.line = no;
        const auto ts = doc.find("timestamp");
        if (ts == doc.end()) return trace_line_error(no, "\"timestamp\" is required (ms)");
        if (!ts->is_number() || ts->is_boolean() || !std::isfinite(ts->get<double>()) ||
            ts->get<double>() < 0 || ts->get<double>() > 1e12)
          return trace_line_error(no, "\"timestamp\" must be a number of ms between 0 and 1e12");
        r.t_ns = static_cast<std::int64_t>(std::llround(ts->get<double>() * 1e6));
        for (const auto& [key, out] :
             {std::pair<const char*, std::int32_t*>{"input_length", &r.input_tokens},
              {"output_length", &r.output_tokens}}) {
          const auto v = doc.find(key);
          if (v == doc.end())
            return trace_line_error(no, std::string("\"") + key + "\" is required");
          const auto n = whole(*v, 1, kMaxTraceTokens);
          if (!n)
            return trace_line_error(no, std::string("\"") + key +
                                            "\" must be an integer between 1 and " +
                                            std::to_string(kMaxTraceTokens));
          *out = static_cast<std::int32_t>(*n);
        }
        if (const auto h = doc.find("hash_ids"); h != doc.end()) {
          if (!h->is_array())
            return trace_line_error(no, "\"hash_ids\" must be an array of block ids");
          if (h->size() > kMaxHashIds)
            return trace_line_error(
                no, "\"hash_ids\" has more than " + std::to_string(kMaxHashIds) + " block ids");
          r.hash_ids.reserve(h->size());
          for (std::size_t i = 0; i < h->size(); ++i) {
            const auto id = whole((*h)[i], 0, 9e15);
            if (!id)
              return trace_line_error(
                  no, "\"hash_ids\"[" + std::to_string(i) + "] must be a non-negative integer");
            r.hash_ids.push_back(static_cast<std::uint64_t>(*id));
          }
        }
        trace.records_.push_back(std::move(r));
        return std::nullopt;
      });
  if (err) return Expected<Trace>::failure(*err);
  return trace;
}

Expected<Trace> Trace::parse_burstgpt(std::string_view text) {
  Trace trace;
  int col_ts = -1, col_in = -1, col_out = -1;
  std::size_t columns = 0;
  auto err = for_each_line(
      text, [&](std::uint32_t no, std::string_view line) -> std::optional<std::string> {
        const auto fields = split_csv(line);
        if (columns == 0) {
          // The header row names the columns.
          columns = fields.size();
          for (std::size_t i = 0; i < fields.size(); ++i) {
            if (fields[i] == "Timestamp") col_ts = static_cast<int>(i);
            if (fields[i] == "Request tokens") col_in = static_cast<int>(i);
            if (fields[i] == "Response tokens") col_out = static_cast<int>(i);
          }
          std::string missing;
          for (const auto& [name, col] : {std::pair<const char*, int>{"Timestamp", col_ts},
                                          {"Request tokens", col_in},
                                          {"Response tokens", col_out}}) {
            if (col < 0) missing += std::string(missing.empty() ? "" : ", ") + "\"" + name + "\"";
          }
          if (!missing.empty())
            return trace_line_error(
                no, "the header row must name the columns " + missing + " (BurstGPT's CSV header)");
          return std::nullopt;
        }
        if (fields.size() != columns)
          return trace_line_error(no, "has " + std::to_string(fields.size()) +
                                          " fields, the header " + std::to_string(columns));
        TraceRecord r;
        r.line = no;
        const auto ts = parse_double(fields[static_cast<std::size_t>(col_ts)]);
        if (!ts || *ts < 0 || *ts > 1e9)
          return trace_line_error(no,
                                  "\"Timestamp\" must be a number of seconds between 0 and 1e9");
        r.t_ns = static_cast<std::int64_t>(std::llround(*ts * 1e9));
        std::int64_t tokens[2] = {0, 0};
        const std::pair<const char*, int> cols[2] = {{"Request tokens", col_in},
                                                     {"Response tokens", col_out}};
        for (int k = 0; k < 2; ++k) {
          const auto v = parse_double(fields[static_cast<std::size_t>(cols[k].second)]);
          if (!v || *v < 0 || *v > kMaxTraceTokens || std::floor(*v) != *v)
            return trace_line_error(no, std::string("\"") + cols[k].first +
                                            "\" must be an integer between 0 and " +
                                            std::to_string(kMaxTraceTokens));
          tokens[k] = static_cast<std::int64_t>(*v);
        }
        if (tokens[0] == 0 || tokens[1] == 0) {
          ++trace.skipped_;  // a failed request (BurstGPT: Response tokens 0)
          return std::nullopt;
        }
        r.input_tokens = static_cast<std::int32_t>(tokens[0]);
        r.output_tokens = static_cast<std::int32_t>(tokens[1]);
        trace.records_.push_back(std::move(r));
        return std::nullopt;
      });
  if (err) return Expected<Trace>::failure(*err);
  if (columns == 0) return Expected<Trace>::failure("trace has no header row");
  return trace;
}

void Trace::finish() {
  std::stable_sort(records_.begin(), records_.end(),
                   [](const TraceRecord& a, const TraceRecord& b) { return a.t_ns < b.t_ns; });
  const std::int64_t t0 = records_.empty() ? 0 : records_.front().t_ns;
  for (auto& r : records_) r.t_ns -= t0;
}

Expected<Trace> Trace::load(const std::string& path, TraceFormat format,
                            const DatasetLimits& limits) {
  auto text = read_request_file(path, limits, "trace");
  if (!text) return Expected<Trace>::failure(text.error());
  auto t = parse(*text, format);
  if (!t) return Expected<Trace>::failure(path + ": " + t.error());
  return t;
}

Trace Trace::window(const TraceWindow& w) const {
  Trace out;
  out.skipped_ = skipped_;
  const auto start = static_cast<std::int64_t>(std::llround(w.start_s * 1e9));
  const std::int64_t end = w.duration_s > 0
                               ? start + static_cast<std::int64_t>(std::llround(w.duration_s * 1e9))
                               : INT64_MAX;
  for (const auto& r : records_) {
    if (r.t_ns < start || r.t_ns >= end) continue;
    if (w.max_requests > 0 && static_cast<std::int64_t>(out.records_.size()) >= w.max_requests)
      break;
    TraceRecord copy = r;
    copy.t_ns -= start;
    out.records_.push_back(std::move(copy));
  }
  return out;
}

}  // namespace llmcap::agent

#include "api/report_negotiation.h"

#include <charconv>

#include "net/http_message.h"

namespace llmcap::api {

namespace {

// The media type Accept can name the format by; empty: ?format= only.
std::string_view media_type(ReportFormat f) {
  switch (f) {
    case ReportFormat::kJson: return "application/json";
    case ReportFormat::kHtml: return "text/html";
    case ReportFormat::kMarkdown: return "text/markdown";
    case ReportFormat::kCsv: return "text/csv";
    case ReportFormat::kJunit: return "";
  }
  return "";
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

struct MediaRange {
  std::string type;     // lower-cased, "*" for a wildcard
  std::string subtype;  // lower-cased, "*" for a wildcard
  double q = 1;
};

std::vector<MediaRange> parse_accept(std::string_view accept) {
  std::vector<MediaRange> out;
  while (!accept.empty()) {
    const auto comma = accept.find(',');
    std::string_view item = accept.substr(0, comma);
    accept = comma == std::string_view::npos ? std::string_view() : accept.substr(comma + 1);
    const auto semi = item.find(';');
    const std::string range = net::to_lower_ascii(trim(item.substr(0, semi)));
    const auto slash = range.find('/');
    if (range.empty() || slash == std::string::npos) continue;  // malformed: ignored
    MediaRange r{range.substr(0, slash), range.substr(slash + 1)};
    std::string_view params = semi == std::string_view::npos ? "" : item.substr(semi + 1);
    while (!params.empty()) {
      const auto next = params.find(';');
      const auto param = trim(params.substr(0, next));
      params = next == std::string_view::npos ? std::string_view() : params.substr(next + 1);
      if (param.size() < 2 || (param[0] != 'q' && param[0] != 'Q') || param[1] != '=') continue;
      double q = 1;
      const auto value = param.substr(2);
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), q);
      if (ec == std::errc() && end == value.data() + value.size() && q >= 0 && q <= 1) r.q = q;
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::string names_of(const std::vector<ReportFormat>& supported) {
  std::string out;
  for (std::size_t i = 0; i < supported.size(); ++i) {
    if (i) out += i + 1 == supported.size() ? " or " : ", ";
    out += report_format_name(supported[i]);
  }
  return out;
}

}  // namespace

std::string_view report_format_name(ReportFormat f) {
  switch (f) {
    case ReportFormat::kJson: return "json";
    case ReportFormat::kHtml: return "html";
    case ReportFormat::kMarkdown: return "markdown";
    case ReportFormat::kCsv: return "csv";
    case ReportFormat::kJunit: return "junit";
  }
  return "";
}

std::string_view report_content_type(ReportFormat f) {
  switch (f) {
    case ReportFormat::kJson: return "application/json";
    case ReportFormat::kHtml: return "text/html; charset=utf-8";
    case ReportFormat::kMarkdown: return "text/markdown; charset=utf-8";
    case ReportFormat::kCsv: return "text/csv; charset=utf-8";
    case ReportFormat::kJunit: return "application/xml; charset=utf-8";
  }
  return "";
}

FormatChoice choose_report_format(std::optional<std::string_view> format_param,
                                  std::optional<std::string_view> accept,
                                  const std::vector<ReportFormat>& supported) {
  FormatChoice out;
  if (format_param) {
    for (const auto f : supported)
      if (*format_param == report_format_name(f)) out.format = f;
    if (!out.format) {
      out.bad_format = true;
      out.detail = "must be " + names_of(supported);
    }
    return out;
  }
  const auto ranges = parse_accept(accept.value_or(""));
  if (ranges.empty()) {
    out.format = supported.front();
    return out;
  }
  double best_q = 0;
  int best_specificity = -1;
  for (const auto f : supported) {
    const std::string_view type = media_type(f);
    if (type.empty()) continue;
    const auto slash = type.find('/');
    const auto main = type.substr(0, slash), sub = type.substr(slash + 1);
    // The most specific range that matches decides this format's q.
    int specificity = -1;
    double q = 0;
    for (const auto& r : ranges) {
      int s = -1;
      if (r.type == main && r.subtype == sub)
        s = 2;
      else if (r.type == main && r.subtype == "*")
        s = 1;
      else if (r.type == "*" && r.subtype == "*")
        s = 0;
      if (s > specificity) {
        specificity = s;
        q = r.q;
      }
    }
    if (specificity < 0 || q <= 0) continue;
    if (q > best_q || (q == best_q && specificity > best_specificity)) {
      best_q = q;
      best_specificity = specificity;
      out.format = f;
    }
  }
  if (!out.format) {
    out.not_acceptable = true;
    std::string types;
    for (const auto f : supported) {
      if (media_type(f).empty()) continue;
      types += (types.empty() ? "" : ", ") + std::string(media_type(f));
    }
    out.detail = "use Accept: " + types + " (or ?format=" + names_of(supported) + ")";
  }
  return out;
}

}  // namespace llmcap::api

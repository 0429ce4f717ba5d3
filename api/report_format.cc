#include "api/report_format.h"

#include <cmath>
#include <cstdio>

namespace llmcap::api {

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {
// Length of the well-formed UTF-8 sequence at the start of `text` (RFC 3629: no overlong forms,
// no surrogates, nothing past U+10FFFF); 0 when the first byte starts none.
std::size_t xml_utf8_length(std::string_view text) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(0);
  if (lead < 0x80) return 1;
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;  // allowed range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;   // overlong
    if (lead == 0xED) high = 0x9F;  // surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;   // overlong
    if (lead == 0xF4) high = 0x8F;  // past U+10FFFF
  } else {
    return 0;
  }
  if (text.size() < length || byte(1) < low || byte(1) > high) return 0;
  for (std::size_t i = 2; i < length; ++i)
    if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
  return length;
}
}  // namespace

std::string xml_escape(std::string_view text) {
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
  std::string clean;
  clean.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    const std::size_t length = xml_utf8_length(text.substr(i));
    if (length == 0) {
      clean += kReplacement;
      ++i;
    } else if (c == '\t' || c == '\n' || c == '\r') {
      clean += c == '\t' ? "&#9;" : c == '\n' ? "&#10;" : "&#13;";
      ++i;
    } else if ((length == 1 && static_cast<unsigned char>(c) < 0x20) ||
               (length == 3 && text.substr(i, 2) == "\xEF\xBF" &&
                static_cast<unsigned char>(text[i + 2]) >= 0xBE)) {
      // C0 controls, U+FFFE and U+FFFF are not XML 1.0 characters.
      clean += kReplacement;
      i += length;
    } else {
      // Markup characters are ASCII: escaped below, one sequence at a time.
      clean += length == 1 ? html_escape(text.substr(i, 1)) : std::string(text.substr(i, length));
      i += length;
    }
  }
  return clean;
}

std::string format_fixed(double value, int decimals) {
  if (!std::isfinite(value)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  std::string s = buf;
  if (s == "-0" || s.find_first_not_of("-0.") == std::string::npos) {
    if (s.front() == '-') s.erase(0, 1);  // no "-0.00"
  }
  return s;
}

namespace {
std::string trim_zeros(std::string s) {
  if (s.find('.') == std::string::npos) return s;
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

std::string three_significant(double v) {
  const double a = std::fabs(v);
  int decimals = 0;
  if (a < 1e-12) return "0";
  if (a < 10)
    decimals = 2;
  else if (a < 100)
    decimals = 1;
  if (a < 1) decimals = std::min(6, 2 - static_cast<int>(std::floor(std::log10(a))));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return trim_zeros(buf);
}
}  // namespace

std::string format_compact(double value) {
  if (!std::isfinite(value)) return "-";
  const double a = std::fabs(value);
  if (a >= 1e6) return three_significant(value / 1e6) + "M";
  if (a >= 1e4) return three_significant(value / 1e3) + "k";
  if (a >= 1000) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f", value);
    return buf;
  }
  return three_significant(value);
}

const nlohmann::json& json_member(const nlohmann::json& object, std::string_view key) {
  static const nlohmann::json kNull = nullptr;
  if (!object.is_object()) return kNull;
  const auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

std::optional<double> json_number(const nlohmann::json& object, std::string_view key) {
  const auto& v = json_member(object, key);
  if (!v.is_number()) return std::nullopt;
  const double d = v.get<double>();
  if (!std::isfinite(d)) return std::nullopt;
  return d;
}

std::string json_string(const nlohmann::json& object, std::string_view key,
                        std::string_view fallback) {
  const auto& v = json_member(object, key);
  return v.is_string() ? v.get<std::string>() : std::string(fallback);
}

std::string markdown_cell(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n' || c == '\r')
      out += ' ';
    else
      out += c;
  }
  return out;
}

std::string markdown_row(const std::vector<std::string>& cells) {
  std::string out = "|";
  for (const auto& c : cells) {
    out += ' ';
    out += markdown_cell(c);  // appends, not "a" + b + "c": GCC 12 -Wrestrict false positive
    out += " |";
  }
  return out + "\n";
}

std::string markdown_header(const std::vector<std::string>& cells, std::string_view align) {
  std::string out = markdown_row(cells) + "|";
  for (std::size_t i = 0; i < cells.size(); ++i)
    out += i < align.size() && align[i] == 'r' ? "---:|" : "---|";
  return out + "\n";
}

std::string opt_fixed(const std::optional<double>& value, int decimals) {
  return value ? format_fixed(*value, decimals) : "-";
}

std::string percent(const std::optional<double>& fraction) {
  return fraction ? format_fixed(*fraction * 100, 2) + "%" : "-";
}

const nlohmann::json& targets_of(const nlohmann::json& results) {
  static const nlohmann::json kEmpty = nlohmann::json::array();
  const auto& t = json_member(results, "targets");
  return t.is_array() ? t : kEmpty;
}

}  // namespace llmcap::api

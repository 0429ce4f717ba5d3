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

}  // namespace llmcap::api

#include "agent/prometheus_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_map>

namespace llmcap::agent {
namespace {

bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}
bool is_name_char(char c) { return is_name_start(c) || (c >= '0' && c <= '9'); }
bool is_label_start(char c) { return is_name_start(c) && c != ':'; }
bool is_label_char(char c) { return is_name_char(c) && c != ':'; }
bool is_blank(char c) { return c == ' ' || c == '\t'; }

void skip_blanks(std::string_view s, std::size_t& i) {
  while (i < s.size() && is_blank(s[i])) ++i;
}

std::string_view read_token(std::string_view s, std::size_t& i) {
  skip_blanks(s, i);
  const std::size_t start = i;
  while (i < s.size() && !is_blank(s[i])) ++i;
  return s.substr(start, i - start);
}

bool valid_metric_name(std::string_view n) {
  if (n.empty() || !is_name_start(n[0])) return false;
  return std::all_of(n.begin(), n.end(), is_name_char);
}

// Go's strconv.ParseFloat, as the Prometheus text parser uses: decimal and exponent forms,
// NaN, Inf/+Inf/-Inf (any case), optional leading sign.
std::optional<double> parse_value(std::string_view t) {
  if (t.empty()) return std::nullopt;
  bool negative = false;
  if (t[0] == '+' || t[0] == '-') {
    negative = t[0] == '-';
    t.remove_prefix(1);
    if (t.empty() || t[0] == '+' || t[0] == '-') return std::nullopt;
  }
  double v = 0.0;
  const auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() && ec != std::errc::result_out_of_range) return std::nullopt;
  if (ptr != t.data() + t.size()) return std::nullopt;
  if (ec == std::errc::result_out_of_range && std::abs(v) < 1.0) v = 0.0;  // underflow
  return negative ? -v : v;
}

std::optional<std::int64_t> parse_timestamp(std::string_view t) {
  std::int64_t v = 0;
  const char* begin = t.data();
  if (!t.empty() && t[0] == '+') ++begin;
  const auto [ptr, ec] = std::from_chars(begin, t.data() + t.size(), v);
  if (ec != std::errc() || ptr != t.data() + t.size() || begin == t.data() + t.size()) {
    return std::nullopt;
  }
  return v;
}

std::string unescape_help(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      const char n = s[i + 1];
      if (n == 'n') {
        out.push_back('\n');
        ++i;
        continue;
      }
      if (n == '\\') {
        out.push_back('\\');
        ++i;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

std::optional<MetricType> parse_type(std::string_view t) {
  if (t == "counter") return MetricType::kCounter;
  if (t == "gauge") return MetricType::kGauge;
  if (t == "histogram") return MetricType::kHistogram;
  if (t == "summary") return MetricType::kSummary;
  if (t == "untyped" || t == "unknown") return MetricType::kUntyped;
  return std::nullopt;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() > suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

class Parser {
 public:
  ParsedExposition run(std::string_view text) {
    std::size_t line_no = 0;
    std::size_t pos = 0;
    while (pos <= text.size()) {
      std::size_t end = text.find('\n', pos);
      if (end == std::string_view::npos) end = text.size();
      std::string_view line = text.substr(pos, end - pos);
      ++line_no;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      parse_line(line, line_no);
      if (end == text.size()) break;
      pos = end + 1;
    }
    return std::move(out_);
  }

 private:
  void error(std::size_t line, std::string message) {
    ++out_.error_count;
    if (out_.errors.size() < ParsedExposition::kMaxErrors) {
      out_.errors.push_back({line, std::move(message)});
    }
  }

  MetricFamily& family(const std::string& name) {
    const auto it = index_.find(name);
    if (it != index_.end()) return out_.families[it->second];
    index_.emplace(name, out_.families.size());
    out_.families.push_back(MetricFamily{name, MetricType::kUntyped, "", {}});
    return out_.families.back();
  }

  // Which family a sample name belongs to: the declared family for histogram/summary
  // suffixes (and OpenMetrics-style counters declared without _total), else its own.
  MetricFamily& family_for_sample(const std::string& sample_name) {
    if (const auto it = index_.find(sample_name); it != index_.end()) {
      return out_.families[it->second];
    }
    struct Suffix {
      std::string_view text;
      bool histogram, summary, counter;
    };
    static constexpr Suffix kSuffixes[] = {{"_bucket", true, false, false},
                                           {"_sum", true, true, false},
                                           {"_count", true, true, false},
                                           {"_total", false, false, true}};
    for (const Suffix& s : kSuffixes) {
      if (!ends_with(sample_name, s.text)) continue;
      const std::string base = sample_name.substr(0, sample_name.size() - s.text.size());
      const auto it = index_.find(base);
      if (it == index_.end()) continue;
      const MetricType t = out_.families[it->second].type;
      if ((s.histogram && t == MetricType::kHistogram) ||
          (s.summary && t == MetricType::kSummary) || (s.counter && t == MetricType::kCounter)) {
        return out_.families[it->second];
      }
    }
    return family(sample_name);
  }

  void parse_line(std::string_view line, std::size_t line_no) {
    std::size_t i = 0;
    skip_blanks(line, i);
    if (i == line.size()) return;
    if (line[i] == '#') {
      parse_comment(line.substr(i + 1), line_no);
      return;
    }
    parse_sample(line.substr(i), line_no);
  }

  void parse_comment(std::string_view rest, std::size_t line_no) {
    std::size_t i = 0;
    const std::string_view keyword = read_token(rest, i);
    if (keyword != "HELP" && keyword != "TYPE") return;  // plain comment
    const std::string name(read_token(rest, i));
    if (!valid_metric_name(name)) {
      error(line_no, "# " + std::string(keyword) + ": invalid metric name '" + name + "'");
      return;
    }
    if (i < rest.size()) ++i;  // the one blank after the name
    if (keyword == "HELP") {
      MetricFamily& f = family(name);
      if (!f.help.empty()) {
        error(line_no, "# HELP: second HELP for '" + name + "' ignored");
        return;
      }
      f.help = unescape_help(rest.substr(std::min(i, rest.size())));
      return;
    }
    std::size_t j = i;
    const std::string_view type_text = read_token(rest, j);
    const auto type = parse_type(type_text);
    if (!type) {
      error(line_no, "# TYPE: unknown type '" + std::string(type_text) + "' for '" + name + "'");
      return;
    }
    MetricFamily& f = family(name);
    if (typed_.count(name) != 0) {
      error(line_no, "# TYPE: second TYPE for '" + name + "' ignored");
      return;
    }
    if (!f.samples.empty()) {
      error(line_no, "# TYPE: for '" + name + "' after its samples, ignored");
      return;
    }
    typed_.emplace(name, true);
    f.type = *type;
  }

  void parse_sample(std::string_view line, std::size_t line_no) {
    std::size_t i = 0;
    while (i < line.size() && is_name_char(line[i])) ++i;
    const std::string name(line.substr(0, i));
    if (!valid_metric_name(name)) {
      error(line_no, "sample: invalid metric name at '" + std::string(line.substr(0, 40)) + "'");
      return;
    }
    PromSample sample;
    sample.name = name;
    skip_blanks(line, i);
    if (i < line.size() && line[i] == '{') {
      ++i;
      if (!parse_labels(line, i, sample.labels, line_no, name)) return;
    }
    const std::string_view value_text = read_token(line, i);
    if (value_text.empty()) {
      error(line_no, "sample '" + name + "': missing value");
      return;
    }
    const auto value = parse_value(value_text);
    if (!value) {
      error(line_no,
            "sample '" + name + "': value '" + std::string(value_text) + "' is not a number");
      return;
    }
    sample.value = *value;
    const std::string_view ts_text = read_token(line, i);
    if (!ts_text.empty()) {
      sample.timestamp_ms = parse_timestamp(ts_text);
      if (!sample.timestamp_ms) {
        error(line_no,
              "sample '" + name + "': timestamp '" + std::string(ts_text) + "' is not an integer");
        return;
      }
    }
    skip_blanks(line, i);
    if (i != line.size()) {
      error(line_no, "sample '" + name + "': unexpected text after the timestamp");
      return;
    }
    family_for_sample(name).samples.push_back(std::move(sample));
  }

  // After '{': reads label pairs up to and including '}'.
  bool parse_labels(std::string_view line, std::size_t& i, std::vector<PromLabel>& labels,
                    std::size_t line_no, const std::string& name) {
    const std::string where = "sample '" + name + "': ";
    while (true) {
      skip_blanks(line, i);
      if (i >= line.size()) {
        error(line_no, where + "unterminated label set");
        return false;
      }
      if (line[i] == '}') {
        ++i;
        return true;
      }
      if (!is_label_start(line[i])) {
        error(line_no, where + "invalid label name at column " + std::to_string(i + 1));
        return false;
      }
      const std::size_t start = i;
      while (i < line.size() && is_label_char(line[i])) ++i;
      std::string label_name(line.substr(start, i - start));
      skip_blanks(line, i);
      if (i >= line.size() || line[i] != '=') {
        error(line_no, where + "expected '=' after label '" + label_name + "'");
        return false;
      }
      ++i;
      skip_blanks(line, i);
      if (i >= line.size() || line[i] != '"') {
        error(line_no, where + "label '" + label_name + "' value must be quoted");
        return false;
      }
      ++i;
      std::string value;
      bool closed = false;
      while (i < line.size()) {
        const char c = line[i++];
        if (c == '"') {
          closed = true;
          break;
        }
        if (c == '\\') {
          if (i >= line.size()) break;
          const char e = line[i++];
          if (e == 'n') {
            value.push_back('\n');
          } else if (e == '\\' || e == '"') {
            value.push_back(e);
          } else {
            error(line_no, where + "label '" + label_name + "' has invalid escape '\\" +
                               std::string(1, e) + "'");
            return false;
          }
          continue;
        }
        value.push_back(c);
      }
      if (!closed) {
        error(line_no, where + "label '" + label_name + "' value is not terminated");
        return false;
      }
      for (const auto& [existing, unused] : labels) {
        if (existing == label_name) {
          error(line_no, where + "duplicate label '" + label_name + "'");
          return false;
        }
      }
      labels.emplace_back(std::move(label_name), std::move(value));
      skip_blanks(line, i);
      if (i < line.size() && line[i] == ',') {
        ++i;
      } else if (i < line.size() && line[i] != '}') {
        error(line_no, where + "expected ',' or '}' in label set");
        return false;
      }
    }
  }

  ParsedExposition out_;
  std::unordered_map<std::string, std::size_t> index_;
  std::unordered_map<std::string, bool> typed_;
};

void escape_label_value(std::string_view v, std::string& out) {
  for (const char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
}

}  // namespace

std::string_view metric_type_name(MetricType type) {
  switch (type) {
    case MetricType::kCounter: return "counter";
    case MetricType::kGauge: return "gauge";
    case MetricType::kHistogram: return "histogram";
    case MetricType::kSummary: return "summary";
    case MetricType::kUntyped: break;
  }
  return "untyped";
}

const std::string* PromSample::label(std::string_view label_name) const {
  for (const auto& [k, v] : labels) {
    if (k == label_name) return &v;
  }
  return nullptr;
}

const MetricFamily* ParsedExposition::find(std::string_view family_name) const {
  for (const MetricFamily& f : families) {
    if (f.name == family_name) return &f;
  }
  return nullptr;
}

ParsedExposition parse_prometheus_text(std::string_view text) { return Parser().run(text); }

std::string canonical_labels(const std::vector<PromLabel>& labels,
                             const std::vector<std::string_view>& exclude) {
  std::vector<const PromLabel*> sorted;
  sorted.reserve(labels.size());
  for (const PromLabel& l : labels) {
    if (std::find(exclude.begin(), exclude.end(), l.first) == exclude.end()) sorted.push_back(&l);
  }
  std::sort(sorted.begin(), sorted.end(),
            [](const PromLabel* a, const PromLabel* b) { return a->first < b->first; });
  std::string out;
  for (const PromLabel* l : sorted) {
    if (!out.empty()) out.push_back(',');
    out += l->first;
    out += "=\"";
    escape_label_value(l->second, out);
    out.push_back('"');
  }
  return out;
}

std::optional<HistogramData> aggregate_histogram(const MetricFamily& family) {
  const std::string bucket_name = family.name + "_bucket";
  const std::string sum_name = family.name + "_sum";
  const std::string count_name = family.name + "_count";
  std::map<double, double> by_bound;  // le -> cumulative count summed over label sets
  HistogramData h;
  for (const PromSample& s : family.samples) {
    if (std::isnan(s.value)) continue;
    if (s.name == bucket_name) {
      const std::string* le = s.label("le");
      if (le == nullptr) continue;
      const auto bound = parse_value(*le);
      if (!bound || std::isnan(*bound)) continue;
      by_bound[*bound] += s.value;
    } else if (s.name == sum_name) {
      h.sum += s.value;
    } else if (s.name == count_name) {
      h.count += s.value;
    }
  }
  if (by_bound.empty()) return std::nullopt;
  for (const auto& [bound, count] : by_bound) h.buckets.push_back({bound, count});
  return h;
}

HistogramData histogram_delta(const HistogramData& earlier, const HistogramData& later) {
  if (later.count < earlier.count) return later;
  HistogramData d;
  d.sum = later.sum - earlier.sum;
  d.count = later.count - earlier.count;
  for (const HistogramBucket& b : later.buckets) {
    const auto it =
        std::find_if(earlier.buckets.begin(), earlier.buckets.end(),
                     [&](const HistogramBucket& e) { return e.upper_bound == b.upper_bound; });
    if (it == earlier.buckets.end() || b.cumulative_count < it->cumulative_count) return later;
    d.buckets.push_back({b.upper_bound, b.cumulative_count - it->cumulative_count});
  }
  return d;
}

std::optional<double> histogram_quantile(double q, const HistogramData& histogram) {
  if (!(q >= 0.0 && q <= 1.0)) return std::nullopt;
  std::vector<HistogramBucket> b = histogram.buckets;
  std::sort(b.begin(), b.end(), [](const HistogramBucket& x, const HistogramBucket& y) {
    return x.upper_bound < y.upper_bound;
  });
  if (b.size() < 2 || !std::isinf(b.back().upper_bound) || b.back().upper_bound < 0) {
    return std::nullopt;
  }
  // Cumulative counts must not decrease (scrapes are not atomic); Prometheus forces this too.
  for (std::size_t i = 1; i < b.size(); ++i) {
    b[i].cumulative_count = std::max(b[i].cumulative_count, b[i - 1].cumulative_count);
  }
  const double observations = b.back().cumulative_count;
  if (!(observations > 0.0)) return std::nullopt;
  double rank = q * observations;
  std::size_t idx = 0;
  while (idx < b.size() && b[idx].cumulative_count < rank) ++idx;
  if (idx >= b.size() - 1) return b[b.size() - 2].upper_bound;
  if (idx == 0 && b[0].upper_bound <= 0) return b[0].upper_bound;
  double bucket_start = 0.0;
  double count = b[idx].cumulative_count;
  if (idx > 0) {
    bucket_start = b[idx - 1].upper_bound;
    count -= b[idx - 1].cumulative_count;
    rank -= b[idx - 1].cumulative_count;
  }
  const double bucket_end = b[idx].upper_bound;
  if (!(count > 0.0)) return bucket_end;
  return bucket_start + (bucket_end - bucket_start) * (rank / count);
}

}  // namespace llmcap::agent

// Prometheus text exposition format 0.0.4 (what vLLM, SGLang, TGI, llama.cpp and DCGM exporter
// serve at /metrics): a lenient parser into metric families, plus the histogram helpers the
// telemetry summary needs (bucket extraction, delta between two scrapes, histogram_quantile).
//
// Robustness: the input is whatever a remote server sent, so parse_prometheus_text() never
// throws on content; a line it cannot read is skipped and reported in ParsedExposition::errors
// (1-based line number and reason) while the rest of the document is still used. Accepted:
// `# HELP name text` (escapes \\ and \n), `# TYPE name counter|gauge|histogram|summary|untyped`,
// other comments (ignored), samples `name{label="value",...} value [timestamp_ms]` with label
// value escapes \\ \" \n, optional trailing comma in label sets, NaN / +Inf / -Inf / Inf values,
// CRLF line endings, blank lines. Histogram/summary samples (_bucket, _sum, _count) are grouped
// under their declared family; a sample with no TYPE forms its own untyped family.
//
// All functions are pure and thread-safe; the types are plain values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace llmcap::agent {

enum class MetricType { kUntyped, kCounter, kGauge, kHistogram, kSummary };

std::string_view metric_type_name(MetricType type);

// One label pair, unescaped.
using PromLabel = std::pair<std::string, std::string>;

struct PromSample {
  std::string name;               // full sample name, e.g. "x_bucket", "vllm:num_requests_running"
  std::vector<PromLabel> labels;  // in the order they appeared
  double value = 0.0;
  std::optional<std::int64_t> timestamp_ms;

  // Value of label `label_name`, or nullptr.
  const std::string* label(std::string_view label_name) const;
};

struct MetricFamily {
  std::string name;  // family name (without _bucket/_sum/_count for histograms/summaries)
  MetricType type = MetricType::kUntyped;
  std::string help;  // unescaped
  std::vector<PromSample> samples;
};

struct PromParseError {
  std::size_t line = 0;  // 1-based
  std::string message;
};

struct ParsedExposition {
  std::vector<MetricFamily> families;  // in order of first appearance
  std::vector<PromParseError> errors;  // at most kMaxErrors kept ...
  std::size_t error_count = 0;         // ... of this many
  static constexpr std::size_t kMaxErrors = 32;

  const MetricFamily* find(std::string_view family_name) const;
};

// Parses a whole exposition document. Never throws on content (see the file comment).
ParsedExposition parse_prometheus_text(std::string_view text);

// Canonical label text used in storage ('k="v",...', sorted by name, values escaped as in the
// exposition format), without the labels named in `exclude` (e.g. "le").
std::string canonical_labels(const std::vector<PromLabel>& labels,
                             const std::vector<std::string_view>& exclude = {});

// ---- histograms -----------------------------------------------------------------------------

struct HistogramBucket {
  double upper_bound = 0.0;  // le
  double cumulative_count = 0.0;
};

// Buckets of one histogram (sorted by upper bound, +Inf last when present), with _sum/_count.
struct HistogramData {
  std::vector<HistogramBucket> buckets;
  double sum = 0.0;
  double count = 0.0;
};

// The histogram family `family`, summed over all its label sets except `le` (like PromQL's
// `sum by (le)`): one histogram for e.g. all model_name values. nullopt when the family has no
// _bucket samples with a readable `le`.
std::optional<HistogramData> aggregate_histogram(const MetricFamily& family);

// later - earlier, bucket by bucket (matched by upper bound). A counter reset (later count
// below earlier count, or a bucket missing in `earlier`) yields `later` unchanged, as
// Prometheus' rate() treats resets.
HistogramData histogram_delta(const HistogramData& earlier, const HistogramData& later);

// PromQL histogram_quantile(q, ...) on cumulative buckets: linear interpolation inside the
// bucket holding rank q*count, lower bound 0 for the first bucket; a rank in the +Inf bucket
// returns the largest finite upper bound. nullopt when q is outside [0, 1], there are fewer
// than two buckets, no +Inf bucket, or no observations.
std::optional<double> histogram_quantile(double q, const HistogramData& histogram);

}  // namespace llmcap::agent

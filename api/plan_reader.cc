#include "api/plan_reader.h"

#include "analysis/capacity_search.h"
#include "analysis/fnv1a.h"
#include "analysis/sample_window.h"
#include "analysis/sla.h"
#include "analysis/summary.h"
#include "net/http_message.h"

#include <boost/url/parse.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <set>

namespace llmcap::api {

using nlohmann::json;

namespace {

// An integer in the JSON Schema sense: any number with no fractional part (2 and 2.0).
bool whole_number(const json& v) {
  if (v.is_number_integer()) return true;
  if (!v.is_number_float()) return false;
  const double d = v.get<double>();
  return std::isfinite(d) && std::floor(d) == d;
}

std::string escape_pointer(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out.push_back(c);
  }
  return out;
}

// "Did you mean" (docs/plans.md, "Validation and warnings"). Names are compared in lower case
// with '-' and ' ' read as '_'.
std::string folded(std::string_view s) {
  std::string out;
  for (char c : s) {
    const char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out.push_back(l == '-' || l == ' ' ? '_' : l);
  }
  return out;
}

// Optimal string alignment distance: insertions, deletions, substitutions and transpositions of
// adjacent characters each cost 1 ("duraton_s" → "duration_s" is 1, "lveels" → "levels" is 1).
std::size_t edit_distance(std::string_view a, std::string_view b) {
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[n][m];
}

// Names users give for a plan key (other tools' spellings, the unit left off): each maps to the
// keys it may mean, tried in order among the keys known where it was written ("rate" is
// rates_rps in a rate_sweep and rate_rps in a soak).
const std::vector<std::pair<std::string_view, std::vector<std::string_view>>>& key_aliases() {
  static const std::vector<std::pair<std::string_view, std::vector<std::string_view>>> aliases = {
      {"ttft", {"ttft_ms"}},
      {"time_to_first_token", {"ttft_ms"}},
      {"tpot", {"tpot_ms"}},
      {"time_per_output_token", {"tpot_ms"}},
      {"itl", {"itl_ms"}},
      {"inter_token_latency", {"itl_ms"}},
      {"e2e", {"e2e_ms"}},
      {"latency", {"e2e_ms"}},
      {"e2e_latency", {"e2e_ms"}},
      {"ttft_service", {"ttft_service_ms"}},
      {"error_rate", {"max_error_rate"}},
      {"max_errors", {"max_error_rate"}},
      {"errors", {"max_error_rate"}},
      {"min_samples", {"min_requests"}},
      {"concurrency", {"levels"}},
      {"concurrencies", {"levels"}},
      {"concurrency_levels", {"levels"}},
      {"users", {"levels"}},
      {"rate", {"rates_rps", "rate_rps", "base_rps"}},
      {"rates", {"rates_rps", "rate_rps"}},
      {"rps", {"rates_rps", "rate_rps", "base_rps", "requests_per_minute"}},
      {"qps", {"rates_rps", "rate_rps", "base_rps", "requests_per_minute"}},
      {"request_rate", {"rates_rps", "rate_rps", "base_rps"}},
      {"requests_per_second", {"rates_rps", "rate_rps", "requests_per_minute"}},
      {"rpm", {"requests_per_minute"}},
      {"num_prompts", {"requests"}},
      {"request_count", {"requests"}},
      {"duration", {"duration_s"}},
      {"warmup", {"warmup_s"}},
      {"type", {"kind"}},
      {"min_rps", {"low_rps"}},
      {"max_rps", {"high_rps"}},
      {"steps", {"max_steps"}},
      {"url", {"base_url"}},
      {"endpoint", {"base_url"}},
      {"api_key", {"secrets"}},
      {"token", {"secrets"}},
      {"model_name", {"model"}},
      {"prompt_tokens", {"input_tokens"}},
      {"input_len", {"input_tokens"}},
      {"input_length", {"input_tokens"}},
      {"prompt_len", {"input_tokens"}},
      {"isl", {"input_tokens"}},
      {"max_tokens", {"output_tokens"}},
      {"completion_tokens", {"output_tokens"}},
      {"output_len", {"output_tokens"}},
      {"output_length", {"output_tokens"}},
      {"osl", {"output_tokens"}},
      {"price", {"price_per_hour"}},
      {"cost_per_hour", {"price_per_hour"}},
      {"tp", {"tensor_parallel"}},
      {"tensor_parallel_size", {"tensor_parallel"}},
  };
  return aliases;
}

// The known name nearest to one typed wrong, or nullopt when none is near enough to suggest:
// the same name in another case or with '-' for '_'; a known alias of a key (only with
// `aliases`); a known name that extends it at a '_' ("warmup" → "warmup_s"), or that it extends
// ("rtx4090-48g-box" → "rtx4090-48g"); else the nearest by edit distance, within 1 for names up
// to 4 characters, 2 up to 8, 3 beyond.
std::optional<std::string> nearest_known(std::string_view typed,
                                         const std::vector<std::string>& known, bool aliases) {
  const std::string t = folded(typed);
  for (const auto& k : known)
    if (folded(k) == t) return k;
  if (aliases) {
    for (const auto& [alias, keys] : key_aliases()) {
      if (alias != t) continue;
      for (const auto key : keys)
        if (std::find(known.begin(), known.end(), key) != known.end()) return std::string(key);
    }
  }
  // `a` is `b` up to a '_' ("warmup" of "warmup_s").
  const auto starts = [](const std::string& a, const std::string& b) {
    return !a.empty() && b.size() > a.size() && b.compare(0, a.size(), a) == 0 &&
           b[a.size()] == '_';
  };
  std::optional<std::string> best;
  for (const auto& k : known) {
    if (starts(t, folded(k)) && (!best || k.size() < best->size())) best = k;
  }
  if (best) return best;
  // A known name with something added ("a100-80g-pcie-box" → "a100-80g-pcie"): the longest.
  for (const auto& k : known) {
    if (starts(folded(k), t) && (!best || k.size() > best->size())) best = k;
  }
  if (best) return best;
  const std::size_t limit = t.size() <= 4 ? 1 : (t.size() <= 8 ? 2 : 3);
  // Ties go to the name closest in length ("llama-3.1-7b": llama-3.1-8b, not llama-3.1-70b).
  const auto length_gap = [&t](const std::string& k) {
    return k.size() > t.size() ? k.size() - t.size() : t.size() - k.size();
  };
  std::size_t best_distance = limit + 1;
  for (const auto& k : known) {
    const std::size_t d = edit_distance(t, folded(k));
    if (d < best_distance || (d == best_distance && best && length_gap(k) < length_gap(*best))) {
      best_distance = d;
      best = k;
    }
  }
  return best;
}

// The suffix an error message gets: " (did you mean X?)", or "" when nothing is near.
std::string did_you_mean(std::string_view typed, const std::vector<std::string>& known,
                         bool aliases) {
  const auto near = nearest_known(typed, known, aliases);
  return near ? " (did you mean " + *near + "?)" : "";
}

// Reads one JSON object at a path: typed getters record errors with paths, remember which
// keys were read, and finish() reports every key nobody read as unknown, with the nearest key
// known at this level (asked for with get() or has(), and not refused as not applicable).
class ObjectReader {
 public:
  ObjectReader(const json* value, std::string path, std::vector<FieldError>& errors)
      : value_(value), path_(std::move(path)), errors_(errors) {
    if (value_ != nullptr && !value_->is_object()) {
      error("", "must be an object");
      value_ = nullptr;
    }
  }
  bool ok() const { return value_ != nullptr; }
  std::string path(std::string_view key) const { return path_ + "/" + escape_pointer(key); }
  void error(std::string_view key, std::string message) {
    errors_.push_back({key.empty() ? path_ : path(key), std::move(message)});
  }

  const json* get(std::string_view key) {
    if (!value_) return nullptr;
    read_.insert(std::string(key));
    known_.insert(std::string(key));
    auto it = value_->find(key);
    return it == value_->end() ? nullptr : &*it;
  }
  bool has(std::string_view key) const {
    known_.insert(std::string(key));
    return value_ && value_->contains(key);
  }

  template <typename T>
  void number(std::string_view key, T& out, double lo, double hi, bool integer = false,
              bool required = false) {
    const json* v = get(key);
    if (!v) {
      if (required) error(key, "is required");
      return;
    }
    if (!v->is_number() || v->is_boolean()) {
      error(key, integer ? "must be an integer" : "must be a number");
      return;
    }
    const double d = v->get<double>();
    if (!std::isfinite(d)) {
      error(key, "must be a finite number");
      return;
    }
    if (integer && (!v->is_number_integer() && std::floor(d) != d)) {
      error(key, "must be an integer");
      return;
    }
    if (d < lo || d > hi) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "must be between %g and %g (got %g)", lo, hi, d);
      error(key, buf);
      return;
    }
    out = static_cast<T>(d);
  }

  void string(std::string_view key, std::string& out, bool required = false,
              std::size_t max_len = 2048) {
    const json* v = get(key);
    if (!v) {
      if (required) error(key, "is required");
      return;
    }
    if (!v->is_string()) {
      error(key, "must be a string");
      return;
    }
    const auto& s = v->get_ref<const std::string&>();
    if (s.size() > max_len) {
      error(key, "must be at most " + std::to_string(max_len) + " characters");
      return;
    }
    out = s;
  }

  // An absent key keeps `out` (its default); only a given value is checked against the list.
  void one_of(std::string_view key, std::string& out, const std::vector<std::string>& allowed) {
    if (!get(key)) return;
    std::string s = out;
    const auto before = errors_.size();
    string(key, s);
    if (errors_.size() != before) return;
    if (std::find(allowed.begin(), allowed.end(), s) == allowed.end()) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      error(key, "must be one of " + list + " (got '" + s + "')");
      return;
    }
    out = s;
  }

  void boolean(std::string_view key, bool& out) {
    const json* v = get(key);
    if (!v) return;
    if (!v->is_boolean()) {
      error(key, "must be true or false");
      return;
    }
    out = v->get<bool>();
  }

  // A key that exists in the format but not in this context (e.g. "levels" on a rate_sweep).
  void not_applicable(std::string_view key, const std::string& why) {
    inapplicable_.insert(std::string(key));
    if (!value_ || !value_->contains(key)) return;
    read_.insert(std::string(key));
    error(key, "does not apply " + why);
  }

  void finish() {
    if (!value_) return;
    std::vector<std::string> known;
    for (const auto& k : known_)
      if (inapplicable_.count(k) == 0 && !value_->contains(k)) known.push_back(k);
    for (const auto& [k, v] : value_->items()) {
      if (read_.count(k) == 0)
        errors_.push_back({path(k), "unknown key" + did_you_mean(k, known, true)});
    }
  }

 private:
  const json* value_;
  std::string path_;
  std::vector<FieldError>& errors_;
  std::set<std::string> read_;
  // Keys this level knows (for "did you mean"), and those refused here as not applicable.
  mutable std::set<std::string> known_;
  std::set<std::string> inapplicable_;
};

// RFC 9110 §5.6.2 token.
bool valid_header_name(std::string_view s) {
  if (s.empty() || s.size() > 256) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
  });
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Headers whose values are credentials (net::is_credential_header) are redacted in the
// normalised plan (like secrets); the daemon stores the same set as job secrets
// ("header:<name>"), so a redacted value is never sent as "***".
bool sensitive_header(std::string_view name) { return net::is_credential_header(name); }

bool valid_name(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
  });
}

// Token counts in lengths: 1 .. 2^20. 2^20 is also LengthDistribution's default clamp `max`, so
// a normalised plan (which writes the clamp out) parses again.
constexpr double kMaxTokens = 1 << 20;

// A length distribution: N, {"fixed": N, "min"?, "max"?} or {"distribution": kind, ...} with
// only the keys that kind uses (a key of another kind is an error, not silently ignored).
void read_lengths(const json* v, const std::string& path, analysis::LengthDistribution& out,
                  std::vector<FieldError>& errors, const PlanLimits& limits) {
  if (!v) return;
  if (v->is_number()) {
    if (!whole_number(*v)) {
      errors.push_back({path, "must be a whole number of tokens or a distribution object"});
      return;
    }
    const double d = v->get<double>();
    if (d < 1 || d > kMaxTokens) {
      errors.push_back({path, "must be between 1 and 1048576 tokens"});
      return;
    }
    out = analysis::LengthDistribution::fixed(static_cast<std::int32_t>(d));
    return;
  }
  if (!v->is_object()) {
    errors.push_back({path, "must be a token count or an object such as {\"fixed\": 1024}"});
    return;
  }
  ObjectReader r(v, path, errors);
  const auto before = errors.size();
  analysis::LengthDistribution d;
  if (r.has("fixed")) {
    std::int32_t n = 0;
    r.number("fixed", n, 1, kMaxTokens, true);
    d = analysis::LengthDistribution::fixed(n);
    r.number("min", d.min_tokens, 1, kMaxTokens, true);
    r.number("max", d.max_tokens, 1, kMaxTokens, true);
    for (const char* k : {"distribution", "mean", "stddev", "low", "high", "values"})
      r.not_applicable(k, "together with \"fixed\"");
    if (errors.size() == before && d.min_tokens > d.max_tokens)
      r.error("min", "must not exceed max");
    r.finish();
    if (errors.size() == before) out = d;
    return;
  }
  if (!r.has("distribution")) {
    r.error("",
            "needs \"fixed\": N or \"distribution\": fixed | uniform | normal | lognormal | "
            "empirical");
    r.finish();
    return;
  }
  std::string kind;
  r.one_of("distribution", kind, {"fixed", "uniform", "normal", "lognormal", "empirical"});
  if (errors.size() != before) {
    for (const char* k : {"mean", "stddev", "low", "high", "values", "min", "max"}) r.get(k);
    r.finish();
    return;
  }
  const std::string why = "to a " + kind + " distribution";
  using Kind = analysis::LengthDistribution::Kind;
  if (kind == "fixed") {
    d.kind = Kind::kFixed;
    r.number("mean", d.mean, 1, kMaxTokens, true, true);
    for (const char* k : {"stddev", "low", "high", "values"}) r.not_applicable(k, why);
  } else if (kind == "uniform") {
    d.kind = Kind::kUniform;
    r.number("low", d.low, 1, kMaxTokens, true, true);
    r.number("high", d.high, 1, kMaxTokens, true, true);
    if (errors.size() == before && d.low > d.high) r.error("low", "must not exceed high");
    for (const char* k : {"mean", "stddev", "values"}) r.not_applicable(k, why);
  } else if (kind == "normal" || kind == "lognormal") {
    d.kind = kind == "normal" ? Kind::kNormal : Kind::kLognormal;
    r.number("mean", d.mean, 1, kMaxTokens, false, true);
    r.number("stddev", d.stddev, 0, kMaxTokens);
    for (const char* k : {"low", "high", "values"}) r.not_applicable(k, why);
  } else {
    d.kind = Kind::kEmpirical;
    const json* vals = r.get("values");
    if (!vals) {
      r.error("values", "is required for an empirical distribution");
    } else if (!vals->is_array() || vals->empty()) {
      r.error("values", "must be a non-empty array of token counts");
    } else if (vals->size() > static_cast<std::size_t>(limits.max_list_items) * 64) {
      r.error("values", "has more than " + std::to_string(limits.max_list_items * 64) + " items");
    } else {
      for (std::size_t i = 0; i < vals->size(); ++i) {
        const auto& x = (*vals)[i];
        if (!whole_number(x) || x.get<double>() < 1 || x.get<double>() > kMaxTokens) {
          errors.push_back({r.path("values") + "/" + std::to_string(i),
                            "must be an integer between 1 and 1048576"});
        } else {
          d.values.push_back(static_cast<std::int32_t>(x.get<double>()));
        }
      }
    }
    for (const char* k : {"mean", "stddev", "low", "high"}) r.not_applicable(k, why);
  }
  r.number("min", d.min_tokens, 1, kMaxTokens, true);
  r.number("max", d.max_tokens, 1, kMaxTokens, true);
  if (errors.size() == before && d.min_tokens > d.max_tokens) r.error("min", "must not exceed max");
  r.finish();
  if (errors.size() == before) out = d;
}

void read_sla(const json* v, const std::string& path, PlanSla& sla,
              std::vector<FieldError>& errors);

// workload.mix (docs/plans.md, "Workload mixes"): 1 to 16 named classes whose weights sum to 1.
void read_mix(const json& v, const std::string& path, std::vector<PlanMixClass>& out,
              std::vector<FieldError>& errors, const PlanLimits& limits) {
  if (!v.is_array() || v.empty() || v.size() > 16) {
    errors.push_back({path, "must be an array of 1 to 16 classes"});
    return;
  }
  const auto before = errors.size();
  std::vector<PlanMixClass> read;
  std::set<std::string> names;
  double sum = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    ObjectReader c(&v[i], path + "/" + std::to_string(i), errors);
    if (!c.ok()) continue;
    PlanMixClass mc;
    const auto at = errors.size();
    c.string("name", mc.name, true, 64);
    if (c.has("name") && errors.size() == at) {
      if (!valid_name(mc.name))
        c.error("name", "must be 1-64 characters of a-z, 0-9, '_', '.', '-'");
      else if (!names.insert(mc.name).second)
        c.error("name", "duplicate class name '" + mc.name + "'");
    }
    const auto wat = errors.size();
    c.number("weight", mc.weight, 0, 1, false, true);
    if (c.has("weight") && errors.size() == wat && !(mc.weight > 0))
      c.error("weight", "must be > 0 (leave the class out instead)");
    sum += mc.weight;
    if (!c.has("input_tokens")) c.error("input_tokens", "is required for each class");
    if (!c.has("output_tokens")) c.error("output_tokens", "is required for each class");
    read_lengths(c.get("input_tokens"), c.path("input_tokens"), mc.input_tokens, errors, limits);
    read_lengths(c.get("output_tokens"), c.path("output_tokens"), mc.output_tokens, errors, limits);
    c.number("prefix_tokens", mc.prefix_tokens, 1, 1'000'000, true);
    if (const json* sla = c.get("sla")) {
      // The class's own bounds (and error-rate limit); the rest of the SLA is the plan's.
      PlanSla own;
      read_sla(sla, c.path("sla"), own, errors);
      if (sla->is_object()) {
        for (const char* k :
             {"ttft_from", "rate_tolerance", "max_schedule_lag_p99_ms", "min_requests", "window_s"})
          if (sla->contains(k))
            errors.push_back({c.path("sla") + "/" + k,
                              "applies to the plan's sla only (a class gives latency bounds and "
                              "max_error_rate)"});
        bool any_bound = false;
        for (const char* k : {"ttft_ms", "ttft_service_ms", "tpot_ms", "itl_ms", "e2e_ms"})
          any_bound = any_bound || sla->contains(k);
        if (any_bound) mc.sla_bounds = own.bounds;
        if (sla->contains("max_error_rate")) mc.max_error_rate = own.max_error_rate;
      }
    }
    c.finish();
    read.push_back(std::move(mc));
  }
  if (errors.size() == before && std::abs(sum - 1.0) > 1e-6) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "the classes' weights must sum to 1 (they sum to %g)", sum);
    errors.push_back({path, buf});
  }
  if (errors.size() == before) out = std::move(read);
}

void read_workload(const json* v, const std::string& path, PlanWorkload& w,
                   std::vector<FieldError>& errors, const PlanLimits& limits) {
  ObjectReader r(v, path, errors);
  if (!r.ok()) return;
  read_lengths(r.get("input_tokens"), r.path("input_tokens"), w.input_tokens, errors, limits);
  read_lengths(r.get("output_tokens"), r.path("output_tokens"), w.output_tokens, errors, limits);
  if (const json* ds = r.get("dataset")) {
    ObjectReader d(ds, r.path("dataset"), errors);
    d.string("path", w.dataset_path, true, 4096);
    d.one_of("mode", w.dataset_mode, {"sample", "replay"});
    d.finish();
  }
  if (const json* tr = r.get("trace")) {
    ObjectReader t(tr, r.path("trace"), errors);
    if (t.ok()) {
      PlanTrace trace;
      const auto before = errors.size();
      t.one_of("format", trace.format, {"mooncake", "burstgpt"});
      if (!t.has("format")) t.error("format", "is required (mooncake or burstgpt)");
      t.string("path", trace.path, true, 4096);
      if (trace.format == "burstgpt")
        t.not_applicable("block_tokens", "to a burstgpt trace (it has no hash_ids)");
      else
        t.number("block_tokens", trace.block_tokens, 1, 1'000'000, true);
      t.number("start_s", trace.start_s, 0, 1e9);
      t.number("duration_s", trace.duration_s, 0.001, 1e9);
      t.number("max_requests", trace.max_requests, 1, 10'000'000, true);
      t.finish();
      if (errors.size() == before) w.trace = std::move(trace);
    }
  }
  if (w.trace && !w.dataset_path.empty())
    r.error("trace", "give dataset or trace, not both (each is a request set)");
  if (const json* ab = r.get("abandon")) {
    ObjectReader a(ab, r.path("abandon"), errors);
    if (a.ok()) {
      PlanAbandon abandon;
      const auto before = errors.size();
      a.number("share", abandon.share, 0, 1, false, true);
      a.number("after_ms", abandon.after_ms, 1, 86'400'000, true);
      a.number("after_tokens", abandon.after_tokens, 1, 1'048'576, true);
      if (a.has("after_ms") == a.has("after_tokens"))
        a.error("",
                "give one of after_ms (ms after the intended send time) and after_tokens "
                "(token events received)");
      a.finish();
      if (errors.size() == before) w.abandon = abandon;
    }
  }
  if (const json* mix = r.get("mix")) {
    const auto before = errors.size();
    read_mix(*mix, r.path("mix"), w.mix, errors, limits);
    if (errors.size() == before && !w.mix.empty()) {
      // A target's override that gives a mix replaces the plan's prefix settings too.
      w.shared_prefix_tokens = 0;
      w.prefix_groups.clear();
    }
  }
  if (const json* cv = r.get("conversation")) {
    // Multi-turn sessions (docs/plans.md, "Conversations"); synthetic prompts only.
    ObjectReader c(cv, r.path("conversation"), errors);
    if (c.ok()) {
      PlanConversation conv;
      const auto before = errors.size();
      if (const json* t = c.get("turns")) {
        if (t->is_object()) {
          ObjectReader tr(t, c.path("turns"), errors);
          tr.number("low", conv.turns_low, 1, 256, true, true);
          tr.number("high", conv.turns_high, 1, 256, true, true);
          if (errors.size() == before && conv.turns_low > conv.turns_high)
            tr.error("low", "must not exceed high");
          tr.finish();
        } else {
          c.number("turns", conv.turns_low, 1, 256, true);
          conv.turns_high = conv.turns_low;
        }
      } else {
        c.error("turns", "is required (turns per session: N or {\"low\": a, \"high\": b})");
      }
      read_lengths(c.get("user_tokens"), c.path("user_tokens"), conv.user_tokens, errors, limits);
      c.number("think_time_s", conv.think_time_s, 0, 86'400);
      c.one_of("think_time", conv.think_time, {"fixed", "exponential"});
      c.number("max_context_tokens", conv.max_context_tokens, 2, 1'048'576, true);
      c.finish();
      if (errors.size() == before) w.conversation = conv;
    }
  }
  // Also when the conversation is inherited (a target's override or a matrix entry that gives a
  // dataset or trace under the plan's conversation).
  if (w.conversation && (!w.dataset_path.empty() || w.trace))
    r.error(r.has("conversation") ? "conversation" : (w.trace ? "trace" : "dataset"),
            r.has("conversation")
                ? "applies to synthetic prompts only (not with dataset or trace)"
                : "not under the plan's workload.conversation (a conversation's prompts are "
                  "synthetic)");
  r.number("shared_prefix_tokens", w.shared_prefix_tokens, 0, 1'000'000, true);
  if (const json* groups = r.get("prefix_groups")) {
    // Prompts sharing a prefix per group (system prompts, RAG templates); synthetic prompts only.
    const std::string gp = r.path("prefix_groups");
    if (!groups->is_array() || groups->empty() || groups->size() > 64) {
      r.error("prefix_groups", "must be an array of 1 to 64 groups");
    } else {
      std::vector<PlanPrefixGroup> read;
      double sum = 0;
      const auto before = errors.size();
      for (std::size_t i = 0; i < groups->size(); ++i) {
        ObjectReader g(&(*groups)[i], gp + "/" + std::to_string(i), errors);
        if (!g.ok()) continue;
        PlanPrefixGroup group;
        g.number("share", group.share, 0, 1, false, true);
        g.number("prefix_tokens", group.prefix_tokens, 1, 1'000'000, true, true);
        g.finish();
        sum += group.share;
        read.push_back(group);
      }
      if (errors.size() == before && std::abs(sum - 1.0) > 1e-6)
        r.error("prefix_groups", "the groups' shares must sum to 1");
      if (w.shared_prefix_tokens > 0)
        r.error("prefix_groups", "give shared_prefix_tokens or prefix_groups, not both");
      if (!w.dataset_path.empty() || w.trace)
        r.error("prefix_groups", "applies to synthetic prompts only (not with dataset or trace)");
      if (errors.size() == before) w.prefix_groups = std::move(read);
    }
  }
  if (!w.mix.empty()) {
    // The classes give the lengths and prefixes; a workload-level key would be ignored.
    for (const char* k : {"input_tokens", "output_tokens", "shared_prefix_tokens", "prefix_groups"})
      if (r.has(k))
        r.error(k, std::string("the workload has a mix: give ") +
                       (k[0] == 'i' || k[0] == 'o' ? k : "prefix_tokens") +
                       " per class (mix/N/...), or leave the mix out");
    if (!w.dataset_path.empty() || w.trace)
      r.error(r.has("mix") ? "mix" : (w.trace ? "trace" : "dataset"),
              "a mix applies to synthetic prompts only (not with dataset or trace)");
    if (w.conversation)
      r.error(r.has("mix") ? "mix" : "conversation",
              "not with conversation: a mix's classes are single requests (give the "
              "conversation's lengths in conversation)");
  }
  r.number("temperature", w.temperature, 0, 2);
  r.boolean("ignore_eos", w.ignore_eos);
  r.boolean("min_tokens", w.min_tokens);
  r.boolean("stream", w.stream);
  r.boolean("record_token_times", w.record_token_times);
  r.boolean("calibrate", w.calibrate);
  if (const json* eb = r.get("extra_body")) {
    if (!eb->is_object()) {
      r.error("extra_body", "must be an object");
    } else {
      // extra_body is merged last into every request body, so it could silently override
      // what the workload promises (lengths, streaming, usage reporting): refuse those keys.
      for (const char* reserved :
           {"model", "prompt", "messages", "stream", "stream_options", "max_tokens",
            "max_completion_tokens", "min_tokens", "ignore_eos", "temperature"}) {
        if (eb->contains(reserved))
          errors.push_back({r.path("extra_body") + "/" + reserved,
                            "is set by llmcap from the workload; remove it"});
      }
      w.extra_body_json = eb->dump();
    }
  }
  r.finish();
}

// `workloads` (docs/plans.md, "Workload matrix"): 1 to 16 named workloads, each starting from
// the plan's `workload` (its keys replace), synthetic only.
void read_workloads(const json& v, const PlanWorkload& base, std::vector<PlanNamedWorkload>& out,
                    std::vector<FieldError>& errors, const PlanLimits& limits) {
  if (!v.is_array() || v.empty() || v.size() > 16) {
    errors.push_back({"/workloads", "must be an array of 1 to 16 named workloads"});
    return;
  }
  if (!base.dataset_path.empty() || base.trace || base.conversation)
    errors.push_back({base.conversation ? "/workload/conversation" : "/workload",
                      "with workloads, the base workload is synthetic single requests (no "
                      "dataset, trace or conversation): every matrix entry starts from it"});
  std::set<std::string> names;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string path = "/workloads/" + std::to_string(i);
    if (!v[i].is_object()) {
      errors.push_back({path, "must be an object: a name and workload keys"});
      continue;
    }
    PlanNamedWorkload nw;
    nw.workload = base;
    const auto name = v[i].find("name");
    if (name == v[i].end()) {
      errors.push_back({path + "/name", "is required"});
    } else if (!name->is_string() || !valid_name(name->get<std::string>())) {
      errors.push_back({path + "/name", "must be 1-64 characters of a-z, 0-9, '_', '.', '-'"});
    } else if (!names.insert(name->get<std::string>()).second) {
      errors.push_back(
          {path + "/name", "duplicate workload name '" + name->get<std::string>() + "'"});
    } else {
      nw.name = name->get<std::string>();
    }
    for (const char* k : {"dataset", "trace", "conversation"})
      if (v[i].contains(k))
        errors.push_back({path + "/" + k,
                          "a matrix workload is synthetic (lengths or a mix); run request sets in "
                          "a plan of their own"});
    json keys = v[i];
    keys.erase("name");
    read_workload(&keys, path, nw.workload, errors, limits);
    out.push_back(std::move(nw));
  }
}

void read_string_map(const json* v, const std::string& path,
                     std::vector<std::pair<std::string, std::string>>& out,
                     std::vector<FieldError>& errors, const PlanLimits& limits) {
  if (!v) return;
  if (!v->is_object()) {
    errors.push_back({path, "must be an object of strings"});
    return;
  }
  if (static_cast<int>(v->size()) > limits.max_list_items) {
    errors.push_back({path, "has too many entries"});
    return;
  }
  for (const auto& [k, x] : v->items()) {
    const std::string p = path + "/" + escape_pointer(k);
    if (!x.is_string()) {
      errors.push_back({p, "must be a string"});
      continue;
    }
    const auto& s = x.get_ref<const std::string&>();
    if (!valid_header_name(k)) {
      errors.push_back({p,
                        "is not a valid header name (RFC 9110 token: letters, digits, "
                        "!#$%&'*+-.^_`|~)"});
      continue;
    }
    if (s.size() > 8192 || s.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) {
      errors.push_back({p, "must be at most 8192 characters without CR, LF or NUL"});
      continue;
    }
    out.emplace_back(k, s);
  }
}

// A sim:// URL's names against the simulator's profiles (PlanLimits::sim_hardware and
// sim_models; not checked when empty): each unknown one is an error at base_url naming the
// nearest known profile and the list, so a misspelt GPU is refused before a job starts.
void sim_profile_errors(const std::string& hardware, const std::string& model,
                        const PlanLimits& limits, ObjectReader& r) {
  const auto check = [&r](const std::string& name, const std::vector<std::string>& known,
                          const std::string& what) {
    if (known.empty() || std::find(known.begin(), known.end(), name) != known.end()) return;
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
    r.error("base_url", "unknown simulator " + what + " profile '" + name + "'" +
                            did_you_mean(name, known, false) + "; known " + what +
                            " profiles: " + list + " (GET /v1/profiles, llmcapd sim --list)");
  };
  check(hardware, limits.sim_hardware, "GPU");
  check(model, limits.sim_models, "model");
}

// `base`: the plan's workload, which a target's "workload" override starts from.
void read_target(const json& v, const std::string& path, const PlanWorkload& base, PlanTarget& t,
                 std::vector<FieldError>& errors, const PlanLimits& limits) {
  ObjectReader r(&v, path, errors);
  if (!r.ok()) return;
  auto before = errors.size();
  r.string("name", t.name, true, 64);
  if (r.has("name") && errors.size() == before && !valid_name(t.name))
    r.error("name", "must be 1-64 characters of a-z, 0-9, '_', '.', '-'");
  before = errors.size();
  r.string("base_url", t.base_url, true, 2048);
  if (r.has("base_url") && errors.size() == before) {
    if (t.base_url.rfind("sim://", 0) == 0) {
      const auto rest = t.base_url.substr(6);
      const auto slash = rest.find('/');
      if (slash == std::string::npos || !valid_name(rest.substr(0, slash)) ||
          !valid_name(rest.substr(slash + 1))) {
        // "sim://RTX4090-48G/Llama-3.1-8B": suggest the known names it folds to.
        std::string hint;
        if (slash != std::string::npos && !limits.sim_hardware.empty() &&
            !limits.sim_models.empty()) {
          const auto hw = nearest_known(rest.substr(0, slash), limits.sim_hardware, false);
          const auto model = nearest_known(rest.substr(slash + 1), limits.sim_models, false);
          if (hw && model) hint = " (did you mean sim://" + *hw + "/" + *model + "?)";
        }
        r.error("base_url",
                "a simulator URL is sim://<hardware>/<model> with lower-case names, e.g. "
                "sim://rtx4090-48g/llama-3.1-8b" +
                    hint);
      } else {
        sim_profile_errors(rest.substr(0, slash), rest.substr(slash + 1), limits, r);
      }
    } else {
      auto u = boost::urls::parse_uri(t.base_url);
      if (!u) {
        r.error("base_url",
                "is not a valid URL (http://host[:port][/path], https://..., or "
                "sim://<hardware>/<model>)");
      } else if (u->scheme() != "http" && u->scheme() != "https") {
        r.error("base_url", "scheme must be http, https or sim");
      } else if (u->host().empty()) {
        r.error("base_url", "needs a host");
      } else if (u->has_userinfo()) {
        r.error("base_url", "must not carry credentials; use secrets.api_key");
      } else if (u->has_query() || u->has_fragment()) {
        r.error("base_url", "must not have a query or fragment");
      }
    }
  }
  r.one_of("api", t.api, {"completions", "chat"});
  r.string("model", t.model, false, 256);
  read_string_map(r.get("headers"), r.path("headers"), t.headers, errors, limits);
  for (const auto& [k, s] : t.headers) {
    const std::string n = lower(k);
    if (n == "host" || n == "content-length" || n == "content-type" || n == "transfer-encoding" ||
        n == "connection" || n == "accept")
      errors.push_back({r.path("headers") + "/" + escape_pointer(k),
                        "is set by llmcap for every request; remove it"});
  }
  read_string_map(r.get("secrets"), r.path("secrets"), t.secrets, errors, limits);
  for (const auto& [k, s] : t.secrets) {
    if (k != "api_key") {
      errors.push_back(
          {r.path("secrets") + "/" + escape_pointer(k), "unknown secret (supported: api_key)"});
    } else if (s.empty()) {
      errors.push_back({r.path("secrets") + "/api_key", "must not be empty"});
    } else {
      for (const auto& [hk, hv] : t.headers) {
        if (lower(hk) == "authorization")
          errors.push_back({r.path("headers") + "/" + escape_pointer(hk),
                            "conflicts with secrets.api_key (which sends Authorization: Bearer)"});
      }
    }
  }
  if (const json* tls = r.get("tls")) {
    ObjectReader tr(tls, r.path("tls"), errors);
    tr.string("ca_file", t.tls_ca_file, false, 4096);
    tr.boolean("insecure", t.tls_insecure);
    tr.finish();
  }
  if (const json* hw = r.get("hardware")) {
    ObjectReader h(hw, r.path("hardware"), errors);
    std::string s;
    double d = 0;
    for (const char* k : {"gpu", "form_factor", "driver", "engine", "engine_version", "notes",
                          "cpu", "memory", "interconnect"})
      h.string(k, s, false, 256);
    int count = 0;
    h.number("gpu_count", count, 1, 1024, true);
    h.number("memory_gb_visible", d, 0, 1e6);
    h.number("power_limit_w", d, 0, 1e5);
    h.string("precision", t.precision, false, 32);
    h.finish();
    if (hw->is_object()) t.hardware_json = hw->dump();
  }
  if (r.has("price_per_hour")) {
    double price = 0;
    r.number("price_per_hour", price, 0, 1e6);
    t.price_per_hour = price;
  }
  r.string("currency", t.currency, false, 3);
  if (r.has("currency") &&
      (t.currency.size() != 3 || !std::all_of(t.currency.begin(), t.currency.end(),
                                              [](char c) { return c >= 'A' && c <= 'Z'; })))
    r.error("currency", "must be a 3-letter ISO 4217 code such as USD");
  r.string("metrics_url", t.metrics_url, false, 2048);
  if (!t.metrics_url.empty()) {
    auto u = boost::urls::parse_uri(t.metrics_url);
    if (!u || (u->scheme() != "http" && u->scheme() != "https"))
      r.error("metrics_url", "must be an http(s) URL");
  }
  if (const json* sim = r.get("sim")) {
    ObjectReader s(sim, r.path("sim"), errors);
    std::string str;
    double d = 0;
    std::int64_t i = 0;
    s.one_of("dtype", str = "bf16", {"bf16", "fp16", "fp8", "int8", "int4"});
    if (sim->is_object() && sim->contains("dtype") && t.precision.empty()) t.precision = str;
    // The simulator's engine profiles (sim/roofline.h engine_names()).
    s.one_of("engine", str = "vllm", {"vllm", "vllm-2024", "trt-llm", "sglang", "llama.cpp"});
    s.one_of("kv_cache_dtype", str = "auto", {"auto", "fp8"});
    s.number("time_scale", d, 0.01, 1000);
    s.number("seed", i, 0, 9e15, true);
    s.number("gpu_memory_utilization", d, 0.05, 1.0);
    s.number("max_num_seqs", i, 1, 65536, true);
    // GPUs the model is split over (vLLM --tensor-parallel-size; sim/README.md).
    s.number("tensor_parallel", i, 1, 64, true);
    s.number("max_num_batched_tokens", i, 16, 1 << 20, true);
    s.number("max_model_len", i, 0, 1 << 24, true);
    s.number("tokens_per_event", i, 1, 64, true);
    s.number("activation_reserve_gib", d, 0, 1024);
    s.number("default_max_tokens", i, 1, kMaxTokens, true);
    bool caching = true;  // automatic prefix caching (vLLM V1 default), sim/README.md
    s.boolean("enable_prefix_caching", caching);
    if (const json* f = s.get("faults")) {
      // Fault injection of the simulator (sim/fault_injector.h): fractions of requests.
      ObjectReader fr(f, s.path("faults"), errors);
      double sum = 0;  // the simulator picks at most one fault per request
      for (const char* k :
           {"error_rate", "rate_limit_rate", "stall_rate", "reset_rate", "malformed_rate"}) {
        double rate = 0;
        fr.number(k, rate, 0, 1);
        sum += rate;
      }
      if (sum > 1 + 1e-9)
        fr.error("", "error, rate-limit, stall, reset and malformed rates must sum to at most 1");
      fr.number("slow_headers_rate", d, 0, 1);
      for (const char* k : {"stall_after_tokens", "reset_after_tokens", "malformed_after_tokens"})
        fr.number(k, i, 0, kMaxTokens, true);
      fr.number("retry_after_s", i, 0, 86'400, true);
      fr.number("stall_ms", i, 0, 3'600'000, true);
      fr.number("slow_headers_ms", i, 0, 3'600'000, true);
      fr.finish();
    }
    s.finish();
    if (t.base_url.rfind("sim://", 0) != 0) r.error("sim", "only applies to sim:// targets");
    if (sim->is_object()) t.sim_json = sim->dump();
  }
  if (t.precision.empty() && t.base_url.rfind("sim://", 0) == 0) t.precision = "bf16";
  if (const json* w = r.get("workload")) {
    PlanWorkload pw = base;  // keys the override omits keep the plan's values
    read_workload(w, r.path("workload"), pw, errors, limits);
    t.workload = pw;
  }
  r.finish();
}

// "p95" → 95, "p99.9" → 99.9, "p99_9" (the results' spelling) → 99.9, "p999" → 99.9 (the
// spelling of earlier versions); nullopt unless the number is in (0, 100).
std::optional<double> parse_percentile_key(const std::string& key) {
  if (key == "p999") return 99.9;
  if (key.size() < 2 || key[0] != 'p') return std::nullopt;
  std::string number = key.substr(1);
  std::replace(number.begin(), number.end(), '_', '.');
  if (number.find_first_not_of("0123456789.") != std::string::npos || number.front() == '.' ||
      number.back() == '.' || std::count(number.begin(), number.end(), '.') > 1)
    return std::nullopt;
  const double p = std::strtod(number.c_str(), nullptr);
  if (!(p > 0 && p < 100)) return std::nullopt;
  return p;
}

void read_sla(const json* v, const std::string& path, PlanSla& sla,
              std::vector<FieldError>& errors) {
  ObjectReader r(v, path, errors);
  if (!r.ok()) return;
  const std::vector<std::pair<std::string, std::string>> metrics = {
      {"ttft_ms", "ttft"},
      {"ttft_service_ms", "ttft_service"},
      {"tpot_ms", "tpot"},
      {"itl_ms", "itl"},
      {"e2e_ms", "e2e"}};
  for (const auto& [key, metric] : metrics) {
    const json* m = r.get(key);
    if (!m) continue;
    if (!m->is_object() || m->empty()) {
      r.error(key, "must be an object like {\"p95\": 1000}");
      continue;
    }
    std::set<double> seen;
    for (const auto& [pk, lv] : m->items()) {
      const std::string p = r.path(key) + "/" + escape_pointer(pk);
      const auto pct_or = parse_percentile_key(pk);
      if (!pct_or) {
        errors.push_back({p,
                          "not a percentile: use pN with 0 < N < 100, e.g. p50, p75, p95, p99.9, "
                          "p99.99 (p999 is read as p99.9)"});
        continue;
      }
      const double pct = *pct_or;
      if (!seen.insert(pct).second) {
        errors.push_back({p,
                          "duplicate bound: another key names the same percentile (p999, p99_9 and "
                          "p99.9 are all P99.9)"});
        continue;
      }
      if (!lv.is_number() || !std::isfinite(lv.get<double>()) || lv.get<double>() <= 0 ||
          lv.get<double>() > 3.6e6) {
        errors.push_back({p, "must be a positive number of milliseconds (≤ 3600000)"});
        continue;
      }
      sla.bounds.push_back({metric, pct, lv.get<double>()});
    }
  }
  r.number("max_error_rate", sla.max_error_rate, 0, 1);
  r.one_of("ttft_from", sla.ttft_from, {"intended", "send"});
  if (r.has("rate_tolerance")) {
    double d = 0.05;
    r.number("rate_tolerance", d, 0.001, 0.5);
    sla.rate_tolerance = d;
  }
  if (r.has("max_schedule_lag_p99_ms")) {
    double d = 50;
    r.number("max_schedule_lag_p99_ms", d, 0.01, 60'000);
    sla.max_schedule_lag_p99_ms = d;
  }
  if (r.has("min_requests")) {
    std::int64_t n = 100;
    r.number("min_requests", n, 1, 1e9, true);
    sla.min_requests = n;
  }
  r.number("window_s", sla.window_s, 1, 86'400);
  r.finish();
}

void read_phase(const json& v, const std::string& path, PlanPhase& p,
                std::vector<FieldError>& errors, const PlanLimits& limits) {
  ObjectReader r(&v, path, errors);
  if (!r.ok()) return;
  // The kind decides which keys apply: with no valid kind only the common keys are read.
  std::string kind_text;
  r.one_of("kind", kind_text,
           {"concurrency_sweep", "rate_sweep", "capacity_search", "burst", "soak", "trace_replay",
            "at_demand"});
  if (!r.has("kind")) r.error("kind", "is required");
  const std::optional<PhaseKind> kind = parse_phase_kind(kind_text);
  if (kind) p.kind = *kind;
  const auto before = errors.size();
  r.string("name", p.name, false, 64);
  if (r.has("name") && errors.size() == before && !valid_name(p.name))
    r.error("name", "must be 1-64 characters of a-z, 0-9, '_', '.', '-'");
  r.number("repeat", p.repeat, 1, 20, true);
  // A step's window: duration_s (time) or requests (request count, with max_duration_s as its
  // cap); exactly one of them. A burst is its windows, a soak is judged per window_s over time.
  if (kind == PhaseKind::kBurst) {
    const std::string why = "to a burst (it lasts window_s + burst_s + observe_s)";
    r.not_applicable("duration_s", why);
    r.not_applicable("requests", why);
    r.not_applicable("max_duration_s", why);
  } else if (kind == PhaseKind::kTraceReplay) {
    const std::string why =
        "to a trace_replay (the trace's timestamps decide its length; workload.trace.duration_s "
        "and max_requests cut the trace)";
    r.not_applicable("duration_s", why);
    r.not_applicable("requests", why);
    r.not_applicable("max_duration_s", why);
    p.warmup_s = 0;  // a replay measures from the trace's first request unless told otherwise
  } else if (kind == PhaseKind::kSoak) {
    const std::string why = "to a soak (it is judged per window_s window over duration_s)";
    r.number("duration_s", p.duration_s, 1, 86'400);
    r.not_applicable("requests", why);
    r.not_applicable("max_duration_s", why);
  } else if (r.has("requests")) {
    if (r.has("duration_s"))
      r.error("requests",
              "give duration_s or requests, not both (requests ends each window "
              "after that many requests)");
    r.get("duration_s");  // reported above, not as an unknown key
    r.number("requests", p.requests, 1, 10'000'000, true);
    r.number("max_duration_s", p.max_duration_s, 1, 86'400);
  } else {
    r.number("duration_s", p.duration_s, 1, 86'400);
    r.not_applicable("max_duration_s", "without requests (it caps a request-count step)");
  }
  r.number("warmup_s", p.warmup_s, 0, 3600);
  std::string drain(to_string(p.drain));
  r.one_of("drain", drain, {"finish", "cancel"});
  p.drain = parse_drain(drain).value_or(p.drain);
  if (kind == PhaseKind::kTraceReplay) {
    const std::string why = "to a trace_replay (requests arrive at the trace's own times)";
    r.not_applicable("arrival", why);
    r.not_applicable("burstiness", why);
    p.max_in_flight = std::min(p.max_in_flight, limits.max_concurrency);
    r.number("max_in_flight", p.max_in_flight, 1, limits.max_concurrency, true);
  } else if (!kind || is_open_loop(*kind)) {
    std::string arrival(to_string(p.arrival));
    r.one_of("arrival", arrival, {"poisson", "constant", "gamma"});
    p.arrival = parse_arrival(arrival).value_or(p.arrival);
    r.number("burstiness", p.burstiness, 0.01, 100);
    // Default: the daemon's concurrency limit (so a normalised plan re-reads under it).
    p.max_in_flight = std::min(p.max_in_flight, limits.max_concurrency);
    r.number("max_in_flight", p.max_in_flight, 1, limits.max_concurrency, true);
  }
  const double max_rate = limits.max_rate_rps;
  auto read_list = [&](const char* key, auto& out, double lo, double hi, bool integer) {
    const json* l = r.get(key);
    if (!l) {
      r.error(key, "is required");
      return;
    }
    if (!l->is_array() || l->empty()) {
      r.error(key, "must be a non-empty array");
      return;
    }
    if (static_cast<int>(l->size()) > limits.max_list_items) {
      r.error(key, "has more than " + std::to_string(limits.max_list_items) + " items");
      return;
    }
    for (std::size_t i = 0; i < l->size(); ++i) {
      const auto& x = (*l)[i];
      const std::string ip = r.path(key) + "/" + std::to_string(i);
      if (!x.is_number() || (integer && !whole_number(x)) || !std::isfinite(x.get<double>()) ||
          x.get<double>() < lo || x.get<double>() > hi) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "must be %s between %g and %g",
                      integer ? "an integer" : "a number", lo, hi);
        errors.push_back({ip, buf});
        continue;
      }
      out.push_back(static_cast<typename std::decay_t<decltype(out)>::value_type>(x.get<double>()));
    }
  };
  if (kind == PhaseKind::kConcurrencySweep) {
    read_list("levels", p.levels, 1, limits.max_concurrency, true);
  } else if (kind == PhaseKind::kRateSweep) {
    read_list("rates_rps", p.rates_rps, 0.001, max_rate, false);
    // A request-count window at a known rate is requests / rate: it must fit under the cap.
    for (const double rate : p.rates_rps) {
      if (p.requests <= 0 || static_cast<double>(p.requests) / rate <= p.max_duration_s) continue;
      char buf[200];
      std::snprintf(buf, sizeof buf,
                    "%lld requests at %g rps take %.0f s, above max_duration_s %g s (raise "
                    "max_duration_s or lower requests)",
                    static_cast<long long>(p.requests), rate,
                    static_cast<double>(p.requests) / rate, p.max_duration_s);
      r.error("requests", buf);
      break;
    }
  } else if (kind == PhaseKind::kCapacitySearch) {
    if (const json* sf = r.get("start_from")) {
      if (sf->is_string() && sf->get<std::string>() == "knee") {
        p.start_from_knee = true;
      } else if (sf->is_string() && sf->get<std::string>() == "prediction") {
        p.start_from_knee = false;
        p.start_from_prediction = true;
      } else if (sf->is_number() && std::isfinite(sf->get<double>()) && sf->get<double>() > 0 &&
                 sf->get<double>() <= max_rate) {
        p.start_from_knee = false;
        p.start_rps = sf->get<double>();
      } else {
        r.error("start_from", "must be \"knee\", \"prediction\" or a positive rate in requests/s");
      }
    }
    r.number("low_rps", p.low_rps, 0.001, max_rate);
    r.number("high_rps", p.high_rps, 0.001, max_rate);
    if (p.low_rps > 0 && p.high_rps > 0 && p.low_rps >= p.high_rps)
      r.error("low_rps", "must be below high_rps");
    if (p.start_rps > 0 && ((p.low_rps > 0 && p.start_rps < p.low_rps) ||
                            (p.high_rps > 0 && p.start_rps > p.high_rps)))
      r.error("start_from", "must lie within [low_rps, high_rps]");
    r.number("resolution", p.resolution, 0.005, 0.5);
    r.number("max_steps", p.max_steps, 2, 60, true);
    r.number("confirm_duration_s", p.confirm_duration_s, 1, 86'400);
  } else if (kind == PhaseKind::kBurst) {
    r.number("base_rps", p.base_rps, 0.001, max_rate, false, true);
    r.number("multiplier", p.multiplier, 1, 100);
    r.number("burst_s", p.burst_s, 1, 3600);
    r.number("observe_s", p.observe_s, 1, 86'400);
    r.number("window_s", p.window_s, 1, 3600);
    if (p.base_rps * p.multiplier > max_rate)
      r.error("multiplier", "base_rps × multiplier exceeds the rate limit");
  } else if (kind == PhaseKind::kSoak) {
    if (const json* rr = r.get("rate_rps")) {
      if (rr->is_string() && rr->get<std::string>() == "qualified") {
        p.soak_at_qualified = true;
      } else if (rr->is_number() && std::isfinite(rr->get<double>()) && rr->get<double>() > 0 &&
                 rr->get<double>() <= max_rate) {
        p.rate_rps = rr->get<double>();
      } else {
        r.error("rate_rps", "must be \"qualified\" or a positive rate in requests/s");
      }
    } else {
      r.error("rate_rps", "is required (a rate, or \"qualified\")");
    }
    r.number("window_s", p.window_s, 1, 3600);
  } else if (kind == PhaseKind::kAtDemand) {
    // The offered rate is resolved with the plan's demand (resolve_at_demand, below).
    r.boolean("with_headroom", p.with_headroom);
    r.number("rate_rps", p.rate_rps, 0.001, max_rate);
    r.number("output_tokens_per_s", p.output_tokens_per_s, 0.001, 1e9);
    if (r.has("rate_rps") && r.has("output_tokens_per_s"))
      r.error("output_tokens_per_s",
              "give rate_rps or output_tokens_per_s, not both (each sets the offered rate)");
  } else if (kind == PhaseKind::kTraceReplay) {
    if (r.has("speeds")) {
      p.speeds.clear();
      read_list("speeds", p.speeds, 0.01, 1000, false);
    }
  }
  if (p.name.empty() && kind) p.name = std::string(to_string(*kind));
  r.finish();
}

// Whether the plan's workload or a target's override holds conversations.
bool any_conversation(const TestPlan& plan) {
  bool conversation = plan.workload.conversation.has_value();
  for (const auto& t : plan.targets)
    conversation = conversation || (t.workload && t.workload->conversation);
  return conversation;
}

// at_demand (docs/plans.md, "Equal-load comparison"): the one rate every target is offered —
// rate_rps, else output_tokens_per_s ÷ the demand's mean output tokens, else the demand's
// requests/s — × (1 + demand.headroom) with with_headroom. Errors name the phase or its key.
void resolve_at_demand(const TestPlan& plan, PlanPhase& p, const std::string& path,
                       std::vector<FieldError>& errors, const PlanLimits& limits) {
  AtDemandLoad& load = p.at_demand;
  const bool synthetic = plan.workload.dataset_path.empty() && !plan.workload.trace;
  if (plan.demand) {
    load.demand_rps = plan.demand->requests_per_minute / 60;
    load.mean_output_tokens = plan.demand->mean_output_tokens;  // 0: a dataset's, once measured
  } else if (synthetic) {
    load.mean_output_tokens = plan.workload.planned_output_mean();  // a mix: its weighted mean
  }
  double base_rps = 0;
  if (p.rate_rps > 0) {
    base_rps = p.rate_rps;
    load.source = "rate_rps";
  } else if (p.output_tokens_per_s > 0) {
    if (load.mean_output_tokens <= 0) {
      errors.push_back({path + "/output_tokens_per_s",
                        "needs a mean output length to become a request rate: give "
                        "demand.mean_output_tokens (a dataset's or trace's lengths are known only "
                        "once it runs), or give rate_rps instead"});
      return;
    }
    base_rps = p.output_tokens_per_s / load.mean_output_tokens;
    load.source = "output_tokens_per_s";
    // A workload matrix offers each workload the same output tok/s: its own request rate from
    // its own planned output mean (the executor converts per workload; checked here).
    for (std::size_t i = 0; i < plan.workloads.size(); ++i) {
      const double rps = p.output_tokens_per_s / plan.workloads[i].workload.planned_output_mean();
      if (rps > limits.max_rate_rps) {
        char buf[200];
        std::snprintf(buf, sizeof buf,
                      "offers %g rps to workload %s, above the rate limit of %g rps", rps,
                      plan.workloads[i].name.c_str(), limits.max_rate_rps);
        errors.push_back({path + "/output_tokens_per_s", buf});
      }
    }
  } else if (plan.demand) {
    base_rps = load.demand_rps;
    load.source = "demand";
  } else {
    errors.push_back({path,
                      "at_demand needs a load to offer: give the plan a demand "
                      "(demand.requests_per_minute), or give this phase rate_rps or "
                      "output_tokens_per_s"});
    return;
  }
  if (p.with_headroom) {
    if (!plan.demand) {
      errors.push_back(
          {path + "/with_headroom", "needs the plan's demand (its headroom is the factor)"});
      return;
    }
    load.headroom = plan.demand->headroom;
  }
  load.rate_rps = base_rps * (1 + load.headroom);
  char buf[200];
  if (load.rate_rps > limits.max_rate_rps) {
    std::snprintf(buf, sizeof buf, "offers %g rps, above the rate limit of %g rps", load.rate_rps,
                  limits.max_rate_rps);
    errors.push_back({path + (load.source == "demand" ? "" : "/" + load.source), buf});
  } else if (p.requests > 0 && static_cast<double>(p.requests) / load.rate_rps > p.max_duration_s) {
    std::snprintf(buf, sizeof buf,
                  "%lld requests at %g rps take %.0f s, above max_duration_s %g s (raise "
                  "max_duration_s or lower requests)",
                  static_cast<long long>(p.requests), load.rate_rps,
                  static_cast<double>(p.requests) / load.rate_rps, p.max_duration_s);
    errors.push_back({path + "/requests", buf});
  }
}

// Workload features a scale-out job cannot split yet, refused when the plan has `agents`
// (nothing is dropped silently): each shard numbers its own requests, and a mix's classes,
// abandonment and prefix groups pick requests by their index in the step (agent/step_spec.h:
// mix_class_of, abandons, prefix_group_of), so the shards together would not run the plan's
// choice; conversations number their sessions per shard, and the merge does not carry them.
// Named where the plan sets them: the shared workload, a workload of the matrix, or a
// target's own workload (not again where it only inherits the shared one).
void refuse_unsplit_workload_features(const TestPlan& plan, std::vector<FieldError>& errors) {
  struct Feature {
    const char* key;
    bool (*used)(const PlanWorkload&);
    const char* message;
  };
  static constexpr Feature kFeatures[] = {
      {"mix", [](const PlanWorkload& w) { return !w.mix.empty(); },
       "a workload mix cannot be split over agents yet (remove agents, or run the mix from one "
       "agent)"},
      {"conversation", [](const PlanWorkload& w) { return w.conversation.has_value(); },
       "conversations cannot be split over agents yet (remove agents, or run the sessions from "
       "one agent)"},
      {"prefix_groups", [](const PlanWorkload& w) { return !w.prefix_groups.empty(); },
       "prefix groups cannot be split over agents yet: each shard would pick its own requests "
       "(remove agents, or run the prefix groups from one agent)"},
      {"abandon", [](const PlanWorkload& w) { return w.abandon.has_value(); },
       "abandonment cannot be split over agents yet: each shard would pick its own requests "
       "(remove agents, or abandon requests from one agent)"},
  };
  for (const Feature& f : kFeatures) {
    const bool shared = f.used(plan.workload);
    if (shared) errors.push_back({std::string("/workload/") + f.key, f.message});
    for (std::size_t i = 0; i < plan.workloads.size(); ++i)
      if (!shared && f.used(plan.workloads[i].workload))
        errors.push_back({"/workloads/" + std::to_string(i) + "/" + f.key, f.message});
    for (std::size_t i = 0; i < plan.targets.size(); ++i)
      if (!shared && plan.targets[i].workload && f.used(*plan.targets[i].workload))
        errors.push_back({"/targets/" + std::to_string(i) + "/workload/" + f.key, f.message});
  }
}

void read_agents(const json* v, const std::string& path, PlanAgents& a,
                 std::vector<FieldError>& errors, const PlanLimits& limits) {
  ObjectReader r(v, path, errors);
  if (!r.ok()) return;
  r.number("count", a.count, 1, limits.max_list_items, true, true);
  if (const json* regions = r.get("regions")) {
    if (!regions->is_array() || regions->empty()) {
      r.error("regions", "must be a non-empty array of region labels");
    } else if (static_cast<int>(regions->size()) > limits.max_list_items) {
      r.error("regions", "has more than " + std::to_string(limits.max_list_items) + " items");
    } else {
      for (std::size_t i = 0; i < regions->size(); ++i) {
        const json& x = (*regions)[i];
        const std::string p = r.path("regions") + "/" + std::to_string(i);
        if (!x.is_string() || !valid_name(x.get<std::string>())) {
          errors.push_back({p, "must be a label of 1-64 characters a-z 0-9 _ . -"});
          continue;
        }
        a.regions.push_back(x.get<std::string>());
      }
      if (a.regions.size() > static_cast<std::size_t>(std::max(a.count, 1)))
        r.error("regions", "has more labels (" + std::to_string(a.regions.size()) +
                               ") than agents.count (" + std::to_string(a.count) + ")");
    }
  }
  if (const json* pl = r.get("placement")) {
    ObjectReader p(pl, r.path("placement"), errors);
    p.one_of("spread", a.placement.spread, {"zone", "node", "none"});
    if (const json* ns = p.get("node_selector")) {
      if (!ns->is_object()) {
        p.error("node_selector", "must be an object of label strings");
      } else if (static_cast<int>(ns->size()) > limits.max_list_items) {
        p.error("node_selector", "has too many entries");
      } else {
        for (const auto& [k, x] : ns->items()) {
          const std::string at = p.path("node_selector") + "/" + escape_pointer(k);
          if (k.empty() || k.size() > 253) {
            errors.push_back({at, "label key must be 1-253 characters"});
          } else if (!x.is_string() || x.get_ref<const std::string&>().size() > 63) {
            errors.push_back({at, "must be a label value string of at most 63 characters"});
          } else {
            a.placement.node_selector.emplace_back(k, x.get<std::string>());
          }
        }
      }
    }
    p.finish();
  }
  r.one_of("launch", a.launch, {"kubernetes", "manual"});
  r.number("max_clock_offset_ms", a.max_clock_offset_ms, 0.01, 60'000);
  r.number("start_delay_ms", a.start_delay_ms, 0, 600'000);
  r.number("register_timeout_s", a.register_timeout_s, 1, 86'400);
  r.number("result_timeout_s", a.result_timeout_s, 1, 86'400);
  r.finish();
}

json agents_json(const PlanAgents& a) {
  json selector = json::object();
  for (const auto& [k, v] : a.placement.node_selector) selector[k] = v;
  json j{{"count", a.count},
         {"placement", {{"spread", a.placement.spread}, {"node_selector", selector}}},
         {"launch", a.launch},
         {"max_clock_offset_ms", a.max_clock_offset_ms},
         {"start_delay_ms", a.start_delay_ms},
         {"register_timeout_s", a.register_timeout_s},
         {"result_timeout_s", a.result_timeout_s}};
  if (!a.regions.empty()) j["regions"] = a.regions;
  return j;
}

// Request-count steps (planned_window_s): open-loop ones at their rate; a capacity search's
// rate is known only as it runs, so its start (start_from, the bracket's geometric mean, else
// low_rps, else 1 rps) stands for every step; closed-loop ones are a guess from the workload's
// mean output length. Every one is capped at max_duration_s.
// trace_s: a trace replay's trace seconds (workload.trace.duration_s; 0 when unknown here, as
// the trace is read only when the plan's files are checked).
// The wall-clock length a phase is expected to take on one target (the job-length limit and
// estimated_duration_s): each step's warm-up, its window (lengthened to hold min_requests at its
// rate, as the executor does), its drain (drain: finish waits for the requests in flight, about
// one request's latency, at most the load generator's 60 s), and a capacity search's confirm at
// its lengthened window (kConfirmLifetimes request lifetimes). Latencies are guessed
// (guessed_request_s); daemons also enforce max_job_duration_s while the job runs.
double phase_duration_s(const PlanPhase& p, double mean_output_tokens, double trace_s,
                        std::int64_t min_requests) {
  constexpr double kDrainTimeoutS = 60;  // agent::StepSpec::drain_timeout_s
  const double request_s = guessed_request_s(mean_output_tokens);
  const double drain = p.drain == Drain::kFinish ? std::min(request_s, kDrainTimeoutS) : 0;
  // An open-loop window at `rate`, lengthened for min_requests like the executor's.
  auto open_window = [&](double rate, double planned) {
    if (p.requests > 0 || !(rate > 0) || min_requests <= 0) return planned;
    const double needed =
        analysis::window_for_min_requests_s(rate, static_cast<std::uint64_t>(min_requests));
    return needed <= planned ? planned : std::min(needed, std::max(p.max_duration_s, planned));
  };
  const double step = p.warmup_s + p.duration_s + drain;
  double d = 0;
  switch (p.kind) {
    case PhaseKind::kConcurrencySweep:
      for (const auto level : p.levels)
        d += p.warmup_s + planned_window_s(p, 0, level, mean_output_tokens) + drain;
      break;
    case PhaseKind::kRateSweep:
      for (const auto rate : p.rates_rps)
        d += p.warmup_s + open_window(rate, planned_window_s(p, rate, 0, mean_output_tokens)) +
             drain;
      break;
    case PhaseKind::kCapacitySearch: {
      double rate = 1;
      if (p.start_rps > 0)
        rate = p.start_rps;
      else if (p.low_rps > 0 && p.high_rps > 0)
        rate = std::sqrt(p.low_rps * p.high_rps);
      else if (p.low_rps > 0)
        rate = p.low_rps;
      const double confirm =
          open_window(rate, analysis::confirm_window_s(p.confirm_duration_s, request_s));
      d = (p.warmup_s + open_window(rate, planned_window_s(p, rate, 0, mean_output_tokens)) +
           drain) *
              p.max_steps +
          p.warmup_s + confirm + drain;
      break;
    }
    case PhaseKind::kBurst: d = p.warmup_s + p.window_s + p.burst_s + p.observe_s + drain; break;
    case PhaseKind::kSoak: d = step; break;
    case PhaseKind::kTraceReplay:
      // An unknown length (trace_s 0) stays 0: the estimate says it leaves the replay out.
      for (const double speed : p.speeds) d += trace_s > 0 ? trace_s / speed + drain : 0;
      break;
    case PhaseKind::kAtDemand: {
      const double rate = p.at_demand.rate_rps;
      d = p.warmup_s + open_window(rate, planned_window_s(p, rate, 0, mean_output_tokens)) + drain;
      break;
    }
  }
  return d * p.repeat;
}

json lengths_json(const analysis::LengthDistribution& d) {
  json j{{"distribution", std::string(analysis::to_string(d.kind))},
         {"min", d.min_tokens},
         {"max", d.max_tokens}};
  switch (d.kind) {
    case analysis::LengthDistribution::Kind::kFixed: j["mean"] = d.mean; break;
    case analysis::LengthDistribution::Kind::kUniform:
      j["low"] = d.low;
      j["high"] = d.high;
      break;
    case analysis::LengthDistribution::Kind::kNormal:
    case analysis::LengthDistribution::Kind::kLognormal:
      j["mean"] = d.mean;
      j["stddev"] = d.stddev;
      break;
    case analysis::LengthDistribution::Kind::kEmpirical: j["values"] = d.values; break;
  }
  return j;
}

json workload_json(const PlanWorkload& w) {
  json j{{"temperature", w.temperature},
         {"ignore_eos", w.ignore_eos},
         {"min_tokens", w.min_tokens},
         {"stream", w.stream},
         {"record_token_times", w.record_token_times},
         {"calibrate", w.calibrate},
         {"extra_body", json::parse(w.extra_body_json, nullptr, false)}};
  if (w.mix.empty()) {
    j["input_tokens"] = lengths_json(w.input_tokens);
    j["output_tokens"] = lengths_json(w.output_tokens);
    j["shared_prefix_tokens"] = w.shared_prefix_tokens;
  } else {
    json mix = json::array();
    for (const PlanMixClass& c : w.mix) {
      json mc{{"name", c.name},
              {"weight", c.weight},
              {"input_tokens", lengths_json(c.input_tokens)},
              {"output_tokens", lengths_json(c.output_tokens)}};
      if (c.prefix_tokens > 0) mc["prefix_tokens"] = c.prefix_tokens;
      if (c.sla_bounds || c.max_error_rate) {
        json sla = json::object();
        for (const auto& b : c.sla_bounds.value_or(std::vector<PlanSlaBound>{}))
          sla[b.metric + "_ms"]["p" + analysis::percentile_label(b.percentile)] = b.limit_ms;
        if (c.max_error_rate) sla["max_error_rate"] = *c.max_error_rate;
        mc["sla"] = std::move(sla);
      }
      mix.push_back(std::move(mc));
    }
    j["mix"] = std::move(mix);
  }
  if (!w.dataset_path.empty()) j["dataset"] = {{"path", w.dataset_path}, {"mode", w.dataset_mode}};
  if (w.trace) {
    json t{{"format", w.trace->format}, {"path", w.trace->path}, {"start_s", w.trace->start_s}};
    if (w.trace->format != "burstgpt") t["block_tokens"] = w.trace->block_tokens;
    if (w.trace->duration_s > 0) t["duration_s"] = w.trace->duration_s;
    if (w.trace->max_requests > 0) t["max_requests"] = w.trace->max_requests;
    j["trace"] = std::move(t);
  }
  if (!w.prefix_groups.empty()) {
    json groups = json::array();
    for (const PlanPrefixGroup& g : w.prefix_groups)
      groups.push_back({{"share", g.share}, {"prefix_tokens", g.prefix_tokens}});
    j["prefix_groups"] = std::move(groups);
  }
  if (w.conversation) {
    const PlanConversation& c = *w.conversation;
    json turns = c.turns_low == c.turns_high ? json(c.turns_low)
                                             : json{{"low", c.turns_low}, {"high", c.turns_high}};
    json cv{{"turns", std::move(turns)},
            {"user_tokens", lengths_json(c.user_tokens)},
            {"think_time_s", c.think_time_s},
            {"think_time", c.think_time}};
    if (c.max_context_tokens > 0) cv["max_context_tokens"] = c.max_context_tokens;
    j["conversation"] = std::move(cv);
  }
  if (w.abandon) {
    json a{{"share", w.abandon->share}};
    if (w.abandon->after_ms > 0) a["after_ms"] = w.abandon->after_ms;
    if (w.abandon->after_tokens > 0) a["after_tokens"] = w.abandon->after_tokens;
    j["abandon"] = std::move(a);
  }
  return j;
}

// The parser's message quotes the input near the error, which may be invalid UTF-8 (the very
// error) or control characters: keep printable ASCII, escape the rest as \xNN, so the error
// can be serialised as JSON and printed safely.
std::string printable(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f) {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

// A hostile plan (say 100,000 bad list items) must not turn into a multi-megabyte error
// response: keep the first kMaxErrors, then one line saying how many more there were.
constexpr std::size_t kMaxErrors = 100;
void cap_errors(std::vector<FieldError>& errors) {
  if (errors.size() <= kMaxErrors) return;
  const auto more = errors.size() - kMaxErrors;
  errors.resize(kMaxErrors);
  errors.push_back({"", "and " + std::to_string(more) + " more errors"});
}

// Warnings for values that are legal but almost certainly a slip, and for windows too thin for
// sla.min_requests (docs/plans.md, "Validation and warnings"). Each starts with the JSON path of
// the value it concerns. The floors are below what any GPU and serving engine delivers at any
// load, so a bound under one is a bound in seconds written as milliseconds far more often than
// a real target:
// - a first token needs the request's round trip, a scheduler step and a prefill: 20 ms;
// - an output token is one decode step, which reads every weight of the model once (an 8B model
//   in BF16 is 16 GB: 4.8 ms at an H100's 3.35 TB/s), plus the engine's per-step work: 2 ms;
// - a whole request is at least its first token and its last: 50 ms.
constexpr double kTtftFloorMs = 20;
constexpr double kTpotFloorMs = 2;
constexpr double kE2eFloorMs = 50;
// An SLA that passes with half the requests failed qualifies nothing; `1` (meant 1 %) is 100 %.
constexpr double kErrorRateCeiling = 0.5;
// A demand above this many requests/s is more often a count per hour or per day written in the
// per-minute key than a real one; and one that needs more instances than this at the highest
// rate the plan tries is more often a unit slip than a fleet.
constexpr double kDemandCeilingRps = 1000;
constexpr double kInstancesCeiling = 1000;
// Rate-sweep rates warned about per phase before one line sums up the rest.
constexpr int kMaxWindowWarningsPerPhase = 5;

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, std::abs(v) >= 100 ? "%.0f" : "%.3g", v);
  return buf;
}

// An `sla` object as written (the plan's or a mix class's), at `path`.
void sla_warnings(const json& sla, const std::string& path, std::vector<std::string>& out) {
  if (!sla.is_object()) return;
  struct Floor {
    const char* key;
    double floor_ms;
    const char* what;
  };
  static constexpr Floor kFloors[] = {{"ttft_ms", kTtftFloorMs, "a TTFT"},
                                      {"ttft_service_ms", kTtftFloorMs, "a TTFT"},
                                      {"tpot_ms", kTpotFloorMs, "a TPOT"},
                                      {"itl_ms", kTpotFloorMs, "an inter-token latency"},
                                      {"e2e_ms", kE2eFloorMs, "an E2E latency"}};
  for (const Floor& f : kFloors) {
    const auto bounds = sla.find(f.key);
    if (bounds == sla.end() || !bounds->is_object()) continue;
    for (const auto& [percentile, limit] : bounds->items()) {
      if (!limit.is_number() || limit.get<double>() >= f.floor_ms) continue;
      const double ms = limit.get<double>();
      out.push_back(path + "/" + f.key + "/" + escape_pointer(percentile) + ": " + number_text(ms) +
                    " ms is below what any GPU delivers (" + f.what + " bound under " +
                    number_text(f.floor_ms) + " ms); bounds are in milliseconds: did you mean " +
                    number_text(ms * 1000) + " (" + number_text(ms) + " s)?");
    }
  }
  const auto rate = sla.find("max_error_rate");
  if (rate != sla.end() && rate->is_number() && rate->get<double>() >= kErrorRateCeiling) {
    const double r = rate->get<double>();
    out.push_back(path + "/max_error_rate: " + number_text(r) + " lets " + number_text(r * 100) +
                  " % of requests fail and still pass; it is a fraction (0.01 = 1 %)" +
                  (r >= 1 ? ": did you mean " + number_text(r / 100) + "?" : ""));
  }
}

// Every `sla` object of the document: the plan's and each mix class's (in the plan's workload,
// the matrix's workloads and the targets' overrides).
void document_sla_warnings(const json& doc, std::vector<std::string>& out) {
  if (doc.contains("sla")) sla_warnings(doc["sla"], "/sla", out);
  const auto mix = [&out](const json& workload, const std::string& path) {
    if (!workload.is_object() || !workload.contains("mix") || !workload["mix"].is_array()) return;
    for (std::size_t i = 0; i < workload["mix"].size(); ++i) {
      const json& c = workload["mix"][i];
      if (c.is_object() && c.contains("sla"))
        sla_warnings(c["sla"], path + "/mix/" + std::to_string(i) + "/sla", out);
    }
  };
  if (doc.contains("workload")) mix(doc["workload"], "/workload");
  for (const char* list : {"workloads", "targets"}) {
    if (!doc.contains(list) || !doc[list].is_array()) continue;
    for (std::size_t i = 0; i < doc[list].size(); ++i) {
      const json& entry = doc[list][i];
      const std::string path = "/" + std::string(list) + "/" + std::to_string(i);
      if (std::string_view(list) == "workloads")
        mix(entry, path);
      else if (entry.is_object() && entry.contains("workload"))
        mix(entry["workload"], path + "/workload");
    }
  }
}

// How the executor sizes a step's window at a rate it knows (docs/plans.md, "Validation and
// warnings").
enum class WindowRule {
  kLengthened,  // rate_sweep and capacity_search: a time-mode window that would hold fewer
                // than min_requests is lengthened, up to max_duration_s
  kFloorOnly,   // the same, for a rate the plan may never try: warned only when even
                // max_duration_s is too short
  kFixed        // at_demand and soak: the window is duration_s (or holds `requests`)
};

// One open-loop step rate of a phase against sla.min_requests: a window too short for it reads
// inconclusive (insufficient-samples), and a lengthened one makes the plan run longer than
// duration_s says. Returns whether it warned.
bool window_warning(const PlanPhase& p, const std::string& path, double rate,
                    std::int64_t min_requests, WindowRule rule, std::vector<std::string>& out) {
  if (!(rate > 0)) return false;
  const auto needed = static_cast<double>(min_requests);
  const std::string rate_text = number_text(rate) + " rps";
  const std::string short_of = " requests < sla.min_requests " + std::to_string(min_requests);
  if (rule == WindowRule::kFixed) {
    // A request-count window holds `requests` (its own warning when below min_requests).
    if (p.requests > 0 || rate * p.duration_s >= needed) return false;
    out.push_back(path + ": the window at " + rate_text + " holds about " +
                  number_text(rate * p.duration_s) + short_of + " (duration_s " +
                  number_text(p.duration_s) +
                  " s); the step reads inconclusive (insufficient-samples): raise duration_s to "
                  "at least " +
                  number_text(std::ceil(needed / rate)) + " s or lower sla.min_requests");
    return true;
  }
  if (rate * p.max_duration_s < needed) {
    out.push_back(path + ": the window at " + rate_text + " holds about " +
                  number_text(rate * p.max_duration_s) + short_of + " even at max_duration_s " +
                  number_text(p.max_duration_s) +
                  " s; steps at that rate read inconclusive (insufficient-samples): lower "
                  "sla.min_requests or try higher rates");
    return true;
  }
  if (rule == WindowRule::kLengthened && p.requests == 0 && rate * p.duration_s < needed) {
    // What the executor lengthens the window to (analysis/sample_window.h).
    const double lengthened_s =
        std::min(analysis::window_for_min_requests_s(rate, min_requests), p.max_duration_s);
    out.push_back(path + ": steps at " + rate_text + " will be lengthened to about " +
                  number_text(lengthened_s) + " s to hold sla.min_requests " +
                  std::to_string(min_requests) + " (duration_s " + number_text(p.duration_s) +
                  " s holds about " + number_text(rate * p.duration_s) + ")");
    return true;
  }
  return false;
}

// Every phase's open-loop rates that the plan states: a rate sweep's rates, a capacity search's
// numeric start_from and low_rps (else its floor, which it reaches only if every rate above
// fails), an at_demand's rate and a soak's rate.
void phase_window_warnings(const TestPlan& plan, std::int64_t min_requests,
                           std::vector<std::string>& out) {
  for (std::size_t i = 0; i < plan.phases.size(); ++i) {
    const PlanPhase& p = plan.phases[i];
    const std::string path = "/phases/" + std::to_string(i);
    switch (p.kind) {
      case PhaseKind::kRateSweep: {
        int warned = 0, more = 0;
        for (std::size_t k = 0; k < p.rates_rps.size(); ++k) {
          std::vector<std::string> one;
          if (!window_warning(p, path + "/rates_rps/" + std::to_string(k), p.rates_rps[k],
                              min_requests, WindowRule::kLengthened, one))
            continue;
          if (warned++ < kMaxWindowWarningsPerPhase)
            out.push_back(one.front());
          else
            ++more;
        }
        if (more > 0)
          out.push_back(path + "/rates_rps: and " + std::to_string(more) +
                        " more rates whose windows are short of sla.min_requests");
        break;
      }
      case PhaseKind::kCapacitySearch:
        if (p.start_rps > 0)
          window_warning(p, path + "/start_from", p.start_rps, min_requests,
                         WindowRule::kLengthened, out);
        if (p.low_rps > 0) {
          window_warning(p, path + "/low_rps", p.low_rps, min_requests, WindowRule::kLengthened,
                         out);
        } else {
          const double floor_rps = analysis::CapacitySearchOptions{}.min_rate_rps;
          std::vector<std::string> one;
          if (window_warning(p, path, floor_rps, min_requests, WindowRule::kFloorOnly, one))
            out.push_back(one.front() + " (" + number_text(floor_rps) +
                          " rps is the search's lowest rate without low_rps)");
        }
        break;
      case PhaseKind::kAtDemand:
        window_warning(
            p, path + (p.at_demand.source == "demand" ? std::string() : "/" + p.at_demand.source),
            p.at_demand.rate_rps, min_requests, WindowRule::kFixed, out);
        break;
      case PhaseKind::kSoak:
        if (!p.soak_at_qualified)
          window_warning(p, path + "/rate_rps", p.rate_rps, min_requests, WindowRule::kFixed, out);
        break;
      default: break;
    }
  }
}

// The highest rate any of the plan's open-loop phases may offer (a capacity search without
// high_rps: its ceiling), which bounds the capacity it can qualify; nullopt with none (a
// closed-loop sweep's rate is known only once it runs; a trace replay qualifies no capacity).
std::optional<double> highest_planned_rate(const TestPlan& plan) {
  std::optional<double> highest;
  const auto offer = [&highest](double rate) {
    if (rate > 0) highest = std::max(highest.value_or(0), rate);
  };
  for (const PlanPhase& p : plan.phases) {
    switch (p.kind) {
      case PhaseKind::kRateSweep:
        for (const double r : p.rates_rps) offer(r);
        break;
      case PhaseKind::kCapacitySearch:
        offer(p.high_rps > 0 ? p.high_rps : analysis::CapacitySearchOptions{}.max_rate_rps);
        break;
      case PhaseKind::kBurst: offer(p.base_rps * p.multiplier); break;
      case PhaseKind::kSoak: offer(p.rate_rps); break;
      case PhaseKind::kAtDemand: offer(p.at_demand.rate_rps); break;
      default: break;
    }
  }
  return highest;
}

void demand_warnings(const TestPlan& plan, std::vector<std::string>& out) {
  if (!plan.demand) return;
  const double rpm = plan.demand->requests_per_minute;
  const double rps = rpm / 60;
  const std::string path = "/demand/requests_per_minute: ";
  if (rps > kDemandCeilingRps)
    out.push_back(path + number_text(rpm) + " requests per minute is " + number_text(rps) +
                  " requests/s; the key counts per minute (a count per hour divides by 60, per "
                  "day by 1440)");
  const auto highest = highest_planned_rate(plan);
  if (!highest) return;
  const double instances = std::ceil(rps * (1 + plan.demand->headroom) / *highest);
  if (instances > kInstancesCeiling)
    out.push_back(path + "the demand with its headroom needs at least " + number_text(instances) +
                  " instances even if each carried " + number_text(*highest) +
                  " rps, the highest rate this plan tries; check its unit (requests per minute) "
                  "and the rates' (requests per second)");
}

}  // namespace

std::optional<std::string> nearest_name(std::string_view typed,
                                        const std::vector<std::string>& known) {
  return nearest_known(typed, known, false);
}

int json_nesting_depth(std::string_view text) {
  int depth = 0, max_depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"')
      in_string = true;
    else if (c == '[' || c == '{')
      max_depth = std::max(max_depth, ++depth);
    else if (c == ']' || c == '}')
      --depth;
  }
  return max_depth;
}

json plan_to_json(const TestPlan& plan, bool redact_secrets) {
  json targets = json::array();
  for (const auto& t : plan.targets) {
    json headers = json::object();
    for (const auto& [k, v] : t.headers)
      headers[k] = redact_secrets && sensitive_header(k) ? "***" : v;
    json secrets = json::object();
    for (const auto& [k, v] : t.secrets) secrets[k] = redact_secrets ? "***" : v;
    // Keys whose value is absent or empty are left out, so the normalised plan parses again as
    // it is (the daemon stores it and re-reads it when the job starts).
    json j{{"name", t.name},     {"base_url", t.base_url}, {"api", t.api},
           {"headers", headers}, {"secrets", secrets},     {"currency", t.currency}};
    if (t.price_per_hour) j["price_per_hour"] = *t.price_per_hour;
    if (!t.model.empty()) j["model"] = t.model;
    if (!t.tls_ca_file.empty() || t.tls_insecure) {
      j["tls"] = json::object();
      if (!t.tls_ca_file.empty()) j["tls"]["ca_file"] = t.tls_ca_file;
      if (t.tls_insecure) j["tls"]["insecure"] = true;
    }
    if (json hw = json::parse(t.hardware_json, nullptr, false); hw.is_object() && !hw.empty())
      j["hardware"] = std::move(hw);
    if (!t.metrics_url.empty()) j["metrics_url"] = t.metrics_url;
    if (t.base_url.rfind("sim://", 0) == 0) {
      if (json sim = json::parse(t.sim_json, nullptr, false); sim.is_object() && !sim.empty())
        j["sim"] = std::move(sim);
    }
    if (t.workload) j["workload"] = workload_json(*t.workload);
    targets.push_back(std::move(j));
  }
  json bounds = json::object();
  for (const auto& b : plan.sla.bounds) {
    bounds[b.metric + "_ms"]["p" + analysis::percentile_label(b.percentile)] = b.limit_ms;
  }
  json sla = bounds;
  sla["max_error_rate"] = plan.sla.max_error_rate;
  sla["ttft_from"] = plan.sla.ttft_from;
  sla["window_s"] = plan.sla.window_s;
  if (plan.sla.rate_tolerance) sla["rate_tolerance"] = *plan.sla.rate_tolerance;
  if (plan.sla.max_schedule_lag_p99_ms)
    sla["max_schedule_lag_p99_ms"] = *plan.sla.max_schedule_lag_p99_ms;
  if (plan.sla.min_requests) sla["min_requests"] = *plan.sla.min_requests;
  json phases = json::array();
  for (const auto& p : plan.phases) {
    json j{{"kind", to_string(p.kind)},
           {"name", p.name},
           {"repeat", p.repeat},
           {"warmup_s", p.warmup_s},
           {"drain", to_string(p.drain)}};
    // a burst's length is its windows
    if (p.requests > 0) {
      j["requests"] = p.requests;
      j["max_duration_s"] = p.max_duration_s;
    } else if (p.kind != PhaseKind::kBurst && p.kind != PhaseKind::kTraceReplay) {
      j["duration_s"] = p.duration_s;
    }
    if (p.kind == PhaseKind::kTraceReplay) {
      j["max_in_flight"] = p.max_in_flight;
      j["speeds"] = p.speeds;
    } else if (is_open_loop(p.kind)) {
      j["arrival"] = to_string(p.arrival);
      j["burstiness"] = p.burstiness;
      j["max_in_flight"] = p.max_in_flight;
    }
    if (p.kind == PhaseKind::kConcurrencySweep) j["levels"] = p.levels;
    if (p.kind == PhaseKind::kRateSweep) j["rates_rps"] = p.rates_rps;
    if (p.kind == PhaseKind::kCapacitySearch) {
      j["start_from"] = p.start_from_knee         ? json("knee")
                        : p.start_from_prediction ? json("prediction")
                                                  : json(p.start_rps);
      if (p.low_rps > 0) j["low_rps"] = p.low_rps;
      if (p.high_rps > 0) j["high_rps"] = p.high_rps;
      j["resolution"] = p.resolution;
      j["max_steps"] = p.max_steps;
      j["confirm_duration_s"] = p.confirm_duration_s;
    }
    if (p.kind == PhaseKind::kBurst) {
      j["base_rps"] = p.base_rps;
      j["multiplier"] = p.multiplier;
      j["burst_s"] = p.burst_s;
      j["observe_s"] = p.observe_s;
      j["window_s"] = p.window_s;
    }
    if (p.kind == PhaseKind::kSoak) {
      j["rate_rps"] = p.soak_at_qualified ? json("qualified") : json(p.rate_rps);
      j["window_s"] = p.window_s;
    }
    if (p.kind == PhaseKind::kAtDemand) {
      j["with_headroom"] = p.with_headroom;
      if (p.rate_rps > 0) j["rate_rps"] = p.rate_rps;
      if (p.output_tokens_per_s > 0) j["output_tokens_per_s"] = p.output_tokens_per_s;
    }
    phases.push_back(std::move(j));
  }
  json out{{"version", plan.version},
           {"name", plan.name},
           {"description", plan.description},
           {"seed", plan.seed},
           {"targets", targets},
           {"workload", workload_json(plan.workload)},
           {"timeouts",
            {{"connect_ms", plan.timeouts.connect_ms},
             {"first_token_ms", plan.timeouts.first_token_ms},
             {"idle_ms", plan.timeouts.idle_ms},
             {"total_ms", plan.timeouts.total_ms}}},
           {"sla", sla},
           {"phases", phases}};
  if (!plan.workloads.empty()) {
    json matrix = json::array();
    for (const PlanNamedWorkload& w : plan.workloads) {
      json j = workload_json(w.workload);
      j["name"] = w.name;
      matrix.push_back(std::move(j));
    }
    out["workloads"] = std::move(matrix);
  }
  if (plan.demand) {
    out["demand"] = {{"requests_per_minute", plan.demand->requests_per_minute},
                     {"headroom", plan.demand->headroom},
                     {"hours_per_month", plan.demand->hours_per_month}};
    if (plan.demand->mean_output_tokens > 0)
      out["demand"]["mean_output_tokens"] = plan.demand->mean_output_tokens;
  }
  if (plan.agents) out["agents"] = agents_json(*plan.agents);
  return out;
}

PlanParse parse_plan(std::string_view text, const PlanLimits& limits) {
  PlanParse out;
  auto& errors = out.errors;
  if (text.size() > limits.max_bytes) {
    errors.push_back({"", "plan is larger than " + std::to_string(limits.max_bytes) + " bytes"});
    return out;
  }
  if (json_nesting_depth(text) > limits.max_depth) {
    errors.push_back(
        {"", "JSON nested deeper than " + std::to_string(limits.max_depth) + " levels"});
    return out;
  }
  json doc;
  // Strict: a key given twice in one object is an error, not "last one wins".
  std::vector<std::set<std::string>> keys_seen;
  std::vector<std::string> duplicates;
  const json::parser_callback_t on_event = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start)
      keys_seen.emplace_back();
    else if (event == json::parse_event_t::object_end && !keys_seen.empty())
      keys_seen.pop_back();
    else if (event == json::parse_event_t::key && !keys_seen.empty() &&
             !keys_seen.back().insert(parsed.get<std::string>()).second)
      duplicates.push_back(parsed.get<std::string>());
    return true;
  };
  try {
    doc = json::parse(text, on_event);
  } catch (const json::parse_error& e) {
    out.malformed = true;
    errors.push_back(
        {"", "not valid JSON (byte " + std::to_string(e.byte) + "): " + printable(e.what())});
    return out;
  } catch (const json::exception& e) {
    // e.g. a number too large for a double (1e400)
    out.malformed = true;
    errors.push_back({"", "not valid JSON: " + printable(e.what())});
    return out;
  }
  for (const auto& d : duplicates) errors.push_back({"", "duplicate key '" + printable(d) + "'"});
  if (!errors.empty()) return out;
  return parse_plan_document(doc, limits);
}

PlanParse parse_plan_document(const json& doc, const PlanLimits& limits) {
  PlanParse out;
  auto& errors = out.errors;
  TestPlan plan;
  ObjectReader root(&doc, "", errors);
  if (!root.ok()) return out;
  if (!root.has("version")) {
    root.error("version", "is required (1)");
  } else {
    root.number("version", plan.version, 1, 1, true);
  }
  root.string("name", plan.name, false, 200);
  root.string("description", plan.description, false, 4000);
  root.number("seed", plan.seed, 0, 9e15, true);

  // The workload first: target overrides start from it.
  if (const json* w = root.get("workload"))
    read_workload(w, "/workload", plan.workload, errors, limits);
  if (const json* ws = root.get("workloads"))
    read_workloads(*ws, plan.workload, plan.workloads, errors, limits);
  const json* targets = root.get("targets");
  if (!targets) {
    root.error("targets", "is required (at least one target)");
  } else if (!targets->is_array() || targets->empty()) {
    root.error("targets", "must be a non-empty array");
  } else if (static_cast<int>(targets->size()) > limits.max_targets) {
    root.error("targets", "has more than " + std::to_string(limits.max_targets) + " targets");
  } else {
    std::set<std::string> names;
    for (std::size_t i = 0; i < targets->size(); ++i) {
      PlanTarget t;
      const std::string p = "/targets/" + std::to_string(i);
      read_target((*targets)[i], p, plan.workload, t, errors, limits);
      if (t.workload && !plan.workloads.empty())
        errors.push_back({p + "/workload",
                          "not with workloads: every workload of the matrix runs on every target "
                          "(give shared settings in the plan's workload)"});
      if (!t.name.empty() && !names.insert(t.name).second)
        errors.push_back({p + "/name", "duplicate target name '" + t.name + "'"});
      plan.targets.push_back(std::move(t));
    }
  }
  if (const json* to = root.get("timeouts")) {
    ObjectReader r(to, "/timeouts", errors);
    r.number("connect_ms", plan.timeouts.connect_ms, 1, 600'000, true);
    r.number("first_token_ms", plan.timeouts.first_token_ms, 0, 3'600'000, true);
    r.number("idle_ms", plan.timeouts.idle_ms, 0, 3'600'000, true);
    r.number("total_ms", plan.timeouts.total_ms, 0, 86'400'000, true);
    r.finish();
  }
  if (const json* s = root.get("sla")) read_sla(s, "/sla", plan.sla, errors);

  const json* phases = root.get("phases");
  if (!phases) {
    root.error("phases", "is required (at least one phase)");
  } else if (!phases->is_array() || phases->empty()) {
    root.error("phases", "must be a non-empty array");
  } else if (static_cast<int>(phases->size()) > limits.max_phases) {
    root.error("phases", "has more than " + std::to_string(limits.max_phases) + " phases");
  } else {
    std::set<std::string> names;
    bool sweep_before = false;
    for (std::size_t i = 0; i < phases->size(); ++i) {
      PlanPhase p;
      const std::string path = "/phases/" + std::to_string(i);
      read_phase((*phases)[i], path, p, errors, limits);
      const bool named = (*phases)[i].is_object() && (*phases)[i].contains("name");
      if (!p.name.empty() && named) {
        if (!names.insert(p.name).second)
          errors.push_back({path + "/name", "duplicate phase name '" + p.name + "'"});
      } else if (!p.name.empty()) {
        // Unnamed phases are called after their kind, made unique with -2, -3, ...
        std::string base = p.name;
        for (int n = 2; !names.insert(p.name).second; ++n) p.name = base + "-" + std::to_string(n);
      }
      if (p.kind == PhaseKind::kCapacitySearch && p.start_from_knee && !sweep_before &&
          !(p.low_rps > 0 && p.high_rps > 0))
        errors.push_back({path + "/start_from",
                          "\"knee\" needs an earlier concurrency_sweep phase (or give low_rps "
                          "and high_rps, or a starting rate)"});
      if (p.kind == PhaseKind::kConcurrencySweep) sweep_before = true;
      if ((p.kind == PhaseKind::kCapacitySearch || p.kind == PhaseKind::kBurst ||
           p.kind == PhaseKind::kSoak || p.kind == PhaseKind::kAtDemand) &&
          plan.sla.bounds.empty() && !root.has("sla"))
        errors.push_back({path + "/kind", std::string(to_string(p.kind)) +
                                              " needs an sla with at least one bound"});
      if (p.kind == PhaseKind::kTraceReplay && !plan.workloads.empty())
        errors.push_back({path + "/kind",
                          "trace_replay does not apply to workloads (a matrix "
                          "workload is synthetic)"});
      if (p.kind == PhaseKind::kTraceReplay) {
        // Every target's workload (its override, else the plan's) must carry a trace.
        bool every = !plan.targets.empty() || plan.workload.trace.has_value();
        for (const auto& t : plan.targets)
          every = every && (t.workload ? t.workload->trace : plan.workload.trace).has_value();
        if (!every)
          errors.push_back({path + "/kind",
                            "trace_replay needs a trace: give workload.trace (every target's "
                            "workload must have one)"});
      }
      if (p.requests > 0 || p.kind == PhaseKind::kTraceReplay || p.kind == PhaseKind::kAtDemand) {
        // Conversations: a session's turns are not independent requests, and an open-loop rate
        // starts sessions, so a demand in requests cannot be offered (docs/plans.md).
        if (any_conversation(plan))
          errors.push_back(
              {path + (p.requests > 0 ? "/requests" : "/kind"),
               p.kind == PhaseKind::kAtDemand
                   ? "at_demand does not apply to workload.conversation (its rate starts "
                     "sessions of several turns each, not the demand's requests)"
                   : "does not apply to workload.conversation (give duration_s; sessions "
                     "arrive by rate or are held by concurrency)"});
      }
      if (p.kind == PhaseKind::kSoak && p.soak_at_qualified) {
        bool search_before = false;
        for (const auto& q : plan.phases)
          search_before = search_before || q.kind == PhaseKind::kCapacitySearch;
        if (!search_before)
          errors.push_back({path + "/rate_rps", "\"qualified\" needs an earlier capacity_search"});
      }
      plan.phases.push_back(std::move(p));
    }
  }
  if (root.has("demand") && !plan.workloads.empty())
    errors.push_back({"/demand",
                      "not with workloads: a demand is for one workload (plan it with "
                      "that workload alone)"});
  if (root.has("demand") && any_conversation(plan))
    errors.push_back({"/demand",
                      "not with workload.conversation: a demand counts requests, a "
                      "conversation's rates start sessions of several turns (plan its capacity "
                      "without a demand)"});
  if (const json* d = root.get("demand")) {
    PlanDemand dm;
    ObjectReader r(d, "/demand", errors);
    r.number("requests_per_minute", dm.requests_per_minute, 0.001, 1e9, false, true);
    r.number("mean_output_tokens", dm.mean_output_tokens, 1, 1e6);
    r.number("headroom", dm.headroom, 0, 10);
    r.number("hours_per_month", dm.hours_per_month, 1, 744);
    r.finish();
    // A dataset's output lengths are known only once it runs: 0 stays, and the executor takes
    // the measured mean (docs/plans.md, demand).
    if (dm.mean_output_tokens == 0 && plan.workload.dataset_path.empty() && !plan.workload.trace)
      dm.mean_output_tokens = plan.workload.planned_output_mean();
    plan.demand = dm;
  }
  for (std::size_t i = 0; i < plan.phases.size(); ++i) {
    if (plan.phases[i].kind == PhaseKind::kAtDemand)
      resolve_at_demand(plan, plan.phases[i], "/phases/" + std::to_string(i), errors, limits);
  }
  if (const json* a = root.get("agents")) {
    PlanAgents agents;
    const auto before = errors.size();
    read_agents(a, "/agents", agents, errors, limits);
    if (errors.size() == before) plan.agents = std::move(agents);
  }
  if (plan.agents) refuse_unsplit_workload_features(plan, errors);
  // Shards count their own requests: a closed-loop request-count window cannot be split. Nor
  // can a trace: every shard would replay all of it.
  for (std::size_t i = 0; plan.agents && i < plan.phases.size(); ++i) {
    if (plan.phases[i].kind == PhaseKind::kTraceReplay)
      errors.push_back({"/phases/" + std::to_string(i) + "/kind",
                        "a trace_replay cannot be split over agents (remove agents, or replay the "
                        "trace from one agent)"});
    if (plan.phases[i].kind == PhaseKind::kConcurrencySweep && plan.phases[i].requests > 0)
      errors.push_back({"/phases/" + std::to_string(i) + "/requests",
                        "a concurrency_sweep with agents needs duration_s (each shard would end "
                        "its window on its own count)"});
  }
  root.finish();

  // Limits over the whole plan.
  // Wall-clock estimate: simulated targets with a time_scale run that many times faster.
  double per_target = 0;
  const double mean_output_tokens = plan.workload.planned_output_mean();
  const double trace_s = plan.workload.trace ? plan.workload.trace->duration_s : 0;
  const auto min_requests_for_estimate =
      plan.sla.min_requests.value_or(static_cast<std::int64_t>(analysis::SlaSpec{}.min_requests));
  for (const auto& p : plan.phases)
    per_target += phase_duration_s(p, mean_output_tokens, trace_s, min_requests_for_estimate);
  double duration = plan.targets.empty() ? per_target : 0;
  for (const auto& t : plan.targets) {
    double scale = 1;
    if (const auto sim = json::parse(t.sim_json, nullptr, false);
        sim.is_object() && sim.contains("time_scale") && sim["time_scale"].is_number() &&
        sim["time_scale"].get<double>() > 0)
      scale = sim["time_scale"].get<double>();
    duration += per_target / scale;
  }
  // A workload matrix runs every phase once per workload.
  duration *= static_cast<double>(std::max<std::size_t>(1, plan.workloads.size()));
  if (errors.empty() && duration > limits.max_duration_s) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "estimated duration %.0f s exceeds the limit of %.0f s",
                  duration, limits.max_duration_s);
    errors.push_back({"/phases", buf});
  }
  if (!errors.empty()) {
    cap_errors(errors);
    return out;
  }

  const auto min_requests =
      plan.sla.min_requests.value_or(static_cast<std::int64_t>(analysis::SlaSpec{}.min_requests));
  for (const auto& p : plan.phases) {
    if (p.kind == PhaseKind::kTraceReplay) {
      if (trace_s <= 0)
        out.warnings.push_back("phase " + p.name +
                               ": estimated_duration_s leaves out the trace replay (its length is "
                               "the trace's; give workload.trace.duration_s to count it)");
      continue;
    }
    if (p.requests > 0) {
      if (p.requests < min_requests)
        out.warnings.push_back("phase " + p.name + ": requests " + std::to_string(p.requests) +
                               " is below sla.min_requests " + std::to_string(min_requests) +
                               ": its steps are judged inconclusive (insufficient-samples)");
      continue;
    }
    if (p.duration_s < 10)
      out.warnings.push_back("phase " + p.name + ": steps of " + std::to_string(int(p.duration_s)) +
                             " s give few samples for tail percentiles");
  }
  document_sla_warnings(doc, out.warnings);
  phase_window_warnings(plan, min_requests, out.warnings);
  demand_warnings(plan, out.warnings);
  out.estimated_duration_s = duration;
  // Fingerprint: what must be equal for two runs to be comparable (docs/metrics.md §8.1).
  json fp{{"workload", workload_json(plan.workload)}};
  for (const PlanNamedWorkload& w : plan.workloads)
    fp["workloads"].push_back(json{{"name", w.name}, {"workload", workload_json(w.workload)}});
  std::set<std::string> models, precisions;
  bool overridden = false;
  for (const auto& t : plan.targets) {
    std::string m = t.model;
    if (m.empty() && t.base_url.rfind("sim://", 0) == 0)
      m = t.base_url.substr(t.base_url.rfind('/') + 1);
    models.insert(m);
    precisions.insert(t.precision);
    if (t.workload) {
      fp["overrides"][t.name] = workload_json(*t.workload);
      overridden = true;
    }
  }
  fp["models"] = models;
  fp["precisions"] = precisions;
  // "Same-config" needs the same workload, model and precision on every target
  // (docs/metrics.md §8.1); known-different models or precisions (an unknown one, "", proves
  // nothing) make the comparison per-target optimised just like a workload override.
  auto known = [](const std::set<std::string>& s) {
    return std::count_if(s.begin(), s.end(), [](const std::string& x) { return !x.empty(); });
  };
  const bool mixed_models = known(models) > 1, mixed_precisions = known(precisions) > 1;
  out.per_target_optimised = overridden || mixed_models || mixed_precisions;
  if (mixed_models || mixed_precisions)
    out.warnings.push_back(
        std::string("targets differ in ") +
        (mixed_models ? (mixed_precisions ? "model and precision" : "model") : "precision") +
        ": results are labelled per-target optimised, not same-config");
  std::set<std::string> currencies;
  for (const auto& t : plan.targets)
    if (t.price_per_hour) currencies.insert(t.currency);
  if (currencies.size() > 1)
    out.warnings.push_back(
        "targets are priced in different currencies: costs are shown in each one, but no price "
        "ratio is computed and no target is named cheapest");
  out.fingerprint = analysis::fnv1a_64_hex(fp.dump());
  out.normalized = plan_to_json(plan, true);
  out.plan = std::move(plan);
  return out;
}

}  // namespace llmcap::api

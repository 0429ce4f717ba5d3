#include "server/cli/adhoc_plan.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>

namespace llmcap::server {

using nlohmann::ordered_json;

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split_commas(std::string_view text) {
  std::vector<std::string_view> items;
  for (std::size_t at = 0; at <= text.size();) {
    const auto comma = std::min(text.find(',', at), text.size());
    if (const auto item = trim(text.substr(at, comma - at)); !item.empty()) items.push_back(item);
    at = comma + 1;
  }
  return items;
}

std::optional<double> parse_number(std::string_view text) {
  const std::string s(trim(text));
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const double d = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(d)) return std::nullopt;
  return d;
}

std::optional<std::int64_t> parse_integer(std::string_view text) {
  text = trim(text);
  std::int64_t v = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return v;
}

// A time with an optional unit (ms, s, m or min, h); `bare_unit_ms` is what a bare number means.
// In milliseconds.
std::optional<double> parse_time_ms(std::string_view text, double bare_unit_ms) {
  text = trim(text);
  struct Unit {
    std::string_view suffix;
    double ms;
  };
  // Longer suffixes first: "ms" before "s", "min" before "m".
  static constexpr Unit kUnits[] = {
      {"ms", 1}, {"min", 60'000}, {"s", 1000}, {"m", 60'000}, {"h", 3'600'000}};
  for (const Unit& u : kUnits) {
    if (text.size() > u.suffix.size() && text.ends_with(u.suffix)) {
      const auto n = parse_number(text.substr(0, text.size() - u.suffix.size()));
      return n ? std::optional<double>(*n * u.ms) : std::nullopt;
    }
  }
  const auto n = parse_number(text);
  return n ? std::optional<double>(*n * bare_unit_ms) : std::nullopt;
}

// A whole number as a JSON integer (1000, not 1000.0), so a printed plan reads as written.
ordered_json number_json(double v) {
  if (std::abs(v) < 9e15 && v == std::floor(v)) return static_cast<std::int64_t>(v);
  return v;
}

// Whether `text` is a percentile number: digits with at most one '.', e.g. 95, 99.9.
bool percentile_text(std::string_view text) {
  if (text.empty() || text.front() == '.' || text.back() == '.') return false;
  int dots = 0;
  for (const char c : text) {
    if (c == '.')
      ++dots;
    else if (!std::isdigit(static_cast<unsigned char>(c)))
      return false;
  }
  const double p = std::strtod(std::string(text).c_str(), nullptr);
  return dots <= 1 && p > 0 && p < 100;
}

// The flags as a command line would give them (" --base-url URL --concurrency 1,8"), for the
// plan's description.
std::string command_text(const AdhocFlags& f) {
  std::string out;
  auto add = [&out](std::string_view flag, const std::string& value) {
    if (value.empty()) return;
    out += " --";
    out += flag;
    const bool quote = value.find_first_of(" \t'\"$\\") != std::string::npos;
    out += quote ? " '" + value + "'" : " " + value;
  };
  add("base-url", f.base_url);
  add("name", f.name);
  add("model", f.model);
  add("api", f.api);
  add("input-tokens", f.input_tokens);
  add("output-tokens", f.output_tokens);
  add("dataset", f.dataset);
  add("concurrency", f.concurrency);
  add("request-rate", f.request_rate);
  if (f.search) out += " --search";
  add("num-prompts", f.num_prompts);
  add("duration", f.duration);
  add("warmup", f.warmup);
  add("sla", f.sla);
  add("price", f.price);
  add("currency", f.currency);
  add("seed", f.seed);
  if (out.size() > 3900) out = out.substr(0, 3900) + " ...";  // the plan's description limit
  return out;
}

}  // namespace

void bind_adhoc_flags(Settings& s, AdhocFlags& f) {
  s.add("base_url",
        "ad hoc (no PLAN.json): the server to test, http(s)://host:port or "
        "sim://<hardware>/<model> (targets[0].base_url)",
        &f.base_url);
  s.add("name", "ad hoc: the target's name (default: host-port of --base-url)", &f.name);
  s.add("model", "ad hoc: model name the requests carry (default: asked of GET /v1/models)",
        &f.model);
  s.add("api", "ad hoc: completions or chat (/v1/completions or /v1/chat/completions)", &f.api);
  s.add("input_tokens", "ad hoc: prompt length in tokens (plan default 1024)", &f.input_tokens);
  s.add("output_tokens", "ad hoc: output length in tokens, sent as max_tokens (plan default 256)",
        &f.output_tokens);
  s.add("dataset",
        "ad hoc: prompts from this file (JSONL prompts/messages, OpenAI batch or ShareGPT) "
        "instead of synthetic ones",
        &f.dataset);
  s.add("concurrency",
        "ad hoc: a closed-loop concurrency sweep at these levels, e.g. 1,4,16 (requests in "
        "flight)",
        &f.concurrency);
  s.add("request_rate",
        "ad hoc: an open-loop rate sweep at these rates in requests/s, e.g. 2 or 1,2,4; "
        "'search' = --search",
        &f.request_rate);
  s.add("search",
        "ad hoc: a capacity search for the highest rate that holds --sla (from the "
        "--concurrency sweep's knee, else from 1 request/s)",
        &f.search);
  s.add("num_prompts", "ad hoc: requests in each step's window (instead of --duration)",
        &f.num_prompts);
  s.add("duration", "ad hoc: each step's window, e.g. 60, 60s, 2m (plan default 30 s)",
        &f.duration);
  s.add("warmup", "ad hoc: warm-up before each window, e.g. 5s (plan default 5 s)", &f.warmup);
  s.add("sla",
        "ad hoc: bounds a step must hold, e.g. ttft_p95=1000ms,tpot_p95=35ms,e2e_p99=5s,"
        "error_rate=1% (metrics ttft, ttft_service, tpot, itl, e2e; any pN; min_requests=N)",
        &f.sla);
  s.add("price", "ad hoc: the target's price per hour, for cost per million output tokens",
        &f.price);
  s.add("currency", "ad hoc: ISO 4217 code of --price (plan default USD)", &f.currency);
  s.add("seed", "ad hoc: seed of prompts and arrivals (plan default 42)", &f.seed);
}

std::vector<std::string> given_adhoc_flags(const AdhocFlags& f) {
  std::vector<std::string> given;
  const std::pair<const char*, const std::string*> text_flags[] = {
      {"--base-url", &f.base_url},
      {"--name", &f.name},
      {"--model", &f.model},
      {"--api", &f.api},
      {"--input-tokens", &f.input_tokens},
      {"--output-tokens", &f.output_tokens},
      {"--dataset", &f.dataset},
      {"--concurrency", &f.concurrency},
      {"--request-rate", &f.request_rate},
      {"--num-prompts", &f.num_prompts},
      {"--duration", &f.duration},
      {"--warmup", &f.warmup},
      {"--sla", &f.sla},
      {"--price", &f.price},
      {"--currency", &f.currency},
      {"--seed", &f.seed}};
  for (const auto& [flag, value] : text_flags) {
    if (!value->empty()) given.emplace_back(flag);
    if (std::string_view(flag) == "--request-rate" && f.search) given.emplace_back("--search");
  }
  return given;
}

std::vector<std::string> parse_sla_flag(std::string_view text, ordered_json& sla) {
  std::vector<std::string> errors;
  if (!sla.is_object()) sla = ordered_json::object();
  const auto entries = split_commas(text);
  if (entries.empty()) errors.push_back("--sla: no bounds given (e.g. --sla ttft_p95=1000ms)");
  static const std::vector<std::string> kMetrics = {"ttft", "ttft_service", "tpot", "itl", "e2e"};
  for (const std::string_view entry : entries) {
    const std::string quoted = "--sla: '" + std::string(entry) + "': ";
    const auto eq = entry.find('=');
    if (eq == std::string_view::npos) {
      errors.push_back(quoted + "expected NAME=VALUE, e.g. ttft_p95=1000ms or error_rate=1%");
      continue;
    }
    std::string key(trim(entry.substr(0, eq)));
    for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const std::string_view value = trim(entry.substr(eq + 1));
    if (key == "error_rate" || key == "max_error_rate") {
      std::optional<double> rate;
      if (value.ends_with('%')) {
        rate = parse_number(value.substr(0, value.size() - 1));
        if (rate) *rate /= 100;
      } else {
        rate = parse_number(value);
      }
      if (!rate || *rate < 0 || *rate > 1) {
        errors.push_back(quoted + "'" + std::string(value) +
                         "' is not an error rate: a percentage (1%) or a fraction 0..1 (0.01)");
        continue;
      }
      sla["max_error_rate"] = number_json(*rate);
      continue;
    }
    if (key == "min_requests") {
      const auto n = parse_integer(value);
      if (!n || *n < 1) {
        errors.push_back(quoted + "'" + std::string(value) + "' is not a whole number ≥ 1");
        continue;
      }
      sla["min_requests"] = *n;
      continue;
    }
    const auto at = key.rfind("_p");
    const std::string metric = at == std::string::npos ? key : key.substr(0, at);
    const std::string pct = at == std::string::npos ? "" : key.substr(at + 2);
    bool known_metric = false;
    for (const auto& m : kMetrics) known_metric = known_metric || m == metric;
    if (!known_metric || at == std::string::npos) {
      errors.push_back(quoted + "unknown bound '" + key +
                       "': use METRIC_pN (METRIC one of ttft, ttft_service, tpot, itl, e2e; N a "
                       "percentile, e.g. ttft_p95, e2e_p99.9), error_rate or min_requests" +
                       did_you_mean(key, {"ttft_p95", "ttft_service_p95", "tpot_p95", "itl_p95",
                                          "e2e_p95", "error_rate", "min_requests"}));
      continue;
    }
    if (!percentile_text(pct)) {
      errors.push_back(quoted + "'p" + pct +
                       "' is not a percentile: use pN with 0 < N < 100, e.g. p50, p95, p99.9");
      continue;
    }
    const auto ms = parse_time_ms(value, 1);
    if (!ms || *ms <= 0) {
      errors.push_back(quoted + "'" + std::string(value) +
                       "' is not a time: a positive number of ms, or with a unit (800ms, 1.5s)");
      continue;
    }
    ordered_json& bounds = sla[metric + "_ms"];
    if (bounds.contains("p" + pct)) {
      errors.push_back(quoted + "given twice");
      continue;
    }
    bounds["p" + pct] = number_json(*ms);
  }
  return errors;
}

std::string target_name_from_url(std::string_view url) {
  const auto scheme_end = url.find("://");
  std::string_view rest = scheme_end == std::string_view::npos ? url : url.substr(scheme_end + 3);
  rest = rest.substr(0, rest.find_first_of("/?#"));
  if (const auto at = rest.rfind('@'); at != std::string_view::npos) rest.remove_prefix(at + 1);
  std::string name;
  for (const char c : rest) {
    const char lower = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (c == '[' || c == ']') continue;  // an IPv6 literal's brackets
    const bool keep = std::isalnum(static_cast<unsigned char>(lower)) || lower == '_' ||
                      lower == '.' || lower == '-';
    name += keep ? lower : '-';
  }
  if (name.size() > 64) name.resize(64);
  return name.empty() ? "target" : name;
}

std::string flag_for_pointer(const PlanSources& sources, std::string_view pointer) {
  std::string flag;
  std::size_t best = 0;
  bool found = false;
  for (const auto& [source, name] : sources) {
    const bool covers = pointer == source || source.empty() ||
                        (pointer.starts_with(source) && pointer[source.size()] == '/');
    if (covers && (!found || source.size() >= best)) {
      flag = name;
      best = source.size();
      found = true;
    }
  }
  return flag;
}

AdhocPlan build_adhoc_plan(const AdhocFlags& f) {
  AdhocPlan out;
  auto& errors = out.errors;
  auto& sources = out.sources;
  ordered_json plan = {{"version", 1},
                       {"name", "adhoc"},
                       {"description", "ad-hoc plan built from the flags" + command_text(f)}};
  if (!f.seed.empty()) {
    if (const auto seed = parse_integer(f.seed)) {
      plan["seed"] = *seed;
      sources.emplace_back("/seed", "--seed");
    } else {
      errors.push_back("--seed: '" + f.seed + "' is not a whole number");
    }
  }

  ordered_json target = ordered_json::object();
  if (f.base_url.empty()) {
    errors.push_back(
        "--base-url is required to build a plan from flags (or give a PLAN.json instead)");
  }
  target["name"] = f.name.empty() ? target_name_from_url(f.base_url) : f.name;
  sources.emplace_back("/targets/0/name", f.name.empty() ? "--base-url" : "--name");
  target["base_url"] = f.base_url;
  sources.emplace_back("/targets/0/base_url", "--base-url");
  if (!f.api.empty()) {
    target["api"] = f.api;
    sources.emplace_back("/targets/0/api", "--api");
  }
  if (!f.model.empty()) {
    target["model"] = f.model;
    sources.emplace_back("/targets/0/model", "--model");
  }
  if (!f.price.empty()) {
    if (const auto price = parse_number(f.price)) {
      target["price_per_hour"] = number_json(*price);
      sources.emplace_back("/targets/0/price_per_hour", "--price");
    } else {
      errors.push_back("--price: '" + f.price + "' is not a number (a price per hour, e.g. 1.79)");
    }
  }
  if (!f.currency.empty()) {
    target["currency"] = f.currency;
    sources.emplace_back("/targets/0/currency", "--currency");
  }
  plan["targets"] = ordered_json::array({target});

  ordered_json workload = ordered_json::object();
  auto tokens = [&](const std::string& text, const char* flag, const char* key) {
    if (text.empty()) return;
    if (const auto n = parse_integer(text)) {
      workload[key] = *n;
      sources.emplace_back(std::string("/workload/") + key, flag);
    } else {
      errors.push_back(std::string(flag) + ": '" + text +
                       "' is not a whole number of tokens (for a distribution: --set "
                       "workload." +
                       key + "={...}, docs/plans.md)");
    }
  };
  tokens(f.input_tokens, "--input-tokens", "input_tokens");
  tokens(f.output_tokens, "--output-tokens", "output_tokens");
  if (!f.dataset.empty()) {
    if (!f.input_tokens.empty())
      errors.push_back(
          "--input-tokens does not apply with --dataset (the file's prompts are sent)");
    workload["dataset"] = {{"path", f.dataset}};
    sources.emplace_back("/workload/dataset", "--dataset");
  }
  if (!workload.empty()) plan["workload"] = std::move(workload);

  if (!f.sla.empty()) {
    ordered_json sla = ordered_json::object();
    for (auto& e : parse_sla_flag(f.sla, sla)) errors.push_back(std::move(e));
    plan["sla"] = std::move(sla);
    sources.emplace_back("/sla", "--sla");
  }

  // Each step's window and warm-up, the same in every phase.
  ordered_json window = ordered_json::object();
  if (!f.num_prompts.empty() && !f.duration.empty())
    errors.push_back("--num-prompts and --duration: give one (each sets every step's window)");
  if (!f.num_prompts.empty()) {
    if (const auto n = parse_integer(f.num_prompts))
      window["requests"] = *n;
    else
      errors.push_back("--num-prompts: '" + f.num_prompts + "' is not a whole number");
  }
  auto seconds = [&](const std::string& text, const char* flag, const char* key) {
    if (text.empty()) return;
    if (const auto ms = parse_time_ms(text, 1000))
      window[key] = number_json(*ms / 1000);
    else
      errors.push_back(std::string(flag) + ": '" + text +
                       "' is not a time: seconds, or with a unit (90, 90s, 2m)");
  };
  seconds(f.duration, "--duration", "duration_s");
  seconds(f.warmup, "--warmup", "warmup_s");

  ordered_json phases = ordered_json::array();
  auto add_phase = [&](ordered_json phase, const char* flag, const char* list_key) {
    const std::string at = "/phases/" + std::to_string(phases.size());
    sources.emplace_back(at, flag);
    if (list_key) sources.emplace_back(at + "/" + list_key, flag);
    for (const auto& [key, value] : window.items()) {
      phase[key] = value;
      sources.emplace_back(at + "/" + key, key == "requests"     ? "--num-prompts"
                                           : key == "duration_s" ? "--duration"
                                                                 : "--warmup");
    }
    phases.push_back(std::move(phase));
  };
  if (!f.concurrency.empty()) {
    ordered_json levels = ordered_json::array();
    for (const auto item : split_commas(f.concurrency)) {
      if (const auto n = parse_integer(item))
        levels.push_back(*n);
      else
        errors.push_back("--concurrency: '" + std::string(item) +
                         "' is not a whole number (levels, e.g. --concurrency 1,4,16)");
    }
    if (levels.empty() && split_commas(f.concurrency).empty())
      errors.push_back("--concurrency: no levels given (e.g. --concurrency 1,4,16)");
    add_phase({{"kind", "concurrency_sweep"}, {"levels", std::move(levels)}}, "--concurrency",
              "levels");
  }
  bool search = f.search;
  if (!f.request_rate.empty()) {
    const auto items = split_commas(f.request_rate);
    if (items.size() == 1 && items.front() == "search") {
      search = true;
    } else {
      ordered_json rates = ordered_json::array();
      for (const auto item : items) {
        if (const auto r = parse_number(item))
          rates.push_back(number_json(*r));
        else
          errors.push_back("--request-rate: '" + std::string(item) +
                           "' is not a rate in requests/s (e.g. --request-rate 2 or 1,2,4; or "
                           "'search' for a capacity search)");
      }
      if (items.empty())
        errors.push_back("--request-rate: no rates given (e.g. --request-rate 1,2,4)");
      add_phase({{"kind", "rate_sweep"}, {"rates_rps", std::move(rates)}}, "--request-rate",
                "rates_rps");
    }
  }
  if (search) {
    if (f.sla.empty())
      errors.push_back(
          "--search needs --sla (a capacity search finds the highest rate that holds it)");
    // From the knee of the sweep when there is one; else 1 rps, from which the search doubles
    // while steps pass and halves while they fail.
    add_phase({{"kind", "capacity_search"},
               {"start_from", f.concurrency.empty() ? ordered_json(1) : ordered_json("knee")}},
              f.search ? "--search" : "--request-rate", nullptr);
  }
  if (phases.empty()) {
    errors.push_back(
        "no load given: add --concurrency 1,4,16 (closed loop), --request-rate R (open loop) "
        "or --search (capacity search, with --sla)");
  }
  plan["phases"] = std::move(phases);
  if (!errors.empty()) return out;
  out.plan = std::move(plan);
  return out;
}

}  // namespace llmcap::server

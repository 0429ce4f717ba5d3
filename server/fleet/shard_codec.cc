#include "server/fleet/shard_codec.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

namespace llmcap::server {

using nlohmann::json;

namespace {

// An integer field: a JSON integer within T's range, else std::out_of_range (the decoder turns
// it into a clean refusal). nlohmann's get<T>() would convert a float or an out-of-range value
// with undefined behaviour (found by tests/fuzz/shard_upload_fuzz: 1.3e33 read as an int64).
template <class T>
T integer(const json& v) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>);
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<T>::max()))
      throw std::out_of_range("integer out of range");
    return static_cast<T>(u);
  }
  if (v.is_number_integer()) {
    const auto i = v.get<std::int64_t>();
    if constexpr (std::is_unsigned_v<T>) {
      if (i < 0) throw std::out_of_range("negative value for an unsigned field");
      if (static_cast<std::uint64_t>(i) > std::numeric_limits<T>::max())
        throw std::out_of_range("integer out of range");
    } else {
      if (i < std::numeric_limits<T>::min() || i > std::numeric_limits<T>::max())
        throw std::out_of_range("integer out of range");
    }
    return static_cast<T>(i);
  }
  throw std::out_of_range("expected an integer");
}

template <class T>
std::vector<T> integers(const json& v) {
  if (!v.is_array()) throw std::out_of_range("expected an array of integers");
  std::vector<T> out;
  out.reserve(v.size());
  for (const json& x : v) out.push_back(integer<T>(x));
  return out;
}

std::vector<std::pair<std::int64_t, std::int32_t>> in_flight_series(const json& v) {
  if (!v.is_array()) throw std::out_of_range("expected an array of [t_ns, in_flight] pairs");
  std::vector<std::pair<std::int64_t, std::int32_t>> out;
  out.reserve(v.size());
  for (const json& p : v) {
    if (!p.is_array() || p.size() != 2) throw std::out_of_range("expected [t_ns, in_flight]");
    out.emplace_back(integer<std::int64_t>(p[0]), integer<std::int32_t>(p[1]));
  }
  return out;
}

json lengths(const analysis::LengthDistribution& d) {
  return json{{"kind", static_cast<int>(d.kind)},
              {"mean", d.mean},
              {"stddev", d.stddev},
              {"low", d.low},
              {"high", d.high},
              {"values", d.values},
              {"min", d.min_tokens},
              {"max", d.max_tokens}};
}

analysis::LengthDistribution lengths_from(const json& j) {
  analysis::LengthDistribution d;
  d.kind = static_cast<analysis::LengthDistribution::Kind>(integer<int>(j.at("kind")));
  d.mean = j.at("mean").get<double>();
  d.stddev = j.at("stddev").get<double>();
  d.low = integer<std::int32_t>(j.at("low"));
  d.high = integer<std::int32_t>(j.at("high"));
  d.values = integers<std::int32_t>(j.at("values"));
  d.min_tokens = integer<std::int32_t>(j.at("min"));
  d.max_tokens = integer<std::int32_t>(j.at("max"));
  return d;
}

json lag(const agent::LagStats& s) {
  return json::array({s.count, s.mean_ns, s.p50_ns, s.p99_ns, s.max_ns});
}

agent::LagStats lag_from(const json& j) {
  agent::LagStats s;
  s.count = integer<std::uint64_t>(j.at(0));
  s.mean_ns = j.at(1).get<double>();
  s.p50_ns = integer<std::int64_t>(j.at(2));
  s.p99_ns = integer<std::int64_t>(j.at(3));
  s.max_ns = integer<std::int64_t>(j.at(4));
  return s;
}

json sample(const analysis::RequestSample& s) {
  return json::array({s.index,
                      s.t_intended_ns,
                      s.t_send_ns,
                      s.connect_ns,
                      s.tls_ns,
                      s.t_headers_ns,
                      s.t_first_token_ns,
                      s.t_last_token_ns,
                      s.t_end_ns,
                      s.token_events,
                      s.input_tokens,
                      s.output_tokens,
                      s.output_tokens_estimated,
                      s.planned_input_tokens,
                      s.planned_output_tokens,
                      s.max_itl_ns,
                      s.http_status,
                      static_cast<int>(s.error),
                      static_cast<int>(s.finish_reason),
                      s.error_message,
                      s.token_times_ns});
}

analysis::RequestSample sample_from(const json& j) {
  analysis::RequestSample s;
  s.index = integer<std::uint64_t>(j.at(0));
  s.t_intended_ns = integer<std::int64_t>(j.at(1));
  s.t_send_ns = integer<std::int64_t>(j.at(2));
  s.connect_ns = integer<std::int64_t>(j.at(3));
  s.tls_ns = integer<std::int64_t>(j.at(4));
  s.t_headers_ns = integer<std::int64_t>(j.at(5));
  s.t_first_token_ns = integer<std::int64_t>(j.at(6));
  s.t_last_token_ns = integer<std::int64_t>(j.at(7));
  s.t_end_ns = integer<std::int64_t>(j.at(8));
  s.token_events = integer<std::uint32_t>(j.at(9));
  s.input_tokens = integer<std::int32_t>(j.at(10));
  s.output_tokens = integer<std::int32_t>(j.at(11));
  s.output_tokens_estimated = j.at(12).get<bool>();
  s.planned_input_tokens = integer<std::int32_t>(j.at(13));
  s.planned_output_tokens = integer<std::int32_t>(j.at(14));
  s.max_itl_ns = integer<std::int64_t>(j.at(15));
  s.http_status = integer<std::int16_t>(j.at(16));
  const int e = integer<int>(j.at(17));
  if (e < 0 || e >= analysis::kErrorClassCount) throw std::out_of_range("error class");
  s.error = static_cast<analysis::ErrorClass>(e);
  s.finish_reason = static_cast<analysis::FinishReason>(integer<int>(j.at(18)));
  s.error_message = j.at(19).get<std::string>();
  s.token_times_ns = integers<std::int64_t>(j.at(20));
  return s;
}

// An uploaded result is checked whole before anything uses it: every time lies in the step
// (0 ≤ window start ≤ window end ≤ end ≤ kMaxStepNs, samples within end + kTimeSlackNs), series
// are ordered, and the ITL histogram holds no more gaps than the samples' token events. So no
// value in an upload can size the merge's work or memory (issue 24).
constexpr std::int64_t kMaxStepNs = 7LL * 24 * 3600 * 1'000'000'000;  // one week
constexpr std::int64_t kTimeSlackNs = 60'000'000'000;
constexpr std::size_t kMaxSeriesPoints = 10'000'000;

std::string check_step_result(const agent::StepResult& r) {
  // (A step that ended early — a fatal error — has a step end before its planned window end.)
  if (!(0 <= r.window_start_ns && r.window_start_ns <= r.window_end_ns &&
        r.window_end_ns <= kMaxStepNs && 0 <= r.end_ns && r.end_ns <= kMaxStepNs))
    return "window: must be 0 <= start <= end <= one week, and 0 <= step end <= one week (ns)";
  const std::int64_t latest = std::max(r.end_ns, r.window_end_ns) + kTimeSlackNs;
  if (r.in_flight_series.size() > kMaxSeriesPoints)
    return "in_flight_series: more than " + std::to_string(kMaxSeriesPoints) + " points";
  std::int64_t previous = 0;
  for (std::size_t i = 0; i < r.in_flight_series.size(); ++i) {
    const auto& [t, n] = r.in_flight_series[i];
    if (t < previous || t > latest || n < 0)
      return "in_flight_series[" + std::to_string(i) +
             "]: times must be ascending within the step and counts >= 0";
    previous = t;
  }
  std::uint64_t token_events = 0;
  for (std::size_t i = 0; i < r.samples.size(); ++i) {
    const auto& s = r.samples[i];
    const std::string where = "samples[" + std::to_string(i) + "]";
    for (const std::int64_t t : {s.t_intended_ns, s.t_send_ns, s.t_headers_ns, s.t_first_token_ns,
                                 s.t_last_token_ns, s.t_end_ns}) {
      if (t < -1 || t > latest) return where + ": a time outside the step";
    }
    for (const std::int64_t d : {s.connect_ns, s.tls_ns, s.max_itl_ns}) {
      if (d < -1 || d > latest) return where + ": a duration longer than the step";
    }
    if (s.token_times_ns.size() > s.token_events)
      return where + ": more token times than token events";
    for (const std::int64_t t : s.token_times_ns) {
      if (t < 0 || t > latest) return where + ": a token time outside the step";
    }
    token_events += s.token_events;
  }
  std::uint64_t gaps = 0;  // summed bucket by bucket, so huge counts cannot wrap around
  for (const auto& b : r.itl_ns.buckets()) {
    if (b.count > token_events || (gaps += b.count) > token_events)
      return "itl_ns: more gaps than the " + std::to_string(token_events) +
             " token events of the samples";
  }
  return "";
}

std::string check_version(const json& j) {
  if (!j.is_object()) return "must be an object";
  // Compared as JSON values: a huge integer is simply another version (no conversion).
  if (!j.contains("codec") || !j["codec"].is_number_integer() ||
      j["codec"] != json(kShardCodecVersion))
    return "codec: this build speaks shard codec version " + std::to_string(kShardCodecVersion) +
           " (agent and daemon must be the same llmcap version)";
  return "";
}

}  // namespace

json step_spec_to_json(const agent::StepSpec& s) {
  std::vector<json> rate;
  for (const auto& seg : s.load.rate.segments())
    rate.push_back(json::array({seg.start_s, seg.end_s, seg.rate_start, seg.rate_end}));
  return json{{"codec", kShardCodecVersion},
              {"target",
               {{"base_url", s.target.base_url},
                {"api", static_cast<int>(s.target.api)},
                {"model", s.target.model},
                {"headers", s.target.headers},
                {"tls",
                 {{"verify_peer", s.target.tls.verify_peer},
                  {"ca_file", s.target.tls.ca_file},
                  {"server_name", s.target.tls.server_name}}},
                {"address_allowlist", s.target.address_allowlist},
                {"stream", s.target.stream}}},
              {"deadlines", json::array({s.deadlines.connect_ms, s.deadlines.first_token_ms,
                                         s.deadlines.idle_ms, s.deadlines.total_ms})},
              {"workload",
               {{"source", static_cast<int>(s.workload.source)},
                {"input_tokens", lengths(s.workload.input_tokens)},
                {"output_tokens", lengths(s.workload.output_tokens)},
                {"shared_prefix_tokens", s.workload.shared_prefix_tokens},
                {"ignore_eos", s.workload.ignore_eos},
                {"send_min_tokens", s.workload.send_min_tokens},
                {"temperature", s.workload.temperature ? json(*s.workload.temperature) : json()},
                {"extra_body_json", s.workload.extra_body_json},
                {"dataset_path", s.workload.dataset_path},
                {"dataset_order", static_cast<int>(s.workload.dataset_order)},
                {"calibrate", s.workload.calibrate},
                {"default_tokens_per_word", s.workload.default_tokens_per_word}}},
              {"load",
               {{"kind", static_cast<int>(s.load.kind)},
                {"concurrency", s.load.concurrency},
                {"rate", rate},
                {"inter_arrival", static_cast<int>(s.load.inter_arrival)},
                {"burstiness", s.load.burstiness},
                {"in_flight_cap", s.load.in_flight_cap}}},
              {"warmup_s", s.warmup_s},
              {"duration_s", s.duration_s},
              {"drain", static_cast<int>(s.drain)},
              {"drain_timeout_s", s.drain_timeout_s},
              {"seed", s.seed},
              {"content_seed", s.content_seed},
              {"record_token_times", s.record_token_times},
              {"progress_interval_ms", s.progress_interval_ms},
              {"in_flight_sample_ms", s.in_flight_sample_ms}};
}

std::string step_spec_from_json(const json& j, agent::StepSpec& out) {
  if (auto e = check_version(j); !e.empty()) return "spec: " + e;
  try {
    agent::StepSpec s;
    const json& t = j.at("target");
    s.target.base_url = t.at("base_url").get<std::string>();
    s.target.api = static_cast<agent::ApiKind>(integer<int>(t.at("api")));
    s.target.model = t.at("model").get<std::string>();
    s.target.headers = t.at("headers").get<net::HeaderList>();
    s.target.tls.verify_peer = t.at("tls").at("verify_peer").get<bool>();
    s.target.tls.ca_file = t.at("tls").at("ca_file").get<std::string>();
    s.target.tls.server_name = t.at("tls").at("server_name").get<std::string>();
    s.target.address_allowlist = t.at("address_allowlist").get<std::vector<std::string>>();
    s.target.stream = t.at("stream").get<bool>();
    const json& d = j.at("deadlines");
    s.deadlines = {integer<std::int64_t>(d.at(0)), integer<std::int64_t>(d.at(1)),
                   integer<std::int64_t>(d.at(2)), integer<std::int64_t>(d.at(3))};
    const json& w = j.at("workload");
    s.workload.source = static_cast<agent::WorkloadSource>(integer<int>(w.at("source")));
    s.workload.input_tokens = lengths_from(w.at("input_tokens"));
    s.workload.output_tokens = lengths_from(w.at("output_tokens"));
    s.workload.shared_prefix_tokens = integer<std::int32_t>(w.at("shared_prefix_tokens"));
    s.workload.ignore_eos = w.at("ignore_eos").get<bool>();
    s.workload.send_min_tokens = w.at("send_min_tokens").get<bool>();
    if (w.at("temperature").is_null())
      s.workload.temperature.reset();
    else
      s.workload.temperature = w.at("temperature").get<double>();
    s.workload.extra_body_json = w.at("extra_body_json").get<std::string>();
    s.workload.dataset_path = w.at("dataset_path").get<std::string>();
    s.workload.dataset_order =
        static_cast<agent::DatasetOrder>(integer<int>(w.at("dataset_order")));
    s.workload.calibrate = w.at("calibrate").get<bool>();
    s.workload.default_tokens_per_word = w.at("default_tokens_per_word").get<double>();
    const json& l = j.at("load");
    s.load.kind = static_cast<agent::LoadKind>(integer<int>(l.at("kind")));
    s.load.concurrency = integer<std::int32_t>(l.at("concurrency"));
    std::vector<agent::RateProfile::Segment> segs;
    for (const json& seg : l.at("rate"))
      segs.push_back({seg.at(0).get<double>(), seg.at(1).get<double>(), seg.at(2).get<double>(),
                      seg.at(3).get<double>()});
    s.load.rate = agent::RateProfile::from_segments(std::move(segs));
    s.load.inter_arrival = static_cast<agent::InterArrival>(integer<int>(l.at("inter_arrival")));
    s.load.burstiness = l.at("burstiness").get<double>();
    s.load.in_flight_cap = integer<std::int32_t>(l.at("in_flight_cap"));
    s.warmup_s = j.at("warmup_s").get<double>();
    s.duration_s = j.at("duration_s").get<double>();
    s.drain = static_cast<agent::DrainPolicy>(integer<int>(j.at("drain")));
    s.drain_timeout_s = j.at("drain_timeout_s").get<double>();
    s.seed = integer<std::uint64_t>(j.at("seed"));
    if (j.contains("content_seed")) s.content_seed = integer<std::uint64_t>(j.at("content_seed"));
    s.record_token_times = j.at("record_token_times").get<bool>();
    s.progress_interval_ms = integer<std::int64_t>(j.at("progress_interval_ms"));
    s.in_flight_sample_ms = integer<std::int64_t>(j.at("in_flight_sample_ms"));
    out = std::move(s);
  } catch (const json::exception& e) {
    return std::string("spec: malformed: ") + e.what();
  } catch (const std::exception& e) {
    return std::string("spec: invalid: ") + e.what();
  }
  return "";
}

json step_result_to_json(const agent::StepResult& r) {
  json samples = json::array();
  for (const auto& s : r.samples) samples.push_back(sample(s));
  json itl = json::array();
  for (const auto& b : r.itl_ns.buckets()) itl.push_back(json::array({b.index, b.count}));
  const auto& c = r.counts;
  const auto& cal = r.calibration;
  return json{
      {"codec", kShardCodecVersion},
      {"completed", r.completed},
      {"cancelled", r.cancelled},
      {"fatal_error", r.fatal_error},
      {"model", r.model},
      {"samples", samples},
      {"response_ids", r.response_ids},
      {"itl_ns",
       {{"buckets", itl},
        {"sum", r.itl_ns.sum()},
        {"min", r.itl_ns.min()},
        {"max", r.itl_ns.max()},
        {"overflow", r.itl_ns.overflow()}}},
      {"dropped_arrivals", r.dropped_arrivals},
      {"dropped_arrivals_warmup", r.dropped_arrivals_warmup},
      {"in_flight_series", r.in_flight_series},
      {"window", json::array({r.window_start_ns, r.window_end_ns, r.epoch_steady_ns, r.end_ns})},
      {"cpu", json::array({r.cpu.wall_ns, r.cpu.thread_cpu_ns, r.cpu.process_cpu_ns,
                           r.cpu.involuntary_context_switches})},
      {"client_cpu_utilisation", r.client_cpu_utilisation},
      {"schedule_lag", lag(r.schedule_lag)},
      {"dispatch_lag", lag(r.dispatch_lag)},
      {"timer_lag", lag(r.timer_lag)},
      {"calibration",
       {{"method", cal.method},
        {"tokens_per_word_initial", cal.tokens_per_word_initial},
        {"tokens_per_word_final", cal.tokens_per_word_final},
        {"overhead_tokens", cal.overhead_tokens},
        {"note", cal.note},
        {"samples_with_usage", cal.samples_with_usage},
        {"planned_input_mean_tokens", cal.planned_input_mean_tokens},
        {"real_input_mean_tokens", cal.real_input_mean_tokens},
        {"mean_abs_error_tokens", cal.mean_abs_error_tokens}}},
      {"counts", json::array({c.intended, c.sent, c.ok, c.failed, c.cancelled, c.output_tokens,
                              c.output_length_mismatch, c.usage_missing})},
      {"connections_opened", r.connections_opened}};
}

std::string step_result_from_json(const json& j, agent::StepResult& out) {
  if (auto e = check_version(j); !e.empty()) return "result: " + e;
  try {
    agent::StepResult r;
    r.completed = j.at("completed").get<bool>();
    r.cancelled = j.at("cancelled").get<bool>();
    r.fatal_error = j.at("fatal_error").get<std::string>();
    r.model = j.at("model").get<std::string>();
    for (const json& s : j.at("samples")) r.samples.push_back(sample_from(s));
    r.response_ids = j.at("response_ids").get<std::vector<std::string>>();
    if (r.response_ids.size() != r.samples.size())
      return "result: response_ids must be parallel to samples";
    const json& h = j.at("itl_ns");
    std::vector<analysis::LogHistogram::Bucket> buckets;
    for (const json& b : h.at("buckets"))
      buckets.push_back({integer<std::int32_t>(b.at(0)), integer<std::uint64_t>(b.at(1))});
    r.itl_ns = analysis::LogHistogram::from_buckets(
        buckets, h.at("sum").get<double>(), h.at("min").get<double>(), h.at("max").get<double>(),
        integer<std::uint64_t>(h.at("overflow")));
    r.dropped_arrivals = integer<std::uint64_t>(j.at("dropped_arrivals"));
    if (j.contains("dropped_arrivals_warmup"))
      r.dropped_arrivals_warmup = integer<std::uint64_t>(j["dropped_arrivals_warmup"]);
    r.in_flight_series = in_flight_series(j.at("in_flight_series"));
    const json& w = j.at("window");
    r.window_start_ns = integer<std::int64_t>(w.at(0));
    r.window_end_ns = integer<std::int64_t>(w.at(1));
    r.epoch_steady_ns = integer<std::int64_t>(w.at(2));
    r.end_ns = integer<std::int64_t>(w.at(3));
    const json& cpu = j.at("cpu");
    r.cpu = {integer<std::int64_t>(cpu.at(0)), integer<std::int64_t>(cpu.at(1)),
             integer<std::int64_t>(cpu.at(2)), integer<std::int64_t>(cpu.at(3))};
    r.client_cpu_utilisation = j.at("client_cpu_utilisation").get<double>();
    r.schedule_lag = lag_from(j.at("schedule_lag"));
    r.dispatch_lag = lag_from(j.at("dispatch_lag"));
    r.timer_lag = lag_from(j.at("timer_lag"));
    const json& cal = j.at("calibration");
    r.calibration.method = cal.at("method").get<std::string>();
    r.calibration.tokens_per_word_initial = cal.at("tokens_per_word_initial").get<double>();
    r.calibration.tokens_per_word_final = cal.at("tokens_per_word_final").get<double>();
    r.calibration.overhead_tokens = cal.at("overhead_tokens").get<double>();
    r.calibration.note = cal.at("note").get<std::string>();
    r.calibration.samples_with_usage = integer<std::uint64_t>(cal.at("samples_with_usage"));
    r.calibration.planned_input_mean_tokens = cal.at("planned_input_mean_tokens").get<double>();
    r.calibration.real_input_mean_tokens = cal.at("real_input_mean_tokens").get<double>();
    r.calibration.mean_abs_error_tokens = cal.at("mean_abs_error_tokens").get<double>();
    const json& c = j.at("counts");
    r.counts = {integer<std::uint64_t>(c.at(0)), integer<std::uint64_t>(c.at(1)),
                integer<std::uint64_t>(c.at(2)), integer<std::uint64_t>(c.at(3)),
                integer<std::uint64_t>(c.at(4)), integer<std::uint64_t>(c.at(5)),
                integer<std::uint64_t>(c.at(6)), integer<std::uint64_t>(c.at(7))};
    r.connections_opened = integer<std::uint64_t>(j.at("connections_opened"));
    if (auto e = check_step_result(r); !e.empty()) return "result: " + e;
    out = std::move(r);
  } catch (const json::exception& e) {
    return std::string("result: malformed: ") + e.what();
  } catch (const std::exception& e) {
    return std::string("result: invalid: ") + e.what();
  }
  return "";
}

}  // namespace llmcap::server

#include "server/engine/sample_codec.h"

#include <cmath>
#include <cstdio>
#include <string_view>

namespace llmcap::server {

storage::SampleRow to_row(const analysis::RequestSample& s, std::int64_t step_id) {
  storage::SampleRow r;
  r.step_id = step_id;
  r.index = static_cast<std::int64_t>(s.index);
  r.t_intended_ns = s.t_intended_ns;
  r.t_send_ns = s.t_send_ns;
  r.connect_ns = s.connect_ns;
  r.tls_ns = s.tls_ns;
  r.t_headers_ns = s.t_headers_ns;
  r.t_first_token_ns = s.t_first_token_ns;
  r.t_last_token_ns = s.t_last_token_ns;
  r.t_end_ns = s.t_end_ns;
  r.max_itl_ns = s.max_itl_ns;
  r.token_events = s.token_events;
  r.input_tokens = s.input_tokens;
  r.output_tokens = s.output_tokens;
  r.planned_input_tokens = s.planned_input_tokens;
  r.planned_output_tokens = s.planned_output_tokens;
  r.http_status = s.http_status;
  r.error_class = static_cast<std::uint8_t>(s.error);
  r.finish_reason = static_cast<std::uint8_t>(s.finish_reason);
  r.output_tokens_estimated = s.output_tokens_estimated;
  r.error_message = s.error_message;
  r.token_times_ns = s.token_times_ns;
  return r;
}

analysis::RequestSample from_row(const storage::SampleRow& r) {
  analysis::RequestSample s;
  s.index = static_cast<std::uint64_t>(r.index);
  s.t_intended_ns = r.t_intended_ns;
  s.t_send_ns = r.t_send_ns;
  s.connect_ns = r.connect_ns;
  s.tls_ns = r.tls_ns;
  s.t_headers_ns = r.t_headers_ns;
  s.t_first_token_ns = r.t_first_token_ns;
  s.t_last_token_ns = r.t_last_token_ns;
  s.t_end_ns = r.t_end_ns;
  s.max_itl_ns = r.max_itl_ns;
  s.token_events = r.token_events;
  s.input_tokens = r.input_tokens;
  s.output_tokens = r.output_tokens;
  s.planned_input_tokens = r.planned_input_tokens;
  s.planned_output_tokens = r.planned_output_tokens;
  s.http_status = r.http_status;
  s.error = analysis::error_class_from(r.error_class);
  s.finish_reason = analysis::finish_reason_from(r.finish_reason);
  s.output_tokens_estimated = r.output_tokens_estimated;
  s.error_message = r.error_message;
  s.token_times_ns = r.token_times_ns;
  return s;
}

std::optional<storage::IntendedRange> step_window(const storage::StepRecord& step,
                                                  const nlohmann::json& plan) {
  if (!step.summary_json) return std::nullopt;
  const auto summary = nlohmann::json::parse(*step.summary_json, nullptr, false);
  if (!summary.is_object() || !summary.contains("stats") || !summary["stats"].is_object())
    return std::nullopt;
  const auto& stats = summary["stats"];
  if (stats.contains("window_start_ns") && stats["window_start_ns"].is_number_integer() &&
      stats.contains("window_end_ns") && stats["window_end_ns"].is_number_integer()) {
    return storage::IntendedRange{stats["window_start_ns"].get<std::int64_t>(),
                                  stats["window_end_ns"].get<std::int64_t>()};
  }
  // Older steps: the window opened after the phase's warm-up (agent/step_runner.cc) and lasted
  // window_s (rounded to 0.1 ms in the summary).
  if (!stats.contains("window_s") || !stats["window_s"].is_number()) return std::nullopt;
  const auto phases = plan.is_object() ? plan.value("phases", nlohmann::json()) : nlohmann::json();
  if (!phases.is_array() || step.phase_index < 0 ||
      static_cast<std::size_t>(step.phase_index) >= phases.size())
    return std::nullopt;
  const auto& phase = phases[static_cast<std::size_t>(step.phase_index)];
  if (!phase.is_object() || !phase.contains("warmup_s") || !phase["warmup_s"].is_number())
    return std::nullopt;
  const auto start_ns =
      static_cast<std::int64_t>(std::llround(phase["warmup_s"].get<double>() * 1e9));
  const auto length_ns =
      static_cast<std::int64_t>(std::llround(stats["window_s"].get<double>() * 1e9));
  return storage::IntendedRange{start_ns, start_ns + length_ns};
}

SampleStepInfo sample_step_info(const storage::StepRecord& step, const nlohmann::json& plan) {
  return SampleStepInfo{step.seq + 1, step.target, step.phase_name, step_window(step, plan)};
}

std::optional<bool> in_window(const storage::SampleRow& r, const SampleStepInfo& step) {
  if (!step.window) return std::nullopt;
  return r.t_intended_ns >= step.window->start_ns && r.t_intended_ns < step.window->end_ns;
}

namespace {
nlohmann::json ms_or_null(std::optional<double> ns) {
  return ns ? nlohmann::json(*ns / 1e6) : nlohmann::json(nullptr);
}
}  // namespace

nlohmann::json sample_json(const storage::SampleRow& r, const SampleStepInfo& step) {
  // Straight from the row: the derived latencies use the same formulas as RequestSample
  // (analysis/request_sample.h), with no conversion back.
  auto opt = [](std::optional<std::int64_t> v) {
    return v ? std::optional<double>(static_cast<double>(*v)) : std::nullopt;
  };
  const auto belongs = in_window(r, step);
  return nlohmann::json{
      {"id", r.id},
      {"step", step.number},
      {"target", step.target},
      {"phase", step.phase},
      {"in_window", belongs ? nlohmann::json(*belongs) : nlohmann::json(nullptr)},
      {"index", r.index},
      {"t_intended_ns", r.t_intended_ns},
      {"t_send_ns", r.t_send_ns},
      {"connect_ns", r.connect_ns},
      {"tls_ns", r.tls_ns},
      {"t_headers_ns", r.t_headers_ns},
      {"t_first_token_ns", r.t_first_token_ns},
      {"t_last_token_ns", r.t_last_token_ns},
      {"t_end_ns", r.t_end_ns},
      {"token_events", r.token_events},
      {"input_tokens", r.input_tokens},
      {"output_tokens", r.output_tokens},
      {"output_tokens_estimated", r.output_tokens_estimated},
      {"planned_input_tokens", r.planned_input_tokens},
      {"planned_output_tokens", r.planned_output_tokens},
      {"http_status", r.http_status},
      {"error", std::string(analysis::to_string(analysis::error_class_from(r.error_class)))},
      {"error_message", r.error_message},
      {"finish_reason",
       std::string(analysis::to_string(analysis::finish_reason_from(r.finish_reason)))},
      {"ttft_ms", ms_or_null(opt(analysis::ttft_ns_of(r)))},
      {"ttft_service_ms", ms_or_null(opt(analysis::ttft_service_ns_of(r)))},
      {"tpot_ms", ms_or_null(analysis::tpot_ns_of(r))},
      {"e2e_ms", ms_or_null(opt(analysis::e2e_ns_of(r)))},
      {"max_itl_ms",
       r.max_itl_ns >= 0 ? nlohmann::json(r.max_itl_ns / 1e6) : nlohmann::json(nullptr)},
      {"max_itl_ns", r.max_itl_ns},
      {"token_times_ns", r.token_times_ns}};
}

std::string sample_csv_header() {
  return "id,step,index,t_intended_ns,t_send_ns,t_first_token_ns,t_last_token_ns,t_end_ns,"
         "token_events,input_tokens,output_tokens,http_status,error,finish_reason,ttft_ms,"
         "tpot_ms,e2e_ms,connect_ns,tls_ns,t_headers_ns,planned_input_tokens,"
         "planned_output_tokens,output_tokens_estimated,max_itl_ns,error_message,target,phase,"
         "in_window,ttft_service_ms,max_itl_ms\r\n";
}

namespace {
// RFC 4180: a field with a comma, quote or line break is quoted, quotes doubled.
std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}
}  // namespace

std::string sample_csv_line(const storage::SampleRow& r, const SampleStepInfo& step) {
  auto num = [](std::optional<double> v) {
    if (!v) return std::string();
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.3f", *v);
    return std::string(buf);
  };
  auto ms = [&](std::optional<std::int64_t> v) {
    return v ? num(static_cast<double>(*v) / 1e6) : std::string();
  };
  std::string line;
  for (auto v :
       {r.id, step.number, r.index, r.t_intended_ns, r.t_send_ns, r.t_first_token_ns,
        r.t_last_token_ns, r.t_end_ns, static_cast<std::int64_t>(r.token_events),
        static_cast<std::int64_t>(r.input_tokens), static_cast<std::int64_t>(r.output_tokens),
        static_cast<std::int64_t>(r.http_status)}) {
    line += std::to_string(v) + ",";
  }
  const auto tpot = analysis::tpot_ns_of(r);
  line += std::string(analysis::to_string(analysis::error_class_from(r.error_class))) + "," +
          std::string(analysis::to_string(analysis::finish_reason_from(r.finish_reason))) + "," +
          ms(analysis::ttft_ns_of(r)) + "," + (tpot ? num(*tpot / 1e6) : std::string()) + "," +
          ms(analysis::e2e_ns_of(r));
  // Columns added after the first version go at the end, so readers by position keep working.
  for (auto v :
       {r.connect_ns, r.tls_ns, r.t_headers_ns, static_cast<std::int64_t>(r.planned_input_tokens),
        static_cast<std::int64_t>(r.planned_output_tokens)})
    line += "," + std::to_string(v);
  line += std::string(",") + (r.output_tokens_estimated ? "true" : "false") + "," +
          std::to_string(r.max_itl_ns) + "," + csv_field(r.error_message);
  // in_window: empty while the step's window is not known (a running step).
  const auto belongs = in_window(r, step);
  line += "," + csv_field(step.target) + "," + csv_field(step.phase) + "," +
          (belongs ? (*belongs ? "true" : "false") : "");
  // The JSON export's ttft_service_ms and max_itl_ms (empty where it has null).
  line += "," + ms(analysis::ttft_service_ns_of(r)) + "," +
          (r.max_itl_ns >= 0 ? ms(r.max_itl_ns) : std::string()) + "\r\n";
  return line;
}

}  // namespace llmcap::server

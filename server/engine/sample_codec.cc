#include "server/engine/sample_codec.h"

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

namespace {
nlohmann::json ms_or_null(std::optional<double> ns) {
  return ns ? nlohmann::json(*ns / 1e6) : nlohmann::json(nullptr);
}
}  // namespace

nlohmann::json sample_json(const storage::SampleRow& r, std::int64_t step_seq) {
  // Straight from the row: the derived latencies use the same formulas as RequestSample
  // (analysis/request_sample.h), with no conversion back.
  auto opt = [](std::optional<std::int64_t> v) {
    return v ? std::optional<double>(static_cast<double>(*v)) : std::nullopt;
  };
  return nlohmann::json{
      {"id", r.id},
      {"step", step_seq},
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
         "planned_output_tokens,output_tokens_estimated,max_itl_ns,error_message\r\n";
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

std::string sample_csv_line(const storage::SampleRow& r, std::int64_t step_seq) {
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
       {r.id, step_seq, r.index, r.t_intended_ns, r.t_send_ns, r.t_first_token_ns,
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
          std::to_string(r.max_itl_ns) + "," + csv_field(r.error_message) + "\r\n";
  return line;
}

}  // namespace llmcap::server

#include "storage/sample_inserter.h"

#include <cstring>
#include <vector>

namespace llmcap::storage {

const char* const kSampleColumns =
    "id, step_id, idx, t_intended_ns, t_send_ns, connect_ns, tls_ns, t_headers_ns, "
    "t_first_token_ns, t_last_token_ns, t_end_ns, token_events, input_tokens, output_tokens, "
    "output_tokens_estimated, planned_input_tokens, planned_output_tokens, max_itl_ns, "
    "http_status, error_class, finish_reason, error_message, token_times";

namespace {

constexpr std::string_view kInsertSample =
    "INSERT INTO request_samples (step_id, idx, t_intended_ns, t_send_ns, connect_ns, tls_ns, "
    "t_headers_ns, t_first_token_ns, t_last_token_ns, t_end_ns, token_events, input_tokens, "
    "output_tokens, output_tokens_estimated, planned_input_tokens, planned_output_tokens, "
    "max_itl_ns, http_status, error_class, finish_reason, error_message, token_times) "
    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";

constexpr std::string_view kInsertTelemetry =
    "INSERT INTO telemetry_samples (step_id, t_ns, series, labels, value) VALUES (?,?,?,?,?)";

// Token times as little-endian int64s (the byte order is fixed so files move between machines).
std::vector<std::byte> encode_times(const std::vector<std::int64_t>& times) {
  std::vector<std::byte> out(times.size() * 8);
  for (std::size_t i = 0; i < times.size(); ++i) {
    const auto v = static_cast<std::uint64_t>(times[i]);
    for (int b = 0; b < 8; ++b) out[i * 8 + static_cast<std::size_t>(b)] = std::byte(v >> (8 * b));
  }
  return out;
}

std::vector<std::int64_t> decode_times(std::span<const std::byte> bytes) {
  std::vector<std::int64_t> out(bytes.size() / 8);
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::uint64_t v = 0;
    for (int b = 0; b < 8; ++b) {
      v |= static_cast<std::uint64_t>(bytes[i * 8 + static_cast<std::size_t>(b)]) << (8 * b);
    }
    out[i] = static_cast<std::int64_t>(v);
  }
  return out;
}

}  // namespace

Result<SampleInserter> SampleInserter::create(Database& db) {
  Result<Statement> samples = db.prepare(kInsertSample);
  if (!samples.ok()) return samples.status();
  Result<Statement> telemetry = db.prepare(kInsertTelemetry);
  if (!telemetry.ok()) return telemetry.status();
  return SampleInserter(std::move(samples).value(), std::move(telemetry).value());
}

Status SampleInserter::insert(const SampleRow& r) {
  Statement& st = samples_;
  st.reset();
  st.bind(1, r.step_id)
      .bind(2, r.index)
      .bind(3, r.t_intended_ns)
      .bind(4, r.t_send_ns)
      .bind(5, r.connect_ns)
      .bind(6, r.tls_ns)
      .bind(7, r.t_headers_ns)
      .bind(8, r.t_first_token_ns)
      .bind(9, r.t_last_token_ns)
      .bind(10, r.t_end_ns)
      .bind(11, r.token_events)
      .bind(12, r.input_tokens)
      .bind(13, r.output_tokens)
      .bind(14, r.output_tokens_estimated ? 1 : 0)
      .bind(15, r.planned_input_tokens)
      .bind(16, r.planned_output_tokens)
      .bind(17, r.max_itl_ns)
      .bind(18, r.http_status)
      .bind(19, r.error_class)
      .bind(20, r.finish_reason);
  if (r.error_message.empty()) {
    st.bind(21, nullptr);
  } else {
    st.bind(21, std::string_view(r.error_message));
  }
  if (r.token_times_ns.empty()) {
    st.bind(22, nullptr);
  } else {
    const std::vector<std::byte> blob = encode_times(r.token_times_ns);
    st.bind_blob(22, blob);
  }
  return st.run();
}

Status SampleInserter::insert(const TelemetryRow& r) {
  Statement& st = telemetry_;
  st.reset();
  st.bind(1, r.step_id)
      .bind(2, r.t_ns)
      .bind(3, std::string_view(r.series))
      .bind(4, std::string_view(r.labels))
      .bind(5, r.value);
  return st.run();
}

SampleRow read_sample_row(const Statement& st) {
  SampleRow r;
  r.id = st.column_int64(0);
  r.step_id = st.column_int64(1);
  r.index = st.column_int64(2);
  r.t_intended_ns = st.column_int64(3);
  r.t_send_ns = st.column_int64(4);
  r.connect_ns = st.column_int64(5);
  r.tls_ns = st.column_int64(6);
  r.t_headers_ns = st.column_int64(7);
  r.t_first_token_ns = st.column_int64(8);
  r.t_last_token_ns = st.column_int64(9);
  r.t_end_ns = st.column_int64(10);
  r.token_events = static_cast<std::uint32_t>(st.column_int64(11));
  r.input_tokens = static_cast<std::int32_t>(st.column_int64(12));
  r.output_tokens = static_cast<std::int32_t>(st.column_int64(13));
  r.output_tokens_estimated = st.column_int64(14) != 0;
  r.planned_input_tokens = static_cast<std::int32_t>(st.column_int64(15));
  r.planned_output_tokens = static_cast<std::int32_t>(st.column_int64(16));
  r.max_itl_ns = st.column_int64(17);
  r.http_status = static_cast<std::int16_t>(st.column_int64(18));
  r.error_class = static_cast<std::uint8_t>(st.column_int64(19));
  r.finish_reason = static_cast<std::uint8_t>(st.column_int64(20));
  r.error_message = st.column_text(21);
  r.token_times_ns = decode_times(st.column_blob(22));
  return r;
}

}  // namespace llmcap::storage

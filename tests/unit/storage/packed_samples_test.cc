#include "storage/packed_samples.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

namespace llmcap::storage {
namespace {

// A streamed, successful request as the agent records it (step-relative ns).
SampleRow typical(std::int64_t index) {
  SampleRow r;
  r.step_id = 7;
  r.index = index;
  r.t_intended_ns = 1'000'000'000 + index * 200'000;  // 5,000 req/s
  r.t_send_ns = r.t_intended_ns + 41'000;
  r.connect_ns = -1;
  r.tls_ns = -1;
  r.t_headers_ns = r.t_send_ns + 12'345'678;
  r.t_first_token_ns = r.t_headers_ns + 1'234'567;
  r.t_last_token_ns = r.t_first_token_ns + 255 * 21'456'789LL;
  r.t_end_ns = r.t_last_token_ns + 98'765;
  r.max_itl_ns = 48'123'456;
  r.token_events = 256;
  r.input_tokens = 1024;
  r.output_tokens = 256;
  r.planned_input_tokens = 1000;
  r.planned_output_tokens = 256;
  r.http_status = 200;
  r.finish_reason = 2;
  return r;
}

std::vector<SampleRow> round_trip(const std::vector<SampleRow>& rows) {
  PackedSamples p;
  for (const auto& r : rows) p.append(r);
  EXPECT_EQ(p.rows(), rows.size());
  std::vector<SampleRow> out;
  PackedSamples::Reader reader(p);
  SampleRow r;
  while (reader.next(r)) out.push_back(r);
  EXPECT_FALSE(reader.next(r));
  return out;
}

TEST(PackedSamples, TypicalRowsRoundTripInFewerThan64Bytes) {
  std::vector<SampleRow> rows;
  for (int i = 0; i < 1000; ++i) rows.push_back(typical(i));
  rows[10].connect_ns = 250'000;  // a new connection
  PackedSamples p;
  for (const auto& r : rows) p.append(r);
  EXPECT_LE(p.bytes(), 64u * rows.size());
  EXPECT_EQ(round_trip(rows), rows);
}

TEST(PackedSamples, FailedAndOddRowsRoundTripExactly) {
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  constexpr auto kMin = std::numeric_limits<std::int64_t>::min();
  std::vector<SampleRow> rows;
  rows.push_back(SampleRow{});  // all defaults: every stamp -1
  SampleRow failed = typical(3);
  failed.t_first_token_ns = failed.t_last_token_ns = -1;
  failed.error_class = 10;
  failed.finish_reason = 0;
  failed.http_status = 503;
  failed.error_message = std::string("HTTP 503: \0overloaded", 21);
  failed.output_tokens_estimated = true;
  rows.push_back(failed);
  SampleRow odd;
  odd.id = 99;
  odd.step_id = kMax;
  odd.index = kMin;  // index goes backwards and wraps
  odd.t_intended_ns = kMax;
  odd.t_send_ns = kMin;
  odd.t_headers_ns = kMax;
  odd.t_first_token_ns = -2;
  odd.t_last_token_ns = 0;
  odd.t_end_ns = kMin + 1;
  odd.connect_ns = kMax;
  odd.tls_ns = kMin;
  odd.max_itl_ns = -7;
  odd.token_events = std::numeric_limits<std::uint32_t>::max();
  odd.input_tokens = std::numeric_limits<std::int32_t>::min();
  odd.output_tokens = std::numeric_limits<std::int32_t>::max();
  odd.planned_input_tokens = -5;
  odd.planned_output_tokens = 0;
  odd.http_status = -1;
  odd.error_class = 255;
  odd.finish_reason = 200;
  odd.token_times_ns = {kMin, kMax, 0, -1, 5};
  rows.push_back(odd);
  SampleRow with_times = typical(4);
  for (int k = 0; k < 256; ++k)
    with_times.token_times_ns.push_back(with_times.t_first_token_ns + k * 21'456'789LL);
  rows.push_back(with_times);
  rows.push_back(typical(2));  // index and t_intended go back
  EXPECT_EQ(round_trip(rows), rows);
}

TEST(PackedSamples, ReaderFillsEveryFieldOfAReusedRow) {
  SampleRow a = typical(0);
  a.error_message = "x";
  a.token_times_ns = {1, 2, 3};
  const SampleRow b = typical(1);  // no message, no token times
  PackedSamples p;
  p.append(a);
  p.append(b);
  PackedSamples::Reader reader(p);
  SampleRow r;
  ASSERT_TRUE(reader.next(r));
  EXPECT_EQ(r, a);
  ASSERT_TRUE(reader.next(r));
  EXPECT_EQ(r, b);  // the previous row's message and token times do not leak into it
}

}  // namespace
}  // namespace llmcap::storage

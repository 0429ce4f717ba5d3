// Every codec a request sample passes through keeps every field: the storage row
// (server/engine/sample_codec.h), the packed in-memory form (storage/packed_samples.h), the
// shard upload (server/fleet/shard_codec.h), and the export shapes (sample JSON and CSV).
// The sample is filled with a distinct value per field, so a codec that drops or swaps a field
// fails here. A field added to RequestSample or SampleRow trips the size guards below until it
// is added to kFields (and so checked in every codec).
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "agent/step_result.h"
#include "analysis/request_sample.h"
#include "server/engine/sample_codec.h"
#include "server/fleet/shard_codec.h"
#include "storage/packed_samples.h"

namespace llmcap::server {
namespace {

using analysis::ErrorClass;
using analysis::FinishReason;
using analysis::RequestSample;

// Size guards (x86-64, GCC/Clang): a new field changes these. Then add it to distinct_sample(),
// kFields, and every codec.
static_assert(sizeof(RequestSample) == 168, "RequestSample changed: update kFields and codecs");
static_assert(sizeof(storage::SampleRow) == 184, "SampleRow changed: update kFields and codecs");

RequestSample distinct_sample() {
  RequestSample s;
  s.index = 7;
  s.t_intended_ns = 1'001;
  s.t_send_ns = 2'002;
  s.connect_ns = 303;
  s.tls_ns = 404;
  s.t_headers_ns = 5'005;
  s.t_first_token_ns = 6'006;
  s.t_last_token_ns = 9'009;
  s.t_end_ns = 9'510;
  s.token_events = 3;
  s.input_tokens = 11;
  s.output_tokens = 4;
  s.output_tokens_estimated = true;
  s.planned_input_tokens = 12;
  s.planned_output_tokens = 13;
  s.max_itl_ns = 1'717;
  s.http_status = 206;
  s.error = ErrorClass::kTruncated;
  s.finish_reason = FinishReason::kLength;
  s.error_message = "cut \"short\", at byte 42";
  s.token_times_ns = {6'006, 7'292, 9'009};
  return s;
}

// Each field: its name in the exports and its value as text in the distinct sample.
struct Field {
  const char* name;
  std::string text;
};
const std::vector<Field> kFields = {
    {"index", "7"},
    {"t_intended_ns", "1001"},
    {"t_send_ns", "2002"},
    {"connect_ns", "303"},
    {"tls_ns", "404"},
    {"t_headers_ns", "5005"},
    {"t_first_token_ns", "6006"},
    {"t_last_token_ns", "9009"},
    {"t_end_ns", "9510"},
    {"token_events", "3"},
    {"input_tokens", "11"},
    {"output_tokens", "4"},
    {"output_tokens_estimated", "true"},
    {"planned_input_tokens", "12"},
    {"planned_output_tokens", "13"},
    {"max_itl_ns", "1717"},
    {"http_status", "206"},
    {"error", "truncated"},
    {"finish_reason", "length"},
    {"error_message", "cut \"short\", at byte 42"},
    {"token_times_ns", "[6006,7292,9009]"},
};

void expect_same(const RequestSample& a, const RequestSample& b) {
  EXPECT_EQ(a.index, b.index);
  EXPECT_EQ(a.t_intended_ns, b.t_intended_ns);
  EXPECT_EQ(a.t_send_ns, b.t_send_ns);
  EXPECT_EQ(a.connect_ns, b.connect_ns);
  EXPECT_EQ(a.tls_ns, b.tls_ns);
  EXPECT_EQ(a.t_headers_ns, b.t_headers_ns);
  EXPECT_EQ(a.t_first_token_ns, b.t_first_token_ns);
  EXPECT_EQ(a.t_last_token_ns, b.t_last_token_ns);
  EXPECT_EQ(a.t_end_ns, b.t_end_ns);
  EXPECT_EQ(a.token_events, b.token_events);
  EXPECT_EQ(a.input_tokens, b.input_tokens);
  EXPECT_EQ(a.output_tokens, b.output_tokens);
  EXPECT_EQ(a.output_tokens_estimated, b.output_tokens_estimated);
  EXPECT_EQ(a.planned_input_tokens, b.planned_input_tokens);
  EXPECT_EQ(a.planned_output_tokens, b.planned_output_tokens);
  EXPECT_EQ(a.max_itl_ns, b.max_itl_ns);
  EXPECT_EQ(a.http_status, b.http_status);
  EXPECT_EQ(a.error, b.error);
  EXPECT_EQ(a.finish_reason, b.finish_reason);
  EXPECT_EQ(a.error_message, b.error_message);
  EXPECT_EQ(a.token_times_ns, b.token_times_ns);
}

TEST(SampleCodecs, StorageRowRoundTripKeepsEveryField) {
  const auto s = distinct_sample();
  const auto row = to_row(s, 99);
  EXPECT_EQ(row.step_id, 99);
  expect_same(s, from_row(row));
}

TEST(SampleCodecs, PackedRowsKeepEveryField) {
  auto row = to_row(distinct_sample(), 99);
  row.id = 5;
  storage::PackedSamples packed;
  packed.append(row);
  auto second = row;  // a second row, so delta coding of the index and times is exercised
  second.index += 1;
  second.t_intended_ns += 10;
  packed.append(second);
  storage::PackedSamples::Reader reader(packed);
  storage::SampleRow back;
  ASSERT_TRUE(reader.next(back));
  back.id = row.id;  // ids are assigned by the database, not packed
  back.step_id = row.step_id;
  EXPECT_EQ(back, row);
  ASSERT_TRUE(reader.next(back));
  back.id = second.id;
  back.step_id = second.step_id;
  EXPECT_EQ(back, second);
  EXPECT_FALSE(reader.next(back));
}

TEST(SampleCodecs, ShardUploadKeepsEveryField) {
  agent::StepResult r;
  r.window_start_ns = 0;
  r.window_end_ns = 20'000;
  r.end_ns = 20'000;
  r.samples = {distinct_sample()};
  r.response_ids = {"cmpl-1"};
  const auto j = step_result_to_json(r);
  agent::StepResult back;
  ASSERT_EQ(step_result_from_json(nlohmann::json::parse(j.dump()), back), "");
  ASSERT_EQ(back.samples.size(), 1u);
  expect_same(r.samples[0], back.samples[0]);
}

// The step a distinct sample belongs to (printed as [3/M]): its window holds t_intended_ns = 1001.
SampleStepInfo distinct_step() {
  return SampleStepInfo{3, "a100, \"west\"", "sweep", storage::IntendedRange{1'000, 2'000}};
}

TEST(SampleCodecs, SampleJsonExportHasEveryField) {
  auto row = to_row(distinct_sample(), 99);
  row.id = 5;
  const auto j = sample_json(row, distinct_step());
  EXPECT_EQ(j.at("id"), 5);
  EXPECT_EQ(j.at("step"), 3);
  EXPECT_EQ(j.at("target"), "a100, \"west\"");
  EXPECT_EQ(j.at("phase"), "sweep");
  EXPECT_EQ(j.at("in_window"), true);
  for (const auto& f : kFields) {
    ASSERT_TRUE(j.contains(f.name)) << f.name;
    const auto& v = j.at(f.name);
    EXPECT_EQ(v.is_string() ? v.get<std::string>() : v.dump(), f.text) << f.name;
  }
}

// Splits one RFC 4180 CSV line (quoted fields, doubled quotes).
std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        out.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back();
    } else if (c != '\r' && c != '\n') {
      out.back() += c;
    }
  }
  return out;
}

TEST(SampleCodecs, CsvExportHasEveryScalarField) {
  auto row = to_row(distinct_sample(), 99);
  row.id = 5;
  const auto header = split_csv(sample_csv_header());
  const auto values = split_csv(sample_csv_line(row, distinct_step()));
  ASSERT_EQ(header.size(), values.size());
  auto column = [&](const std::string& name) -> std::optional<std::string> {
    for (std::size_t i = 0; i < header.size(); ++i)
      if (header[i] == name) return values[i];
    return std::nullopt;
  };
  EXPECT_EQ(column("id"), "5");
  EXPECT_EQ(column("step"), "3");
  EXPECT_EQ(column("target"), "a100, \"west\"");
  EXPECT_EQ(column("phase"), "sweep");
  EXPECT_EQ(column("in_window"), "true");
  // Columns added later go at the end: readers by position keep working.
  ASSERT_GE(header.size(), 5u);
  EXPECT_EQ(header[header.size() - 5], "target");
  EXPECT_EQ(header[header.size() - 3], "in_window");
  EXPECT_EQ(header[header.size() - 2], "ttft_service_ms");
  EXPECT_EQ(header.back(), "max_itl_ms");
  for (const auto& f : kFields) {
    // Per-token arrival times are a list: the JSON export carries them, CSV has no lists.
    if (std::string(f.name) == "token_times_ns") continue;
    const auto v = column(f.name);
    ASSERT_TRUE(v.has_value()) << f.name << " is not a CSV column";
    EXPECT_EQ(*v, f.text) << f.name;
  }
}

// in_window is the analysis window rule: t_intended in [start, end); unknown without a window.
TEST(SampleCodecs, InWindowFollowsTheStepWindow) {
  auto row = to_row(distinct_sample(), 99);
  auto step = distinct_step();
  row.t_intended_ns = 999;
  EXPECT_EQ(in_window(row, step), false);
  row.t_intended_ns = 1'000;
  EXPECT_EQ(in_window(row, step), true);
  row.t_intended_ns = 1'999;
  EXPECT_EQ(in_window(row, step), true);
  row.t_intended_ns = 2'000;
  EXPECT_EQ(in_window(row, step), false);
  EXPECT_EQ(sample_json(row, step).at("in_window"), false);
  step.window.reset();
  EXPECT_EQ(in_window(row, step), std::nullopt);
  EXPECT_TRUE(sample_json(row, step).at("in_window").is_null());
  const auto csv = split_csv(sample_csv_line(row, step));
  const auto header = split_csv(sample_csv_header());
  ASSERT_EQ(header[csv.size() - 3], "in_window");
  EXPECT_EQ(csv[csv.size() - 3], "");
}

TEST(SampleCodecs, StepWindowFromTheSummaryElseDerivedFromThePlan) {
  storage::StepRecord step;
  step.seq = 4;
  step.target = "t";
  step.phase_name = "search";
  step.phase_index = 1;
  const auto plan = nlohmann::json::parse(R"({"phases":[{"warmup_s":1},{"warmup_s":2.5}]})");
  EXPECT_EQ(step_window(step, plan), std::nullopt);  // running: no summary yet
  step.summary_json = R"({"stats":{"window_s":10,"window_start_ns":2500000123,)"
                      R"("window_end_ns":12500000456}})";
  auto w = step_window(step, plan);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->start_ns, 2'500'000'123);
  EXPECT_EQ(w->end_ns, 12'500'000'456);
  // Stored before the bounds were: the phase's warm-up, then window_s.
  step.summary_json = R"({"stats":{"window_s":7.25}})";
  w = step_window(step, plan);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->start_ns, 2'500'000'000);
  EXPECT_EQ(w->end_ns, 9'750'000'000);
  EXPECT_EQ(step_window(step, nlohmann::json()), std::nullopt);  // no plan to derive from
  const auto info = sample_step_info(step, plan);
  EXPECT_EQ(info.number, 5);  // stored seq 4 is the fifth step, printed [5/M]
  EXPECT_EQ(info.target, "t");
  EXPECT_EQ(info.phase, "search");
}

// The CSV export carries every scalar field of the JSON-lines export under the same name, with
// the same value (derived latencies to 3 decimals of a ms; null is an empty field): issue 40 #6,
// the CSV lacked ttft_service_ms and max_itl_ms.
TEST(SampleCodecs, CsvExportHasEveryJsonLinesField) {
  auto row = to_row(distinct_sample(), 99);
  row.id = 5;
  // Latencies of a realistic size, so 3 decimals tell the derived fields apart.
  row.t_intended_ns = 0;
  row.t_send_ns = 1'500'000;
  row.t_first_token_ns = 250'123'456;
  row.max_itl_ns = 42'424'242;
  const auto j = sample_json(row, distinct_step());
  const auto header = split_csv(sample_csv_header());
  const auto values = split_csv(sample_csv_line(row, distinct_step()));
  ASSERT_EQ(header.size(), values.size());
  std::map<std::string, std::string> csv;
  for (std::size_t i = 0; i < header.size(); ++i) csv[header[i]] = values[i];
  EXPECT_EQ(csv.at("ttft_ms"), "250.123");
  EXPECT_EQ(csv.at("ttft_service_ms"), "248.623");
  EXPECT_EQ(csv.at("max_itl_ms"), "42.424");
  for (const auto& [name, v] : j.items()) {
    if (name == "token_times_ns") continue;  // a list: JSON lines only
    ASSERT_TRUE(csv.count(name)) << name << " is in the JSON-lines export, not in the CSV";
    const std::string& text = csv.at(name);
    if (v.is_null())
      EXPECT_EQ(text, "") << name;
    else if (v.is_number_float())
      EXPECT_NEAR(std::stod(text), v.get<double>(), 0.0005) << name;
    else if (v.is_string())
      EXPECT_EQ(text, v.get<std::string>()) << name;
    else
      EXPECT_EQ(text, v.dump()) << name;
  }
  EXPECT_EQ(header.size(), j.size() - 1) << "a CSV column the JSON-lines export lacks";
  // Without a second token event there is no inter-token gap: null in JSON, empty in CSV.
  row.max_itl_ns = -1;
  EXPECT_TRUE(sample_json(row, distinct_step()).at("max_itl_ms").is_null());
  const auto no_itl = split_csv(sample_csv_line(row, distinct_step()));
  EXPECT_EQ(no_itl.back(), "");
}

// The export numbers steps as `llmcapd run` prints them ("[1/M]" is the job's first step), not
// as they are stored (seq from 0): issue 40 #6.
TEST(SampleCodecs, ExportNumbersStepsFromOneAsPrinted) {
  storage::StepRecord step;
  step.seq = 0;
  step.target = "t";
  step.phase_name = "sweep";
  const auto first = sample_step_info(step, nlohmann::json());
  EXPECT_EQ(first.number, 1);
  auto row = to_row(distinct_sample(), 99);
  EXPECT_EQ(sample_json(row, first).at("step"), 1);
  EXPECT_EQ(split_csv(sample_csv_line(row, first))[1], "1");
  step.seq = 3;
  EXPECT_EQ(sample_json(row, sample_step_info(step, nlohmann::json())).at("step"), 4);
}

}  // namespace
}  // namespace llmcap::server

// Tests of the agent wire format (server/fleet/shard_codec.h): spec and result round trips keep
// every field; a wrong codec version and malformed documents are refused with a reason.
#include "server/fleet/shard_codec.h"

#include <gtest/gtest.h>

namespace llmcap::server {
namespace {

using nlohmann::json;

TEST(ShardCodec, StepSpecRoundTrip) {
  agent::StepSpec s;
  s.target.base_url = "http://127.0.0.1:9000";
  s.target.api = agent::ApiKind::kChat;
  s.target.model = "m";
  s.target.headers = {{"Authorization", "Bearer k"}};
  s.target.tls.verify_peer = false;
  s.target.stream = false;
  s.deadlines.idle_ms = 77;
  s.workload.input_tokens = analysis::LengthDistribution::fixed(100);
  s.workload.output_tokens.kind = analysis::LengthDistribution::Kind::kEmpirical;
  s.workload.output_tokens.values = {3, 5, 8};
  s.workload.temperature.reset();
  s.workload.extra_body_json = R"({"top_p":1})";
  s.load.kind = agent::LoadKind::kOpen;
  s.load.rate = agent::RateProfile::burst(2, 3, 1, 2);
  s.load.inter_arrival = agent::InterArrival::kGamma;
  s.load.burstiness = 0.5;
  s.load.in_flight_cap = 12;
  s.warmup_s = 1.5;
  s.duration_s = 9;
  s.drain = agent::DrainPolicy::kCancel;
  s.seed = 123456789012345ULL;
  s.record_token_times = true;
  s.target.address_allowlist = {"10.0.0.0/8", "gpu-box.internal"};
  agent::StepSpec back;
  ASSERT_EQ(step_spec_from_json(json::parse(step_spec_to_json(s).dump()), back), "");
  EXPECT_EQ(back.target.base_url, s.target.base_url);
  EXPECT_EQ(back.target.api, agent::ApiKind::kChat);
  EXPECT_EQ(back.target.headers, s.target.headers);
  EXPECT_FALSE(back.target.tls.verify_peer);
  EXPECT_EQ(back.target.address_allowlist, s.target.address_allowlist);
  EXPECT_FALSE(back.target.stream);
  EXPECT_EQ(back.deadlines.idle_ms, 77);
  EXPECT_EQ(back.workload.output_tokens.values, (std::vector<std::int32_t>{3, 5, 8}));
  EXPECT_FALSE(back.workload.temperature);
  EXPECT_EQ(back.workload.extra_body_json, s.workload.extra_body_json);
  EXPECT_EQ(back.load.kind, agent::LoadKind::kOpen);
  EXPECT_DOUBLE_EQ(back.load.rate.rate_at(1.5), 6);
  EXPECT_EQ(back.load.inter_arrival, agent::InterArrival::kGamma);
  EXPECT_EQ(back.load.in_flight_cap, 12);
  EXPECT_EQ(back.drain, agent::DrainPolicy::kCancel);
  EXPECT_EQ(back.seed, s.seed);
  EXPECT_TRUE(back.record_token_times);
  EXPECT_TRUE(agent::validate(back).empty());
}

TEST(ShardCodec, StepResultRoundTripKeepsSamplesAndHistogram) {
  agent::StepResult r;
  r.completed = true;
  r.model = "m";
  for (int i = 0; i < 3; ++i) {
    analysis::RequestSample s;
    s.index = static_cast<std::uint64_t>(i);
    s.t_intended_ns = 1000 * i;
    s.t_send_ns = 1000 * i + 5;
    s.t_first_token_ns = 1000 * i + 50;
    s.t_last_token_ns = 1000 * i + 500;
    s.output_tokens = 16;
    s.error = i == 2 ? analysis::ErrorClass::kTimeoutIdle : analysis::ErrorClass::kNone;
    s.error_message = i == 2 ? "idle \"gap\"" : "";
    s.token_times_ns = {1, 2, 3};
    s.token_events = 16;
    r.samples.push_back(s);
    r.response_ids.push_back("cmpl-" + std::to_string(i));
    r.itl_ns.record(1e6 * (i + 1));
  }
  r.in_flight_series = {{0, 1}, {100, 3}};
  r.window_end_ns = 2000;
  r.end_ns = 4000;
  r.dropped_arrivals_warmup = 7;
  r.counts.ok = 2;
  r.counts.failed = 1;
  r.schedule_lag = {3, 5.5, 5, 6, 7};
  r.calibration.method = "tokenize";
  r.cpu.thread_cpu_ns = 42;
  agent::StepResult back;
  ASSERT_EQ(step_result_from_json(json::parse(step_result_to_json(r).dump()), back), "");
  ASSERT_EQ(back.samples.size(), 3u);
  EXPECT_EQ(back.samples[2].error, analysis::ErrorClass::kTimeoutIdle);
  EXPECT_EQ(back.samples[2].error_message, "idle \"gap\"");
  EXPECT_EQ(back.samples[1].t_first_token_ns, 1050);
  EXPECT_EQ(back.samples[0].token_times_ns, (std::vector<std::int64_t>{1, 2, 3}));
  EXPECT_EQ(back.response_ids, r.response_ids);
  EXPECT_EQ(back.itl_ns, r.itl_ns);
  EXPECT_EQ(back.in_flight_series, r.in_flight_series);
  EXPECT_EQ(back.counts.failed, 1u);
  EXPECT_EQ(back.schedule_lag.p99_ns, 6);
  EXPECT_EQ(back.calibration.method, "tokenize");
  EXPECT_EQ(back.cpu.thread_cpu_ns, 42);
  EXPECT_EQ(back.dropped_arrivals_warmup, 7u);
}

TEST(ShardCodec, UploadsWithImpossibleTimesOrCountsAreRefusedNamingTheField) {
  // Issue 24 #1 / issue 23 #13: values that would size the merge's work (a time of 2^62 ns, a
  // window that ends before it starts, an ITL bucket count of 2^62) are refused whole.
  agent::StepResult good;
  good.window_start_ns = 100;
  good.window_end_ns = 1'000'000'000;
  good.end_ns = 1'100'000'000;
  analysis::RequestSample s;
  s.t_intended_ns = 200;
  s.t_send_ns = 210;
  s.t_first_token_ns = 300;
  s.t_last_token_ns = 400;
  s.t_end_ns = 410;
  s.token_events = 5;
  good.samples.push_back(s);
  good.response_ids.push_back("x");
  good.itl_ns.record(1e6);
  good.in_flight_series = {{0, 0}, {100'000'000, 1}};
  agent::StepResult out;
  ASSERT_EQ(step_result_from_json(step_result_to_json(good), out), "");
  auto refused = [&](const agent::StepResult& bad, const std::string& field) {
    const std::string err = step_result_from_json(step_result_to_json(bad), out);
    EXPECT_NE(err.find(field), std::string::npos) << field << ": '" << err << "'";
  };
  agent::StepResult bad = good;
  bad.in_flight_series.push_back({std::int64_t{1} << 62, 3});
  refused(bad, "in_flight_series[2]");
  bad = good;
  bad.in_flight_series = {{5, 1}, {4, 1}};
  refused(bad, "in_flight_series[1]");
  bad = good;
  bad.window_end_ns = 50;  // before the start
  refused(bad, "window");
  bad = good;
  bad.end_ns = std::int64_t{1} << 62;
  refused(bad, "window");
  bad = good;
  bad.window_end_ns = std::int64_t{1} << 62;
  refused(bad, "window");
  bad = good;
  bad.samples[0].t_end_ns = std::int64_t{1} << 62;
  refused(bad, "samples[0]");
  bad = good;
  bad.samples[0].token_times_ns = {1, 2, 3, 4, 5, 6};
  refused(bad, "samples[0]");
  json j = step_result_to_json(good);
  j["itl_ns"]["buckets"] = json::array({json::array({10, std::uint64_t{1} << 62})});
  EXPECT_NE(step_result_from_json(j, out).find("itl_ns"), std::string::npos);
  j["itl_ns"]["buckets"] = json::array(
      {json::array({10, std::uint64_t{1} << 63}), json::array({11, std::uint64_t{1} << 63})});
  EXPECT_NE(step_result_from_json(j, out).find("itl_ns"), std::string::npos);  // no wrap-around
}

TEST(ShardCodec, WrongVersionAndMalformedDocumentsAreRefused) {
  agent::StepResult r;
  json j = step_result_to_json(r);
  j["codec"] = 99;
  agent::StepResult out;
  EXPECT_NE(step_result_from_json(j, out).find("same llmcap version"), std::string::npos);
  j = step_result_to_json(r);
  j.erase("counts");
  EXPECT_NE(step_result_from_json(j, out).find("malformed"), std::string::npos);
  j = step_result_to_json(r);
  j["samples"] = json::array({json::array({1, 2})});
  EXPECT_NE(step_result_from_json(j, out), "");
  agent::StepSpec s;
  EXPECT_NE(step_spec_from_json(json::array(), s), "");
  json spec = step_spec_to_json(agent::StepSpec{});
  spec["load"]["rate"] = "fast";
  EXPECT_NE(step_spec_from_json(spec, s), "");
}

// Found by tests/fuzz/shard_upload_fuzz: a float (or an out-of-range integer) where an integer
// belongs was converted with undefined behaviour; it is refused instead.
TEST(ShardCodec, FloatsAndOutOfRangeIntegersInIntegerFieldsAreRefused) {
  agent::StepResult r;
  r.window_end_ns = 1'000;
  r.end_ns = 1'000;
  agent::StepResult out;
  for (const json& bad : {json(1.27778e+33), json(1.5), json(std::uint64_t{1} << 63)}) {
    json j = step_result_to_json(r);
    j["window"][1] = bad;  // int64
    EXPECT_NE(step_result_from_json(j, out), "") << bad.dump();
    j = step_result_to_json(r);
    j["connections_opened"] = bad.is_number_float() ? bad : json(-1);  // uint64
    EXPECT_NE(step_result_from_json(j, out), "") << bad.dump();
  }
  json j = step_result_to_json(r);
  j["in_flight_series"] = json::array({json::array({0, 1e12})});  // int32 count
  EXPECT_NE(step_result_from_json(j, out), "");
  EXPECT_EQ(step_result_from_json(step_result_to_json(r), out), "");
}

}  // namespace
}  // namespace llmcap::server

// bench_micro: Google Benchmark micro-benchmarks of per-event and per-sample costs not covered
// by bench_agent_sse_decode (issue 10): LogHistogram::record (pooled ITL, docs/metrics.md §3.1),
// the cost of storing a RequestSample (copy into the result vector) against the 64-byte
// CompactSample prototype, and SSE framing of a stream split into small reads. Results:
// bench/RESULTS.md.
#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "agent/sse_parser.h"
#include "analysis/log_histogram.h"
#include "analysis/request_sample.h"
#include "bench/compact_sample.h"
#include "storage/packed_samples.h"

namespace {

using namespace llmcap;

std::vector<double> itl_values(std::size_t n) {
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> d(17.7, 0.5);  // ≈ 50 ms median, in ns
  std::vector<double> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

void BM_LogHistogramRecord(benchmark::State& state) {
  const auto values = itl_values(4096);
  analysis::LogHistogram h;
  std::size_t i = 0;
  for (auto _ : state) {
    h.record(values[i++ & 4095]);
  }
  benchmark::DoNotOptimize(h.count());
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_LogHistogramRecord);

void BM_LogHistogramQuantile(benchmark::State& state) {
  analysis::LogHistogram h;
  for (double v : itl_values(100'000)) h.record(v);
  for (auto _ : state) benchmark::DoNotOptimize(h.quantile(0.99));
}
BENCHMARK(BM_LogHistogramQuantile);

analysis::RequestSample typical_sample(std::uint64_t i) {
  analysis::RequestSample s;
  s.index = i;
  s.t_intended_ns = static_cast<std::int64_t>(i) * 200'000;
  s.t_send_ns = s.t_intended_ns + 15'000;
  s.t_headers_ns = s.t_send_ns + 2'000'000;
  s.t_first_token_ns = s.t_send_ns + 35'000'000;
  s.t_last_token_ns = s.t_first_token_ns + 127 * 20'000'000LL;
  s.t_end_ns = s.t_last_token_ns + 100'000;
  s.token_events = 128;
  s.input_tokens = 256;
  s.output_tokens = 128;
  s.planned_input_tokens = 256;
  s.planned_output_tokens = 128;
  s.max_itl_ns = 31'000'000;
  s.http_status = 200;
  s.finish_reason = analysis::FinishReason::kLength;
  return s;
}

// Storing one finished sample as the agent does today (a RequestSample pushed into the
// StepResult vector; the vector's growth amortised).
void BM_StoreRequestSample(benchmark::State& state) {
  const auto s = typical_sample(7);
  std::vector<analysis::RequestSample> v;
  v.reserve(1 << 16);
  for (auto _ : state) {
    if (v.size() == (1 << 16)) v.clear();
    v.push_back(s);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["bytes_per_sample"] = sizeof(analysis::RequestSample);
}
BENCHMARK(BM_StoreRequestSample);

void BM_StoreCompactSample(benchmark::State& state) {
  const auto s = typical_sample(7);
  std::vector<bench::CompactSample> v;
  v.reserve(1 << 16);
  for (auto _ : state) {
    if (v.size() == (1 << 16)) v.clear();
    v.push_back(bench::CompactSample::from(s));
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["bytes_per_sample"] = sizeof(bench::CompactSample);
}
BENCHMARK(BM_StoreCompactSample);

// The storage queue's encoding (storage::PackedSamples, what SampleWriter holds until SQLite has
// the rows): rows as server/sample_codec's to_row() makes them from typical_sample().
storage::SampleRow typical_row(std::uint64_t i) {
  const auto s = typical_sample(i);
  storage::SampleRow r;
  r.step_id = 3;
  r.index = static_cast<std::int64_t>(s.index);
  r.t_intended_ns = s.t_intended_ns;
  r.t_send_ns = s.t_send_ns;
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
  r.finish_reason = static_cast<std::uint8_t>(s.finish_reason);
  return r;
}

void BM_PackSampleRow(benchmark::State& state) {
  std::vector<storage::SampleRow> rows;
  for (std::uint64_t i = 0; i < 1024; ++i) rows.push_back(typical_row(i));
  storage::PackedSamples p;
  std::size_t n = 0;
  double bytes_per_row = 0;
  for (auto _ : state) {
    if (p.rows() == rows.size()) {
      bytes_per_row = static_cast<double>(p.bytes()) / static_cast<double>(p.rows());
      p = storage::PackedSamples{};
    }
    p.append(rows[n++ % rows.size()]);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["bytes_per_sample"] = bytes_per_row;
}
BENCHMARK(BM_PackSampleRow);

void BM_UnpackSampleRow(benchmark::State& state) {
  storage::PackedSamples p;
  for (std::uint64_t i = 0; i < 1024; ++i) p.append(typical_row(i));
  auto reader = std::make_unique<storage::PackedSamples::Reader>(p);
  storage::SampleRow r;
  for (auto _ : state) {
    if (!reader->next(r)) {
      reader = std::make_unique<storage::PackedSamples::Reader>(p);
      reader->next(r);
    }
    benchmark::DoNotOptimize(r.t_end_ns);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_UnpackSampleRow);

void BM_CompactSampleRoundTrip(benchmark::State& state) {
  const auto s = typical_sample(7);
  for (auto _ : state) {
    const auto c = bench::CompactSample::from(s);
    benchmark::DoNotOptimize(c.to_sample(7));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CompactSampleRoundTrip);

// SSE framing when the kernel hands the stream over in small reads (Arg = bytes per read),
// events ≈ 230 bytes: partial-line carry-over between feeds.
void BM_SseParseSplitReads(benchmark::State& state) {
  const std::string ev =
      R"(data: {"id":"cmpl-7f3a0c","object":"text_completion","created":1733100000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"text":" quick","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null})"
      "\n\n";
  std::string bytes;
  for (int i = 0; i < 64; ++i) bytes += ev;
  const auto step = static_cast<std::size_t>(state.range(0));
  std::vector<agent::SseEvent> out;
  for (auto _ : state) {
    agent::SseParser p;
    out.clear();
    for (std::size_t at = 0; at < bytes.size(); at += step)
      p.feed(std::string_view(bytes).substr(at, step), 1, out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * 64);
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(bytes.size()));
}
BENCHMARK(BM_SseParseSplitReads)->Arg(64)->Arg(1024)->Arg(16384);

}  // namespace

BENCHMARK_MAIN();

// Sample ingest rate through storage::SampleWriter into a temporary file database (WAL,
// synchronous=NORMAL): the rate at which one run can persist per-request samples. Target
// (issue 6): ≥ 200,000 samples/s. Result recorded in bench/RESULTS.md, "Storage ingest".
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>

#include "migrations/migrations.h"
#include "storage/migrator.h"
#include "storage/sample_writer.h"
#include "storage/sqlite_job_store.h"

namespace {

using namespace llmcap::storage;

struct IngestFixture {
  std::filesystem::path dir;
  std::string path;
  std::int64_t step_id = 0;

  IngestFixture() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "llmcap_ingest_XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp");
    dir = pattern;
    path = (dir / "bench.db").string();
    std::vector<Migration> migrations;
    for (const auto& f : llmcap::migrations::all()) {
      migrations.push_back(parse_migration(f.name, f.content).value());
    }
    {
      Database db = Database::open(path).value();
      if (!Migrator(migrations).migrate(db).ok()) throw std::runtime_error("migrate");
    }
    auto store = SqliteJobStore::open(path).value();
    NewJob job;
    job.plan_json = "{}";
    job.workload_fingerprint = "bench";
    job.targets = {{"t", "http://127.0.0.1:1", "{}", std::nullopt}};
    const std::string job_id = store->create_job(job).value().job.id;
    // Aggregate init: assigning short literals field by field trips GCC 12's -Wrestrict false
    // positive at -O2.
    const NewStep step{job_id, 0, "t", 0, "bench", "fixed", 0, "{}", 0};
    step_id = store->begin_step(step).value();
  }
  ~IngestFixture() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
};

// A realistic row: all timings set, 5% errors with a message.
SampleRow make_row(std::int64_t step_id, std::int64_t i) {
  SampleRow r;
  r.step_id = step_id;
  r.index = i;
  r.t_intended_ns = i * 1'000'000;
  r.t_send_ns = r.t_intended_ns + 20'000;
  r.t_headers_ns = r.t_send_ns + 15'000'000;
  r.t_first_token_ns = r.t_send_ns + 40'000'000;
  r.t_last_token_ns = r.t_first_token_ns + 2'000'000'000;
  r.t_end_ns = r.t_last_token_ns + 100'000;
  r.max_itl_ns = 35'000'000;
  r.token_events = 256;
  r.input_tokens = 1024;
  r.output_tokens = 256;
  r.planned_input_tokens = 1024;
  r.planned_output_tokens = 256;
  r.http_status = 200;
  r.finish_reason = 1;
  if (i % 20 == 0) {
    r.http_status = 503;
    r.error_class = 10;
    r.error_message = "HTTP 503: Service Unavailable";
  }
  return r;
}

// Arg 0: rows per transaction. Each iteration enqueues 100k rows in chunks of 1000 (as a
// measurement thread would hand over a batch) and flushes; time is wall time to durable commit.
void BM_SampleWriterIngest(benchmark::State& state) {
  IngestFixture fixture;
  SampleWriterOptions options;
  options.max_rows_per_transaction = static_cast<std::size_t>(state.range(0));
  auto writer = SampleWriter::open(fixture.path, options).value();
  constexpr int kRowsPerIteration = 100'000;
  constexpr int kChunk = 1000;
  std::int64_t next = 0;
  for (auto _ : state) {
    for (int c = 0; c < kRowsPerIteration / kChunk; ++c) {
      state.PauseTiming();
      std::vector<SampleRow> chunk;
      chunk.reserve(kChunk);
      for (int i = 0; i < kChunk; ++i) chunk.push_back(make_row(fixture.step_id, next++));
      state.ResumeTiming();
      if (!writer->enqueue(std::move(chunk))) state.SkipWithError("queue full");
    }
    if (!writer->flush().ok()) state.SkipWithError("flush failed");
  }
  const SampleWriterStats stats = writer->stats();
  state.SetItemsProcessed(state.iterations() * kRowsPerIteration);
  state.counters["avg_batch_ms"] = static_cast<double>(stats.avg_batch_latency_ns) / 1e6;
  state.counters["max_batch_ms"] = static_cast<double>(stats.max_batch_latency_ns) / 1e6;
  state.counters["errors"] = static_cast<double>(stats.errors);
}
BENCHMARK(BM_SampleWriterIngest)
    ->Arg(1000)
    ->Arg(20000)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();

// libFuzzer target: a shard's uploaded step result (server/fleet/shard_codec.h) — what an agent
// POSTs to /v1/jobs/{id}/shards/{shard}/results — decoded and, when accepted, merged with a
// second shard's result as the coordinator does (agent/shard_merge.h). Checks beyond "no crash,
// no sanitizer report, no uncaught exception, no hang": an accepted upload passed every
// bound of check_step_result (so a merge's work is bounded by the upload's size, never by the
// counts in it, issue 23 #13), and it encodes back to a document that decodes to the same
// samples.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string_view>

#include "agent/shard_merge.h"
#include "analysis/step_stats.h"
#include "analysis/verdict.h"
#include "server/fleet/shard_codec.h"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "shard_upload_fuzz: invariant violated: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using nlohmann::json;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded()) return 0;
  llmcap::agent::StepResult upload;
  if (!llmcap::server::step_result_from_json(doc, upload).empty()) return 0;
  check(upload.window_start_ns <= upload.window_end_ns, "accepted a window that ends early");
  std::uint64_t events = 0;
  for (const auto& s : upload.samples) events += s.token_events;
  check(upload.itl_ns.count() <= events, "accepted more ITL gaps than token events");

  // Round trip: what the daemon stores or re-sends decodes to the same samples.
  llmcap::agent::StepResult again;
  check(llmcap::server::step_result_from_json(
            json::parse(llmcap::server::step_result_to_json(upload).dump()), again)
            .empty(),
        "an accepted upload does not decode after encoding");
  check(again.samples.size() == upload.samples.size(), "round trip lost samples");

  // Merge with a second (empty, well-formed) shard as the coordinator does.
  llmcap::agent::StepResult other;
  other.window_start_ns = upload.window_start_ns;
  other.window_end_ns = upload.window_end_ns;
  other.end_ns = upload.end_ns;
  std::vector<llmcap::agent::ShardResult> shards;
  shards.push_back({0, "a", std::move(upload)});
  shards.push_back({1, "b", std::move(other)});
  const auto merged = llmcap::agent::merge_shards(std::move(shards), 100'000'000);
  check(merged.sample_regions.size() == merged.result.samples.size(),
        "merged regions not parallel to samples");

  // Judged as the executor judges a step (server/engine/plan_executor.cc, TargetRun::judge),
  // open and closed loop: an accepted upload must never make the analysis throw or misbehave
  // (issue 35 #6: a fuzzed job ended "internal error" after an accepted upload).
  const auto& r = merged.result;
  // An empty merged window fails the step before judging (TargetRun::measure).
  if (r.window_end_ns <= r.window_start_ns) return 0;
  namespace analysis = llmcap::analysis;
  analysis::SlaSpec sla;
  sla.bounds = {{analysis::SlaMetric::kTtft, 95, 1000}, {analysis::SlaMetric::kTpot, 95, 35}};
  for (const bool open : {true, false}) {
    analysis::StepInput input;
    input.samples = r.samples;
    input.window_start_ns = r.window_start_ns;
    input.window_end_ns = r.window_end_ns;
    if (open)
      input.offered_rate_rps = 10;
    else
      input.concurrency = 4;
    input.itl_ns = r.itl_ns;
    input.dropped_arrivals = r.dropped_arrivals;
    input.client_cpu_utilisation = r.client_cpu_utilisation;
    input.sla = sla;
    for (const auto& [t, n] : r.in_flight_series)
      input.in_flight.push_back({t, static_cast<double>(n)});
    const analysis::StepStats stats = analysis::compute_step_stats(input);
    const analysis::StepVerdict verdict = analysis::judge_step(stats, sla);
    check(std::isfinite(stats.error_rate) && stats.error_rate >= 0,
          "error rate negative or not a number");
    (void)verdict;
  }
  return 0;
}

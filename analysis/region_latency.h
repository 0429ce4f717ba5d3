// Client-side latency per load-generator region, for runs spread over a fleet of agents
// (each sample tagged with the region of the agent that sent it).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analysis/request_sample.h"
#include "analysis/summary.h"

namespace llmcap::analysis {

struct RegionLatency {
  std::uint64_t requests = 0;  // ok samples intended inside the window
  Summary ttft_ms, tpot_ms, e2e_ms;
};

// TTFT, TPOT and E2E summaries (ms) per region over the ok samples intended in
// [window_start_ns, window_end_ns) (docs/metrics.md: the measurement window). regions[i] is the
// region of samples[i] ("" = none); empty when the sizes differ or no sample has a region.
std::map<std::string, RegionLatency> region_latency(const std::vector<RequestSample>& samples,
                                                    const std::vector<std::string>& regions,
                                                    std::int64_t window_start_ns,
                                                    std::int64_t window_end_ns);

}  // namespace llmcap::analysis

#include "analysis/region_latency.h"

namespace llmcap::analysis {

std::map<std::string, RegionLatency> region_latency(const std::vector<RequestSample>& samples,
                                                    const std::vector<std::string>& regions,
                                                    std::int64_t window_start_ns,
                                                    std::int64_t window_end_ns) {
  std::map<std::string, RegionLatency> out;
  if (regions.size() != samples.size()) return out;
  struct Values {
    std::vector<double> ttft, tpot, e2e;
  };
  std::map<std::string, Values> by_region;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    if (regions[i].empty()) continue;
    Values& acc = by_region[regions[i]];
    const auto& s = samples[i];
    if (!s.ok() || s.t_intended_ns < window_start_ns || s.t_intended_ns >= window_end_ns) continue;
    if (auto v = s.ttft_ns()) acc.ttft.push_back(static_cast<double>(*v) / 1e6);
    if (auto v = s.tpot_ns()) acc.tpot.push_back(*v / 1e6);
    if (auto v = s.e2e_ns()) acc.e2e.push_back(static_cast<double>(*v) / 1e6);
  }
  for (auto& [region, acc] : by_region) {
    RegionLatency r;
    r.requests = acc.e2e.size();
    r.ttft_ms = summarize(std::move(acc.ttft));
    r.tpot_ms = summarize(std::move(acc.tpot));
    r.e2e_ms = summarize(std::move(acc.e2e));
    out.emplace(region, std::move(r));
  }
  return out;
}

}  // namespace llmcap::analysis

// DaemonMetrics: every Prometheus metric llmcapd exports, declared together and created once
// and served at /metrics through our own HTTP listener with prometheus-cpp's
// TextSerializer. Names follow Prometheus conventions: llmcap_ prefix, base units (seconds),
// _total for counters. Labels are bounded: target names, phases, outcomes, routes and status
// codes — never job or request ids.
//
// Thread-safety: every method may be called from any thread (prometheus-cpp metrics are
// thread-safe; the label-to-handle caches are guarded by mu_).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "analysis/request_sample.h"
#include "server/rest/rest_api.h"

namespace prometheus {
class Registry;
class Counter;
class Gauge;
class Histogram;
template <typename T>
class Family;
}  // namespace prometheus

namespace llmcap::server {

class DaemonMetrics final : public ApiMetrics {
 public:
  DaemonMetrics();
  ~DaemonMetrics();
  DaemonMetrics(const DaemonMetrics&) = delete;
  DaemonMetrics& operator=(const DaemonMetrics&) = delete;

  // --- live load (called by the load generator's hooks) ---
  // One finished request: outcome counter, tokens, TTFT/TPOT/E2E histograms.
  void record_request(const std::string& target, const analysis::RequestSample& sample);
  // Pooled ITL gap observations (seconds) for a target.
  // `count` gaps of `seconds` each, in one update (work bounded by the bucket count, never by
  // `count`: an uploaded histogram may claim 2^62 gaps).
  void record_itl_seconds(const std::string& target, double seconds, std::uint64_t count = 1);
  void set_in_flight(const std::string& target, double n);
  void set_offered_rate(const std::string& target, double rps);
  void set_achieved_rate(const std::string& target, double rps);
  void add_dropped_arrivals(const std::string& target, double n);
  void observe_schedule_lag_seconds(const std::string& target, double seconds);
  void set_client_cpu(const std::string& target, double utilisation);

  // --- jobs ---
  void set_jobs(const std::string& state, double n);
  void set_queue_length(double n);
  void set_current_step(const std::string& target, const std::string& phase, double step_index);
  // verdict: 1 pass, 0 fail, -1 inconclusive
  void set_last_verdict(const std::string& target, const std::string& phase, double verdict);
  void set_capacity(const std::string& target, double rps, double output_tokens_per_s,
                    double cost_per_million_tokens);

  // --- process ---
  void set_storage_queue_depth(double n);
  // The API server's refusal count so far, by reason (full, per_client, fd_exhausted).
  void set_api_connections_refused(const std::string& reason, double total);
  void observe_storage_batch_seconds(double seconds);
  void observe_api_request(const std::string& route, int status, double seconds) override;

  // Prometheus text exposition format (version 0.0.4).
  std::string serialize() const override;

 private:
  struct Families;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Families> f_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

}  // namespace llmcap::server

// DaemonMetrics: every Prometheus metric llmcapd exports, declared together and created once
// and served at /metrics through our own HTTP listener with prometheus-cpp's
// TextSerializer, followed by the standard process_* families (ProcessCollector). Names follow
// Prometheus conventions: llmcap_ prefix, base units (seconds, requests_per_second), _total for
// counters. Labels are bounded:
//   - cumulative series (request counters, token counters, latency histograms, dropped
//     arrivals) are per target name, summed over every job that used that name;
//   - the live gauges of a running job (in flight, offered/achieved rate, client CPU, current
//     step, last verdict) carry job_id and target, so two jobs with the same target name never
//     overwrite each other; they are removed series_grace after the job ends (job_finished), so
//     their number is bounded by the jobs running in the last series_grace;
//   - the qualified-capacity gauges are per target (the latest finished job that found one);
//     a prediction's (POST /v1/predictions) go to the llmcap_predicted_* families instead, and a
//     prediction records no requests, tokens or latencies (no load reached any target);
//   - routes, status codes, phases, outcomes and currencies — never request ids.
//
// Thread-safety: every method may be called from any thread (prometheus-cpp metrics are
// thread-safe; the label-to-handle maps are guarded by mutexes).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "analysis/request_sample.h"
#include "server/rest/rest_api.h"

namespace prometheus {
class Collectable;
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
  // How long a finished job's live series stay exported: long enough for a scrape every 60 s
  // (Prometheus' default interval) to see their final values.
  static constexpr std::chrono::seconds kDefaultSeriesGrace{60};

  explicit DaemonMetrics(std::chrono::steady_clock::duration series_grace = kDefaultSeriesGrace);
  ~DaemonMetrics();
  DaemonMetrics(const DaemonMetrics&) = delete;
  DaemonMetrics& operator=(const DaemonMetrics&) = delete;

  // --- live load (called by the load generator's hooks) ---
  // Rates and latencies are in the plan's time: for a simulated target with time_scale k the
  // caller scales the wall-clock figures back (docs/metrics.md, "Prometheus metrics").
  // One finished request: outcome counter, tokens, TTFT/TPOT/E2E histograms.
  void record_request(const std::string& target, const analysis::RequestSample& sample);
  // Pooled ITL gap observations (seconds) for a target.
  // `count` gaps of `seconds` each, in one update (work bounded by the bucket count, never by
  // `count`: an uploaded histogram may claim 2^62 gaps).
  void record_itl_seconds(const std::string& target, double seconds, std::uint64_t count = 1);
  void add_dropped_arrivals(const std::string& target, double n);
  void observe_schedule_lag_seconds(const std::string& target, double seconds);

  // --- a running job's live gauges (labels job_id, target) ---
  void set_in_flight(const std::string& job, const std::string& target, double n);
  void set_offered_rate(const std::string& job, const std::string& target, double rps);
  void set_achieved_rate(const std::string& job, const std::string& target, double rps);
  void set_client_cpu(const std::string& job, const std::string& target, double utilisation);
  // The step now running: one series per job and target (a new phase replaces the last one's).
  // Also creates the target's dropped-arrivals counter at 0, so its rate reads 0, not "no data".
  void set_current_step(const std::string& job, const std::string& target, const std::string& phase,
                        double step_index);
  // verdict: 1 pass, 0 fail, -1 inconclusive
  void set_last_verdict(const std::string& job, const std::string& target, const std::string& phase,
                        double verdict);
  // The job ended (any final state): its live series go series_grace from now.
  void job_finished(const std::string& job);

  // --- jobs ---
  void set_jobs(const std::string& state, double n);
  void set_queue_length(double n);

  // The qualified capacity of a target from a finished job. A figure that is absent removes its
  // series (a closed-loop-only qualification has no qualified rate: no
  // llmcap_qualified_capacity_requests_per_second, rather than a 0 read as a drop).
  struct Capacity {
    std::optional<double> requests_per_second;  // open loop: the qualified offered rate
    std::optional<double> output_tokens_per_second;
    std::optional<double> cost_per_million_output_tokens;
    std::string currency = "USD";  // ISO 4217, the plan's
  };
  // predicted: the job was a prediction (virtual time): the llmcap_predicted_* families.
  void set_capacity(const std::string& target, const Capacity& capacity, bool predicted = false);
  // The target's verdict (1 pass, 0 fail, -1 inconclusive) in a measured job that ran to its
  // end: one series per target (labels target, job_id), replaced by the next such job's and
  // kept while llmcapd runs. What the SLA alert watches: a capacity search's failing steps
  // above its answer are part of finding it, the target's verdict is the answer.
  void set_target_verdict(const std::string& job, const std::string& target, double verdict);

  // --- process ---
  void set_storage_queue_depth(double n);
  // The API server's refusal count so far, by reason (full, per_client, fd_exhausted).
  void set_api_connections_refused(const std::string& reason, double total);
  void observe_storage_batch_seconds(double seconds);
  void observe_api_request(const std::string& route, int status, double seconds) override;
  // tenant: a configured tenant name or "default" (never a token or a job id).
  void observe_job_submitted(const std::string& tenant, const std::string& kind) override;

  // Prometheus text exposition format (version 0.0.4).
  std::string serialize() const override;

 private:
  struct Families;
  struct JobSeries;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Families> f_;
  std::unique_ptr<JobSeries> jobs_;
  std::unique_ptr<prometheus::Collectable> process_;
  std::chrono::steady_clock::duration series_grace_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

}  // namespace llmcap::server

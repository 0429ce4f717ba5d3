#include "server/daemon_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include "server/process_metrics.h"
#include "server/version.h"

namespace llmcap::server {

using prometheus::Counter;
using prometheus::Gauge;
using prometheus::Histogram;

namespace {

// Latency buckets from 1 ms to 60 s (roughly ×2 per bucket, with the SLA-relevant range
// 10 ms–2 s finer).
Histogram::BucketBoundaries latency_buckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.035, 0.04, 0.05, 0.075, 0.1, 0.15,
          0.2,   0.3,    0.5,   0.75, 1.0,   1.5,  2.0,   3.0,  5.0,   10.0, 20.0, 30.0,  60.0};
}

Histogram::BucketBoundaries lag_buckets() {
  return {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 1.0};
}

}  // namespace

struct DaemonMetrics::Families {
  explicit Families(prometheus::Registry& r)
      : requests(prometheus::BuildCounter()
                     .Name("llmcap_requests_total")
                     .Help("Requests finished by the load generator, by target and outcome "
                           "(ok or the error class)")
                     .Register(r)),
        output_tokens(prometheus::BuildCounter()
                          .Name("llmcap_output_tokens_total")
                          .Help("Output tokens received (usage.completion_tokens, else counted)")
                          .Register(r)),
        input_tokens(prometheus::BuildCounter()
                         .Name("llmcap_input_tokens_total")
                         .Help("Input tokens sent (usage.prompt_tokens)")
                         .Register(r)),
        ttft(prometheus::BuildHistogram()
                 .Name("llmcap_ttft_seconds")
                 .Help("Time to first token from the intended send time (docs/metrics.md §1.4)")
                 .Register(r)),
        tpot(prometheus::BuildHistogram()
                 .Name("llmcap_tpot_seconds")
                 .Help("Per-request time per output token after the first")
                 .Register(r)),
        itl(prometheus::BuildHistogram()
                .Name("llmcap_itl_seconds")
                .Help("Gaps between consecutive token events, pooled")
                .Register(r)),
        e2e(prometheus::BuildHistogram()
                .Name("llmcap_e2e_seconds")
                .Help("End-to-end latency from the intended send time")
                .Register(r)),
        schedule_lag(prometheus::BuildHistogram()
                         .Name("llmcap_schedule_lag_seconds")
                         .Help("Actual send time minus intended send time")
                         .Register(r)),
        in_flight(prometheus::BuildGauge()
                      .Name("llmcap_in_flight_requests")
                      .Help("Requests in flight now, by job and target")
                      .Register(r)),
        offered_rate(prometheus::BuildGauge()
                         .Name("llmcap_offered_requests_per_second")
                         .Help("Arrival rate the current step offers (open loop), in the plan's "
                               "time")
                         .Register(r)),
        achieved_rate(prometheus::BuildGauge()
                          .Name("llmcap_achieved_requests_per_second")
                          .Help("Arrival rate actually sent in the current step, in the plan's "
                                "time (simulated targets: wall-clock rate / time_scale)")
                          .Register(r)),
        dropped(prometheus::BuildCounter()
                    .Name("llmcap_dropped_arrivals_total")
                    .Help("Arrivals dropped at the in-flight cap (client-side safety valve)")
                    .Register(r)),
        client_cpu(prometheus::BuildGauge()
                       .Name("llmcap_client_cpu_utilisation_ratio")
                       .Help("Load generator CPU use in the job's last step (0..1 of its cores)")
                       .Register(r)),
        jobs(prometheus::BuildGauge().Name("llmcap_jobs").Help("Jobs by state").Register(r)),
        queue(prometheus::BuildGauge()
                  .Name("llmcap_job_queue_length")
                  .Help("Jobs waiting to run")
                  .Register(r)),
        current_step(prometheus::BuildGauge()
                         .Name("llmcap_current_step_index")
                         .Help("Index (within its phase) of the step now running, by job, "
                               "target and phase")
                         .Register(r)),
        verdict(prometheus::BuildGauge()
                    .Name("llmcap_last_verdict")
                    .Help("Verdict of the job's last judged step by target and phase: 1 pass, "
                          "0 fail, -1 inconclusive")
                    .Register(r)),
        target_verdict(prometheus::BuildGauge()
                           .Name("llmcap_target_verdict")
                           .Help("The target's verdict in its latest measured job that ran to "
                                 "its end (label job_id): 1 pass (a qualified capacity), 0 fail "
                                 "(the SLA held at no load), -1 inconclusive")
                           .Register(r)),
        capacity_rps(prometheus::BuildGauge()
                         .Name("llmcap_qualified_capacity_requests_per_second")
                         .Help("Qualified capacity (open-loop requests/s) from the target's "
                               "latest succeeded job; absent when that job qualified no rate")
                         .Register(r)),
        capacity_tps(prometheus::BuildGauge()
                         .Name("llmcap_qualified_output_tokens_per_second")
                         .Help("Output tokens/s at the qualified capacity")
                         .Register(r)),
        cost(prometheus::BuildGauge()
                 .Name("llmcap_cost_per_million_output_tokens")
                 .Help("Cost per million output tokens at the qualified capacity, in the "
                       "plan's currency (label currency)")
                 .Register(r)),
        predicted_rps(prometheus::BuildGauge()
                          .Name("llmcap_predicted_capacity_requests_per_second")
                          .Help("Predicted qualified capacity (open-loop requests/s; virtual "
                                "time, POST /v1/predictions) from the target's latest succeeded "
                                "prediction; absent when it qualified no rate")
                          .Register(r)),
        predicted_tps(prometheus::BuildGauge()
                          .Name("llmcap_predicted_output_tokens_per_second")
                          .Help("Output tokens/s at the predicted qualified capacity")
                          .Register(r)),
        predicted_cost(prometheus::BuildGauge()
                           .Name("llmcap_predicted_cost_per_million_output_tokens")
                           .Help("Cost per million output tokens at the predicted qualified "
                                 "capacity, in the plan's currency (label currency)")
                           .Register(r)),
        build_info(prometheus::BuildGauge()
                       .Name("llmcap_build_info")
                       .Help("Build information (value 1)")
                       .Register(r)),
        uptime(prometheus::BuildGauge()
                   .Name("llmcap_uptime_seconds")
                   .Help("Seconds since llmcapd started")
                   .Register(r)),
        storage_queue(prometheus::BuildGauge()
                          .Name("llmcap_storage_write_queue_depth")
                          .Help("Sample rows waiting for the storage thread")
                          .Register(r)),
        storage_batch(prometheus::BuildHistogram()
                          .Name("llmcap_storage_batch_seconds")
                          .Help("Duration of one storage write transaction")
                          .Register(r)),
        api(prometheus::BuildHistogram()
                .Name("llmcap_api_request_duration_seconds")
                .Help("REST API request durations by route and status code")
                .Register(r)),
        api_refused(prometheus::BuildCounter()
                        .Name("llmcap_api_connections_refused_total")
                        .Help("API connections refused: full (max_connections), per_client "
                              "(max_connections_per_client), fd_exhausted (accept() out of "
                              "file descriptors), slow_request (closed to make room: its "
                              "request was still arriving after slow_request_evict_ms)")
                        .Register(r)),
        jobs_submitted(prometheus::BuildCounter()
                           .Name("llmcap_jobs_submitted_total")
                           .Help("Jobs and predictions accepted, by tenant (configured names "
                                 "only) and kind (measured, predicted)")
                           .Register(r)) {}

  prometheus::Family<Counter>& requests;
  prometheus::Family<Counter>& output_tokens;
  prometheus::Family<Counter>& input_tokens;
  prometheus::Family<Histogram>& ttft;
  prometheus::Family<Histogram>& tpot;
  prometheus::Family<Histogram>& itl;
  prometheus::Family<Histogram>& e2e;
  prometheus::Family<Histogram>& schedule_lag;
  prometheus::Family<Gauge>& in_flight;
  prometheus::Family<Gauge>& offered_rate;
  prometheus::Family<Gauge>& achieved_rate;
  prometheus::Family<Counter>& dropped;
  prometheus::Family<Gauge>& client_cpu;
  prometheus::Family<Gauge>& jobs;
  prometheus::Family<Gauge>& queue;
  prometheus::Family<Gauge>& current_step;
  prometheus::Family<Gauge>& verdict;
  prometheus::Family<Gauge>& target_verdict;
  prometheus::Family<Gauge>& capacity_rps;
  prometheus::Family<Gauge>& capacity_tps;
  prometheus::Family<Gauge>& cost;
  prometheus::Family<Gauge>& predicted_rps;
  prometheus::Family<Gauge>& predicted_tps;
  prometheus::Family<Gauge>& predicted_cost;
  prometheus::Family<Gauge>& build_info;
  prometheus::Family<Gauge>& uptime;
  prometheus::Family<Gauge>& storage_queue;
  prometheus::Family<Histogram>& storage_batch;
  prometheus::Family<Histogram>& api;
  prometheus::Family<Counter>& api_refused;
  prometheus::Family<Counter>& jobs_submitted;

  // Per-target histogram handles, cached (Family::Add looks labels up under a lock anyway,
  // but caching keeps the hot path to one map lookup).
  struct TargetHandles {
    Histogram* ttft;
    Histogram* tpot;
    Histogram* itl;
    Histogram* e2e;
    Histogram* lag;
    Counter* out_tokens;
    Counter* in_tokens;
  };
  std::mutex mu;
  std::map<std::string, TargetHandles> targets;  // GUARDED_BY(mu)
  std::mutex capacity_mu;
  std::map<std::string, Gauge*> cost_by_target;            // GUARDED_BY(capacity_mu)
  std::map<std::string, Gauge*> predicted_cost_by_target;  // GUARDED_BY(capacity_mu)
  std::map<std::string, Gauge*> verdict_by_target;         // GUARDED_BY(capacity_mu)

  TargetHandles& target(const std::string& name) {
    std::lock_guard lock(mu);
    auto it = targets.find(name);
    if (it != targets.end()) return it->second;
    const prometheus::Labels l{{"target", name}};
    TargetHandles h{&ttft.Add(l, latency_buckets()),
                    &tpot.Add(l, latency_buckets()),
                    &itl.Add(l, latency_buckets()),
                    &e2e.Add(l, latency_buckets()),
                    &schedule_lag.Add(l, lag_buckets()),
                    &output_tokens.Add(l),
                    &input_tokens.Add(l)};
    dropped.Add(l);  // 0 until something is dropped: its rate reads 0, not "no data"
    return targets.emplace(name, h).first->second;
  }
};

// The live gauges of each job, so they can be removed once the job has ended.
struct DaemonMetrics::JobSeries {
  using Key = std::pair<prometheus::Family<Gauge>*, prometheus::Labels>;
  struct Job {
    std::map<Key, Gauge*> series;
    std::map<std::string, Key> current_step;  // by target: the series of the step now running
    std::optional<std::chrono::steady_clock::time_point> finished;
  };
  std::mutex mu;
  std::map<std::string, Job> jobs;  // GUARDED_BY(mu)

  void set(const std::string& job, prometheus::Family<Gauge>& family,
           const prometheus::Labels& labels, double value) {
    std::lock_guard lock(mu);
    set_locked(jobs[job], family, labels, value);
  }
  void set_locked(Job& j, prometheus::Family<Gauge>& family, const prometheus::Labels& labels,
                  double value) {
    Gauge& g = family.Add(labels);
    g.Set(value);
    j.series[{&family, labels}] = &g;
    j.finished.reset();  // a job that runs again (resumed) is live again
  }
  void remove_locked(Job& j, const Key& key) {
    if (auto it = j.series.find(key); it != j.series.end()) {
      key.first->Remove(it->second);
      j.series.erase(it);
    }
  }
  // Removes the series of the jobs that ended at least `grace` before `now`.
  void expire(std::chrono::steady_clock::time_point now,
              std::chrono::steady_clock::duration grace) {
    std::lock_guard lock(mu);
    for (auto it = jobs.begin(); it != jobs.end();) {
      if (it->second.finished && now - *it->second.finished >= grace) {
        for (const auto& [key, gauge] : it->second.series) key.first->Remove(gauge);
        it = jobs.erase(it);
      } else {
        ++it;
      }
    }
  }
};

DaemonMetrics::DaemonMetrics(std::chrono::steady_clock::duration series_grace)
    : registry_(std::make_shared<prometheus::Registry>()),
      f_(std::make_unique<Families>(*registry_)),
      jobs_(std::make_unique<JobSeries>()),
      process_(std::make_unique<ProcessCollector>()),
      series_grace_(series_grace) {
  f_->build_info
      .Add({{"version", kVersion}, {"revision", kGitRevision}, {"build_type", kBuildType}})
      .Set(1);
  for (const char* state :
       {"queued", "running", "succeeded", "failed", "cancelled", "interrupted"}) {
    f_->jobs.Add({{"state", state}}).Set(0);
  }
  f_->queue.Add({}).Set(0);
  f_->storage_queue.Add({}).Set(0);
  for (const char* reason : {"full", "per_client", "fd_exhausted", "slow_request"})
    f_->api_refused.Add({{"reason", reason}});
}

DaemonMetrics::~DaemonMetrics() = default;

void DaemonMetrics::record_request(const std::string& target, const analysis::RequestSample& s) {
  auto& h = f_->target(target);
  const std::string outcome = s.ok() ? "ok" : std::string(analysis::to_string(s.error));
  f_->requests.Add({{"target", target}, {"outcome", outcome}}).Increment();
  if (s.output_tokens > 0) h.out_tokens->Increment(s.output_tokens);
  if (s.input_tokens > 0) h.in_tokens->Increment(s.input_tokens);
  if (auto v = s.ttft_ns()) h.ttft->Observe(static_cast<double>(*v) * 1e-9);
  if (auto v = s.tpot_ns()) h.tpot->Observe(*v * 1e-9);
  if (s.ok()) {
    if (auto v = s.e2e_ns()) h.e2e->Observe(static_cast<double>(*v) * 1e-9);
  }
  h.lag->Observe(static_cast<double>(s.schedule_lag_ns()) * 1e-9);
}

void DaemonMetrics::record_itl_seconds(const std::string& target, double seconds,
                                       std::uint64_t count) {
  if (count == 0) return;
  if (count == 1) {
    f_->target(target).itl->Observe(seconds);
    return;
  }
  // The bucket Observe() would pick (the first boundary ≥ the value; the last is +Inf).
  static const Histogram::BucketBoundaries bounds = latency_buckets();
  std::vector<double> increments(bounds.size() + 1, 0.0);
  const auto at = std::lower_bound(bounds.begin(), bounds.end(), seconds) - bounds.begin();
  increments[static_cast<std::size_t>(at)] = static_cast<double>(count);
  f_->target(target).itl->ObserveMultiple(increments, seconds * static_cast<double>(count));
}
void DaemonMetrics::add_dropped_arrivals(const std::string& target, double n) {
  f_->dropped.Add({{"target", target}}).Increment(n);
}
void DaemonMetrics::observe_schedule_lag_seconds(const std::string& target, double seconds) {
  f_->target(target).lag->Observe(seconds);
}

void DaemonMetrics::set_in_flight(const std::string& job, const std::string& target, double n) {
  jobs_->set(job, f_->in_flight, {{"job_id", job}, {"target", target}}, n);
}
void DaemonMetrics::set_offered_rate(const std::string& job, const std::string& target,
                                     double rps) {
  jobs_->set(job, f_->offered_rate, {{"job_id", job}, {"target", target}}, rps);
}
void DaemonMetrics::set_achieved_rate(const std::string& job, const std::string& target,
                                      double rps) {
  jobs_->set(job, f_->achieved_rate, {{"job_id", job}, {"target", target}}, rps);
}
void DaemonMetrics::set_client_cpu(const std::string& job, const std::string& target,
                                   double utilisation) {
  jobs_->set(job, f_->client_cpu, {{"job_id", job}, {"target", target}}, utilisation);
}
void DaemonMetrics::set_current_step(const std::string& job, const std::string& target,
                                     const std::string& phase, double step_index) {
  f_->dropped.Add({{"target", target}});  // 0 until something is dropped
  const prometheus::Labels labels{{"job_id", job}, {"target", target}, {"phase", phase}};
  std::lock_guard lock(jobs_->mu);
  auto& j = jobs_->jobs[job];
  auto previous = j.current_step.find(target);
  if (previous != j.current_step.end() && previous->second.second != labels)
    jobs_->remove_locked(j, previous->second);
  jobs_->set_locked(j, f_->current_step, labels, step_index);
  j.current_step.insert_or_assign(target, JobSeries::Key{&f_->current_step, labels});
}
void DaemonMetrics::set_last_verdict(const std::string& job, const std::string& target,
                                     const std::string& phase, double verdict) {
  jobs_->set(job, f_->verdict, {{"job_id", job}, {"target", target}, {"phase", phase}}, verdict);
}
void DaemonMetrics::job_finished(const std::string& job) {
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(jobs_->mu);
    if (auto it = jobs_->jobs.find(job); it != jobs_->jobs.end()) it->second.finished = now;
  }
  jobs_->expire(now, series_grace_);
}

void DaemonMetrics::set_jobs(const std::string& state, double n) {
  f_->jobs.Add({{"state", state}}).Set(n);
}
void DaemonMetrics::set_queue_length(double n) { f_->queue.Add({}).Set(n); }

void DaemonMetrics::set_capacity(const std::string& target, const Capacity& c, bool predicted) {
  std::lock_guard lock(f_->capacity_mu);
  auto put = [&target](prometheus::Family<Gauge>& family, const std::optional<double>& v) {
    const prometheus::Labels labels{{"target", target}};
    if (v) {
      family.Add(labels).Set(*v);
    } else if (family.Has(labels)) {
      family.Remove(&family.Add(labels));
    }
  };
  // A prediction has its own families: a predicted and a measured capacity of one target are
  // two different facts, never one series a later job overwrites.
  put(predicted ? f_->predicted_rps : f_->capacity_rps, c.requests_per_second);
  put(predicted ? f_->predicted_tps : f_->capacity_tps, c.output_tokens_per_second);
  // One cost series per target: a job priced in another currency replaces it.
  auto& family = predicted ? f_->predicted_cost : f_->cost;
  auto& cost = predicted ? f_->predicted_cost_by_target : f_->cost_by_target;
  if (auto it = cost.find(target); it != cost.end()) {
    family.Remove(it->second);
    cost.erase(it);
  }
  if (c.cost_per_million_output_tokens) {
    Gauge& g = family.Add({{"target", target}, {"currency", c.currency}});
    g.Set(*c.cost_per_million_output_tokens);
    cost.emplace(target, &g);
  }
}
void DaemonMetrics::set_target_verdict(const std::string& job, const std::string& target,
                                       double verdict) {
  std::lock_guard lock(f_->capacity_mu);
  // One series per target: the next job's verdict replaces the last one's (its job_id differs).
  if (auto it = f_->verdict_by_target.find(target); it != f_->verdict_by_target.end()) {
    f_->target_verdict.Remove(it->second);
    f_->verdict_by_target.erase(it);
  }
  Gauge& g = f_->target_verdict.Add({{"target", target}, {"job_id", job}});
  g.Set(verdict);
  f_->verdict_by_target.emplace(target, &g);
}
void DaemonMetrics::set_storage_queue_depth(double n) { f_->storage_queue.Add({}).Set(n); }

void DaemonMetrics::set_api_connections_refused(const std::string& reason, double total) {
  auto& c = f_->api_refused.Add({{"reason", reason}});
  if (total > c.Value()) c.Increment(total - c.Value());
}
void DaemonMetrics::observe_storage_batch_seconds(double seconds) {
  f_->storage_batch.Add({}, lag_buckets()).Observe(seconds);
}
void DaemonMetrics::observe_api_request(const std::string& route, int status, double seconds) {
  f_->api.Add({{"route", route}, {"code", std::to_string(status)}}, lag_buckets()).Observe(seconds);
}

void DaemonMetrics::observe_job_submitted(const std::string& tenant, const std::string& kind) {
  f_->jobs_submitted.Add({{"tenant", tenant}, {"kind", kind}}).Increment();
}

std::string DaemonMetrics::serialize() const {
  const auto now = std::chrono::steady_clock::now();
  jobs_->expire(now, series_grace_);
  f_->uptime.Add({}).Set(std::chrono::duration<double>(now - started_).count());
  auto families = registry_->Collect();
  for (auto& f : process_->Collect()) families.push_back(std::move(f));
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

}  // namespace llmcap::server

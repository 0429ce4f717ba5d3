#include "server/job_runner.h"

#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <thread>
#include <vector>

#include "agent/nvidia_smi.h"
#include "api/plan_reader.h"
#include "server/daemon_metrics.h"
#include "server/engine/embedded_sims.h"
#include "server/engine/job_eta.h"
#include "server/engine/plan_conversion.h"
#include "server/engine/plan_executor.h"
#include "server/engine/sample_codec.h"
#include "server/fleet/shard_hub.h"
#include "server/jobs/job_events.h"
#include "server/logging.h"
#include "storage/disk_space.h"
#include "storage/job_store.h"
#include "storage/sample_writer.h"

namespace llmcap::server {

using nlohmann::json;

namespace {

void check(const storage::Status& st, const std::string& job_id, const char* what) {
  if (!st.ok()) server_log()->error("job {}: {}: {}", job_id, what, st.to_string());
}
template <typename T>
void check(const storage::Result<T>& r, const std::string& job_id, const char* what) {
  if (!r.ok()) server_log()->error("job {}: {}: {}", job_id, what, r.status().to_string());
}

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Replaces every occurrence of a target secret in text that leaves the job (stored samples,
// step documents, results, the failure reason, the log) with "***". Needed because targets
// echo credentials: "HTTP 401: invalid API key sk-…" becomes a sample's error message.
// Secrets shorter than kMinRedactedBytes are not searched (they would mangle ordinary text);
// the plan validator refuses none, so this is the documented limit.
class SecretRedactor {
 public:
  static constexpr std::size_t kMinRedactedBytes = 6;
  explicit SecretRedactor(const std::vector<storage::SecretRecord>& secrets) {
    for (const auto& s : secrets) {
      if (s.value.size() >= kMinRedactedBytes) values_.push_back(s.value);
    }
    // Longest first, so a secret that contains another is replaced whole.
    std::sort(values_.begin(), values_.end(),
              [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  }
  void redact(std::string& text) const {
    for (const auto& v : values_) {
      for (auto pos = text.find(v); pos != std::string::npos; pos = text.find(v, pos + 3))
        text.replace(pos, v.size(), "***");
    }
  }
  std::string redacted(std::string text) const {
    redact(text);
    return text;
  }

 private:
  std::vector<std::string> values_;
};

// Persists steps, publishes progress; one per running job.
class DaemonSink final : public ExecutionSink {
 public:
  DaemonSink(const std::string& job_id, storage::JobStore& store, storage::SampleWriter& writer,
             DaemonMetrics& metrics, JobEvents& events, const SecretRedactor& redactor)
      : job_id_(job_id),
        store_(store),
        writer_(writer),
        metrics_(metrics),
        events_(events),
        redactor_(redactor) {}

  void set_after_step(std::function<void()> f) { after_step_ = std::move(f); }
  // A prediction (virtual time): no load reached any target, so no request, token, latency,
  // dropped-arrival or client-CPU series; the step and verdict gauges still show its progress.
  void set_predicted(bool predicted) { predicted_ = predicted; }
  // The time_scale of each simulated target (by name): live rates are exported in the plan's
  // time, like the (expanded) latencies, not in the compressed wall-clock time of the run.
  void set_time_scales(std::map<std::string, double> scales) { time_scales_ = std::move(scales); }
  // Before each step is stored: "" when storage is sound, else why the job must stop (the
  // database file was deleted or replaced under the daemon).
  void set_storage_check(std::function<std::string()> f) { storage_check_ = std::move(f); }

  void on_step_started(const StepContext& ctx) override {
    storage::NewStep s;
    s.job_id = job_id_;
    s.seq = ctx.global_step;
    s.target = ctx.target;
    s.phase_index = static_cast<int>(ctx.phase_index);
    s.phase_name = ctx.phase;
    s.phase_kind = to_string(ctx.kind);
    s.step_index = ctx.step_index;
    s.params_json = ctx.params.dump();
    auto id = store_.begin_step(s);
    step_id_ = id.ok() ? id.value() : -1;
    if (!id.ok()) begin_error_ = id.status().to_string();
    metrics_.set_current_step(job_id_, ctx.target, ctx.phase, static_cast<double>(ctx.step_index));
    if (ctx.params.contains("rate_rps"))  // the plan's rate (uncompressed)
      metrics_.set_offered_rate(job_id_, ctx.target, ctx.params["rate_rps"].get<double>());
    std::lock_guard lock(mu_);
    progress_ = progress_json(ctx, nullptr);
    events_.append(job_id_, "progress", progress_.dump());
    check(store_.set_progress(job_id_, progress_.dump()), job_id_, "set progress");
  }

  void on_progress(const StepContext& ctx, const agent::StepProgress& p) override {
    metrics_.set_in_flight(job_id_, ctx.target, static_cast<double>(p.in_flight));
    if (p.elapsed_ns > 0 && !predicted_) {
      // elapsed_ns is wall-clock: a simulated target's step ran time_scale× faster.
      const double seconds = static_cast<double>(p.elapsed_ns) / 1e9 * time_scale(ctx.target);
      metrics_.set_achieved_rate(job_id_, ctx.target, static_cast<double>(p.sent) / seconds);
    }
    if (p.dropped_arrivals > last_dropped_ && !predicted_) {
      metrics_.add_dropped_arrivals(ctx.target,
                                    static_cast<double>(p.dropped_arrivals - last_dropped_));
      last_dropped_ = p.dropped_arrivals;
    }
    std::lock_guard lock(mu_);
    progress_ = progress_json(ctx, &p);
    events_.append(job_id_, "progress", progress_.dump());
  }

  bool on_step_finished(const StepContext& ctx, const StepOutcome& step,
                        std::string& error) override {
    const agent::StepResult& result = step.result;
    const json& step_json = step.document;
    if (storage_check_) {
      if (auto problem = storage_check_(); !problem.empty()) {
        error = "storage: " + problem + "; nothing more of this job can be kept";
        return false;
      }
    }
    last_dropped_ = 0;
    metrics_.set_in_flight(job_id_, ctx.target, 0);
    if (!predicted_) {
      for (const auto& s : result.samples) metrics_.record_request(ctx.target, s);
      // The pooled ITL histogram goes to Prometheus bucket by bucket (≤1% value error).
      for (const auto& b : result.itl_ns.buckets()) {
        const double seconds = analysis::LogHistogram::bucket_value(b.index) * 1e-9;
        metrics_.record_itl_seconds(ctx.target, seconds, b.count);
      }
      metrics_.set_client_cpu(job_id_, ctx.target, result.client_cpu_utilisation);
    }
    const analysis::Outcome outcome = step.verdict.outcome;
    metrics_.set_last_verdict(job_id_, ctx.target, ctx.phase,
                              outcome == analysis::Outcome::kPass   ? 1
                              : outcome == analysis::Outcome::kFail ? 0
                                                                    : -1);
    if (step_id_ < 0) {
      error = "cannot record step: " + begin_error_;
      return false;
    }
    std::vector<storage::SampleRow> rows;
    rows.reserve(result.samples.size());
    for (const auto& s : result.samples) {
      rows.push_back(to_row(s, step_id_));
      if (!rows.back().error_message.empty()) redactor_.redact(rows.back().error_message);
    }
    const bool accepted = rows.empty() || writer_.enqueue(std::move(rows));
    if (!step.telemetry.empty()) {
      std::vector<storage::TelemetryRow> trows;
      trows.reserve(step.telemetry.size());
      for (const auto& p : step.telemetry)
        trows.push_back({0, step_id_, p.t_ns, p.series, p.labels, p.value});
      if (!writer_.enqueue_telemetry(std::move(trows)))
        server_log()->warn("job {}: telemetry of step {} dropped (storage queue full)", job_id_,
                           ctx.global_step);
    }
    storage::StepCompletion c;
    c.step_id = step_id_;
    c.summary_json = redactor_.redacted(step_json.dump());
    c.verdict = std::string(analysis::to_string(outcome));
    c.verdict_json = step_json["verdict"].dump();
    c.partial = step.partial() || !accepted;
    c.finished_at_ms = now_ms();
    {
      std::lock_guard lock(mu_);
      progress_["steps_done"] = ctx.global_step + 1;
      c.progress_json = progress_.dump();
    }
    std::promise<storage::Status> done;
    auto fut = done.get_future();
    // The step row commits in the transaction of its last samples (restart safety).
    writer_.complete_step(std::move(c), [&done](storage::Status s) { done.set_value(s); });
    const storage::Status st = fut.get();
    if (!st.ok()) {
      error = "storage: " + st.to_string();
      return false;
    }
    events_.append(job_id_, "step", redactor_.redacted(step_json.dump()));
    if (after_step_) after_step_();
    return true;
  }

  void on_phase_finished(const StepContext& ctx, const json& phase) override {
    storage::CapacityRecord r;
    r.job_id = job_id_;
    r.target = std::string(storage::kPhaseKeyPrefix) +
               phase_key(ctx.target_index, ctx.phase_index, ctx.repeat_index);
    r.result_json = redactor_.redacted(phase.dump());
    if (auto st = store_.save_capacity(r); !st.ok())
      server_log()->error("job {}: cannot save phase {}: {}", job_id_, ctx.phase, st.to_string());
  }

 private:
  double time_scale(const std::string& target) const {
    const auto it = time_scales_.find(target);
    return it != time_scales_.end() && it->second > 0 ? it->second : 1.0;
  }

  json progress_json(const StepContext& ctx, const agent::StepProgress* p) const {
    const double done = static_cast<double>(ctx.global_step);
    const double planned = static_cast<double>(std::max<std::int64_t>(1, ctx.planned_steps));
    json j{{"target", ctx.target},
           {"phase", ctx.phase},
           {"step", ctx.label},
           {"steps_done", ctx.global_step},
           {"steps_planned", ctx.planned_steps},
           {"percent", std::min(100.0, 100.0 * done / planned)}};
    const double elapsed_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - job_started_).count();
    // Wall-clock, as the console's: from the first step on (the running step's planned length
    // stands for the others until one has finished).
    const double k = ctx.time_scale > 0 ? ctx.time_scale : 1.0;
    j["eta_s"] = eta_seconds(elapsed_s, ctx.global_step, ctx.planned_steps,
                             p ? static_cast<double>(p->elapsed_ns) / 1e9 : 0.0, ctx.planned_s / k);
    if (p) {
      j["live"] = json{{"elapsed_s", p->elapsed_ns / 1e9},
                       {"in_window", p->in_window},
                       {"sent", p->sent},
                       {"completed_ok", p->completed_ok},
                       {"failed", p->failed},
                       {"in_flight", p->in_flight},
                       {"dropped_arrivals", p->dropped_arrivals},
                       {"output_tokens", p->output_tokens}};
    }
    return j;
  }

  std::string job_id_;
  storage::JobStore& store_;
  storage::SampleWriter& writer_;
  DaemonMetrics& metrics_;
  JobEvents& events_;
  const SecretRedactor& redactor_;
  std::function<void()> after_step_;  // called once each step is stored
  std::map<std::string, double> time_scales_;
  std::function<std::string()> storage_check_;
  std::int64_t step_id_ = -1;
  std::string begin_error_;
  std::uint64_t last_dropped_ = 0;
  bool predicted_ = false;
  std::chrono::steady_clock::time_point job_started_ = std::chrono::steady_clock::now();
  mutable std::mutex mu_;
  json progress_;  // GUARDED_BY(mu_)
};

// Plans stored by earlier versions carry keys with empty values that the parser refuses
// (plan_to_json now leaves them out): dropped, so a job queued before an upgrade still runs.
void drop_legacy_empty_keys(json& plan) {
  if (!plan.contains("targets") || !plan["targets"].is_array()) return;
  for (auto& t : plan["targets"]) {
    if (!t.is_object()) continue;
    for (const char* key : {"sim", "hardware"})
      if (t.contains(key) && (t[key].is_null() || t[key].empty())) t.erase(key);
    for (const char* key : {"metrics_url", "model"})
      if (t.contains(key) && t[key] == "") t.erase(key);
    t.erase("precision");
    if (t.contains("tls") && t["tls"].is_object() && t["tls"].value("ca_file", "") == "" &&
        !t["tls"].value("insecure", false))
      t.erase("tls");
  }
}

// What a resumed job keeps (ResumeState): every completed phase's stored document and every
// stored (completed) step of the other phases, by phase key; the next step is the one after the
// last stored step. Steps run and are stored one at a time in run order, so the stored steps
// are a prefix of the job's. Fails (a message) when a stored step cannot be read back.
std::string resume_state(const std::vector<storage::CapacityRecord>& capacities,
                         const std::vector<storage::StepRecord>& steps, const RunPlan& plan,
                         ResumeState& resume) {
  for (const auto& c : capacities) {
    if (c.target.rfind(storage::kPhaseKeyPrefix, 0) == 0)
      resume.completed_phases[c.target.substr(std::string(storage::kPhaseKeyPrefix).size())] =
          json::parse(c.result_json, nullptr, false);
  }
  resume.completed_steps = 0;
  for (const auto& step : steps) {
    if (!step.finished_at_ms) continue;  // never acknowledged: removed, run again
    resume.completed_steps = std::max(resume.completed_steps, step.seq + 1);
    const json doc = json::parse(step.summary_json.value_or(""), nullptr, false);
    std::size_t target = 0;
    while (target < plan.targets.size() && plan.targets[target].name != step.target) ++target;
    if (!doc.is_object() || target == plan.targets.size() || !doc.contains("repeat") ||
        !doc["repeat"].is_number_integer()) {
      return "stored step " + std::to_string(step.seq + 1) + " (" + step.target + ", " +
             step.phase_name + ") cannot be read back";
    }
    const auto key =
        phase_key(target, static_cast<std::size_t>(step.phase_index), doc["repeat"].get<int>());
    if (!resume.completed_phases.contains(key)) resume.stored_steps[key].push_back(doc);
  }
  return {};
}

// The qualified-capacity gauges of a target of the results document: each figure only when the
// target has a qualified capacity that carries it (docs/metrics.md, "Prometheus metrics"). A
// closed-loop qualification has no qualified rate (its offered_rate_rps is 0).
DaemonMetrics::Capacity capacity_metrics(const json& target) {
  DaemonMetrics::Capacity c;
  c.currency = target.value("currency", "USD");
  const json& q = target.contains("qualified") ? target["qualified"] : json();
  if (!q.is_object()) return c;
  auto number = [&q](const char* key) -> std::optional<double> {
    return q.contains(key) && q[key].is_number() ? std::optional(q[key].get<double>())
                                                 : std::nullopt;
  };
  if (q.value("basis", "") == "open_loop") {
    if (const auto rps = number("offered_rate_rps"); rps && *rps > 0) c.requests_per_second = rps;
  }
  c.output_tokens_per_second = number("output_tokens_per_s");
  c.cost_per_million_output_tokens = number("cost_per_million_output_tokens");
  return c;
}

// Puts the stored secrets back into the stored (redacted) plan document.
void restore_secrets(json& plan, const std::vector<storage::SecretRecord>& secrets) {
  for (auto& t : plan["targets"]) {
    const std::string name = t.value("name", "");
    for (const auto& s : secrets) {
      if (s.target != name) continue;
      if (s.key.rfind("header:", 0) == 0) {
        t["headers"][s.key.substr(7)] = s.value;
      } else {
        t["secrets"][s.key] = s.value;
      }
    }
  }
}

}  // namespace

JobRunner::JobRunner(storage::JobStore& store, storage::SampleWriter& writer,
                     EmbeddedSimulators& sims, DaemonMetrics& metrics, JobEvents& events,
                     double telemetry_interval_s)
    : store_(store),
      writer_(writer),
      sims_(sims),
      metrics_(metrics),
      events_(events),
      telemetry_interval_s_(telemetry_interval_s) {}

void JobRunner::run(const std::string& job_id, std::stop_token stop) {
  // Whatever way the job ends, its live series go after the grace period.
  struct Finished {
    DaemonMetrics& metrics;
    const std::string& job_id;
    ~Finished() { metrics.job_finished(job_id); }
  } finished{metrics_, job_id};
  std::string what;
  try {
    run_job(job_id, std::move(stop));
    return;
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
    what = "unknown exception";
  }
  // The job's record gets a generic error: the exception text is not redacted (the secrets
  // are not at hand here), so it goes only to the daemon log, which operators read.
  server_log()->error("job {}: internal error: {}", job_id, what);
  mark_failed(job_id, "internal error in llmcapd (see the daemon log)");
}

void JobRunner::mark_failed(const std::string& job_id, const std::string& why) {
  check(store_.update_state(job_id, storage::JobState::kFailed, why), job_id, "mark failed");
  events_.append(job_id, "state", json{{"state", "failed"}, {"error", why}}.dump());
  events_.finish(job_id);
}

void JobRunner::run_job(const std::string& job_id, std::stop_token stop) {
  std::optional<SecretRedactor> redactor;  // set once the secrets are loaded
  auto fail = [&](const std::string& raw_why) {
    const std::string why = redactor ? redactor->redacted(raw_why) : raw_why;
    server_log()->error("job {} failed: {}", job_id, why);
    mark_failed(job_id, why);
  };
  auto job = store_.get_job(job_id);
  if (!job.ok()) {
    server_log()->error("job {}: cannot load: {}", job_id, job.status().to_string());
    return;
  }
  const auto resumed_from = job.value().last_completed_step;
  if (auto st = store_.update_state(job_id, storage::JobState::kRunning); !st.ok()) {
    const auto code = st.status().code();
    if (code == storage::ErrorCode::kDiskFull || code == storage::ErrorCode::kReadOnly ||
        code == storage::ErrorCode::kIoError || code == storage::ErrorCode::kCorrupt) {
      // The database cannot take the job's next state (disk full, read-only, I/O error): the
      // job fails with the reason instead of staying queued with nothing to run it. If even
      // that cannot be stored, readers of this process see it (JobStore::update_state).
      fail("not started: storage: " + st.status().to_string());
      return;
    }
    server_log()->warn("job {}: not started: {}", job_id, st.status().to_string());
    return;
  }
  events_.reopen(job_id);
  events_.append(job_id, "state", json{{"state", "running"}}.dump());
  auto plan_rec = store_.get_plan(job.value().plan_id);
  auto secrets = store_.get_secrets(job_id);
  if (!plan_rec.ok() || !secrets.ok()) {
    fail("cannot load the plan: " +
         (plan_rec.ok() ? secrets.status() : plan_rec.status()).to_string());
    return;
  }
  redactor.emplace(secrets.value());
  // The stored plan is the normalised one (api::plan_to_json) with its secrets redacted: read
  // back once, secrets restored, and checked against no limit (the daemon's limits applied when
  // it was accepted and may have changed since).
  json plan_doc = json::parse(plan_rec.value().plan_json, nullptr, false);
  drop_legacy_empty_keys(plan_doc);
  restore_secrets(plan_doc, secrets.value());
  auto parse = api::parse_plan_document(plan_doc, api::PlanLimits::none());
  RunPlan plan;
  std::string err = parse.errors.empty()
                        ? std::string()
                        : parse.errors.front().path + ": " + parse.errors.front().message;
  if (!err.empty()) {
    fail("stored plan does not parse: " + err);
    return;
  }
  // The stored plan names datasets relative to dataset_dir: resolved (and checked) again now,
  // as the files may have changed since the plan was accepted.
  if (const auto problems = check_plan_datasets(*parse.plan, parse.normalized, dataset_policy_);
      !problems.empty()) {
    fail("dataset not usable: " + problems.front().path + ": " + problems.front().message);
    return;
  }
  if (err = to_run_plan(parse, plan); !err.empty()) {
    fail("stored plan does not parse: " + err);
    return;
  }
  for (auto& t : plan.targets) {
    t.workload.dataset_max_bytes = dataset_policy_.max_bytes;
    t.address_allowlist = target_allowlist_;
    if (!EmbeddedSimulators::is_sim_url(t.base_url)) t.spec.address_allowlist = target_allowlist_;
  }

  plan.telemetry_interval_s = telemetry_interval_s_;
  // Every start is a resume of what is stored (nothing, for a new job). Every stored step is
  // kept: finished phases are reused whole, and the phase that was cut continues after its
  // stored steps (PlanExecutor, ResumeState). Only the step that was running and never stored
  // is removed (with its samples) and run again under its number, so the job stores each step
  // once and its exports hold exactly the samples of the steps in its results (issue 23 #10,
  // issue 35 #3).
  ResumeState resume;
  auto caps = store_.list_capacity(job_id);
  auto stored_steps = store_.list_steps(job_id);
  if (!caps.ok() || !stored_steps.ok()) {
    fail("cannot start: storage: " +
         (caps.ok() ? stored_steps.status() : caps.status()).to_string());
    return;
  }
  if (auto problem = resume_state(caps.value(), stored_steps.value(), plan, resume);
      !problem.empty()) {
    fail("cannot resume: " + problem + "; the stored steps are kept");
    return;
  }
  auto removed = store_.delete_steps_from(job_id, resume.completed_steps);
  if (!removed.ok()) {
    fail("cannot start: storage: " + removed.status().to_string());
    return;
  }
  if (resumed_from || removed.value() > 0 || !resume.completed_phases.empty())
    server_log()->info(
        "job {}: resuming at step {} ({} phases reused, {} steps of cut phases kept, {} "
        "unfinished steps removed)",
        job_id, resume.completed_steps, resume.completed_phases.size(),
        std::accumulate(resume.stored_steps.begin(), resume.stored_steps.end(), std::size_t{0},
                        [](std::size_t n, const auto& kv) { return n + kv.second.size(); }),
        removed.value());

  // On SIGTERM the step that runs is finished and stored, and no new one starts: the job ends
  // interrupted (resumable). shutdown_grace_s bounds the wait: the scheduler's stop cuts the
  // step when the grace period is over.
  std::stop_source stop_after_step;
  std::stop_callback forward_stop(stop, [&stop_after_step] { stop_after_step.request_stop(); });
  DaemonSink sink(job_id, store_, writer_, metrics_, events_, *redactor);
  sink.set_storage_check(
      [this] { return storage::database_file_problem(database_path_, database_file_); });
  std::map<std::string, double> time_scales;
  for (const auto& t : plan.targets) time_scales[t.name] = t.time_scale;
  sink.set_time_scales(std::move(time_scales));
  sink.set_after_step([this, &stop_after_step] {
    if (shutting_down_) stop_after_step.request_stop();
  });
  // A prediction (POST /v1/predictions) runs its sim:// targets in virtual time, in this
  // process: no agents, no sockets.
  const ExecutionMode mode =
      job.value().kind == "predicted" ? ExecutionMode::kPredict : ExecutionMode::kMeasure;
  sink.set_predicted(mode == ExecutionMode::kPredict);
  // Scale-out (issue 11): the job's steps run on its agents through a ShardCoordinator.
  std::shared_ptr<ShardCoordinator> fleet;
  if (parse.plan->agents && mode == ExecutionMode::kMeasure) {
    if (!shard_hub_) {
      fail("the plan has agents but this llmcapd cannot coordinate agents (no shard hub)");
      return;
    }
    fleet = shard_hub_->open(job_id, *parse.plan->agents);
  }
  if (mode == ExecutionMode::kPredict) {
    if (const auto problems = PlanExecutor::prediction_problems(plan); !problems.empty()) {
      fail("cannot predict: " + problems.front());
      return;
    }
  }
  // max_job_duration_s, enforced while the job runs: the estimate checked at submission cannot
  // know how long request-count windows, drains and lengthened confirms take on this target.
  std::atomic<bool> overran{false};
  std::jthread job_clock;
  if (max_job_duration_s_ > 0) {
    const auto limit = std::chrono::duration<double>(max_job_duration_s_);
    job_clock = std::jthread([limit, &overran, &stop_after_step](std::stop_token done) {
      std::mutex m;
      std::condition_variable_any cv;
      std::unique_lock lock(m);
      cv.wait_for(lock, done, limit, [] { return false; });
      if (done.stop_requested()) return;
      overran = true;
      stop_after_step.request_stop();  // cuts the running step (stored as partial)
    });
  }
  PlanExecutor executor(sims_, sink, fleet.get(), mode);
  ExecutionResult result;
  try {
    if (mode == ExecutionMode::kPredict) {
      // A prediction is pure CPU work beside jobs that may be measuring: it runs on a thread of
      // its own at nice 10, so it never takes the load generator's CPU (a delayed schedule would
      // be measured as the target's latency). Its own figures do not depend on time.
      std::exception_ptr failure;
      std::thread worker([&] {
        (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 10);
        try {
          result = executor.run(plan, stop_after_step.get_token(), resume);
        } catch (...) {
          failure = std::current_exception();
        }
      });
      worker.join();
      if (failure) std::rethrow_exception(failure);
    } else {
      result = executor.run(plan, stop_after_step.get_token(), resume);
    }
  } catch (...) {
    if (fleet) shard_hub_->close(job_id, "failed");  // the agents must not wait for more steps
    throw;
  }
  if (job_clock.joinable()) {
    job_clock.request_stop();
    job_clock.join();
  }
  if (overran && result.error.empty()) {
    char why[256];
    std::snprintf(why, sizeof why,
                  "stopped after running %.0f s, the daemon's max_job_duration_s (the plan was "
                  "estimated at %.0f s); the steps stored so far are kept",
                  max_job_duration_s_, parse.estimated_duration_s);
    result.error = why;
  }
  if (fleet)
    shard_hub_->close(job_id, !result.error.empty() ? "failed"
                              : result.cancelled    ? "stopped"
                                                    : "finished");
  result.results["job_id"] = job_id;
  result.results["kind"] = job.value().kind;
  // The load generator's host GPUs, when llmcapd runs on the GPU host (docs/metrics.md §8.2: record
  // the hardware with every result). Absent nvidia-smi is noted, never an error.
  const auto gpus = agent::query_gpus();
  json host{{"available", gpus.available}, {"note", gpus.note}};
  json list = json::array();
  for (const auto& g : gpus.gpus) {
    list.push_back(
        json{{"index", g.index},
             {"name", g.name},
             {"memory_total_mib", g.memory_total_mib ? json(*g.memory_total_mib) : json()},
             {"driver_version", g.driver_version},
             {"power_limit_w", g.power_limit_w ? json(*g.power_limit_w) : json()}});
  }
  host["gpus"] = list;
  result.results["host_gpus"] = host;

  storage::CapacityRecord doc{job_id, storage::kResultsKey,
                              redactor->redacted(result.results.dump()), 0};
  check(store_.save_capacity(doc), job_id, "save results");
  // The verdict beside the state (GET /v1/jobs/{id}), stored before the final state so a
  // client that sees the job finished sees its verdict too.
  if (result.results.contains("verdict")) {
    check(store_.set_verdict(job_id, std::string(analysis::to_string(result.verdict)),
                             result.results["verdict"].dump()),
          job_id, "save verdict");
  }
  for (const auto& t : result.results["targets"]) {
    storage::CapacityRecord r{job_id, t.value("name", ""), t["qualified"].dump(), 0};
    check(store_.save_capacity(r), job_id, "save capacity");
    // Only a job that ran to its end replaces a target's capacity gauges (a failed or cancelled
    // one judged only part of its plan).
    if (result.error.empty() && !result.cancelled) {
      metrics_.set_capacity(t.value("name", ""), capacity_metrics(t),
                            job.value().kind == "predicted");
      const json* verdict = t.contains("verdict") ? &t["verdict"] : nullptr;
      if (job.value().kind != "predicted" && verdict && verdict->contains("outcome")) {
        const std::string outcome = verdict->value("outcome", "");
        metrics_.set_target_verdict(job_id, t.value("name", ""),
                                    outcome == "pass"   ? 1
                                    : outcome == "fail" ? 0
                                                        : -1);
      }
    }
  }

  if (!result.error.empty()) {
    fail(result.error);
    return;
  }
  storage::JobState final_state = storage::JobState::kSucceeded;
  if (result.cancelled) {
    final_state = shutting_down_ ? storage::JobState::kInterrupted : storage::JobState::kCancelled;
  }
  check(store_.update_state(job_id, final_state), job_id, "set final state");
  events_.append(job_id, "state",
                 json{{"state", std::string(storage::to_string(final_state))},
                      {"verdict", std::string(analysis::to_string(result.verdict))},
                      {"all_qualified", result.all_qualified}}
                     .dump());
  events_.finish(job_id);
  server_log()->info("job {} {}", job_id, storage::to_string(final_state));
}

}  // namespace llmcap::server

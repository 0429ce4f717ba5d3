#include "server/fleet/shard_coordinator.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "agent/shard_merge.h"
#include "agent/shard_split.h"
#include "server/fleet/shard_codec.h"

namespace llmcap::server {

using nlohmann::json;

namespace {

std::shared_ptr<spdlog::logger> log() {
  if (auto l = spdlog::get("server")) return l;
  return spdlog::default_logger();
}

std::int64_t system_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string ms_text(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", ms);
  return buf;
}

// How often the waiting worker wakes to check the stop token and report progress.
constexpr auto kPollPeriod = std::chrono::milliseconds(100);

}  // namespace

ShardCoordinator::ShardCoordinator(Options options) : options_(std::move(options)) {
  if (!options_.wall_now_ns) options_.wall_now_ns = system_now_ns;
}

ShardReply ShardCoordinator::clock_exchange() {
  const std::int64_t t1 = options_.wall_now_ns();
  ShardReply r;
  r.body = json{{"t1_ns", t1}, {"t2_ns", options_.wall_now_ns()}};
  return r;
}

std::string ShardCoordinator::region_of(std::int32_t shard) const {
  auto it = registered_.find(shard);
  if (it != registered_.end() && !it->second.region.empty()) return it->second.region;
  return options_.agents.region_of(shard);
}

std::string ShardCoordinator::missing_shards(const std::vector<bool>& have) const {
  std::string out;
  for (std::size_t k = 0; k < have.size(); ++k) {
    if (!have[k]) out += (out.empty() ? "" : ", ") + std::to_string(k);
  }
  return out;
}

ShardReply ShardCoordinator::register_shard(std::int32_t shard, const json& body) {
  ShardReply r;
  if (shard < 0 || shard >= options_.agents.count) {
    r.http_status = 404;
    r.error = "shard " + std::to_string(shard) + " is out of range: job " + options_.job_id +
              " has agents.count " + std::to_string(options_.agents.count) + " (shards 0.." +
              std::to_string(options_.agents.count - 1) + ")";
    return r;
  }
  if (!body.is_object() || !body.contains("clock_offset_ms") ||
      !body["clock_offset_ms"].is_number() || !body.contains("rtt_ms") ||
      !body["rtt_ms"].is_number()) {
    r.http_status = 422;
    r.error = "register body needs numbers clock_offset_ms and rtt_ms";
    return r;
  }
  Registration reg;
  reg.clock_offset_ms = body["clock_offset_ms"].get<double>();
  reg.rtt_ms = body["rtt_ms"].get<double>();
  if (body.contains("region") && body["region"].is_string()) reg.region = body["region"];
  if (body.contains("host") && body["host"].is_string()) reg.host = body["host"];
  std::lock_guard lock(mu_);
  if (std::abs(reg.clock_offset_ms) > options_.agents.max_clock_offset_ms) {
    const std::string why = "shard " + std::to_string(shard) + " rejected: its clock is " +
                            ms_text(reg.clock_offset_ms) + " ms off the daemon's (round trip " +
                            ms_text(reg.rtt_ms) + " ms), more than agents.max_clock_offset_ms " +
                            ms_text(options_.agents.max_clock_offset_ms) +
                            " ms; synchronise its clock (NTP/chrony) and restart it";
    rejected_[shard] = why;
    log()->warn("job {}: {}", options_.job_id, why);
    changed_.notify_all();
    r.http_status = 422;
    r.error = why;
    return r;
  }
  rejected_.erase(shard);
  registered_[shard] = reg;
  log()->info("job {}: shard {} registered (region '{}', clock offset {} ms, rtt {} ms)",
              options_.job_id, shard, reg.region, ms_text(reg.clock_offset_ms),
              ms_text(reg.rtt_ms));
  changed_.notify_all();
  r.body = json{{"registered", true},
                {"shard", shard},
                {"count", options_.agents.count},
                {"region", region_of(shard)}};
  return r;
}

ShardReply ShardCoordinator::next_assignment(std::int32_t shard, std::int64_t after_step) {
  ShardReply r;
  std::lock_guard lock(mu_);
  if (shard < 0 || shard >= options_.agents.count) {
    r.http_status = 404;
    r.error = "shard " + std::to_string(shard) + " is out of range";
    return r;
  }
  if (done_) {
    r.body = json{{"status", "done"}, {"reason", done_reason_}};
    return r;
  }
  if (registered_.count(shard) == 0) {
    r.http_status = 409;
    r.error = "shard " + std::to_string(shard) + " is not registered";
    return r;
  }
  if (current_ && current_->step > after_step && uploads_.count(shard) == 0) {
    const auto k = static_cast<std::size_t>(shard);
    r.body = json{{"status", "run"},
                  {"step", current_->step},
                  {"start_unix_ns", current_->start_unix_ns},
                  {"spec", current_->specs[k]},
                  {"region", region_of(shard)},
                  {"idempotency_key", options_.job_id + "/" + std::to_string(current_->step) + "/" +
                                          std::to_string(shard)}};
    return r;
  }
  r.body = json{{"status", "wait"}, {"retry_after_ms", 100}};
  return r;
}

ShardReply ShardCoordinator::upload(std::int32_t shard, const std::string& key, const json& body) {
  ShardReply r;
  if (shard < 0 || shard >= options_.agents.count) {
    r.http_status = 404;
    r.error = "shard " + std::to_string(shard) + " is out of range";
    return r;
  }
  if (key.empty()) {
    r.http_status = 422;
    r.error = "send an Idempotency-Key header (the assignment's idempotency_key)";
    return r;
  }
  if (!body.is_object() || !body.contains("step") || !body["step"].is_number_integer() ||
      !body.contains("result")) {
    r.http_status = 422;
    r.error = "upload body needs an integer step and a result";
    return r;
  }
  {
    std::lock_guard lock(mu_);
    if (seen_keys_.count(key)) {
      r.body = json{{"stored", false}, {"duplicate", true}};
      return r;
    }
  }
  // Decode outside the lock: a large upload must not hold up the other shards.
  agent::StepResult result;
  if (auto err = step_result_from_json(body["result"], result); !err.empty()) {
    r.http_status = 422;
    r.error = err;
    return r;
  }
  const std::int64_t step = body["step"].get<std::int64_t>();
  std::lock_guard lock(mu_);
  if (seen_keys_.count(key)) {
    r.body = json{{"stored", false}, {"duplicate", true}};
    return r;
  }
  if (!current_ || current_->step != step) {
    r.http_status = 409;
    r.error = "step " + std::to_string(step) + " is not in progress (it ended or was given up)";
    return r;
  }
  seen_keys_.insert(key);
  uploads_[shard] = std::move(result);
  changed_.notify_all();
  r.body = json{{"stored", true}, {"duplicate", false}};
  return r;
}

void ShardCoordinator::finish(const std::string& reason) {
  std::lock_guard lock(mu_);
  done_ = true;
  done_reason_ = reason;
  current_.reset();
  changed_.notify_all();
}

BackendStep ShardCoordinator::run(const agent::StepSpec& spec, std::int64_t global_step,
                                  std::stop_token stop, const agent::ProgressCallback& progress) {
  BackendStep out;
  const auto& agents = options_.agents;
  const auto n = static_cast<std::size_t>(agents.count);
  if (!launched_) {
    launched_ = true;
    if (agents.launch == "kubernetes") {
      const std::string err =
          options_.launcher
              ? options_.launcher(options_.job_id, agents)
              : std::string(
                    "agents.launch is \"kubernetes\" but this daemon has no Kubernetes "
                    "launcher configured (see deploy/k8s/README.md), or use launch "
                    "\"manual\" and start `llmcapd agent` yourself");
      if (!err.empty()) {
        out.result.fatal_error = err;
        return out;
      }
      fleet_launched_ = true;
    }
  }

  std::unique_lock lock(mu_);
  // 1. Every agent registered (only the first step waits in practice).
  const auto register_deadline =
      std::chrono::steady_clock::now() +
      std::chrono::milliseconds(static_cast<std::int64_t>(agents.register_timeout_s * 1000));
  while (true) {
    if (!rejected_.empty()) {
      out.result.fatal_error = rejected_.begin()->second;
      return out;
    }
    if (registered_.size() >= n) break;
    if (stop.stop_requested()) {
      out.result.cancelled = true;
      return out;
    }
    if (std::chrono::steady_clock::now() >= register_deadline) {
      std::vector<bool> have(n, false);
      for (const auto& [k, _] : registered_) have[static_cast<std::size_t>(k)] = true;
      out.result.fatal_error = "agents did not register within agents.register_timeout_s " +
                               ms_text(agents.register_timeout_s) + " s: missing shard(s) " +
                               missing_shards(have) + " of " + std::to_string(n);
      return out;
    }
    changed_.wait_for(lock, kPollPeriod);
  }

  // 2. Publish the shard specs with one start time in the future.
  Assignment a;
  a.step = global_step;
  const std::int64_t now_wall = options_.wall_now_ns();
  const auto now_steady = std::chrono::steady_clock::now();
  const auto delay =
      std::chrono::nanoseconds(static_cast<std::int64_t>(agents.start_delay_ms * 1e6));
  a.start_unix_ns = now_wall + delay.count();
  for (const auto& s : agent::split_step(spec, agents.count))
    a.specs.push_back(step_spec_to_json(s));
  current_ = std::move(a);
  uploads_.clear();
  changed_.notify_all();
  const auto start_steady = now_steady + delay;
  // The planned end is warm-up + window; result_timeout_s covers the drain and the upload.
  const double planned_s = spec.warmup_s + spec.duration_s;
  const auto result_deadline = start_steady + std::chrono::milliseconds(static_cast<std::int64_t>(
                                                  (planned_s + agents.result_timeout_s) * 1000));
  log()->info("job {}: step {} published to {} shards, start in {} ms", options_.job_id,
              global_step, n, ms_text(agents.start_delay_ms));

  // 3. Wait for every shard's upload.
  bool cancelled = false;
  while (uploads_.size() < n) {
    if (stop.stop_requested()) {
      cancelled = true;
      break;
    }
    if (std::chrono::steady_clock::now() >= result_deadline) {
      std::vector<bool> have(n, false);
      for (const auto& [k, _] : uploads_) have[static_cast<std::size_t>(k)] = true;
      out.result.fatal_error = "no result from shard(s) " + missing_shards(have) + " of " +
                               std::to_string(n) + " within agents.result_timeout_s " +
                               ms_text(agents.result_timeout_s) +
                               " s after the step's planned end (agent gone or unreachable?)";
      current_.reset();
      uploads_.clear();
      return out;
    }
    changed_.wait_for(lock, kPollPeriod);
    if (progress) {
      agent::StepProgress p;
      p.elapsed_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::steady_clock::now() - start_steady)
                         .count();
      const double t_s = static_cast<double>(p.elapsed_ns) / 1e9;
      p.in_window = t_s >= spec.warmup_s && t_s < spec.warmup_s + spec.duration_s;
      p.draining = t_s >= spec.warmup_s + spec.duration_s;
      lock.unlock();
      progress(p);
      lock.lock();
    }
  }

  // 4. Merge.
  std::vector<agent::ShardResult> shards;
  for (auto& [k, r] : uploads_) shards.push_back({k, region_of(k), std::move(r)});
  std::map<std::int32_t, Registration> regs = registered_;
  current_.reset();
  uploads_.clear();
  lock.unlock();

  agent::MergedStep merged =
      agent::merge_shards(std::move(shards), spec.in_flight_sample_ms * 1'000'000);
  out.result = std::move(merged.result);
  if (cancelled) {
    out.result.cancelled = true;
    out.result.completed = false;
  }
  // The shards' own epochs are other processes' clocks: the step's t = 0 on this daemon's
  // steady clock is the common start (telemetry is put onto the samples' clock with it).
  out.result.epoch_steady_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(start_steady.time_since_epoch()).count();
  json per_shard = json::array();
  for (const auto& s : merged.shards) {
    const auto it = regs.find(s.shard_index);
    per_shard.push_back(
        json{{"shard", s.shard_index},
             {"region", s.region},
             {"host", it != regs.end() ? it->second.host : ""},
             {"samples", s.samples},
             {"completed", s.completed},
             {"cpu_utilisation", s.client_cpu_utilisation},
             {"dispatch_lag_p99_ms", static_cast<double>(s.dispatch_lag.p99_ns) / 1e6},
             {"clock_offset_ms", it != regs.end() ? it->second.clock_offset_ms : 0.0},
             {"clock_rtt_ms", it != regs.end() ? it->second.rtt_ms : 0.0}});
  }
  out.extra = json{{"count", agents.count}, {"shards", per_shard}};
  // Per-region latency is computed after the executor's time expansion (expand() in
  // plan_executor.cc scales sample times): here the times are still compressed for simulated
  // targets, so the executor recomputes regions from the expanded samples when they exist.
  out.extra["sample_regions"] = merged.sample_regions;
  return out;
}

}  // namespace llmcap::server

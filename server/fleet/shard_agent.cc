#include "server/fleet/shard_agent.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <thread>

#include "agent/shard_split.h"
#include "agent/step_runner.h"
#include "net/blocking_client.h"
#include "server/fleet/shard_codec.h"

namespace llmcap::server {

using nlohmann::json;

namespace {

// Sleeps up to `d`, waking early when stopped. Returns false when stopped.
bool sleep_for(std::chrono::nanoseconds d, const std::stop_token& stop) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (!stop.stop_requested()) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= until) return true;
    std::this_thread::sleep_for(
        std::min<std::chrono::nanoseconds>(until - now, std::chrono::milliseconds(50)));
  }
  return false;
}

std::string describe(const net::BlockingReply& r) {
  if (r.status == 0) return "daemon unreachable: " + r.error;
  const json j = json::parse(r.body, nullptr, false);
  if (j.is_object() && j.contains("detail") && j["detail"].is_string())
    return "HTTP " + std::to_string(r.status) + ": " + j["detail"].get<std::string>();
  return "HTTP " + std::to_string(r.status) + ": " + r.body.substr(0, 300);
}

std::string hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

}  // namespace

ShardAgent::ShardAgent(ShardAgentOptions options) : o_(std::move(options)) {
  if (!o_.log) o_.log = [](const std::string& line) { std::cerr << line << "\n"; };
}

std::int64_t ShardAgent::wall_now_ns() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
             .count() +
         static_cast<std::int64_t>(o_.test_clock_offset_ms * 1e6);
}

int ShardAgent::fail(int code, std::string message) {
  error_ = std::move(message);
  return code;
}

bool ShardAgent::measure_clock(std::string& why) {
  net::BlockingClient client(o_.daemon_url, o_.token,
                             std::chrono::milliseconds(o_.request_deadline_ms));
  const std::string path =
      "/v1/jobs/" + o_.job_id + "/shards/" + std::to_string(o_.shard) + "/clock";
  double best_delay = std::numeric_limits<double>::infinity();
  for (int i = 0; i < o_.clock_rounds; ++i) {
    const std::int64_t t0 = wall_now_ns();
    const net::BlockingReply r = client.request("POST", path, "{}");
    const std::int64_t t3 = wall_now_ns();
    if (r.status != 200) {
      why = describe(r);
      return false;
    }
    const json j = json::parse(r.body, nullptr, false);
    if (!j.is_object() || !j.contains("t1_ns") || !j.contains("t2_ns")) {
      why = "clock exchange: unexpected answer " + r.body.substr(0, 200);
      return false;
    }
    const auto t1 = j["t1_ns"].get<std::int64_t>();
    const auto t2 = j["t2_ns"].get<std::int64_t>();
    const double delay = static_cast<double>((t3 - t0) - (t2 - t1));
    const double offset = (static_cast<double>(t1 - t0) + static_cast<double>(t2 - t3)) / 2;
    if (delay < best_delay) {
      best_delay = delay;
      offset_ms_ = offset / 1e6;
      rtt_ms_ = delay / 1e6;
    }
  }
  return true;
}

int ShardAgent::run(std::stop_token stop) {
  if (o_.job_id.empty()) return fail(2, "--job is required");
  if (o_.shard < 0)
    return fail(2, "--shard is required (or LLMCAP_SHARD_INDEX / JOB_COMPLETION_INDEX)");
  net::BlockingClient client(o_.daemon_url, o_.token,
                             std::chrono::milliseconds(o_.request_deadline_ms));
  if (!client.valid()) return fail(2, client.url_error());
  const std::string base = "/v1/jobs/" + o_.job_id + "/shards/" + std::to_string(o_.shard);
  const std::string who = "job " + o_.job_id + " shard " + std::to_string(o_.shard);

  // 1. Clock exchange + registration, retried while the job has no fleet yet (queued).
  const auto register_deadline =
      std::chrono::steady_clock::now() +
      std::chrono::milliseconds(static_cast<std::int64_t>(o_.register_timeout_s * 1000));
  std::chrono::milliseconds backoff(200);
  std::string region;
  while (true) {
    if (stop.stop_requested()) return fail(3, "stopped");
    std::string why;
    if (measure_clock(why)) {
      json body{{"clock_offset_ms", offset_ms_}, {"rtt_ms", rtt_ms_}, {"host", hostname()}};
      if (!o_.region.empty()) body["region"] = o_.region;
      const net::BlockingReply r = client.request("POST", base + "/register", body.dump());
      if (r.status == 200) {
        const json j = json::parse(r.body, nullptr, false);
        region = j.is_object() ? j.value("region", "") : "";
        break;
      }
      why = describe(r);
      if (r.status != 0 && r.status != 404 && r.status != 503)
        return fail(3, who + ": registration refused: " + why);
    }
    if (std::chrono::steady_clock::now() >= register_deadline)
      return fail(3, who + ": could not register within " +
                         std::to_string(static_cast<int>(o_.register_timeout_s)) + " s: " + why);
    o_.log(who + ": waiting to register (" + why + ")");
    if (!sleep_for(backoff, stop)) return fail(3, "stopped");
    backoff = std::min<std::chrono::milliseconds>(backoff * 2, std::chrono::seconds(5));
  }
  char line[200];
  std::snprintf(line, sizeof line, ": registered (region '%s', clock offset %.3f ms, rtt %.3f ms)",
                region.c_str(), offset_ms_, rtt_ms_);
  o_.log(who + line);

  // 2. Assignments until the job is done.
  std::int64_t last_step = -1;
  auto unreachable_since = std::chrono::steady_clock::time_point::max();
  while (!stop.stop_requested()) {
    const net::BlockingReply r =
        client.request("GET", base + "/assignment?after=" + std::to_string(last_step));
    if (r.status != 200) {
      // A job that is gone (evicted from the daemon's recent list) is over for us too.
      if (r.status == 404 && last_step >= 0) {
        o_.log(who + ": the job has no fleet any more (" + describe(r) + "): done");
        return 0;
      }
      if (r.status != 0 && r.status != 503) return fail(3, who + ": assignment: " + describe(r));
      const auto now = std::chrono::steady_clock::now();
      unreachable_since = std::min(unreachable_since, now);
      if (now - unreachable_since >
          std::chrono::milliseconds(static_cast<std::int64_t>(o_.daemon_timeout_s * 1000)))
        return fail(3, who + ": " + describe(r));
      if (!sleep_for(std::chrono::milliseconds(500), stop)) break;
      continue;
    }
    unreachable_since = std::chrono::steady_clock::time_point::max();
    const json a = json::parse(r.body, nullptr, false);
    const std::string status = a.is_object() ? a.value("status", "") : "";
    if (status == "done") {
      o_.log(who + ": job done (" + a.value("reason", "") + ")");
      return 0;
    }
    if (status != "run") {
      const int wait_ms = a.is_object() ? a.value("retry_after_ms", 100) : 100;
      if (!sleep_for(std::chrono::milliseconds(std::clamp(wait_ms, 10, 5000)), stop)) break;
      continue;
    }
    agent::StepSpec spec;
    if (auto err = step_spec_from_json(a["spec"], spec); !err.empty())
      return fail(3, who + ": bad assignment: " + err);
    const std::int64_t step = a.value("step", std::int64_t{-1});
    const std::string key = a.value("idempotency_key", "");
    // Wall time only to find the start; from then on the monotonic clock measures.
    const std::int64_t wait_ns = a.value("start_unix_ns", std::int64_t{0}) - wall_now_ns();
    if (wait_ns > 0 && !sleep_for(std::chrono::nanoseconds(wait_ns), stop)) break;
    agent::StepResult result;
    if (agent::is_idle_shard(spec)) {
      result.completed = true;
      result.window_start_ns = static_cast<std::int64_t>(spec.warmup_s * 1e9);
      result.window_end_ns =
          result.window_start_ns + static_cast<std::int64_t>(spec.duration_s * 1e9);
      result.end_ns = result.window_end_ns;
    } else {
      agent::StepRunner runner;
      result = runner.run(spec, stop);
    }
    std::snprintf(line, sizeof line, ": step %lld ran (%zu samples, started %.1f ms late)",
                  static_cast<long long>(step), result.samples.size(),
                  wait_ns < 0 ? -static_cast<double>(wait_ns) / 1e6 : 0.0);
    o_.log(who + line);

    // 3. Upload with retries; the key makes a repeat harmless.
    const std::string body = json{{"step", step}, {"result", step_result_to_json(result)}}.dump();
    bool stored = false;
    std::chrono::milliseconds delay(250);
    for (int attempt = 1; attempt <= o_.upload_attempts && !stop.stop_requested(); ++attempt) {
      const net::BlockingReply u =
          client.request("POST", base + "/results", body, {{"Idempotency-Key", key}});
      if (u.status == 200) {
        stored = true;
        if (o_.test_upload_twice) {
          const net::BlockingReply again =
              client.request("POST", base + "/results", body, {{"Idempotency-Key", key}});
          o_.log(who + ": test hook: repeated upload answered " + std::to_string(again.status) +
                 " " + again.body);
        }
        break;
      }
      if (u.status == 409) {  // the daemon gave the step up (timeout, cancel): move on
        o_.log(who + ": step " + std::to_string(step) + " not accepted: " + describe(u));
        stored = true;
        break;
      }
      if (u.status >= 400 && u.status < 500 && u.status != 429)
        return fail(3, who + ": upload refused: " + describe(u));
      o_.log(who + ": upload attempt " + std::to_string(attempt) + " failed: " + describe(u));
      if (!sleep_for(delay, stop)) break;
      delay = std::min<std::chrono::milliseconds>(delay * 2, std::chrono::seconds(8));
    }
    if (!stored && !stop.stop_requested())
      return fail(3, who + ": upload of step " + std::to_string(step) + " failed after " +
                         std::to_string(o_.upload_attempts) + " attempts");
    last_step = step;
  }
  return fail(3, "stopped");
}

}  // namespace llmcap::server

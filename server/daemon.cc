#include "server/daemon.h"

#include <spdlog/spdlog.h>

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>

#include <chrono>
#include <latch>
#include <stdexcept>

#include "migrations/migrations.h"
#include "net/http_server.h"
#include "server/daemon_metrics.h"
#include "server/engine/embedded_sims.h"
#include "server/fleet/shard_hub.h"
#include "server/job_runner.h"
#include "server/jobs/job_events.h"
#include "server/jobs/job_scheduler.h"
#include "server/logging.h"
#include "server/rest/rest_api.h"
#include "storage/database.h"
#include "storage/disk_space.h"
#include "storage/migration.h"
#include "storage/migrator.h"
#include "storage/sample_writer.h"
#include "storage/sqlite_job_store.h"

namespace llmcap::server {

namespace {
// The API's threads (HTTP I/O and the blocking pool) yield the CPU to the load generator, so
// a flood of API requests cannot delay a running job's sends (issue 9: measurement must not be
// disturbed; schedule lag, docs/metrics.md §3.4). Called on the thread itself. Under a real-time
// policy (llmcapd started under `chrt -f P`) the thread goes one priority below the rest of the
// process (P−1, or SCHED_OTHER when P is 1), so a waking agent thread always preempts it while
// the API still runs ahead of ordinary processes; otherwise its nice value goes to kApiNice
// (CFS weight 110 vs 1024 for the agent's nice 0). No privilege is needed for either; a failure
// leaves the thread as it was.
constexpr int kApiNice = 10;
// Names the calling thread (top -H, gdb, /proc/PID/task/TID/comm; at most 15 characters).
void name_thread(const char* name) { (void)pthread_setname_np(pthread_self(), name); }

void yield_cpu_to_measurement() {
  int policy = SCHED_OTHER;
  sched_param param{};
  if (pthread_getschedparam(pthread_self(), &policy, &param) != 0) return;
  if (policy == SCHED_FIFO || policy == SCHED_RR) {
    sched_param lower{};
    if (param.sched_priority > sched_get_priority_min(policy)) {
      lower.sched_priority = param.sched_priority - 1;
      (void)pthread_setschedparam(pthread_self(), policy, &lower);
      return;
    }
    (void)pthread_setschedparam(pthread_self(), SCHED_OTHER, &lower);
  }
  (void)setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), kApiNice);
}

// Every API connection and every load-generator connection is a file descriptor: the soft
// limit (often 1024, or 256 under some supervisors) goes up to the hard one at start (issue 23
// #7). Returns the limit in force.
rlim_t raise_open_file_limit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 0;
  if (rl.rlim_cur < rl.rlim_max) {
    rlimit raised = rl;
    raised.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) return raised.rlim_cur;
  }
  return rl.rlim_cur;
}
}  // namespace

Daemon::Daemon(DaemonConfig config) : config_(std::move(config)) {}

Daemon::~Daemon() { stop(0); }

void Daemon::start() {
  const rlim_t open_files = raise_open_file_limit();
  if (open_files != 0 &&
      open_files < static_cast<rlim_t>(config_.max_connections + config_.reserved_connections) + 64)
    server_log()->warn(
        "open file limit {} is below max_connections ({}) plus room for the load "
        "generator: connections beyond it are refused (raise LimitNOFILE / ulimit -n)",
        static_cast<unsigned long long>(open_files), config_.max_connections);
  // 1. Database: migrate (refusing a newer schema), then open the store and the writer.
  {
    std::vector<storage::Migration> migrations;
    for (const auto& f : migrations::all()) {
      auto m = storage::parse_migration(f.name, std::string(f.content));
      if (!m.ok())
        throw std::runtime_error("embedded migration " + std::string(f.name) + ": " +
                                 m.status().to_string());
      migrations.push_back(m.value());
    }
    auto db = storage::Database::open(config_.database);
    if (!db.ok())
      throw std::runtime_error("database " + config_.database + ": " + db.status().to_string());
    storage::Migrator migrator(migrations);
    auto report = migrator.migrate(db.value());
    if (!report.ok())
      throw std::runtime_error("database " + config_.database + ": " + report.status().to_string());
    if (!report.value().applied.empty())
      server_log()->info("database {}: migrated from version {} to {}", config_.database,
                         report.value().from_version, report.value().to_version);
    // A corrupted page is otherwise found only when a read hits it: check every page's
    // structure once now (quick_check: O(size), no index cross-check) and report it.
    database_check_.clear();
    if (auto qc = db.value().prepare("PRAGMA quick_check(5)"); qc.ok()) {
      while (true) {
        auto row = qc.value().step();
        if (!row.ok()) {
          database_check_ += (database_check_.empty() ? "" : "; ") + row.status().to_string();
          break;
        }
        if (!row.value()) break;
        database_check_ += (database_check_.empty() ? "" : "; ") + qc.value().column_text(0);
      }
    } else {
      database_check_ = qc.status().to_string();
    }
    if (database_check_.empty()) database_check_ = "no answer";
    if (database_check_ != "ok")
      server_log()->error("database {}: PRAGMA quick_check found: {} (/readyz answers 503)",
                          config_.database, database_check_);
  }
  auto store = storage::SqliteJobStore::open(config_.database);
  if (!store.ok()) throw std::runtime_error("database: " + store.status().to_string());
  store_ = std::move(store.value());
  metrics_ = std::make_unique<DaemonMetrics>();
  storage::SampleWriterOptions wo;
  DaemonMetrics* metrics = metrics_.get();
  wo.on_batch = [metrics](std::int64_t latency_ns, std::size_t, const storage::Status&) {
    metrics->observe_storage_batch_seconds(static_cast<double>(latency_ns) * 1e-9);
  };
  auto writer = storage::SampleWriter::open(config_.database, wo);
  if (!writer.ok()) throw std::runtime_error("database: " + writer.status().to_string());
  writer_ = std::move(writer.value());

  // 2. Restart safety: running jobs of a previous process become interrupted.
  auto interrupted = store_->mark_interrupted_at_startup();
  if (!interrupted.ok()) throw std::runtime_error("database: " + interrupted.status().to_string());
  for (const auto& j : interrupted.value()) {
    server_log()->warn(
        "job {} was running when llmcapd stopped: now interrupted (resume with POST "
        "/v1/jobs/{}:resume)",
        j.id, j.id);
  }

  // 3. Execution: simulators, runner, scheduler; requeue jobs that were waiting.
  events_ = std::make_unique<JobEvents>();
  sims_ = std::make_unique<EmbeddedSimulators>();
  shards_ = std::make_unique<ShardHub>();
  server_log()->info("agent fleets: {}", shards_->use_kubernetes(config_.k8s_options()));
  runner_ = std::make_unique<JobRunner>(*store_, *writer_, *sims_, *metrics_, *events_,
                                        config_.telemetry_interval_s);
  runner_->set_dataset_policy(
      DatasetPolicy{true, config_.dataset_dir,
                    static_cast<std::uint64_t>(config_.max_dataset_mib * 1024 * 1024)});
  runner_->set_target_allowlist(config_.target_allowlist);
  runner_->set_max_job_duration_s(config_.max_job_duration_s);
  runner_->set_shard_hub(shards_.get());
  runner_->set_database_file(config_.database, storage::file_identity(config_.database));
  JobRunner* runner = runner_.get();
  // Predictions get their own worker (JobScheduler::Lane::kPrediction): they never wait behind
  // a measured job.
  scheduler_ = std::make_unique<JobScheduler>(
      JobScheduler::Options{config_.max_concurrent_jobs, config_.max_queued_jobs, 1},
      [runner](const std::string& id, std::stop_token stop) { runner->run(id, std::move(stop)); });
  storage::JobFilter queued;
  queued.state = storage::JobState::kQueued;
  queued.limit = 1000;
  if (auto page = store_->list_jobs(queued); page.ok()) {
    auto jobs = page.value().jobs;
    std::reverse(jobs.begin(), jobs.end());  // oldest first
    for (const auto& j : jobs) {
      const bool predicted = j.kind == "predicted";
      std::vector<std::string> keys;  // a prediction loads no target
      if (!predicted)
        for (const auto& t : j.targets) keys.push_back(t.base_url);
      scheduler_->submit(
          j.id, keys, j.priority,
          predicted ? JobScheduler::Lane::kPrediction : JobScheduler::Lane::kMeasured);
    }
  }

  // 4. The API.
  blocking_ = std::make_unique<boost::asio::thread_pool>(2);
  {
    // One task per pool thread: each waits until both have started, so both threads run one.
    std::latch started(2), lowered(2);
    for (int i = 0; i < 2; ++i) {
      boost::asio::post(*blocking_, [&started, &lowered] {
        name_thread("llmcapd-pool");
        yield_cpu_to_measurement();
        started.arrive_and_wait();
        lowered.count_down();
      });
    }
    lowered.wait();
  }
  api_ = std::make_unique<RestApi>(
      RestApiDeps{config_.rest_options(), *store_, *scheduler_, *metrics_, *events_, shutting_down_,
                  shards_.get(), database_check_, storage::file_identity(config_.database)},
      *blocking_);
  net::HttpServerOptions ho;
  ho.address = config_.listen_address;
  ho.port = config_.port;
  ho.max_body_bytes = static_cast<std::size_t>(config_.max_body_bytes);
  ho.max_connections = static_cast<std::size_t>(config_.max_connections);
  ho.read_timeout = std::chrono::milliseconds(config_.read_timeout_ms);
  ho.idle_timeout = std::chrono::milliseconds(config_.idle_timeout_ms);
  ho.max_connections_per_client = static_cast<std::size_t>(config_.max_connections_per_client);
  // Health and metrics stay reachable when the API is full (issue 23 #7).
  ho.reserved_connections = static_cast<std::size_t>(config_.reserved_connections);
  ho.reserved_paths = {"/healthz", "/readyz", "/metrics"};
  ho.slow_request_evict_after = std::chrono::milliseconds(config_.slow_request_evict_ms);
  ho.server_header = "llmcapd";
  // DNS rebinding (issue 35 #2): only the Host names the daemon is meant to be reached by.
  ho.allowed_hosts = config_.effective_allowed_hosts();
  ho.allow_ip_literal_hosts = config_.allows_ip_literal_hosts();
  http_ = std::make_unique<net::HttpServer>(io_, ho, api_->handler());
  http_->start();
  for (int i = 0; i < config_.io_threads; ++i) {
    io_threads_.emplace_back([this] {
      name_thread("llmcapd-io");
      yield_cpu_to_measurement();
      io_.run();
    });
  }

  // Storage queue depth and job counts for /metrics, once a second.
  stats_thread_ = std::thread([this] {
    while (!stopped_) {
      metrics_->set_storage_queue_depth(static_cast<double>(writer_->stats().queue_depth_rows));
      if (http_) {
        const auto refused = http_->stats();
        metrics_->set_api_connections_refused("full", static_cast<double>(refused.rejected_full));
        metrics_->set_api_connections_refused("per_client",
                                              static_cast<double>(refused.rejected_per_client));
        metrics_->set_api_connections_refused("fd_exhausted",
                                              static_cast<double>(refused.fd_exhausted));
        metrics_->set_api_connections_refused("slow_request",
                                              static_cast<double>(refused.evicted_slow));
      }
      metrics_->set_queue_length(static_cast<double>(scheduler_->queued()));
      metrics_->set_jobs("queued", static_cast<double>(scheduler_->queued()));
      metrics_->set_jobs("running", static_cast<double>(scheduler_->running()));
      for (int i = 0; i < 10 && !stopped_; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  if (config_.open_to_network())
    server_log()->warn(
        "SECURITY: the API listens on {} with no admin_tokens or read_tokens: anyone who can "
        "reach this port can submit load tests and read results (set admin_tokens, or listen on "
        "127.0.0.1; docs/security.md)",
        config_.listen_address);
  server_log()->info("llmcapd listening on http://{}:{} (database {})", config_.listen_address,
                     http_->port(), config_.database);
}

std::uint16_t Daemon::port() const { return http_ ? http_->port() : 0; }

void Daemon::run_until_signal() {
  boost::asio::io_context sig_io;
  boost::asio::signal_set signals(sig_io, SIGINT, SIGTERM);
  int got = 0;
  signals.async_wait([&](const boost::system::error_code&, int s) { got = s; });
  sig_io.run();
  server_log()->info("signal {}: shutting down (grace {} s)", got, config_.shutdown_grace_s);
  stop(config_.shutdown_grace_s);
}

void Daemon::stop(double grace_s) {
  if (stopped_.exchange(true)) return;
  shutting_down_ = true;  // the API answers 503 to new work from now on
  if (runner_) runner_->set_shutting_down();
  if (scheduler_)
    scheduler_->shutdown(std::chrono::milliseconds(static_cast<std::int64_t>(grace_s * 1000)));
  if (writer_) (void)writer_->flush();
  if (http_) http_->stop();
  if (blocking_) blocking_->join();
  io_.stop();
  for (auto& t : io_threads_) {
    if (t.joinable()) t.join();
  }
  if (stats_thread_.joinable()) stats_thread_.join();
  if (sims_) sims_->stop();
  http_.reset();
  writer_.reset();
  server_log()->info("llmcapd stopped");
}

}  // namespace llmcap::server

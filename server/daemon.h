// Daemon: `llmcapd serve` assembled from its parts — migrated SQLite database, job store,
// sample writer (its own thread), embedded simulators (their own thread), job scheduler
// (worker threads), REST API on an HTTP listener (I/O threads) with a blocking pool for SQLite
// reads. It owns them and the order they start and stop in; each part does its own work.
//
// Lifecycle: start() (throws std::runtime_error with the reason), then run_until_signal() or
// wait_for_stop(); stop(grace) stops accepting, lets the running step finish for up to the
// grace period, marks cut-short jobs interrupted, flushes storage and closes the listener.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <memory>
#include <thread>
#include <vector>

#include "server/daemon_config.h"

namespace llmcap::net {
class HttpServer;
}
namespace llmcap::storage {
class SqliteJobStore;
class SampleWriter;
}  // namespace llmcap::storage

namespace llmcap::server {

class DaemonMetrics;
class EmbeddedSimulators;
class JobEvents;
class JobRunner;
class JobScheduler;
class RestApi;
class ShardHub;

class Daemon {
 public:
  explicit Daemon(DaemonConfig config);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  void start();
  std::uint16_t port() const;
  // Blocks until SIGINT/SIGTERM, then stop(config.shutdown_grace_s).
  void run_until_signal();
  void stop(double grace_s);

 private:
  DaemonConfig config_;
  std::atomic<bool> shutting_down_{false};
  std::unique_ptr<DaemonMetrics> metrics_;
  std::unique_ptr<JobEvents> events_;
  std::unique_ptr<storage::SqliteJobStore> store_;
  std::unique_ptr<storage::SampleWriter> writer_;
  std::unique_ptr<EmbeddedSimulators> sims_;
  std::unique_ptr<ShardHub> shards_;  // agent fleets of jobs with `agents` (issue 11)
  std::unique_ptr<JobRunner> runner_;
  std::unique_ptr<JobScheduler> scheduler_;
  std::unique_ptr<boost::asio::thread_pool> blocking_;
  std::unique_ptr<RestApi> api_;
  std::string database_check_ = "ok";  // PRAGMA quick_check at start (/readyz reports it)
  boost::asio::io_context io_;
  std::unique_ptr<net::HttpServer> http_;
  std::vector<std::thread> io_threads_;
  std::thread stats_thread_;
  std::atomic<bool> stopped_{false};
};

}  // namespace llmcap::server

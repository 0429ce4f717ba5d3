// RestApi: llmcapd's REST resources (docs/openapi.json) on top of the route table
// (api/router.h), the plan reader, the job store and the scheduler. Each request is parsed on
// the connection's strand, then handled on the blocking pool (SQLite never runs on an I/O
// thread), and the response goes back through the connection. Streaming routes
// (/events, /requests) alternate between the pool (reads) and the strand (writes).
//
// Auth: bearer tokens from the config; with none configured the API is open (the loopback
// default). Errors are problem+json through api/problem_json.h.
// Thread-safety: handler() may be invoked concurrently from any I/O thread.
#pragma once

#include <atomic>
#include <boost/asio/thread_pool.hpp>
#include <memory>
#include <optional>

#include "net/http_server.h"
#include "storage/disk_space.h"

namespace llmcap::storage {
class JobStore;
}

namespace llmcap::server {

struct DaemonConfig;
class DaemonMetrics;
class JobEvents;
class JobScheduler;
class ShardHub;

struct RestApiDeps {
  const DaemonConfig& config;
  storage::JobStore& store;
  JobScheduler& scheduler;
  DaemonMetrics& metrics;
  JobEvents& events;
  std::atomic<bool>& shutting_down;
  ShardHub* shards = nullptr;  // agent fleets (/v1/jobs/{id}/shards/...); null: 404
  // PRAGMA quick_check of the database at start: "ok", or what it found (then /readyz is 503).
  std::string database_check = "ok";
  // The database file at start: deleted or replaced later means not ready (issue 23 #12).
  std::optional<storage::FileIdentity> database_file;
};

class RestApi {
 public:
  RestApi(RestApiDeps deps, boost::asio::thread_pool& blocking);
  ~RestApi();
  net::Handler handler();

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace llmcap::server

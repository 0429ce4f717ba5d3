// RestApi: llmcapd's REST resources (docs/openapi.json). The routes are one table (routes.h):
// each row names its method, path pattern, handler and who may call it; the handlers live in one
// file per resource (jobs, results, plans, system, shards). Each request is parsed on the
// connection's strand, then handled on the blocking pool (SQLite never runs on an I/O thread),
// and the response goes back through the connection. Streaming routes (/events, /requests)
// alternate between the pool (reads) and the strand (writes).
//
// Auth: bearer tokens from the options, each of a tenant (server/rest/api_tokens.h); with none
// configured the API is open (the loopback default). A route with a job id answers 404 for a job
// of another tenant, before its handler runs. Errors are problem+json through api/problem_json.h.
// Thread-safety: handler() may be invoked concurrently from any I/O thread.
#pragma once

#include <atomic>
#include <boost/asio/thread_pool.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/plan_reader.h"
#include "net/http_server.h"
#include "server/fleet/k8s_launcher.h"
#include "server/rest/api_tokens.h"
#include "storage/disk_space.h"

namespace llmcap::storage {
class JobStore;
}

namespace llmcap::server {

class JobEvents;
class JobScheduler;
class ShardHub;

// What the REST API needs to know of the daemon's settings (server/daemon_config.h fills it).
struct RestOptions {
  api::PlanLimits plan_limits;  // a larger plan is refused (422), naming the limit
  // Every bearer token with its tenant and role (api_tokens()); agents use an admin one.
  std::vector<ApiToken> tokens;
  bool open_health = true;   // /healthz and /readyz need no token
  bool open_metrics = true;  // /metrics needs no token
  // Hosts/CIDRs plans may target (sim:// is always allowed).
  std::vector<std::string> target_allowlist = {"127.0.0.0/8", "::1/128", "localhost"};
  std::string dataset_dir;  // "" = plans cannot name dataset files
  double max_dataset_mib = 256;
  std::string database = "llmcap.db";  // the SQLite file /readyz and the disk check watch
  double min_free_disk_mib = 64;       // POST /v1/jobs answers 507 below this
  int max_queued_jobs = 64;            // POST /v1/jobs answers 429 beyond this
  std::string listen_address = "127.0.0.1";
  bool open_to_network = false;  // no tokens and not loopback: /readyz warns
  K8sOptions k8s;                // the agents manifest route

  bool auth_disabled() const { return tokens.empty(); }
};

// The daemon's Prometheus registry as the API sees it: serves /metrics and observes requests.
class ApiMetrics {
 public:
  virtual ~ApiMetrics() = default;
  virtual std::string serialize() const = 0;
  virtual void observe_api_request(const std::string& route, int status, double seconds) = 0;
  // A job or prediction accepted for `tenant` (a configured name: bounded cardinality).
  virtual void observe_job_submitted(const std::string& tenant, const std::string& kind) = 0;
};

struct RestApiDeps {
  RestOptions options;
  storage::JobStore& store;
  JobScheduler& scheduler;
  ApiMetrics& metrics;
  JobEvents& events;
  std::atomic<bool>& shutting_down;
  ShardHub* shards = nullptr;  // agent fleets (/v1/jobs/{id}/shards/...); null: 404
  // PRAGMA quick_check of the database at start: "ok", or what it found (then /readyz is 503).
  std::string database_check = "ok";
  // The database file at start: deleted or replaced later means not ready.
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

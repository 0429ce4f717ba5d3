// DaemonConfig: every setting of `llmcapd serve`, with its default and meaning.
// Filled once at start-up from defaults < config file < LLMCAP_* environment < flags, validated
// by validate(), then split into the per-module option structs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "server/fleet/k8s_launcher.h"
#include "server/rest/rest_api.h"
#include "server/settings.h"

namespace llmcap::server {

struct DaemonConfig {
  // --- listener ---
  std::string listen_address = "127.0.0.1";  // address of the REST API and /metrics
  std::uint16_t port = 8080;                 // 0 picks a free port (printed at start)
  int io_threads = 1;                        // threads serving the API (never the load generator)
  std::int64_t max_body_bytes = 1 << 20;     // larger request bodies (plans) get 413
  int max_connections = 512;                 // API connections beyond this get 503
  int read_timeout_ms = 10'000;              // deadline to receive a whole request
  // Keep-alive wait for a connection's next request; shrinks to 1 s as the API fills up.
  int idle_timeout_ms = 60'000;
  // Connections one client address may hold (0 = no cap). Behind a proxy every client has the
  // proxy's address: leave it 0 there.
  int max_connections_per_client = 0;
  // Beyond max_connections, this many more connections may still reach /healthz, /readyz and
  // /metrics (and nothing else), so probes and scrapes work while the API is full.
  int reserved_connections = 16;
  // Beyond max_connections, a new connection takes the slot of the one whose request has been
  // arriving longest, once that request began this long ago (slowloris); 0 = never.
  int slow_request_evict_ms = 1'000;

  // --- storage ---
  std::string database = "llmcap.db";  // SQLite file (":memory:" for throwaway runs)
  // POST /v1/jobs answers 507 while the database's filesystem has less free space than this
  // (a job accepted on a full disk could never be moved to running or failed). 0 = no check.
  double min_free_disk_mib = 64;

  // --- logging ---
  std::string log_level = "info";  // trace, debug, info, warn, error, critical, off
  bool log_json = false;           // JSON-lines logs for log shippers

  // --- scheduler and limits ---
  int max_concurrent_jobs = 1;   // measured jobs running at once (never two on one
                                 // target); predictions have a worker of their own
  int max_queued_jobs = 64;      // per kind (measured, predicted): 429 beyond this
  int max_targets = 16;          // per plan
  int max_concurrency = 4096;    // per step
  double max_rate_rps = 10'000;  // per step
  // Longest a job may run: plans estimated above it are refused, and a job running past it
  // all the same (per start) is stopped there and fails.
  double max_job_duration_s = 86'400;
  double shutdown_grace_s = 30;  // SIGTERM: time to finish the current step before cancel

  // --- security ---
  std::vector<std::string> admin_tokens;  // bearer tokens that may submit/cancel/delete
  std::vector<std::string> read_tokens;   // bearer tokens that may only read
  // admin_tokens and read_tokens belong to the tenant "default". Further tenants' tokens:
  // "TENANT:ROLE:TOKEN" (ROLE admin or read); a tenant sees and acts on its own jobs only, and
  // TENANT "*" is global (every tenant's jobs). docs/security.md, "Tenants".
  std::vector<std::string> tenant_tokens;
  bool open_health = true;   // /healthz and /readyz need no token
  bool open_metrics = true;  // /metrics needs no token
  // Host header values the API answers to (DNS-rebinding defence; docs/security.md): names or IP
  // literals, no port; "*" = any. Always added: localhost, the loopback addresses, the listen
  // address (any IP literal when it is 0.0.0.0 or ::) and k8s_daemon_url's host. Others: 421.
  std::vector<std::string> allowed_hosts;
  // Hosts/CIDRs plans may target; sim:// embedded targets are always allowed.
  std::vector<std::string> target_allowlist = {"127.0.0.0/8", "::1/128", "localhost"};
  // Directory whose files plans may name as workload.dataset.path (relative to it); "" = plans
  // submitted over REST cannot use dataset files (docs/security.md).
  std::string dataset_dir;
  double max_dataset_mib = 256;  // largest dataset file a plan may use

  // --- telemetry ---
  double telemetry_interval_s = 1.0;  // scrape period of a target's metrics_url

  // --- Kubernetes agents (plans with agents.launch = kubernetes; deploy/k8s/README.md) ---
  // auto: create the agent Indexed Job through the API when a service account is mounted,
  // else print its manifest; api: the API or a start-up error; print: always print; off: refuse.
  std::string k8s_mode = "auto";
  std::string k8s_namespace;    // namespace of agent Jobs; "" = the daemon pod's own
  std::string k8s_agent_image;  // image of the agent pods (usually llmcapd's own image)
  std::string k8s_daemon_url;   // how agent pods reach llmcapd: http://llmcapd.llmcap.svc:8080
  std::string k8s_agent_token_secret = "llmcap-agent-token";  // Secret (key "token"); "" = none
  std::string k8s_agent_service_account;     // service account of agent pods; "" = default
  std::int64_t k8s_api_timeout_ms = 10'000;  // one Kubernetes API request

  // Registers every field above with `settings` (keys are the field names).
  void bind(Settings& settings);
  // The k8s_* fields as the launcher's options (server/fleet/k8s_launcher.h).
  K8sOptions k8s_options() const;
  // The REST API's options (server/rest/rest_api.h).
  RestOptions rest_options() const;
  // Returns "" or the first invalid field with the reason.
  std::string validate() const;
  // allowed_hosts with what is always added (see there); and whether any IP literal may be the
  // Host (the listen address is a wildcard: the machine's addresses are not known here).
  std::vector<std::string> effective_allowed_hosts() const;
  bool allows_ip_literal_hosts() const;
  // True when no token is configured: the API is open (loopback default).
  bool auth_disabled() const {
    return admin_tokens.empty() && read_tokens.empty() && tenant_tokens.empty();
  }
  // No tokens and an address other machines can reach (not loopback): anyone who can reach the
  // port may submit jobs. Warned at start and in /readyz (docs/security.md).
  bool open_to_network() const;
};

}  // namespace llmcap::server

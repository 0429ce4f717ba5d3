#include "server/daemon_config.h"

#include "sim/profile_catalog.h"

namespace llmcap::server {

void DaemonConfig::bind(Settings& s) {
  s.add("listen_address", "address of the REST API and /metrics", &listen_address);
  s.add("port", "TCP port of the REST API (0 = any free port)", &port);
  s.add("io_threads", "threads serving the API", &io_threads);
  s.add("max_body_bytes", "largest accepted request body", &max_body_bytes);
  s.add("max_connections", "API connections held at once", &max_connections);
  s.add("read_timeout_ms", "deadline to receive one whole request", &read_timeout_ms);
  s.add("idle_timeout_ms", "keep-alive wait for the next request (shrinks under load)",
        &idle_timeout_ms);
  s.add("max_connections_per_client", "API connections one client address may hold (0 = any)",
        &max_connections_per_client);
  s.add("slow_request_evict_ms",
        "when full, close a connection whose request has been arriving this long (0 = never)",
        &slow_request_evict_ms);
  s.add("reserved_connections",
        "connections beyond max_connections kept for /healthz, /readyz and /metrics",
        &reserved_connections);
  s.add("database", "SQLite database file", &database);
  s.add("min_free_disk_mib", "free disk space below which new jobs are refused (507)",
        &min_free_disk_mib);
  s.add("log_level", "trace|debug|info|warn|error|critical|off", &log_level);
  s.add("log_json", "write logs as JSON lines", &log_json);
  s.add("max_concurrent_jobs",
        "measured jobs running at once (predictions have a worker of their own)",
        &max_concurrent_jobs);
  s.add("max_queued_jobs",
        "queued jobs of each kind (measured, predictions) before a submission answers 429",
        &max_queued_jobs);
  s.add("max_targets", "targets per plan", &max_targets);
  s.add("max_concurrency", "in-flight requests per step", &max_concurrency);
  s.add("max_rate_rps", "arrival rate per step", &max_rate_rps);
  s.add("max_job_duration_s",
        "longest a job may run (estimated at submission, enforced while it runs), s",
        &max_job_duration_s);
  s.add("shutdown_grace_s", "on SIGTERM, time to finish the current step", &shutdown_grace_s);
  s.add("admin_tokens", "bearer tokens allowed to submit/cancel/delete", &admin_tokens);
  s.add("read_tokens", "bearer tokens allowed to read", &read_tokens);
  s.add("tenant_tokens",
        "tokens of tenants, each TENANT:ROLE:TOKEN (ROLE admin or read; TENANT * = every "
        "tenant); a tenant sees its own jobs only",
        &tenant_tokens);
  s.add("open_health", "serve /healthz and /readyz without a token", &open_health);
  s.add("open_metrics", "serve /metrics without a token", &open_metrics);
  s.add("allowed_hosts",
        "Host header values the API answers to, beside localhost, loopback and the listen "
        "address (\"*\" = any)",
        &allowed_hosts);
  s.add("target_allowlist", "hosts/CIDRs plans may target", &target_allowlist);
  s.add("dataset_dir", "directory of the dataset files plans may use (empty: none)", &dataset_dir);
  s.add("max_dataset_mib", "largest dataset file a plan may use, MiB", &max_dataset_mib);
  s.add("telemetry_interval_s", "scrape period of target metrics", &telemetry_interval_s);
  s.add("k8s_mode", "agent pods: auto|api|print|off (Kubernetes API or printed manifest)",
        &k8s_mode);
  s.add("k8s_namespace", "namespace of agent Jobs (empty: the daemon pod's)", &k8s_namespace);
  s.add("k8s_agent_image", "container image of agent pods", &k8s_agent_image);
  s.add("k8s_daemon_url", "URL agent pods reach llmcapd at", &k8s_daemon_url);
  s.add("k8s_agent_token_secret", "Secret holding the agents' token (key token)",
        &k8s_agent_token_secret);
  s.add("k8s_agent_service_account", "service account of agent pods", &k8s_agent_service_account);
  s.add("k8s_api_timeout_ms", "deadline of one Kubernetes API request", &k8s_api_timeout_ms);
}

bool DaemonConfig::open_to_network() const {
  if (!auth_disabled()) return false;
  const std::string& a = listen_address;
  const bool loopback = a == "localhost" || a == "::1" || a == "[::1]" || a.rfind("127.", 0) == 0;
  return !loopback;
}

std::string DaemonConfig::validate() const {
  if (io_threads < 1 || io_threads > 64) return "io_threads: must be in [1, 64]";
  if (max_body_bytes < 1024) return "max_body_bytes: must be at least 1024";
  if (max_connections < 1) return "max_connections: must be at least 1";
  if (read_timeout_ms < 100) return "read_timeout_ms: must be at least 100";
  if (idle_timeout_ms < 100) return "idle_timeout_ms: must be at least 100";
  if (max_connections_per_client < 0) return "max_connections_per_client: must be 0 or more";
  if (reserved_connections < 0) return "reserved_connections: must be 0 or more";
  if (slow_request_evict_ms < 0) return "slow_request_evict_ms: must be 0 or more";
  if (database.empty()) return "database: must not be empty";
  if (!(min_free_disk_mib >= 0 && min_free_disk_mib <= 1 << 20))
    return "min_free_disk_mib: must be in [0, 1048576]";
  if (max_concurrent_jobs < 1 || max_concurrent_jobs > 64)
    return "max_concurrent_jobs: must be in [1, 64]";
  if (max_queued_jobs < 1) return "max_queued_jobs: must be at least 1";
  if (!(max_dataset_mib > 0 && max_dataset_mib <= 65536))
    return "max_dataset_mib: must be in (0, 65536]";
  if (max_targets < 1) return "max_targets: must be at least 1";
  if (max_concurrency < 1) return "max_concurrency: must be at least 1";
  if (!(max_rate_rps > 0)) return "max_rate_rps: must be positive";
  if (!(max_job_duration_s > 0)) return "max_job_duration_s: must be positive";
  if (shutdown_grace_s < 0) return "shutdown_grace_s: must not be negative";
  if (!(telemetry_interval_s >= 0.1)) return "telemetry_interval_s: must be at least 0.1";
  if (auto k8s = validate_k8s_options(k8s_options()); !k8s.empty()) return k8s;
  for (std::size_t i = 0; i < allowed_hosts.size(); ++i) {
    const std::string& h = allowed_hosts[i];
    if (h.empty() || h.find_first_of("/ \t@?#") != std::string::npos ||
        (h.find(':') != std::string::npos && h.find(':') == h.rfind(':')))
      return "allowed_hosts[" + std::to_string(i) + "]: '" + h +
             "' must be a host name or IP literal without scheme, port or path (\"*\" = any)";
  }
  for (const auto& t : admin_tokens) {
    if (t.size() < 16) return "admin_tokens: each token must have at least 16 characters";
  }
  for (const auto& t : read_tokens) {
    if (t.size() < 16) return "read_tokens: each token must have at least 16 characters";
  }
  // Messages name the entry, never the token.
  for (std::size_t i = 0; i < tenant_tokens.size(); ++i) {
    ApiToken parsed;
    if (auto why = parse_tenant_token(tenant_tokens[i], parsed); !why.empty())
      return "tenant_tokens[" + std::to_string(i) + "]: " + why;
  }
  const auto tokens = api_tokens(admin_tokens, read_tokens, tenant_tokens);
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    for (std::size_t k = i + 1; k < tokens.size(); ++k) {
      if (tokens[i].token == tokens[k].token)
        return "admin_tokens, read_tokens, tenant_tokens: the token with id " + tokens[i].id +
               " is given twice (one token, one tenant and role)";
    }
  }
  return "";
}

namespace {

// The host of "http://name:8080/path" ("name"; "::1" for "http://[::1]:8080"); "" if none.
std::string url_host(const std::string& url) {
  const auto scheme = url.find("://");
  if (scheme == std::string::npos) return "";
  std::string authority = url.substr(scheme + 3);
  authority = authority.substr(0, authority.find_first_of("/?#"));
  if (const auto at = authority.rfind('@'); at != std::string::npos)
    authority = authority.substr(at + 1);
  if (!authority.empty() && authority.front() == '[') {
    const auto close = authority.find(']');
    return close == std::string::npos ? "" : authority.substr(1, close - 1);
  }
  return authority.substr(0, authority.find(':'));
}

}  // namespace

std::vector<std::string> DaemonConfig::effective_allowed_hosts() const {
  std::vector<std::string> hosts = {"localhost", "127.0.0.1", "::1"};
  if (!allows_ip_literal_hosts()) hosts.push_back(listen_address);
  if (const auto k8s_host = url_host(k8s_daemon_url); !k8s_host.empty()) hosts.push_back(k8s_host);
  hosts.insert(hosts.end(), allowed_hosts.begin(), allowed_hosts.end());
  return hosts;
}

bool DaemonConfig::allows_ip_literal_hosts() const {
  return listen_address == "0.0.0.0" || listen_address == "::" || listen_address == "[::]";
}

RestOptions DaemonConfig::rest_options() const {
  RestOptions o;
  o.plan_limits.max_targets = max_targets;
  o.plan_limits.max_concurrency = max_concurrency;
  o.plan_limits.max_rate_rps = max_rate_rps;
  o.plan_limits.max_duration_s = max_job_duration_s;
  o.plan_limits.max_bytes = static_cast<std::size_t>(max_body_bytes);
  // sim:// targets are checked against the embedded simulators' profiles at submission (the
  // daemon's simulators know the built-in ones only).
  const auto profiles = sim::ProfileCatalog::builtin();
  o.plan_limits.sim_hardware = profiles.hardware_names();
  o.plan_limits.sim_models = profiles.model_names();
  o.tokens = api_tokens(admin_tokens, read_tokens, tenant_tokens);
  o.open_health = open_health;
  o.open_metrics = open_metrics;
  o.target_allowlist = target_allowlist;
  o.dataset_dir = dataset_dir;
  o.max_dataset_mib = max_dataset_mib;
  o.database = database;
  o.min_free_disk_mib = min_free_disk_mib;
  o.max_queued_jobs = max_queued_jobs;
  o.listen_address = listen_address;
  o.open_to_network = open_to_network();
  o.k8s = k8s_options();
  return o;
}

K8sOptions DaemonConfig::k8s_options() const {
  K8sOptions o;
  o.mode = k8s_mode;
  o.namespace_name = k8s_namespace;
  o.agent_image = k8s_agent_image;
  o.daemon_url = k8s_daemon_url;
  o.agent_token_secret = k8s_agent_token_secret;
  o.agent_service_account = k8s_agent_service_account;
  o.api_timeout_ms = k8s_api_timeout_ms;
  return o;
}

}  // namespace llmcap::server

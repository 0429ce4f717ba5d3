#include "server/fleet/kubernetes_api_launcher.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "agent/http_client.h"

namespace llmcap::server {

namespace {

using nlohmann::json;

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  std::size_t start = 0;
  while (start < s.size() && (s[start] == ' ' || s[start] == '\n')) ++start;
  return s.substr(start);
}

// One blocking exchange on a private io_context: the caller's thread runs it to completion.
agent::FetchResult blocking_fetch(const agent::Endpoint& endpoint, const KubernetesApiConfig& cfg,
                                  const agent::OutgoingRequest& request) {
  boost::asio::io_context io;
  agent::HttpClientOptions options;
  options.tls.ca_file = cfg.ca_file;
  options.connect_timeout_ns = cfg.timeout_ms * 1'000'000;
  options.user_agent = "llmcapd-k8s-launcher";
  agent::FetchResult result;
  try {
    agent::HttpClient client(io, endpoint, options);
    boost::asio::co_spawn(
        io,
        [&]() -> boost::asio::awaitable<void> {
          result = co_await client.fetch(request, cfg.timeout_ms * 1'000'000, 1 << 20);
        },
        boost::asio::detached);
    io.run();
  } catch (const std::exception& e) {  // a CA file OpenSSL cannot read
    result.exchange.error = analysis::ErrorClass::kTls;
    result.exchange.error_message = e.what();
  }
  return result;
}

// The message of a Kubernetes Status body ({"kind":"Status","message":...}), else the body.
std::string api_message(const std::string& body) {
  const json parsed = json::parse(body, nullptr, false);
  if (parsed.is_object() && parsed.contains("message") && parsed["message"].is_string())
    return parsed["message"].get<std::string>();
  return body.size() > 300 ? body.substr(0, 300) + "..." : body;
}

struct Call {
  std::string method;
  std::string path;
  std::string body;
};

// Performs `call` with the current token; fills error/status/message of `out` for every
// non-success answer. Returns the response body on success (2xx), nullopt otherwise.
std::optional<std::string> call_api(const KubernetesApiConfig& cfg, const Call& call,
                                    std::string_view verb_hint, LaunchResult& out) {
  auto endpoint = agent::parse_endpoint(cfg.api_url);
  if (!endpoint) {
    out.error = LaunchError::kUnreachable;
    out.message = "Kubernetes API URL '" + cfg.api_url + "': " + endpoint.error();
    return std::nullopt;
  }
  const auto token = read_file(cfg.token_file);
  if (!token || trim(*token).empty()) {
    out.error = LaunchError::kUnauthorized;
    out.message = "no service account token at " + cfg.token_file +
                  " (automountServiceAccountToken false, or no service account)";
    return std::nullopt;
  }
  agent::OutgoingRequest request;
  request.method = call.method;
  request.path = call.path;
  request.body = call.body;
  request.accept = "application/json";
  request.headers.emplace_back("Authorization", "Bearer " + trim(*token));
  const agent::FetchResult r = blocking_fetch(endpoint.value(), cfg, request);
  out.http_status = r.exchange.http_status;
  if (r.exchange.http_status == 0) {
    out.error = LaunchError::kUnreachable;
    out.message = "Kubernetes API " + cfg.api_url + " unreachable (" +
                  std::string(analysis::to_string(r.exchange.error)) +
                  (r.exchange.error_message.empty() ? "" : ": " + r.exchange.error_message) + ")";
    return std::nullopt;
  }
  const int status = r.exchange.http_status;
  if (status >= 200 && status < 300 && r.exchange.error == analysis::ErrorClass::kNone)
    return r.body;
  const std::string detail = api_message(r.body);
  switch (status) {
    case 401:
      out.error = LaunchError::kUnauthorized;
      out.message = "Kubernetes API rejected the service account token (401): " + detail;
      break;
    case 403:
      out.error = LaunchError::kForbidden;
      out.message = "Kubernetes RBAC forbids it (403): " + detail + "; the daemon's service " +
                    "account needs " + std::string(verb_hint) +
                    " on jobs.batch in this namespace (deploy/k8s/role.yaml)";
      break;
    case 404:
      out.error = LaunchError::kNotFound;
      out.message = "not found (404): " + detail;
      break;
    case 409:
      out.error = LaunchError::kAlreadyExists;
      out.message = "already exists (409): " + detail;
      break;
    default:
      out.error = LaunchError::kApiError;
      out.message = "Kubernetes API answered " + std::to_string(status) + ": " + detail;
      if (r.exchange.error != analysis::ErrorClass::kNone)
        out.message += " (" + r.exchange.error_message + ")";
  }
  return std::nullopt;
}

}  // namespace

agent::Expected<KubernetesApiConfig> in_cluster_config(std::string_view service_host,
                                                       std::string_view service_port,
                                                       const std::string& service_account_dir) {
  using Result = agent::Expected<KubernetesApiConfig>;
  if (service_host.empty() || service_port.empty()) {
    return Result::failure(
        "not running in a Kubernetes pod (KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT unset)");
  }
  KubernetesApiConfig cfg;
  const bool ipv6 = service_host.find(':') != std::string_view::npos;
  cfg.api_url = "https://" +
                (ipv6 ? "[" + std::string(service_host) + "]" : std::string(service_host)) + ":" +
                std::string(service_port);
  if (auto ep = agent::parse_endpoint(cfg.api_url); !ep)
    return Result::failure("KUBERNETES_SERVICE_HOST/PORT: " + ep.error());
  cfg.token_file = service_account_dir + "/token";
  cfg.ca_file = service_account_dir + "/ca.crt";
  if (!read_file(cfg.token_file)) {
    return Result::failure("no service account token at " + cfg.token_file +
                           " (set serviceAccountName and automountServiceAccountToken: true, "
                           "deploy/k8s/deployment.yaml)");
  }
  if (!read_file(cfg.ca_file)) return Result::failure("no cluster CA at " + cfg.ca_file);
  if (auto ns = read_file(service_account_dir + "/namespace")) cfg.pod_namespace = trim(*ns);
  return cfg;
}

agent::Expected<KubernetesApiConfig> in_cluster_config_from_environment(
    const std::string& service_account_dir) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  return in_cluster_config(host ? host : "", port ? port : "", service_account_dir);
}

KubernetesApiLauncher::KubernetesApiLauncher(KubernetesApiConfig config)
    : config_(std::move(config)) {}

LaunchResult KubernetesApiLauncher::launch(const AgentFleetSpec& spec) {
  LaunchResult out;
  out.namespace_name = spec.namespace_name;
  auto job = build_agent_job(spec);
  if (!job) {
    out.error = LaunchError::kInvalidSpec;
    out.message = job.error();
    return out;
  }
  out.job_name = job.value()["metadata"]["name"].get<std::string>();
  const Call call{"POST", "/apis/batch/v1/namespaces/" + spec.namespace_name + "/jobs",
                  job.value().dump()};
  const auto body = call_api(config_, call, "create", out);
  if (!body) {
    if (out.error == LaunchError::kAlreadyExists) {
      out.message = "Job " + out.job_name + " already exists in namespace " + spec.namespace_name +
                    " (an earlier launch of job " + spec.job_id + "; kubectl -n " +
                    spec.namespace_name + " delete job " + out.job_name + "): " + out.message;
    }
    return out;
  }
  if (out.http_status != 201 && out.http_status != 200) {
    out.error = LaunchError::kApiError;
    out.message = "Kubernetes API answered " + std::to_string(out.http_status) +
                  " to a Job create (want 201)";
    return out;
  }
  {
    std::lock_guard lock(mu_);
    launched_namespace_[spec.job_id] = spec.namespace_name;
  }
  // The API server's name is authoritative (it is ours unless a webhook renamed it).
  const json created = json::parse(*body, nullptr, false);
  if (created.is_object() && created.contains("metadata") && created["metadata"].contains("name") &&
      created["metadata"]["name"].is_string())
    out.job_name = created["metadata"]["name"].get<std::string>();
  return out;
}

LaunchResult KubernetesApiLauncher::remove(std::string_view job_id,
                                           std::string_view namespace_name) {
  LaunchResult out;
  {
    std::lock_guard lock(mu_);
    auto it = launched_namespace_.find(job_id);
    out.namespace_name = it != launched_namespace_.end() ? it->second : std::string(namespace_name);
  }
  namespace_name = out.namespace_name;
  auto name = agent_job_name(job_id);
  if (!name) {
    out.error = LaunchError::kInvalidSpec;
    out.message = "job_id: " + name.error();
    return out;
  }
  out.job_name = name.value();
  if (!is_dns1123_label(namespace_name)) {
    out.error = LaunchError::kInvalidSpec;
    out.message = "namespace: '" + out.namespace_name + "' is not a DNS-1123 label";
    return out;
  }
  // Background: the Job goes now, the garbage collector removes its pods (and stops them,
  // each with its grace period) after.
  const Call call{"DELETE",
                  "/apis/batch/v1/namespaces/" + std::string(namespace_name) + "/jobs/" +
                      out.job_name + "?propagationPolicy=Background",
                  ""};
  if (!call_api(config_, call, "delete", out) && out.error == LaunchError::kNotFound) {
    out.message = "Job " + out.job_name + " not found in namespace " + std::string(namespace_name) +
                  " (already deleted)";
  }
  if (out.ok() || out.error == LaunchError::kNotFound) {
    std::lock_guard lock(mu_);
    launched_namespace_.erase(std::string(job_id));
  }
  return out;
}

}  // namespace llmcap::server

#include "server/fleet/k8s_manifest.h"

#include <cstdio>

#include "agent/endpoint.h"
#include "analysis/fnv1a.h"

namespace llmcap::server {

using nlohmann::json;

namespace {

bool is_lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool is_alnum(char c) { return is_lower_alnum(c) || (c >= 'A' && c <= 'Z'); }

// RFC 1123 subdomain: dot-separated labels, at most 253 characters.
bool is_dns1123_subdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  while (true) {
    const auto dot = s.find('.');
    if (!is_dns1123_label(s.substr(0, dot))) return false;
    if (dot == std::string_view::npos) return true;
    s.remove_prefix(dot + 1);
  }
}

// Label value: empty, or [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])? up to 63 characters.
bool is_label_value(std::string_view s) {
  if (s.empty()) return true;
  if (s.size() > 63 || !is_alnum(s.front()) || !is_alnum(s.back())) return false;
  for (char c : s) {
    if (!is_alnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

// Label key: [prefix/]name, prefix a DNS subdomain, name a non-empty label value.
bool is_label_key(std::string_view s) {
  const auto slash = s.find('/');
  std::string_view name = s;
  if (slash != std::string_view::npos) {
    if (!is_dns1123_subdomain(s.substr(0, slash))) return false;
    name = s.substr(slash + 1);
  }
  return !name.empty() && is_label_value(name);
}

// Kubernetes quantity as llmcap uses it: a decimal number with an optional suffix.
bool is_quantity(std::string_view s) {
  static constexpr std::string_view kSuffixes[] = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "m",
                                                   "k",  "M",  "G",  "T",  "P",  "E"};
  for (auto suffix : kSuffixes) {
    if (s.size() > suffix.size() && s.ends_with(suffix)) {
      s.remove_suffix(suffix.size());
      break;
    }
  }
  if (s.empty() || s.front() == '.' || s.back() == '.') return false;
  int dots = 0;
  for (char c : s) {
    if (c == '.') {
      ++dots;
    } else if (c < '0' || c > '9') {
      return false;
    }
  }
  return dots <= 1;
}

std::string join(const std::vector<std::string>& items, char sep) {
  std::string out;
  for (const auto& s : items) {
    if (!out.empty()) out.push_back(sep);
    out += s;
  }
  return out;
}

std::string job_id_label_value(const std::string& job_id) {
  if (!job_id.empty() && is_label_value(job_id)) return job_id;
  auto sanitised = dns1123_label(job_id, 63);
  return sanitised ? sanitised.value() : std::string();
}

json common_labels(const std::string& job_name, const std::string& job_id) {
  return {{"app.kubernetes.io/name", "llmcap-agent"}, {"app.kubernetes.io/component", "agent"},
          {"app.kubernetes.io/part-of", "llmcap"},    {"app.kubernetes.io/managed-by", "llmcapd"},
          {"app.kubernetes.io/instance", job_name},   {kJobIdLabel, job_id_label_value(job_id)}};
}

json spread_constraint(const AgentFleetSpec& spec, const char* topology_key) {
  return {
      {"maxSkew", spec.placement.max_skew},
      {"topologyKey", topology_key},
      {"whenUnsatisfiable", spec.placement.spread_required ? "DoNotSchedule" : "ScheduleAnyway"},
      {"labelSelector",
       {{"matchLabels",
         {{"app.kubernetes.io/component", "agent"},
          {kJobIdLabel, job_id_label_value(spec.job_id)}}}}}};
}

json container_args(const AgentFleetSpec& spec) {
  json args = json::array({"--daemon", spec.daemon_url, "--job", spec.job_id});
  if (spec.regions.size() == 1) {
    args.push_back("--region");
    args.push_back(spec.regions.front());
  } else if (!spec.regions.empty()) {
    // Shard k (JOB_COMPLETION_INDEX) takes entry k.
    args.push_back("--region-list");
    args.push_back(join(spec.regions, ','));
  }
  return args;
}

json container(const AgentFleetSpec& spec) {
  json c = {
      {"name", "agent"},
      {"image", spec.image},
      {"imagePullPolicy", spec.image_pull_policy},
      {"command", json::array({spec.binary, "agent"})},
      {"args", container_args(spec)},
      {"resources",
       {{"requests",
         {{"cpu", spec.resources.cpu_request}, {"memory", spec.resources.memory_request}}},
        {"limits", {{"cpu", spec.resources.cpu_limit}, {"memory", spec.resources.memory_limit}}}}},
      {"securityContext",
       {{"runAsNonRoot", true},
        {"allowPrivilegeEscalation", false},
        {"readOnlyRootFilesystem", true},
        {"capabilities", {{"drop", json::array({"ALL"})}}}}},
  };
  if (!spec.token_secret_name.empty()) {
    c["env"] =
        json::array({{{"name", "LLMCAP_AGENT_TOKEN"},
                      {"valueFrom",
                       {{"secretKeyRef",
                         {{"name", spec.token_secret_name}, {"key", spec.token_secret_key}}}}}}});
  }
  return c;
}

json pod_spec(const AgentFleetSpec& spec) {
  json pod = {
      {"restartPolicy", "Never"},
      {"automountServiceAccountToken", false},
      {"enableServiceLinks", false},
      {"terminationGracePeriodSeconds", spec.termination_grace_period_s},
      {"securityContext",
       {{"runAsNonRoot", true},
        {"runAsUser", 10001},
        {"runAsGroup", 10001},
        {"seccompProfile", {{"type", "RuntimeDefault"}}}}},
      {"containers", json::array({container(spec)})},
  };
  if (!spec.service_account.empty()) pod["serviceAccountName"] = spec.service_account;
  if (!spec.placement.node_selector.empty()) pod["nodeSelector"] = spec.placement.node_selector;
  json spread = json::array();
  if (spec.placement.spread_by_zone)
    spread.push_back(spread_constraint(spec, "topology.kubernetes.io/zone"));
  if (spec.placement.spread_by_hostname)
    spread.push_back(spread_constraint(spec, "kubernetes.io/hostname"));
  if (!spread.empty()) pod["topologySpreadConstraints"] = std::move(spread);
  return pod;
}

void append_scalar(const json& v, std::string& out) {
  if (v.is_string()) {
    out += v.dump(-1, ' ', false, json::error_handler_t::replace);
  } else {
    out += v.dump();
  }
}

bool is_plain_key(std::string_view key) {
  if (key.empty() || !is_alnum(key.front())) return false;
  for (char c : key) {
    if (!is_alnum(c) && c != '.' && c != '/' && c != '-' && c != '_') return false;
  }
  return true;
}

void emit(const json& v, std::size_t indent, std::string& out);

void emit_item(const json& item, std::size_t indent, std::string& out) {
  const bool nested = (item.is_object() || item.is_array()) && !item.empty();
  if (!nested) {
    out.append(indent, ' ');
    out += "- ";
    if (item.is_object()) {
      out += "{}";
    } else if (item.is_array()) {
      out += "[]";
    } else {
      append_scalar(item, out);
    }
    out += "\n";
    return;
  }
  // The nested block, rendered two columns deeper, with "- " in place of its first indent.
  std::string sub;
  emit(item, indent + 2, sub);
  sub.replace(indent, 2, "- ");
  out += sub;
}

void emit(const json& v, std::size_t indent, std::string& out) {
  if (v.is_object()) {
    for (const auto& [key, value] : v.items()) {
      out.append(indent, ' ');
      if (is_plain_key(key)) {
        out += key;
      } else {
        out += json(key).dump(-1, ' ', false, json::error_handler_t::replace);
      }
      out += ":";
      if ((value.is_object() || value.is_array()) && !value.empty()) {
        out += "\n";
        emit(value, indent + 2, out);
      } else {
        out += " ";
        if (value.is_object()) {
          out += "{}";
        } else if (value.is_array()) {
          out += "[]";
        } else {
          append_scalar(value, out);
        }
        out += "\n";
      }
    }
  } else if (v.is_array()) {
    for (const auto& item : v) emit_item(item, indent, out);
  } else {
    out.append(indent, ' ');
    append_scalar(v, out);
    out += "\n";
  }
}

}  // namespace

bool is_dns1123_label(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  if (!is_lower_alnum(s.front()) || !is_lower_alnum(s.back())) return false;
  for (char c : s) {
    if (!is_lower_alnum(c) && c != '-') return false;
  }
  return true;
}

agent::Expected<std::string> dns1123_label(std::string_view id, std::size_t max_chars) {
  if (max_chars < 10 || max_chars > 63) {
    return agent::Expected<std::string>::failure("max_chars: must be in [10, 63]");
  }
  std::string out;
  for (char c : id) {
    const char lower = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    if (is_lower_alnum(lower)) {
      out.push_back(lower);
    } else if (!out.empty() && out.back() != '-') {
      out.push_back('-');
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  if (out.empty()) {
    return agent::Expected<std::string>::failure(
        "job id '" + std::string(id) + "' has no letter or digit to name Kubernetes objects");
  }
  if (out.size() > max_chars) {
    char hash[9];
    std::snprintf(hash, sizeof hash, "%08x", static_cast<unsigned>(analysis::fnv1a_32(id)));
    out.resize(max_chars - 9);
    while (!out.empty() && out.back() == '-') out.pop_back();
    out += "-";
    out += hash;
  }
  return out;
}

agent::Expected<std::string> agent_job_name(std::string_view job_id) {
  static constexpr std::string_view kPrefix = "llmcap-agents-";
  auto label = dns1123_label(job_id, kMaxAgentJobNameChars - kPrefix.size());
  if (!label) return label;
  return std::string(kPrefix) + label.value();
}

std::string validate_agent_fleet_spec(const AgentFleetSpec& spec) {
  if (spec.job_id.empty()) return "job_id: must not be empty";
  if (spec.job_id.size() > 253) return "job_id: at most 253 characters";
  if (auto name = agent_job_name(spec.job_id); !name) return "job_id: " + name.error();
  if (spec.count < 1 || spec.count > 1000) return "count: must be in [1, 1000]";
  if (spec.image.empty()) return "image: must not be empty (k8s_agent_image)";
  for (char c : spec.image) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
      return "image: must not contain white space";
  }
  if (spec.image_pull_policy != "Always" && spec.image_pull_policy != "IfNotPresent" &&
      spec.image_pull_policy != "Never")
    return "image_pull_policy: must be Always, IfNotPresent or Never";
  if (spec.binary.empty() || spec.binary.front() != '/') return "binary: must be an absolute path";
  if (spec.daemon_url.empty()) return "daemon_url: must not be empty (k8s_daemon_url)";
  if (auto ep = agent::parse_endpoint(spec.daemon_url); !ep) return "daemon_url: " + ep.error();
  if (!is_dns1123_label(spec.namespace_name))
    return "namespace: '" + spec.namespace_name + "' is not a DNS-1123 label";
  if (!spec.service_account.empty() && !is_dns1123_subdomain(spec.service_account))
    return "service_account: '" + spec.service_account + "' is not a DNS-1123 subdomain";
  if (spec.regions.size() > 1 && spec.regions.size() != static_cast<std::size_t>(spec.count)) {
    return "regions: " + std::to_string(spec.regions.size()) + " labels for count " +
           std::to_string(spec.count) + " (want none, one for every shard, or one per shard)";
  }
  for (std::size_t i = 0; i < spec.regions.size(); ++i) {
    if (spec.regions[i].empty() || !is_label_value(spec.regions[i])) {
      return "regions[" + std::to_string(i) + "]: '" + spec.regions[i] +
             "' is not a label value ([A-Za-z0-9._-], at most 63, alphanumeric at both ends)";
    }
  }
  for (const auto& [key, value] : spec.placement.node_selector) {
    if (!is_label_key(key)) return "placement.node_selector: '" + key + "' is not a label key";
    if (!is_label_value(value))
      return "placement.node_selector." + key + ": '" + value + "' is not a label value";
  }
  if (spec.placement.max_skew < 1) return "placement.max_skew: must be at least 1";
  const std::pair<const char*, const std::string*> quantities[] = {
      {"resources.cpu_request", &spec.resources.cpu_request},
      {"resources.cpu_limit", &spec.resources.cpu_limit},
      {"resources.memory_request", &spec.resources.memory_request},
      {"resources.memory_limit", &spec.resources.memory_limit}};
  for (const auto& [field, value] : quantities) {
    if (!is_quantity(*value))
      return std::string(field) + ": '" + *value + "' is not a Kubernetes quantity";
  }
  if (!spec.token_secret_name.empty()) {
    if (!is_dns1123_subdomain(spec.token_secret_name))
      return "token_secret_name: '" + spec.token_secret_name + "' is not a DNS-1123 subdomain";
    if (spec.token_secret_key.empty() || spec.token_secret_key.size() > 253)
      return "token_secret_key: must have 1 to 253 characters";
    for (char c : spec.token_secret_key) {
      if (!is_alnum(c) && c != '-' && c != '_' && c != '.')
        return "token_secret_key: only [A-Za-z0-9._-] allowed";
    }
  }
  if (spec.backoff_limit < 0) return "backoff_limit: must not be negative";
  if (spec.active_deadline_s < 1) return "active_deadline_s: must be at least 1";
  if (spec.ttl_seconds_after_finished < 0)
    return "ttl_seconds_after_finished: must not be negative";
  if (spec.termination_grace_period_s < 0)
    return "termination_grace_period_s: must not be negative";
  return "";
}

agent::Expected<json> build_agent_job(const AgentFleetSpec& spec) {
  if (auto problem = validate_agent_fleet_spec(spec); !problem.empty())
    return agent::Expected<json>::failure(problem);
  const std::string name = agent_job_name(spec.job_id).value();
  const json labels = common_labels(name, spec.job_id);
  json annotations = {{kJobIdLabel, spec.job_id}, {"llmcap.io/daemon-url", spec.daemon_url}};
  if (!spec.regions.empty()) annotations["llmcap.io/regions"] = join(spec.regions, ',');
  return json{
      {"apiVersion", "batch/v1"},
      {"kind", "Job"},
      {"metadata",
       {{"name", name},
        {"namespace", spec.namespace_name},
        {"labels", labels},
        {"annotations", annotations}}},
      {"spec",
       {{"completionMode", "Indexed"},
        {"completions", spec.count},
        {"parallelism", spec.count},
        {"backoffLimit", spec.backoff_limit},
        {"activeDeadlineSeconds", spec.active_deadline_s},
        {"ttlSecondsAfterFinished", spec.ttl_seconds_after_finished},
        {"template", {{"metadata", {{"labels", labels}}}, {"spec", pod_spec(spec)}}}}},
  };
}

agent::Expected<std::string> agent_job_yaml(const AgentFleetSpec& spec) {
  auto job = build_agent_job(spec);
  if (!job) return agent::Expected<std::string>::failure(job.error());
  // The comment names the sanitised Job, never the raw id (which could hold a line break).
  std::string out = "# " + job.value()["metadata"]["name"].get<std::string>() + ": " +
                    std::to_string(spec.count) +
                    " llmcap agent shard(s), generated by llmcapd; kubectl apply -f -\n";
  out += json_to_yaml(job.value());
  return out;
}

std::string json_to_yaml(const json& value) {
  std::string out;
  emit(value, 0, out);
  return out;
}

}  // namespace llmcap::server

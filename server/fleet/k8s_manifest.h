// Kubernetes manifest of an llmcap agent fleet: one Indexed Job (batch/v1,
// completionMode: Indexed) whose pod k runs `llmcapd agent` as shard k of one llmcap job
// (issue 11). build_agent_job() is a pure function of AgentFleetSpec — no I/O, no clock, no
// randomness — so the same spec always yields byte-identical text (deploy/k8s/agents/ holds an
// example that a test regenerates and compares).
//
// What the pods get, and why:
// - the shard index from JOB_COMPLETION_INDEX, which the Job controller sets in Indexed mode
//   (`llmcapd agent` reads it); the region of shard k from `--region-list r0,r1,...` indexed by
//   that index, so no downward API or per-pod template is needed;
// - the agent token from a Secret through secretKeyRef into LLMCAP_AGENT_TOKEN, which
//   `llmcapd agent` reads (server/cli/cmd_agent.cc): a token is never written into the manifest
//   nor into the pod's command line;
// - a pod security context that passes the `restricted` Pod Security level of the llmcap
//   namespace (deploy/k8s/namespace.yaml), no API token (agents never call the API server)
//   and no service links (their variables could look like LLMCAP_* settings);
// - CPU/memory requests equal to limits by default (Guaranteed QoS): a throttled load generator
//   distorts latencies and turns steps inconclusive (docs/metrics.md §4.2, client-bound steps).
//
// Thread-safety: every function here is pure and may be called from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "agent/expected.h"

namespace llmcap::server {

// Where pods go. Spread constraints keep shards apart (one per node/zone when possible), so
// one node's NIC or CPU does not become every shard's bottleneck.
struct AgentPlacement {
  // nodeSelector of the pods (e.g. {"topology.kubernetes.io/region": "eu-west-1"}).
  std::map<std::string, std::string> node_selector;
  bool spread_by_zone = false;     // topologySpreadConstraint on topology.kubernetes.io/zone
  bool spread_by_hostname = true;  // topologySpreadConstraint on kubernetes.io/hostname
  int max_skew = 1;                // maxSkew of each constraint (>= 1)
  // true: whenUnsatisfiable DoNotSchedule (pods stay Pending rather than share a domain);
  // false: ScheduleAnyway (best effort).
  bool spread_required = false;
};

// Kubernetes resource quantities of the agent container ("2", "500m", "1Gi").
struct AgentResources {
  std::string cpu_request = "1";
  std::string cpu_limit = "1";
  std::string memory_request = "512Mi";
  std::string memory_limit = "512Mi";
};

// Everything the manifest depends on. Defaults suit deploy/k8s/ (namespace llmcap, Service
// llmcapd); job_id, count, image and daemon_url have no useful default.
struct AgentFleetSpec {
  std::string job_id;  // llmcap job id ("job_01J..."); sanitised for names
  int count = 1;       // shards = pods = completions = parallelism, [1, 1000]
  std::string image;   // agent container image, e.g. "registry/llmcapd:0.1.0"
  std::string image_pull_policy = "IfNotPresent";  // Always | IfNotPresent | Never
  std::string binary = "/usr/local/bin/llmcapd";   // llmcapd inside the image
  std::string daemon_url;                 // how pods reach llmcapd: http://llmcapd.llmcap.svc:8080
  std::string namespace_name = "llmcap";  // namespace of the Job (DNS-1123 label)
  std::string service_account;            // pods' service account; "" = the namespace default
  // Region label of each shard: empty (no regions), one entry (every shard), or `count`
  // entries (shard k gets regions[k]). Labels match [A-Za-z0-9._-]{1,63}.
  std::vector<std::string> regions;
  AgentPlacement placement;
  AgentResources resources;
  // Secret holding the agent token (deploy/k8s/agents/agent-token-secret.yaml); the daemon
  // must accept it as one of its admin_tokens. An empty name: no token (an open daemon).
  std::string token_secret_name = "llmcap-agent-token";
  std::string token_secret_key = "token";
  int backoff_limit = 3;                           // pod retries of the whole Job, >= 0
  std::int64_t active_deadline_s = 4 * 3600;       // Job wall-clock limit, >= 1
  std::int64_t ttl_seconds_after_finished = 3600;  // finished Job garbage-collected after, >= 0
  int termination_grace_period_s = 30;             // SIGTERM to SIGKILL for a draining agent
};

// Longest Job name: pod host names are "<job name>-<index>" and must stay within 63
// characters, so the name leaves room for "-" and a 10-digit index.
inline constexpr std::size_t kMaxAgentJobNameChars = 52;

// DNS-1123 label made from a job id: lower-cased, every run of characters outside [a-z0-9]
// becomes one '-', no leading/trailing '-'; when longer than max_chars it is cut and ends with
// '-' and 8 hex digits of a hash of the whole id, so distinct long ids stay distinct.
// Fails when the id has no letter or digit.
agent::Expected<std::string> dns1123_label(std::string_view id,
                                           std::size_t max_chars = kMaxAgentJobNameChars);

// Name of the Indexed Job of one llmcap job: "llmcap-agents-<sanitised id>", at most
// kMaxAgentJobNameChars. Fails as dns1123_label().
agent::Expected<std::string> agent_job_name(std::string_view job_id);

// The label every object of a job's fleet carries (value: the job id when it is a valid label
// value, else its sanitised form), used by selectors and spread constraints.
inline constexpr const char* kJobIdLabel = "llmcap.io/job-id";

// RFC 1123 label ([a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63): namespaces, Job names.
bool is_dns1123_label(std::string_view s);

// "" or the first invalid field of the spec, named ("count: must be in [1, 1000]").
std::string validate_agent_fleet_spec(const AgentFleetSpec& spec);

// The batch/v1 Job object. Fails with validate_agent_fleet_spec()'s message.
agent::Expected<nlohmann::json> build_agent_job(const AgentFleetSpec& spec);

// The same object as text for `kubectl apply -f -`: YAML (block style, strings JSON-quoted,
// which YAML reads as the same strings) headed by a comment naming the job.
agent::Expected<std::string> agent_job_yaml(const AgentFleetSpec& spec);

// Renders any JSON value as block-style YAML (objects, arrays, scalars; strings always
// double-quoted). Exposed for tests and for other manifests.
std::string json_to_yaml(const nlohmann::json& value);

}  // namespace llmcap::server

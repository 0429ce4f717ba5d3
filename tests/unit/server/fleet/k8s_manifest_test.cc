#include "server/fleet/k8s_manifest.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "tests/test_paths.h"

namespace llmcap::server {
namespace {

using nlohmann::json;

AgentFleetSpec sample_spec() {
  AgentFleetSpec spec;
  spec.job_id = "job_01JDQ3ZK8W5M7X2T4R6Y9B0C1D";
  spec.count = 3;
  spec.image = "registry.example.com/llmcapd:0.1.0";
  spec.daemon_url = "http://llmcapd.llmcap.svc:8080";
  spec.regions = {"eu-west", "us-east", "ap-south"};
  return spec;
}

json build(const AgentFleetSpec& spec) {
  auto job = build_agent_job(spec);
  EXPECT_TRUE(job.ok()) << job.error();
  return job ? job.value() : json();
}

const json& agent_container(const json& job) {
  return job["spec"]["template"]["spec"]["containers"][0];
}

TEST(K8sManifest, IndexedJobWithOnePodPerShard) {
  const json job = build(sample_spec());
  EXPECT_EQ(job["apiVersion"], "batch/v1");
  EXPECT_EQ(job["kind"], "Job");
  EXPECT_EQ(job["metadata"]["name"], "llmcap-agents-job-01jdq3zk8w5m7x2t4r6y9b0c1d");
  EXPECT_EQ(job["metadata"]["namespace"], "llmcap");
  const json& spec = job["spec"];
  EXPECT_EQ(spec["completionMode"], "Indexed");
  EXPECT_EQ(spec["completions"], 3);
  EXPECT_EQ(spec["parallelism"], 3);
  EXPECT_EQ(spec["backoffLimit"], 3);
  EXPECT_EQ(spec["activeDeadlineSeconds"], 4 * 3600);
  EXPECT_EQ(spec["ttlSecondsAfterFinished"], 3600);
  const json& pod = spec["template"]["spec"];
  EXPECT_EQ(pod["restartPolicy"], "Never");
  EXPECT_EQ(pod["automountServiceAccountToken"], false);
  EXPECT_EQ(pod["enableServiceLinks"], false);
  EXPECT_FALSE(pod.contains("serviceAccountName"));
  EXPECT_FALSE(pod.contains("nodeSelector"));
}

TEST(K8sManifest, ContainerRunsTheAgentWithRegionListAndNoShardFlag) {
  const json job = build(sample_spec());
  const json& c = agent_container(job);
  EXPECT_EQ(c["image"], "registry.example.com/llmcapd:0.1.0");
  EXPECT_EQ(c["command"], json::array({"/usr/local/bin/llmcapd", "agent"}));
  // The shard index comes from JOB_COMPLETION_INDEX, set by the Job controller.
  EXPECT_EQ(c["args"], json::array({"--daemon", "http://llmcapd.llmcap.svc:8080", "--job",
                                    "job_01JDQ3ZK8W5M7X2T4R6Y9B0C1D", "--region-list",
                                    "eu-west,us-east,ap-south"}));
  EXPECT_EQ(job["metadata"]["annotations"]["llmcap.io/regions"], "eu-west,us-east,ap-south");
}

TEST(K8sManifest, OneRegionForEveryShardUsesRegionFlag) {
  AgentFleetSpec spec = sample_spec();
  spec.regions = {"eu-west"};
  const json args = agent_container(build(spec))["args"];
  EXPECT_EQ(args[4], "--region");
  EXPECT_EQ(args[5], "eu-west");
  spec.regions.clear();
  const json bare = agent_container(build(spec))["args"];
  for (const auto& a : bare) {
    EXPECT_NE(a, "--region");
    EXPECT_NE(a, "--region-list");
  }
}

TEST(K8sManifest, TokenComesFromSecretKeyRefNeverInline) {
  AgentFleetSpec spec = sample_spec();
  spec.token_secret_name = "fleet-token";
  spec.token_secret_key = "agent_token";
  const json job = build(spec);
  const json& env = agent_container(job)["env"];
  ASSERT_EQ(env.size(), 1u);
  EXPECT_EQ(env[0]["name"], "LLMCAP_AGENT_TOKEN");
  EXPECT_FALSE(env[0].contains("value"));
  EXPECT_EQ(env[0]["valueFrom"]["secretKeyRef"]["name"], "fleet-token");
  EXPECT_EQ(env[0]["valueFrom"]["secretKeyRef"]["key"], "agent_token");
  // Without a secret there is no token at all (an open daemon).
  spec.token_secret_name.clear();
  const json open = build(spec);
  EXPECT_FALSE(agent_container(open).contains("env"));
  EXPECT_EQ(open.dump().find("TOKEN"), std::string::npos);
}

TEST(K8sManifest, LabelsAndSelectors) {
  const json job = build(sample_spec());
  const json& labels = job["metadata"]["labels"];
  EXPECT_EQ(labels["app.kubernetes.io/name"], "llmcap-agent");
  EXPECT_EQ(labels["app.kubernetes.io/component"], "agent");
  EXPECT_EQ(labels["app.kubernetes.io/part-of"], "llmcap");
  EXPECT_EQ(labels["app.kubernetes.io/managed-by"], "llmcapd");
  EXPECT_EQ(labels["app.kubernetes.io/instance"], job["metadata"]["name"]);
  EXPECT_EQ(labels[kJobIdLabel], "job_01JDQ3ZK8W5M7X2T4R6Y9B0C1D");
  EXPECT_EQ(job["spec"]["template"]["metadata"]["labels"], labels);
  // A job id that is no valid label value is sanitised in the label, kept in the annotation.
  AgentFleetSpec odd = sample_spec();
  odd.job_id = "Nightly run #7 (eu)";
  const json j2 = build(odd);
  EXPECT_EQ(j2["metadata"]["labels"][kJobIdLabel], "nightly-run-7-eu");
  EXPECT_EQ(j2["metadata"]["annotations"][kJobIdLabel], "Nightly run #7 (eu)");
  EXPECT_EQ(j2["metadata"]["name"], "llmcap-agents-nightly-run-7-eu");
}

TEST(K8sManifest, SpreadConstraintsByZoneAndHostname) {
  AgentFleetSpec spec = sample_spec();
  spec.placement.spread_by_zone = true;
  spec.placement.spread_by_hostname = true;
  spec.placement.max_skew = 2;
  spec.placement.spread_required = true;
  spec.placement.node_selector = {{"node.kubernetes.io/instance-type", "c7i.4xlarge"}};
  const json pod = build(spec)["spec"]["template"]["spec"];
  EXPECT_EQ(pod["nodeSelector"]["node.kubernetes.io/instance-type"], "c7i.4xlarge");
  const json& tsc = pod["topologySpreadConstraints"];
  ASSERT_EQ(tsc.size(), 2u);
  EXPECT_EQ(tsc[0]["topologyKey"], "topology.kubernetes.io/zone");
  EXPECT_EQ(tsc[1]["topologyKey"], "kubernetes.io/hostname");
  for (const auto& c : tsc) {
    EXPECT_EQ(c["maxSkew"], 2);
    EXPECT_EQ(c["whenUnsatisfiable"], "DoNotSchedule");
    EXPECT_EQ(c["labelSelector"]["matchLabels"][kJobIdLabel], "job_01JDQ3ZK8W5M7X2T4R6Y9B0C1D");
    EXPECT_EQ(c["labelSelector"]["matchLabels"]["app.kubernetes.io/component"], "agent");
  }
  spec.placement.spread_by_zone = false;
  spec.placement.spread_required = false;
  const json one = build(spec)["spec"]["template"]["spec"]["topologySpreadConstraints"];
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0]["whenUnsatisfiable"], "ScheduleAnyway");
  spec.placement.spread_by_hostname = false;
  EXPECT_FALSE(build(spec)["spec"]["template"]["spec"].contains("topologySpreadConstraints"));
}

TEST(K8sManifest, RestrictedPodSecurityAndGuaranteedResources) {
  AgentFleetSpec spec = sample_spec();
  spec.service_account = "llmcap-agent";
  spec.resources = {"2", "2", "1Gi", "1Gi"};
  const json pod = build(spec)["spec"]["template"]["spec"];
  EXPECT_EQ(pod["serviceAccountName"], "llmcap-agent");
  EXPECT_EQ(pod["securityContext"]["runAsNonRoot"], true);
  EXPECT_EQ(pod["securityContext"]["seccompProfile"]["type"], "RuntimeDefault");
  const json& c = pod["containers"][0];
  EXPECT_EQ(c["securityContext"]["allowPrivilegeEscalation"], false);
  EXPECT_EQ(c["securityContext"]["capabilities"]["drop"], json::array({"ALL"}));
  EXPECT_EQ(c["resources"]["requests"]["cpu"], "2");
  EXPECT_EQ(c["resources"]["limits"]["memory"], "1Gi");
}

TEST(K8sManifest, Dns1123Sanitising) {
  EXPECT_EQ(dns1123_label("job_01ABC").value(), "job-01abc");
  EXPECT_EQ(dns1123_label("--A__b..C--").value(), "a-b-c");
  EXPECT_EQ(dns1123_label("Ünïcode-ok").value(), "n-code-ok");
  EXPECT_FALSE(dns1123_label("___").ok());
  EXPECT_FALSE(dns1123_label("").ok());
  // Long ids are cut and keep a hash of the whole id: distinct, at most the limit, valid.
  const std::string a(200, 'a');
  const std::string b = a + "b";
  const auto la = agent_job_name(a).value();
  const auto lb = agent_job_name(b).value();
  EXPECT_NE(la, lb);
  EXPECT_LE(la.size(), kMaxAgentJobNameChars);
  EXPECT_LE(lb.size(), kMaxAgentJobNameChars);
  EXPECT_EQ(la.rfind("llmcap-agents-", 0), 0u);
  EXPECT_NE(la.back(), '-');
  // Cutting right after a separator leaves no "--" before the hash.
  const std::string dashes = std::string(28, 'x') + "-yyyyyyyyyyyyyyyyyyyy";
  const auto ld = agent_job_name(dashes).value();
  EXPECT_EQ(ld.find("--"), std::string::npos) << ld;
  EXPECT_LE(ld.size(), kMaxAgentJobNameChars);
  // Same input, same name.
  EXPECT_EQ(agent_job_name(a).value(), la);
}

TEST(K8sManifest, InvalidSpecsNameTheField) {
  const auto problem = [](auto mutate) {
    AgentFleetSpec spec = sample_spec();
    mutate(spec);
    auto job = build_agent_job(spec);
    EXPECT_FALSE(job.ok());
    return job.error();
  };
  EXPECT_EQ(problem([](AgentFleetSpec& s) { s.job_id = ""; }).rfind("job_id:", 0), 0u);
  EXPECT_EQ(problem([](AgentFleetSpec& s) { s.job_id = "!!!"; }).rfind("job_id:", 0), 0u);
  EXPECT_EQ(problem([](AgentFleetSpec& s) { s.count = 0; }).rfind("count:", 0), 0u);
  EXPECT_EQ(problem([](AgentFleetSpec& s) { s.count = 1001; }).rfind("count:", 0), 0u);
  EXPECT_EQ(problem([](AgentFleetSpec& s) { s.image = ""; }).rfind("image:", 0), 0u);
  EXPECT_EQ(problem([](AgentFleetSpec& s) { s.image = "a b"; }).rfind("image:", 0), 0u);
  EXPECT_EQ(problem([](AgentFleetSpec& s) { s.daemon_url = "ftp://x"; }).rfind("daemon_url:", 0),
            0u);
  EXPECT_EQ(problem([](AgentFleetSpec& s) { s.namespace_name = "Bad_NS"; }).rfind("namespace:", 0),
            0u);
  EXPECT_EQ(problem([](AgentFleetSpec& s) { s.regions = {"a", "b"}; }).rfind("regions:", 0), 0u);
  EXPECT_EQ(problem([](AgentFleetSpec& s) {
              s.regions = {"a", "b,c", "d"};
            }).rfind("regions[1]", 0),
            0u);
  EXPECT_EQ(problem([](AgentFleetSpec& s) {
              s.placement.node_selector = {{"bad key", "x"}};
            }).rfind("placement.node_selector", 0),
            0u);
  EXPECT_EQ(
      problem([](AgentFleetSpec& s) { s.placement.max_skew = 0; }).rfind("placement.max_skew", 0),
      0u);
  EXPECT_EQ(problem([](AgentFleetSpec& s) {
              s.resources.cpu_limit = "two";
            }).rfind("resources.cpu_limit", 0),
            0u);
  EXPECT_EQ(problem([](AgentFleetSpec& s) {
              s.token_secret_name = "Not/A/Name";
            }).rfind("token_secret_name", 0),
            0u);
  EXPECT_EQ(problem([](AgentFleetSpec& s) { s.backoff_limit = -1; }).rfind("backoff_limit", 0), 0u);
  EXPECT_EQ(
      problem([](AgentFleetSpec& s) { s.active_deadline_s = 0; }).rfind("active_deadline_s", 0),
      0u);
  EXPECT_EQ(problem([](AgentFleetSpec& s) {
              s.image_pull_policy = "Sometimes";
            }).rfind("image_pull_policy", 0),
            0u);
}

TEST(K8sManifest, YamlRendersBlocksAndQuotedStrings) {
  const json v = {{"a", {{"b", 1}, {"c", json::array({"x", "y: z"})}}},
                  {"d", json::array({{{"e", true}, {"f", nullptr}}, json::array({1, 2})})},
                  {"g", json::object()},
                  {"h", json::array()},
                  {"key with space", "line\nbreak"}};
  EXPECT_EQ(json_to_yaml(v),
            "a:\n"
            "  b: 1\n"
            "  c:\n"
            "    - \"x\"\n"
            "    - \"y: z\"\n"
            "d:\n"
            "  - e: true\n"
            "    f: null\n"
            "  - - 1\n"
            "    - 2\n"
            "g: {}\n"
            "h: []\n"
            "\"key with space\": \"line\\nbreak\"\n");
}

TEST(K8sManifest, YamlTextIsDeterministicAndStartsWithComment) {
  auto a = agent_job_yaml(sample_spec());
  auto b = agent_job_yaml(sample_spec());
  ASSERT_TRUE(a.ok()) << a.error();
  EXPECT_EQ(a.value(), b.value());
  EXPECT_EQ(a.value().rfind("# llmcap-agents-job-01jdq3zk8w5m7x2t4r6y9b0c1d: 3 llmcap agent", 0),
            0u);
  EXPECT_NE(a.value().find("completionMode: \"Indexed\"\n"), std::string::npos);
  AgentFleetSpec bad = sample_spec();
  bad.count = 0;
  EXPECT_FALSE(agent_job_yaml(bad).ok());
}

}  // namespace
}  // namespace llmcap::server

namespace llmcap::server {
namespace {

// deploy/k8s/agents/indexed-job.example.yaml is what this code generates (deploy/k8s/README.md
// shows the command); tests/integration/deploy_k8s_test.py validates the file itself.
TEST(K8sManifest, DeployExampleIsWhatTheCodeGenerates) {
  AgentFleetSpec spec;
  spec.job_id = "job_01JDQ3ZK8W5M7X2T4R6Y9B0C1D";
  spec.count = 4;
  spec.image = "llmcapd:0.1.0";
  spec.daemon_url = "http://llmcapd.llmcap.svc:8080";
  spec.regions = {"eu-west", "eu-west", "us-east", "us-east"};
  spec.placement.spread_by_zone = true;
  spec.placement.spread_by_hostname = true;
  spec.resources = {"2", "2", "1Gi", "1Gi"};
  const std::string path =
      std::string(LLMCAP_SOURCE_DIR) + "/deploy/k8s/agents/indexed-job.example.yaml";
  std::ifstream in(path);
  ASSERT_TRUE(in) << "missing " << path;
  std::ostringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), agent_job_yaml(spec).value())
      << path << " is stale; regenerate it with: llmcapd k8s-manifest --job " << spec.job_id
      << " --count 4 --image llmcapd:0.1.0 --daemon-url " << spec.daemon_url
      << " --regions eu-west,eu-west,us-east,us-east --spread zone,hostname --cpu 2 "
         "--memory 1Gi > deploy/k8s/agents/indexed-job.example.yaml";
}

}  // namespace
}  // namespace llmcap::server

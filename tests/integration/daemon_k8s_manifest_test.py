"""GET /v1/jobs/{id}/agents/manifest on the real `llmcapd serve` (issue 11, Kubernetes part).

A job whose plan has `agents` gets the Indexed Job of its agent fleet, built from the plan and
the daemon's k8s_* settings (flags here): YAML by default, JSON with Accept: application/json,
one pod per shard, regions per shard, the token from a Secret; a plan without agents is 404;
a daemon without k8s_agent_image answers 409 naming that setting.

Usage: daemon_k8s_manifest_test.py PATH/TO/llmcapd"""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llmcapd_harness import Daemon, plan  # noqa: E402

BINARY = None
K8S_FLAGS = ["--k8s-mode", "print", "--k8s-agent-image", "registry.example.com/llmcapd:0.1.0",
             "--k8s-daemon-url", "http://llmcapd.llmcap.svc:8080"]


def agents_plan():
    p = plan(name="fleet")
    # manual: nothing is launched; the job waits for agents that never come, then fails.
    p["agents"] = {"count": 3, "regions": ["eu-west", "us-east"], "launch": "manual",
                   "placement": {"spread": "zone", "node_selector": {"pool": "loadgen"}},
                   "register_timeout_s": 5}
    return p


class AgentsManifestTest(unittest.TestCase):
    def daemon(self, flags):
        d = Daemon(BINARY, args=flags).start()
        self.addCleanup(d.cleanup)
        return d

    def test_manifest_of_a_plan_with_agents(self):
        d = self.daemon(K8S_FLAGS)
        job_id = d.submit(agents_plan())
        r = d.request("GET", "/v1/jobs/%s/agents/manifest" % job_id)
        self.assertEqual(r.status, 200, r.text)
        self.assertIn("application/yaml", r.headers.get("content-type", ""))
        text = r.text
        self.assertIn('completionMode: "Indexed"', text)
        self.assertIn("completions: 3\n", text)
        self.assertIn('"eu-west,us-east,eu-west"', text)  # regions cycled over 3 shards
        try:
            import yaml
        except ImportError:
            yaml = None
        if yaml is not None:
            job = yaml.safe_load(text)
            self.assertEqual(job["spec"]["parallelism"], 3)
        r = d.request("GET", "/v1/jobs/%s/agents/manifest" % job_id,
                      headers={"Accept": "application/json"})
        self.assertEqual(r.status, 200, r.text)
        job = r.json()
        self.assertEqual(job["kind"], "Job")
        pod = job["spec"]["template"]["spec"]
        c = pod["containers"][0]
        self.assertEqual(c["image"], "registry.example.com/llmcapd:0.1.0")
        self.assertEqual(c["args"][:4], ["--daemon", "http://llmcapd.llmcap.svc:8080", "--job",
                                         job_id])
        self.assertEqual(c["env"][0]["valueFrom"]["secretKeyRef"]["name"], "llmcap-agent-token")
        self.assertEqual(pod["nodeSelector"], {"pool": "loadgen"})
        self.assertEqual(pod["topologySpreadConstraints"][0]["topologyKey"],
                         "topology.kubernetes.io/zone")
        d.request("POST", "/v1/jobs/%s:cancel" % job_id)

    def test_plan_without_agents_is_404_and_unknown_job_404(self):
        d = self.daemon(K8S_FLAGS)
        job_id = d.submit(plan(name="single"))
        r = d.request("GET", "/v1/jobs/%s/agents/manifest" % job_id)
        self.assertEqual(r.status, 404, r.text)
        self.assertIn("no agents", r.json()["detail"])
        self.assertEqual(d.request("GET", "/v1/jobs/job_nope/agents/manifest").status, 404)

    def test_daemon_without_agent_image_says_which_setting(self):
        d = self.daemon(["--k8s-mode", "print"])
        job_id = d.submit(agents_plan())
        r = d.request("GET", "/v1/jobs/%s/agents/manifest" % job_id)
        self.assertEqual(r.status, 409, r.text)
        self.assertIn("k8s_agent_image", r.json()["detail"])
        d.request("POST", "/v1/jobs/%s:cancel" % job_id)

    def test_bad_k8s_setting_refuses_to_start(self):
        d = Daemon(BINARY, args=["--k8s-mode", "sometimes"])
        self.addCleanup(d.cleanup)
        with self.assertRaises(AssertionError) as e:
            d.start(timeout_s=20)
        self.assertIn("k8s_mode", str(e.exception))


if __name__ == "__main__":
    BINARY = sys.argv.pop(1)
    unittest.main(verbosity=2)

#!/usr/bin/env python3
"""`llmcapd run` without a plan file (issue 40 #2), as a user meets it: the ad-hoc flags in the
habits of `vllm bench serve` against a real `llmcapd sim` on loopback, --print-plan giving a plan
that reads back as a plan file, --set on either, and flag mistakes exiting 2 naming the flag."""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llmcapd_harness as harness  # noqa: E402

LLMCAPD = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else "llmcapd"

# `llmcapd run` keeps its results in ./llmcap-results by default: commands run in a scratch folder.
SCRATCH = tempfile.TemporaryDirectory(prefix="llmcap-adhoc-test-")


def run(*args, timeout=120):
    env = {k: v for k, v in os.environ.items() if not k.startswith("LLMCAP_")}
    return subprocess.run([LLMCAPD, *args], capture_output=True, text=True, timeout=timeout,
                          env=env, cwd=SCRATCH.name)


def start_sim(*args):
    return harness.start_sim(LLMCAPD, *args)


class AdhocRun(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # The sim serves the model name the command sends (vLLM's --served-model-name). llmcap
        # recognises it as its simulator and measures it in its own time (×10, scaled back):
        # a host that delays the sim's timers by 10 ms adds 100 ms to a TTFT, well inside the
        # 1000 ms bound also under AddressSanitizer on a busy machine (at ×50 it did not).
        cls.sim, cls.port = start_sim("--time-scale", "10", "--served-model-name", "m")
        cls.base_url = "http://127.0.0.1:%d" % cls.port

    @classmethod
    def tearDownClass(cls):
        cls.sim.send_signal(signal.SIGTERM)
        try:
            cls.sim.wait(timeout=20)
        except subprocess.TimeoutExpired:
            cls.sim.kill()
            cls.sim.wait()

    def test_the_issue_command_runs_against_the_simulator(self):
        out = os.path.join(SCRATCH.name, "adhoc-results.json")
        # The issue's command, with shorter requests than the default 1024/256 so that
        # 2 × 200 of them take about 12 s of wall clock at ×10.
        r = run("run", "--base-url", self.base_url, "--model", "m", "--concurrency", "1,8",
                "--num-prompts", "200", "--sla", "ttft_p95=1000ms", "--input-tokens", "256",
                "--output-tokens", "32", "--out", out)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        # The capacity table: its SLA, one row for the target the URL names, passing.
        self.assertIn("Qualified capacity (SLA: P95 ttft <= 1000 ms; errors <= 1%)", r.stdout)
        target = "127.0.0.1-%d" % self.port
        rows = [line for line in r.stdout.splitlines() if line.startswith(target + " ")]
        self.assertEqual(len(rows), 1, r.stdout)
        self.assertRegex(rows[0], r"^\S+\s+m\s+256/32\s+c=(1|8)\s")
        self.assertIn("simulated", rows[0])  # llmcap's own simulator, measured in its time
        self.assertIn("PASS", rows[0])
        self.assertIn("verdict: pass", r.stdout)
        self.assertIn("plan adhoc: 1 target(s)", r.stderr)
        self.assertEqual(r.stderr.count("concurrency_sweep c="), 2, r.stderr)
        # The plan that ran is the one the flags stand for: 200 requests per step, model m.
        with open(out) as f:
            doc = json.load(f)
        self.assertEqual(doc["plan_document"]["phases"][0]["levels"], [1, 8])
        steps = doc["targets"][0]["phases"][0]["steps"]
        self.assertEqual([s["params"]["concurrency"] for s in steps], [1, 8])
        for s in steps:
            self.assertEqual(s["params"]["requests"], 200)
            self.assertEqual(s["stats"]["counts"]["intended"], 200)
            self.assertEqual(s["stats"]["counts"]["completed_ok"], 200)
            self.assertEqual(s["model"], "m")
        # c=1 passes on any host. c=8 at ×10 can miss its TTFT bound when the host is loaded
        # (the simulator's real-time steps fall behind: CI with builds beside it, 2026-12-07):
        # it passes, or fails on a latency bound alone — never on errors or counts.
        self.assertEqual(steps[0]["verdict"]["outcome"], "pass")
        outcome = steps[1]["verdict"]["outcome"]
        missed = [r["code"] for r in steps[1]["verdict"]["reasons"] if r["status"] == "missed"]
        if outcome != "pass":
            sys.stderr.write("note: c=8 read %s on this host, missed %s\n" % (outcome, missed))
            self.assertEqual(outcome, "fail")
            self.assertTrue(missed and all(c.startswith("ttft") for c in missed), missed)


class AdhocPlan(unittest.TestCase):
    ISSUE_FLAGS = ["--base-url", "http://127.0.0.1:8000", "--model", "m", "--concurrency",
                   "1,8", "--num-prompts", "200", "--sla", "ttft_p95=1000ms"]

    def test_print_plan_is_a_plan_that_reads_back_and_runs_nothing(self):
        r = run("run", *self.ISSUE_FLAGS, "--print-plan")
        self.assertEqual(r.returncode, 0, r.stderr)
        plan = json.loads(r.stdout)
        self.assertEqual(plan["version"], 1)
        self.assertEqual(plan["targets"], [{"name": "127.0.0.1-8000",
                                            "base_url": "http://127.0.0.1:8000", "model": "m"}])
        self.assertEqual(plan["sla"], {"ttft_ms": {"p95": 1000}})
        self.assertEqual(plan["phases"], [{"kind": "concurrency_sweep", "levels": [1, 8],
                                           "requests": 200}])
        # Nothing ran: no results kept (every other command here says where its results go).
        self.assertFalse(os.path.exists(os.path.join(SCRATCH.name, "llmcap-results")))
        # Saved, it is a plan file: the same reader checks it (no server needed to print it)...
        with tempfile.NamedTemporaryFile("w", suffix=".json", dir=SCRATCH.name,
                                         delete=False) as f:
            json.dump(plan, f)
        r2 = run("run", f.name, "--print-plan")
        self.assertEqual(r2.returncode, 0, r2.stderr)
        self.assertEqual(json.loads(r2.stdout), plan)
        # ... and --set edits it, or the ad-hoc one, the same way.
        r3 = run("run", f.name, "--set", "phases.0.levels=[2,4]", "--set", "sla.tpot_ms.p95=35",
                 "--print-plan")
        self.assertEqual(r3.returncode, 0, r3.stderr)
        edited = json.loads(r3.stdout)
        self.assertEqual(edited["phases"][0]["levels"], [2, 4])
        self.assertEqual(edited["sla"], {"ttft_ms": {"p95": 1000}, "tpot_ms": {"p95": 35}})
        r4 = run("run", *self.ISSUE_FLAGS, "--set", "phases.0.warmup_s=1", "--print-plan")
        self.assertEqual(json.loads(r4.stdout)["phases"][0]["warmup_s"], 1)

    def test_predict_takes_the_flags_with_a_sim_url(self):
        r = run("predict", "--base-url", "sim://a100-80g-pcie/llama-3.1-8b", "--concurrency",
                "1,8", "--num-prompts", "200", "--sla", "ttft_p95=1000ms", "--no-out")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("Predicted qualified capacity", r.stdout)
        self.assertRegex(r.stdout, r"\na100-80g-pcie\s+llama-3.1-8b\s")

    def test_a_bad_sla_entry_exits_2_naming_the_flag_and_the_entry(self):
        r = run("run", "--base-url", "http://127.0.0.1:8000", "--concurrency", "1,8", "--sla",
                "ttft_p95=1000ms,tpot_p95=fast")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("llmcapd run: --sla: 'tpot_p95=fast': 'fast' is not a time", r.stderr)
        self.assertEqual(r.stdout, "")

    def test_flag_mistakes_exit_2_naming_the_flag(self):
        cases = [
            # Out of range: found by the plan reader, named by the flag that wrote it.
            (["--base-url", "http://127.0.0.1:8000", "--concurrency", "1,0"],
             "/phases/0/levels/1: must be an integer between 1 and 4096 (from --concurrency)"),
            (["--base-url", "http://127.0.0.1:8000?x=1", "--concurrency", "1"],
             "/targets/0/base_url: must not have a query or fragment (from --base-url)"),
            (["--base-url", "http://127.0.0.1:8000", "--concurrency", "1", "--set",
              "phases.0.duration_s=0"], "(from --set phases.0.duration_s=0)"),
            (["--base-url", "http://127.0.0.1:8000", "--concurrency", "1", "--set",
              "phases.7.kind=soak"], "--set phases.7.kind: phases has 1 item"),
            (["--base-url", "http://127.0.0.1:8000", "--concurrency", "1", "--num-prompts",
              "100", "--duration", "30"], "--num-prompts and --duration: give one"),
            (["--base-url", "http://127.0.0.1:8000", "--search"], "--search needs --sla"),
            (["--base-url", "http://127.0.0.1:8000"], "no load given"),
            (["--model", "m", "--concurrency", "1"], "--base-url is required"),
            (["plan.json", "--base-url", "http://127.0.0.1:8000"],
             "give PLAN.json or the ad-hoc flags, not both"),
        ]
        for args, want in cases:
            r = run("run", *args)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertIn(want, r.stderr, args)

    def test_help_lists_the_flags(self):
        r = run("run", "--help")
        self.assertEqual(r.returncode, 0)
        for flag in ("--base-url", "--model", "--api", "--input-tokens", "--output-tokens",
                     "--dataset", "--concurrency", "--request-rate", "--search", "--num-prompts",
                     "--duration", "--sla", "--price", "--currency", "--seed", "--set",
                     "--print-plan"):
            self.assertRegex(r.stdout, r"\n  %s\b" % re.escape(flag))
        self.assertIn("llmcapd run --base-url URL", r.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)

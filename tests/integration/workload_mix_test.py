#!/usr/bin/env python3
"""Workload mixes and matrices (issue 21): `workload.mix` sends classes of requests with their own lengths in
one step, each request's class a pure function of the step's seed and the request's index.
Checked as a user runs it with `llmcapd predict` (virtual time) and `llmcapd run` (the embedded
simulator in real time): the classes' shares follow their weights, each class's requests have its
lengths, the long-input classes have the higher TTFT, a class's own SLA decides the step's verdict
and the capacity search, a bad mix is refused naming the field, and the measured run assigns the
same classes as the prediction. A workload matrix (`workloads`) runs every phase once per named
workload on every target: one qualified-capacity table per shape (deploy/plans/
workload-matrix.json predicted), bad matrices refused naming the field. About 12 s."""
import copy
import json
import os
import unittest

from cli_scratch import REPO, CliScratch, binary_from_argv

SCRATCH = CliScratch(binary_from_argv(), "llmcap-mix-test-")
write, load = SCRATCH.write, SCRATCH.load


def llmcapd(*args, timeout=120):
    return SCRATCH.run(*args, timeout=timeout)


MIX = [
    {"name": "chat", "weight": 0.7, "input_tokens": 256, "output_tokens": 256},
    {"name": "rag", "weight": 0.2, "input_tokens": 4000, "output_tokens": 128},
    {"name": "summarise", "weight": 0.1, "input_tokens": 8000, "output_tokens": 256},
]

PLAN = {
    "version": 1,
    "name": "mix-test",
    "seed": 5,
    "targets": [{"name": "a100", "base_url": "sim://a100-80g-pcie/llama-3.1-8b",
                 "price_per_hour": 1.5, "sim": {"time_scale": 4}}],
    "workload": {"mix": MIX},
    "sla": {"ttft_ms": {"p95": 1500}, "tpot_ms": {"p95": 40}, "min_requests": 20},
    "phases": [{"kind": "rate_sweep", "rates_rps": [2], "duration_s": 300, "warmup_s": 5}],
}


def steps(results):
    return [s for p in results["targets"][0]["phases"] for s in p["steps"]]


def classes(step):
    return {c["name"]: c for c in step["mix"]}


class WorkloadMix(unittest.TestCase):
    def predict(self, plan, name):
        r = llmcapd("predict", write(name + ".json", plan), "--out", name + "-results.json")
        self.assertTrue(os.path.exists(os.path.join(SCRATCH.name, name + "-results.json")),
                        r.stderr + r.stdout)
        return load(name + "-results.json"), r.stderr + r.stdout

    def test_classes_follow_weights_lengths_and_latency(self):
        doc, out = self.predict(PLAN, "shares")
        step = steps(doc)[0]
        by = classes(step)
        total = sum(c["stats"]["counts"]["intended"] for c in step["mix"])
        self.assertEqual(total, step["stats"]["counts"]["intended"])
        self.assertGreater(total, 500)
        for spec in MIX:
            c = by[spec["name"]]
            # Shares of ~600 requests: within 4 points of the weights (3.5 standard deviations
            # of the smallest class's binomial share is 4.3 points; the draw is deterministic).
            self.assertAlmostEqual(c["share"], spec["weight"], delta=0.04, msg=spec["name"])
            self.assertEqual(c["stats"]["tokens"]["input"]["mean"], spec["input_tokens"])
            self.assertEqual(c["stats"]["tokens"]["output"]["mean"], spec["output_tokens"])
        # Prefill of 4000 and 8000 tokens: the long-input classes wait longer for a first token.
        ttft = {n: c["stats"]["ttft_ms"]["p50"] for n, c in by.items()}
        self.assertLess(2 * ttft["chat"], ttft["rag"])
        self.assertLess(ttft["rag"], ttft["summarise"])
        self.assertEqual(step["verdict"]["outcome"], "pass", out)
        self.assertIn("class summarise", out)
        # The target's workload says the mix and its weighted mean lengths.
        w = doc["targets"][0]["workload"]
        self.assertEqual([c["name"] for c in w["mix"]], ["chat", "rag", "summarise"])
        self.assertAlmostEqual(w["input_tokens_mean"], 0.7 * 256 + 0.2 * 4000 + 0.1 * 8000)
        # Markdown and HTML reports carry one row per class.
        md = llmcapd("report", "shares-results.json", "--format", "markdown").stdout
        self.assertIn("## Workload mix: per-class results", md)
        self.assertIn("| a100 | rate_sweep | 2.00 rps | summarise |", md)
        html = llmcapd("report", "shares-results.json").stdout
        self.assertIn('id="mix-table"', html)
        # The same plan gives the same classes again.
        again, _ = self.predict(PLAN, "shares")
        self.assertEqual(steps(again)[0]["mix"], step["mix"])

    def test_a_class_sla_decides_the_step_and_the_capacity(self):
        strict = copy.deepcopy(PLAN)
        strict["workload"]["mix"][2]["sla"] = {"ttft_ms": {"p95": 300}}
        doc, _ = self.predict(strict, "strict")
        step = steps(doc)[0]
        by = classes(step)
        self.assertEqual(by["chat"]["verdict"]["outcome"], "pass")
        self.assertEqual(by["summarise"]["verdict"]["outcome"], "fail")
        self.assertEqual(step["verdict"]["outcome"], "fail")
        codes = [r["code"] for r in step["verdict"]["reasons"] if r["status"] == "missed"]
        self.assertIn("summarise:ttft_p95", codes)

        # A capacity search judges by the same rule: the class's bound lowers the capacity.
        def search(plan):
            p = copy.deepcopy(plan)
            p["sla"] = {"ttft_ms": {"p95": 2000}, "tpot_ms": {"p95": 60}, "min_requests": 20}
            p["phases"] = [{"kind": "capacity_search", "start_from": 2, "low_rps": 0.5,
                            "high_rps": 8, "duration_s": 300, "confirm_duration_s": 600,
                            "warmup_s": 5, "max_steps": 12, "resolution": 0.1}]
            return p
        loose, _ = self.predict(search(PLAN), "search-loose")
        tight_plan = search(PLAN)
        # chat's users want a faster stream than the plan's 60 ms: predicted 3.00 vs 2.00 rps.
        tight_plan["workload"]["mix"][0]["sla"] = {"tpot_ms": {"p95": 25}}
        tight, _ = self.predict(tight_plan, "search-tight")
        q_loose = loose["targets"][0]["qualified"]
        q_tight = tight["targets"][0]["qualified"]
        self.assertIsNotNone(q_loose)
        self.assertIsNotNone(q_tight)
        self.assertLess(q_tight["offered_rate_rps"], q_loose["offered_rate_rps"])

    def test_bad_mixes_are_refused_naming_the_field(self):
        bad = copy.deepcopy(PLAN)
        bad["workload"]["mix"][1]["weight"] = 0
        r = llmcapd("predict", write("bad.json", bad), "--no-out")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("/workload/mix/1/weight", r.stderr + r.stdout)
        bad = copy.deepcopy(PLAN)
        bad["workload"]["dataset"] = {"path": "x.jsonl"}
        r = llmcapd("predict", write("bad2.json", bad), "--no-out")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("/workload/mix", r.stderr + r.stdout)

    def test_the_measured_run_assigns_the_same_classes(self):
        plan = copy.deepcopy(PLAN)
        plan["phases"][0]["duration_s"] = 24
        plan["phases"][0]["warmup_s"] = 2
        predicted, _ = self.predict(plan, "agree")
        r = llmcapd("run", write("agree-run.json", plan), "--out", "measured.json")
        self.assertTrue(os.path.exists(os.path.join(SCRATCH.name, "measured.json")),
                        r.stderr + r.stdout)
        measured = load("measured.json")
        ps, ms = classes(steps(predicted)[0]), classes(steps(measured)[0])
        for name in ps:
            pc, mc = ps[name]["stats"], ms[name]["stats"]
            # The same arrivals and the same class for each of them; lengths from the class.
            self.assertEqual(pc["counts"]["intended"], mc["counts"]["intended"], name)
            self.assertEqual(mc["tokens"]["input"]["mean"], pc["tokens"]["input"]["mean"], name)
            self.assertEqual(mc["tokens"]["output"]["mean"], pc["tokens"]["output"]["mean"], name)


class WorkloadMatrix(unittest.TestCase):
    def test_one_capacity_table_per_shape(self):
        # The example plan with its search's windows halved (90 s steps, 180 s confirms): the
        # same tables and the same orders of cost and rate per shape, at 22 s of CPU under ASan
        # instead of 37 s (every target still qualifies; the rates move by up to 20 %).
        with open(os.path.join(REPO, "deploy/plans/workload-matrix.json")) as f:
            matrix = json.load(f)
        for phase in matrix["phases"]:
            phase.update({"duration_s": 90, "confirm_duration_s": 180})
        r = llmcapd("predict", write("workload-matrix.json", matrix), "--out", "matrix.json")
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        doc = load("matrix.json")
        rows = {t["name"]: t for t in doc["targets"]}
        shapes = ["short-long", "long-short", "long-long"]
        gpus = ["rtx4090-48g", "a100-80g-pcie"]
        # Workload by workload, every target in plan order.
        self.assertEqual([t["name"] for t in doc["targets"]],
                         [f"{g}@{w}" for w in shapes for g in gpus])
        for w in shapes:
            for g in gpus:
                t = rows[f"{g}@{w}"]
                self.assertEqual((t["target"], t["workload_name"]), (g, w))
                self.assertIsNotNone(t["qualified"], t["verdict"])
                # Every step of the pair sent its own workload's lengths.
                step = t["phases"][0]["steps"][0]
                expected_in = 256 if w == "short-long" else 4096
                self.assertEqual(step["stats"]["tokens"]["input"]["mean"], expected_in)
        cost = {n: t["qualified"]["cost_per_million_output_tokens"] for n, t in rows.items()}
        # Prefill-bound shapes cost far more per output token than decode-bound ones.
        for g in gpus:
            self.assertGreater(cost[f"{g}@long-short"], 5 * cost[f"{g}@short-long"])
            self.assertGreater(rows[f"{g}@short-long"]["qualified"]["offered_rate_rps"],
                               rows[f"{g}@long-long"]["qualified"]["offered_rate_rps"])
        # Comparisons within each workload only.
        self.assertEqual(sorted(c["workload"] for c in doc["comparison"]), sorted(shapes))
        for c in doc["comparison"]:
            self.assertTrue(c["target"].endswith("@" + c["workload"]), c)
            self.assertTrue(c["baseline"].endswith("@" + c["workload"]), c)
        # The tables: one per workload in the console, the Markdown and the HTML report.
        for w in shapes:
            self.assertIn(f"workload {w} (in/out", r.stdout)
        md = llmcapd("report", "matrix.json", "--format", "markdown").stdout
        self.assertEqual(md.count("### Workload `"), 3, md)
        html = llmcapd("report", "matrix.json").stdout
        self.assertEqual(html.count('class="workload-group"'), 3)

    def test_bad_matrices_are_refused_naming_the_field(self):
        plan = copy.deepcopy(PLAN)
        del plan["workload"]
        plan["workloads"] = [{"name": "a", "input_tokens": 128, "output_tokens": 64},
                             {"name": "b", "input_tokens": 0},
                             {"name": "c", "trace": {"format": "burstgpt", "path": "t.csv"}}]
        plan["targets"][0]["workload"] = {"output_tokens": 8}
        r = llmcapd("predict", write("bad-matrix.json", plan), "--no-out")
        self.assertNotEqual(r.returncode, 0)
        for field in ("/workloads/1/input_tokens", "/workloads/2/trace", "/targets/0/workload"):
            self.assertIn(field, r.stderr + r.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)

#!/usr/bin/env python3
"""Prefix groups against the simulator's prefix cache (issues 19 and 21), run as a user runs it:
`llmcapd run` of a plan whose prompts fall in two prefix groups (70 % share a 1024-token prefix,
30 % a 512-token one; 1536-token prompts) on two embedded sim:// targets, prefix caching on and
off. The simulator's own /metrics (vllm:prefix_cache_hits_total / _queries_total), scraped into
each step's telemetry, must report the groups' expected share of cached prompt tokens,
(0.7 × 1024 + 0.3 × 512) / 1536 = 0.567, within 3 points; the target without caching reports no
hits; TTFT is lower with the cache. `llmcapd predict` of the same plan predicts the same hit rate
and less than half the TTFT P50 with the cache.
The plan's times run 4x faster with the simulator (time_scale 4): about 10 s. The verdicts are not
what is tested (a busy host may make a step inconclusive), the server's counters are."""
import json
import sys
import unittest

from cli_scratch import CliScratch, binary_from_argv

SCRATCH = CliScratch(binary_from_argv(), "llmcap-prefix-cache-test-")
write, load = SCRATCH.write, SCRATCH.load


def llmcapd(*args, timeout=120):
    return SCRATCH.run(*args, timeout=timeout)


EXPECTED_HIT_RATE = (0.7 * 1024 + 0.3 * 512) / 1536

PLAN = {
    "version": 1,
    "name": "prefix-groups-e2e",
    "seed": 19,
    "targets": [
        {"name": "cached", "base_url": "sim://a100-80g-pcie/llama-3.1-8b",
         "sim": {"time_scale": 4}},
        {"name": "uncached", "base_url": "sim://a100-80g-pcie/llama-3.1-8b",
         "sim": {"time_scale": 4, "enable_prefix_caching": False}},
    ],
    "workload": {
        "input_tokens": {"fixed": 1536},
        "output_tokens": {"fixed": 16},
        "prefix_groups": [{"share": 0.7, "prefix_tokens": 1024},
                          {"share": 0.3, "prefix_tokens": 512}],
    },
    "sla": {"ttft_ms": {"p95": 5000}, "min_requests": 20},
    "phases": [{"kind": "concurrency_sweep", "levels": [4], "duration_s": 16, "warmup_s": 2}],
}


def only_step(results, target):
    t = next(t for t in results["targets"] if t["name"] == target)
    return t["phases"][0]["steps"][0]


class PrefixGroups(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        plan = write("plan.json", PLAN)
        cls.run_proc = llmcapd("run", plan, "--out", "measured.json")
        cls.predict_proc = llmcapd("predict", plan, "--out", "predicted.json")

    def test_the_simulator_reports_the_groups_share_of_cached_tokens(self):
        self.assertIn(self.run_proc.returncode, (0, 1, 4), self.run_proc.stderr)
        measured = load("measured.json")
        cached, uncached = only_step(measured, "cached"), only_step(measured, "uncached")
        tc, tu = cached["telemetry"], uncached["telemetry"]
        print(f"measured hit rate {tc['prefix_cache_hit_rate']:.4f} "
              f"(expected {EXPECTED_HIT_RATE:.4f}; {tc['prefix_cache_hits']:.0f} of "
              f"{tc['prefix_cache_queries']:.0f} tokens); TTFT p50 "
              f"{cached['stats']['ttft_ms']['p50']:.1f} ms cached vs "
              f"{uncached['stats']['ttft_ms']['p50']:.1f} ms uncached", file=sys.stderr)
        self.assertGreater(tc["prefix_cache_queries"], 20 * 1536)
        self.assertAlmostEqual(tc["prefix_cache_hit_rate"], EXPECTED_HIT_RATE, delta=0.03)
        # Caching off: the sim exports the counters but never hits.
        self.assertIn(tu["prefix_cache_hits"], (0, None))
        # That the first token comes sooner when only the uncached third of the prompt is
        # prefilled is checked in virtual time (test_prediction_models_the_same_hits): in real
        # time under ASan the host's speed decides it (beside a parallel build the cached P50
        # read 438 ms against the uncached 399 ms, issue 33), not the simulator.
        self.assertIn("prefix caching on", next(
            t for t in measured["targets"] if t["name"] == "cached")["simulator"])

    def test_prediction_models_the_same_hits(self):
        self.assertIn(self.predict_proc.returncode, (0, 1, 4), self.predict_proc.stderr)
        predicted = load("predicted.json")
        tc = only_step(predicted, "cached")["telemetry"]
        tu = only_step(predicted, "uncached")["telemetry"]
        ttft_c = only_step(predicted, "cached")["stats"]["ttft_ms"]["p50"]
        ttft_u = only_step(predicted, "uncached")["stats"]["ttft_ms"]["p50"]
        print(f"predicted hit rate {tc['prefix_cache_hit_rate']:.4f}; TTFT p50 {ttft_c:.1f} ms "
              f"cached vs {ttft_u:.1f} ms uncached", file=sys.stderr)
        self.assertAlmostEqual(tc["prefix_cache_hit_rate"], EXPECTED_HIT_RATE, delta=0.03)
        self.assertIsNone(tu["prefix_cache_hit_rate"])
        # A third of the prompt prefilled instead of all of it (queueing included): 82 vs 222 ms.
        self.assertLess(ttft_c, 0.5 * ttft_u)

    def test_bad_groups_are_refused_naming_the_field(self):
        bad = json.loads(json.dumps(PLAN))
        bad["workload"]["prefix_groups"] = [{"share": 0.5, "prefix_tokens": 1024},
                                            {"share": 0.2, "prefix_tokens": 0}]
        r = llmcapd("predict", write("bad.json", bad), "--no-out")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("/workload/prefix_groups/1/prefix_tokens: ", r.stderr)
        bad["workload"]["prefix_groups"][1]["prefix_tokens"] = 64
        r = llmcapd("predict", write("bad.json", bad), "--no-out")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("/workload/prefix_groups: the groups' shares must sum to 1", r.stderr)


if __name__ == "__main__":
    unittest.main()

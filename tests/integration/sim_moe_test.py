#!/usr/bin/env python3
"""Mixture-of-experts models in the simulator (issue 19; sim/README.md "Mixture of experts"),
run the way a user runs them: small plans on sim:// targets predicted with `llmcapd predict`.

- Mixtral-8x7B on 2 x H100 SXM (tensor_parallel 2) completes; at batch 1 its TPOT is well below
  that of a dense model of the same total size and shape (a profiles file drops the expert
  fields), because a decode step reads only 2 of its 8 experts; at 32 concurrent requests every
  expert is read each step and most of the advantage is gone.
- `llmcapd estimate` holds every expert in memory (46.70 GB of weights per GPU at TP 2).
- Qwen3-30B-A3B on one A100 80GB at batch 1 against a published measurement (a known gap,
  below).

  sim_moe_test.py LLMCAPD
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

LLMCAPD = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else "llmcapd"
SCRATCH = tempfile.TemporaryDirectory(prefix="llmcap-sim-moe-")

# The dense twin of Mixtral-8x7B: the same layers, widths and total parameters, no router.
DENSE_TWIN = {"models": [{"name": "dense-46.7b", "params": 46.70e9, "layers": 32, "hidden": 4096,
                          "heads": 32, "kv_heads": 8, "head_dim": 128, "ffn": 14336,
                          "vocab": 32000, "max_context_tokens": 32768}]}

# Published: Qwen3-30B-A3B BF16 on an A100 (variant not stated; 80 GB SXM assumed), vLLM,
# 128/128 tokens at concurrency 1: TPOT 9.6 ms (103.9 tok/s).
# Source: https://github.com/tenstorrent/tt-inference-server/issues/340 (2025-07-18,
# "Performance Benchmark Sweeps for Qwen3-30B-A3B on A100").
QWEN3_A100_TPOT_MS = 9.6


def plan(name, target, sim, levels, input_tokens, output_tokens, requests):
    return {
        "version": 1, "name": name, "seed": 7,
        "targets": [{"name": name, "base_url": target, "sim": sim}],
        "workload": {"input_tokens": input_tokens, "output_tokens": output_tokens,
                     "ignore_eos": True},
        "sla": {"ttft_ms": {"p95": 3600000}, "min_requests": 1},
        "phases": [{"kind": "concurrency_sweep", "levels": levels, "requests": requests,
                    "warmup_s": 0}],
    }


def predict(p, extra=()):
    """Runs `llmcapd predict` on plan p; returns (per-step stats, the simulator line)."""
    path = os.path.join(SCRATCH.name, p["name"] + ".json")
    out = os.path.join(SCRATCH.name, p["name"] + ".results.json")
    with open(path, "w") as f:
        json.dump(p, f)
    r = subprocess.run([LLMCAPD, "predict", path, "--out", out, *extra], capture_output=True,
                       text=True, timeout=120, cwd=SCRATCH.name)
    if r.returncode != 0:
        raise AssertionError(f"llmcapd predict {p['name']} exited {r.returncode}: {r.stderr}")
    with open(out) as f:
        target = json.load(f)["targets"][0]
    stats = [s["stats"] for ph in target["phases"] for s in ph["steps"]]
    return stats, target["simulator"]


class MixtureOfExperts(unittest.TestCase):
    def test_mixtral_tp2_decodes_like_its_active_parameters_at_batch_1(self):
        profiles = os.path.join(SCRATCH.name, "dense-twin-profile.json")
        with open(profiles, "w") as f:
            json.dump(DENSE_TWIN, f)
        moe, moe_line = predict(plan("mixtral", "sim://h100-sxm/mixtral-8x7b",
                                     {"tensor_parallel": 2}, [1, 32], 256, 128, 48))
        dense, _ = predict(plan("dense", "sim://h100-sxm/dense-46.7b", {"tensor_parallel": 2},
                                [1, 32], 256, 128, 48), ["--profiles-file", profiles])
        self.assertIn("mixtral-8x7b bf16 on 2 × h100-sxm", moe_line)
        self.assertIn("weights 46.70 GB per GPU", moe_line)  # every expert is held
        for s in moe + dense:
            self.assertEqual(s["error_rate"], 0)
        tpot = [s["tpot_ms"]["p50"] for s in moe]
        tpot_dense = [s["tpot_ms"]["p50"] for s in dense]
        print(f"\nMixtral-8x7B TP2 H100 TPOT p50 c=1 {tpot[0]:.2f} ms, c=32 {tpot[1]:.2f} ms; "
              f"dense 46.7B: {tpot_dense[0]:.2f} / {tpot_dense[1]:.2f} ms")
        # Batch 1 reads 12.9B of 46.7B parameters: well below the dense model (~0.3x).
        self.assertLess(tpot[0], 0.4 * tpot_dense[0])
        # At 32 sequences every expert is read each step: the gap mostly closes.
        self.assertGreater(tpot[1] / tpot_dense[1], 0.75)
        self.assertGreater(tpot[1] / tpot_dense[1], tpot[0] / tpot_dense[0])

    def test_estimate_holds_every_expert(self):
        r = subprocess.run([LLMCAPD, "estimate", "--hardware", "h100-sxm", "--model",
                            "mixtral-8x7b", "--tensor-parallel", "2", "--json"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        fit = json.loads(r.stdout)
        # 46.70 GB of weights per GPU (half of 93.4 GB), not the 12.9B active parameters.
        self.assertAlmostEqual(fit["weights_gb"], 46.70, places=2)
        self.assertTrue(fit["fits"])
        r = subprocess.run([LLMCAPD, "estimate", "--hardware", "h100-sxm", "--model",
                            "mixtral-8x7b"], capture_output=True, text=True, timeout=60)
        self.assertIn("fits               NO", r.stdout)  # 93.4 GB on one 80 GB card

    def test_qwen3_30b_a3b_on_a100_against_a_published_point(self):
        stats, line = predict(plan("qwen3", "sim://a100-80g-sxm/qwen3-30b-a3b", {}, [1], 128,
                                   128, 8))
        self.assertIn("weights 61.06 GB", line)
        tpot = stats[0]["tpot_ms"]["p50"]
        error = tpot / QWEN3_A100_TPOT_MS - 1
        print(f"\nQwen3-30B-A3B A100 c=1 TPOT p50 {tpot:.2f} ms, published "
              f"{QWEN3_A100_TPOT_MS} ms: {error:+.1%}")
        # Known gap (sim/README.md "Mixture of experts"): the roofline charges only the bytes of
        # the 8 experts read, but 48 layers of routing kernels (router GEMM, top-k, sort, two
        # grouped GEMMs over 3-6 MB expert matrices) cost about as much again at batch 1. The
        # bound keeps the gap from growing unnoticed.
        self.assertGreater(error, -0.6)
        self.assertLess(error, 0.1)


if __name__ == "__main__":
    unittest.main(verbosity=2)

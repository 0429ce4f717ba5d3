#!/usr/bin/env python3
"""The simulator against published measurements (issue 19), run the way a user runs it: every
point in tests/data/sim_calibration_points.json becomes a small plan on a sim:// target,
predicted with `llmcapd predict` (the load generator's closed loop and the sim's engine on one
virtual clock), and its published figure is compared with the predicted one. Asserts the
median |error| over all points (<= 6 %, across >= 4 GPUs) and over the TTFT points (<= 10 %).

  sim_calibration_test.py LLMCAPD              run the test
  sim_calibration_test.py LLMCAPD --table      print the markdown table of sim/README.md
"""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import unittest
from concurrent.futures import ThreadPoolExecutor

LLMCAPD = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else "llmcapd"
TABLE = "--table" in sys.argv
if TABLE:
    sys.argv.remove("--table")
HERE = os.path.dirname(os.path.abspath(__file__))
POINTS = os.path.join(os.path.dirname(HERE), "data", "sim_calibration_points.json")
SCRATCH = tempfile.TemporaryDirectory(prefix="llmcap-sim-calibration-")


def plan_for(point):
    levels = point["concurrency"]
    levels = levels if isinstance(levels, list) else [levels]
    return {
        "version": 1,
        "name": "calibration-" + point["id"].lower(),
        "seed": 7,
        "targets": [{"name": point["id"].lower(), "base_url": point["target"],
                     "sim": point.get("sim", {})}],
        "workload": {"input_tokens": point["input"], "output_tokens": point["output"],
                     "ignore_eos": True},
        "sla": {"ttft_ms": {"p95": 3600000}, "min_requests": 1},
        "phases": [{"kind": "concurrency_sweep", "levels": levels,
                    "requests": point["requests"], "warmup_s": 0}],
    }


def predict(point):
    """Runs the point's plan; returns (predicted figure, GPU profile name)."""
    path = os.path.join(SCRATCH.name, point["id"] + ".json")
    out = os.path.join(SCRATCH.name, point["id"] + ".results.json")
    with open(path, "w") as f:
        json.dump(plan_for(point), f)
    r = subprocess.run([LLMCAPD, "predict", path, "--out", out], capture_output=True, text=True,
                       timeout=120, cwd=SCRATCH.name)
    if r.returncode != 0:
        raise RuntimeError(f"{point['id']}: llmcapd predict exited {r.returncode}: {r.stderr}")
    with open(out) as f:
        results = json.load(f)
    target = results["targets"][0]
    steps = [s for p in target["phases"] for s in p["steps"]]
    stats = [s["stats"] for s in steps]
    metric = point["metric"]
    if metric == "output_tokens_per_s":
        value = stats[0]["output_tokens_per_s"]
    elif metric == "output_tokens_per_s_ratio":
        value = stats[0]["output_tokens_per_s"] / stats[1]["output_tokens_per_s"]
    elif metric == "ttft_p50_ms":
        value = stats[0]["ttft_ms"]["p50"]
    elif metric == "decode_tokens_per_s":
        value = 1000.0 / stats[0]["tpot_ms"]["p50"]
    elif metric == "kv_pool_tokens":
        m = re.search(r"# GPU blocks: (\d+)", target["simulator"])
        if not m:
            raise RuntimeError(f"{point['id']}: no '# GPU blocks' in {target['simulator']!r}")
        value = 16 * int(m.group(1))
    else:
        raise RuntimeError(f"{point['id']}: unknown metric {metric}")
    gpu = point["target"][len("sim://"):].split("/")[0]
    return value, gpu


def run_all():
    with open(POINTS) as f:
        points = json.load(f)["points"]
    with ThreadPoolExecutor(max_workers=2) as pool:
        figures = list(pool.map(predict, points))
    rows = []
    for point, (value, gpu) in zip(points, figures):
        err = (value - point["published"]) / point["published"]
        rows.append({"point": point, "predicted": value, "error": err, "gpu": gpu})
    return rows


def fmt(v):
    return f"{v:.2f}" if abs(v) < 20 else f"{v:,.0f}".replace(",", " ")


def table(rows):
    out = ["| point | what | published | predicted | error | source |",
           "|---|---|---|---|---|---|"]
    for r in rows:
        p = r["point"]
        out.append(f"| {p['id']} | {p['what']} | {fmt(p['published'])} {p['unit']} | "
                   f"{fmt(r['predicted'])} | {r['error']:+.1%} | {p['source']} |")
    errs = [abs(r["error"]) for r in rows]
    ttft = [abs(r["error"]) for r in rows if r["point"]["metric"] == "ttft_p50_ms"]
    cal = [abs(r["error"]) for r in rows if r["point"]["role"] == "calibration"]
    val = [abs(r["error"]) for r in rows if r["point"]["role"] == "validation"]
    out.append("")
    out.append(f"median |error|: all {len(errs)} points {statistics.median(errs):.1%}, "
               f"TTFT {statistics.median(ttft):.1%} ({len(ttft)}), calibration "
               f"{statistics.median(cal):.1%} ({len(cal)}), validation "
               f"{statistics.median(val):.1%} ({len(val)}); GPUs: "
               f"{', '.join(sorted({r['gpu'] for r in rows}))}")
    return "\n".join(out)


class SimCalibration(unittest.TestCase):
    def test_published_points_within_six_percent_median(self):
        rows = run_all()
        report = table(rows)
        print(report, file=sys.stderr)
        errs = [abs(r["error"]) for r in rows]
        ttft = [abs(r["error"]) for r in rows if r["point"]["metric"] == "ttft_p50_ms"]
        gpus = {r["gpu"] for r in rows}
        self.assertGreaterEqual(len(gpus), 4, gpus)
        self.assertGreaterEqual(len(ttft), 6)
        self.assertLessEqual(statistics.median(errs), 0.06, report)
        self.assertLessEqual(statistics.median(ttft), 0.10, report)
        # No point may be wildly off even when the median is fine: 50 % either way means the
        # model misses a mechanism, not a parameter. The points whose mechanism is known to be
        # missing say so ("known_gap") and still count in the medians.
        for r in rows:
            if "known_gap" not in r["point"]:
                self.assertLess(abs(r["error"]), 0.5, f"{r['point']['id']}: {r['error']:+.1%}")

    def test_every_point_names_its_source_and_conditions(self):
        with open(POINTS) as f:
            points = json.load(f)["points"]
        ids = [p["id"] for p in points]
        self.assertEqual(len(ids), len(set(ids)))
        for p in points:
            for key in ("what", "published", "unit", "metric", "source", "role", "target",
                        "input", "output", "concurrency", "requests"):
                self.assertIn(key, p, p["id"])
            self.assertIn(p["role"], ("calibration", "validation"), p["id"])
            self.assertTrue(p["source"].startswith("https://"), p["id"])


if __name__ == "__main__":
    if TABLE:
        print(table(run_all()))
    else:
        unittest.main()

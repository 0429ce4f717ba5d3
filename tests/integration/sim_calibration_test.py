#!/usr/bin/env python3
"""The simulator against published measurements (issue 19), run the way a user runs it: every
point in tests/data/sim_calibration_points.json becomes a small plan on a sim:// target,
predicted with `llmcapd predict` (the load generator's closed loop and the sim's engine on one
virtual clock), and its published figure is compared with the predicted one. Asserts the
median |error| over all points (<= 6 %, across >= 4 GPUs) and over the TTFT points (<= 10 %).

  sim_calibration_test.py LLMCAPD              run the test
  sim_calibration_test.py LLMCAPD --table      print the markdown table of sim/README.md
  sim_calibration_test.py LLMCAPD --measured   print the table with every point measured in
                                               real time with `llmcapd run` (one at a time,
                                               sim time_scale 1: about 25 minutes; run it on an
                                               otherwise idle machine), beside the prediction
"""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import unittest
from concurrent.futures import ThreadPoolExecutor

LLMCAPD = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else "llmcapd"
TABLE = "--table" in sys.argv
if TABLE:
    sys.argv.remove("--table")
MEASURED = "--measured" in sys.argv
if MEASURED:
    sys.argv.remove("--measured")
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


def predict(point, command="predict", results_cache=None):
    """Runs the point's plan with `llmcapd predict` (or `run`: command); returns (figure, GPU
    profile name). results_cache: plan → results, so points that read two figures of one plan
    (R* and T*) measure it once."""
    plan = plan_for(point)
    key = json.dumps(dict(plan, name=""), sort_keys=True)
    results = results_cache.get(key) if results_cache is not None else None
    if results is None:
        path = os.path.join(SCRATCH.name, f"{point['id']}.{command}.json")
        out = os.path.join(SCRATCH.name, f"{point['id']}.{command}.results.json")
        with open(path, "w") as f:
            json.dump(plan, f)
        r = subprocess.run([LLMCAPD, command, path, "--out", out, "--quiet"], capture_output=True,
                           text=True, timeout=120 if command == "predict" else 1200,
                           cwd=SCRATCH.name)
        # A measured run may read inconclusive (4) or fail (1) where the client or the host
        # fell behind: the figure is still printed, with the run's own words beside it.
        if r.returncode != 0 and (command == "predict" or r.returncode not in (1, 4)):
            raise RuntimeError(f"{point['id']}: llmcapd {command} exited {r.returncode}: "
                               f"{r.stderr}")
        if r.returncode != 0:
            print(f"{point['id']}: llmcapd run exited {r.returncode}:\n{r.stdout}",
                  file=sys.stderr)
        with open(out) as f:
            results = json.load(f)
        if results_cache is not None:
            results_cache[key] = results
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
    elif metric == "engine_ttft_ms":
        value = engine_ttft_ms(steps[0], command)
        point.setdefault("_client_ttft_ms", {})[command] = stats[0]["ttft_ms"]["p50"]
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


TTFT_METRICS = ("ttft_p50_ms", "engine_ttft_ms")


def engine_ttft_ms(step, command):
    """The first-token time inside the server, for published figures an in-process benchmark
    measured (no HTTP server): a measured run reads the target's own histogram as `llmcapd run`
    scraped it (exact mean over the step); virtual time has no transport, so there the client's
    mean is the engine's."""
    if command == "predict":
        return step["stats"]["ttft_ms"]["mean"]
    telemetry = step.get("telemetry") or {}
    mean_s = telemetry.get("server_ttft_mean_s")
    if mean_s is None or telemetry.get("server_ttft_count") != step["stats"]["ttft_ms"]["count"]:
        raise RuntimeError(f"no server-side first-token time for every request of the step: "
                           f"{telemetry}")
    return 1000.0 * mean_s


def client_ttft_ms(point, command):
    """The client-side median first-token time of an engine_ttft_ms point's run (shown beside
    the engine's figure: what HTTP and the client add)."""
    return point.get("_client_ttft_ms", {}).get(command)


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


def measure_all():
    """Every point measured in real time (`llmcapd run`, one plan at a time) and predicted;
    LLMCAP_POINTS=F1,M1 (ids) measures only those."""
    with open(POINTS) as f:
        points = json.load(f)["points"]
    only = [i for i in os.environ.get("LLMCAP_POINTS", "").split(",") if i]
    points = [p for p in points if not only or p["id"] in only]
    cache, rows = {}, []
    for point in points:
        started = time.monotonic()
        value, gpu = predict(point, "run", cache)
        predicted, _ = predict(point)
        print(f"{point['id']}: measured {value:.4g}, predicted {predicted:.4g} "
              f"({time.monotonic() - started:.0f} s)", file=sys.stderr, flush=True)
        rows.append({"point": point, "measured": value, "predicted": predicted,
                     "error": (value - point["published"]) / point["published"], "gpu": gpu})
    return rows


def measured_table(rows):
    out = ["| point | what | published | measured (`llmcapd run`) | error | predicted | "
           "measured vs predicted |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        p = r["point"]
        out.append(f"| {p['id']} | {p['what']} | {fmt(p['published'])} {p['unit']} | "
                   f"{fmt(r['measured'])} | {r['error']:+.1%} | {fmt(r['predicted'])} | "
                   f"{r['measured'] / r['predicted'] - 1:+.1%} |")
    errs = [abs(r["error"]) for r in rows]
    ttft = [abs(r["error"]) for r in rows if r["point"]["metric"] in TTFT_METRICS]
    apart = [abs(r["measured"] / r["predicted"] - 1) for r in rows]
    client = [f"{r['point']['id']} {fmt(client_ttft_ms(r['point'], 'run'))}"
              for r in rows if client_ttft_ms(r["point"], "run") is not None]
    out.append("")
    if client:
        out.append("engine_ttft_ms points, the client's median TTFT of the same runs (ms): " +
                   ", ".join(client))
    out.append(f"measured: median |error| all {len(errs)} points {statistics.median(errs):.1%}, "
               f"TTFT {statistics.median(ttft):.1%} ({len(ttft)}); measured vs predicted: median "
               f"{statistics.median(apart):.2%}, largest {max(apart):.2%}; GPUs: "
               f"{', '.join(sorted({r['gpu'] for r in rows}))}")
    return "\n".join(out)


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
    ttft = [abs(r["error"]) for r in rows if r["point"]["metric"] in TTFT_METRICS]
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
        ttft = [abs(r["error"]) for r in rows if r["point"]["metric"] in TTFT_METRICS]
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
    if MEASURED:
        print(measured_table(measure_all()))
    elif TABLE:
        print(table(run_all()))
    else:
        unittest.main()

#!/usr/bin/env python3
"""`llmcapd sim calibrate` (issue 19): fit a simulator profile to a measured job, then predict
loads that were not measured. The "box" is the embedded simulator with a hidden profile (other
bandwidth and compute fractions and per-step cost than the built-in A100 profile), so the truth is
known: the calibrated profile must reproduce the measured steps within 5 % and predict other
concurrencies, an open-loop rate and another seed within 5 % of the truth.

Calibrated.test_from_a_prediction (integration): the measurement is `llmcapd predict` of the box.
Calibrated.test_from_a_measured_run (timing): the measurement is `llmcapd run` in real time
(sockets, timers) against the box at sim.time_scale 10."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

LLMCAPD = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else "llmcapd"
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRATCH = tempfile.TemporaryDirectory(prefix="llmcap-calibrate-test-")


def path(name):
    return os.path.join(SCRATCH.name, name)


def write(name, doc):
    with open(path(name), "w") as f:
        json.dump(doc, f)
    return path(name)


def load(name):
    with open(path(name)) as f:
        return json.load(f)


def llmcapd(*args, timeout=300):
    r = subprocess.run([LLMCAPD, *args], capture_output=True, text=True, timeout=timeout,
                       cwd=SCRATCH.name)
    return r


def truth_profile():
    with open(os.path.join(REPO, "sim", "profiles", "hardware.json")) as f:
        hw = {h["name"]: h for h in json.load(f)["hardware"]}
    box = dict(hw["a100-80g-pcie"])
    box.update(bandwidth_efficiency=0.62, compute_efficiency=0.5, step_overhead_ms=4.5)
    return write("truth.json", {"hardware": [box]})


def plan(base_url, seed, levels, rates, time_scale=None, duration_s=30, warmup_s=10):
    target = {"name": "box", "base_url": base_url}
    if time_scale:
        target["sim"] = {"time_scale": time_scale}
    phases = [{"kind": "concurrency_sweep", "levels": levels, "duration_s": duration_s,
               "warmup_s": warmup_s}]
    if rates:
        phases.append({"kind": "rate_sweep", "rates_rps": rates, "duration_s": duration_s,
                       "warmup_s": warmup_s})
    return {"version": 1, "name": "calibrate-me", "seed": seed, "targets": [target],
            "workload": {"input_tokens": {"fixed": 1024}, "output_tokens": {"fixed": 128}},
            "sla": {"ttft_ms": {"p95": 5000}, "tpot_ms": {"p95": 200}, "min_requests": 5},
            "phases": phases}


def figures(doc, ttft=True):
    """The figures calibration fits (server/engine/sim_calibration.h): mean TPOT, closed-loop
    output tok/s, and median TTFT where it measures the box (c=1 or open loop)."""
    out = {}
    for p in doc["targets"][0]["phases"]:
        for s in p["steps"]:
            # A level whose window held fewer than 5 request lifetimes runs again over a longer
            # one (docs/metrics.md §4.1): a threshold two close twins can fall either side of.
            # The step at the planned window is in both documents; the second run is left out.
            if s["params"].get("judged_again_for_trend"):
                continue
            st = s["stats"]
            f = {"tpot mean": st["tpot_ms"]["mean"]}
            closed = "concurrency" in s["params"]
            if closed:
                f["out tok/s"] = st["output_tokens_per_s"]
            if ttft and (not closed or s["params"]["concurrency"] == 1):
                f["ttft p50"] = st["ttft_ms"]["p50"]
            out[s["label"]] = f
    return out


def host_ttft_allowance_ms(doc):
    """What a busy host can add to a real-time step's TTFT P50, in plan milliseconds, measured in
    the same run: a timer's lateness at P99 (`client.timer_lag_p99_ms`, wall clock, from the
    open-loop step's arrival timers) × the step's time_scale. The simulated GPU's step timers
    share the host with the client's, and a first token waits on several of them. Beside
    `make -j2` the 3 rps step's TTFT P50 read 150-158 ms against 136-139 ms on a quiet host,
    and its timer lag P99 was 3.8-3.9 ms (×4 = 15.5 ms); quiet it was 1.4-3.5 ms."""
    steps = [s for p in doc["targets"][0]["phases"] for s in p["steps"]]
    lag = max(((s.get("client") or {}).get("timer_lag_p99_ms") or 0.0 for s in steps),
              default=0.0)
    return {s["label"]: lag * (s.get("time_scale") or 1.0) for s in steps}


class Calibrated(unittest.TestCase):
    def check_close(self, got, want, bound, what, ttft_allowance_ms=None):
        """|got − want| < bound × want, plus for TTFT P50 the host's own delay measured in the
        step (ttft_allowance_ms by label; none for virtual-time measurements)."""
        self.assertEqual(sorted(got), sorted(want), what)
        lines = []
        for label in sorted(want):
            for key, m in want[label].items():
                err = (got[label][key] - m) / m
                allow = (ttft_allowance_ms or {}).get(label, 0.0) if key == "ttft p50" else 0.0
                limit = bound + allow / m
                lines.append(f"{what} {label} {key}: {got[label][key]:.2f} vs {m:.2f} ({err:+.1%}, "
                             f"bound {limit:.1%}" + (f" = {bound:.0%} + host {allow:.2f} ms)"
                                                     if allow else ")"))
                self.assertLess(abs(err), limit, lines[-1])
        print("\n".join(lines), file=sys.stderr)

    def calibrate_and_check(self, measured_name, levels, rates, duration_s=30, warmup_s=10,
                            predicted_ttft=True, real_time=False):
        r = llmcapd("sim", "calibrate", path(measured_name), "--out", "cal.json")
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        self.assertIn("median |error|", r.stdout)
        cal = load("cal.json")
        entry = cal["hardware"][0]
        self.assertEqual(entry["name"], "a100-80g-pcie-calibrated")
        # The fit reproduces the measured job...
        replay = plan("sim://a100-80g-pcie-calibrated/llama-3.1-8b", 7, levels, rates,
                      duration_s=duration_s, warmup_s=warmup_s)
        r = llmcapd("predict", write("replay.json", replay), "--profiles-file", path("cal.json"),
                    "--out", "replayed.json")
        self.assertIn(r.returncode, (0, 4), r.stderr)
        measured = load(measured_name)
        self.check_close(figures(load("replayed.json")), figures(measured), 0.05, "reproduced",
                         host_ttft_allowance_ms(measured) if real_time else None)
        # ... and predicts loads it never saw: other levels, a rate, another seed.
        other = plan("sim://a100-80g-pcie-calibrated/llama-3.1-8b", 99, [2, 8, 32], [3.5])
        truth = plan("sim://a100-80g-pcie/llama-3.1-8b", 99, [2, 8, 32], [3.5])
        r1 = llmcapd("predict", write("other.json", other), "--profiles-file", path("cal.json"),
                     "--out", "other_cal.json")
        r2 = llmcapd("predict", write("truth_plan.json", truth), "--profiles-file",
                     path("truth.json"), "--out", "other_truth.json")
        self.assertIn(r1.returncode, (0, 4), r1.stderr)
        self.assertIn(r2.returncode, (0, 4), r2.stderr)
        self.check_close(figures(load("other_cal.json"), predicted_ttft),
                         figures(load("other_truth.json"), predicted_ttft), 0.05, "predicted")

    def test_from_a_prediction(self):
        truth_profile()
        # 15 s steps: the fit replays every measured step at each of its evaluations, so the
        # steps' length is the fit's cost (31 s under ASan with 30 s steps).
        measured = plan("sim://a100-80g-pcie/llama-3.1-8b", 7, [1, 4, 16, 48], [2, 5],
                        duration_s=15, warmup_s=5)
        r = llmcapd("predict", write("plan.json", measured), "--profiles-file", path("truth.json"),
                    "--out", "measured.json")
        self.assertIn(r.returncode, (0, 4), r.stderr)
        self.calibrate_and_check("measured.json", [1, 4, 16, 48], [2, 5], duration_s=15,
                                 warmup_s=5)

    def test_from_a_measured_run(self):
        # time_scale 4 as in the demo: every real millisecond of HTTP and timer overhead reads
        # as 4 ms of plan time, so larger scales would measure the client, not the box.
        truth_profile()
        measured = plan("sim://a100-80g-pcie/llama-3.1-8b", 7, [1, 8, 32], [3], time_scale=4,
                        duration_s=20, warmup_s=5)
        r = llmcapd("run", write("plan.json", measured), "--profiles-file", path("truth.json"),
                    "--out", "measured.json")
        self.assertIn(r.returncode, (0, 4), r.stderr)
        # The truth here is the box in virtual time, which a real-time measurement of it misses
        # by up to ~8 % on open-loop TTFT (HTTP and timers, ×4 at time_scale 4): other loads are
        # checked on throughput and TPOT, the measured job on every fitted figure, its TTFT
        # within 5 % plus what the host's timers lost in the same step (a busy host lengthened
        # the 3 rps TTFT P50 by 6.8 % once: docs/ci.md).
        self.calibrate_and_check("measured.json", [1, 8, 32], [3], duration_s=20, warmup_s=5,
                                 predicted_ttft=False, real_time=True)

    def test_bad_input_names_the_flag(self):
        r = llmcapd("sim", "calibrate", "--out", "x.json")
        self.assertEqual(r.returncode, 2)
        doc = write("real.json", {"plan_document": plan("http://127.0.0.1:9/", 1, [1], []),
                                  "targets": [{"name": "box", "base_url": "http://127.0.0.1:9/",
                                               "phases": []}]})
        r = llmcapd("sim", "calibrate", doc, "--out", "x.json")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--hardware and --model", r.stderr)
        r = llmcapd("sim", "calibrate", doc, "--out", "x.json", "--hardware", "tpu",
                    "--model", "llama-3.1-8b")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--hardware: no hardware profile named 'tpu'", r.stderr)
        r = llmcapd("sim", "calibrate", doc, "--out", "x.json", "--target", "nope")
        self.assertIn("--target: no target named 'nope'", r.stderr)


if __name__ == "__main__":
    unittest.main()

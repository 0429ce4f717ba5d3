#!/usr/bin/env python3
"""Prediction vs measurement (issue 20): how far `llmcapd predict` (virtual time) is from the same
plan measured by `llmcapd run` in real time against the embedded simulator (sockets, timers), on
each step's output tok/s and P95 TTFT/TPOT/E2E and on the qualified capacity. The figure depends
on how busy the host is (a client or simulator delayed by other processes reads late), so it is a
benchmark run on a quiet machine and recorded in bench/RESULTS.md ("Prediction in virtual time"),
not a CI test; tests/integration/predict_test.py (`predict_agreement_test`) checks what does not
depend on the host.

Usage: bench/predict_agreement.py build/release/server/llmcapd [--runs N]
Prints one line per figure and exits 1 when a figure is outside the issue's bounds (3 % on the
qualified capacity, 5 % on each step's figure) in a run the tool did not call client-bound. A
measured run with a client-bound step (the run says the host was too busy) is measured again, at
most 3 times."""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tests", "integration"))
from cli_scratch import CliScratch  # noqa: E402

MEASURE_ATTEMPTS = 3
FIGURES = ("output_tokens_per_s", "ttft_ms.p95", "tpot_ms.p95", "e2e_ms.p95")


def figure(stats, key):
    for k in key.split("."):
        stats = stats[k]
    return stats


def one_run(scratch):
    plan = scratch.write("agree.json", PLAN)
    p = scratch.run("predict", plan, "--out", "predicted.json")
    for attempt in range(1, MEASURE_ATTEMPTS + 1):
        m = scratch.run("run", plan, "--out", "measured.json")
        measured = scratch.load("measured.json")
        busy = [f"{s['label']}: {r['text']}" for s in steps_by_label(measured).values()
                if s.get("client_bound") for r in s["verdict"]["reasons"]
                if r.get("status") == "missed"]
        if not busy:
            break
        print(f"measured run {attempt} client-bound, not compared: {busy}", file=sys.stderr)
    else:
        print(f"the host kept the measured run client-bound {MEASURE_ATTEMPTS} times",
              file=sys.stderr)
        return None
    predicted = scratch.load("predicted.json")
    ps, ms = steps_by_label(predicted), steps_by_label(measured)
    worst, lines = 0.0, []
    if p.returncode != m.returncode:
        lines.append(f"exit status: predicted {p.returncode}, measured {m.returncode}")
        worst = float("inf")
    for label in sorted(ps):
        if ps[label]["verdict"]["outcome"] != ms[label]["verdict"]["outcome"]:
            lines.append(f"{label}: outcome predicted {ps[label]['verdict']['outcome']}, "
                         f"measured {ms[label]['verdict']['outcome']}")
            worst = float("inf")
        for key in FIGURES:
            x, y = figure(ps[label]["stats"], key), figure(ms[label]["stats"], key)
            err = (x - y) / y
            worst = max(worst, abs(err) / 0.05)
            lines.append(f"{label} {key}: predicted {x:.2f}, measured {y:.2f}, {err:+.1%}")
    qp = predicted["targets"][0]["qualified"]
    qm = measured["targets"][0]["qualified"]
    if (qp is None) != (qm is None):
        lines.append(f"qualified: predicted {qp}, measured {qm}")
        worst = float("inf")
    elif qp is not None:
        err = (qp["output_tokens_per_s"] - qm["output_tokens_per_s"]) / qm["output_tokens_per_s"]
        worst = max(worst, abs(err) / 0.03)
        lines.append(f"qualified output tok/s: {qp['output_tokens_per_s']:.1f} vs "
                     f"{qm['output_tokens_per_s']:.1f}, {err:+.1%}")
    print("\n".join(lines))
    return worst <= 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("llmcapd")
    ap.add_argument("--runs", type=int, default=1)
    args = ap.parse_args()
    # predict_test takes its llmcapd from argv[1] when imported: give it none.
    del sys.argv[1:]
    global PLAN, steps_by_label
    from predict_test import PLAN, steps_by_label
    ok = True
    for i in range(args.runs):
        print(f"== run {i + 1}/{args.runs}")
        within = one_run(CliScratch(os.path.abspath(args.llmcapd), "llmcap-predict-agree-"))
        print("within bounds" if within else "not within bounds or not measured")
        ok = ok and bool(within)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""llmcap's load generator against the floor client, as ratios (issue 36).

Runs, alternately and on the same traffic, llmcap's agent and bench_raw_floor (the least a
streaming HTTP client can do on this kernel: bench/raw_floor_bench.cc), and prints the medians
and their ratio:

- per 1-token request: bench_client_firehose's "agent CPU per 1-token request" against
  bench_raw_floor --scenario=requests "CPU per 1-token request" (16 keep-alive connections
  sending 1-token requests back to back to the forked firehose);
- per paced token event: bench_concurrency's agent thread (its utilisation × window ÷ token
  events) against bench_raw_floor --scenario=paced "CPU per token event", both on the raw paced
  server, --streams streams, one event per --interval-ms, spread phases.

Each run is its own process pair (client, forked server); alternating them spreads the machine's
drift over both. Targets (issue 36): requests ≤ 1.3×, paced events ≤ 1.3×.

Usage: bench/floor_ratio.py [--bench-dir build-bench/bench] [--pairs 3] [--seconds 3]
                            [--streams 256] [--interval-ms 25] [--tokens 40]
Exit 1 when a benchmark fails or prints nothing parsable; never on a ratio (this is a
measurement, recorded in bench/RESULTS.md, not a test).
"""

import argparse
import os
import re
import statistics
import subprocess
import sys


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=600)
    if r.returncode != 0:
        sys.exit("FAILED (rc %d): %s\n%s" % (r.returncode, " ".join(cmd), r.stdout[-2000:]))
    return r.stdout


def table_value(text, label):
    """The median column of a '| label | median | range | unit' row."""
    m = re.search(r"^\|\s*" + re.escape(label) + r"\s*\|\s*([0-9.]+)", text, re.M)
    if not m:
        sys.exit("no '%s' in:\n%s" % (label, text[-2000:]))
    return float(m.group(1))


def paced_agent_us_per_event(text, seconds):
    """bench_concurrency prints one row per run: ... | ok | ... | ITL gaps | ... | agent util |
    ...; CPU per event = util × window ÷ (ITL gaps + ok requests) (each request's first token is
    an event with no gap before it)."""
    header = next(line for line in text.splitlines() if line.startswith("| run |"))
    cols = [c.strip() for c in header.strip("|").split("|")]
    row = next(line for line in text.splitlines() if re.match(r"^\| 1 \|", line))
    vals = [c.strip() for c in row.strip("|").split("|")]
    v = dict(zip(cols, vals))
    events = float(v["ITL gaps"]) + float(v["ok"])
    return float(v["agent util"]) * seconds / events * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench-dir", default="build-bench/bench")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--streams", type=int, default=256)
    ap.add_argument("--interval-ms", type=int, default=25)
    ap.add_argument("--tokens", type=int, default=40)
    a = ap.parse_args()
    b = a.bench_dir
    for exe in ("bench_client_firehose", "bench_raw_floor", "bench_concurrency"):
        if not os.access(os.path.join(b, exe), os.X_OK):
            sys.exit("missing %s/%s (build the release preset's bench targets)" % (b, exe))
    secs = "--seconds=%g" % a.seconds
    paced = ["--streams=%d" % a.streams, "--interval-ms=%d" % a.interval_ms,
             "--tokens=%d" % a.tokens, "--server=raw", "--phases=spread"]
    req = {"llmcap": [], "floor": []}
    ev = {"llmcap": [], "floor": []}
    for _ in range(a.pairs):
        out = run([b + "/bench_client_firehose", secs, "--repeat=1"])
        req["llmcap"].append(table_value(out, "agent CPU per 1-token request"))
        out = run([b + "/bench_raw_floor", "--scenario=requests", secs, "--repeat=1"])
        req["floor"].append(table_value(out, "CPU per 1-token request"))
        out = run([b + "/bench_concurrency", secs] + paced)
        ev["llmcap"].append(paced_agent_us_per_event(out, a.seconds))
        out = run([b + "/bench_raw_floor", "--scenario=paced", secs, "--repeat=1"] + paced)
        ev["floor"].append(table_value(out, "CPU per token event"))

    print("| figure (µs of client CPU, median of %d) | llmcap | floor | ratio | target |" % a.pairs)
    print("|---|---|---|---|---|")
    for name, d in (("per 1-token request (16 keep-alive, firehose)", req),
                    ("per paced token event (%d streams, %d ms, raw server)" %
                     (a.streams, a.interval_ms), ev)):
        l, f = statistics.median(d["llmcap"]), statistics.median(d["floor"])
        print("| %s | %.2f | %.2f | %.2f× | ≤ 1.3× |" % (name, l, f, l / f))
    print("runs: llmcap requests %s, floor %s; llmcap events %s, floor %s" %
          tuple(" ".join("%.2f" % x for x in v)
                for v in (req["llmcap"], req["floor"], ev["llmcap"], ev["floor"])))


if __name__ == "__main__":
    main()

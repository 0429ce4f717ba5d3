#!/usr/bin/env python3
"""API latency under load (issue 10: "P99 <= 10 ms for status and results reads at 500
requests/s while a 1,000-stream job runs, with that job's schedule lag unchanged").

Method (one run):
- starts `llmcapd serve --port 0` on a fresh database in a temp dir; the job's target is the
  embedded simulator (sim://a100-80g-pcie/llama-3.1-8b, max_num_seqs 1024, in-process);
- submits one job of three identical closed-loop steps at concurrency 1,000 (1,000 streams
  held; input 64 / output 64 tokens; STEP_S s each after a 2 s warm-up);
- step 0 and step 2 run without API load; during step 1 an open-loop client sends
  `--rate` requests/s, alternating GET /v1/jobs/{id} (status) and GET /v1/jobs/{id}/results
  (results). Request i is due at t0 + i/rate; its latency is measured from that intended send
  time to the last byte of the response (coordinated-omission correct: a late client or a
  slow server both show up). A dispatcher thread hands each due request to a pool of 32
  worker threads with keep-alive connections; the client's own lateness (actual send −
  intended) and the service time (actual send → last byte) are reported separately so a slow
  client is visible;
- the client is `--client cpp` (default when found): bench/api_load_client.cc, run as a
  subprocess (`<build>/bench/bench_api_load_client` next to llmcapd's build directory, or
  `--client-binary`) and stopped with SIGTERM when step 1 is stored; or `--client python`, the
  same schedule in Python threads, kept for comparison. Under --rt the client runs at
  SCHED_FIFO 5, below the daemon, unless `--client-prio` puts the C++ one elsewhere;
- from the job's results: each step's agent schedule lag P99 (steps[].client.
  schedule_lag_p99_ms, docs/metrics.md §3.4: t_send − t_intended) and the step's achieved
  request rate.
Prints one line per run and a table of medians over --runs runs.

Usage: bench/api_under_load.py [--llmcapd build-bench/server/llmcapd] [--runs 3] [--rate 500]
                               [--streams 1000] [--step-s 10] [--rt]
                               [--client cpp|python] [--client-binary PATH] [--client-prio N]
Loopback only; every loop is bounded in count and time; the daemon is always killed at the end.
"""

import argparse
import http.client
import json
import os
import queue
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

LISTEN_RE = re.compile(r"listening on http://([0-9.]+):([0-9]+)")


def done_at_least(job, step):
    """True once step `step` (0-based) of the job is stored (last_completed_step may be 0)."""
    return job["last_completed_step"] is not None and job["last_completed_step"] >= step


def get(conn, path):
    conn.request("GET", path)
    r = conn.getresponse()
    body = r.read()
    return r.status, body


class Daemon:
    def __init__(self, binary, rt=False):
        self.tmp = tempfile.mkdtemp(prefix="llmcap-api-bench-")
        self.out = open(os.path.join(self.tmp, "out.txt"), "wb")
        prefix = ["chrt", "-f", "10"] if rt else []
        self.proc = subprocess.Popen(
            prefix + [binary, "serve", "--port", "0", "--database", os.path.join(self.tmp, "x.db"),
             "--log-level", "warn", "--max-concurrency", "4096", "--io-threads", "1"],
            stdout=self.out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        self.port = None
        while time.monotonic() < deadline and self.port is None:
            with open(self.out.name, errors="replace") as f:
                m = LISTEN_RE.search(f.read())
            if m:
                self.port = int(m.group(2))
            elif self.proc.poll() is not None:
                raise SystemExit("llmcapd exited: " + open(self.out.name).read()[-2000:])
            else:
                time.sleep(0.02)
        if self.port is None:
            self.stop()
            raise SystemExit("llmcapd did not start")

    def conn(self):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
        self.out.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def job_plan(streams, step_s):
    target = {"name": "a100", "base_url": "sim://a100-80g-pcie/llama-3.1-8b",
              "price_per_hour": 1.5, "sim": {"max_num_seqs": 1024}}
    phases = [{"kind": "concurrency_sweep", "name": "p%d" % i, "levels": [streams],
               "duration_s": step_s, "warmup_s": 2} for i in range(3)]
    return {"version": 1, "name": "api-under-load", "targets": [target],
            "workload": {"input_tokens": {"fixed": 64}, "output_tokens": {"fixed": 64}},
            "sla": {"ttft_ms": {"p95": 60000}, "tpot_ms": {"p95": 5000}, "min_requests": 10},
            "phases": phases}


def wait_for(conn, job_id, pred, timeout_s):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status, body = get(conn, "/v1/jobs/" + job_id)
        job = json.loads(body)
        if pred(job):
            return job
        if job["state"] in ("failed", "cancelled"):
            raise SystemExit("job ended %s: %s" % (job["state"], job.get("error")))
        time.sleep(0.05)
    raise SystemExit("job %s: condition not reached in %s s" % (job_id, timeout_s))


def open_loop(port, paths, rate, stop, max_s):
    """Sends paths[i % n] at t0 + i/rate until stop is set (or max_s); returns
    [(latency_from_intended_s, client_lateness_s, status, path_index)]."""
    work = queue.Queue()
    results = []
    lock = threading.Lock()

    def worker():
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        while True:
            item = work.get()
            if item is None:
                break
            intended, idx = item
            sent = time.monotonic()
            try:
                status, _ = get(c, paths[idx])
            except (OSError, http.client.HTTPException):
                status = -1
                c.close()
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            done = time.monotonic()
            with lock:
                results.append((done - intended, sent - intended, status, idx))
        c.close()

    workers = [threading.Thread(target=worker, daemon=True) for _ in range(32)]
    for w in workers:
        w.start()
    t0 = time.monotonic()
    i = 0
    while not stop.is_set() and time.monotonic() - t0 < max_s:
        due = t0 + i / rate
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        work.put((due, i % len(paths)))
        i += 1
    elapsed = time.monotonic() - t0
    for _ in workers:
        work.put(None)
    for w in workers:
        w.join(60)
    return results, i, elapsed


def cpp_open_loop(binary, prio, port, paths, rate, max_s, until):
    """Runs the C++ client (same schedule as open_loop) until `until()` returns or max_s; returns
    its JSON report. prio: None (inherits this script's scheduling) or a SCHED_FIFO priority."""
    cmd = ([] if prio is None else ["chrt", "-f", str(prio)]) + [
        binary, "--port", str(port), "--rate", repr(float(rate)), "--duration-s",
        repr(float(max_s)), "--paths", ",".join(paths), "--workers", "32"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL)
    try:
        until()
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)  # ends the schedule; it drains, then reports
        try:
            out, err = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate(timeout=30)
    lines = [l for l in out.decode(errors="replace").splitlines() if l.startswith("{")]
    if proc.returncode not in (0, 1) or not lines:
        raise SystemExit("%s exited %s: %s" % (binary, proc.returncode,
                                               err.decode(errors="replace")[-2000:]))
    return json.loads(lines[-1])


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


def num(v):
    return float("nan") if v is None else float(v)


def pct(values, p):
    """Linear interpolation between closest ranks (the project's percentile method)."""
    v = sorted(values)
    if not v:
        return float("nan")
    k = (len(v) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def one_run(args, n):
    load_before = loadavg()
    d = Daemon(args.llmcapd, args.rt)
    try:
        c = d.conn()
        c.request("POST", "/v1/jobs", body=json.dumps(job_plan(args.streams, args.step_s)),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        body = r.read()
        if r.status != 201:
            raise SystemExit("submit: %d %s" % (r.status, body[:500]))
        job_id = json.loads(body)["id"]
        timeout = 3 * (args.step_s + 2) + 120
        wait_for(c, job_id, lambda j: done_at_least(j, 0), timeout)
        # Step 1 starts right after step 0 is stored; skip its warm-up before loading the API.
        time.sleep(2.5)
        paths = ["/v1/jobs/" + job_id, "/v1/jobs/%s/results" % job_id]
        watch = d.conn()
        until_step1 = lambda: wait_for(watch, job_id, lambda j: done_at_least(j, 1), timeout)
        out = {}
        if args.client == "cpp":
            out["cpp"] = cpp_open_loop(args.client_binary, args.client_prio, d.port, paths,
                                       args.rate, args.step_s + 5, until_step1)
        else:
            stop = threading.Event()
            t = threading.Thread(target=lambda: out.update(
                zip(("results", "sent", "elapsed"), open_loop(d.port, paths, args.rate, stop,
                                                              args.step_s + 5))))
            t.start()
            try:
                until_step1()
            finally:
                stop.set()
                t.join(120)
        job = wait_for(c, job_id, lambda j: j["state"] == "succeeded", timeout)
        _, body = get(c, "/v1/jobs/%s/results" % job_id)
        res = json.loads(body)
    finally:
        d.stop()
    steps = sorted((s for t in res["targets"] for p in t["phases"] for s in p["steps"]),
                   key=lambda s: s["global_step"])
    lag = [s["client"]["schedule_lag_p99_ms"] for s in steps]
    rps = [s["stats"].get("requests_per_s") for s in steps]
    if "cpp" in out:
        j = out["cpp"]
        lat = j["latency_from_intended_ms"]
        row = {"sent": j["sent"], "achieved_rps": j["achieved_rate"], "errors": j["errors"],
               "p50": num(lat["p50"]), "p99": num(lat["p99"]),
               "status_p99": num(j["paths"][0]["latency_from_intended_ms"]["p99"]),
               "results_p99": num(j["paths"][1]["latency_from_intended_ms"]["p99"]),
               "client_late_p99": num(j["lateness_ms"]["p99"]),
               "service_p99": num(j["service_ms"]["p99"]), "client_cpu_s": j["cpu_s"]}
    else:
        rs = out["results"]
        ok = [x for x in rs if x[2] == 200]
        lat = {k: [x[0] * 1e3 for x in ok if x[3] == k] for k in (0, 1)}
        alll = [x[0] * 1e3 for x in ok]
        late = [x[1] * 1e3 for x in rs]
        service = [(x[0] - x[1]) * 1e3 for x in ok]  # actual send -> last byte
        row = {"sent": out["sent"], "achieved_rps": out["sent"] / out["elapsed"],
               "errors": len(rs) - len(ok), "p50": pct(alll, 50), "p99": pct(alll, 99),
               "status_p99": pct(lat[0], 99), "results_p99": pct(lat[1], 99),
               "client_late_p99": pct(late, 99), "service_p99": pct(service, 99)}
    row.update(lag=lag, step_rps=rps, load=(load_before, loadavg()))
    client = args.client if args.client_prio is None else "%s at FIFO %d" % (args.client,
                                                                             args.client_prio)
    if "client_cpu_s" in row:
        client += ", %.2f s CPU" % row["client_cpu_s"]
    print("run %d (%s client): %d reads at %.1f/s, %d errors; latency from intended send P50 "
          "%.2f ms, P99 %.2f ms (status %.2f, results %.2f); client lateness P99 %.2f ms; "
          "service (actual send to last byte) P99 %.2f ms; job schedule lag P99 "
          "quiet/loaded/quiet %.3f / %.3f / %.3f ms; step rps %s; load average before/after "
          "%s / %s" %
          (n, client, row["sent"], row["achieved_rps"], row["errors"], row["p50"],
           row["p99"], row["status_p99"], row["results_p99"], row["client_late_p99"],
           row["service_p99"], lag[0], lag[1], lag[2],
           ["%.1f" % x if x else "?" for x in rps], row["load"][0], row["load"][1]), flush=True)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--llmcapd", default="build-bench/server/llmcapd")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rate", type=float, default=500)
    ap.add_argument("--streams", type=int, default=1000)
    ap.add_argument("--step-s", type=float, default=10)
    ap.add_argument("--rt", action="store_true",
                    help="run llmcapd under chrt -f 10 (as run_all.sh runs macro benchmarks; its "
                         "API threads step down to 9 by themselves) and this client (the C++ "
                         "one inherits it) at SCHED_FIFO 5")
    ap.add_argument("--client", choices=("cpp", "python"),
                    help="open-loop reader: the C++ bench_api_load_client (default when found) "
                         "or this script's Python threads")
    ap.add_argument("--client-binary",
                    help="bench_api_load_client (default: <build>/bench/bench_api_load_client, "
                         "<build> being the directory above llmcapd's server/)")
    ap.add_argument("--client-prio", type=int,
                    help="run the C++ client at this SCHED_FIFO priority (default: it inherits "
                         "this script's, 5 under --rt); e.g. 11, above llmcapd's 10, to see the "
                         "daemon without the client's own starvation")
    args = ap.parse_args()
    if args.client_prio is not None and not 1 <= args.client_prio <= 99:
        raise SystemExit("api_under_load.py: --client-prio wants 1..99, not %d" % args.client_prio)
    if not os.access(args.llmcapd, os.X_OK):
        raise SystemExit("api_under_load.py: %s is not an executable" % args.llmcapd)
    if args.client_binary is None:
        build = os.path.dirname(os.path.dirname(os.path.abspath(args.llmcapd)))
        args.client_binary = os.path.join(build, "bench", "bench_api_load_client")
    found = os.access(args.client_binary, os.X_OK)
    if args.client is None:
        args.client = "cpp" if found else "python"
        if not found:
            print("note: %s not found; using the Python client" % args.client_binary)
    elif args.client == "cpp" and not found:
        raise SystemExit("api_under_load.py: %s is not an executable" % args.client_binary)
    if args.client_prio is not None and args.client != "cpp":
        raise SystemExit("api_under_load.py: --client-prio applies to the C++ client only")
    if args.rt:
        # The client too: SCHED_FIFO 5, below llmcapd's 10 (and its API threads' 9), above the
        # machine's compilers, so its own lateness does not swamp what it measures.
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(5))
        except OSError as e:
            print("note: client stays at normal priority: %s" % e)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, max(soft, 8192))
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))  # inherited by llmcapd
    rows = [one_run(args, n + 1) for n in range(args.runs)]
    med = statistics.median
    quiet = [min(r["lag"][0], r["lag"][2]) for r in rows]
    loaded = [r["lag"][1] for r in rows]

    def mr(key, fmt="%.2f"):  # median (min–max) over the runs
        v = [r[key] for r in rows]
        return (fmt + " (" + fmt + "–" + fmt + ")") % (med(v), min(v), max(v))

    client = args.client if args.client_prio is None else "%s at FIFO %d" % (args.client,
                                                                             args.client_prio)
    print("\n| metric (median of %d runs, %s client) | value | target |" % (len(rows), client))
    print("|---|---|---|")
    print("| API reads sent / achieved rate | %.0f / %s req/s | %g req/s |" %
          (med([r["sent"] for r in rows]), mr("achieved_rps", "%.1f"), args.rate))
    print("| API read errors | %d | 0 |" % max(r["errors"] for r in rows))
    print("| API latency P50 (from intended send) | %s ms | |" % mr("p50"))
    print("| API latency P99 (from intended send) | %s ms | <= 10 ms |" % mr("p99"))
    print("| status P99 / results P99 | %.2f / %.2f ms | |" %
          (med([r["status_p99"] for r in rows]), med([r["results_p99"] for r in rows])))
    print("| client lateness P99 (actual − intended send) | %s ms | |" % mr("client_late_p99"))
    print("| service time P99 (actual send → last byte) | %s ms | |" % mr("service_p99"))
    print("| job schedule lag P99, quiet steps (min of 0 and 2) | %.3f ms | |" % med(quiet))
    print("| job schedule lag P99, step under API load | %.3f ms | unchanged |" % med(loaded))
    print("| loaded − quiet | %+.3f ms | |" % med([b - a for a, b in zip(quiet, loaded)]))
    print("| load average before / after each run | %s | |" %
          ", ".join("%s / %s" % r["load"] for r in rows))


if __name__ == "__main__":
    main()

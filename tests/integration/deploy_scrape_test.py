#!/usr/bin/env python3
"""deploy_scrape_test: starts the real binaries on loopback (port 0) and reads their /metrics,
so the dashboard and alert rules are checked against what is actually exported, types included:
- `llmcapd sim`: every vllm:* family the dashboard uses must be in the exposition with the
  type the dashboard assumes (histograms used through _bucket), after one streamed request;
- `llmcapd serve` (once the command exists): every llmcap_* family of server/daemon_metrics.cc
  must be announced (# TYPE) with its declared type, the standard process_* families of
  server/process_metrics.cc from the start; /healthz and /readyz answer; a short open-loop job
  on a simulated target with time_scale 4 exports its live gauges under its job_id with the
  achieved rate in the plan's time (not 4x), a dropped-arrivals counter at 0, and no qualified
  rate (a rate sweep never qualifies); SIGTERM stops it with exit 0.

Usage: deploy_scrape_test.py <repository root> <path to llmcapd>. Standard library only."""
import json
import os
import re
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import deploy_promql as pq  # noqa: E402

ROOT = os.path.abspath(sys.argv[1])
LLMCAPD = os.path.abspath(sys.argv[2])
errors = []
LISTEN_RE = re.compile(r'(?:listening on |listen\w* )http://([\d.]+):(\d+)')


def start(args, env_extra=None):
    """Starts llmcapd with `args`; returns (process, port or None, output so far) once it
    prints its address (or exits, or 15 s pass). A thread drains the output meanwhile."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LLMCAP_")}
    env.update(env_extra or {})
    p = subprocess.Popen([LLMCAPD] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         env=env, text=True)
    lines = queue.Queue()

    def pump():
        for line in p.stdout:
            lines.put(line)
        lines.put(None)
    threading.Thread(target=pump, daemon=True).start()
    deadline = time.monotonic() + 15
    seen = ""
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=0.2)
        except queue.Empty:
            continue
        if line is None:
            p.wait()
            return p, None, seen
        seen += line
        m = LISTEN_RE.search(line)
        if m:
            return p, int(m.group(2)), seen
    p.kill()
    p.wait()
    return p, None, seen + "\n(no address printed within 15 s)"


def get(port, path, timeout=5):
    with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=timeout) as r:
        return r.status, r.read().decode()


def exposition_types(text):
    """{family: type} from the # TYPE lines, plus the sample names seen."""
    types = dict(re.findall(r'^# TYPE (\S+) (\w+)$', text, re.M))
    samples = set(re.findall(r'^([a-zA-Z_:][\w:]*)(?:\{| )', text, re.M))
    return types, samples


def stop(p, name, want_rc=0):
    p.send_signal(signal.SIGTERM)
    try:
        rc = p.wait(timeout=20)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        errors.append("%s did not stop within 20 s of SIGTERM" % name)
        return
    if rc != want_rc:
        errors.append("%s exited %d after SIGTERM, want %d" % (name, rc, want_rc))


def dashboard_names():
    with open(os.path.join(ROOT, "deploy/grafana/llmcap-dashboard.json"), encoding="utf-8") as f:
        dash = json.load(f)
    names = set()

    def walk(panels):
        for p in panels:
            for t in p.get("targets", []):
                names.update(pq.metric_names(t.get("expr", "")))
            walk(p.get("panels", []))
    walk(dash["panels"])
    return names


def check_sim():
    p, port, out = start(["sim", "--port", "0", "--time-scale", "50", "--log-level", "warn"])
    if port is None:
        errors.append("llmcapd sim did not start: " + out[-500:])
        return
    try:
        body = json.dumps({"prompt": "one two three", "max_tokens": 4, "stream": True,
                           "stream_options": {"include_usage": True}}).encode()
        req = urllib.request.Request("http://127.0.0.1:%d/v1/completions" % port, data=body,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            stream = r.read().decode()
        if "[DONE]" not in stream:
            errors.append("sim stream did not finish: %r" % stream[-200:])
        status, text = get(port, "/metrics")
        types, samples = exposition_types(text)
        used = {n for n in dashboard_names() if n.startswith("vllm:")}
        for n in sorted(used):
            if n not in samples:
                errors.append("dashboard uses %s; the live simulator does not export it" % n)
            base = re.sub(r'_(bucket|sum|count)$', '', n)
            if n.endswith("_bucket") and types.get(base) != "histogram":
                errors.append("%s: used as a histogram, exported as %r" % (n, types.get(base)))
            if n.endswith("_total") and types.get(n) not in ("counter", None):
                errors.append("%s: used with rate(), exported as %r" % (n, types.get(n)))
        gen = re.search(r'^vllm:generation_tokens_total\{[^}]*\} (\S+)', text, re.M)
        if not gen or float(gen.group(1)) < 4:
            errors.append("vllm:generation_tokens_total did not count the request's 4 tokens")
        print("sim: %d families exported, %d vllm names used by the dashboard checked"
              % (len(types), len(used)))
    finally:
        stop(p, "llmcapd sim")


def sample_value(text, series):
    """The value of `series` (name{labels} as exported), or None."""
    m = re.search(r'^%s (\S+)$' % re.escape(series), text, re.M)
    return float(m.group(1)) if m else None


def check_sim_job(port):
    """A 2-second (wall) open-loop step at 4 req/s of plan time on a target running 4x faster."""
    plan = {"version": 1,
            "targets": [{"name": "gpu", "base_url": "sim://a100-80g-pcie/llama-3.1-8b",
                         "sim": {"time_scale": 4}}],
            "workload": {"input_tokens": {"fixed": 64}, "output_tokens": {"fixed": 8}},
            "phases": [{"kind": "rate_sweep", "rates_rps": [4], "duration_s": 8,
                        "warmup_s": 0}]}
    req = urllib.request.Request("http://127.0.0.1:%d/v1/jobs" % port,
                                 data=json.dumps(plan).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        job = json.loads(r.read().decode())["id"]
    state = ""
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline:
        _, body = get(port, "/v1/jobs/" + job)
        state = json.loads(body)["state"]
        if state in ("succeeded", "failed", "cancelled"):
            break
        time.sleep(0.2)
    if state != "succeeded":
        errors.append("sim job %s ended %r" % (job, state))
        return
    # The finished job's live series stay for the grace period (60 s).
    _, text = get(port, "/metrics")
    live = '{job_id="%s",target="gpu"}' % job
    offered = sample_value(text, "llmcap_offered_requests_per_second" + live)
    achieved = sample_value(text, "llmcap_achieved_requests_per_second" + live)
    if offered != 4:
        errors.append("llmcap_offered_requests_per_second%s = %r, want 4" % (live, offered))
    # Wall-clock, the target received 16 req/s; in the plan's time (that of the latencies) 4.
    if achieved is None or not 2 <= achieved <= 6:
        errors.append("llmcap_achieved_requests_per_second%s = %r, want about 4 (the plan's "
                      "time, not the 4x compressed wall-clock rate)" % (live, achieved))
    step = sample_value(text, 'llmcap_current_step_index{job_id="%s",phase="rate_sweep",'
                              'target="gpu"}' % job)
    if step is None:
        errors.append("no llmcap_current_step_index series of job %s" % job)
    if sample_value(text, 'llmcap_dropped_arrivals_total{target="gpu"}') != 0:
        errors.append('llmcap_dropped_arrivals_total{target="gpu"} is not exported as 0')
    if re.search(r'^llmcap_qualified_capacity_requests_per_second\{', text, re.M):
        errors.append("a rate sweep qualifies nothing, yet a qualified rate is exported")
    # The target's verdict, what the SLA alert watches: a sweep whose step passed confirms
    # nothing, so inconclusive (-1), never a fail.
    verdict = sample_value(text, 'llmcap_target_verdict{job_id="%s",target="gpu"}' % job)
    if verdict != -1:
        errors.append('llmcap_target_verdict{job_id="%s",target="gpu"} = %r, want -1 '
                      '(inconclusive: a rate sweep qualifies nothing)' % (job, verdict))
    print("serve: sim job %s: offered %r, achieved %r req/s (plan time)" % (job, offered, achieved))


def check_serve():
    declared = pq.exported_metrics(os.path.join(ROOT, "server/daemon_metrics.cc"))
    process = pq.process_metrics(os.path.join(ROOT, "server/process_metrics.cc"))
    with tempfile.TemporaryDirectory() as tmp:
        p, port, out = start(["serve", "--port", "0", "--database",
                              os.path.join(tmp, "llmcap.db"), "--log-level", "warn"])
        if port is None:
            if p.returncode == 2 and re.search(r"unknown command|unknown flag", out):
                print("note: `llmcapd serve` does not exist in this build yet; only the "
                      "simulator was scraped (%s)" % out.strip().splitlines()[-1])
                return
            errors.append("llmcapd serve did not start (exit %s): %s" % (p.returncode, out[-800:]))
            return
        try:
            for path in ("/healthz", "/readyz"):
                try:
                    status, _ = get(port, path)
                    if status != 200:
                        errors.append("GET %s: %d" % (path, status))
                except Exception as e:  # noqa: BLE001 (report any failure)
                    errors.append("GET %s: %s" % (path, e))
            status, text = get(port, "/metrics")
            types, _ = exposition_types(text)
            # Families with label dimensions (target, phase, route) have no children and so
            # no TYPE line until something is recorded, as in every Prometheus client; those
            # that are announced must have the declared type.
            for name, kind in sorted(declared.items()):
                if name in types and types[name] != kind:
                    errors.append("live llmcapd /metrics: %s announced as %r, declared %s"
                                  % (name, types.get(name), kind))
            for n in ("llmcap_build_info", "llmcap_uptime_seconds", "llmcap_jobs",
                      "llmcap_job_queue_length", "llmcap_storage_write_queue_depth"):
                if not re.search(r'^%s(\{| )' % n, text, re.M):
                    errors.append("live llmcapd /metrics: no sample of %s at start-up" % n)
            if len(process) != 6:
                errors.append("parsed %d process_* families from server/process_metrics.cc"
                              % len(process))
            for name, kind in sorted(process.items()):
                if types.get(name) != kind:
                    errors.append("live llmcapd /metrics: %s announced as %r, want %s"
                                  % (name, types.get(name), kind))
            rss = sample_value(text, "process_resident_memory_bytes")
            if rss is None or rss < 1e6:
                errors.append("process_resident_memory_bytes = %r" % rss)
            check_sim_job(port)
            print("serve: %d llmcap families announced" % sum(
                1 for n in types if n.startswith("llmcap_")))
        finally:
            stop(p, "llmcapd serve")


if __name__ == "__main__":
    if not os.access(LLMCAPD, os.X_OK):
        print("FAIL: %s is not an executable" % LLMCAPD)
        sys.exit(1)
    check_sim()
    check_serve()
    for e in errors:
        print("FAIL: " + e)
    sys.exit(1 if errors else 0)

"""Scale-out (issue 11): 4 `llmcapd agent` processes on loopback as the shards of one job.

Starts the real `llmcapd serve` (embedded A100 simulator) and real `llmcapd agent` processes.
  - 4 agents vs one in-process agent, same total load and seed: counts exactly equal, the
    merged percentiles exactly those of the union of the shards' samples, every request
    intended when the single agent intended it and sent neither early nor an epoch late, each
    shard's clock estimate within half its round trip of 0; one agent uploads twice
    (idempotency: stored once);
    per-region latency and per-shard figures in the results;
  - an agent with a faked clock offset is refused, and the job fails naming the shard;
  - a missing agent: the job fails naming the missing shard;
  - an agent killed after registering: the step fails naming the shard whose result is missing.

Workload: an open-loop step with constant spacing (8 req/s) and fixed lengths, so the arrival
schedule, and with it the count of requests intended in the window, is deterministic: the 4
shards run at 2 req/s each, shard k offset by k/8 s (agent/shard_split.h), and together send
one request every 125 ms like the single agent. Window [0.55 s, 2.55 s) holds 16 arrivals
either way (no arrival within 50 ms of a boundary).

Usage: daemon_shards_test.py PATH/TO/llmcapd
"""

import json
import re
import os
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llmcapd_harness import Daemon, SIM_A100  # noqa: E402

BINARY = None
RATE_RPS = 8
WARMUP_S = 0.55
DURATION_S = 2
WINDOW_ARRIVALS = 16  # k/8 s in [0.55, 2.55): k = 5..20


def shard_plan(agents=None, name="shards"):
    p = {"version": 1, "name": name, "seed": 11,
         "targets": [{"name": "a100", "base_url": SIM_A100}],
         "workload": {"input_tokens": {"fixed": 128}, "output_tokens": {"fixed": 16}},
         "sla": {"ttft_ms": {"p95": 10000}, "min_requests": 3},
         "phases": [{"kind": "rate_sweep", "rates_rps": [RATE_RPS], "arrival": "constant",
                     "duration_s": DURATION_S, "warmup_s": WARMUP_S}]}
    if agents is not None:
        p["agents"] = agents
    return p


def percentile(values, p):
    """Type-7 (linear between closest ranks) percentile, as analysis/summary.h."""
    v = sorted(values)
    h = (len(v) - 1) * p / 100.0
    lo = int(h)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (h - lo) * (v[hi] - v[lo])


def first_step(results):
    return results["targets"][0]["phases"][0]["steps"][0]


class Agent:
    """One `llmcapd agent` process; output in a file."""

    def __init__(self, daemon, job_id, shard, tmp, extra=(), env=None, shard_flag=True):
        self.path = os.path.join(tmp, "agent-%s-%d.log" % (job_id, shard))
        cmd = [BINARY, "agent", "--daemon", "http://127.0.0.1:%d" % daemon.port, "--job", job_id,
               "--register-timeout-s", "30"]
        if shard_flag:
            cmd += ["--shard", str(shard)]
        cmd += list(extra)
        full_env = dict(os.environ)
        full_env.update(env or {})
        with open(self.path, "wb") as out:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=full_env,
                                         start_new_session=True)

    def wait(self, timeout_s):
        try:
            return self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def log(self):
        with open(self.path, "r", errors="replace") as f:
            return f.read()


class ShardsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon(BINARY, log_level="info")
        cls.d.start()

    @classmethod
    def tearDownClass(cls):
        cls.d.cleanup()

    def setUp(self):
        self.agents = []

    def tearDown(self):
        for a in self.agents:
            a.kill()

    def start_agent(self, job_id, shard, **kw):
        a = Agent(self.d, job_id, shard, self.d.tmp.name, **kw)
        self.agents.append(a)
        return a

    def wait_done(self, job_id, timeout_s):
        return self.d.wait_job(job_id, lambda j: j["state"] in
                               ("succeeded", "failed", "cancelled", "interrupted"),
                               timeout_s, "an end state")

    def test_four_agents_equal_one_agent(self):
        d = self.d
        single_id = d.submit(shard_plan(name="single"))
        single = self.wait_done(single_id, 180)
        self.assertEqual(single["state"], "succeeded", single)
        # The clock limit is wide: on one host the true offset is 0 and the estimate is within
        # half the round trip of it, which a loaded machine can stretch past the default 5 ms
        # (checked below against each shard's own round trip instead).
        agents = {"count": 4, "launch": "manual", "regions": ["eu-west", "us-east"],
                  "start_delay_ms": 1500, "register_timeout_s": 120, "result_timeout_s": 120,
                  "max_clock_offset_ms": 1000}
        job_id = d.submit(shard_plan(agents, name="sharded"))
        # The shard index three ways: the flag, LLMCAP_SHARD_INDEX, JOB_COMPLETION_INDEX.
        self.start_agent(job_id, 0)
        self.start_agent(job_id, 1, shard_flag=False, env={"LLMCAP_SHARD_INDEX": "1"})
        self.start_agent(job_id, 2, shard_flag=False, env={"JOB_COMPLETION_INDEX": "2"})
        dup = self.start_agent(job_id, 3, extra=["--test-upload-twice"])
        job = self.wait_done(job_id, 240)
        self.assertEqual(job["state"], "succeeded", (job, [a.log() for a in self.agents]))
        for a in self.agents:
            self.assertEqual(a.wait(60), 0, a.log())
            self.assertIn("registered", a.log())
            self.assertIn("job done", a.log())
        self.assertIn('"duplicate":true', dup.log())

        one = first_step(d.get_json("/v1/jobs/%s/results" % single_id))
        four = first_step(d.get_json("/v1/jobs/%s/results" % job_id))
        c1, c4 = one["stats"]["counts"], four["stats"]["counts"]
        # Counts exactly equal (the duplicate upload was stored once, else 4 would be larger).
        self.assertEqual(c1["intended"], WINDOW_ARRIVALS, c1)
        for k in ("intended", "sent", "completed_ok", "failed", "timed_out", "dropped_arrivals"):
            self.assertEqual(c4[k], c1[k], (k, c1, c4))
        self.assertAlmostEqual(four["stats"]["offered_rate_rps"], one["stats"]["offered_rate_rps"],
                               places=3)
        # Exactness of the merge, end to end: the merged step's percentiles are those of the
        # union of the shards' stored samples (type-7 percentiles over ok requests intended
        # in the window, docs/metrics.md §3), as a single agent would have computed them.
        samples = self.samples(job_id)
        self.assertEqual(len(samples), 17)
        self.assertEqual(sorted(x["index"] for x in samples), list(range(17)))
        in_window = [x for x in samples if x["error"] == "none" and
                     WARMUP_S * 1e9 <= x["t_intended_ns"] < (WARMUP_S + DURATION_S) * 1e9]
        self.assertEqual(len(in_window), c4["completed_ok"])
        for metric in ("e2e_ms", "ttft_ms", "tpot_ms"):
            values = [x[metric] for x in in_window]
            for p, q in (("p50", 50), ("p95", 95)):
                self.assertAlmostEqual(four["stats"][metric][p], percentile(values, q), delta=1e-3,
                                       msg=(metric, p))
        # One agent vs four, what sharding must not distort and host load cannot change: every
        # sharded request was intended at the instant the single agent intended the same request
        # (the shards' phase offsets interleave one schedule; a lost offset would send four at
        # once, a wrong epoch would shift them all by the 1.5 s start delay).
        single = sorted(x["t_intended_ns"] for x in self.samples(single_id))
        for x in samples:
            nearest = min(single, key=lambda t: abs(t - x["t_intended_ns"]))
            self.assertLessEqual(abs(x["t_intended_ns"] - nearest), 1e6, (x, single))
        self.assertEqual(len({x["t_intended_ns"] // 1000000 for x in samples}), len(samples))
        # The latencies are real requests to a real-time simulator on a shared machine (seen:
        # TTFT P95 146 vs 40 ms of 16 requests while the rest of the suite ran), so they are not
        # compared between the runs. What a sharding defect would do to them: a shifted epoch
        # sends (or measures) every request 1.5 s (the start delay) off its intended time. A
        # request is never sent before its intended time, and an agent that keeps up sends at
        # least one of its requests on time; a starved agent catches up by sending at once.
        for k, xs in (("single", self.samples(single_id)), ("sharded", samples)):
            lags_ms = [(x["t_send_ns"] - x["t_intended_ns"]) / 1e6 for x in xs]
            self.assertGreaterEqual(min(lags_ms), 0.0, (k, lags_ms))
            self.assertLess(min(lags_ms), 1000.0, (k, lags_ms))
        # Per-shard and per-region figures.
        shards = four["agents"]["shards"]
        self.assertEqual([s["shard"] for s in shards], [0, 1, 2, 3])
        self.assertEqual([s["region"] for s in shards], ["eu-west", "us-east"] * 2)
        # Samples include the warm-up: arrivals before 2.55 s, 20 for one agent less the 3 the
        # shard phases skip (agent/shard_split.h).
        self.assertEqual(sum(s["samples"] for s in shards), 17)
        for s in shards:
            # One host: the true offset is 0, the estimate within half its round trip.
            self.assertLessEqual(abs(s["clock_offset_ms"]), s["clock_rtt_ms"] / 2 + 0.5, s)
        regions = four["regions"]
        self.assertEqual(sorted(regions), ["eu-west", "us-east"])
        self.assertEqual(sum(r["requests"] for r in regions.values()), c4["completed_ok"])
        for r in regions.values():
            self.assertGreater(r["e2e_ms"]["p50"], 0)
        self.assertNotIn("agents", one)

    def samples(self, job_id):
        r = self.d.request("GET", "/v1/jobs/%s/requests?limit=10000" % job_id)
        self.assertEqual(r.status, 200, r)
        return [json.loads(line) for line in r.text.splitlines() if line.strip()]

    def test_clock_offset_is_refused(self):
        d = self.d
        # 250 ms injected against a 100 ms limit: refused however loaded the machine (the
        # default 5 ms could refuse the honest agent too when a busy host stretches its round
        # trip).
        agents = {"count": 2, "launch": "manual", "max_clock_offset_ms": 100,
                  "register_timeout_s": 60, "result_timeout_s": 30}
        job_id = d.submit(shard_plan(agents, name="offset"))
        ok = self.start_agent(job_id, 0)
        bad = self.start_agent(job_id, 1, extra=["--test-clock-offset-ms", "250"])
        self.assertEqual(bad.wait(60), 3, bad.log())
        self.assertIn("shard 1 rejected", bad.log())
        self.assertIn("max_clock_offset_ms", bad.log())
        job = self.wait_done(job_id, 120)
        self.assertEqual(job["state"], "failed", job)
        # −250 ms injected; the estimate is within half the round trip of it (−249 under ASan).
        # (Numbers as "%.3g" prints them: 1.23e+03 for a round trip over a second.)
        m = re.search(r"shard 1 rejected: its clock is (-?[\d.]+(?:e[-+]\d+)?) ms off the "
                      r"daemon's \(round trip ([\d.]+(?:e[-+]\d+)?) ms\)", job["error"])
        self.assertIsNotNone(m, job["error"])
        self.assertLessEqual(abs(float(m.group(1)) + 250), float(m.group(2)) / 2 + 1, job["error"])
        self.assertEqual(ok.wait(60), 0, ok.log())  # told "done"

    def test_missing_agent_fails_the_step_naming_it(self):
        d = self.d
        # The present agent must register within register_timeout_s, however slowly a loaded
        # machine starts it (a late one would be named missing too).
        agents = {"count": 2, "launch": "manual", "register_timeout_s": 10,
                  "result_timeout_s": 30}
        job_id = d.submit(shard_plan(agents, name="missing"))
        present = self.start_agent(job_id, 0)
        job = self.wait_done(job_id, 120)
        self.assertEqual(job["state"], "failed", job)
        self.assertIn("missing shard(s) 1 of 2", job["error"])
        self.assertEqual(present.wait(60), 0, present.log())

    def test_agent_killed_mid_step_fails_naming_its_shard(self):
        d = self.d
        # The survivor's result must arrive within result_timeout_s of the step's end, however
        # loaded the machine (a late one would be named too).
        agents = {"count": 2, "launch": "manual", "register_timeout_s": 60,
                  "result_timeout_s": 10, "start_delay_ms": 500}
        job_id = d.submit(shard_plan(agents, name="killed"))
        self.start_agent(job_id, 0)
        victim = self.start_agent(job_id, 1)
        deadline = time.monotonic() + 60
        while "registered" not in victim.log() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertIn("registered", victim.log())
        victim.kill()
        job = self.wait_done(job_id, 120)
        self.assertEqual(job["state"], "failed", job)
        self.assertIn("no result from shard(s) 1 of 2", job["error"])

    def test_bad_shard_routes(self):
        d = self.d
        r = d.request("POST", "/v1/jobs/nosuchjob/shards/0/register",
                      {"clock_offset_ms": 0, "rtt_ms": 0})
        self.assertEqual(r.status, 404, r)
        self.assertIn("no agent fleet", r.json()["detail"])
        r = d.request("GET", "/v1/jobs/x/shards/abc/assignment")
        self.assertEqual(r.status, 400, r)
        # An agent for a job that never gets a fleet gives up with a clear message.
        a = self.start_agent("nosuchjob", 0, extra=["--register-timeout-s", "1"])
        self.assertEqual(a.wait(20), 3, a.log())
        self.assertIn("could not register", a.log())
        r = subprocess.run([BINARY, "agent", "--job", "j"], capture_output=True, text=True,
                           timeout=10)
        self.assertEqual(r.returncode, 2, r)
        self.assertIn("--daemon", r.stderr)


if __name__ == "__main__":
    if len(sys.argv) < 2 or not os.access(sys.argv[1], os.X_OK):
        sys.exit("usage: daemon_shards_test.py PATH/TO/llmcapd [unittest args]")
    BINARY = os.path.abspath(sys.argv[1])
    unittest.main(argv=[sys.argv[0]] + sys.argv[2:], verbosity=2)

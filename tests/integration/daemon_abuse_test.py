#!/usr/bin/env python3
"""Slow and abusive API clients against the real `llmcapd serve` binary (issue 9).

Usage: daemon_abuse_test.py PATH/TO/llmcapd [unittest args]

LimitsTest (no job): with --read-timeout-ms 1000 --max-connections 32 --max-body-bytes 65536
- slowloris: request headers trickled one byte per 100 ms are cut at the read deadline (the
  connection closes about 1 s after the first byte, never answered), and so is a trickled body;
- idle connections: 32 silent connections fill the cap, the 33rd is answered 503 at once for an
  API route but 200 for /healthz and /metrics (the reserve for probes and scrapes), the silent
  ones are closed at the read deadline and the API serves again;
- keep-alive slowloris: after a first request is answered, a second one trickled one byte per
  100 ms is cut at the read deadline from its first byte, not at the keep-alive timeout;
- header and body limits: a 20 KiB header and 2,000 small headers get 431, a declared or a
  chunked body over the limit gets 413, a malformed request line gets 400;
- a request flood (8 keep-alive clients, 2,000 requests) is answered in full, 200 each.

MeasurementTest: one job of three identical open-loop steps (rate 40 rps, 3 s each) on the
embedded simulator; steps 0 and 2 run undisturbed, step 1 runs while 24 idle connections, 4
slowloris clients and 4 flooding client processes (GET job/results/requests/metrics in a loop,
≈ 700 req/s here) hit the
API. The agent's own schedule lag P99 of step 1 (results: steps[].client.schedule_lag_p99_ms,
docs/metrics.md §1.1: t_send − t_intended) must stay within 1 ms of the undisturbed steps
before and after it (which bracket the machine's own noise) — 1 ms being issue 10's bound on
open-loop schedule lag P99, so a disturbance the test lets through is one llmcap's own
accuracy target allows — and no step may be client-bound (the verdict's own test of a
disturbed load generator). The
daemon runs under `chrt -f 10` where permitted (see realtime_wrapper). Loopback only; ~30 s.
"""

import http.client
import multiprocessing
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llmcapd_harness import Daemon, plan  # noqa: E402

BINARY = None
READ_TIMEOUT_MS = 1000


def done_at_least(job, step):
    """True once step `step` (0-based) of the job is stored (last_completed_step may be 0)."""
    return job["last_completed_step"] is not None and job["last_completed_step"] >= step


def raw_connect(port, timeout_s=10):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout_s)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_all(s, timeout_s=10):
    """Everything the server sends until it closes (or the timeout passes)."""
    s.settimeout(timeout_s)
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except (ConnectionResetError, socket.timeout):
        pass
    return data


def trickle(port, payload, interval_s, stop, result):
    """Sends payload one byte at a time; records when (after the first byte) the server closed
    the connection and what it answered."""
    s = raw_connect(port)
    first = time.monotonic()
    answer = b""
    try:
        for i in range(len(payload)):
            if stop.is_set():
                break
            try:
                s.sendall(payload[i:i + 1])
            except (BrokenPipeError, ConnectionResetError):
                break
            s.settimeout(interval_s)
            try:
                chunk = s.recv(65536)
                if not chunk:
                    break
                answer += chunk
            except socket.timeout:
                pass
            except ConnectionResetError:
                break
        result.append((time.monotonic() - first, answer))
    finally:
        s.close()


def flood(port, paths, count, stop, statuses):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        for i in range(count):
            if stop is not None and stop.is_set():
                break
            try:
                conn.request("GET", paths[i % len(paths)])
                r = conn.getresponse()
                r.read()
                statuses.append(r.status)
            except (http.client.HTTPException, OSError):
                statuses.append(-1)
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    finally:
        conn.close()


def flood_process(port, paths, stop, out):
    statuses = []
    flood(port, paths, 10 ** 6, stop, statuses)
    out.put(statuses)


SLOW_HEADERS = (b"GET /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
                b"".join(b"X-Slow-%d: %s\r\n" % (i, b"a" * 20) for i in range(40)) + b"\r\n")


class LimitsTest(unittest.TestCase):
    def setUp(self):
        # Eviction of slow requests off: these cases hold the cap and the read deadlines on their
        # own (IsolationTest covers eviction), whatever the machine's speed makes of the ages.
        self.d = Daemon(BINARY, args=["--read-timeout-ms", str(READ_TIMEOUT_MS),
                                      "--max-connections", "32", "--max-body-bytes", "65536",
                                      "--shutdown-grace-s", "2", "--slow-request-evict-ms", "0"],
                        log_level="warn")
        self.addCleanup(self.d.cleanup)
        self.d.start()

    def test_slowloris_headers_and_body_cut_at_read_deadline(self):
        d = self.d
        stop = threading.Event()
        self.addCleanup(stop.set)
        headers, body = [], []
        post = (b"POST /v1/plans:validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json"
                b"\r\nContent-Length: 4000\r\n\r\n" + b" " * 4000)
        threads = [threading.Thread(target=trickle, args=(d.port, SLOW_HEADERS, 0.1, stop,
                                                          headers)) for _ in range(3)]
        threads.append(threading.Thread(target=trickle, args=(d.port, post, 0.01, stop, body)))
        for t in threads:
            t.start()
        # Meanwhile the API answers others at once.
        time.sleep(0.3)
        started = time.monotonic()
        self.assertEqual(d.request("GET", "/v1/jobs", timeout_s=5).status, 200)
        self.assertLess(time.monotonic() - started, 1.0)
        for t in threads:
            t.join(15)
            self.assertFalse(t.is_alive(), "slow client never cut off")
        # The header trickle would take 40 headers × 26 bytes × 0.1 s ≈ 100 s; the body 40 s.
        for took, answer in headers + body:
            self.assertGreater(took, READ_TIMEOUT_MS / 1000 * 0.8, "closed before the deadline")
            self.assertLess(took, READ_TIMEOUT_MS / 1000 + 3, "read deadline not enforced")
            self.assertEqual(answer, b"", "a partial request was answered: %r" % answer[:200])
        self.assertTrue(d.running())

    def test_idle_connections_capped_then_reclaimed(self):
        d = self.d
        idle = [raw_connect(d.port) for _ in range(32)]
        self.addCleanup(lambda: [s.close() for s in idle])
        time.sleep(0.2)  # let the server accept them all
        started = time.monotonic()
        extra = raw_connect(d.port)
        extra.sendall(b"GET /v1/jobs HTTP/1.1\r\nHost: localhost\r\n\r\n")
        answer = read_all(extra, 5)
        extra.close()
        self.assertTrue(answer.startswith(b"HTTP/1.1 503"), answer[:200])
        self.assertIn(b"too many connections", answer)
        self.assertLess(time.monotonic() - started, 1.0, "over-cap connection not refused at once")
        # Probes and scrapes still get through on the reserved connections (issue 23 #7).
        for path in (b"/healthz", b"/metrics"):
            probe = raw_connect(d.port)
            probe.sendall(b"GET " + path + b" HTTP/1.1\r\nHost: localhost\r\n\r\n")
            answer = read_all(probe, 5)
            probe.close()
            self.assertTrue(answer.startswith(b"HTTP/1.1 200"), answer[:200])
        # The silent connections are closed at the read deadline (no byte of a first request).
        for s in idle:
            self.assertEqual(read_all(s, READ_TIMEOUT_MS / 1000 + 5), b"")
        self.assertLess(time.monotonic() - started, READ_TIMEOUT_MS / 1000 + 3)
        time.sleep(0.2)
        self.assertEqual(d.request("GET", "/healthz").status, 200)
        time.sleep(1.2)  # the refusal counters reach /metrics once a second
        self.assertRegex(d.request("GET", "/metrics").text,
                         r'llmcap_api_connections_refused_total\{reason="full"\} [1-9]')

    def test_keep_alive_slowloris_cut_at_read_deadline(self):
        d = self.d
        s = raw_connect(d.port)
        self.addCleanup(s.close)
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        first = b""
        while b"\r\n\r\n" not in first or not first.rstrip().endswith(b"}"):
            chunk = s.recv(4096)
            if not chunk:
                break
            first += chunk
        self.assertTrue(first.startswith(b"HTTP/1.1 200"), first[:200])
        # The second request trickles in on the same connection: cut READ_TIMEOUT_MS after its
        # first byte, not after the keep-alive timeout (60 s).
        started = time.monotonic()
        closed = False
        for byte in SLOW_HEADERS:
            try:
                s.sendall(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
            time.sleep(0.1)
            if time.monotonic() - started > READ_TIMEOUT_MS / 1000 + 5:
                break
        if not closed:
            closed = read_all(s, 5) == b""
        took = time.monotonic() - started
        self.assertTrue(closed, "a trickled second request was not cut")
        self.assertLess(took, READ_TIMEOUT_MS / 1000 + 3, "read deadline not enforced")

    def test_header_and_body_limits(self):
        d = self.d

        def send(raw):
            s = raw_connect(d.port)
            try:
                s.sendall(raw)
                return read_all(s, 5)
            except (BrokenPipeError, ConnectionResetError):
                return read_all(s, 5)
            finally:
                s.close()

        big_header = b"GET /v1/jobs HTTP/1.1\r\nHost: localhost\r\nX-Big: " + b"a" * 20480 + b"\r\n\r\n"
        self.assertTrue(send(big_header).startswith(b"HTTP/1.1 431"))
        many = (b"GET /v1/jobs HTTP/1.1\r\nHost: localhost\r\n" +
                b"".join(b"X-H%d: v\r\n" % i for i in range(2000)) + b"\r\n")
        self.assertTrue(send(many).startswith(b"HTTP/1.1 431"))
        declared = (b"POST /v1/jobs HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                    b"Content-Length: 10000000\r\n\r\n{")
        answer = send(declared)
        self.assertTrue(answer.startswith(b"HTTP/1.1 413"), answer[:200])
        chunk = b"%x\r\n%s\r\n" % (16384, b" " * 16384)
        chunked = (b"POST /v1/jobs HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                   b"Transfer-Encoding: chunked\r\n\r\n" + chunk * 5 + b"0\r\n\r\n")
        self.assertTrue(send(chunked).startswith(b"HTTP/1.1 413"))
        self.assertTrue(send(b"NONSENSE\r\n\r\n").startswith(b"HTTP/1.1 400"))
        # Nothing of those was stored, and the API is fine.
        self.assertEqual(d.get_json("/v1/jobs")["jobs"], [])

    def test_request_flood_answered(self):
        d = self.d
        statuses = []
        paths = ["/v1/jobs", "/healthz", "/v1/profiles", "/metrics", "/v1/jobs/job_nope"]
        threads = [threading.Thread(target=flood, args=(d.port, paths, 250, None, statuses))
                   for _ in range(8)]
        started = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join(600)
        took = time.monotonic() - started
        self.assertEqual(len(statuses), 2000)
        bad = [s for s in statuses if s not in (200, 404)]
        self.assertEqual(bad, [], "flood requests failed")
        self.assertEqual(statuses.count(404), 400)
        sys.stderr.write("flood: 2000 requests in %.1f s (%.0f/s)\n" % (took, 2000 / took))
        self.assertEqual(d.request("GET", "/healthz", timeout_s=5).status, 200)
        d.signal(signal.SIGTERM)
        self.assertEqual(d.wait(20), 0)


def thread_cpu_ticks(pid):
    """CPU time (user + system, clock ticks) of each named thread of pid, summed by name."""
    ticks = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                stat = f.read()
        except OSError:
            continue  # the thread ended
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        ticks[name] = ticks.get(name, 0) + int(fields[11]) + int(fields[12])
    return ticks


class IsolationTest(unittest.TestCase):
    """Issue 35 #1 and #2: blocking handlers run on the blocking pool, never on the I/O thread
    that answers /healthz; the API answers only the Host names it is meant to be reached by."""

    def test_validations_run_on_the_blocking_pool(self):
        # Two validations of a plan naming a large dataset: the daemon scans the file to check
        # it (seconds of CPU under ASan, a fraction of one in release). Which thread did that
        # work is read from the kernel's per-thread CPU time, so the verdict does not depend on
        # how fast or busy the machine is.
        dsdir = tempfile.mkdtemp(prefix="llmcap-isolation-")
        self.addCleanup(shutil.rmtree, dsdir, True)
        line = ('{"prompt": "%s", "max_tokens": 16}\n' % ("lorem ipsum dolor sit amet " * 8))
        with open(os.path.join(dsdir, "big.jsonl"), "w") as f:
            f.write(line * (12 * 1024 * 1024 // len(line)))
        d = Daemon(BINARY, args=["--dataset-dir", dsdir, "--max-dataset-mib", "64"],
                   log_level="warn")
        self.addCleanup(d.cleanup)
        d.start()
        doc = plan("isolation")
        doc["workload"] = {"dataset": {"path": "big.jsonl"}}
        before = thread_cpu_ticks(d.proc.pid)
        self.assertIn("llmcapd-io", before)
        self.assertIn("llmcapd-pool", before)
        statuses = []

        def validate():
            # 12 MiB: about 15 s of CPU per scan under ASan (48 MiB, 50 s each, outlasted a
            # 170 s timeout on a loaded CI machine); the verdict is a ratio of CPU times.
            statuses.append(d.request("POST", "/v1/plans:validate", doc, timeout_s=600).status)

        workers = [threading.Thread(target=validate) for _ in range(2)]
        for w in workers:
            w.start()
        health = []  # /healthz answers while the validations were still running
        while any(w.is_alive() for w in workers):
            started = time.monotonic()
            status = d.request("GET", "/healthz", timeout_s=30).status
            if any(w.is_alive() for w in workers):
                health.append((status, (time.monotonic() - started) * 1000))
            time.sleep(0.02)
        for w in workers:
            w.join()
        after = thread_cpu_ticks(d.proc.pid)
        self.assertEqual(statuses, [200, 200])
        io = after["llmcapd-io"] - before["llmcapd-io"]
        pool = after["llmcapd-pool"] - before["llmcapd-pool"]
        sys.stderr.write("validations: pool %d ticks, I/O thread %d ticks; %d /healthz during "
                         "them, slowest %.1f ms\n" %
                         (pool, io, len(health), max([h[1] for h in health] or [0])))
        self.assertGreater(pool, 2 * io + 5, "the dataset scans ran on the I/O thread")
        self.assertTrue(all(h[0] == 200 for h in health), health)

    def test_slowloris_does_not_keep_the_api_full(self):
        # Issue 35 #6: with the defaults, connections trickling their headers held every slot
        # until read_timeout and the API answered 503. Now a connection beyond max_connections
        # takes the slot of the one whose request has been arriving longest (over
        # slow_request_evict_ms, 1 s by default); the tricklers reconnect at once, as an
        # attacker would.
        d = Daemon(BINARY, args=["--max-connections", "16", "--read-timeout-ms", "30000"],
                   log_level="warn")
        self.addCleanup(d.cleanup)
        d.start()
        stop = threading.Event()
        self.addCleanup(stop.set)

        def attacker():
            while not stop.is_set():
                trickle(d.port, SLOW_HEADERS, 0.2, stop, [])

        threads = [threading.Thread(target=attacker, daemon=True) for _ in range(16)]
        for t in threads:
            t.start()
        time.sleep(2.5)  # every slot held by a trickler for longer than 1 s
        statuses = []
        for _ in range(10):
            s = raw_connect(d.port)
            s.sendall(b"GET /v1/jobs HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            answer = read_all(s, 10)
            s.close()
            statuses.append(int(answer.split(b" ", 2)[1]) if answer else 0)
        stop.set()
        for t in threads:
            t.join(15)
        self.assertEqual(statuses.count(200), 10, statuses)
        time.sleep(1.2)  # the counters reach /metrics once a second
        self.assertRegex(d.request("GET", "/metrics").text,
                         r'llmcap_api_connections_refused_total\{reason="slow_request"\} [1-9]')

    def test_only_allowed_hosts_are_answered(self):
        d = Daemon(BINARY, args=["--allowed-hosts", "llmcapd.example.internal"],
                   log_level="warn")
        self.addCleanup(d.cleanup)
        d.start()

        def status_for(host):
            s = raw_connect(d.port)
            s.sendall(b"GET /v1/jobs HTTP/1.1\r\nHost: " + host +
                      b"\r\nConnection: close\r\n\r\n")
            reply = read_all(s)
            s.close()
            return int(reply.split(b" ", 2)[1]), reply

        port = str(d.port).encode()
        for host in (b"localhost:" + port, b"127.0.0.1:" + port, b"[::1]:" + port,
                     b"LLMCAPD.example.internal:" + port, b"localhost"):
            self.assertEqual(status_for(host)[0], 200, host)
        # A DNS-rebinding page (its own name resolved to 127.0.0.1) gets nothing.
        status, reply = status_for(b"attacker.example:" + port)
        self.assertEqual(status, 421, reply)
        self.assertIn(b"allowed_hosts", reply)
        self.assertNotIn(b'"jobs"', reply)
        status, _ = status_for(b"10.1.2.3:" + port)  # listening on loopback: not an IP it has
        self.assertEqual(status, 421)
        # No Host at all, or two, on HTTP/1.1.
        s = raw_connect(d.port)
        s.sendall(b"GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n")
        self.assertTrue(read_all(s).startswith(b"HTTP/1.1 400"))
        s.close()


def realtime_wrapper(binary, directory):
    """A script that runs binary under SCHED_FIFO priority 10 (`chrt -f 10`), or None when not
    permitted. On a machine shared with compilers a waking load-generator thread otherwise
    waits scheduler slices behind them (tens of ms, bench/RESULTS.md), which would measure the
    machine, not whether the API disturbs the job; the kernel's RT throttling still leaves 5 %
    to everything else, and the API clients of this test run at normal priority."""
    if subprocess.run(["chrt", "-f", "10", "true"], stderr=subprocess.DEVNULL).returncode != 0:
        return None
    path = os.path.join(directory, "llmcapd-rt")
    with open(path, "w") as f:
        f.write('#!/bin/sh\nexec chrt -f 10 "%s" "$@"\n' % binary)
    os.chmod(path, 0o755)
    return path


class MeasurementTest(unittest.TestCase):
    def test_schedule_lag_unchanged_while_api_is_abused(self):
        tmp = tempfile.mkdtemp(prefix="llmcap-abuse-")
        self.addCleanup(shutil.rmtree, tmp, True)
        rt = realtime_wrapper(BINARY, tmp)
        if rt is None:
            sys.stderr.write("note: chrt -f 10 not permitted; the daemon runs at normal priority\n")
        d = Daemon(rt or BINARY, args=["--read-timeout-ms", str(READ_TIMEOUT_MS),
                                 "--max-connections", "64", "--shutdown-grace-s", "2"],
                   log_level="warn")
        self.addCleanup(d.cleanup)
        d.start()
        step = {"kind": "rate_sweep", "rates_rps": [100], "duration_s": 3, "warmup_s": 0.5}
        doc = plan("lag", levels=(), extra_phases=[dict(step, name="p%d" % i) for i in range(3)],
                   min_requests=5)
        # Short requests (~0.1 s on the simulated A100): a 3 s window then holds far more than
        # the 5 request lifetimes an open-loop step needs to be judged at once. With longer
        # ones every step is judged again over a longer window (docs/metrics.md, "judged
        # again"), and the abused window would no longer be one step.
        doc["workload"] = {"input_tokens": {"fixed": 64}, "output_tokens": {"fixed": 8}}
        job_id = d.submit(doc)
        d.wait_job(job_id, lambda j: done_at_least(j, 0), 60, "step 0 done",
                   interval_s=0.05)
        stop = threading.Event()
        self.addCleanup(stop.set)
        idle = [raw_connect(d.port) for _ in range(24)]
        self.addCleanup(lambda: [s.close() for s in idle])
        slow, statuses, threads = [], [], []  # statuses: of the flood requests
        paths = ["/v1/jobs/" + job_id, "/v1/jobs/%s/results" % job_id,
                 "/v1/jobs/%s/requests?limit=100" % job_id, "/metrics", "/v1/jobs"]
        for _ in range(4):
            threads.append(threading.Thread(target=trickle,
                                            args=(d.port, SLOW_HEADERS, 0.1, stop, slow)))
        # The flooding clients are processes (no GIL between them and the other clients).
        ctx = multiprocessing.get_context("fork")
        pstop, counts = ctx.Event(), ctx.Queue()
        floods = [ctx.Process(target=flood_process, args=(d.port, paths, pstop, counts))
                  for _ in range(4)]
        for p in floods:
            p.start()
        self.addCleanup(lambda: [p.kill() for p in floods if p.is_alive()])

        def reopen_idle():
            # Keep the idle connections coming back as the server closes them.
            while not stop.is_set():
                for i, s in enumerate(idle):
                    if stop.is_set():
                        break
                    try:
                        s.setblocking(False)
                        if s.recv(1) == b"":
                            raise ConnectionResetError
                    except BlockingIOError:
                        continue
                    except OSError:
                        s.close()
                        idle[i] = raw_connect(d.port)
                stop.wait(0.1)

        threads.append(threading.Thread(target=reopen_idle))
        for t in threads:
            t.start()
        window = time.monotonic()
        try:
            d.wait_job(job_id, lambda j: done_at_least(j, 1), 60,
                       "step 1 done", interval_s=0.05)
            window = time.monotonic() - window
        finally:
            stop.set()
            pstop.set()
            for t in threads:
                t.join(15)
            for p in floods:
                statuses.extend(counts.get(timeout=30))
                p.join(15)
        flood_n = len(statuses)
        d.wait_state(job_id, "succeeded", 60)
        res = d.get_json("/v1/jobs/%s/results" % job_id)
        steps = sorted((s for t in res["targets"] for p in t["phases"] for s in p["steps"]),
                       key=lambda s: s["global_step"])
        self.assertEqual([s["label"] for s in steps if s.get("rejudge_window_s") is not None],
                         [], "a step was judged again: requests outlived a fifth of the window")
        self.assertEqual(len(steps), 3)
        lag = [s["client"]["schedule_lag_p99_ms"] for s in steps]
        # Noise of a P99 of a few ms on a shared 2-core machine is ~1-3 ms (release binary, run
        # alone in the timing lane: quiet 0.7-3.4 ms, abused 1.0-3.9 ms with 5700-7700 flood
        # requests); API work landing on the agent's thread costs tens of ms. The bound
        # separates the two. (Under ASan beside another test the quiet P99 alone varied 3-5 ms
        # and an abused one read 17.6 ms: why this case is `timing`, tests/integration/CMakeLists.txt.)
        bound = max(lag[0], lag[2]) * 1.5 + 2.0
        sys.stderr.write("schedule lag P99 ms: quiet %.3f, abused %.3f, quiet %.3f (bound %.3f); "
                         "%d flood requests in %.1f s, %d slowloris cut\n" %
                         (lag[0], lag[1], lag[2], bound, flood_n, window, len(slow)))
        self.assertGreater(flood_n, 200, "the flood did not run during step 1")
        self.assertEqual([s for s in statuses if s not in (200,)], [])
        self.assertLessEqual(lag[1], bound, "API abuse disturbed the running job's schedule")
        for s in steps:
            # The load generator kept up: none of its own checks missed. (target_clock may: the
            # embedded simulator shares the 2 cores with the flood, and under ASan it can fall
            # behind real time — a busy host, which the verdict reports as such.)
            missed = [r["check"] for r in s["verdict"]["reasons"] if r["status"] == "missed" and
                      r["check"] in ("schedule_lag", "send_rate", "dropped_arrivals",
                                     "client_cpu")]
            self.assertEqual(missed, [], s["client"])
            self.assertFalse(s["partial"])
        d.signal(signal.SIGTERM)
        self.assertEqual(d.wait(20), 0)


if __name__ == "__main__":
    if len(sys.argv) < 2 or not os.access(sys.argv[1], os.X_OK):
        sys.exit("usage: daemon_abuse_test.py PATH/TO/llmcapd [unittest args]")
    BINARY = os.path.abspath(sys.argv[1])
    unittest.main(argv=[sys.argv[0]] + sys.argv[2:], verbosity=2)

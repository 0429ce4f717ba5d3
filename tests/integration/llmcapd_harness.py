"""Test harness for the real `llmcapd serve` binary (Python 3 stdlib only).

Daemon starts the binary on port 0 with its own database, parses the port from the
"listening on http://127.0.0.1:PORT" line on stdout, sends HTTP requests with http.client and
always kills the process in stop()/kill(). Every response body can be checked against a list of
forbidden strings (secrets), so a leak fails the test that made the request.

Used by daemon_api_test.py and daemon_restart_test.py. Not thread safe: one test thread per
Daemon (the SSE reader opens its own connection).
"""

import http.client
import json
import os
import re
import signal
import subprocess
import tempfile
import time

LISTEN_RE = re.compile(r"listening on http://([0-9.]+):([0-9]+)")
SIM_A100 = "sim://a100-80g-pcie/llama-3.1-8b"


def plan(name="tiny", levels=(2,), duration_s=2, warmup_s=0.5, target="a100", secret=None,
         base_url=SIM_A100, extra_phases=(), min_requests=3):
    """A small plan on the embedded A100 simulator; ~duration_s + warmup_s per level.

    The SLA is loose (the simulator shares a busy test machine) so that steps pass."""
    t = {"name": target, "base_url": base_url, "price_per_hour": 1.5}
    if secret is not None:
        t["secrets"] = {"api_key": secret}
    phases = []
    if levels:
        phases.append({"kind": "concurrency_sweep", "levels": list(levels),
                       "duration_s": duration_s, "warmup_s": warmup_s})
    phases.extend(extra_phases)
    return {"version": 1, "name": name, "targets": [t],
            "workload": {"input_tokens": {"fixed": 256}, "output_tokens": {"fixed": 32}},
            "sla": {"ttft_ms": {"p95": 5000}, "tpot_ms": {"p95": 250},
                    "min_requests": min_requests},
            "phases": phases}


def start_sim(binary, *args, timeout_s=15):
    """Starts a standalone `llmcapd sim --port 0 ARGS` on loopback; returns (process, port) once it
    prints its address (a thread drains its output meanwhile), or kills it and raises
    AssertionError with what it printed. The caller terminates the process."""
    import queue
    import threading
    env = {k: v for k, v in os.environ.items() if not k.startswith("LLMCAP_")}
    p = subprocess.Popen([binary, "sim", "--port", "0", "--log-level", "warn", *args],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    lines = queue.Queue()

    def pump():
        for line in p.stdout:
            lines.put(line)
        lines.put(None)
    threading.Thread(target=pump, daemon=True).start()
    deadline = time.monotonic() + timeout_s
    seen = ""
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=0.2)
        except queue.Empty:
            continue
        if line is None:
            break
        seen += line
        m = LISTEN_RE.search(line)
        if m:
            return p, int(m.group(2))
    p.kill()
    p.wait()
    raise AssertionError("llmcapd sim did not print its address: " + seen[-500:])


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers  # lower-case name -> value
        self.body = body

    @property
    def text(self):
        return self.body.decode("utf-8", "replace")

    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        return "<%d %s>" % (self.status, self.text[:400])


class Daemon:
    def __init__(self, binary, db_path=None, args=(), log_level="info"):
        self.binary = binary
        self.tmp = tempfile.TemporaryDirectory(prefix="llmcapd-test-")
        self.db_path = db_path or os.path.join(self.tmp.name, "llmcap.db")
        self.args = list(args)
        self.log_level = log_level
        self.proc = None
        self.port = None
        self.forbidden = []  # strings no response body may contain
        self.bodies = []     # every response body seen (for after-the-fact checks)
        self._runs = 0

    # ---- process ----

    def start(self, timeout_s=30):
        self._runs += 1
        self.stdout_path = os.path.join(self.tmp.name, "stdout.%d.txt" % self._runs)
        self.stderr_path = os.path.join(self.tmp.name, "stderr.%d.txt" % self._runs)
        cmd = [self.binary, "serve", "--port", "0", "--database", self.db_path,
               "--log-level", self.log_level] + self.args
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                         start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with open(self.stdout_path, "r", errors="replace") as f:
                m = LISTEN_RE.search(f.read())
            if m:
                self.port = int(m.group(2))
                return self
            if self.proc.poll() is not None:
                raise AssertionError("llmcapd exited with %d before listening:\n%s" %
                                     (self.proc.returncode, self.log_text()))
            time.sleep(0.05)
        self.kill()
        raise AssertionError("llmcapd did not print 'listening on' within %s s:\n%s" %
                             (timeout_s, self.log_text()))

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig):
        if self.running():
            self.proc.send_signal(sig)

    def wait(self, timeout_s):
        """Exit code, or None when still running after timeout_s."""
        try:
            return self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def kill(self):
        """SIGKILL (idempotent); always safe in cleanups."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)

    def log_text(self):
        text = ""
        for p in (getattr(self, "stdout_path", None), getattr(self, "stderr_path", None)):
            if p and os.path.exists(p):
                with open(p, "r", errors="replace") as f:
                    text += f.read()
        return text

    def all_logs(self):
        """stdout + stderr of every start of this Daemon."""
        text = ""
        for name in sorted(os.listdir(self.tmp.name)):
            if name.startswith(("stdout.", "stderr.")):
                with open(os.path.join(self.tmp.name, name), "r", errors="replace") as f:
                    text += f.read()
        return text

    def cleanup(self):
        self.kill()
        self.tmp.cleanup()

    # ---- HTTP ----

    def connection(self, timeout_s=30):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout_s)

    def request(self, method, path, body=None, headers=None, token=None, timeout_s=30,
                content_type="application/json"):
        hdrs = dict(headers or {})
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        if isinstance(body, str):
            body = body.encode()
        if body is not None and content_type is not None:
            hdrs.setdefault("Content-Type", content_type)
        if token is not None:
            hdrs["Authorization"] = "Bearer " + token
        conn = self.connection(timeout_s)
        try:
            conn.request(method, path, body=body, headers=hdrs)
            r = conn.getresponse()
            data = r.read()
            resp = Response(r.status, {k.lower(): v for k, v in r.getheaders()}, data)
        finally:
            conn.close()
        self.check_body(resp.body, method + " " + path)
        return resp

    def check_body(self, body, what):
        self.bodies.append(body)
        for s in self.forbidden:
            if s.encode() in body:
                raise AssertionError("secret %r appears in the body of %s" % (s, what))

    def get_json(self, path, token=None):
        r = self.request("GET", path, token=token)
        if r.status != 200:
            raise AssertionError("GET %s: %r" % (path, r))
        return r.json()

    def submit(self, plan_doc, token=None, headers=None):
        r = self.request("POST", "/v1/jobs", plan_doc, headers=headers, token=token)
        if r.status != 201:
            raise AssertionError("POST /v1/jobs: %r" % r)
        return r.json()["id"]

    def job(self, job_id, token=None):
        return self.get_json("/v1/jobs/" + job_id, token=token)

    def wait_job(self, job_id, predicate, timeout_s, what="", token=None, interval_s=0.2):
        """Polls GET /v1/jobs/{id} until predicate(job) holds; fails after timeout_s."""
        deadline = time.monotonic() + timeout_s
        job = None
        while time.monotonic() < deadline:
            job = self.job(job_id, token=token)
            if predicate(job):
                return job
            time.sleep(interval_s)
        raise AssertionError("job %s: %s not reached within %s s (last: %s)\nlog tail:\n%s" %
                             (job_id, what, timeout_s, json.dumps(job)[:1500],
                              "\n".join(self.log_text().splitlines()[-30:])))

    def wait_state(self, job_id, state, timeout_s, token=None):
        def pred(j):
            if j["state"] == state:
                return True
            if j["state"] in ("succeeded", "failed", "cancelled", "interrupted"):
                raise AssertionError("job %s ended %s (error %r), expected %s" %
                                     (job_id, j["state"], j["error"], state))
            return False
        return self.wait_job(job_id, pred, timeout_s, "state " + state, token=token)

    def events(self, job_id, timeout_s=60, token=None):
        """Reads GET /v1/jobs/{id}/events to its end; returns (content_type, [(type, data)])."""
        conn = self.connection(timeout_s)
        hdrs = {"Accept": "text/event-stream"}
        if token:
            hdrs["Authorization"] = "Bearer " + token
        raw = b""
        try:
            conn.request("GET", "/v1/jobs/%s/events" % job_id, headers=hdrs)
            r = conn.getresponse()
            if r.status != 200:
                raise AssertionError("events: %d %s" % (r.status, r.read()[:300]))
            ctype = r.getheader("Content-Type")
            events = []
            etype, data = None, []
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline:
                line = r.readline()
                if not line:
                    break  # stream closed
                raw += line
                line = line.decode().rstrip("\r\n")
                if line == "":
                    if etype is not None or data:
                        events.append((etype or "message", "\n".join(data)))
                        if etype == "end":
                            break
                    etype, data = None, []
                elif line.startswith(":"):
                    continue
                elif line.startswith("event:"):
                    etype = line[6:].strip()
                elif line.startswith("data:"):
                    data.append(line[5:].lstrip())
        finally:
            conn.close()
        self.check_body(raw, "events")
        return ctype, events

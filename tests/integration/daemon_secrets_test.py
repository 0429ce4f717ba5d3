#!/usr/bin/env python3
"""Secrets never leave the real `llmcapd serve` binary (issue 9, "Auth").

Usage: daemon_secrets_test.py PATH/TO/llmcapd [unittest args]

A daemon with an admin and a read token runs two jobs of one plan with two targets:
- the embedded simulator with `secrets.api_key`,
- a loopback HTTP target that answers every request 401 with a body ECHOING the request's
  Authorization and X-Api-Key headers (as some servers and proxies do: "invalid key sk-...").
  The target's api_key and a secret header therefore come back inside error bodies, which the
  load generator keeps as the request's error message.
Then every read route is fetched with the read token and checked for every secret (the target
secrets and both bearer tokens): the job, the job list, results, requests as JSON lines and as
CSV (all steps and per step), the report as HTML, Markdown and CSV, the SSE events, compare,
metrics, the index page, the OpenAPI document, plus `llmcapd report --format markdown` from a
results file exported over the API; and the daemon's whole log (JSON and text lines), including
the requests made with a wrong token. The echo target proves the secrets did reach the target,
so the check is not vacuous.
"""

import http.server
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llmcapd_harness import Daemon, plan  # noqa: E402

BINARY = None
SIM_KEY = "sk-llmcap-SIMKEY-5e1d0c9b8a7f"
ECHO_KEY = "sk-llmcap-ECHOKEY-3c2b1a09f8e7"
ECHO_HEADER = "hdr-llmcap-ECHOHDR-77e6d5c4b3"
ECHO_API_KEY = "azk-llmcap-ECHOAPIKEY-3c2b1a09"  # an Azure-style Api-Key header
ADMIN = "admin-llmcap-ADMINTOK-0f1e2d3c4b"
READ = "read-llmcap-READTOK-9a8b7c6d5e4f"
WRONG = "wrong-llmcap-WRONGTOK-1234567890"
SECRETS = [SIM_KEY, ECHO_KEY, ECHO_HEADER, ECHO_API_KEY, ADMIN, READ, WRONG]


def result_steps(res):
    """The step documents of a results answer: top level while running, else per phase."""
    if "steps" in res:
        return res["steps"]
    return [s for t in res.get("targets", []) for p in t.get("phases", []) for s in p["steps"]]


class EchoHandler(http.server.BaseHTTPRequestHandler):
    """401 for everything, the credentials it received in the body."""
    seen = []
    api_keys = []

    def log_message(self, *args):
        pass

    def _answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        auth = self.headers.get("Authorization", "")
        key = self.headers.get("X-Api-Key", "")
        EchoHandler.seen.append((auth, key))
        EchoHandler.api_keys.append(self.headers.get("Api-Key", ""))
        body = json.dumps({"error": {"message": "invalid credentials %s / %s" % (auth, key),
                                     "type": "invalid_request_error"}}).encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = _answer
    do_GET = _answer


def secrets_plan(echo_port):
    doc = plan("secrets", levels=(1,), duration_s=1, warmup_s=0, secret=SIM_KEY, min_requests=1)
    doc["targets"].append({"name": "echo", "base_url": "http://127.0.0.1:%d" % echo_port,
                           "price_per_hour": 1.0, "model": "echo-model",
                           "secrets": {"api_key": ECHO_KEY},
                           "headers": {"X-Api-Key": ECHO_HEADER, "Api-Key": ECHO_API_KEY}})
    return doc


class SecretsTest(unittest.TestCase):
    def test_no_secret_in_any_read_route_report_export_or_log(self):
        echo = http.server.ThreadingHTTPServer(("127.0.0.1", 0), EchoHandler)
        threading.Thread(target=echo.serve_forever, daemon=True).start()
        self.addCleanup(echo.server_close)
        self.addCleanup(echo.shutdown)
        d = Daemon(BINARY, args=["--admin-tokens", ADMIN, "--read-tokens", READ,
                                 "--shutdown-grace-s", "2"], log_level="debug")
        self.addCleanup(d.cleanup)
        d.forbidden = SECRETS
        d.start()
        self.assertEqual(d.request("GET", "/v1/jobs", token=WRONG).status, 401)
        self.assertEqual(d.request("GET", "/v1/jobs", headers={"Authorization": WRONG}).status,
                         401)
        self.assertEqual(d.request("POST", "/v1/jobs", secrets_plan(1), token=WRONG).status, 401)
        ids = [d.submit(secrets_plan(echo.server_address[1]), token=ADMIN) for _ in range(2)]
        for job_id in ids:
            _, events = d.events(job_id, timeout_s=90, token=READ)  # check_body asserts
            self.assertIn("step", [t for t, _ in events])
            job = d.wait_job(job_id, lambda j: j["state"] in ("succeeded", "failed"), 60,
                             "end", token=READ)
            self.assertEqual(job["state"], "succeeded", job)
        # The secrets really reached the echo target (and so came back in its error bodies).
        self.assertIn(("Bearer " + ECHO_KEY, ECHO_HEADER), EchoHandler.seen)
        # Every credential header the plan reader redacts is stored as a secret and sent as
        # given, never as the redaction "***" (Api-Key too).
        self.assertIn(ECHO_API_KEY, EchoHandler.api_keys)
        self.assertNotIn("***", EchoHandler.api_keys)
        job_id = ids[0]
        base = "/v1/jobs/" + job_id
        results = d.get_json(base + "/results", token=READ)
        gets = [(base, None), ("/v1/jobs?limit=100", None), (base + "/results", None),
                (base + "/requests", None), (base + "/requests", "text/csv"),
                (base + "/report", None), (base + "/report", "text/html"),
                (base + "/report", "text/markdown"), (base + "/report", "text/csv"),
                ("/v1/compare?jobs=%s,%s" % tuple(ids), None),
                ("/v1/compare?jobs=%s,%s" % tuple(ids), "text/markdown"),
                ("/metrics", None), ("/", None), ("/v1/openapi.json", None),
                ("/v1/profiles", None)]
        for step in result_steps(results):
            # The export numbers steps as printed, from 1: global_step + 1.
            gets.append((base + "/requests?step=%d" % (step["global_step"] + 1), None))
            gets.append((base + "/requests?step=%d" % (step["global_step"] + 1), "text/csv"))
        errors_seen = 0
        for path, accept in gets:
            r = d.request("GET", path, token=READ,
                          headers={"Accept": accept} if accept else None)  # check_body asserts
            self.assertEqual(r.status, 200, "%s (%s): %r" % (path, accept, r))
            if "/requests" in path and "HTTP 401" in r.text:
                errors_seen += 1
                # The error text is kept (minus the secret): the failure stays explained.
                self.assertIn("invalid credentials", r.text)
        self.assertGreater(errors_seen, 0, "the echo target's 401 errors are not in the samples")
        # Export: the results document through the CLI's report renderer.
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "results.json")
            with open(path, "w") as f:
                json.dump(results, f)
            for fmt in ("markdown", "csv", "html"):
                out = os.path.join(tmp, "report." + fmt)
                cp = subprocess.run([BINARY, "report", path, "--format", fmt, "--out", out],
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
                self.assertEqual(cp.returncode, 0, cp.stdout[-2000:])
                with open(out, "rb") as f:
                    d.check_body(f.read() + cp.stdout, "llmcapd report --format " + fmt)
        d.signal(signal.SIGTERM)
        self.assertEqual(d.wait(20), 0)
        # Issue 23 #3: the database is its owner's only, and a finished job's secrets are gone
        # from it — rows and bytes (secure_delete), main file and WAL.
        self.assertEqual(os.stat(d.db_path).st_mode & 0o777, 0o600)
        import sqlite3
        db = sqlite3.connect(d.db_path)
        self.assertEqual(db.execute("SELECT COUNT(*) FROM job_secrets").fetchone()[0], 0)
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.close()
        for suffix in ("", "-wal"):
            if os.path.exists(d.db_path + suffix):
                with open(d.db_path + suffix, "rb") as f:
                    raw = f.read()
                for s in (SIM_KEY, ECHO_KEY, ECHO_HEADER, ECHO_API_KEY):
                    self.assertNotIn(s.encode(), raw, "secret %r in %s" % (s, suffix or "db"))
        log = d.all_logs()
        self.assertIn(job_id, log)  # the log is really written (debug level)
        for s in SECRETS:
            self.assertNotIn(s, log, "secret %r in the daemon log" % s)
        # A JSON log as well (what log shippers get).
        j = Daemon(BINARY, db_path=d.db_path, args=["--admin-tokens", ADMIN, "--log-json"],
                   log_level="debug")
        self.addCleanup(j.cleanup)
        j.forbidden = SECRETS
        j.start()
        self.assertEqual(j.request("GET", "/v1/jobs", token=WRONG).status, 401)
        self.assertEqual(j.request("GET", base + "/requests", token=ADMIN).status, 200)
        j.signal(signal.SIGTERM)
        self.assertEqual(j.wait(20), 0)
        for s in SECRETS:
            self.assertNotIn(s, j.all_logs(), "secret %r in the JSON log" % s)


if __name__ == "__main__":
    if len(sys.argv) < 2 or not os.access(sys.argv[1], os.X_OK):
        sys.exit("usage: daemon_secrets_test.py PATH/TO/llmcapd [unittest args]")
    BINARY = os.path.abspath(sys.argv[1])
    unittest.main(argv=[sys.argv[0]] + sys.argv[2:], verbosity=2)

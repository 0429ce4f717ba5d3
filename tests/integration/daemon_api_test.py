#!/usr/bin/env python3
"""Integration test of the REST API of the real `llmcapd serve` binary (issue 6, "Done when").

Usage: daemon_api_test.py PATH/TO/llmcapd [unittest args]

Starts the daemon on port 0 with a temporary database (several instances: an open one, one
with bearer tokens, one with a queue of 1 for 429 and shutdown 503) and drives every route with
real requests: job lifecycle, results, samples as JSON lines and CSV, SSE events, listing with
filters and cursors, idempotency, cancel, delete, validation, every error status, auth, the
target allowlist, secrets redaction (in every body and in the log), /metrics, OpenAPI,
profiles and the memory estimate. Only embedded sim:// targets run; nothing outside loopback is
ever contacted (10.1.2.3 and *.invalid are refused before any connection).
"""

import csv
import http.server
import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llmcapd_harness import Daemon, plan  # noqa: E402

BINARY = None
SECRET = "sk-llmcap-test-SECRET-4f9c2a7e"
ADMIN = "admin-token-0123456789abcdef"
READ = "read-token-0123456789abcdef"
PROBLEM_BASE = "https://github.com/llmcap/llmcap/blob/main/docs/problems.md#"


def long_plan(name="long", target="a100", secret=None):
    # One 60 s step: stays running until cancelled or the daemon stops.
    return plan(name, levels=(1,), duration_s=60, warmup_s=0, target=target, secret=secret)


class ProblemAssertions:
    def assertProblem(self, r, status, type_suffix=None, paths=None):
        self.assertEqual(r.status, status, r)
        self.assertTrue(r.headers.get("content-type", "").startswith("application/problem+json"),
                        r.headers)
        p = r.json()
        self.assertEqual(p["status"], status, p)
        self.assertIsInstance(p["title"], str)
        self.assertTrue(p["title"], p)
        self.assertIn("type", p)
        if type_suffix is not None:
            self.assertEqual(p["type"], PROBLEM_BASE + type_suffix, p)
        if paths is not None:
            got = sorted(e["path"] for e in p.get("errors", []))
            self.assertEqual(got, sorted(paths), p)
            for e in p["errors"]:
                self.assertTrue(e["message"], e)
        return p


class OpenDaemonTest(unittest.TestCase, ProblemAssertions):
    """One daemon without tokens, shared by the tests of this class (jobs run one at a time)."""

    @classmethod
    def setUpClass(cls):
        cls.d = Daemon(BINARY, args=["--max-body-bytes", "8192", "--shutdown-grace-s", "2"],
                       log_level="info")
        cls.d.forbidden = [SECRET]
        cls.d.start()

    @classmethod
    def tearDownClass(cls):
        d = cls.d
        try:
            d.signal(signal.SIGTERM)
            rc = d.wait(20)
            log = d.all_logs()
        finally:
            d.cleanup()
        if SECRET in log:
            raise AssertionError("the secret appears in the daemon's log")
        if rc != 0:
            raise AssertionError("llmcapd exit code %r after SIGTERM:\n%s" % (rc, log[-3000:]))

    # ---- job lifecycle ----

    def test_job_lifecycle_results_samples_events_metrics(self):
        d = self.d
        r = d.request("POST", "/v1/jobs", plan("lifecycle", levels=(1, 2), duration_s=3, secret=SECRET))
        self.assertEqual(r.status, 201, r)
        job = r.json()
        job_id = job["id"]
        self.assertEqual(r.headers.get("location"), "/v1/jobs/" + job_id)
        self.assertIn(job["state"], ("queued", "running"))
        self.assertNotIn("secrets", json.dumps(job))

        # SSE: progress, step and state events, then the stream ends by itself.
        ctype, events = d.events(job_id, timeout_s=90)
        self.assertTrue(ctype.startswith("text/event-stream"), ctype)
        types = [t for t, _ in events]
        self.assertEqual(types[-1], "end", types)
        self.assertIn("progress", types)
        self.assertEqual(types.count("step"), 2, types)
        states = [json.loads(data)["state"] for t, data in events if t == "state"]
        self.assertEqual(states[0], "running", states)
        self.assertEqual(states[-1], "succeeded", states)
        self.assertEqual(json.loads(events[-1][1])["state"], "succeeded")
        for t, data in events:
            json.loads(data)  # every data line is JSON

        job = d.wait_state(job_id, "succeeded", 30)
        self.assertEqual(job["last_completed_step"], 1)
        self.assertIsNotNone(job["finished_at"])
        self.assertIsNone(job["error"])

        res = d.get_json("/v1/jobs/%s/results" % job_id)
        # The verdict beside the state: an acceptance workflow gates on it without /results.
        verdict = job["verdict"]
        self.assertIn(verdict["outcome"], ("pass", "fail", "inconclusive"), verdict)
        self.assertEqual(verdict["outcome"], res["verdict"]["outcome"])
        self.assertEqual([t["name"] for t in verdict["targets"]], ["a100"])
        self.assertEqual(verdict["targets"][0]["outcome"], res["targets"][0]["verdict"]["outcome"])
        self.assertEqual(res["all_qualified"], verdict["outcome"] == "pass")
        listed = d.get_json("/v1/jobs?verdict=" + verdict["outcome"])["jobs"]
        self.assertIn(job_id, [j["id"] for j in listed])
        mine = [j for j in listed if j["id"] == job_id][0]
        self.assertEqual(mine["verdict"]["outcome"], verdict["outcome"])
        self.assertTrue(all(j["verdict"]["outcome"] == verdict["outcome"] for j in listed))
        other = "fail" if verdict["outcome"] != "fail" else "pass"
        self.assertNotIn(job_id, [j["id"] for j in d.get_json("/v1/jobs?verdict=" + other)["jobs"]])
        self.assertProblem(d.request("GET", "/v1/jobs?verdict=maybe"), 400, paths=["verdict"])
        self.assertTrue(res["complete"])
        self.assertEqual(res["job"]["id"], job_id)
        self.assertEqual(len(res["targets"]), 1)
        t = res["targets"][0]
        self.assertEqual(t["name"], "a100")
        self.assertIsInstance(t["qualified"], dict,
                              [(s["label"], s["verdict"]) for ph in t["phases"] for s in ph["steps"]])
        self.assertGreater(t["qualified"]["output_tokens_per_s"], 0)
        steps = [s for ph in t["phases"] for s in ph["steps"]]
        self.assertEqual([s["params"]["concurrency"] for s in steps], [1, 2])
        for s in steps:
            self.assertIn(s["verdict"]["outcome"], ("pass", "fail", "inconclusive"))
            self.assertFalse(s["partial"])
            self.assertGreater(s["stats"]["counts"]["completed_ok"], 0)

        # Samples as JSON lines.
        r = d.request("GET", "/v1/jobs/%s/requests" % job_id,
                      headers={"Accept": "application/x-ndjson"})
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.headers["content-type"].startswith("application/x-ndjson"))
        rows = [json.loads(line) for line in r.text.splitlines() if line]
        self.assertGreater(len(rows), 5)
        self.assertEqual({row["step"] for row in rows}, {1, 2})  # numbered as printed, from 1
        ids = [row["id"] for row in rows]
        self.assertEqual(ids, sorted(ids))
        ok = [row for row in rows if row["error"] == "none"]
        self.assertTrue(ok, rows[:2])
        for row in ok:
            self.assertEqual(row["output_tokens"], 32)
            self.assertGreater(row["ttft_ms"], 0)
            self.assertGreater(row["e2e_ms"], row["ttft_ms"])
        # Every completed request of every step is stored (warm-up ones too).
        completed = sum(s["stats"]["counts"]["completed_ok"] for s in steps)
        self.assertGreaterEqual(len(ok), completed)

        # ...and as CSV: the same rows.
        r = d.request("GET", "/v1/jobs/%s/requests" % job_id, headers={"Accept": "text/csv"})
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.headers["content-type"].startswith("text/csv"), r.headers)
        table = list(csv.DictReader(io.StringIO(r.text)))
        self.assertEqual(len(table), len(rows))
        self.assertIn("ttft_ms", table[0])
        self.assertEqual([int(x["id"]) for x in table], ids)

        # Filters: one step, a page of 3, after a cursor, a bad limit, an unknown step.
        r = d.request("GET", "/v1/jobs/%s/requests?step=2" % job_id)
        self.assertEqual(r.status, 200, r)
        one = [json.loads(line) for line in r.text.splitlines() if line]
        self.assertTrue(one)
        self.assertEqual({row["step"] for row in one}, {2})
        self.assertEqual(len(one), len([row for row in rows if row["step"] == 2]))
        r = d.request("GET", "/v1/jobs/%s/requests?limit=3&after=%d" % (job_id, ids[1]))
        self.assertEqual([json.loads(line)["id"] for line in r.text.splitlines()], ids[2:5])
        self.assertProblem(d.request("GET", "/v1/jobs/%s/requests?limit=0" % job_id), 400)
        self.assertProblem(d.request("GET", "/v1/jobs/%s/requests?step=7" % job_id), 404)
        self.assertProblem(d.request("GET", "/v1/jobs/%s/requests" % job_id,
                                     headers={"Accept": "image/png"}), 406)

        # The events of a finished job replay and end at once.
        _, again = d.events(job_id, timeout_s=10)
        self.assertEqual(again[-1][0], "end")

        # /metrics after a job.
        r = d.request("GET", "/metrics")
        self.assertEqual(r.status, 200)
        self.assertIn("llmcap_requests_total", r.text)
        self.assertIn("llmcap_ttft_seconds_bucket", r.text)

        # A finished job can be neither resumed nor cancelled.
        self.assertProblem(d.request("POST", "/v1/jobs/%s:resume" % job_id), 409, "conflict")
        self.assertProblem(d.request("POST", "/v1/jobs/%s:cancel" % job_id), 409, "conflict")

    def test_report_and_compare_answer_by_the_same_content_negotiation(self):
        """Issue 40 #4: one rule for GET /v1/jobs/{id}/report and GET /v1/compare: ?format=
        wins, else Accept, else (a plain curl) JSON; and a prediction beside a measurement of
        one plan is "predicted vs measured", each job labelled with its kind."""
        d = self.d
        p = plan("negotiate", levels=(2,), duration_s=2, warmup_s=0.5)
        r = d.request("POST", "/v1/predictions", p)
        self.assertEqual(r.status, 201, r)
        pid = r.json()["id"]
        mid = d.submit(p)
        d.wait_state(pid, "succeeded", 60)
        d.wait_state(mid, "succeeded", 120)
        routes = {"report": ("/v1/jobs/%s/report" % mid, "?"),
                  "compare": ("/v1/compare?jobs=%s,%s" % (pid, mid), "&")}
        browser = ("text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,"
                   "image/webp,*/*;q=0.8")
        for name, (path, sep) in routes.items():
            def get(query="", accept=None):
                r = d.request("GET", path + (sep + query if query else ""),
                              headers={"Accept": accept} if accept is not None else None)
                return r, r.headers.get("content-type", "").split(";")[0]
            # A plain curl (*/*) and a client that sends no Accept: JSON.
            for accept in (None, "*/*", "", "application/json"):
                r, ctype = get(accept=accept)
                what = "%s, Accept %r" % (name, accept)
                self.assertEqual(r.status, 200, (what, r))
                self.assertEqual(ctype, "application/json", what)
                self.assertEqual(r.headers.get("vary"), "Accept", what)
                self.assertIsInstance(r.json()["targets"], list, what)
            for accept, want in ((browser, "text/html"), ("text/html", "text/html"),
                                 ("text/markdown", "text/markdown"), ("text/csv", "text/csv")):
                r, ctype = get(accept=accept)
                self.assertEqual((r.status, ctype), (200, want), (name, accept, r))
            # ?format= wins over Accept.
            for fmt, accept, want in (("html", "application/json", "text/html"),
                                      ("json", "text/html", "application/json"),
                                      ("markdown", browser, "text/markdown"),
                                      ("csv", None, "text/csv")):
                r, ctype = get("format=" + fmt, accept)
                self.assertEqual((r.status, ctype), (200, want), (name, fmt, accept, r))
            self.assertProblem(get("format=xunit")[0], 400, "bad-request", ["format"])
            self.assertProblem(get("format=HTML")[0], 400, "bad-request", ["format"])
            self.assertProblem(get(accept="image/png")[0], 406)
            self.assertProblem(get(accept="application/xml")[0], 406)  # JUnit only by format
        r = d.request("GET", routes["report"][0] + "?format=junit")
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.headers["content-type"].startswith("application/xml"), r.headers)
        self.assertProblem(d.request("GET", routes["compare"][0] + "&format=junit"), 400,
                           "bad-request", ["format"])

        # The report's JSON is the report document: results, the plan it ran, the check.
        doc = d.get_json(routes["report"][0])
        self.assertEqual(doc["plan_document"]["name"], "negotiate")
        self.assertEqual(doc["prediction_check"]["predicted_job"], pid)

        # A prediction and a measurement of one plan: paired, never A/B against itself.
        doc = d.get_json(routes["compare"][0])
        self.assertEqual(doc["comparison_mode"], "predicted vs measured")
        self.assertEqual([(j["job_id"], j["kind"], j["plan"]) for j in doc["jobs"]],
                         [(pid, "predicted", "negotiate"), (mid, "measured", "negotiate")])
        self.assertEqual(doc["comparison"], [])
        self.assertEqual(len(doc["prediction_checks"]), 1)
        check = doc["prediction_checks"][0]
        self.assertEqual((check["predicted_job"], check["measured_job"]), (pid, mid))
        self.assertEqual([t["target"] for t in check["targets"]], ["a100"])
        html = d.request("GET", routes["compare"][0], headers={"Accept": browser}).text
        self.assertIn('<tr data-job="%s" data-kind="predicted">' % pid, html)
        self.assertIn('<tr data-job="%s" data-kind="measured">' % mid, html)
        self.assertIn('id="prediction-check"', html)
        self.assertNotIn('id="comparison-table"', html)
        self.assertNotIn("×1.00", html)

    def test_list_filters_and_cursor_pagination(self):
        d = self.d
        ids = [d.submit(plan("list-%d" % i, levels=(1,), duration_s=1, warmup_s=0,
                             target="lister")) for i in range(3)]
        seen, cursor, pages = [], None, 0
        while True:
            q = {"limit": "1", "target": "lister"}
            if cursor:
                q["cursor"] = cursor
            page = d.get_json("/v1/jobs?" + urllib.parse.urlencode(q))
            pages += 1
            self.assertLessEqual(len(page["jobs"]), 1)
            seen += [j["id"] for j in page["jobs"]]
            cursor = page["next_cursor"]
            if not cursor:
                break
            self.assertLess(pages, 10, "pagination does not end")
        self.assertEqual(seen, list(reversed(ids)))  # newest first, each exactly once
        for i in ids:
            d.wait_state(i, "succeeded", 60)
        page = d.get_json("/v1/jobs?state=succeeded&target=lister")
        self.assertEqual(sorted(j["id"] for j in page["jobs"]), sorted(ids))
        self.assertEqual(d.get_json("/v1/jobs?state=queued&target=lister")["jobs"], [])
        self.assertEqual(d.get_json("/v1/jobs?target=no-such-target")["jobs"], [])
        self.assertEqual(d.get_json("/v1/jobs?target=lister&created_after=2999-01-01T00:00:00Z")
                         ["jobs"], [])
        self.assertEqual(len(d.get_json("/v1/jobs?target=lister&created_after="
                                        "2000-01-01T00:00:00Z")["jobs"]), 3)
        p = self.assertProblem(d.request("GET", "/v1/jobs?state=bogus&limit=0"), 400)
        self.assertEqual(sorted(e["path"] for e in p["errors"]), ["limit", "state"])
        self.assertProblem(d.request("GET", "/v1/jobs?created_after=yesterday"), 400)
        self.assertProblem(d.request("GET", "/v1/jobs?cursor=garbage"), 400)

    def test_idempotency_key(self):
        d = self.d
        body = plan("idem", levels=(1,), duration_s=1, warmup_s=0)
        key = {"Idempotency-Key": "idem-key-1"}
        r1 = d.request("POST", "/v1/jobs", body, headers=key)
        self.assertEqual(r1.status, 201, r1)
        r2 = d.request("POST", "/v1/jobs", body, headers=key)
        self.assertEqual(r2.status, 200, r2)
        self.assertEqual(r2.json()["id"], r1.json()["id"])
        other = dict(body, name="idem-other")
        self.assertProblem(d.request("POST", "/v1/jobs", other, headers=key), 409, "conflict")
        self.assertProblem(d.request("POST", "/v1/jobs", body,
                                     headers={"Idempotency-Key": "k" * 201}), 400)
        # Only one job exists for the key.
        jobs = [j for j in d.get_json("/v1/jobs?limit=1000")["jobs"] if j["id"] == r1.json()["id"]]
        self.assertEqual(len(jobs), 1)
        d.wait_state(r1.json()["id"], "succeeded", 60)

    def test_cancel_running_and_delete_rules(self):
        d = self.d
        long_id = d.submit(long_plan("cancel-me"))
        queued_id = d.submit(plan("behind", levels=(1,), duration_s=1, warmup_s=0))
        d.wait_job(long_id, lambda j: j["state"] == "running" and
                   ((j["progress"] or {}).get("live") or {}).get("completed_ok", 0) >= 2,
                   60, "running with completed requests")
        self.assertEqual(d.job(queued_id)["state"], "queued")
        # The estimate is there from the first step on (the running step's plan stands in for
        # the steps after it until one has finished).
        running = d.job(long_id)["progress"]
        self.assertEqual(running["steps_done"], 0, running)
        self.assertGreater(running["eta_s"], 0, running)

        # Running and queued jobs cannot be deleted.
        self.assertProblem(d.request("DELETE", "/v1/jobs/" + long_id), 409, "conflict")
        self.assertProblem(d.request("DELETE", "/v1/jobs/" + queued_id), 409, "conflict")

        # Cancelling a queued job ends it at once.
        r = d.request("POST", "/v1/jobs/%s:cancel" % queued_id)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["state"], "cancelled")

        # Cancelling the running one: 202, then cancelled, with its step kept and marked partial.
        r = d.request("POST", "/v1/jobs/%s:cancel" % long_id)
        self.assertEqual(r.status, 202, r)
        self.assertTrue(r.json()["cancel_requested"])
        job = d.wait_state(long_id, "cancelled", 30)
        self.assertIsNotNone(job["finished_at"])
        # A stopped job shows no estimate and no live counters (they were stale).
        self.assertIsNone(job["progress"].get("eta_s"), job["progress"])
        self.assertNotIn("live", job["progress"])
        res = d.get_json("/v1/jobs/%s/results" % long_id)
        self.assertFalse(res["complete"])
        steps = [s for t in res["targets"] for ph in t["phases"] for s in ph["steps"]]
        self.assertEqual(len(steps), 1, res)
        self.assertTrue(steps[0]["partial"], steps[0])
        self.assertGreater(steps[0]["stats"]["counts"]["completed_ok"], 0)

        # Finished jobs can be deleted: 204, then 404 everywhere.
        r = d.request("DELETE", "/v1/jobs/" + long_id)
        self.assertEqual(r.status, 204, r)
        self.assertEqual(r.body, b"")
        self.assertProblem(d.request("GET", "/v1/jobs/" + long_id), 404, "not-found")
        self.assertProblem(d.request("GET", "/v1/jobs/%s/results" % long_id), 404)
        self.assertProblem(d.request("GET", "/v1/jobs/%s/requests" % long_id), 404)
        self.assertProblem(d.request("DELETE", "/v1/jobs/" + long_id), 404)
        self.assertProblem(d.request("POST", "/v1/jobs/%s:cancel" % long_id), 404)
        self.assertEqual(d.request("DELETE", "/v1/jobs/" + queued_id).status, 204)

    # ---- validation, redaction ----

    def test_validate_normalises_and_redacts(self):
        d = self.d
        r = d.request("POST", "/v1/plans:validate", plan("validate-me", secret=SECRET))
        self.assertEqual(r.status, 200, r)
        v = r.json()
        self.assertTrue(v["valid"])
        p = v["plan"]
        self.assertEqual(p["targets"][0]["secrets"]["api_key"], "***")
        self.assertEqual(p["phases"][0]["name"], "concurrency_sweep")  # defaults filled in
        self.assertEqual(p["phases"][0]["drain"], "finish")
        self.assertEqual(p["sla"]["ttft_from"], "intended")
        self.assertGreater(v["estimated_duration_s"], 0)
        # Validation creates no job.
        jobs = d.get_json("/v1/jobs?limit=1000")["jobs"]
        self.assertFalse([j for j in jobs if j["targets"][0]["name"] == "validate-me"])
        # Credential headers are redacted too.
        doc = plan("hdr")
        doc["targets"][0]["headers"] = {"X-Api-Key": SECRET, "X-Trace": "visible"}
        r = d.request("POST", "/v1/plans:validate", doc)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["plan"]["targets"][0]["headers"],
                         {"X-Api-Key": "***", "X-Trace": "visible"})

    def test_secret_never_in_job_list_or_log(self):
        d = self.d
        job_id = d.submit(plan("secret-job", levels=(1,), duration_s=1, warmup_s=0,
                               secret=SECRET))
        d.events(job_id, timeout_s=60)
        d.wait_state(job_id, "succeeded", 30)
        for path in ("/v1/jobs/" + job_id, "/v1/jobs/%s/results" % job_id, "/v1/jobs?limit=1000",
                     "/v1/jobs/%s/requests" % job_id, "/", "/metrics"):
            self.assertEqual(d.request("GET", path).status, 200, path)  # check_body asserts
        self.assertNotIn(SECRET, d.log_text())
        self.assertIn(job_id, d.log_text())  # the log is really being written

    # ---- every error status ----

    def test_error_statuses(self):
        d = self.d
        # 400 malformed JSON.
        p = self.assertProblem(d.request("POST", "/v1/jobs", '{"version": 1, "targets": ['), 400,
                               "malformed-json")
        self.assertTrue(p["detail"])
        self.assertProblem(d.request("POST", "/v1/plans:validate", "{not json"), 400,
                           "malformed-json")
        # 404 unknown job and unknown path.
        self.assertProblem(d.request("GET", "/v1/jobs/job_00000000000000000000000000"), 404,
                           "not-found")
        self.assertProblem(d.request("GET", "/v1/nothing-here"), 404, "not-found")
        self.assertProblem(d.request("GET", "/v1/jobs/job_00000000000000000000000000/events"),
                           404)
        # 405 with Allow.
        r = d.request("PUT", "/v1/jobs", plan())
        self.assertProblem(r, 405, "method-not-allowed")
        allow = {m.strip() for m in r.headers["allow"].split(",")}
        self.assertTrue({"GET", "POST"} <= allow, allow)
        self.assertNotIn("PUT", allow)
        r = d.request("POST", "/healthz", "{}")
        self.assertProblem(r, 405)
        self.assertIn("GET", r.headers["allow"])
        # 413: a body over --max-body-bytes (8192).
        big = dict(plan(), description="x" * 20000)
        self.assertProblem(d.request("POST", "/v1/jobs", big), 413)
        # 415: not JSON.
        self.assertProblem(d.request("POST", "/v1/jobs", json.dumps(plan()),
                                     content_type="text/plain"), 415, "unsupported-media-type")
        self.assertProblem(d.request("POST", "/v1/jobs", json.dumps(plan()), content_type=None),
                           415)
        # 422: every offending path at once.
        bad = plan("bad")
        bad["version"] = 2
        bad["bogus"] = True
        bad["targets"][0]["price_per_hour"] = -1
        bad["workload"]["input_tokens"] = {"fixed": 0}
        bad["sla"]["ttft_ms"]["p95"] = -5
        bad["phases"][0]["levels"] = [0]
        bad["phases"].append({"kind": "warp"})
        for path in ("/v1/jobs", "/v1/plans:validate"):
            p = self.assertProblem(d.request("POST", path, bad), 422, "invalid-plan")
            got = {e["path"] for e in p["errors"]}
            want = {"/version", "/bogus", "/targets/0/price_per_hour",
                    "/workload/input_tokens/fixed", "/sla/ttft_ms/p95", "/phases/0/levels/0",
                    "/phases/1/kind"}
            self.assertTrue(want <= got, "missing %s in %s" % (want - got, p))
        p = self.assertProblem(d.request("POST", "/v1/jobs", {"version": 1}), 422, "invalid-plan")
        self.assertIn("/targets", {e["path"] for e in p["errors"]})
        # 422 for a non-plan request body.
        self.assertProblem(d.request("POST", "/v1/estimates/memory", {"hardware": "nope"}), 422,
                           paths=["/hardware", "/model"])
        # 409 is covered by idempotency, delete and resume; 429/503 by LimitsTest; 401/403 by
        # AuthTest. Nothing above created a job.
        names = {j["targets"][0]["name"] for j in d.get_json("/v1/jobs?limit=1000")["jobs"]}
        self.assertNotIn("bad", names)

    def test_target_allowlist(self):
        d = self.d
        started = time.monotonic()
        for url in ("http://10.1.2.3:8000", "http://[2001:db8::1]:8000",
                    "http://no-such-host.invalid:8000"):
            doc = plan("outside", base_url=url)
            for path in ("/v1/jobs", "/v1/plans:validate"):
                p = self.assertProblem(d.request("POST", path, doc), 422, "invalid-plan",
                                       paths=["/targets/0/base_url"])
                self.assertIn(url.split("//")[1].rsplit(":", 1)[0].strip("[]"),
                              p["errors"][0]["message"])
        self.assertLess(time.monotonic() - started, 30)
        doc = plan("metrics-outside")
        doc["targets"][0]["metrics_url"] = "http://10.9.9.9:9100/metrics"
        for path in ("/v1/jobs", "/v1/plans:validate"):  # validation answers as creation does
            self.assertProblem(d.request("POST", path, doc), 422, "invalid-plan",
                               paths=["/targets/0/metrics_url"])
        # Loopback is allowed (validation only: nothing is listening there).
        r = d.request("POST", "/v1/plans:validate", plan("loop", base_url="http://127.0.0.1:9"))
        self.assertEqual(r.status, 200, r)
        r = d.request("POST", "/v1/plans:validate", plan("loop", base_url="http://localhost:9"))
        self.assertEqual(r.status, 200, r)

    def test_unknown_simulator_profile_refused_and_unit_slips_warned(self):
        d = self.d
        # A misspelt GPU profile is refused before a job is stored, naming the field, the
        # nearest profile and the list (docs/plans.md, "Validation and warnings").
        doc = plan("typo", base_url="sim://rtx4090-48gb/llama-3.1-8b")
        for path in ("/v1/plans:validate", "/v1/jobs", "/v1/predictions"):
            p = self.assertProblem(d.request("POST", path, doc), 422, "invalid-plan",
                                   paths=["/targets/0/base_url"])
            message = p["errors"][0]["message"]
            self.assertIn("did you mean rtx4090-48g?", message, path)
            self.assertIn("a100-80g-pcie", message, path)
        names = {j["targets"][0]["name"] for j in d.get_json("/v1/jobs?limit=1000")["jobs"]}
        self.assertNotIn("typo", names)
        # An unknown key suggests the near one.
        doc = plan("alias")
        doc["sla"]["ttft"] = doc["sla"].pop("ttft_ms")
        p = self.assertProblem(d.request("POST", "/v1/plans:validate", doc), 422,
                               "invalid-plan", paths=["/sla/ttft"])
        self.assertIn("did you mean ttft_ms?", p["errors"][0]["message"])
        # Legal values that are almost certainly a unit slip: valid, with warnings naming them.
        doc = plan("slips")
        doc["sla"]["ttft_ms"]["p95"] = 2
        doc["sla"]["max_error_rate"] = 1
        r = d.request("POST", "/v1/plans:validate", doc)
        self.assertEqual(r.status, 200, r)
        warnings = r.json()["warnings"]
        self.assertTrue(any(w.startswith("/sla/ttft_ms/p95: ") and "did you mean 2000" in w
                            for w in warnings), warnings)
        self.assertTrue(any(w.startswith("/sla/max_error_rate: ") for w in warnings), warnings)

    # ---- read-only routes ----

    def test_openapi_profiles_estimate_health(self):
        d = self.d
        doc = d.get_json("/v1/openapi.json")
        self.assertIn("openapi", doc)
        self.assertIn("/v1/jobs", doc["paths"])
        # The project's licence (LICENSE, NOTICE) is the served document's.
        self.assertEqual(doc["info"]["license"]["name"], "Apache-2.0")
        root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
        with open(os.path.join(root, "LICENSE"), encoding="utf-8") as f:
            text = f.read()
        self.assertIn("Apache License", text)
        self.assertIn("Version 2.0, January 2004", text)
        with open(os.path.join(root, "NOTICE"), encoding="utf-8") as f:
            self.assertIn("Apache License, Version 2.0", f.read())
        prof = d.get_json("/v1/profiles")
        self.assertIn("a100-80g-pcie", [h["name"] for h in prof["hardware"]])
        self.assertIn("llama-3.1-8b", [m["name"] for m in prof["models"]])
        r = d.request("POST", "/v1/estimates/memory",
                      {"hardware": "rtx4090-24g", "model": "llama-3.1-8b",
                       "context_tokens": 8192, "concurrency": 32})
        self.assertEqual(r.status, 200, r)
        self.assertIs(r.json()["fits"], False)
        r = d.request("POST", "/v1/estimates/memory",
                      {"hardware": "a100-80g-pcie", "model": "llama-3.1-8b",
                       "context_tokens": 2048, "concurrency": 8})
        self.assertIs(r.json()["fits"], True, r)
        # Tensor parallelism: 70B BF16 needs 4 A100s; a layout vLLM refuses names the field.
        big = {"hardware": "a100-80g-sxm", "model": "llama-3.1-70b", "context_tokens": 4096,
               "concurrency": 32}
        self.assertIs(d.request("POST", "/v1/estimates/memory", big).json()["fits"], False)
        r = d.request("POST", "/v1/estimates/memory", dict(big, tensor_parallel=4))
        self.assertIs(r.json()["fits"], True, r)
        self.assertEqual(r.json()["tensor_parallel"], 4)
        self.assertProblem(d.request("POST", "/v1/estimates/memory", dict(big, tensor_parallel=3)),
                           422, paths=["/tensor_parallel"])
        self.assertEqual(d.get_json("/healthz")["status"], "ok")
        self.assertEqual(d.get_json("/readyz")["status"], "ready")
        r = d.request("GET", "/")
        self.assertEqual(r.status, 200)
        self.assertIn("text/html", r.headers["content-type"])


class DatasetTest(unittest.TestCase, ProblemAssertions):
    """Plans over REST read datasets only from dataset_dir (docs/security.md)."""

    def test_datasets_come_only_from_dataset_dir(self):
        import tempfile
        dsdir = tempfile.TemporaryDirectory(prefix="llmcap-datasets-")
        self.addCleanup(dsdir.cleanup)
        with open(os.path.join(dsdir.name, "chat.jsonl"), "w") as f:
            f.write('{"prompt": "hello there", "max_tokens": 8}\n')
        with open(os.path.join(dsdir.name, "broken.jsonl"), "w") as f:
            f.write("root:x:0:0:do-not-echo\n")
        os.symlink("/etc/hostname", os.path.join(dsdir.name, "escape.jsonl"))
        os.mkfifo(os.path.join(dsdir.name, "fifo.jsonl"))

        def with_dataset(path):
            doc = plan("dataset")
            doc["workload"] = {"dataset": {"path": path}}
            return doc

        # Without dataset_dir no plan may name a file.
        plain = Daemon(BINARY, log_level="warn")
        self.addCleanup(plain.cleanup)
        plain.start()
        p = self.assertProblem(plain.request("POST", "/v1/plans:validate", with_dataset("x.jsonl")),
                               422, "invalid-plan", paths=["/workload/dataset/path"])
        self.assertIn("dataset_dir", p["errors"][0]["message"])

        d = Daemon(BINARY, args=["--dataset-dir", dsdir.name], log_level="warn")
        self.addCleanup(d.cleanup)
        d.start()
        r = d.request("POST", "/v1/plans:validate", with_dataset("chat.jsonl"))
        self.assertEqual(r.status, 200, r)
        # The echoed plan keeps the relative path: dataset_dir's location stays private.
        self.assertNotIn(dsdir.name.encode(), r.body)
        self.assertIn(b"chat.jsonl", r.body)
        started = time.monotonic()
        for path in ("/etc/shadow", "../../../etc/passwd", "missing.jsonl", "escape.jsonl",
                     "fifo.jsonl", "broken.jsonl"):
            for route in ("/v1/plans:validate", "/v1/jobs"):
                p = self.assertProblem(d.request("POST", route, with_dataset(path)), 422,
                                       "invalid-plan", paths=["/workload/dataset/path"])
                message = p["errors"][0]["message"]
                self.assertNotIn("do-not-echo", message)
                self.assertNotIn("root:", message)
                self.assertNotIn(dsdir.name, message)  # the directory layout stays private
        self.assertLess(time.monotonic() - started, 20)  # the FIFO did not block anything
        self.assertEqual(d.request("GET", "/healthz").status, 200)

        # A job stores the relative path and resolves it again when it runs.
        job_id = d.submit(with_dataset("chat.jsonl"))
        d.wait_state(job_id, "succeeded", 120)
        res = d.get_json("/v1/jobs/%s/results" % job_id)
        self.assertNotIn(dsdir.name, json.dumps(res))
        self.assertEqual(res["targets"][0]["workload"]["source"], "dataset")
        self.assertGreater(res["targets"][0]["phases"][0]["steps"][0]["stats"]["counts"]
                           ["completed_ok"], 0)


class OpenToNetworkTest(unittest.TestCase):
    def test_no_tokens_beyond_loopback_is_warned_at_start_and_in_readyz(self):
        # Issue 23 #5: listening on 0.0.0.0 without tokens no longer starts silently.
        d = Daemon(BINARY, args=["--listen-address", "0.0.0.0"], log_level="info")
        self.addCleanup(d.cleanup)
        d.start()
        ready = d.get_json("/readyz")
        self.assertEqual(ready["status"], "ready")
        self.assertIn("no tokens", ready["warnings"][0])
        self.assertIn("SECURITY:", d.log_text())
        quiet = Daemon(BINARY, log_level="info")  # loopback: nothing to warn about
        self.addCleanup(quiet.cleanup)
        quiet.start()
        self.assertNotIn("warnings", quiet.get_json("/readyz"))
        self.assertNotIn("SECURITY:", quiet.log_text())


class AuthTest(unittest.TestCase, ProblemAssertions):
    def test_tokens(self):
        d = Daemon(BINARY, args=["--admin-tokens", ADMIN, "--read-tokens", READ],
                   log_level="warn")
        self.addCleanup(d.cleanup)
        d.forbidden = [ADMIN, READ]
        d.start()
        # Open: health; needs a token: the API.
        self.assertEqual(d.request("GET", "/healthz").status, 200)
        self.assertEqual(d.request("GET", "/readyz").status, 200)
        r = d.request("GET", "/v1/jobs")
        self.assertProblem(r, 401, "unauthorized")
        self.assertIn("Bearer", r.headers.get("www-authenticate", ""))
        self.assertProblem(d.request("GET", "/v1/jobs", token="wrong-token-0123456789"), 401)
        self.assertProblem(d.request("GET", "/v1/jobs", headers={"Authorization": ADMIN}), 401)
        self.assertProblem(d.request("POST", "/v1/jobs", plan()), 401)
        # Read token: reads, never writes.
        self.assertEqual(d.request("GET", "/v1/jobs", token=READ).status, 200)
        self.assertEqual(d.request("GET", "/v1/profiles", token=READ).status, 200)
        self.assertProblem(d.request("POST", "/v1/jobs", plan(), token=READ), 403, "forbidden")
        # Admin submits; read can follow the job but not cancel or delete it.
        job_id = d.submit(long_plan("auth"), token=ADMIN)
        self.assertEqual(d.job(job_id, token=READ)["id"], job_id)
        self.assertProblem(d.request("GET", "/v1/jobs/" + job_id), 401)
        self.assertProblem(d.request("POST", "/v1/jobs/%s:cancel" % job_id, token=READ), 403)
        self.assertProblem(d.request("DELETE", "/v1/jobs/" + job_id, token=READ), 403)
        self.assertProblem(d.request("POST", "/v1/jobs/%s:resume" % job_id, token=READ), 403)
        d.wait_state(job_id, "running", 30, token=READ)
        r = d.request("POST", "/v1/jobs/%s:cancel" % job_id, token=ADMIN)
        self.assertEqual(r.status, 202, r)
        d.wait_state(job_id, "cancelled", 30, token=READ)
        # `llmcapd report JOB_ID` reaches a daemon that wants a token: --host/--port/--token
        # (or env LLMCAP_TOKEN); without one it says which flag is missing.
        cmd = [BINARY, "report", job_id, "--host", "127.0.0.1", "--port", str(d.port),
               "--format", "markdown"]
        env = {k: v for k, v in os.environ.items() if k != "LLMCAP_TOKEN"}
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=30, env=env)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("--token", r.stderr)
        r = subprocess.run(cmd + ["--token", READ], capture_output=True, text=True, timeout=30,
                           env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("# Capacity report", r.stdout)
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=30,
                           env=dict(env, LLMCAP_TOKEN=READ))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertProblem(d.request("DELETE", "/v1/jobs/" + job_id, token=READ), 403)
        self.assertEqual(d.request("DELETE", "/v1/jobs/" + job_id, token=ADMIN).status, 204)
        self.assertEqual(d.request("GET", "/v1/jobs/" + job_id, token=READ).status, 404)
        d.signal(signal.SIGTERM)
        self.assertEqual(d.wait(20), 0)
        log = d.log_text()
        self.assertNotIn(ADMIN, log)
        self.assertNotIn(READ, log)


class LimitsTest(unittest.TestCase, ProblemAssertions):
    def test_queue_full_429_then_shutdown_503(self):
        d = Daemon(BINARY, args=["--max-queued-jobs", "1", "--shutdown-grace-s", "3"],
                   log_level="warn")
        self.addCleanup(d.cleanup)
        d.start()
        running = d.submit(long_plan("runs"))
        d.wait_state(running, "running", 30)
        queued = d.submit(plan("waits"))
        self.assertEqual(d.job(queued)["state"], "queued")
        r = d.request("POST", "/v1/jobs", plan("refused"))
        self.assertProblem(r, 429, "queue-full")
        self.assertTrue(r.headers.get("retry-after"), r.headers)
        # An Idempotency-Key does not get around the limit, and leaves nothing behind.
        r = d.request("POST", "/v1/jobs", plan("refused-keyed"),
                      headers={"Idempotency-Key": "full-queue"})
        self.assertProblem(r, 429, "queue-full")
        self.assertTrue(r.headers.get("retry-after"), r.headers)
        names = {j["targets"][0]["name"] for j in d.get_json("/v1/jobs")["jobs"]}
        self.assertEqual(len(d.get_json("/v1/jobs")["jobs"]), 2, names)

        # SIGTERM while a job runs and a watcher is connected: draining answers 503, the event
        # stream ends, then the process exits 0 after the grace period with the running job
        # interrupted (resumable) and the queued one kept.
        watched = {}

        def watch():
            try:
                watched["events"] = d.events(running, timeout_s=30)[1]
            except Exception as e:  # noqa: BLE001 - reported by the assertion below
                watched["error"] = e

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        time.sleep(0.5)
        d.signal(signal.SIGTERM)
        deadline = time.monotonic() + 5
        r = None
        while time.monotonic() < deadline:
            r = d.request("GET", "/readyz")
            if r.status == 503:
                break
            time.sleep(0.05)
        self.assertProblem(r, 503, "shutting-down")
        self.assertProblem(d.request("POST", "/v1/jobs", plan("late")), 503, "shutting-down")
        self.assertEqual(d.request("GET", "/healthz").status, 200)  # alive while draining
        started = time.monotonic()
        rc = d.wait(3 + 15)
        self.assertEqual(rc, 0, d.log_text()[-2000:])
        self.assertLess(time.monotonic() - started, 3 + 10)
        watcher.join(10)
        self.assertFalse(watcher.is_alive(), "the event stream outlived the daemon")
        self.assertNotIn("error", watched, watched)
        self.assertIn("progress", [t for t, _ in watched["events"]])
        db = sqlite3.connect(d.db_path)
        try:
            self.assertEqual(db.execute("PRAGMA integrity_check").fetchone()[0], "ok")
            states = dict(db.execute("SELECT id, state FROM jobs").fetchall())
        finally:
            db.close()
        self.assertEqual(states[running], "interrupted")
        self.assertEqual(states[queued], "queued")


def percentile_type7(values, p):
    """Hyndman-Fan type 7 (linear interpolation between closest ranks), as docs/metrics.md."""
    xs = sorted(values)
    h = (len(xs) - 1) * p / 100.0
    lo = int(h)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (h - lo) * (xs[hi] - xs[lo])


def next_link(r):
    """The ?after= URL of a Link: <...>; rel="next" header, or None."""
    link = r.headers.get("link")
    if link is None:
        return None
    url, _, rel = link.partition(";")
    assert rel.strip() == 'rel="next"', link
    assert url.startswith("<") and url.endswith(">"), link
    return url[1:-1]


class StallingTarget(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible target that lists its model at once and then never answers a
    completion (each request thread sleeps until the test ends)."""

    def log_message(self, *args):
        pass

    def do_GET(self):
        body = json.dumps({"object": "list", "data": [{"id": "stall", "object": "model"}]})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        time.sleep(60)


class JobDurationCapTest(unittest.TestCase):
    """Issue 35 #6: max_job_duration_s holds while the job runs, not only for its estimate. A
    request-count step's length depends on the target; on one that stalls, the job is stopped
    at the cap and fails naming it, its estimate well below the cap."""

    def test_job_stopped_at_max_job_duration(self):
        target = http.server.ThreadingHTTPServer(("127.0.0.1", 0), StallingTarget)
        target.daemon_threads = True
        threading.Thread(target=target.serve_forever, daemon=True).start()
        self.addCleanup(target.shutdown)
        cap_s = 4
        d = Daemon(BINARY, args=["--max-job-duration-s", str(cap_s)], log_level="warn")
        self.addCleanup(d.cleanup)
        d.start()
        doc = plan("stalls", levels=())
        doc["targets"] = [{"name": "stalls", "base_url": "http://127.0.0.1:%d" % target.server_port,
                           "model": "stall", "price_per_hour": 1.0}]
        doc["workload"]["output_tokens"] = {"fixed": 8}
        doc["phases"] = [{"kind": "concurrency_sweep", "levels": [1], "requests": 2,
                          "warmup_s": 0}]
        r = d.request("POST", "/v1/plans:validate", doc)
        self.assertEqual(r.status, 200, r)
        self.assertLess(r.json()["estimated_duration_s"], cap_s)
        job = d.submit(doc)
        started = time.monotonic()
        j = d.wait_job(job, lambda j: j["state"] in ("failed", "succeeded", "cancelled"), 60,
                       "the job ends")
        took = time.monotonic() - started
        self.assertEqual(j["state"], "failed", j)
        self.assertIn("max_job_duration_s", j["error"])
        self.assertGreaterEqual(took, cap_s - 0.5)


class SamplesExportTest(unittest.TestCase, ProblemAssertions):
    """GET /v1/jobs/{id}/requests (issue 22): every stored row by default, target/phase/step/
    in_window on each, ?in_window=true, and a ?limit= cap announced by a Link header before the
    body (so CSV stays plain CSV)."""

    @classmethod
    def setUpClass(cls):
        cls.d = Daemon(BINARY, log_level="warn")
        cls.d.start()
        # Warm-up of 1 s: the warm-up and drain requests are stored but are not in the window.
        r = cls.d.request("POST", "/v1/jobs",
                          plan("export", levels=(2, 4), duration_s=3, warmup_s=1))
        assert r.status == 201, r
        cls.job_id = r.json()["id"]
        cls.d.wait_state(cls.job_id, "succeeded", 120)
        cls.results = cls.d.get_json("/v1/jobs/%s/results" % cls.job_id)

    @classmethod
    def tearDownClass(cls):
        cls.d.cleanup()

    def stored_count(self):
        db = sqlite3.connect(self.d.db_path)
        try:
            return db.execute("SELECT COUNT(*) FROM request_samples r JOIN steps s"
                              " ON s.id = r.step_id WHERE s.job_id = ?",
                              (self.job_id,)).fetchone()[0]
        finally:
            db.close()

    def ndjson(self, query=""):
        r = self.d.request("GET", "/v1/jobs/%s/requests%s" % (self.job_id, query),
                           headers={"Accept": "application/x-ndjson"})
        self.assertEqual(r.status, 200, r)
        return r, [json.loads(line) for line in r.text.splitlines() if line]

    def csv_rows(self, query=""):
        r = self.d.request("GET", "/v1/jobs/%s/requests%s" % (self.job_id, query),
                           headers={"Accept": "text/csv"})
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.headers["content-type"].startswith("text/csv"), r.headers)
        return r, list(csv.DictReader(io.StringIO(r.text)))

    def steps(self):
        # By the export's step number: as `llmcapd run` prints it ([N/M]), the results'
        # global_step (from 0) + 1.
        return {s["global_step"] + 1: (t["name"], ph["name"], s)
                for t in self.results["targets"] for ph in t["phases"] for s in ph["steps"]}

    def test_every_row_with_target_phase_step_and_window(self):
        stored = self.stored_count()
        r, rows = self.ndjson()
        self.assertIsNone(r.headers.get("link"))  # complete: nothing to announce
        self.assertEqual(len(rows), stored)
        _, table = self.csv_rows()
        self.assertEqual(len(table), stored)
        self.assertEqual([int(x["id"]) for x in table], [row["id"] for row in rows])

        steps = self.steps()
        self.assertEqual(set(steps), {row["step"] for row in rows})
        for row, line in zip(rows, table):
            target, phase, _ = steps[row["step"]]
            self.assertEqual((row["target"], row["phase"]), (target, phase), row)
            self.assertEqual((line["target"], line["phase"], int(line["step"])),
                             (target, phase, row["step"]))
            self.assertIsInstance(row["in_window"], bool)
            self.assertEqual(line["in_window"], "true" if row["in_window"] else "false")
        # Warm-up (and drain) requests are stored and marked out of the window.
        self.assertTrue(any(not row["in_window"] for row in rows))

        for seq, (_, _, step) in steps.items():
            stats = step["stats"]
            mine = [row for row in rows if row["step"] == seq]
            inside = [row for row in mine if row["in_window"]]
            # The rows the step's figures are computed from.
            self.assertEqual(len(inside), stats["counts"]["intended"], seq)
            for row in mine:
                self.assertEqual(row["in_window"],
                                 stats["window_start_ns"] <= row["t_intended_ns"]
                                 < stats["window_end_ns"], row)
            ok = [row for row in inside if row["error"] == "none" and row["t_end_ns"] >= 0]
            self.assertEqual(len(ok), stats["counts"]["completed_ok"], seq)
            reported = stats["ttft_ms"]["p95"]
            # JSON lines carry ns/1e6; the summary is rounded to 4 decimals of a ms.
            self.assertAlmostEqual(percentile_type7([x["ttft_ms"] for x in ok], 95), reported,
                                   delta=1e-3)
            # CSV carries 3 decimals (1 us): still the reported P95 within that rounding.
            ok_ids = {x["id"] for x in ok}
            csv_ttft = [float(x["ttft_ms"]) for x in table if int(x["id"]) in ok_ids]
            self.assertAlmostEqual(percentile_type7(csv_ttft, 95), reported, delta=1e-3)
            # All rows, warm-up included, would not give the reported figure in general; the
            # in-window filter gives exactly the window's rows.
            _, filtered = self.ndjson("?step=%d&in_window=true" % seq)
            self.assertEqual([x["id"] for x in filtered], [x["id"] for x in inside])
        _, filtered_csv = self.csv_rows("?in_window=true")
        self.assertEqual([int(x["id"]) for x in filtered_csv],
                         [row["id"] for row in rows if row["in_window"]])

    def test_limit_cut_is_announced_by_a_link_header(self):
        _, everything = self.ndjson()
        ids = [row["id"] for row in everything]
        self.assertGreater(len(ids), 7)
        # Follow the announced cursor page by page: the pages add up to the whole export.
        seen = []
        url = "/v1/jobs/%s/requests?limit=3" % self.job_id
        while url is not None:
            r = self.d.request("GET", url, headers={"Accept": "text/csv"})
            self.assertEqual(r.status, 200, r)
            page = list(csv.DictReader(io.StringIO(r.text)))  # plain CSV, nothing after the rows
            self.assertLessEqual(len(page), 3)
            url = next_link(r)
            if url is not None:
                self.assertEqual(len(page), 3)
                self.assertIn("after=%s" % page[-1]["id"], url)
            seen.extend(int(x["id"]) for x in page)
        self.assertEqual(seen, ids)
        # The same with the in-window filter (kept in the announced link).
        inside = [row["id"] for row in everything if row["in_window"]]
        seen = []
        url = "/v1/jobs/%s/requests?limit=4&in_window=true" % self.job_id
        while url is not None:
            r, page = self.ndjson(url.split("/requests", 1)[1])
            url = next_link(r)
            if url is not None:
                self.assertIn("in_window=true", url)
            seen.extend(x["id"] for x in page)
        self.assertEqual(seen, inside)
        # A cap at or above the rows left cuts nothing: no Link.
        r, rows = self.ndjson("?limit=%d" % len(ids))
        self.assertIsNone(r.headers.get("link"))
        self.assertEqual(len(rows), len(ids))
        r, rows = self.ndjson("?limit=%d&after=%d" % (len(ids) - 2, ids[1]))
        self.assertIsNone(r.headers.get("link"))
        self.assertEqual([x["id"] for x in rows], ids[2:])

    def test_bad_queries_name_the_field(self):
        base = "/v1/jobs/%s/requests" % self.job_id
        self.assertProblem(self.d.request("GET", base + "?in_window=yes"), 400,
                           paths=["in_window"])
        self.assertProblem(self.d.request("GET", base + "?limit=0"), 400, paths=["limit"])
        self.assertProblem(self.d.request("GET", base + "?limit=100001"), 400, paths=["limit"])
        self.assertProblem(self.d.request("GET", base + "?after=-1"), 400, paths=["after"])
        self.assertProblem(self.d.request("GET", base + "?after=999999999"), 400,
                           paths=["after"])
        self.assertProblem(self.d.request("GET", base + "?step=99"), 404, paths=["step"])
        # Steps are numbered from 1 (as printed): 0 is no step number.
        self.assertProblem(self.d.request("GET", base + "?step=0"), 400, paths=["step"])
        self.assertProblem(self.d.request("GET", base + "?step=-1"), 400, paths=["step"])

    def test_csv_has_every_json_lines_field(self):
        # Issue 40 #6: the CSV lacked ttft_service_ms and max_itl_ms; every scalar field of the
        # JSON lines is a CSV column with the same value (3 decimals of a ms; null is empty).
        _, rows = self.ndjson()
        _, table = self.csv_rows()
        self.assertEqual(len(table), len(rows))
        for row, line in zip(rows, table):
            self.assertEqual(set(line), set(row) - {"token_times_ns"})
            for name in ("ttft_ms", "ttft_service_ms", "tpot_ms", "e2e_ms", "max_itl_ms"):
                if row[name] is None:
                    self.assertEqual(line[name], "", (name, row))
                else:
                    self.assertAlmostEqual(float(line[name]), row[name], delta=5e-4 + 1e-9,
                                           msg=(name, row["id"]))
        self.assertTrue(any(row["max_itl_ms"] is not None for row in rows))


if __name__ == "__main__":
    if len(sys.argv) < 2 or not os.access(sys.argv[1], os.X_OK):
        sys.exit("usage: daemon_api_test.py PATH/TO/llmcapd [unittest args]")
    BINARY = os.path.abspath(sys.argv[1])
    unittest.main(argv=[sys.argv[0]] + sys.argv[2:], verbosity=2)

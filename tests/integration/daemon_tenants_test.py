#!/usr/bin/env python3
"""Tenants (issue 35 #4, docs/security.md "Tenants") against the real `llmcapd serve` binary.

Usage: daemon_tenants_test.py PATH/TO/llmcapd [unittest args]

One daemon with two tenants (teamA: an admin and a read token; teamB: an admin token), a global
admin token (tenant "*") and a legacy admin_tokens token (the tenant "default"). Team B must not
list, read, cancel, resume or delete team A's jobs, nor read their results, samples, report,
events, compare or agent routes: every one answers 404, exactly as an unknown id does. The same
Idempotency-Key gives each tenant its own job. The global token sees both. The log and the audit
table name the tenant and the token id (first 8 hex digits of SHA-256) and never a token.
"""

import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llmcapd_harness import Daemon, plan  # noqa: E402

BINARY = None
A_ADMIN = "teamA-admin-token-0123456789"
A_READ = "teamA-read-token-0123456789"
B_ADMIN = "teamB-admin-token-0123456789"
GLOBAL = "global-admin-token-0123456789"
LEGACY = "legacy-admin-token-0123456789"
TOKENS = [A_ADMIN, A_READ, B_ADMIN, GLOBAL, LEGACY]


def token_id(token):
    return hashlib.sha256(token.encode()).hexdigest()[:8]


def long_plan(name="long"):
    return plan(name, levels=(1,), duration_s=60, warmup_s=0)


class TenantsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon(BINARY, args=[
            "--admin-tokens", LEGACY,
            "--tenant-tokens", ",".join(["teamA:admin:" + A_ADMIN, "teamA:read:" + A_READ,
                                         "teamB:admin:" + B_ADMIN, "*:admin:" + GLOBAL]),
            "--shutdown-grace-s", "2"], log_level="info")
        cls.d.forbidden = list(TOKENS)  # no response body may contain a token
        cls.d.start()
        d = cls.d
        # Team A: a finished job (with an idempotency key) and a running one.
        key = {"Idempotency-Key": "shared-key-1"}
        cls.tiny = plan("tiny", levels=(1,), duration_s=1, warmup_s=0)
        r = d.request("POST", "/v1/jobs", cls.tiny, headers=key, token=A_ADMIN)
        assert r.status == 201, r
        cls.a_done = r.json()["id"]
        d.wait_state(cls.a_done, "succeeded", 90, token=A_ADMIN)
        cls.a_long = d.submit(long_plan(), token=A_ADMIN)
        d.wait_state(cls.a_long, "running", 60, token=A_ADMIN)

    @classmethod
    def tearDownClass(cls):
        try:
            cls.d.signal(signal.SIGTERM)
            cls.d.wait(30)
        finally:
            cls.d.cleanup()

    def assertNotFoundLikeUnknown(self, method, path_of, job_id, token, body=None):
        """404 for another tenant's job, with the very problem an unknown id gets."""
        unknown = "job_01J00000000000000000000000"
        hidden = self.d.request(method, path_of(job_id), body, token=token)
        absent = self.d.request(method, path_of(unknown), body, token=token)
        self.assertEqual(hidden.status, 404, (method, path_of(job_id), hidden))
        self.assertEqual(absent.status, 404, (method, path_of(unknown), absent))
        self.assertEqual(hidden.text.replace(job_id, "ID"), absent.text.replace(unknown, "ID"))

    def test_1_other_tenant_gets_404_everywhere(self):
        d = self.d
        for job_id in (self.a_done, self.a_long):
            for method, path_of, body in [
                    ("GET", lambda i: "/v1/jobs/" + i, None),
                    ("GET", lambda i: "/v1/jobs/%s/results" % i, None),
                    ("GET", lambda i: "/v1/jobs/%s/requests" % i, None),
                    ("GET", lambda i: "/v1/jobs/%s/report" % i, None),
                    ("GET", lambda i: "/v1/jobs/%s/events" % i, None),
                    ("GET", lambda i: "/v1/jobs/%s/agents/manifest" % i, None),
                    ("GET", lambda i: "/v1/compare?jobs=" + i, None),
                    ("POST", lambda i: "/v1/jobs/%s:cancel" % i, None),
                    ("POST", lambda i: "/v1/jobs/%s:resume" % i, None),
                    ("DELETE", lambda i: "/v1/jobs/" + i, None),
                    ("POST", lambda i: "/v1/jobs/%s/shards/0/results" % i, {"steps": []})]:
                self.assertNotFoundLikeUnknown(method, path_of, job_id, B_ADMIN, body)
        # The legacy admin token is the tenant "default": team A's jobs are not its either.
        self.assertEqual(d.request("GET", "/v1/jobs/" + self.a_done, token=LEGACY).status, 404)
        # Nothing B tried touched A's jobs.
        self.assertEqual(d.job(self.a_long, token=A_ADMIN)["state"], "running")
        self.assertEqual(d.job(self.a_done, token=A_ADMIN)["state"], "succeeded")
        # Team A's read token sees A's jobs but may not act on them (403).
        self.assertEqual(d.request("GET", "/v1/jobs/" + self.a_done, token=A_READ).status, 200)
        self.assertEqual(d.request("POST", "/v1/jobs/%s:cancel" % self.a_long,
                                   token=A_READ).status, 403)

    def test_2_listings_and_compare_filter_by_tenant(self):
        d = self.d
        ids_b = [j["id"] for j in d.get_json("/v1/jobs", token=B_ADMIN)["jobs"]]
        self.assertNotIn(self.a_done, ids_b)
        self.assertNotIn(self.a_long, ids_b)
        listing_a = d.get_json("/v1/jobs", token=A_READ)["jobs"]
        self.assertEqual({self.a_done, self.a_long} - {j["id"] for j in listing_a}, set())
        for j in listing_a:
            self.assertEqual(j["tenant"], "teamA", j)
            self.assertEqual(j["submitted_by"], "token:" + token_id(A_ADMIN), j)
        index = d.request("GET", "/", token=B_ADMIN).text
        self.assertNotIn(self.a_done, index)
        r = d.request("GET", "/v1/compare?jobs=%s,%s" % (self.a_done, self.a_done), token=A_READ)
        self.assertEqual(r.status, 200, r)

    def test_3_same_idempotency_key_is_another_tenants_own_job(self):
        d = self.d
        key = {"Idempotency-Key": "shared-key-1"}
        r = d.request("POST", "/v1/jobs", self.tiny, headers=key, token=B_ADMIN)
        self.assertEqual(r.status, 201, r)
        b_job = r.json()
        self.assertNotEqual(b_job["id"], self.a_done)
        self.assertEqual(b_job["tenant"], "teamB")
        # Repeating it gives B its own job back; A's key still gives A's.
        again = d.request("POST", "/v1/jobs", self.tiny, headers=key, token=B_ADMIN)
        self.assertEqual((again.status, again.json()["id"]), (200, b_job["id"]))
        mine = d.request("POST", "/v1/jobs", self.tiny, headers=key, token=A_ADMIN)
        self.assertEqual((mine.status, mine.json()["id"]), (200, self.a_done))
        # A cannot see B's job either; the global admin sees both tenants.
        self.assertEqual(d.request("GET", "/v1/jobs/" + b_job["id"], token=A_ADMIN).status, 404)
        every = {j["id"]: j["tenant"]
                 for j in d.get_json("/v1/jobs?limit=1000", token=GLOBAL)["jobs"]}
        self.assertEqual(every.get(self.a_done), "teamA")
        self.assertEqual(every.get(b_job["id"]), "teamB")
        self.assertEqual(d.request("GET", "/v1/jobs/%s/results" % self.a_done,
                                   token=GLOBAL).status, 200)
        cancel = d.request("POST", "/v1/jobs/%s:cancel" % b_job["id"], token=GLOBAL)
        self.assertIn(cancel.status, (200, 202), cancel)
        metrics = d.request("GET", "/metrics").text
        self.assertIn('llmcap_jobs_submitted_total{kind="measured",tenant="teamB"} 1', metrics)
        self.assertIn('llmcap_jobs_submitted_total{kind="measured",tenant="teamA"} 2', metrics)

    def test_4_owner_acts_and_every_write_names_tenant_and_token_id(self):
        d = self.d
        r = d.request("POST", "/v1/jobs/%s:cancel" % self.a_long, token=A_ADMIN)
        self.assertIn(r.status, (200, 202), r)
        d.wait_state(self.a_long, "cancelled", 60, token=A_ADMIN)
        r = d.request("DELETE", "/v1/jobs/" + self.a_long, token=GLOBAL)
        self.assertEqual(r.status, 204, r)
        log = d.log_text()
        self.assertIn("job.create %s tenant=teamA token=%s" % (self.a_done, token_id(A_ADMIN)),
                      log)
        self.assertIn("job.cancel %s tenant=teamA token=%s" % (self.a_long, token_id(A_ADMIN)),
                      log)
        self.assertIn("job.delete %s tenant=* token=%s" % (self.a_long, token_id(GLOBAL)), log)
        self.assertIn("tenant=teamB token=%s" % token_id(B_ADMIN), log)
        for t in TOKENS:
            self.assertNotIn(t, log)
        db = sqlite3.connect("file:%s?mode=ro" % d.db_path, uri=True)
        try:
            rows = db.execute("SELECT action, job_id, tenant, token_id, actor, detail "
                              "FROM audit ORDER BY id").fetchall()
            dump = "\n".join(db.iterdump())
        finally:
            db.close()
        self.assertIn(("job.create", self.a_done, "teamA", token_id(A_ADMIN)),
                      [r[:4] for r in rows])
        self.assertIn(("job.cancel", self.a_long, "teamA", token_id(A_ADMIN)),
                      [r[:4] for r in rows])
        self.assertIn(("job.delete", self.a_long, "*", token_id(GLOBAL)), [r[:4] for r in rows])
        for t in TOKENS:
            self.assertNotIn(t, dump)  # no token anywhere in the database


class TenantConfigTest(unittest.TestCase):
    def test_bad_entries_are_refused_without_echoing_the_token(self):
        secret = "secret-token-0123456789-xyz"
        for entry, reason in [("teamA:owner:" + secret, "role"),
                              ("team A:admin:" + secret, "tenant"),
                              ("teamA:admin:short", "16 characters"),
                              ("just-a-token-" + secret, "TENANT:ROLE:TOKEN")]:
            p = subprocess.run([BINARY, "serve", "--port", "0", "--database", ":memory:",
                                "--tenant-tokens", entry],
                               capture_output=True, text=True, timeout=30)
            out = p.stdout + p.stderr
            self.assertNotEqual(p.returncode, 0, out)
            self.assertIn("tenant_tokens[0]", out)
            self.assertIn(reason, out)
            self.assertNotIn(secret, out)
        p = subprocess.run([BINARY, "serve", "--port", "0", "--database", ":memory:",
                            "--admin-tokens", secret, "--tenant-tokens", "teamA:read:" + secret],
                           capture_output=True, text=True, timeout=30)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("given twice", p.stdout + p.stderr)
        self.assertNotIn(secret, p.stdout + p.stderr)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__)
        sys.exit(2)
    BINARY = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)

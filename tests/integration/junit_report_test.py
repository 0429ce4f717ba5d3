#!/usr/bin/env python3
"""JUnit XML of a job's SLA verdicts (issue 40 #2), read by a real consumer: every file is
validated with xmllint (Debian libxml2-utils) against tests/data/junit/junit.xsd, the JUnit
report layout CI systems read, and parsed by Python's XML parser for its content.

Covered as a user runs it: `llmcapd predict PLAN --junit FILE` (virtual time: one target passes,
one fails its SLA, exit 1 and the file is written), `llmcapd run PLAN --junit FILE` (a few
seconds against the embedded simulator; nothing written when the run ends in an error),
`llmcapd report RESULTS --format junit` (the same bytes), `GET /v1/jobs/{id}/report?format=junit`
and `llmcapd report JOB --format junit` against a daemon, and hostile texts (markup, quotes,
control characters) escaped into well-formed XML.

Usage: junit_report_test.py LLMCAPD. Skipped (exit 77) without xmllint. ~10 s.
"""
import copy
import csv
import io
import json
import os
import shutil
import subprocess
import sys
import unittest
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli_scratch import REPO, CliScratch, binary_from_argv  # noqa: E402
from llmcapd_harness import Daemon, plan  # noqa: E402

if shutil.which("xmllint") is None:
    print("junit_report_test: SKIPPED: no xmllint (apt-get install libxml2-utils)")
    sys.exit(77)

BINARY = binary_from_argv()
SCRATCH = CliScratch(BINARY, "llmcap-junit-test-")
XSD = os.path.join(REPO, "tests", "data", "junit", "junit.xsd")

# Virtual time, about a second: under P95 TPOT <= 16 ms the simulated A100 qualifies and the
# RTX 4090 fails at every rate tried (its TPOT at the lowest load is above the bound).
MIXED = {
    "version": 1, "name": "junit-mixed", "seed": 7,
    "targets": [{"name": "a100", "base_url": "sim://a100-80g-pcie/llama-3.1-8b",
                 "price_per_hour": 1.5},
                {"name": "rtx4090", "base_url": "sim://rtx4090-48g/llama-3.1-8b",
                 "price_per_hour": 0.6}],
    "workload": {"input_tokens": 512, "output_tokens": 128},
    "sla": {"ttft_ms": {"p95": 1000}, "tpot_ms": {"p95": 16}, "min_requests": 20},
    "phases": [{"kind": "capacity_search", "low_rps": 0.5, "high_rps": 16, "duration_s": 20,
                "warmup_s": 3, "max_steps": 8}],
}


def llmcapd(*args, timeout=120):
    return SCRATCH.run(*args, timeout=timeout)


def validate(test, path):
    """xmllint: well-formed and valid against the JUnit schema."""
    r = subprocess.run(["xmllint", "--noout", "--schema", XSD, path], capture_output=True,
                       text=True, timeout=60)
    if r.returncode != 0:
        with open(path, encoding="utf-8", errors="replace") as f:
            test.fail("xmllint rejected %s:\n%s\n%s" % (path, r.stderr, f.read()[:3000]))


def cases(root, suite):
    s = root.find("testsuite[@name='%s']" % suite)
    assert s is not None, "no testsuite %s" % suite
    return {c.get("name"): c for c in s.findall("testcase")}


class Cli(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.plan = SCRATCH.write("mixed.json", MIXED)
        cls.run_result = llmcapd("predict", cls.plan, "--out", "mixed.results.json",
                                 "--junit", "mixed.xml")
        cls.results = SCRATCH.load("mixed.results.json")

    def test_predict_writes_junit_also_when_the_sla_fails(self):
        r = self.run_result
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)  # a target failed its SLA
        self.assertIn("junit:   mixed.xml", r.stdout)
        path = SCRATCH.path("mixed.xml")
        validate(self, path)
        root = ET.parse(path).getroot()
        self.assertEqual(root.tag, "testsuites")
        self.assertEqual([s.get("name") for s in root.findall("testsuite")], ["a100", "rtx4090"])
        # Totals are the sums of the suites, and the suites count their cases.
        for attr in ("tests", "failures", "errors", "skipped"):
            per_suite = []
            for s in root.findall("testsuite"):
                cs = s.findall("testcase")
                counted = {"tests": len(cs),
                           "failures": sum(1 for c in cs if c.find("failure") is not None),
                           "errors": sum(1 for c in cs if c.find("error") is not None),
                           "skipped": sum(1 for c in cs if c.find("skipped") is not None)}[attr]
                self.assertEqual(int(s.get(attr)), counted, "%s of %s" % (attr, s.get("name")))
                per_suite.append(counted)
            self.assertEqual(int(root.get(attr)), sum(per_suite), attr)

        verdicts = {t["name"]: t["verdict"] for t in self.results["targets"]}
        self.assertEqual(verdicts["a100"]["outcome"], "pass")
        self.assertEqual(verdicts["rtx4090"]["outcome"], "fail")
        a100 = cases(root, "a100")
        self.assertIsNone(a100["qualified_capacity"].find("failure"))
        self.assertIn("qualified capacity", a100["qualified_capacity"].findtext("system-out"))
        self.assertTrue(all(c.find("failure") is None for c in a100.values()))
        # The failing target: its verdict, and the TPOT bound failed with value, bound and load,
        # in the words and figures of the verdict in the results document.
        rtx = cases(root, "rtx4090")
        failure = rtx["qualified_capacity"].find("failure")
        self.assertEqual(failure.get("type"), "sla")
        self.assertEqual(failure.get("message"), "FAIL: " + verdicts["rtx4090"]["statement"])
        tpot = rtx["tpot_p95"].find("failure")
        self.assertIsNotNone(tpot, ET.tostring(rtx["tpot_p95"]))
        step = min((s for p in next(t for t in self.results["targets"]
                                    if t["name"] == "rtx4090")["phases"] for s in p["steps"]
                    if s["verdict"]["outcome"] == "fail"),
                   key=lambda s: s["params"]["rate_rps"])
        reason = next(x for x in step["verdict"]["reasons"] if x["code"] == "tpot_p95")
        self.assertEqual(tpot.get("message"), "%s at %s (capacity_search)" %
                         (reason["text"], step["label"]))
        self.assertRegex(tpot.get("message"), r"^tpot P95 \d+\.\d ms > 16\.0 ms limit at ")
        self.assertAlmostEqual(float(rtx["tpot_p95"].get("time")), step["stats"]["window_s"])

    def test_report_renders_the_same_file_from_the_results(self):
        r = llmcapd("report", "mixed.results.json", "--format", "junit", "--out", "report.xml")
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(SCRATCH.path("report.xml"), "rb") as a, open(SCRATCH.path("mixed.xml"), "rb") as b:
            self.assertEqual(a.read(), b.read())
        r = llmcapd("report", "mixed.results.json", "--format", "xunit")
        self.assertEqual(r.returncode, 2)
        self.assertIn("html, markdown, csv or junit", r.stderr)

    def test_hostile_texts_are_escaped_into_valid_xml(self):
        doc = copy.deepcopy(self.results)
        name = "a<b>&\"c'\x01\x1b\tz"
        doc["plan"] = "plan ]]> <!-- \x7f"
        doc["targets"][1]["name"] = name
        doc["targets"][1]["verdict"]["statement"] = "fail <here> & \"there\"\x00\r\n'end'"
        SCRATCH.write("hostile.json", doc)
        r = llmcapd("report", "hostile.json", "--format", "junit", "--out", "hostile.xml")
        self.assertEqual(r.returncode, 0, r.stderr)
        validate(self, SCRATCH.path("hostile.xml"))
        root = ET.parse(SCRATCH.path("hostile.xml")).getroot()
        self.assertEqual(root.get("name"), "llmcap prediction: plan ]]> <!-- \x7f")
        suite = root.findall("testsuite")[1]
        # Tab kept (a character reference survives attribute normalisation); the other control
        # characters, not XML 1.0 characters, are U+FFFD.
        self.assertEqual(suite.get("name"), "a<b>&\"c'\ufffd\ufffd\tz")
        failure = suite.find("testcase[@name='qualified_capacity']/failure")
        self.assertEqual(failure.get("message"), "FAIL: fail <here> & \"there\"\ufffd\r\n'end'")

    def test_run_writes_junit_and_nothing_after_an_error(self):
        tiny = SCRATCH.write("tiny.json", plan("junit-tiny"))
        r = llmcapd("run", tiny, "--no-out", "--junit", "tiny.xml")
        self.assertIn(r.returncode, (0, 4), r.stdout + r.stderr)
        validate(self, SCRATCH.path("tiny.xml"))
        root = ET.parse(SCRATCH.path("tiny.xml")).getroot()
        self.assertIn("qualified_capacity", cases(root, "a100"))
        # An unreachable target: the run ends in an error (exit 3) without a verdict to report.
        gone = plan("junit-gone", duration_s=1, warmup_s=0, target="gone",
                    base_url="http://127.0.0.1:9")
        r = llmcapd("run", SCRATCH.write("gone.json", gone), "--no-out", "--junit", "gone.xml")
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
        self.assertFalse(os.path.exists(SCRATCH.path("gone.xml")))
        self.assertIn("--junit", llmcapd("run", "--help").stdout)


class DaemonReport(unittest.TestCase):
    def setUp(self):
        self.daemon = Daemon(BINARY).start()
        self.addCleanup(self.daemon.cleanup)

    def test_report_route_and_cli_serve_junit(self):
        d = self.daemon
        r = d.request("POST", "/v1/predictions", MIXED)
        self.assertEqual(r.status, 201, r)
        job_id = r.json()["id"]
        d.wait_state(job_id, "succeeded", 60)
        r = d.request("GET", "/v1/jobs/%s/report?format=junit" % job_id)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.headers["content-type"], "application/xml; charset=utf-8")
        with open(SCRATCH.path("daemon.xml"), "wb") as f:
            f.write(r.body)
        validate(self, SCRATCH.path("daemon.xml"))
        root = ET.fromstring(r.body)
        # rtx4090: its verdict and its TPOT bound at the lowest rate tried.
        self.assertEqual(int(root.get("failures")), 2)
        self.assertEqual({name for name, c in cases(root, "rtx4090").items()
                          if c.find("failure") is not None}, {"qualified_capacity", "tpot_p95"})
        self.assertEqual(root.get("name"), "llmcap prediction: junit-mixed")
        # The format query wins over Accept; a format it does not know is refused.
        r = d.request("GET", "/v1/jobs/%s/report?format=csv" % job_id,
                      headers={"Accept": "text/html"})
        self.assertEqual(r.headers["content-type"], "text/csv; charset=utf-8")
        # Every row names the job (issue 40: the job_id column was empty), here and in
        # `llmcapd report JOB --format csv`.
        rows = list(csv.DictReader(io.StringIO(r.text)))
        self.assertEqual(len(rows), 2)
        self.assertEqual({x["job_id"] for x in rows}, {job_id})
        c = llmcapd("report", job_id, "--format", "csv", "--port", str(d.port))
        self.assertEqual(c.returncode, 0, c.stderr)
        self.assertEqual({x["job_id"] for x in csv.DictReader(io.StringIO(c.stdout))}, {job_id})
        r = d.request("GET", "/v1/jobs/%s/report?format=xunit" % job_id)
        self.assertEqual(r.status, 400, r)
        self.assertEqual(r.headers["content-type"], "application/problem+json")
        self.assertIn("format", r.text)
        # `llmcapd report JOB --format junit` asks the daemon for the same document.
        c = llmcapd("report", job_id, "--format", "junit", "--port", str(d.port))
        self.assertEqual(c.returncode, 0, c.stderr)
        self.assertEqual(c.stdout.encode(), self.daemon.request(
            "GET", "/v1/jobs/%s/report?format=junit" % job_id).body)


if __name__ == "__main__":
    try:
        unittest.main(verbosity=2)
    finally:
        SCRATCH.dir.cleanup()

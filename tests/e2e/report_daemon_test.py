"""End-to-end test of the README's report workflow against the real daemon (Python 3 stdlib).

Usage: report_daemon_test.py PATH/TO/llmcapd [unittest args]

Starts `llmcapd serve` on port 0 with a temporary database, runs two small jobs of one plan on
the embedded A100 simulator, and checks the pages users get from the daemon. The jobs are
predictions (POST /v1/predictions: the same job, storage and report path as a measured job,
server/rest/job_routes.cc, in virtual time): what the pages show must not depend on how busy the
host is (measured 2 s steps under ASan beside the suite came back inconclusive, the comparison
empty and the table wider than 800 px, while the same run alone passed).
  - GET /v1/jobs/JOB/report and `llmcapd report JOB_ID` draw the plan's SLA lines on every
    latency chart (the daemon joins the job's stored plan with its results, as
    `llmcapd run --out` does) and show goodput;
  - GET /v1/compare?jobs=A,B labels series "a100 (A)" / "a100 (B)", not by job id, and compares
    the same-name targets;
  - both pages, loaded in headless Chromium at 1400 px and 800 px with the layout probe
    tests/e2e/report_probe.js, overflow nowhere (the capacity table may scroll in its frame at
    800 px) and keep an SLA line in every latency chart.
The browser check fails with a clear message when /usr/bin/chromium is missing (install the
Debian package `chromium`), like tests/e2e/report_browser_test.cc.
"""

import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from llmcapd_harness import Daemon, plan  # noqa: E402

BINARY = None
CHROMIUM = "/usr/bin/chromium"


def charts(html, prefix):
    """{kind: svg text} of the charts whose data-chart starts with prefix."""
    out = {}
    for m in re.finditer(r'<svg class="chart" data-chart="(%s[^"]*)".*?</svg>' % prefix, html,
                         re.S):
        out.setdefault(m.group(1), m.group(0))
    return out


def probe(html, width, tmp):
    """Findings of report_probe.js for the page in a width-px window (see that file)."""
    with open(os.path.join(HERE, "report_probe.js"), encoding="utf-8") as f:
        script = f.read()
    page = os.path.join(tmp, "page-%d.html" % width)
    with open(page, "w", encoding="utf-8") as f:
        f.write(html.replace("</body>", "<script>" + script + "</script></body>"))
    r = subprocess.run(
        ["timeout", "90", CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
         "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
         "--user-data-dir=" + os.path.join(tmp, "profile"), "--window-size=%d,2000" % width,
         "--virtual-time-budget=5000", "--dump-dom", "file://" + page],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    dom = r.stdout.decode("utf-8", "replace")
    begin = dom.find("PROBE-BEGIN\n")
    end = dom.find("PROBE-END", begin)
    assert begin >= 0 and end > begin, "the probe did not run: " + r.stderr.decode()[-2000:]
    return [line for line in dom[begin + 12:end].splitlines() if line]


class ReportDaemonTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon(BINARY)
        cls.d.start()
        p = plan("report-e2e", levels=(1, 2), duration_s=2, warmup_s=0.3)
        cls.jobs = []
        for _ in range(2):
            r = cls.d.request("POST", "/v1/predictions", p)
            assert r.status == 201, r
            cls.jobs.append(r.json()["id"])
        for job in cls.jobs:
            cls.d.wait_state(job, "succeeded", 120)

    @classmethod
    def tearDownClass(cls):
        cls.d.kill()
        cls.d.cleanup()

    def assertSlaLines(self, html, what):
        latency = charts(html, "ttft-vs-")
        latency.update(charts(html, "tpot-vs-"))
        self.assertEqual(sorted(latency), ["tpot-vs-concurrency", "ttft-vs-concurrency"], what)
        # The harness plan's SLA: P95 TTFT <= 5000 ms, P95 TPOT <= 250 ms.
        self.assertEqual(latency["ttft-vs-concurrency"].count(
            '<line class="threshold" data-value="5000"'), 1, what)
        self.assertEqual(latency["tpot-vs-concurrency"].count(
            '<line class="threshold" data-value="250"'), 1, what)
        self.assertNotIn('id="no-plan"', html, what)

    def report(self, job, accept="text/html"):
        r = self.d.request("GET", "/v1/jobs/%s/report" % job, headers={"Accept": accept})
        self.assertEqual(r.status, 200, r)
        return r.text

    def test_report_route_and_cli_draw_the_sla_lines_and_goodput(self):
        html = self.report(self.jobs[0])
        self.assertSlaLines(html, "GET /report")
        self.assertIn("Goodput req/s (met SLO)</th>", html)
        self.assertIn("&quot;ttft_ms&quot;", html)  # the plan section holds the stored plan
        md = self.report(self.jobs[0], "text/markdown")
        self.assertIn("| Goodput req/s |", md)

        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "report.html")
            r = subprocess.run([BINARY, "report", self.jobs[0], "--port", str(self.d.port),
                                "--out", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out, encoding="utf-8") as f:
                self.assertSlaLines(f.read(), "llmcapd report JOB_ID")

    def test_compare_labels_jobs_and_pairs_same_name_targets(self):
        a, b = self.jobs
        r = self.d.request("GET", "/v1/compare?jobs=%s,%s" % (a, b))
        self.assertEqual(r.status, 200, r)
        doc = r.json()
        self.assertEqual([t["name"] for t in doc["targets"]], ["a100 (A)", "a100 (B)"])
        self.assertEqual([j["label"] for j in doc["jobs"]], ["A", "B"])
        self.assertEqual(doc["comparison_basis"], "same-name targets")
        self.assertEqual([(c["target"], c["baseline"]) for c in doc["comparison"]],
                         [("a100 (B)", "a100 (A)")])
        html = self.d.request("GET", "/v1/compare?jobs=%s,%s" % (a, b),
                              headers={"Accept": "text/html"}).text
        self.assertSlaLines(html, "GET /v1/compare")
        self.assertIn('data-series="a100 (B)"', html)
        self.assertNotIn('data-series="job_', html)

    def test_pages_fit_in_chromium_at_1400_and_800_px(self):
        if not os.path.exists(CHROMIUM):
            self.fail(CHROMIUM + " is missing: install the Debian package `chromium` "
                      "(deploy/install-deps.sh)")
        a, b = self.jobs
        pages = {
            "report": self.report(a),
            "compare": self.d.request("GET", "/v1/compare?jobs=%s,%s" % (a, b),
                                      headers={"Accept": "text/html"}).text,
        }
        with tempfile.TemporaryDirectory() as tmp:
            for name, html in pages.items():
                for width in (1400, 800):
                    what = "%s at %d px" % (name, width)
                    findings = probe(html, width, tmp)
                    sla = [f for f in findings if f.startswith("sla ")]
                    self.assertEqual(len(sla), 2, (what, findings))
                    for f in sla:
                        self.assertFalse(f.endswith(" 0"), (what, f))
                    bad = [f for f in findings if not f.startswith("sla ") and not (
                        width < 1000 and f.startswith("frame capacity-table "))]
                    self.assertEqual(bad, [], what)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: report_daemon_test.py PATH/TO/llmcapd [unittest args]")
    BINARY = os.path.abspath(sys.argv.pop(1))
    unittest.main()

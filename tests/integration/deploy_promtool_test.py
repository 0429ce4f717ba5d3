#!/usr/bin/env python3
"""deploy_promtool_test: `promtool check config` of deploy/prometheus/prometheus.yml, `promtool
check rules` and `promtool test rules` of the alert rules, and a PromQL syntax check of every
dashboard expression (each written, with Grafana variables replaced by their defaults, as a
recording rule into a temporary file that `promtool check rules` parses).

Usage: deploy_promtool_test.py <repository root>. Prints SKIPPED and exits 77 (skipped) only when promtool
is not installed (deploy/install-deps.sh --with-test-tools installs it). Standard library only."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(__file__), "..", ".."))
PROM = os.path.join(ROOT, "deploy/prometheus")
failures = []


def promtool(*args, expect_ok=True):
    r = subprocess.run(["promtool", *args], capture_output=True, text=True, timeout=60)
    out = (r.stdout + r.stderr).strip()
    ok = r.returncode == 0
    print("$ promtool %s -> %d" % (" ".join(args), r.returncode))
    if ok != expect_ok:
        failures.append("promtool %s: exit %d, expected %s\n%s"
                        % (" ".join(args), r.returncode, "0" if expect_ok else "non-zero", out))
    return out


def dashboard_rules_file(tmp):
    """Writes every dashboard expression as a recording rule; returns (path, count)."""
    with open(os.path.join(ROOT, "deploy/grafana/llmcap-dashboard.json"), encoding="utf-8") as f:
        dash = json.load(f)
    defaults = {"target": ".*", "model": ".*", "__rate_interval": "1m", "__interval": "5s"}
    for v in dash["templating"]["list"]:
        if v.get("type") in ("textbox", "constant"):
            defaults[v["name"]] = v["query"]

    def substitute(expr):
        def repl(m):
            name = m.group(1) or m.group(2)
            if name not in defaults:
                failures.append("dashboard expr %r: unknown variable $%s" % (expr, name))
                return "0"
            return defaults[name]
        return re.sub(r'\$\{(\w+)\}|\$(\w+)', repl, expr)

    rules = []

    def walk(panels):
        for p in panels:
            for t in p.get("targets", []):
                rules.append({"record": "dashboard:panel_%d_%s" % (p["id"], t["refId"]),
                              "expr": substitute(t["expr"])})
            walk(p.get("panels", []))
    walk(dash["panels"])
    path = os.path.join(tmp, "dashboard-exprs.yml")
    with open(path, "w", encoding="utf-8") as f:
        # JSON is YAML: no PyYAML needed to write it.
        json.dump({"groups": [{"name": "dashboard", "rules": rules}]}, f, indent=1)
    return path, len(rules)


def main():
    if shutil.which("promtool") is None:
        print("SKIPPED: promtool not installed (Debian package prometheus; "
              "deploy/install-deps.sh --with-test-tools)")
        return 77  # CTest: SKIP_RETURN_CODE
    promtool("check", "config", os.path.join(PROM, "prometheus.yml"))
    out = promtool("check", "rules", os.path.join(PROM, "llmcap-alerts.yml"))
    if "SUCCESS" in out and not re.search(r"\b([6-9]|\d\d+) rules found", out):
        failures.append("expected at least 6 alert rules: " + out)
    # promtool resolves rule_files relative to the test file's folder.
    out = promtool("test", "rules", os.path.join(PROM, "llmcap-alerts.test.yml"))
    if "SUCCESS" not in out:
        failures.append("alert unit tests did not report SUCCESS:\n" + out)
    with tempfile.TemporaryDirectory() as tmp:
        path, n = dashboard_rules_file(tmp)
        out = promtool("check", "rules", path)
        print("  %d dashboard expressions checked" % n)
        # The syntax check itself must be able to fail.
        bad = os.path.join(tmp, "bad.yml")
        with open(bad, "w") as f:
            json.dump({"groups": [{"name": "bad", "rules": [
                {"record": "x:y", "expr": "sum by (target (rate(llmcap_requests_total[1m]))"}]}]},
                f)
        promtool("check", "rules", bad, expect_ok=False)
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

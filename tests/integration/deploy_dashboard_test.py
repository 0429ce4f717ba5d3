#!/usr/bin/env python3
"""deploy_dashboard_test: checks deploy/grafana/llmcap-dashboard.json and the PromQL of the
dashboard and of deploy/prometheus/llmcap-alerts.yml against the metrics llmcapd and the
simulator really export (parsed from server/daemon_metrics.cc and sim/sim_metrics.cc).

Usage: deploy_dashboard_test.py <repository root>. Exit 0 when every check passes, else 1 with
one line per problem. Needs PyYAML (Debian python3-yaml) for the alert rules."""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import deploy_promql as pq  # noqa: E402

try:
    import yaml  # noqa: E402
except ImportError:
    print("FAIL: PyYAML is required: apt-get install python3-yaml")
    sys.exit(1)

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(__file__), "..", ".."))
DASHBOARD = os.path.join(ROOT, "deploy/grafana/llmcap-dashboard.json")
GENERATOR = os.path.join(ROOT, "deploy/grafana/make_dashboard.py")
ALERTS = os.path.join(ROOT, "deploy/prometheus/llmcap-alerts.yml")
errors = []


def err(msg):
    errors.append(msg)


def all_panels(panels):
    for p in panels:
        yield p
        yield from all_panels(p.get("panels", []))


def check_extractor():
    """The extractor must see through functions, grouping, matchers, offsets and variables,
    and a wrong name must be reported (the test can fail)."""
    cases = {
        'histogram_quantile(0.95, sum by (target, le) (rate(llmcap_ttft_seconds_bucket'
        '{target=~"$target"}[1m])))': ["llmcap_ttft_seconds_bucket"],
        'a_total < 0.9 * (b offset 1d) and on (target) group_left (x) c{l="up"}':
        ["a_total", "b", "c"],
        'rate(vllm:num_preemptions_total{model_name=~"$model"}[1m]) > 1e3':
        ["vllm:num_preemptions_total"],
        'vector($sla_ttft_p95_s)': [],
        'max_over_time(x[7d:1m]) / ignoring (le) y': ["x", "y"],
    }
    for expr, want in cases.items():
        got = pq.metric_names(expr)
        if got != want:
            err("extractor self-check: %r gave %r, want %r" % (expr, got, want))
    if pq.variable_query_names("label_values(llmcap_requests_total, target)") != [
            "llmcap_requests_total"]:
        err("extractor self-check: label_values() not understood")
    known = {"llmcap_x_seconds": "histogram", "llmcap_y_total": "counter"}
    for name, bad in (("llmcap_x_seconds_bucket", False), ("llmcap_x_seconds", True),
                      ("llmcap_y_total", False), ("llmcap_y_total_bucket", True),
                      ("llmcap_z", True), ("up", False)):
        if bool(pq.check_name(name, known)) != bad:
            err("check_name self-check: %s should %sbe rejected" % (name, "" if bad else "not "))


def main():
    check_extractor()
    daemon = pq.exported_metrics(os.path.join(ROOT, "server/daemon_metrics.cc"))
    process = pq.process_metrics(os.path.join(ROOT, "server/process_metrics.cc"))
    sim = pq.exported_metrics(os.path.join(ROOT, "sim/sim_metrics.cc"))
    # Guards against a parser that silently finds nothing (which would make every check pass).
    if len(daemon) < 20 or not all(n.startswith("llmcap_") for n in daemon):
        err("parsed only %d llmcap_* families from server/daemon_metrics.cc: %s"
            % (len(daemon), sorted(daemon)))
    want_process = {"process_cpu_seconds_total": "counter", "process_resident_memory_bytes":
                    "gauge", "process_virtual_memory_bytes": "gauge", "process_open_fds": "gauge",
                    "process_max_fds": "gauge", "process_start_time_seconds": "gauge"}
    if process != want_process:
        err("server/process_metrics.cc exports %r, want the standard %r" % (process, want_process))
    # Renamed in this version (docs/metrics.md): the old names must be gone everywhere.
    for old in ("llmcap_current_step_info", "llmcap_offered_rate_rps", "llmcap_achieved_rate_rps",
                "llmcap_qualified_capacity_rps"):
        if old in daemon:
            err("%s is still exported (renamed in this version)" % old)
    for n in daemon:
        if n.endswith("_rps"):
            err("%s: spell the unit requests_per_second" % n)
    daemon.update(process)
    if len(sim) < 5 or not all(n.startswith("vllm:") for n in sim):
        err("parsed only %d vllm:* families from sim/sim_metrics.cc" % len(sim))
    known = dict(daemon)
    known.update(sim)

    with open(DASHBOARD, encoding="utf-8") as f:
        text = f.read()
    try:
        dash = json.loads(text)
    except json.JSONDecodeError as e:
        err("dashboard JSON does not parse: %s" % e)
        return
    generated = subprocess.run([sys.executable, GENERATOR], check=True, capture_output=True,
                               text=True).stdout
    if json.loads(generated) != dash:
        err("llmcap-dashboard.json differs from make_dashboard.py output: regenerate it "
            "(python3 deploy/grafana/make_dashboard.py > deploy/grafana/llmcap-dashboard.json)")

    if not isinstance(dash.get("schemaVersion"), int) or not 36 <= dash["schemaVersion"] <= 39:
        err("schemaVersion %r: want 36..39" % dash.get("schemaVersion"))
    for key in ("uid", "title"):
        if not dash.get(key):
            err("dashboard has no %s" % key)

    # Template variables.
    variables = {v.get("name"): v for v in dash.get("templating", {}).get("list", [])}
    ds = variables.get("datasource", {})
    if ds.get("type") != "datasource" or ds.get("query") != "prometheus":
        err("variable datasource: want type datasource, query prometheus")
    tv = variables.get("target", {})
    tq = tv.get("query", {})
    tq = tq.get("query") if isinstance(tq, dict) else tq
    if tv.get("type") != "query" or tq != "label_values(llmcap_requests_total, target)":
        err("variable target: want query label_values(llmcap_requests_total, target), got %r"
            % tq)
    sla_defaults = {}
    for name, want in (("sla_ttft_p95_s", 1.0), ("sla_tpot_p95_s", 0.035)):
        v = variables.get(name)
        if not v:
            err("variable %s missing" % name)
            continue
        try:
            sla_defaults[name] = float(v.get("query"))
        except (TypeError, ValueError):
            err("variable %s: default %r is not a number" % (name, v.get("query")))
            continue
        if sla_defaults[name] != want:
            err("variable %s: default %r, want %g (docs/metrics.md §4)"
                % (name, v.get("query"), want))

    exprs = []  # (where, expr)
    for name, v in variables.items():
        if v.get("type") == "query":
            q = v.get("query")
            q = q.get("query") if isinstance(q, dict) else q
            for n in pq.variable_query_names(q):
                exprs.append(("variable %s" % name, n))

    panels = list(all_panels(dash.get("panels", [])))
    if len(panels) < 20:
        err("only %d panels" % len(panels))
    ids = [p.get("id") for p in panels]
    for i in set(ids):
        if not isinstance(i, int):
            err("panel id %r is not an integer" % i)
        elif ids.count(i) > 1:
            err("panel id %d used %d times" % (i, ids.count(i)))
    cells = {}
    panel_exprs = []
    for p in panels:
        where = "panel %s %r" % (p.get("id"), p.get("title"))
        g = p.get("gridPos", {})
        if not all(isinstance(g.get(k), int) for k in "hwxy") or g["x"] + g["w"] > 24:
            err("%s: bad gridPos %r" % (where, g))
        else:
            for x in range(g["x"], g["x"] + g["w"]):
                for y in range(g["y"], g["y"] + g["h"]):
                    if (x, y) in cells:
                        err("%s overlaps %s" % (where, cells[(x, y)]))
                        break
                    cells[(x, y)] = where
                else:
                    continue
                break
        if p.get("type") == "row":
            continue
        if not p.get("title"):
            err("%s: no title" % where)
        dsp = p.get("datasource")
        if not isinstance(dsp, dict) or dsp.get("type") != "prometheus" or \
                dsp.get("uid") not in ("${datasource}", "$datasource"):
            err("%s: datasource must be the prometheus ${datasource} variable, got %r"
                % (where, dsp))
        targets = p.get("targets") or []
        if not targets:
            err("%s: no targets" % where)
        refs = [t.get("refId") for t in targets]
        if len(set(refs)) != len(refs) or None in refs:
            err("%s: refIds missing or repeated: %r" % (where, refs))
        for t in targets:
            if not t.get("expr"):
                err("%s: target %s has no expr" % (where, t.get("refId")))
                continue
            if t.get("datasource", dsp) != dsp:
                err("%s: target %s uses another datasource" % (where, t.get("refId")))
            for var in re.findall(r'\$\{?(\w+)', t["expr"]):
                if var not in variables and not var.startswith("__"):
                    err("%s: expr uses undefined variable $%s" % (where, var))
            panel_exprs.append((where, t["expr"]))
            for n in pq.metric_names(t["expr"]):
                exprs.append((where, n))
        # Verdict panels must map every verdict value to a name.
        if any("llmcap_last_verdict" in t.get("expr", "") for t in targets):
            opts = {}
            for m in p.get("fieldConfig", {}).get("defaults", {}).get("mappings", []):
                opts.update(m.get("options", {}))
            got = {k: v.get("text") for k, v in opts.items()}
            if got != {"1": "pass", "0": "fail", "-1": "inconclusive"}:
                err("%s: verdict value mappings %r, want 1 pass, 0 fail, -1 inconclusive"
                    % (where, got))
        # SLA panels: threshold line at the variable's default and the variable drawn.
        for metric, var in (("llmcap_ttft_seconds", "sla_ttft_p95_s"),
                            ("llmcap_tpot_seconds", "sla_tpot_p95_s")):
            if p.get("type") == "timeseries" and any(
                    metric + "_bucket" in t.get("expr", "") for t in targets) and \
                    "server side" not in p.get("title", ""):
                d = p.get("fieldConfig", {}).get("defaults", {})
                steps = [s.get("value") for s in d.get("thresholds", {}).get("steps", [])]
                if sla_defaults.get(var) not in steps:
                    err("%s: no threshold step at %s default %r (steps %r)"
                        % (where, var, sla_defaults.get(var), steps))
                if d.get("custom", {}).get("thresholdsStyle", {}).get("mode") in (None, "off"):
                    err("%s: thresholds are not drawn" % where)
                if not any("$" + var in t.get("expr", "") for t in targets):
                    err("%s: does not draw $%s" % (where, var))
                for q in ("0.5", "0.95", "0.99"):
                    if not any("histogram_quantile(%s," % q in t.get("expr", "")
                               for t in targets):
                        err("%s: no P%g" % (where, float(q) * 100))

    # Per-target llmcap metrics must be filtered by the target variable.
    per_target = {"llmcap_requests_total", "llmcap_ttft_seconds_bucket", "llmcap_in_flight_requests",
                  "llmcap_qualified_capacity_requests_per_second", "llmcap_last_verdict"}
    for where, e in panel_exprs:
        for n in pq.metric_names(e):
            if n in per_target and not re.search(re.escape(n) + r'\{[^}]*target=~"\$target"', e):
                err("%s: %s not filtered by target=~\"$target\"" % (where, n))
            # Targets under test export process_* too: llmcapd's are those of its scrape job.
            if n.startswith("process_") and not re.search(re.escape(n) + r'\{[^}]*job="llmcapd"', e):
                err("%s: %s not filtered by job=\"llmcapd\"" % (where, n))
    # Panels where no series means 0 must say 0 (or compute it), not "No data".
    by_title = {p.get("title"): p for p in panels}
    dropped = by_title.get("Dropped arrivals", {})
    if dropped.get("fieldConfig", {}).get("defaults", {}).get("noValue") != "0":
        err("panel 'Dropped arrivals': noValue must be \"0\" (nothing dropped is 0, not no data)")
    ratio = [t.get("expr", "") for t in by_title.get("Error ratio", {}).get("targets", [])]
    if not ratio or not all(re.search(r'outcome!="ok"\}\[1m\]\)\)\s+or\s', e) for e in ratio):
        err("panel 'Error ratio': a target without failed requests must read 0 (`or ... * 0`)")
    # Live per-job gauges: the legend names the job, so two jobs on one target name stay apart.
    for p in panels:
        for t in p.get("targets") or []:
            names = pq.metric_names(t.get("expr", ""))
            if any(n in ("llmcap_in_flight_requests", "llmcap_achieved_requests_per_second",
                         "llmcap_current_step_index", "llmcap_last_verdict") for n in names) \
                    and "{{job_id}}" not in t.get("legendFormat", ""):
                err("panel %r: legend of %s lacks {{job_id}}" % (p.get("title"), names))

    # Alert rules.
    with open(ALERTS, encoding="utf-8") as f:
        rules = yaml.safe_load(f)
    n_rules = 0
    for group in rules.get("groups", []):
        for rule in group.get("rules", []):
            n_rules += 1
            where = "alert %s" % (rule.get("alert") or rule.get("record"))
            for n in pq.metric_names(str(rule.get("expr", ""))):
                exprs.append((where, n))
    if n_rules < 6:
        err("only %d alert rules" % n_rules)

    used = set()
    for where, name in exprs:
        problem = pq.check_name(name, known)
        if problem:
            err("%s: %s" % (where, problem))
        used.add(name)
    # Every llmcapd family must be on the dashboard or in an alert (new metrics need a panel).
    used_bases = {re.sub(r'_(bucket|sum|count)$', '', n) if
                  re.sub(r'_(bucket|sum|count)$', '', n) in known else n for n in used}
    for name in sorted(daemon):
        if name not in used_bases:
            err("%s is exported by llmcapd but shown nowhere" % name)
    print("deploy_dashboard_test: %d panels, %d metric references, %d llmcap + %d vllm families "
          "known, %d alert rules" % (len(panels), len(exprs), len(daemon), len(sim), n_rules))


if __name__ == "__main__":
    main()
    for e in errors:
        print("FAIL: " + e)
    sys.exit(1 if errors else 0)

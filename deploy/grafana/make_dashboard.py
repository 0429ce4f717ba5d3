#!/usr/bin/env python3
"""Generates deploy/grafana/llmcap-dashboard.json, the Grafana dashboard for llmcapd.

The JSON is checked in (Grafana provisions it as is); this script is its source so that panel
ids and grid positions stay consistent. After editing, run:

    python3 deploy/grafana/make_dashboard.py > deploy/grafana/llmcap-dashboard.json

tests/integration/deploy_dashboard_test.py fails when the checked-in JSON differs from this
script's output, and checks every metric name used here against server/daemon_metrics.cc and
sim/sim_metrics.cc. Standard library only.
"""
import json
import sys

DS = {"type": "prometheus", "uid": "${datasource}"}
T = 'target=~"$target"'  # the target template variable, used in every llmcap selector
M = 'model_name=~"$model"'  # the model variable, used in every vllm selector
D = 'job="llmcapd"'  # llmcapd's own scrape job (process_* series exist for every target too)

VERDICT_MAPPINGS = [
    {
        "type": "value",
        "options": {
            "1": {"text": "pass", "color": "green", "index": 0},
            "0": {"text": "fail", "color": "red", "index": 1},
            "-1": {"text": "inconclusive", "color": "yellow", "index": 2},
        },
    }
]


class Layout:
    """Hands out panel ids and grid positions (24 columns; rows of panels left to right)."""

    def __init__(self):
        self.next_id = 1
        self.y = 0
        self.x = 0
        self.row_h = 0

    def id(self):
        i = self.next_id
        self.next_id += 1
        return i

    def row(self, title):
        self.newline()
        panel = {
            "type": "row",
            "id": self.id(),
            "title": title,
            "collapsed": False,
            "gridPos": {"h": 1, "w": 24, "x": 0, "y": self.y},
            "panels": [],
        }
        self.y += 1
        return panel

    def newline(self):
        if self.x > 0:
            self.y += self.row_h
        self.x = 0
        self.row_h = 0

    def place(self, w, h):
        if self.x + w > 24:
            self.newline()
        pos = {"h": h, "w": w, "x": self.x, "y": self.y}
        self.x += w
        self.row_h = max(self.row_h, h)
        return pos


def target(expr, legend="", ref="A", instant=False, fmt="time_series"):
    t = {
        "datasource": DS,
        "refId": ref,
        "expr": expr,
        "legendFormat": legend,
        "range": not instant,
        "instant": instant,
        "format": fmt,
    }
    return t


def quantiles(metric, by="target", selector=T, qs=(0.5, 0.95, 0.99)):
    """P50/P95/P99 of a histogram over rate(..._bucket[1m]) (one series per `by` value)."""
    out = []
    for i, q in enumerate(qs):
        pct = "P%g" % (q * 100)
        out.append(
            target(
                "histogram_quantile(%g, sum by (%s, le) (rate(%s_bucket{%s}[1m])))"
                % (q, by, metric, selector),
                "%s {{%s}}" % (pct, by),
                ref=chr(ord("A") + i),
            )
        )
    return out


def thresholds(steps):
    return {"mode": "absolute", "steps": steps}


def base_steps(bound=None, color="red"):
    steps = [{"color": "green", "value": None}]
    if bound is not None:
        steps.append({"color": color, "value": bound})
    return steps


def timeseries(layout, title, targets, unit="short", desc="", w=8, h=8, bound=None,
               overrides=None, stack=False, min_zero=True, no_value=None):
    custom = {
        "drawStyle": "line",
        "lineWidth": 1,
        "fillOpacity": 10 if not stack else 40,
        "showPoints": "never",
        "spanNulls": False,
        "stacking": {"mode": "normal" if stack else "none", "group": "A"},
        # SLA bounds are drawn as dashed threshold lines.
        "thresholdsStyle": {"mode": "dashed" if bound is not None else "off"},
    }
    defaults = {
        "unit": unit,
        "custom": custom,
        "color": {"mode": "palette-classic"},
        "thresholds": thresholds(base_steps(bound)),
    }
    if min_zero:
        defaults["min"] = 0
    if no_value is not None:
        defaults["noValue"] = no_value  # shown instead of "No data" where that is the truth
    return {
        "type": "timeseries",
        "id": layout.id(),
        "title": title,
        "description": desc,
        "datasource": DS,
        "gridPos": layout.place(w, h),
        "targets": targets,
        "fieldConfig": {"defaults": defaults, "overrides": overrides or []},
        "options": {
            "legend": {"displayMode": "table", "placement": "bottom", "calcs": ["lastNotNull", "max"]},
            "tooltip": {"mode": "multi", "sort": "desc"},
        },
    }


def sla_series_override(name):
    """The series `name` (the SLA variable drawn as a line) in dashed red, out of the legend calcs."""
    return {
        "matcher": {"id": "byName", "options": name},
        "properties": [
            {"id": "color", "value": {"mode": "fixed", "fixedColor": "red"}},
            {"id": "custom.lineStyle", "value": {"fill": "dash", "dash": [10, 10]}},
            {"id": "custom.fillOpacity", "value": 0},
        ],
    }


def stat(layout, title, targets, unit="short", desc="", w=4, h=4, steps=None, mappings=None,
         color_mode="value", text_mode="auto", no_value=None):
    defaults = {
        "unit": unit,
        "mappings": mappings or [],
        "thresholds": thresholds(steps or base_steps()),
        "color": {"mode": "thresholds"},
    }
    if no_value is not None:
        defaults["noValue"] = no_value
    return {
        "type": "stat",
        "id": layout.id(),
        "title": title,
        "description": desc,
        "datasource": DS,
        "gridPos": layout.place(w, h),
        "targets": targets,
        "fieldConfig": {"defaults": defaults, "overrides": []},
        "options": {
            "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
            "colorMode": color_mode,
            "graphMode": "none",
            "textMode": text_mode,
            "justifyMode": "auto",
            "orientation": "auto",
        },
    }


def bargauge(layout, title, targets, unit, desc="", w=8, h=8):
    return {
        "type": "bargauge",
        "id": layout.id(),
        "title": title,
        "description": desc,
        "datasource": DS,
        "gridPos": layout.place(w, h),
        "targets": targets,
        "fieldConfig": {
            "defaults": {
                "unit": unit,
                "min": 0,
                "thresholds": thresholds(base_steps()),
                "color": {"mode": "continuous-BlPu"},
            },
            "overrides": [],
        },
        "options": {
            "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
            "orientation": "horizontal",
            "displayMode": "gradient",
            "showUnfilled": True,
        },
    }


def build():
    L = Layout()
    panels = []

    # --- live load -------------------------------------------------------------------------
    panels.append(L.row("Live load"))
    panels.append(timeseries(
        L, "Request rate by outcome",
        [target('sum by (target, outcome) (rate(llmcap_requests_total{%s}[1m]))' % T,
                "{{target}} {{outcome}}")],
        unit="reqps", stack=True,
        desc="Finished requests per second by target and outcome (ok or the error class)."))
    panels.append(timeseries(
        L, "In-flight requests",
        [target("llmcap_in_flight_requests{%s}" % T, "{{target}} {{job_id}}")],
        desc="Requests in flight now, per job and target. A growing trend at a fixed offered "
             "rate is a growing backlog: the step cannot pass (docs/metrics.md §4.1)."))
    panels.append(timeseries(
        L, "Offered vs achieved arrival rate",
        [target("llmcap_offered_requests_per_second{%s}" % T, "offered {{target}} {{job_id}}",
                "A"),
         target("llmcap_achieved_requests_per_second{%s}" % T,
                "achieved {{target}} {{job_id}}", "B")],
        unit="reqps",
        desc="Open loop: the rate the step offers and the rate actually sent, in the plan's "
             "time (simulated targets: scaled back by time_scale). A gap means the load "
             "generator fell behind."))
    panels.append(timeseries(
        L, "Tokens per second",
        [target("sum by (target) (rate(llmcap_output_tokens_total{%s}[1m]))" % T,
                "output {{target}}", "A"),
         target("sum by (target) (rate(llmcap_input_tokens_total{%s}[1m]))" % T,
                "input {{target}}", "B")],
        unit="short",
        desc="Output (usage.completion_tokens) and input (usage.prompt_tokens) tokens per "
             "second, as received by the client."))
    panels.append(timeseries(
        L, "Error ratio",
        # A target without a failed request has no outcome!="ok" series: its ratio is 0, not
        # missing (the `or` adds 0 for every target with finished requests).
        [target('(sum by (target) (rate(llmcap_requests_total{%s, outcome!="ok"}[1m])) or '
                'sum by (target) (rate(llmcap_requests_total{%s}[1m])) * 0) / '
                'sum by (target) (rate(llmcap_requests_total{%s}[1m]))' % (T, T, T),
                "{{target}}")],
        unit="percentunit", bound=0.01,
        desc="Failed and timed-out requests / finished requests over 1 minute. Dashed line: "
             "the 1% error-rate bound of the default SLA (docs/metrics.md §4)."))
    panels.append(timeseries(
        L, "Dropped arrivals",
        [target("sum by (target) (rate(llmcap_dropped_arrivals_total{%s}[1m]))" % T,
                "{{target}}")],
        unit="short", no_value="0",
        desc="Arrivals per second dropped at the in-flight cap (client-side safety valve). "
             "Any drop makes the step inconclusive. The counter starts at 0 with a target's "
             "first step."))
    panels.append(timeseries(
        L, "Load generator CPU",
        [target("llmcap_client_cpu_utilisation_ratio{%s}" % T, "{{target}} {{job_id}}")],
        unit="percentunit", bound=0.9,
        desc="CPU use of the load generator in the last step (0..1 of its cores). Above 0.9 "
             "the client, not the target, may be the bottleneck."))
    panels.append(timeseries(
        L, "Schedule lag P99",
        quantiles("llmcap_schedule_lag_seconds", qs=(0.99,)),
        unit="s",
        desc="Actual send time minus intended send time, P99 over 1 minute. High lag means "
             "coordinated omission: TTFT is measured from the intended time anyway."))
    panels.append(stat(
        L, "Current step", [target("llmcap_current_step_index{%s}" % T,
                                   "{{target}} {{phase}} {{job_id}}", instant=True)],
        desc="Index (within its phase) of the step now running, by job, target and phase. "
             "Kept 60 s after the job ends.",
        w=8, h=8, text_mode="value_and_name", no_value="no step running"))

    # --- latency ---------------------------------------------------------------------------
    panels.append(L.row("Latency (client side, from the intended send time)"))
    panels.append(timeseries(
        L, "TTFT P50 / P95 / P99",
        quantiles("llmcap_ttft_seconds")
        + [target("vector($sla_ttft_p95_s)", "SLA P95 TTFT", "D")],
        unit="s", w=12, bound=1,
        overrides=[sla_series_override("SLA P95 TTFT")],
        desc="Time to first token from t_intended (docs/metrics.md §1.4). Dashed threshold: the "
             "default SLA bound (1 s); red series: the sla_ttft_p95_s variable."))
    panels.append(timeseries(
        L, "TPOT P50 / P95 / P99",
        quantiles("llmcap_tpot_seconds")
        + [target("vector($sla_tpot_p95_s)", "SLA P95 TPOT", "D")],
        unit="s", w=12, bound=0.035,
        overrides=[sla_series_override("SLA P95 TPOT")],
        desc="Per-request time per output token after the first (docs/metrics.md §1.4). Dashed "
             "threshold: the default SLA bound (35 ms); red series: the sla_tpot_p95_s variable."))
    panels.append(timeseries(
        L, "ITL P50 / P95 / P99", quantiles("llmcap_itl_seconds"), unit="s", w=12,
        desc="Gaps between consecutive token events, pooled over requests. Differs from TPOT "
             "when an event carries several tokens."))
    panels.append(timeseries(
        L, "E2E P50 / P95 / P99", quantiles("llmcap_e2e_seconds"), unit="s", w=12,
        desc="End-to-end latency of successful requests from t_intended. Computed on its own: "
             "never the sum of TTFT and TPOT percentiles."))

    # --- verdicts --------------------------------------------------------------------------
    panels.append(L.row("Verdicts"))
    panels.append({
        "type": "state-timeline",
        "id": L.id(),
        "title": "Step verdicts",
        "description": "Verdict of the last judged step by target and phase: pass, fail, or "
                       "inconclusive (the load generator was the bottleneck).",
        "datasource": DS,
        "gridPos": L.place(16, 8),
        "targets": [target("llmcap_last_verdict{%s}" % T, "{{target}} / {{phase}} {{job_id}}")],
        "fieldConfig": {
            "defaults": {
                "mappings": VERDICT_MAPPINGS,
                "thresholds": thresholds(base_steps()),
                "color": {"mode": "thresholds"},
                "custom": {"fillOpacity": 80, "lineWidth": 0},
            },
            "overrides": [],
        },
        "options": {"showValue": "auto", "mergeValues": True, "rowHeight": 0.9,
                    "legend": {"showLegend": True, "displayMode": "list", "placement": "bottom"}},
    })
    panels.append(stat(
        L, "Last verdict", [target("llmcap_last_verdict{%s}" % T,
                                   "{{target}} / {{phase}} {{job_id}}", instant=True)],
        w=8, h=8, mappings=VERDICT_MAPPINGS, color_mode="background",
        text_mode="value_and_name",
        steps=[{"color": "yellow", "value": None}, {"color": "red", "value": 0},
               {"color": "green", "value": 1}],
        desc="1 pass, 0 fail, -1 inconclusive."))

    # --- capacity --------------------------------------------------------------------------
    panels.append(L.row("Qualified capacity (latest finished job)"))
    panels.append(bargauge(
        L, "Qualified capacity",
        [target("llmcap_qualified_capacity_requests_per_second{%s}" % T, "{{target}}",
                instant=True)],
        unit="reqps",
        desc="Highest offered rate whose step passed, per target (docs/metrics.md §5.1). A "
             "target qualified only closed loop (concurrency sweep) has no rate here."))
    panels.append(bargauge(
        L, "Output tokens/s at qualified capacity",
        [target("llmcap_qualified_output_tokens_per_second{%s}" % T, "{{target}}",
                instant=True)],
        unit="short"))
    panels.append(bargauge(
        L, "Cost per million output tokens",
        [target("llmcap_cost_per_million_output_tokens{%s}" % T, "{{target}} ({{currency}})",
                instant=True)],
        unit="short",
        desc="Hourly price / (qualified output tokens/s × 3600) × 10^6 (docs/metrics.md §6.1). "
             "Lower is better."))
    panels.append({
        "type": "table",
        "id": L.id(),
        "title": "Capacity per target",
        "datasource": DS,
        "gridPos": L.place(24, 7),
        "targets": [
            target("llmcap_qualified_capacity_requests_per_second{%s}" % T, "", "A", True,
                   "table"),
            target("llmcap_qualified_output_tokens_per_second{%s}" % T, "", "B", True, "table"),
            target("llmcap_cost_per_million_output_tokens{%s}" % T, "", "C", True, "table"),
        ],
        "transformations": [
            {"id": "merge", "options": {}},
            {"id": "organize", "options": {
                "excludeByName": {"Time": True, "__name__": True, "instance": True, "job": True},
                "renameByName": {"Value #A": "qualified req/s", "Value #B": "output tokens/s",
                                 "Value #C": "cost per M output tokens"}}},
        ],
        "fieldConfig": {"defaults": {"thresholds": thresholds(base_steps())}, "overrides": []},
        "options": {"showHeader": True,
                    "sortBy": [{"displayName": "output tokens/s", "desc": True}]},
    })

    panels.append({
        "type": "table",
        "id": L.id(),
        "title": "Predicted vs measured capacity",
        "description": "Predictions (POST /v1/predictions: the plan on sim:// targets in virtual "
                       "time, docs/prediction.md) beside the latest measured figures of the same "
                       "target name. A prediction never writes the measured series.",
        "datasource": DS,
        "gridPos": L.place(24, 7),
        "targets": [
            target("llmcap_predicted_capacity_requests_per_second{%s}" % T, "", "A", True,
                   "table"),
            target("llmcap_qualified_capacity_requests_per_second{%s}" % T, "", "B", True,
                   "table"),
            target("llmcap_predicted_output_tokens_per_second{%s}" % T, "", "C", True, "table"),
            target("llmcap_predicted_cost_per_million_output_tokens{%s}" % T, "", "D", True,
                   "table"),
        ],
        "transformations": [
            {"id": "merge", "options": {}},
            {"id": "organize", "options": {
                "excludeByName": {"Time": True, "__name__": True, "instance": True, "job": True},
                "renameByName": {"Value #A": "predicted req/s", "Value #B": "measured req/s",
                                 "Value #C": "predicted output tokens/s",
                                 "Value #D": "predicted cost per M output tokens"}}},
        ],
        "fieldConfig": {"defaults": {"thresholds": thresholds(base_steps())}, "overrides": []},
        "options": {"showHeader": True},
    })

    # --- jobs ------------------------------------------------------------------------------
    panels.append(L.row("Jobs"))
    panels.append(timeseries(
        L, "Jobs by state", [target("sum by (state) (llmcap_jobs)", "{{state}}")], w=8,
        desc="Jobs known to llmcapd by state."))
    panels.append(timeseries(
        L, "Jobs submitted per hour by tenant",
        [target("sum by (tenant, kind) (increase(llmcap_jobs_submitted_total[1h]))",
                "{{tenant}} {{kind}}")], w=8,
        desc="Jobs and predictions accepted in the last hour, by tenant (tenant_tokens; "
             "admin_tokens and read_tokens are the tenant default; docs/security.md)."))
    panels.append(stat(
        L, "Job queue length", [target("llmcap_job_queue_length", "queued", instant=True)],
        w=8, h=8, steps=base_steps(10, "orange"),
        desc="Jobs waiting to run (POST /v1/jobs answers 429 beyond max_queued_jobs)."))

    # --- process ---------------------------------------------------------------------------
    panels.append(L.row("llmcapd process"))
    panels.append(stat(
        L, "llmcapd up", [target('up{job="llmcapd"}', "{{instance}}", instant=True)],
        w=4, h=4, color_mode="background",
        steps=[{"color": "red", "value": None}, {"color": "green", "value": 1}],
        mappings=[{"type": "value", "options": {"0": {"text": "down", "index": 0},
                                                "1": {"text": "up", "index": 1}}}]))
    panels.append(stat(
        L, "Uptime", [target("llmcap_uptime_seconds", "", instant=True)], unit="s", w=4, h=4))
    panels.append(stat(
        L, "Started", [target("process_start_time_seconds{%s} * 1000" % D, "{{instance}}",
                              instant=True)],
        unit="dateTimeFromNow", w=4, h=4, desc="Process start time (process_start_time_seconds)."))
    panels.append({
        "type": "table",
        "id": L.id(),
        "title": "Build",
        "datasource": DS,
        "gridPos": L.place(12, 4),
        "targets": [target("llmcap_build_info", "", "A", True, "table")],
        "transformations": [{"id": "organize", "options": {
            "excludeByName": {"Time": True, "Value": True, "__name__": True}}}],
        "fieldConfig": {"defaults": {"thresholds": thresholds(base_steps())}, "overrides": []},
        "options": {"showHeader": True},
    })
    panels.append(timeseries(
        L, "Storage write queue depth", [target("llmcap_storage_write_queue_depth", "rows")],
        desc="Sample rows waiting for the storage thread. Beyond the writer's max_queued_rows "
             "(2,000,000) samples are dropped and the step is marked."))
    panels.append(timeseries(
        L, "Storage transaction P99",
        [target("histogram_quantile(0.99, sum by (le) "
                "(rate(llmcap_storage_batch_seconds_bucket[1m])))", "P99")],
        unit="s"))
    panels.append(timeseries(
        L, "API request duration P99 by route",
        [target("histogram_quantile(0.99, sum by (route, le) "
                "(rate(llmcap_api_request_duration_seconds_bucket[1m])))", "{{route}}", "A")],
        unit="s"))
    panels.append(timeseries(
        L, "API requests by route and code",
        [target("sum by (route, code) (rate(llmcap_api_request_duration_seconds_count[1m]))",
                "{{route}} {{code}}")],
        unit="reqps", w=12))
    panels.append(timeseries(
        L, "API connections refused",
        [target("sum by (reason) (rate(llmcap_api_connections_refused_total[1m]))",
                "{{reason}}")],
        unit="cps", w=12,
        desc="503s at max_connections (full) or max_connections_per_client (per_client), "
             "accept() failures for lack of file descriptors (fd_exhausted), and connections "
             "closed because their request was still arriving after slow_request_evict_ms "
             "(slow_request: slowloris; docs/security.md)."))
    panels.append(timeseries(
        L, "llmcapd CPU",
        [target("rate(process_cpu_seconds_total{%s}[1m])" % D, "{{instance}}")],
        unit="short",
        desc="CPU seconds per second (1 = one core busy), user + system, the whole process: "
             "load generator, API, storage."))
    panels.append(timeseries(
        L, "llmcapd memory",
        [target("process_resident_memory_bytes{%s}" % D, "resident {{instance}}", "A"),
         target("process_virtual_memory_bytes{%s}" % D, "virtual {{instance}}", "B")],
        unit="bytes"))
    panels.append(timeseries(
        L, "llmcapd file descriptors",
        [target("process_open_fds{%s}" % D, "open {{instance}}", "A"),
         target("process_max_fds{%s}" % D, "limit {{instance}}", "B")],
        desc="Open descriptors (sockets of in-flight requests and API connections, the "
             "database) against the soft RLIMIT_NOFILE. Near the limit, accept() fails "
             "(fd_exhausted above)."))

    # --- target telemetry ------------------------------------------------------------------
    panels.append(L.row("Target telemetry (vLLM-style /metrics of the server under test)"))
    panels.append(timeseries(
        L, "Requests running / waiting on the server",
        [target("vllm:num_requests_running{%s}" % M, "running {{model_name}}", "A"),
         target("vllm:num_requests_waiting{%s}" % M, "waiting {{model_name}}", "B")],
        desc="Server-side batch occupancy and queue. Waiting > 0 for long means the server is "
             "past its knee."))
    panels.append(timeseries(
        L, "KV cache usage", [target("vllm:kv_cache_usage_perc{%s}" % M, "{{model_name}}")],
        unit="percentunit", bound=0.9,
        desc="Fraction of KV-cache blocks in use (1 = full). Near 1 the engine preempts."))
    panels.append(timeseries(
        L, "Preemptions per second",
        [target("rate(vllm:num_preemptions_total{%s}[1m])" % M, "{{model_name}}")],
        desc="Requests preempted (KV cache exhausted) and recomputed later."))
    panels.append(timeseries(
        L, "TTFT P95: server side vs client side",
        [target("histogram_quantile(0.95, sum by (model_name, le) "
                "(rate(vllm:time_to_first_token_seconds_bucket{%s}[1m])))" % M,
                "server {{model_name}}", "A"),
         target("histogram_quantile(0.95, sum by (target, le) "
                "(rate(llmcap_ttft_seconds_bucket{%s}[1m])))" % T, "client {{target}}", "B")],
        unit="s", w=12,
        desc="The gap is network, connection set-up, streaming buffers and client queueing "
             "(docs/metrics.md §8.3: keep both)."))
    panels.append(timeseries(
        L, "Output tokens/s: server side vs client side",
        [target("sum by (model_name) (rate(vllm:generation_tokens_total{%s}[1m]))" % M,
                "server {{model_name}}", "A"),
         target("sum by (target) (rate(llmcap_output_tokens_total{%s}[1m]))" % T,
                "client {{target}}", "B")],
        w=12))
    return panels


def templating():
    def textbox(name, label, value, desc):
        return {"type": "textbox", "name": name, "label": label, "description": desc,
                "query": value, "current": {"text": value, "value": value},
                "options": [{"selected": True, "text": value, "value": value}], "hide": 0}

    def query_var(name, label, query):
        return {
            "type": "query",
            "name": name,
            "label": label,
            "datasource": DS,
            "definition": query,
            "query": {"query": query, "refId": "PrometheusVariableQueryEditor-VariableQuery"},
            "refresh": 2,
            "includeAll": True,
            "multi": True,
            "allValue": ".*",
            "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
            "sort": 1,
            "regex": "",
            "hide": 0,
        }

    return {"list": [
        {"type": "datasource", "name": "datasource", "label": "Prometheus", "query": "prometheus",
         "current": {}, "hide": 0, "refresh": 1, "regex": "", "includeAll": False,
         "multi": False},
        query_var("target", "Target", "label_values(llmcap_requests_total, target)"),
        query_var("model", "Model (target telemetry)",
                  "label_values(vllm:num_requests_running, model_name)"),
        textbox("sla_ttft_p95_s", "SLA P95 TTFT (s)", "1",
                "P95 TTFT bound drawn on the TTFT panel (docs/metrics.md §4 default 1 s)"),
        textbox("sla_tpot_p95_s", "SLA P95 TPOT (s)", "0.035",
                "P95 TPOT bound drawn on the TPOT panel (docs/metrics.md §4 default 35 ms)"),
    ]}


def dashboard():
    return {
        "uid": "llmcap-overview",
        "title": "llmcap: capacity testing",
        "description": "Live load, latency percentiles against the SLA, verdicts, qualified "
                       "capacity, jobs, the llmcapd process and target telemetry.",
        "tags": ["llmcap", "llm", "capacity"],
        "schemaVersion": 38,
        "version": 1,
        "editable": True,
        "graphTooltip": 1,
        "timezone": "browser",
        "refresh": "10s",
        "time": {"from": "now-1h", "to": "now"},
        "timepicker": {},
        "fiscalYearStartMonth": 0,
        "liveNow": False,
        "links": [],
        "annotations": {"list": [{
            "builtIn": 1, "datasource": {"type": "grafana", "uid": "-- Grafana --"},
            "enable": True, "hide": True, "iconColor": "rgba(0, 211, 255, 1)",
            "name": "Annotations & Alerts", "type": "dashboard"}]},
        "templating": templating(),
        "panels": build(),
    }


if __name__ == "__main__":
    json.dump(dashboard(), sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")

"""Shared helpers of the deploy_* tests: the metric names llmcapd and the simulator export (read
from their C++ sources, so the tests break when names drift), and a PromQL metric-name
extractor. Standard library only (PyYAML is imported by the callers that need it)."""
import re

# `prometheus::BuildCounter().Name("x")`, possibly across lines.
_BUILD_RE = re.compile(r'Build(Counter|Gauge|Histogram|Summary)\(\)\s*\.Name\("([^"]+)"\)')


def exported_metrics(source_path):
    """{name: type} for every family a C++ source registers with prometheus-cpp."""
    with open(source_path, encoding="utf-8") as f:
        text = f.read()
    return {name: kind.lower() for kind, name in _BUILD_RE.findall(text)}


# server/process_metrics.cc: `{"process_x", prometheus::MetricType::Gauge, ...}`.
_PROCESS_RE = re.compile(r'\{"(process_\w+)",\s*prometheus::MetricType::(Counter|Gauge)')


def process_metrics(source_path):
    """{name: type} of the standard process_* families llmcapd's ProcessCollector exports."""
    with open(source_path, encoding="utf-8") as f:
        text = f.read()
    return {name: kind.lower() for name, kind in _PROCESS_RE.findall(text)}


_KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left",
             "group_right", "offset", "bool", "inf", "nan"}
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_GROUPING = re.compile(r'\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)')
_IDENT = re.compile(r'(?<![\w:.])([a-zA-Z_:][a-zA-Z0-9_:]*)')


def metric_names(expr):
    """Metric names an expression selects, in order (functions, keywords, label names,
    durations, numbers and Grafana $variables are not names)."""
    s = _STRINGS.sub('""', expr)
    s = re.sub(r'\{[^}]*\}', ' ', s)          # label matchers
    s = re.sub(r'\[[^\]]*\]', ' ', s)         # range selectors and subqueries
    s = re.sub(r'\$\{[^}]*\}|\$\w+', ' 0 ', s)  # Grafana variables
    s = _GROUPING.sub(' ', s)                  # by (a, b) / on (x) / group_left (y)
    s = re.sub(r'\boffset\s+-?[0-9a-z]+', ' ', s)
    names = []
    for m in _IDENT.finditer(s):
        name = m.group(1)
        if s[m.end():].lstrip().startswith("("):
            continue  # function or aggregation operator
        if name.lower() in _KEYWORDS:
            continue
        names.append(name)
    return names


_LABEL_VALUES = re.compile(r'^\s*label_values\(\s*(?:(.*?)\s*,\s*)?([a-zA-Z_]\w*)\s*\)\s*$')


def variable_query_names(query):
    """Metric names in a Grafana Prometheus variable query (label_values(), query_result())."""
    m = _LABEL_VALUES.match(query)
    if m:
        return metric_names(m.group(1)) if m.group(1) else []
    m = re.match(r'^\s*query_result\((.*)\)\s*$', query)
    if m:
        return metric_names(m.group(1))
    return metric_names(query)


HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")
OTHER_ALLOWED = {"up"}  # Prometheus' own series


def check_name(name, known):
    """'' when `name` is a series of a known family, else why not. `known`: {name: type}."""
    if name in OTHER_ALLOWED:
        return ""
    for suffix in HISTOGRAM_SUFFIXES:
        base = name[: -len(suffix)]
        if name.endswith(suffix) and known.get(base) in ("histogram", "summary"):
            if suffix == "_bucket" and known[base] == "summary":
                return "%s: summaries have no _bucket series" % name
            return ""
    if name not in known:
        return "%s: not exported by llmcapd or the simulator" % name
    if known[name] == "histogram":
        return "%s: a histogram has only _bucket/_sum/_count series" % name
    return ""

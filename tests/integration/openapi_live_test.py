"""The real `llmcapd serve` against its OpenAPI document (issue 22).

Every response the test provokes (every documented GET route, the POST and DELETE routes with
their success and error cases, auth, transport-level errors, shutdown) must have a status code
that docs/openapi.json documents for that operation, a documented Content-Type, and a JSON body
(problem+json included; NDJSON line by line) valid against the documented schema. The schemas
are OpenAPI 3.0 Schema Objects, checked with jsonschema's Draft 4 validator (the draft OpenAPI
3.0 builds on: boolean exclusiveMinimum) after `$ref`s are inlined and `nullable` is turned
into a "null" type. The top-level keys of live results and validation documents are checked
both ways (issue 40 #6): no key the daemon sends is missing from the schema's properties, and
every key present in every live document is in the schema's required list. Also: the served
document is docs/openapi.json, and every problem type of api/problem_json.cc has its section in
docs/problems.md (and no section is left over).

Usage: openapi_live_test.py SOURCE_DIR LLMCAPD. Python 3 + jsonschema (Debian python3-jsonschema;
skipped with exit 77 without it). ~10 s: three tiny simulated jobs, one restart.
"""

import copy
import json
import os
import re
import signal
import socket
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llmcapd_harness import Daemon, plan  # noqa: E402

try:
    import jsonschema
except ImportError:
    print("openapi_live_test: SKIPPED: no jsonschema module (apt-get install python3-jsonschema)")
    sys.exit(77)

SOURCE_DIR = None
BINARY = None
ADMIN = "admin-token-openapi-0123456789"
READ = "read-token-openapi-0123456789"
PROBLEM_BASE = "https://github.com/llmcap/llmcap/blob/main/docs/problems.md#"
NO_JOB = "job_00000000000000000000000000"
JSON_TYPES = ("application/json", "application/problem+json")


def load_document():
    with open(os.path.join(SOURCE_DIR, "docs", "openapi.json")) as f:
        return json.load(f)


class OpenApi:
    """The document's operations, and JSON Schemas made from its Schema Objects."""

    def __init__(self, doc):
        self.doc = doc
        self.templates = []  # (regex, path template)
        for template in doc["paths"]:
            rx = re.escape(template)
            rx = re.sub(r"\\\{[a-z_]+\\\}", "[^/]+", rx)
            self.templates.append((re.compile("^" + rx + "$"), template))
        self.seen = set()  # (template, method, status)

    def operation(self, method, path):
        path = path.split("?", 1)[0]
        for rx, template in self.templates:
            if rx.match(path) and method.lower() in self.doc["paths"][template]:
                return template, self.doc["paths"][template][method.lower()]
        return None, None

    def ref(self, node):
        while isinstance(node, dict) and "$ref" in node:
            parts = node["$ref"].lstrip("#/").split("/")
            node = self.doc
            for p in parts:
                node = node[p]
        return node

    def json_schema(self, schema, depth=0):
        """OpenAPI 3.0 Schema Object -> JSON Schema draft 4 ($ref inlined, nullable)."""
        if depth > 40:
            raise AssertionError("schema nesting too deep (recursive $ref?)")
        schema = self.ref(schema)
        if isinstance(schema, list):
            return [self.json_schema(s, depth + 1) for s in schema]
        if not isinstance(schema, dict):
            return schema
        out = {}
        for k, v in schema.items():
            if k in ("properties", "patternProperties"):
                out[k] = {name: self.json_schema(s, depth + 1) for name, s in v.items()}
            elif k in ("items", "additionalProperties", "not") and isinstance(v, dict):
                out[k] = self.json_schema(v, depth + 1)
            elif k in ("allOf", "anyOf", "oneOf"):
                out[k] = [self.json_schema(s, depth + 1) for s in v]
            elif k in ("nullable", "example", "discriminator", "readOnly", "writeOnly", "xml",
                       "externalDocs", "deprecated"):
                continue
            else:
                out[k] = copy.deepcopy(v)
        if schema.get("nullable"):
            if "type" in out:
                out["type"] = [out["type"], "null"]
                if "enum" in out:
                    out["enum"] = out["enum"] + [None]
            else:
                out = {"anyOf": [out, {"type": "null"}]}
        return out

    def check(self, method, path, r):
        """Fails unless r's status, Content-Type and body match the document."""
        what = "%s %s -> %d" % (method, path, r.status)
        template, op = self.operation(method, path)
        if op is None:
            raise AssertionError("%s: no such operation in docs/openapi.json" % what)
        responses = op["responses"]
        key = str(r.status)
        if key not in responses:
            raise AssertionError("%s: status %s not documented (documented: %s); body %s" %
                                 (what, key, sorted(responses), r.text[:300]))
        self.seen.add((template, method.lower(), r.status))
        response = self.ref(responses[key])
        content = response.get("content", {})
        ctype = r.headers.get("content-type", "").split(";")[0].strip().lower()
        if not r.body and not ctype:
            if content:
                raise AssertionError("%s: empty body, documented %s" % (what, sorted(content)))
            return None
        if ctype not in content:
            raise AssertionError("%s: Content-Type %r not documented (documented: %s)" %
                                 (what, ctype, sorted(content)))
        schema = content[ctype].get("schema")
        if schema is None:
            return None
        validator = jsonschema.Draft4Validator(self.json_schema(schema))
        if ctype in JSON_TYPES:
            bodies = [json.loads(r.body)]
        elif ctype == "application/x-ndjson":
            bodies = [json.loads(line) for line in r.body.splitlines() if line.strip()]
        else:
            if self.ref(schema).get("type") not in (None, "string"):
                raise AssertionError("%s: %s documented with a non-string schema" %
                                     (what, ctype))
            return None
        for body in bodies:
            errors = sorted(validator.iter_errors(body), key=lambda e: list(e.absolute_path))
            if errors:
                raise AssertionError("%s: body does not match the documented %s schema:\n%s\n"
                                     "body: %s" % (what, ctype, "\n".join(
                                         "  at /%s: %s" % ("/".join(map(str, e.absolute_path)),
                                                          e.message[:300])
                                         for e in errors[:10]), json.dumps(body)[:1500]))
        if ctype == "application/problem+json":
            p = bodies[0]
            if p["status"] != r.status:
                raise AssertionError("%s: problem status %s" % (what, p["status"]))
            if p["type"] != "about:blank":
                slug = p["type"][len(PROBLEM_BASE):]
                if not p["type"].startswith(PROBLEM_BASE) or slug not in problem_sections():
                    raise AssertionError("%s: problem type %s has no section in "
                                         "docs/problems.md" % (what, p["type"]))
        return bodies[0] if len(bodies) == 1 else bodies


def problem_sections():
    with open(os.path.join(SOURCE_DIR, "docs", "problems.md")) as f:
        return set(re.findall(r"^## (\S+)\s*$", f.read(), re.M))


def raw_exchange(port, data, timeout_s=10):
    """Sends raw bytes, returns (status, headers, body) of the reply."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as s:
        s.sendall(data)
        reply = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    return int(lines[0].split()[1]), headers, body


class RawResponse:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    @property
    def text(self):
        return self.body.decode("utf-8", "replace")


class OpenApiLiveTest(unittest.TestCase):
    def setUp(self):
        self.api = OpenApi(load_document())

    def call(self, d, method, path, body=None, status=None, **kw):
        r = d.request(method, path, body, **kw)
        parsed = self.api.check(method, path, r)
        if status is not None:
            self.assertEqual(r.status, status, "%s %s: %r" % (method, path, r))
        return r, parsed

    def assert_top_level_keys(self, schema_name, documents):
        """Each live document's top-level keys are properties of the named schema and include
        its required ones; a key present in every document is required (so a generated client
        keeps it, and a key added to the daemon must be added to the schema)."""
        schema = self.api.doc["components"]["schemas"][schema_name]
        documented = set(schema["properties"])
        required = set(schema.get("required", []))
        self.assertLessEqual(required, documented, "%s: required keys not in properties" %
                             schema_name)
        self.assertTrue(documents, schema_name)
        for doc in documents:
            self.assertEqual(set(doc) - documented, set(),
                             "%s: live keys missing from the schema's properties" % schema_name)
            self.assertEqual(required - set(doc), set(),
                             "%s: required keys missing from a live document" % schema_name)
        always = set.intersection(*(set(doc) for doc in documents))
        self.assertEqual(always - required, set(),
                         "%s: keys in every live document that the schema does not require" %
                         schema_name)

    def test_problem_types_have_their_sections(self):
        with open(os.path.join(SOURCE_DIR, "api", "problem_json.cc")) as f:
            slugs = set(re.findall(r'\{ApiErrorCode::k\w+, \d+, "([a-z0-9-]+)"', f.read()))
        self.assertGreaterEqual(len(slugs), 10, "could not read the table of api/problem_json.cc")
        sections = problem_sections()
        self.assertEqual(slugs, sections - {"about:blank"},
                         "api/problem_json.cc types vs docs/problems.md sections")
        self.assertIn("about:blank", sections)

    def test_open_daemon_every_route(self):
        d = Daemon(BINARY, args=["--max-body-bytes", "8192", "--max-queued-jobs", "1",
                                 "--shutdown-grace-s", "2"], log_level="warn")
        self.addCleanup(d.cleanup)
        d.start()
        served = d.get_json("/v1/openapi.json")
        self.assertEqual(served, self.api.doc, "GET /v1/openapi.json is not docs/openapi.json "
                         "(rebuild llmcapd)")

        # Meta and planning routes.
        for path in ("/v1/openapi.json", "/healthz", "/readyz", "/metrics", "/", "/v1/profiles",
                     "/v1/jobs", "/v1/jobs?state=queued&limit=5"):
            self.call(d, "GET", path, status=200)
        for path in ("/v1/jobs?state=bogus", "/v1/jobs?limit=0", "/v1/jobs?verdict=maybe",
                     "/v1/jobs?created_after=yesterday", "/v1/jobs?cursor=not-a-cursor"):
            self.call(d, "GET", path, status=400)
        estimate = {"hardware": "a100-80g-pcie", "model": "llama-3.1-8b", "context_tokens": 4096,
                    "concurrency": 8, "gpu_memory_utilization": 0.9}
        self.call(d, "POST", "/v1/estimates/memory", estimate, status=200)
        self.call(d, "POST", "/v1/estimates/memory", "{nope", status=400)
        self.call(d, "POST", "/v1/estimates/memory", json.dumps(estimate),
                  content_type="text/plain", status=415)
        self.call(d, "POST", "/v1/estimates/memory", dict(estimate, gpu_memory_utilization=0),
                  status=422)
        self.call(d, "POST", "/v1/estimates/memory", {"hardware": "nope"}, status=422)

        # Plans.
        bad = plan("bad")
        bad["phases"][0]["levels"] = [0]
        bad["bogus"] = True
        for path in ("/v1/plans:validate", "/v1/jobs"):
            self.call(d, "POST", path, bad, status=422)
            self.call(d, "POST", path, '{"version": 1, "targets": [', status=400)
            self.call(d, "POST", path, json.dumps(plan()), content_type="text/plain", status=415)
            self.call(d, "POST", path, dict(plan(), description="x" * 20000), status=413)
        _, validation = self.call(d, "POST", "/v1/plans:validate", plan(), status=200)
        self.assert_top_level_keys("Validation", [validation])
        # The docs name the validate response's fields as the API does (issue 40 #6: they
        # called workload_fingerprint `fingerprint`).
        with open(os.path.join(SOURCE_DIR, "docs", "plans.md")) as f:
            plans_md = f.read()
        for key in set(validation) - {"valid", "plan"}:
            self.assertIn("`%s`" % key, plans_md, "docs/plans.md does not name %s" % key)
        for name in ("README.md", "docs/plans.md", "docs/metrics.md", "docs/prediction.md"):
            with open(os.path.join(SOURCE_DIR, name)) as f:
                self.assertNotIn("`fingerprint`", f.read(), name)
        self.call(d, "POST", "/v1/jobs", plan(), headers={"Idempotency-Key": "k" * 201},
                  status=400)

        # Unknown jobs on every job route.
        for method, path in (("GET", ""), ("DELETE", ""), ("POST", ":cancel"),
                             ("POST", ":resume"), ("GET", "/results"), ("GET", "/requests"),
                             ("GET", "/events"), ("GET", "/report"),
                             ("GET", "/agents/manifest"),
                             ("POST", "/shards/0/clock"), ("POST", "/shards/0/register"),
                             ("GET", "/shards/0/assignment"), ("POST", "/shards/0/results")):
            self.call(d, method, "/v1/jobs/" + NO_JOB + path,
                      {} if method == "POST" else None, status=404)
        for method, path in (("POST", "clock"), ("POST", "register"), ("GET", "assignment"),
                             ("POST", "results")):
            self.call(d, method, "/v1/jobs/%s/shards/x/%s" % (NO_JOB, path),
                      {} if method == "POST" else None, status=400)
        self.call(d, "GET", "/v1/compare", status=400)
        self.call(d, "GET", "/v1/compare?jobs=" + NO_JOB, status=404)

        # A long job (L) runs; the queue (max 1) takes one more (T), then refuses.
        long_plan = plan("long", levels=(1,), duration_s=60, warmup_s=0)
        _, job = self.call(d, "POST", "/v1/jobs", long_plan, status=201,
                           headers={"Idempotency-Key": "openapi-long"})
        long_id = job["id"]
        self.call(d, "POST", "/v1/jobs", long_plan, status=200,
                  headers={"Idempotency-Key": "openapi-long"})
        self.call(d, "POST", "/v1/jobs", plan("other"), status=409,
                  headers={"Idempotency-Key": "openapi-long"})
        d.wait_state(long_id, "running", 30)
        time.sleep(1.0)  # live progress and a few samples
        self.call(d, "GET", "/v1/jobs/" + long_id, status=200)
        _, so_far = self.call(d, "GET", "/v1/jobs/%s/results" % long_id, status=200)
        self.assert_top_level_keys("ResultsSoFar", [so_far])
        self.call(d, "GET", "/v1/jobs/%s/report" % long_id, status=409)
        self.call(d, "GET", "/v1/jobs/%s/requests" % long_id, status=200)
        self.call(d, "DELETE", "/v1/jobs/" + long_id, status=409)
        self.call(d, "POST", "/v1/jobs/%s:resume" % long_id, status=409)
        _, tiny = self.call(d, "POST", "/v1/jobs", plan("tiny"), status=201)
        self.call(d, "POST", "/v1/jobs", plan("refused"), status=429)
        self.call(d, "GET", "/v1/jobs?state=running", status=200)
        self.call(d, "POST", "/v1/jobs/%s:cancel" % long_id, status=202)
        d.wait_state(long_id, "cancelled", 30)
        self.call(d, "GET", "/v1/jobs/" + long_id, status=200)
        _, cancelled_results = self.call(d, "GET", "/v1/jobs/%s/results" % long_id, status=200)
        self.assertEqual(cancelled_results["state"], "cancelled")
        # A queued job (Q) cancelled at once (200), then deleted (204).
        _, queued = self.call(d, "POST", "/v1/jobs", plan("queued"), status=201)
        self.call(d, "POST", "/v1/jobs/%s:cancel" % queued["id"], status=200)
        d.wait_state(queued["id"], "cancelled", 10)
        self.call(d, "DELETE", "/v1/jobs/" + queued["id"], status=204)
        self.call(d, "DELETE", "/v1/jobs/" + long_id, status=204)
        # A second finished job with another workload, for a comparison that is refused.
        other = plan("other-workload")
        other["workload"]["output_tokens"] = {"fixed": 24}
        other["demand"] = {"requests_per_minute": 60, "mean_output_tokens": 24}  # demand_plan
        _, other_job = self.call(d, "POST", "/v1/jobs", other, status=201)
        tiny_id = tiny["id"]
        d.wait_state(tiny_id, "succeeded", 60)
        d.wait_state(other_job["id"], "succeeded", 60)

        # A finished job on every read route.
        self.call(d, "GET", "/v1/jobs/" + tiny_id, status=200)
        _, tiny_results = self.call(d, "GET", "/v1/jobs/%s/results" % tiny_id, status=200)
        _, other_results = self.call(d, "GET", "/v1/jobs/%s/results" % other_job["id"],
                                     status=200)
        self.assertIn("demand_plan", other_results)
        # Succeeded, succeeded with a demand plan, cancelled: every key documented, and every
        # key they all have required.
        self.assert_top_level_keys("Results", [tiny_results, other_results, cancelled_results])
        self.assertEqual(tiny_results["job_id"], tiny_id)
        _, samples = self.call(d, "GET", "/v1/jobs/%s/requests?limit=20" % tiny_id, status=200)
        self.assertTrue(samples, "no samples")
        self.call(d, "GET", "/v1/jobs/%s/requests" % tiny_id, headers={"Accept": "text/csv"},
                  status=200)
        self.call(d, "GET", "/v1/jobs/%s/requests" % tiny_id, headers={"Accept": "image/png"},
                  status=406)
        for query in ("limit=0", "after=-1", "step=x"):
            self.call(d, "GET", "/v1/jobs/%s/requests?%s" % (tiny_id, query), status=400)
        self.call(d, "GET", "/v1/jobs/%s/requests?step=999" % tiny_id, status=404)
        self.call(d, "GET", "/v1/jobs/%s/events" % tiny_id, status=200)
        # One content negotiation for the report and compare (issue 40 #4): no Accept or */*
        # is JSON, Accept picks, ?format= wins, an unknown format 400, an unknown type 406.
        compare = "/v1/compare?jobs=%s,%s" % (tiny_id, tiny_id)
        for path, sep, formats in (("/v1/jobs/%s/report" % tiny_id, "?",
                                    ("json", "html", "markdown", "csv", "junit")),
                                   (compare, "&", ("json", "html", "markdown", "csv"))):
            for accept in (None, "*/*", "application/json", "text/html", "text/markdown",
                           "text/csv"):
                self.call(d, "GET", path, headers={"Accept": accept} if accept else None,
                          status=200)
            for fmt in formats:
                self.call(d, "GET", path + sep + "format=" + fmt, status=200)
            self.call(d, "GET", path + sep + "format=xunit", status=400)
            self.call(d, "GET", path, headers={"Accept": "image/png"}, status=406)
        self.call(d, "GET", "/v1/jobs/%s/agents/manifest" % tiny_id, status=404)
        self.call(d, "POST", "/v1/jobs/%s:cancel" % tiny_id, status=409)  # already finished
        self.call(d, "POST", "/v1/jobs/%s:resume" % tiny_id, status=409)
        self.call(d, "GET", "/v1/compare?jobs=%s&allow_different_workloads=maybe" % tiny_id,
                  status=400)
        self.call(d, "GET", "/v1/compare?jobs=%s,%s" % (tiny_id, other_job["id"]), status=422)
        self.call(d, "GET", "/v1/compare?jobs=%s,%s&allow_different_workloads=true" %
                  (tiny_id, other_job["id"]), status=200)
        self.call(d, "GET", "/", status=200)
        self.call(d, "GET", "/v1/jobs?limit=1", status=200)

        # Transport level: malformed HTTP (400), headers too large (431).
        status, headers, body = raw_exchange(d.port, b"NOT HTTP AT ALL\r\n\r\n")
        self.api.check("GET", "/v1/jobs", RawResponse(status, headers, body))
        self.assertEqual(status, 400)
        r, _ = self.call(d, "GET", "/v1/jobs", headers={"X-Big": "y" * 20000})
        self.assertEqual(r.status, 431, r)
        # Not operations of the document, but problem+json with a documented type: 404, 405.
        for method, path, status in (("GET", "/v1/nothing-here", 404), ("PUT", "/v1/jobs", 405)):
            r = d.request(method, path, "{}")
            self.assertEqual(r.status, status, r)
            p = json.loads(r.body)
            self.assertIn(p["type"][len(PROBLEM_BASE):], problem_sections(), p)

        # SIGTERM while a job runs: 503 while draining; after a restart the job resumes (202).
        _, last = self.call(d, "POST", "/v1/jobs", long_plan, status=201)
        d.wait_state(last["id"], "running", 30)
        d.signal(signal.SIGTERM)
        deadline = time.monotonic() + 5
        r = None
        while time.monotonic() < deadline:
            r = d.request("GET", "/readyz")
            if r.status == 503:
                break
            time.sleep(0.05)
        self.api.check("GET", "/readyz", r)
        self.assertEqual(r.status, 503, r)
        self.call(d, "POST", "/v1/jobs", plan("late"), status=503)
        self.call(d, "POST", "/v1/jobs/%s:resume" % last["id"], status=503)
        self.assertEqual(d.wait(20), 0, d.log_text()[-2000:])
        d.start()
        self.call(d, "GET", "/v1/jobs/" + last["id"], status=200)
        self.call(d, "POST", "/v1/jobs/%s:resume" % last["id"], status=202)
        self.call(d, "POST", "/v1/jobs/%s:cancel" % last["id"], status=None)
        d.signal(signal.SIGTERM)
        d.wait(20)

        # Every documented GET route was exercised.
        gets = {(t, "get") for t, item in self.api.doc["paths"].items() if "get" in item}
        hit = {(t, m) for t, m, _ in self.api.seen}
        self.assertEqual(gets - hit, set(), "documented GET routes not exercised")

    def test_connection_limit_503(self):
        d = Daemon(BINARY, args=["--max-connections-per-client", "1"], log_level="warn")
        self.addCleanup(d.cleanup)
        d.start()
        with socket.create_connection(("127.0.0.1", d.port), timeout=10) as held:
            time.sleep(0.2)  # accepted and counted before the second connection
            status, headers, body = raw_exchange(
                d.port, b"GET /v1/jobs HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            held.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        self.assertEqual(status, 503, body)
        self.assertTrue(headers.get("retry-after"), headers)
        self.api.check("GET", "/v1/jobs", RawResponse(status, headers, body))
        d.signal(signal.SIGTERM)
        self.assertEqual(d.wait(20), 0)

    def test_tokens_401_403(self):
        d = Daemon(BINARY, args=["--admin-tokens", ADMIN, "--read-tokens", READ,
                                 "--open-health=false", "--open-metrics=false"],
                   log_level="warn")
        self.addCleanup(d.cleanup)
        d.start()
        self.call(d, "GET", "/v1/openapi.json", status=200)
        for path in ("/healthz", "/readyz", "/metrics", "/", "/v1/jobs", "/v1/profiles",
                     "/v1/jobs/" + NO_JOB, "/v1/jobs/%s/results" % NO_JOB,
                     "/v1/compare?jobs=" + NO_JOB):
            r, _ = self.call(d, "GET", path, status=401)
            self.assertIn("Bearer", r.headers.get("www-authenticate", ""), path)
        for path in ("/healthz", "/readyz", "/metrics", "/", "/v1/jobs", "/v1/profiles"):
            self.call(d, "GET", path, token=READ, status=200)
        for method, path in (("POST", "/v1/jobs"), ("DELETE", "/v1/jobs/" + NO_JOB),
                             ("POST", "/v1/jobs/%s:cancel" % NO_JOB),
                             ("POST", "/v1/jobs/%s:resume" % NO_JOB),
                             ("POST", "/v1/jobs/%s/shards/0/clock" % NO_JOB),
                             ("GET", "/v1/jobs/%s/shards/0/assignment" % NO_JOB)):
            body = plan() if method == "POST" else None
            self.call(d, method, path, body, status=401)
            self.call(d, method, path, body, token=READ, status=403)
        self.call(d, "POST", "/v1/plans:validate", plan(), token=READ, status=200)
        self.call(d, "POST", "/v1/estimates/memory", {"hardware": "nope"}, token=READ,
                  status=422)
        d.signal(signal.SIGTERM)
        self.assertEqual(d.wait(20), 0)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: openapi_live_test.py SOURCE_DIR LLMCAPD")
    SOURCE_DIR, BINARY = sys.argv[1], sys.argv[2]
    unittest.main(argv=[sys.argv[0], "-v"])

#!/usr/bin/env python3
"""deploy_k8s_test: schema-style checks of deploy/k8s/ (Deployment, Service, PVC, ConfigMap,
ServiceMonitor, ServiceAccount, Role, RoleBinding, kustomization) and of how the pieces refer to
each other: selectors, ports, probe paths, volumes, the config file's keys against llmcapd's
settings, the security context, RBAC for the agent Indexed Jobs. deploy/k8s/agents/ holds the
agent token Secret template and an agent Indexed Job as llmcapd generates it (the unit test
server_k8s_manifest_test keeps it in sync with the code); both are checked against a strict
schema of the fields they use. When kubectl is installed, `kubectl kustomize` must render the
folder, and `kubectl create --dry-run=client` must accept every manifest (against a fake
discovery endpoint, as no cluster is needed for a client-side dry run).

Usage: deploy_k8s_test.py <repository root>. Needs PyYAML (Debian python3-yaml)."""
import glob
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import deploy_config  # noqa: E402

try:
    import yaml  # noqa: E402
except ImportError:
    print("FAIL: PyYAML is required: apt-get install python3-yaml")
    sys.exit(1)

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(__file__), "..", ".."))
K8S = os.path.join(ROOT, "deploy/k8s")
errors = []


def err(msg):
    errors.append(msg)


def need(cond, msg):
    if not cond:
        err(msg)
    return cond


def get(obj, path, default=None):
    for key in path.split("."):
        if isinstance(obj, dict) and key in obj:
            obj = obj[key]
        elif isinstance(obj, list) and key.isdigit() and int(key) < len(obj):
            obj = obj[int(key)]
        else:
            return default
    return obj


API_VERSIONS = {"Namespace": "v1", "ConfigMap": "v1", "PersistentVolumeClaim": "v1",
                "Service": "v1", "Deployment": "apps/v1",
                "ServiceMonitor": "monitoring.coreos.com/v1", "ServiceAccount": "v1",
                "Role": "rbac.authorization.k8s.io/v1",
                "RoleBinding": "rbac.authorization.k8s.io/v1"}


def load():
    kust_path = os.path.join(K8S, "kustomization.yaml")
    with open(kust_path, encoding="utf-8") as f:
        kust = yaml.safe_load(f)
    need(kust.get("apiVersion") == "kustomize.config.k8s.io/v1beta1" and
         kust.get("kind") == "Kustomization", "kustomization.yaml: not a Kustomization")
    resources = kust.get("resources", [])
    files = sorted(os.path.basename(p) for p in glob.glob(os.path.join(K8S, "*.yaml"))
                   if os.path.basename(p) != "kustomization.yaml")
    need(sorted(resources) == files,
         "kustomization resources %r must list exactly the manifests %r" % (resources, files))
    objects = {}
    for name in resources:
        path = os.path.join(K8S, name)
        if not need(os.path.isfile(path), "kustomization lists missing file %s" % name):
            continue
        with open(path, encoding="utf-8") as f:
            for doc in yaml.safe_load_all(f):
                if doc is None:
                    continue
                kind = doc.get("kind")
                where = "%s (%s)" % (name, kind)
                need(kind in API_VERSIONS, "%s: unexpected kind" % where)
                need(doc.get("apiVersion") == API_VERSIONS.get(kind),
                     "%s: apiVersion %r, want %r" % (where, doc.get("apiVersion"),
                                                      API_VERSIONS.get(kind)))
                need(get(doc, "metadata.name"), "%s: no metadata.name" % where)
                need("namespace" not in doc.get("metadata", {}),
                     "%s: namespace comes from the kustomization, not the manifest" % where)
                objects.setdefault(kind, []).append(doc)
    for kind in API_VERSIONS:
        need(len(objects.get(kind, [])) == 1, "want exactly one %s" % kind)
    return kust, {k: v[0] for k, v in objects.items() if v}


def matches(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def check(kust, o):
    schema = deploy_config.config_schema(ROOT)
    dep, svc = o.get("Deployment", {}), o.get("Service", {})
    cm, pvc, sm = o.get("ConfigMap", {}), o.get("PersistentVolumeClaim", {}), o.get(
        "ServiceMonitor", {})
    ns = o.get("Namespace", {})
    need(kust.get("namespace") == get(ns, "metadata.name"),
         "kustomization namespace %r is not the Namespace resource %r"
         % (kust.get("namespace"), get(ns, "metadata.name")))

    # Deployment: one replica, Recreate (SQLite has one writer).
    spec = dep.get("spec", {})
    need(spec.get("replicas") == 1, "Deployment: replicas must be 1 (SQLite), got %r"
         % spec.get("replicas"))
    need(get(spec, "strategy.type") == "Recreate", "Deployment: strategy must be Recreate")
    pod_labels = get(spec, "template.metadata.labels", {})
    need(matches(get(spec, "selector.matchLabels"), pod_labels),
         "Deployment: selector does not match the pod labels")
    pod = get(spec, "template.spec", {})
    need(pod.get("enableServiceLinks") is False,
         "pod: enableServiceLinks must be false (service variables could look like LLMCAP_*)")
    # llmcapd creates the agent Indexed Jobs with its service account's token (role.yaml).
    need(pod.get("serviceAccountName") == get(o.get("ServiceAccount", {}), "metadata.name"),
         "pod: serviceAccountName %r is not the ServiceAccount %r"
         % (pod.get("serviceAccountName"), get(o.get("ServiceAccount", {}), "metadata.name")))
    need(pod.get("automountServiceAccountToken") is True,
         "pod: automountServiceAccountToken must be true (llmcapd creates agent Jobs)")
    psc = pod.get("securityContext", {})
    need(psc.get("runAsNonRoot") is True, "pod securityContext: runAsNonRoot must be true")
    need(isinstance(psc.get("runAsUser"), int) and psc["runAsUser"] > 0,
         "pod securityContext: runAsUser must be a non-zero UID")
    need(psc.get("fsGroup"), "pod securityContext: fsGroup needed to write the volume")
    need(get(psc, "seccompProfile.type") == "RuntimeDefault",
         "pod securityContext: seccompProfile RuntimeDefault")
    containers = pod.get("containers", [])
    if not need(len(containers) == 1, "pod: want one container"):
        return
    c = containers[0]
    csc = c.get("securityContext", {})
    need(csc.get("readOnlyRootFilesystem") is True, "container: readOnlyRootFilesystem")
    need(csc.get("allowPrivilegeEscalation") is False, "container: allowPrivilegeEscalation")
    need(get(csc, "capabilities.drop") == ["ALL"], "container: capabilities.drop [ALL]")
    argv = (c.get("command") or []) + (c.get("args") or [])
    need("serve" in argv, "container: must run `llmcapd serve`, got %r" % argv)
    config_path = argv[argv.index("--config") + 1] if "--config" in argv[:-1] else None
    need(config_path, "container: no --config")

    ports = {p.get("name"): p.get("containerPort") for p in c.get("ports", [])}
    need("http" in ports, "container: no port named http")
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz"),
                        ("startupProbe", "/healthz")):
        p = c.get(probe)
        if not need(p, "container: no %s" % probe):
            continue
        need(get(p, "httpGet.path") == path, "%s: path %r, want %s"
             % (probe, get(p, "httpGet.path"), path))
        need(get(p, "httpGet.port") in ("http", ports.get("http")),
             "%s: port %r is not the http port" % (probe, get(p, "httpGet.port")))
    res = c.get("resources", {})
    for kind in ("requests", "limits"):
        for r in ("cpu", "memory"):
            need(get(res, "%s.%s" % (kind, r)), "container: resources.%s.%s missing" % (kind, r))
    grace = pod.get("terminationGracePeriodSeconds", 30)

    # Volumes: database on the PVC, config from the ConfigMap, a writable /tmp.
    volumes = {v.get("name"): v for v in pod.get("volumes", [])}
    mounts = {m.get("mountPath"): m for m in c.get("volumeMounts", [])}
    for m in mounts.values():
        need(m.get("name") in volumes, "mount %s: no volume %r" % (m.get("mountPath"),
                                                                  m.get("name")))
    data = mounts.get("/var/lib/llmcap")
    if need(data, "container: /var/lib/llmcap not mounted"):
        claim = get(volumes.get(data["name"], {}), "persistentVolumeClaim.claimName")
        need(claim == get(pvc, "metadata.name"),
             "/var/lib/llmcap: claim %r is not the PVC %r" % (claim, get(pvc, "metadata.name")))
        need(not data.get("readOnly"), "/var/lib/llmcap must be writable")
    need("/tmp" in mounts, "container: /tmp must be mounted (read-only root, SQLite temp files)")
    need(get(pvc, "spec.accessModes") == ["ReadWriteOnce"], "PVC: accessModes [ReadWriteOnce]")
    need(get(pvc, "spec.resources.requests.storage"), "PVC: no storage request")

    cfg = None
    if config_path:
        cfg_dir, cfg_file = os.path.split(config_path)
        m = mounts.get(cfg_dir)
        if need(m, "config folder %s not mounted" % cfg_dir):
            need(m.get("readOnly") is True, "config mount should be readOnly")
            cm_name = get(volumes.get(m["name"], {}), "configMap.name")
            need(cm_name == get(cm, "metadata.name"),
                 "config volume uses ConfigMap %r, not %r" % (cm_name, get(cm, "metadata.name")))
            text = get(cm, "data", {}).get(cfg_file)
            if need(text, "ConfigMap has no key %s" % cfg_file):
                try:
                    cfg = json.loads(text)
                except json.JSONDecodeError as e:
                    err("ConfigMap %s is not JSON: %s" % (cfg_file, e))
    if cfg is not None:
        for p in deploy_config.check_config(cfg, schema, "ConfigMap llmcapd.json"):
            err(p)
        need(cfg.get("listen_address") in ("0.0.0.0", "::"),
             "config: listen_address must be 0.0.0.0 in a pod (probes and the Service)")
        need(cfg.get("port", 8080) == ports.get("http"),
             "config: port %r is not the container port %r" % (cfg.get("port", 8080),
                                                              ports.get("http")))
        need(str(cfg.get("database", "")).startswith("/var/lib/llmcap/"),
             "config: database must live on the volume /var/lib/llmcap")
        need(cfg.get("open_health", True) is True, "config: open_health must stay true (probes)")
        need(grace > cfg.get("shutdown_grace_s", 30),
             "terminationGracePeriodSeconds %r must exceed shutdown_grace_s %r"
             % (grace, cfg.get("shutdown_grace_s", 30)))
        need("admin_tokens" not in cfg and "read_tokens" not in cfg,
             "config: tokens belong in the Secret, not the ConfigMap")
    for e in c.get("env", []):
        name = e.get("name", "")
        if name.startswith("LLMCAP_"):
            need(name[len("LLMCAP_"):].lower() in schema,
                 "env %s is not an llmcapd setting (llmcapd refuses unknown LLMCAP_*)" % name)
        ref = get(e, "valueFrom.secretKeyRef")
        if ref:
            need(ref.get("optional") is True, "env %s: secret ref should be optional" % name)

    # Service and ServiceMonitor.
    need(get(svc, "metadata.name") != "llmcap",
         "Service must not be named llmcap (its LLMCAP_* service variables)")
    need(matches(get(svc, "spec.selector"), pod_labels), "Service selector does not match pods")
    svc_ports = {p.get("name"): p for p in get(svc, "spec.ports", [])}
    http = svc_ports.get("http")
    if need(http, "Service: no port named http"):
        need(http.get("targetPort") in ("http", ports.get("http")),
             "Service: targetPort %r is not the container's http port" % http.get("targetPort"))
    need(matches(get(sm, "spec.selector.matchLabels"), get(svc, "metadata.labels", {})),
         "ServiceMonitor selector does not match the Service labels")
    eps = get(sm, "spec.endpoints", [])
    if need(len(eps) == 1, "ServiceMonitor: want one endpoint"):
        need(eps[0].get("port") in svc_ports, "ServiceMonitor: port %r is not a Service port"
             % eps[0].get("port"))
        need(eps[0].get("path", "/metrics") == "/metrics", "ServiceMonitor: path /metrics")
        need(eps[0].get("interval") == "5s", "ServiceMonitor: interval 5s")
    # The alert rules select up{job="llmcapd"}; the operator names the job after the Service.
    need(get(svc, "metadata.name") == "llmcapd",
         "Service name %r: alert rules expect job llmcapd" % get(svc, "metadata.name"))
    image_names = [i.get("name") for i in kust.get("images", [])]
    need(c.get("image", "").split(":")[0] in image_names,
         "kustomization images do not set the container image %r" % c.get("image"))

# --- RBAC and the agent fleet (issue 11) -------------------------------------------------------

DNS1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$")


def label_key_ok(key):
    prefix, _, name = key.rpartition("/")
    if prefix and not all(DNS1123.match(p) for p in prefix.split(".")):
        return False
    return bool(name) and len(name) <= 63 and bool(LABEL_NAME.match(name))


def check_labels(labels, where):
    for k, v in (labels or {}).items():
        need(label_key_ok(k), "%s: label key %r invalid" % (where, k))
        need(isinstance(v, str) and len(v) <= 63 and LABEL_VALUE.match(v),
             "%s: label %s value %r invalid" % (where, k, v))


def check_rbac(o):
    sa, role, rb = o.get("ServiceAccount", {}), o.get("Role", {}), o.get("RoleBinding", {})
    rules = {}
    for r in role.get("rules", []):
        for g in r.get("apiGroups", []):
            for res in r.get("resources", []):
                rules.setdefault((g, res), set()).update(r.get("verbs", []))
    need({"create", "get", "list", "watch", "delete"} <= rules.get(("batch", "jobs"), set()),
         "Role: needs create/get/list/watch/delete on batch jobs, has %r"
         % sorted(rules.get(("batch", "jobs"), set())))
    need({"get", "list"} <= rules.get(("", "pods"), set()), "Role: needs get/list on pods")
    for (g, res), verbs in rules.items():
        need(res != "secrets", "Role: llmcapd must not read Secrets")
        need("*" not in verbs and res != "*" and g != "*", "Role: no wildcards")
    need(role.get("kind") == "Role", "RBAC must be a namespaced Role, not a ClusterRole")
    ref = rb.get("roleRef", {})
    need(ref.get("kind") == "Role" and ref.get("name") == get(role, "metadata.name") and
         ref.get("apiGroup") == "rbac.authorization.k8s.io",
         "RoleBinding: roleRef %r is not the Role %r" % (ref, get(role, "metadata.name")))
    subjects = rb.get("subjects", [])
    need(any(x.get("kind") == "ServiceAccount" and x.get("name") == get(sa, "metadata.name")
             for x in subjects),
         "RoleBinding: subjects %r do not name the ServiceAccount %r"
         % (subjects, get(sa, "metadata.name")))


JOB_SCHEMA = {
    "": {"apiVersion", "kind", "metadata", "spec"},
    "metadata": {"name", "namespace", "labels", "annotations"},
    "spec": {"completionMode", "completions", "parallelism", "backoffLimit",
             "activeDeadlineSeconds", "ttlSecondsAfterFinished", "template"},
    "spec.template": {"metadata", "spec"},
    "spec.template.metadata": {"labels"},
    "spec.template.spec": {"restartPolicy", "automountServiceAccountToken", "enableServiceLinks",
                           "terminationGracePeriodSeconds", "securityContext", "containers",
                           "serviceAccountName", "nodeSelector", "topologySpreadConstraints"},
    "spec.template.spec.securityContext": {"runAsNonRoot", "runAsUser", "runAsGroup",
                                           "seccompProfile"},
    "container": {"name", "image", "imagePullPolicy", "command", "args", "env", "resources",
                  "securityContext"},
    "container.securityContext": {"runAsNonRoot", "allowPrivilegeEscalation",
                                  "readOnlyRootFilesystem", "capabilities"},
    "container.resources": {"requests", "limits"},
    "env": {"name", "valueFrom"},
    "env.valueFrom": {"secretKeyRef"},
    "env.valueFrom.secretKeyRef": {"name", "key"},
    "spread": {"maxSkew", "topologyKey", "whenUnsatisfiable", "labelSelector"},
}
INT_FIELDS = ("spec.completions", "spec.parallelism", "spec.backoffLimit",
              "spec.activeDeadlineSeconds", "spec.ttlSecondsAfterFinished",
              "spec.template.spec.terminationGracePeriodSeconds")


def strict_keys(obj, schema_key, where):
    if not need(isinstance(obj, dict), "%s: must be an object" % where):
        return
    extra = set(obj) - JOB_SCHEMA[schema_key]
    need(not extra, "%s: unknown field(s) %r (a typo Kubernetes would drop or refuse)"
         % (where, sorted(extra)))


def check_agent_job(job, namespace, kust, secret):
    where = "agents/indexed-job.example.yaml"
    need(job.get("apiVersion") == "batch/v1" and job.get("kind") == "Job",
         "%s: not a batch/v1 Job" % where)
    for path in ("", "metadata", "spec", "spec.template", "spec.template.metadata",
                 "spec.template.spec", "spec.template.spec.securityContext"):
        strict_keys(get(job, path) if path else job, path, "%s %s" % (where, path or "/"))
    for path in INT_FIELDS:
        v = get(job, path)
        need(isinstance(v, int) and not isinstance(v, bool) and v >= 0,
             "%s: %s must be a non-negative integer, got %r" % (where, path, v))
    name = get(job, "metadata.name", "")
    need(DNS1123.match(name) and len(name) <= 52,
         "%s: name %r must be a DNS-1123 label of at most 52 characters" % (where, name))
    need(get(job, "metadata.namespace") == namespace,
         "%s: namespace %r, want %r" % (where, get(job, "metadata.namespace"), namespace))
    spec = job.get("spec", {})
    need(spec.get("completionMode") == "Indexed", "%s: completionMode must be Indexed" % where)
    need(spec.get("completions") == spec.get("parallelism") and spec.get("completions", 0) >= 1,
         "%s: completions must equal parallelism (one pod per shard)" % where)
    labels = get(job, "metadata.labels", {})
    check_labels(labels, where + " labels")
    pod_labels = get(spec, "template.metadata.labels", {})
    check_labels(pod_labels, where + " pod labels")
    need(pod_labels.get("llmcap.io/job-id") and labels.get("app.kubernetes.io/name"),
         "%s: llmcap.io/job-id and app.kubernetes.io/name labels missing" % where)
    pod = get(spec, "template.spec", {})
    need(pod.get("restartPolicy") in ("Never", "OnFailure"),
         "%s: restartPolicy must be Never or OnFailure for a Job" % where)
    need(pod.get("automountServiceAccountToken") is False,
         "%s: agents never call the API server; no token" % where)
    need(pod.get("enableServiceLinks") is False, "%s: enableServiceLinks must be false" % where)
    psc = pod.get("securityContext", {})
    need(psc.get("runAsNonRoot") is True and get(psc, "seccompProfile.type") == "RuntimeDefault",
         "%s: pod security context must pass the namespace's restricted level" % where)
    for k, v in (pod.get("nodeSelector") or {}).items():
        need(label_key_ok(k) and LABEL_VALUE.match(v), "%s: nodeSelector %r=%r" % (where, k, v))
    for i, c in enumerate(pod.get("topologySpreadConstraints", [])):
        w = "%s spread[%d]" % (where, i)
        strict_keys(c, "spread", w)
        need(isinstance(c.get("maxSkew"), int) and c["maxSkew"] >= 1, "%s: maxSkew >= 1" % w)
        need(c.get("topologyKey") in ("topology.kubernetes.io/zone", "kubernetes.io/hostname"),
             "%s: topologyKey %r" % (w, c.get("topologyKey")))
        need(c.get("whenUnsatisfiable") in ("DoNotSchedule", "ScheduleAnyway"),
             "%s: whenUnsatisfiable %r" % (w, c.get("whenUnsatisfiable")))
        need(matches(get(c, "labelSelector.matchLabels"), pod_labels),
             "%s: labelSelector does not select the Job's own pods" % w)
    containers = pod.get("containers", [])
    if not need(len(containers) == 1, "%s: want one container" % where):
        return
    c = containers[0]
    strict_keys(c, "container", where + " container")
    strict_keys(c.get("securityContext", {}), "container.securityContext",
                where + " container.securityContext")
    csc = c.get("securityContext", {})
    need(csc.get("allowPrivilegeEscalation") is False and get(csc, "capabilities.drop") == ["ALL"],
         "%s: container must drop ALL capabilities, no privilege escalation" % where)
    need(c.get("imagePullPolicy") in ("Always", "IfNotPresent", "Never"),
         "%s: imagePullPolicy %r" % (where, c.get("imagePullPolicy")))
    image_names = [i.get("name") for i in kust.get("images", [])]
    need(c.get("image", "").split(":")[0] in image_names,
         "%s: image %r is not llmcapd's image" % (where, c.get("image")))
    argv = (c.get("command") or []) + (c.get("args") or [])
    need(len(argv) >= 2 and argv[1] == "agent", "%s: must run `llmcapd agent`, got %r"
         % (where, argv))
    for flag in ("--daemon", "--job"):
        need(flag in argv[:-1], "%s: %s missing" % (where, flag))
    need("--shard" not in argv, "%s: the shard index comes from JOB_COMPLETION_INDEX" % where)
    if "--region-list" in argv[:-1]:
        regions = argv[argv.index("--region-list") + 1].split(",")
        need(len(regions) == spec.get("completions"),
             "%s: %d regions for %r shards" % (where, len(regions), spec.get("completions")))
    strict_keys(c.get("resources", {}), "container.resources", where + " resources")
    for kind in ("requests", "limits"):
        for r in ("cpu", "memory"):
            v = get(c, "resources.%s.%s" % (kind, r))
            need(isinstance(v, str) and QUANTITY.match(v),
                 "%s: resources.%s.%s %r is not a quantity" % (where, kind, r, v))
    tokens = 0
    for e in c.get("env", []):
        strict_keys(e, "env", where + " env")
        need("value" not in e, "%s: env %s has an inline value; tokens come from a Secret"
             % (where, e.get("name")))
        ref = get(e, "valueFrom.secretKeyRef")
        if ref:
            strict_keys(ref, "env.valueFrom.secretKeyRef", where + " secretKeyRef")
            tokens += 1
            need(e.get("name") == "LLMCAP_AGENT_TOKEN",
                 "%s: the token env must be LLMCAP_AGENT_TOKEN (llmcapd agent reads it)" % where)
            need(ref.get("name") == get(secret, "metadata.name") and
                 ref.get("key") in get(secret, "stringData", {}),
                 "%s: secretKeyRef %r does not match the Secret template" % (where, ref))
    need(tokens == 1, "%s: want the agent token from exactly one secretKeyRef" % where)
    need("--token" not in argv, "%s: no token on the command line" % where)


def check_agents(kust, o):
    agents_dir = os.path.join(K8S, "agents")
    with open(os.path.join(agents_dir, "agent-token-secret.yaml"), encoding="utf-8") as f:
        secret = yaml.safe_load(f)
    need(secret.get("apiVersion") == "v1" and secret.get("kind") == "Secret",
         "agent-token-secret.yaml: not a v1 Secret")
    need(get(secret, "metadata.namespace") == kust.get("namespace"),
         "agent-token-secret.yaml: namespace must be %r" % kust.get("namespace"))
    token = get(secret, "stringData.token", "")
    need(isinstance(token, str) and len(token) >= 16,
         "agent-token-secret.yaml: stringData.token placeholder of >= 16 characters")
    with open(os.path.join(agents_dir, "indexed-job.example.yaml"), encoding="utf-8") as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    if need(len(docs) == 1, "indexed-job.example.yaml: want one document"):
        check_agent_job(docs[0], kust.get("namespace"), kust, secret)
    # The daemon's config must point agents at its Service and name the same Secret.
    cm = o.get("ConfigMap", {})
    cfg = json.loads(get(cm, "data", {}).get("llmcapd.json", "{}"))
    svc = o.get("Service", {})
    port = get(svc, "spec.ports.0.port")
    want_url = "http://%s.%s.svc:%s" % (get(svc, "metadata.name"), kust.get("namespace"), port)
    need(cfg.get("k8s_daemon_url") == want_url,
         "ConfigMap: k8s_daemon_url %r, want the Service %r" % (cfg.get("k8s_daemon_url"),
                                                                 want_url))
    need(cfg.get("k8s_agent_token_secret", "llmcap-agent-token") == get(secret, "metadata.name"),
         "ConfigMap: k8s_agent_token_secret does not name agents/agent-token-secret.yaml")
    need(cfg.get("k8s_mode", "auto") in ("auto", "api"),
         "ConfigMap: k8s_mode must let llmcapd use its service account (auto or api)")
    # The agents run the daemon's own image: not pinned in the ConfigMap (it would not follow
    # `kustomize edit set image`), but copied from the container into its environment.
    need("k8s_agent_image" not in cfg,
         "ConfigMap: k8s_agent_image %r is pinned; the Deployment's LLMCAP_K8S_AGENT_IMAGE, copied "
         "from its own image by kustomization.yaml, must decide it" % cfg.get("k8s_agent_image"))
    dep = o.get("Deployment", {})
    env = [e.get("name") for c in get(dep, "spec.template.spec.containers", []) or []
           if c.get("name") == "llmcapd" for e in c.get("env", []) or []]
    need("LLMCAP_K8S_AGENT_IMAGE" in env,
         "Deployment: the llmcapd container has no LLMCAP_K8S_AGENT_IMAGE variable")
    copied = [r for r in kust.get("replacements", []) or []
              if get(r, "source.fieldPath", "").endswith("[name=llmcapd].image") and
              any(p.endswith("[name=LLMCAP_K8S_AGENT_IMAGE].value")
                  for t in r.get("targets", []) for p in t.get("fieldPaths", []))]
    need(len(copied) == 1,
         "kustomization.yaml: no replacement copies the llmcapd image to LLMCAP_K8S_AGENT_IMAGE")
    return docs[0] if docs else None, secret


class FakeDiscovery(http.server.BaseHTTPRequestHandler):
    """Just enough of the API server's discovery for `kubectl create --dry-run=client`."""
    GROUPS = {
        "apps/v1": [("deployments", "Deployment", True)],
        "batch/v1": [("jobs", "Job", True)],
        "rbac.authorization.k8s.io/v1": [("roles", "Role", True),
                                         ("rolebindings", "RoleBinding", True)],
        "monitoring.coreos.com/v1": [("servicemonitors", "ServiceMonitor", True)],
    }
    CORE = [("namespaces", "Namespace", False), ("configmaps", "ConfigMap", True),
            ("persistentvolumeclaims", "PersistentVolumeClaim", True),
            ("services", "Service", True), ("serviceaccounts", "ServiceAccount", True),
            ("secrets", "Secret", True), ("pods", "Pod", True)]

    def log_message(self, *args):
        pass

    def reply(self, obj, status=200):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    @staticmethod
    def resources(gv, items):
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
                "resources": [{"name": n, "singularName": "", "namespaced": ns, "kind": k,
                               "verbs": ["create", "get", "list", "delete"]}
                              for n, k, ns in items]}

    def do_GET(self):
        path = self.path.split("?")[0]
        if path == "/api":
            self.reply({"kind": "APIVersions", "versions": ["v1"],
                        "serverAddressByClientCIDRs": []})
        elif path == "/apis":
            groups = []
            for gv in self.GROUPS:
                g, v = gv.split("/")
                groups.append({"name": g, "versions": [{"groupVersion": gv, "version": v}],
                               "preferredVersion": {"groupVersion": gv, "version": v}})
            self.reply({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
        elif path == "/api/v1":
            self.reply(self.resources("v1", self.CORE))
        elif path.startswith("/apis/") and path[len("/apis/"):] in self.GROUPS:
            gv = path[len("/apis/"):]
            self.reply(self.resources(gv, self.GROUPS[gv]))
        else:
            self.reply({"kind": "Status", "code": 404}, 404)


def kubectl_dry_run(extra_files):
    """kubectl create --dry-run=client on the rendered folder and the agent manifests. kubectl
    needs API discovery to map kinds to resources even for a client-side dry run; a local fake
    answers it, so nothing reaches a cluster."""
    if shutil.which("kubectl") is None:
        print("note: kubectl not installed; dry run not checked")
        return
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeDiscovery)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = "http://127.0.0.1:%d" % server.server_address[1]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, KUBECONFIG=os.path.join(tmp, "none"),
                       HOME=tmp)  # no cached discovery from a real cluster
            base = ["kubectl", "--server", url, "create", "--dry-run=client", "--validate=false",
                    "-o", "json"]
            runs = [base + ["-k", K8S]] + [base + ["-f", f] for f in extra_files]
            for argv in runs:
                r = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
                if not need(r.returncode == 0, "kubectl %s failed: %s"
                            % (" ".join(argv[5:]), r.stderr.strip()[-500:])):
                    continue
                items, text, pos = [], r.stdout, 0
                decoder = json.JSONDecoder()
                while text[pos:].strip():  # one JSON object per resource, concatenated
                    pos += len(text[pos:]) - len(text[pos:].lstrip())
                    obj, pos = decoder.raw_decode(text, pos)
                    items.extend(obj.get("items", [obj]))
                print("kubectl create --dry-run=client %s: %d object(s)"
                      % (os.path.relpath(argv[-1], ROOT), len(items)))
                for item in items:
                    if item.get("kind") == "Job":
                        need(get(item, "spec.completionMode") == "Indexed",
                             "kubectl dry run dropped completionMode")
    finally:
        server.shutdown()


def kubectl_render():
    if shutil.which("kubectl") is None:
        print("note: kubectl not installed; kustomize rendering not checked")
        return
    r = subprocess.run(["kubectl", "kustomize", K8S], capture_output=True, text=True,
                       timeout=60)
    if not need(r.returncode == 0, "kubectl kustomize failed: %s" % r.stderr.strip()):
        return
    docs = [d for d in yaml.safe_load_all(r.stdout) if d]
    kinds = sorted(d["kind"] for d in docs)
    need(kinds == sorted(API_VERSIONS), "rendered kinds %r" % kinds)
    for d in docs:
        if d["kind"] != "Namespace":
            need(get(d, "metadata.namespace") == "llmcap",
                 "rendered %s has namespace %r" % (d["kind"], get(d, "metadata.namespace")))
        if d["kind"] == "Deployment":
            image = get(d, "spec.template.spec.containers.0.image", "")
            need(":" in image, "rendered image %r has no tag" % image)
    print("kubectl kustomize: %d objects rendered" % len(docs))
    # `kustomize edit set image llmcapd=...` on a copy: the agents' image follows the daemon's.
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, "k8s")
        shutil.copytree(K8S, copy)
        path = os.path.join(copy, "kustomization.yaml")
        with open(path, encoding="utf-8") as f:
            kust = yaml.safe_load(f)
        for i in kust.get("images", []):
            if i.get("name") == "llmcapd":
                i["newName"], i["newTag"] = "registry.example.com/team/llmcapd", "9.9.9"
        with open(path, "w", encoding="utf-8") as f:
            yaml.safe_dump(kust, f)
        r = subprocess.run(["kubectl", "kustomize", copy], capture_output=True, text=True,
                           timeout=60)
        if not need(r.returncode == 0, "kubectl kustomize (image set) failed: %s" % r.stderr):
            return
        for d in yaml.safe_load_all(r.stdout):
            if d and d["kind"] == "Deployment":
                c = get(d, "spec.template.spec.containers.0", {})
                agent = [e.get("value") for e in c.get("env", [])
                         if e.get("name") == "LLMCAP_K8S_AGENT_IMAGE"]
                need(c.get("image") == "registry.example.com/team/llmcapd:9.9.9" and
                     agent == [c.get("image")],
                     "with the image set, llmcapd runs %r and its agents %r"
                     % (c.get("image"), agent))


if __name__ == "__main__":
    kust, objects = load()
    check(kust, objects)
    check_rbac(objects)
    check_agents(kust, objects)
    kubectl_render()
    kubectl_dry_run([os.path.join(K8S, "agents", n)
                     for n in ("indexed-job.example.yaml", "agent-token-secret.yaml")])
    for e in errors:
        print("FAIL: " + e)
    print("deploy_k8s_test: %d problems" % len(errors))
    sys.exit(1 if errors else 0)

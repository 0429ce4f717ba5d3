#!/usr/bin/env python3
"""deploy_k8s_test: schema-style checks of deploy/k8s/ (Deployment, Service, PVC, ConfigMap,
ServiceMonitor, kustomization) and of how the pieces refer to each other: selectors, ports,
probe paths, volumes, the config file's keys against llmcapd's settings, the security context.
When kubectl is installed, `kubectl kustomize` must also render the folder.

Usage: deploy_k8s_test.py <repository root>. Needs PyYAML (Debian python3-yaml)."""
import glob
import json
import os
import shutil
import subprocess
import sys

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
                "ServiceMonitor": "monitoring.coreos.com/v1"}


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
    need(pod.get("automountServiceAccountToken") is False,
         "pod: automountServiceAccountToken must be false (llmcapd never calls the API server)")
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


if __name__ == "__main__":
    kust, objects = load()
    check(kust, objects)
    kubectl_render()
    for e in errors:
        print("FAIL: " + e)
    print("deploy_k8s_test: %d problems" % len(errors))
    sys.exit(1 if errors else 0)

#!/usr/bin/env python3
"""deploy_systemd_test: checks deploy/systemd/llmcapd.service (required hardening directives,
stop timeout above the configured shutdown grace, ExecStart) and the example config
deploy/systemd/llmcapd.json (keys and types against server/daemon_config.{h,cc}); runs
`systemd-analyze verify` and `systemd-analyze security --offline` on a copy of the unit when
systemd-analyze works here (in containers it may not: then that part is reported as skipped).

Usage: deploy_systemd_test.py <repository root>. Standard library only."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import deploy_config  # noqa: E402

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(__file__), "..", ".."))
UNIT = os.path.join(ROOT, "deploy/systemd/llmcapd.service")
CONFIG = os.path.join(ROOT, "deploy/systemd/llmcapd.json")
errors = []

# Directive -> required value (None: present with any value). Values compare after splitting
# on whitespace, so order inside lists does not matter.
REQUIRED = {
    "Service": {
        "ExecStart": None, "StateDirectory": "llmcap", "ProtectSystem": "strict",
        "ProtectHome": "yes", "PrivateTmp": "yes", "NoNewPrivileges": "yes",
        "RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX",
        "CapabilityBoundingSet": "", "MemoryDenyWriteExecute": "yes", "LockPersonality": "yes",
        "RestrictNamespaces": "yes", "ProtectKernelTunables": "yes",
        "ProtectKernelModules": "yes", "ProtectKernelLogs": "yes",
        "ProtectControlGroups": "yes", "KillSignal": "SIGTERM", "Restart": "on-failure",
        "TimeoutStopSec": None, "PrivateDevices": "yes", "RestrictSUIDSGID": "yes",
    },
    "Install": {"WantedBy": "multi-user.target"},
}


def parse_unit(text):
    """{section: {key: [values...]}} (systemd allows repeated keys)."""
    out, section = {}, None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        m = re.match(r'^\[(\w+)\]$', line)
        if m:
            section = m.group(1)
            out.setdefault(section, {})
            continue
        if "=" not in line or section is None:
            errors.append("unit: cannot parse line %r" % raw)
            continue
        k, v = line.split("=", 1)
        out[section].setdefault(k.strip(), []).append(v.strip())
    return out


def seconds(text):
    m = re.fullmatch(r'(\d+(?:\.\d+)?)\s*(s|sec|min|m)?', text)
    if not m:
        return None
    return float(m.group(1)) * (60 if m.group(2) in ("min", "m") else 1)


def main():
    with open(UNIT, encoding="utf-8") as f:
        unit = parse_unit(f.read())
    for section, keys in REQUIRED.items():
        got = unit.get(section, {})
        for key, want in keys.items():
            if key not in got:
                errors.append("[%s] %s missing" % (section, key))
            elif want is not None and got[key][-1].split() != want.split():
                errors.append("[%s] %s=%s, want %r" % (section, key, got[key][-1], want))
    svc = unit.get("Service", {})
    if not (svc.get("DynamicUser") == ["yes"] or svc.get("User")):
        errors.append("[Service] needs DynamicUser=yes or a dedicated User=")
    filters = svc.get("SystemCallFilter", [])
    if "@system-service" not in filters:
        errors.append("[Service] SystemCallFilter=@system-service missing (got %r)" % filters)

    with open(CONFIG, encoding="utf-8") as f:
        cfg = json.load(f)
    schema = deploy_config.config_schema(ROOT)
    if len(schema) < 15:
        errors.append("parsed only %d settings from server/daemon_config.cc" % len(schema))
    errors.extend(deploy_config.check_config(cfg, schema, "llmcapd.json"))
    if cfg.get("database") != "/var/lib/llmcap/llmcap.db":
        errors.append("llmcapd.json: database must be /var/lib/llmcap/llmcap.db (StateDirectory)")
    if "admin_tokens" in cfg or "read_tokens" in cfg:
        errors.append("llmcapd.json: tokens belong in /etc/llmcap/llmcapd.env, not the JSON")

    exec_start = svc.get("ExecStart", [""])[-1]
    argv = exec_start.split()
    if len(argv) < 2 or not argv[0].endswith("/llmcapd") or argv[1] != "serve" or \
            "--config" not in argv or argv[argv.index("--config") + 1:][:1] != [
                "/etc/llmcap/llmcapd.json"]:
        errors.append("ExecStart=%r: want <path>/llmcapd serve --config /etc/llmcap/llmcapd.json"
                      % exec_start)
    stop = seconds(svc.get("TimeoutStopSec", ["0"])[-1])
    grace = cfg.get("shutdown_grace_s", 30)
    if stop is None or stop <= grace:
        errors.append("TimeoutStopSec=%s must exceed shutdown_grace_s=%s, or systemd kills "
                      "llmcapd mid-step" % (svc.get("TimeoutStopSec"), grace))
    print("unit: %d directives in [Service]; config: %d keys" % (len(svc), len(cfg)))

    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        print("note: systemd-analyze not installed; verify skipped")
        return
    with tempfile.TemporaryDirectory() as tmp:
        # verify insists that ExecStart's binary exists: point it at one that does.
        binary = os.path.join(ROOT, "build/release/server/llmcapd")
        if not os.path.exists(binary):
            binary = shutil.which("true") or "/bin/true"
        with open(UNIT, encoding="utf-8") as f:
            text = f.read().replace(argv[0], binary)
        copy = os.path.join(tmp, "llmcapd.service")
        with open(copy, "w", encoding="utf-8") as f:
            f.write(text)
        r = subprocess.run([analyze, "verify", copy], capture_output=True, text=True, timeout=60)
        out = (r.stdout + r.stderr).strip()
        if r.returncode != 0 and re.search(r"Failed to (initialize|connect|create)|"
                                           r"System has not been booted", out):
            print("note: systemd-analyze verify cannot run here: " + out.splitlines()[0])
            return
        # Unknown keys only warn (exit 0): any output counts as a failure.
        lines = [ln for ln in out.splitlines() if "llmcapd.service" in ln or r.returncode]
        if r.returncode != 0 or lines:
            errors.append("systemd-analyze verify: exit %d\n%s" % (r.returncode, out))
        else:
            print("systemd-analyze verify: clean")
        r = subprocess.run([analyze, "security", "--offline=yes", "--threshold=20", copy],
                           capture_output=True, text=True, timeout=60)
        level = re.search(r"Overall exposure level for \S+: ([\d.]+)", r.stdout)
        if r.returncode != 0:
            errors.append("systemd-analyze security: exposure above 2.0 (%s)"
                          % (level.group(1) if level else r.stdout[-300:] + r.stderr))
        elif level:
            print("systemd-analyze security: exposure %s (threshold 2.0)" % level.group(1))


if __name__ == "__main__":
    main()
    for e in errors:
        print("FAIL: " + e)
    sys.exit(1 if errors else 0)

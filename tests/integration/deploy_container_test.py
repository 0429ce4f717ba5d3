#!/usr/bin/env python3
"""deploy_container_test: static checks of deploy/container/Containerfile (no container engine
runs here, so it is checked by reading): two bookworm stages, the build stage uses
deploy/install-deps.sh and the release preset, the runtime stage runs as a non-root user with
VOLUME /var/lib/llmcap, EXPOSE of the configured port, a curl HEALTHCHECK on /healthz and
ENTRYPOINT llmcapd serve; the files it COPYs exist; the ignore file keeps build outputs out.

Usage: deploy_container_test.py <repository root>. Standard library only."""
import json
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(__file__), "..", ".."))
FILE = os.path.join(ROOT, "deploy/container/Containerfile")
errors = []


def instructions(text):
    """[(INSTRUCTION, arguments)] with line continuations joined and comments dropped."""
    out, buf = [], ""
    for line in text.splitlines():
        s = line.strip()
        if not buf and (not s or s.startswith("#")):
            continue
        if s.startswith("#"):
            continue
        if s.endswith("\\"):
            buf += s[:-1] + " "
            continue
        buf += s
        word, _, rest = buf.partition(" ")
        out.append((word.upper(), rest.strip()))
        buf = ""
    return out


def main():
    with open(FILE, encoding="utf-8") as f:
        ins = instructions(f.read())
    stages, cur = [], None
    for word, args in ins:
        if word == "FROM":
            cur = {"from": args, "ins": []}
            stages.append(cur)
        elif cur is None:
            errors.append("%s before FROM" % word)
        else:
            cur["ins"].append((word, args))
    if len(stages) != 2:
        errors.append("want 2 stages (build, runtime), got %d" % len(stages))
        return
    build, run = stages
    for s in stages:
        if not re.match(r'^debian:bookworm(-slim)?(@sha256:\w+)?\s+AS\s+\w+$', s["from"], re.I):
            errors.append("FROM %r: want debian:bookworm[-slim] AS <name>" % s["from"])
    build_name = build["from"].split()[-1]
    build_runs = " ".join(a for w, a in build["ins"] if w == "RUN")
    for needle in ("deploy/install-deps.sh", "cmake --preset release",
                   "cmake --build --preset release"):
        if needle not in build_runs:
            errors.append("build stage: no `%s`" % needle)
    for w, a in build["ins"] + run["ins"]:
        if w == "COPY" and "--from" not in a:
            for src in a.split()[:-1]:
                if src != "." and not os.path.exists(os.path.join(ROOT, src)):
                    errors.append("COPY %s: no such file in the repository" % src)
        if w == "COPY" and "--from" in a and ("--from=%s" % build_name) not in a:
            errors.append("COPY %r: copies from another stage than %s" % (a, build_name))
    runtime = {}
    for w, a in run["ins"]:
        runtime.setdefault(w, []).append(a)
    run_cmds = " ".join(runtime.get("RUN", []))
    if re.search(r'\b(build-essential|cmake|g\+\+|-dev)\b', run_cmds):
        errors.append("runtime stage installs build tools or -dev packages")
    if "curl" not in run_cmds:
        errors.append("runtime stage: curl (HEALTHCHECK) not installed")
    user = (runtime.get("USER") or [""])[-1]
    if not user or user.split(":")[0] in ("root", "0"):
        errors.append("runtime stage: USER must be a non-root user, got %r" % user)
    if "/var/lib/llmcap" not in " ".join(runtime.get("VOLUME", [])):
        errors.append("runtime stage: VOLUME /var/lib/llmcap missing")
    with open(os.path.join(ROOT, "deploy/systemd/llmcapd.json"), encoding="utf-8") as f:
        port = json.load(f).get("port", 8080)
    if str(port) not in " ".join(runtime.get("EXPOSE", [])).split():
        errors.append("runtime stage: EXPOSE %s missing" % port)
    hc = " ".join(runtime.get("HEALTHCHECK", []))
    if not re.search(r'CMD .*curl .*http://127\.0\.0\.1:%s/healthz' % port, hc):
        errors.append("HEALTHCHECK must curl http://127.0.0.1:%s/healthz, got %r" % (port, hc))
    ep = (runtime.get("ENTRYPOINT") or [""])[-1]
    try:
        ep_argv = json.loads(ep)
    except json.JSONDecodeError:
        ep_argv = None
    if not (isinstance(ep_argv, list) and len(ep_argv) >= 2 and
            ep_argv[0].endswith("/llmcapd") and ep_argv[1] == "serve"):
        errors.append("ENTRYPOINT must be the exec form [\".../llmcapd\", \"serve\"], got %r" % ep)
    env = " ".join(runtime.get("ENV", []))
    if "LLMCAP_LISTEN_ADDRESS=0.0.0.0" not in env:
        errors.append("runtime stage: LLMCAP_LISTEN_ADDRESS=0.0.0.0 needed (reachable via -p)")
    if "STOPSIGNAL" in runtime and runtime["STOPSIGNAL"][-1] != "SIGTERM":
        errors.append("STOPSIGNAL must be SIGTERM (graceful shutdown)")
    ignore = os.path.join(ROOT, "deploy/container/Containerfile.dockerignore")
    if not os.path.exists(ignore):
        errors.append("deploy/container/Containerfile.dockerignore missing")
    else:
        with open(ignore, encoding="utf-8") as f:
            pats = {ln.strip() for ln in f if ln.strip() and not ln.startswith("#")}
        for p in ("build", "build-*"):
            if p not in pats:
                errors.append("ignore file must exclude %s (host build outputs)" % p)
        if ".git" in pats:
            errors.append("ignore file must keep .git (the build reads the revision)")
    print("Containerfile: %d instructions in 2 stages" % len(ins))


if __name__ == "__main__":
    main()
    for e in errors:
        print("FAIL: " + e)
    sys.exit(1 if errors else 0)

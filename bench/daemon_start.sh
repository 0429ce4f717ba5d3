#!/usr/bin/env bash
# Daemon start-up time and idle memory (issue 10 targets: ≤ 200 ms from exec to a 200 from
# /readyz with an empty database; idle RSS ≤ 40 MB).
# Method: for each run, a fresh empty database in a temp dir; `llmcapd serve --port 0
# --database DB` is started from a small Python driver (started before the clock, so its own
# start-up is not counted); the port is read from the daemon's "listening on" line (a blocking
# read, no polling); /readyz is then requested in-process (http.client, retried every 1 ms)
# until it answers 200. Time = first 200 − just before exec. After IDLE_S seconds idle, VmRSS
# and VmHWM are read from /proc/PID/status. Prints each run and the medians.
# Usage: bench/daemon_start.sh [path/to/llmcapd] [runs=5] [idle_s=3]
set -euo pipefail
LLMCAPD=${1:-build-bench/server/llmcapd}
RUNS=${2:-5}
IDLE_S=${3:-3}
[[ -x "$LLMCAPD" ]] || { echo "daemon_start.sh: $LLMCAPD is not an executable (build llmcapd first)" >&2; exit 2; }
PY=$(command -v /usr/bin/python3 || command -v python3) || { echo "daemon_start.sh: python3 is needed" >&2; exit 2; }
exec "$PY" - "$LLMCAPD" "$RUNS" "$IDLE_S" <<'PYEOF'
import http.client, os, re, shutil, statistics, subprocess, sys, tempfile, time
llmcapd, runs, idle_s = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
ready, listen, rss, hwm = [], [], [], []
def status_kib(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1])
    return -1
for i in range(1, runs + 1):
    d = tempfile.mkdtemp(prefix="llmcap_daemon_start.")
    t0 = time.monotonic()
    p = subprocess.Popen([llmcapd, "serve", "--port", "0", "--database", os.path.join(d, "x.db")],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    port = None
    for line in p.stdout:
        m = re.match(r"listening on http://[^ ]*:(\d+)", line)
        if m:
            port = int(m.group(1))
            break
    if port is None:
        sys.exit(f"llmcapd exited without a 'listening on' line (rc {p.wait()})")
    tl = time.monotonic()
    while True:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", "/readyz")
            if c.getresponse().status == 200:
                break
        except OSError:
            pass
        time.sleep(0.001)
    t1 = time.monotonic()
    time.sleep(idle_s)
    r, h = status_kib(p.pid, "VmRSS:"), status_kib(p.pid, "VmHWM:")
    p.terminate(); p.wait()
    shutil.rmtree(d, ignore_errors=True)
    ready.append((t1 - t0) * 1e3); listen.append((tl - t0) * 1e3); rss.append(r); hwm.append(h)
    print(f"run {i}: /readyz 200 at {ready[-1]:.1f} ms (listening line at {listen[-1]:.1f} ms), "
          f"idle VmRSS {r / 1024:.1f} MiB, VmHWM {h / 1024:.1f} MiB")
med = statistics.median
print("| metric | median | range | target |")
print("|---|---|---|---|")
print(f"| exec → /readyz 200 | {med(ready):.1f} ms | {min(ready):.1f}–{max(ready):.1f} | ≤ 200 ms |")
print(f"| exec → \"listening on\" line | {med(listen):.1f} ms | {min(listen):.1f}–{max(listen):.1f} | |")
print(f"| idle VmRSS after {idle_s:g} s | {med(rss) / 1024:.1f} MiB | {min(rss) / 1024:.1f}–{max(rss) / 1024:.1f} | ≤ 40 MB |")
print(f"| VmHWM | {med(hwm) / 1024:.1f} MiB | | |")
PYEOF

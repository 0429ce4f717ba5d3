#!/usr/bin/env bash
# Daemon start-up time and idle memory (issue 10 targets: ≤ 200 ms from exec to a 200 from
# /readyz with an empty database; idle RSS ≤ 40 MB).
# Method: for each run, a fresh empty database in a temp dir; `llmcapd serve --port 0
# --database DB` is exec'd; the port is read from its "listening on" line; /readyz is polled
# every 2 ms with curl until it answers 200. Time = first 200 − exec. After IDLE_S seconds idle,
# VmRSS and VmHWM are read from /proc/PID/status. Prints each run and the median.
# Usage: bench/daemon_start.sh [path/to/llmcapd] [runs=5] [idle_s=3]
set -euo pipefail
LLMCAPD=${1:-build-bench/server/llmcapd}
RUNS=${2:-5}
IDLE_S=${3:-3}
[[ -x "$LLMCAPD" ]] || { echo "daemon_start.sh: $LLMCAPD is not an executable (build llmcapd first)" >&2; exit 2; }
command -v curl >/dev/null || { echo "daemon_start.sh: curl is needed" >&2; exit 2; }

now_ns() { date +%s%N; }
ready_ms=(); rss_kib=(); hwm_kib=()
for ((i = 1; i <= RUNS; i++)); do
  dir=$(mktemp -d /tmp/llmcap_daemon_start.XXXXXX)
  t0=$(now_ns)
  "$LLMCAPD" serve --port 0 --database "$dir/x.db" >"$dir/out" 2>"$dir/err" &
  pid=$!
  port=""
  for ((k = 0; k < 5000; k++)); do
    port=$(sed -n 's/^listening on http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$dir/out" 2>/dev/null | head -1)
    [[ -n "$port" ]] && break
    kill -0 "$pid" 2>/dev/null || { echo "llmcapd exited:"; cat "$dir/err"; exit 1; }
    sleep 0.001
  done
  [[ -n "$port" ]] || { echo "no port from llmcapd"; kill "$pid"; exit 1; }
  until [[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz")" == 200 ]]; do
    sleep 0.002
  done
  t1=$(now_ns)
  sleep "$IDLE_S"
  rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status")
  hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status")
  kill "$pid"; wait "$pid" 2>/dev/null || true
  rm -rf "$dir"
  ms=$(( (t1 - t0) / 1000000 ))
  ready_ms+=("$ms"); rss_kib+=("$rss"); hwm_kib+=("$hwm")
  echo "run $i: ready in $ms ms, idle VmRSS $((rss / 1024)) MiB ($rss KiB), VmHWM $((hwm / 1024)) MiB"
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
echo "| metric | median | target |"
echo "|---|---|---|"
echo "| exec → /readyz 200 | $(median "${ready_ms[@]}") ms | ≤ 200 ms |"
echo "| idle VmRSS after ${IDLE_S} s | $(( $(median "${rss_kib[@]}" | cut -d. -f1) / 1024 )) MiB ($(median "${rss_kib[@]}") KiB) | ≤ 40 MB |"
echo "| VmHWM | $(( $(median "${hwm_kib[@]}" | cut -d. -f1) / 1024 )) MiB | |"

#!/usr/bin/env bash
# End-to-end: Debian's Prometheus scrapes `llmcapd serve` every second while a short simulated
# job runs; the test then asks Prometheus' HTTP API (/api/v1/query) whether the load
# generator's series (llmcap_requests_total, llmcap_ttft_seconds_bucket) were collected and grew
# over time, and that the job's live gauges (label job_id) and the process_* metrics arrived. Usage: prometheus_scrape_test.sh <path to llmcapd>
# Prints "SKIPPED: ..." and exits 77 (CTest: skipped) when prometheus, curl or jq is missing. Every wait is
# bounded; the trap stops both processes and removes the temp directory on any exit.
set -euo pipefail

LLMCAPD=${1:?usage: $0 <llmcapd binary>}
PROMETHEUS=${PROMETHEUS:-/usr/bin/prometheus}
for tool in "$PROMETHEUS" curl jq python3; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "SKIPPED: $tool not installed"
    exit 77  # CTest: SKIP_RETURN_CODE
  fi
done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/llmcap-prom-test.XXXXXX")
DAEMON_PID=""
PROM_PID=""
cleanup() {
  local rc=$?
  for pid in "$PROM_PID" "$DAEMON_PID"; do
    if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
    fi
  done
  if [[ $rc -ne 0 ]]; then
    echo "---- llmcapd log (tail) ----"; tail -n 30 "$TMP/llmcapd.log" 2>/dev/null || true
    echo "---- prometheus log (tail) ----"; tail -n 30 "$TMP/prometheus.log" 2>/dev/null || true
  fi
  rm -rf "$TMP"
  exit $rc
}
trap cleanup EXIT INT TERM

fail() { echo "FAIL: $*" >&2; exit 1; }

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# ---- llmcapd serve on a free port (it prints the port it bound) ----
"$LLMCAPD" serve --port 0 --database "$TMP/llmcap.db" --log-level warn >"$TMP/llmcapd.log" 2>&1 &
DAEMON_PID=$!
DAEMON_PORT=""
for _ in $(seq 150); do
  DAEMON_PORT=$(sed -n 's|^listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$TMP/llmcapd.log" | head -n1)
  [[ -n "$DAEMON_PORT" ]] && break
  kill -0 "$DAEMON_PID" 2>/dev/null || fail "llmcapd exited before listening"
  sleep 0.1
done
[[ -n "$DAEMON_PORT" ]] || fail "llmcapd did not print 'listening on' within 15 s"
DAEMON="http://127.0.0.1:$DAEMON_PORT"
curl -fsS --max-time 5 "$DAEMON/metrics" >/dev/null || fail "GET $DAEMON/metrics failed"

# ---- prometheus scraping it every second ----
PROM_PORT=$(free_port)
PROM="http://127.0.0.1:$PROM_PORT"
cat >"$TMP/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 900ms
  evaluation_interval: 1s
scrape_configs:
  - job_name: llmcapd
    static_configs:
      - targets: ["127.0.0.1:$DAEMON_PORT"]
EOF
"$PROMETHEUS" --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/tsdb" \
  --web.listen-address="127.0.0.1:$PROM_PORT" --log.level=warn >"$TMP/prometheus.log" 2>&1 &
PROM_PID=$!

# PromQL instant query -> first result's value (empty when no result).
query() {
  curl -fsS --max-time 5 --get "$PROM/api/v1/query" --data-urlencode "query=$1" |
    jq -r 'select(.status == "success") | .data.result[0].value[1] // empty'
}

ready=""
for _ in $(seq 60); do
  kill -0 "$PROM_PID" 2>/dev/null || fail "prometheus exited early"
  if [[ "$(query 'up{job="llmcapd"}' 2>/dev/null || true)" == "1" ]]; then ready=1; break; fi
  sleep 0.5
done
[[ -n "$ready" ]] || fail "prometheus did not report up{job=\"llmcapd\"} == 1 within 30 s"

# ---- a short simulated job: two concurrency levels of 3 s ----
PLAN='{"version":1,"targets":[{"name":"a100","base_url":"sim://a100-80g-pcie/llama-3.1-8b"}],
"workload":{"input_tokens":{"fixed":128},"output_tokens":{"fixed":16}},
"phases":[{"kind":"concurrency_sweep","levels":[2,4],"duration_s":3,"warmup_s":0}]}'
JOB=$(curl -fsS --max-time 10 -H 'Content-Type: application/json' -d "$PLAN" "$DAEMON/v1/jobs") ||
  fail "POST /v1/jobs failed"
JOB_ID=$(jq -r '.id // empty' <<<"$JOB")
[[ -n "$JOB_ID" ]] || fail "POST /v1/jobs returned no id: $JOB"
echo "job $JOB_ID submitted"

# While it runs, sample what Prometheus has stored, once per second.
requests_seen=()
buckets_seen=()
state=""
for _ in $(seq 120); do
  state=$(curl -fsS --max-time 5 "$DAEMON/v1/jobs/$JOB_ID" | jq -r '.state')
  r=$(query 'sum(llmcap_requests_total)' || true)
  b=$(query 'sum(llmcap_ttft_seconds_bucket{le="+Inf"})' || true)
  [[ -n "$r" ]] && requests_seen+=("$r")
  [[ -n "$b" ]] && buckets_seen+=("$b")
  case "$state" in succeeded | failed | cancelled) break ;; esac
  sleep 1
done
[[ "$state" == "succeeded" ]] || fail "job ended in state '$state' (or did not end within 120 s)"
sleep 2.5  # two more scrapes after the last request
r=$(query 'sum(llmcap_requests_total)' || true); [[ -n "$r" ]] && requests_seen+=("$r")
b=$(query 'sum(llmcap_ttft_seconds_bucket{le="+Inf"})' || true); [[ -n "$b" ]] && buckets_seen+=("$b")
echo "sum(llmcap_requests_total) over time: ${requests_seen[*]:-none}"
echo "sum(llmcap_ttft_seconds_bucket{le=\"+Inf\"}) over time: ${buckets_seen[*]:-none}"

# Increasing over time: never decreasing, and the last value above the first seen.
check_increasing() {
  local name=$1; shift
  python3 - "$name" "$@" <<'PY'
import sys
name, vals = sys.argv[1], [float(v) for v in sys.argv[2:]]
if len(vals) < 3:
    sys.exit("%s: only %d samples seen in Prometheus" % (name, len(vals)))
if any(b < a for a, b in zip(vals, vals[1:])):
    sys.exit("%s decreased: %s" % (name, vals))
if not vals[-1] > vals[0]:
    sys.exit("%s did not grow during the job: %s" % (name, vals))
PY
}
check_increasing llmcap_requests_total "${requests_seen[@]}" || fail "llmcap_requests_total"
check_increasing llmcap_ttft_seconds_bucket "${buckets_seen[@]}" || fail "llmcap_ttft_seconds_bucket"

# The raw stored samples of one series (range selector through /api/v1/query) grow too, and
# the bucket series carry the histogram's le labels.
raw=$(curl -fsS --max-time 5 --get "$PROM/api/v1/query" \
  --data-urlencode 'query=sum(llmcap_requests_total)[5m:1s]' |
  jq -r '.data.result[0].values | map(.[1]) | join(" ")')
read -r -a raw_vals <<<"$raw"
check_increasing "llmcap_requests_total[5m:1s]" "${raw_vals[@]}" || fail "raw samples"
le_count=$(curl -fsS --max-time 5 --get "$PROM/api/v1/query" \
  --data-urlencode 'query=count(count by (le) (llmcap_ttft_seconds_bucket))' |
  jq -r '.data.result[0].value[1] // 0')
(( le_count >= 2 )) || fail "llmcap_ttft_seconds_bucket has $le_count le values"
curl -fsS --max-time 5 "$DAEMON/v1/jobs/$JOB_ID/results" >/dev/null ||
  fail "GET /v1/jobs/$JOB_ID/results failed"

# The job's live gauges arrive labelled job_id (not clashing with Prometheus' own `job` label,
# which stays the scrape job) and stay for the grace period after the job ended; the standard
# process_* metrics are scraped too.
verdicts=$(query "count(llmcap_last_verdict{job=\"llmcapd\", job_id=\"$JOB_ID\", target=\"a100\"})" || true)
[[ "${verdicts:-0}" -ge 1 ]] || fail "no llmcap_last_verdict series with job_id=$JOB_ID in Prometheus"
step=$(query "llmcap_current_step_index{job_id=\"$JOB_ID\", phase=\"concurrency_sweep\"}" || true)
[[ -n "$step" ]] || fail "no llmcap_current_step_index series of job $JOB_ID in Prometheus"
for m in process_cpu_seconds_total process_resident_memory_bytes process_open_fds process_max_fds \
         process_start_time_seconds process_virtual_memory_bytes; do
  v=$(query "$m{job=\"llmcapd\"}" || true)
  [[ -n "$v" ]] || fail "Prometheus has no $m{job=\"llmcapd\"}"
done
echo "PASS: prometheus saw llmcap_requests_total and llmcap_ttft_seconds_bucket grow ($le_count le buckets)"

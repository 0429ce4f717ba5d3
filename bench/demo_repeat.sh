#!/usr/bin/env bash
# Reproducibility of the `make demo` answer (issue 17): runs `llmcapd demo` N times (default 3)
# and prints, per run and target, the verdict, the qualified (confirmed) rate and the measured
# output tokens/s there, then each target's spread around its median.
# Usage: bench/demo_repeat.sh [LLMCAPD] [N] [OUT_DIR]
#   With LOAD_CMD set (e.g. LOAD_CMD='make -C /tmp/other-clone -j2 build'), that command runs in
#   the background during the LAST run, to measure the answer on a busy machine.
set -euo pipefail
LLMCAPD=${1:-build/release/server/llmcapd}
N=${2:-3}
OUT=${3:-$(mktemp -d /tmp/llmcap-demo-repeat.XXXXXX)}
mkdir -p "$OUT"
for i in $(seq 1 "$N"); do
  load_pid=""
  if [[ $i -eq $N && -n "${LOAD_CMD:-}" ]]; then
    # Its own session, so the whole build (make and its compilers) is stopped afterwards.
    setsid bash -c "$LOAD_CMD" >"$OUT/load.log" 2>&1 &
    load_pid=$!
  fi
  start=$SECONDS
  rc=0
  "$LLMCAPD" demo --out "$OUT/run$i.json" >"$OUT/run$i.txt" 2>&1 || rc=$?
  echo "run $i: exit $rc, $((SECONDS - start)) s${load_pid:+ (under load: $LOAD_CMD)}"
  if [[ -n "$load_pid" ]]; then
    kill -- "-$load_pid" 2>/dev/null || true
    wait "$load_pid" 2>/dev/null || true
  fi
done
python3 - "$OUT" "$N" <<'PY'
import json, statistics, sys
out, n = sys.argv[1], int(sys.argv[2])
rows = {}
for i in range(1, n + 1):
    doc = json.load(open(f"{out}/run{i}.json"))
    for t in doc["targets"]:
        q = t.get("qualified") or {}
        rate = q.get("offered_rate_rps")
        rows.setdefault(t["name"], []).append((t["verdict"]["outcome"], rate, q.get("output_tokens_per_s")))
        print(f"run {i} {t['name']:<16} {t['verdict']['outcome']:<12} rate {rate} rps, "
              f"{q.get('output_tokens_per_s')} out tok/s, labels {t['verdict'].get('labels')}")
    print(f"run {i} job verdict: {doc['verdict']['outcome']}")
for name, runs in rows.items():
    rates = [r for _, r, _ in runs if r is not None]
    verdicts = sorted({v for v, _, _ in runs})
    if rates:
        med = statistics.median(rates)
        worst = max(abs(r - med) / med for r in rates)
        print(f"{name}: verdicts {verdicts}, rates {rates}, median {med:.3f}, worst deviation {worst*100:.1f} %")
    else:
        print(f"{name}: verdicts {verdicts}, no qualified rate in any run")
PY
echo "results in $OUT"

#!/usr/bin/env bash
# Issue 54's figures with `serve`'s own defaults: a fresh store, `serve` with no flag but the
# listen address and the database, N default `c960-worker work` processes on this machine, one
# campaign; at completion, `/api/v1/status`'s figures: the campaign's coordinator share of its
# valid nodes (tallies) and the volunteers' results per valid workunit.
#
#   scripts/coordinator-share.sh WORKERS CAMPAIGN-ADD-ARGS...
#   e.g. scripts/coordinator-share.sh 4 --depth 5 --family shuffle
#
# Binaries: $B (default target/release; `cargo build --release -p c960-coordinator -p c960-worker`).
set -euo pipefail
cd "$(dirname "$0")/.."
B=${B:-target/release}
(( $# >= 2 )) || { echo "usage: $0 WORKERS CAMPAIGN-ADD-ARGS..." >&2; exit 2; }
n=$1; shift
d=$(mktemp -d); port=$((20000 + RANDOM % 20000))
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$d"; }
trap cleanup EXIT
export C960_ENROL_SECRET=a-long-lab-secret
"$B/c960-coordinator" serve --listen 127.0.0.1:$port --db "$d/c.sqlite" > "$d/serve.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do curl -sf http://127.0.0.1:$port/api/v1/status >/dev/null && break; sleep 0.2; done
"$B/c960-coordinator" campaign add --db "$d/c.sqlite" "$@" >/dev/null 2>"$d/add.log"
t0=$(date +%s.%N)
for i in $(seq 1 "$n"); do
    "$B/c960-worker" work --server http://127.0.0.1:$port > "$d/w$i.log" 2>&1 &
    pids+=($!)
done
while :; do
    st=$(curl -s http://127.0.0.1:$port/api/v1/status)
    python3 -c 'import sys,json; c=json.loads(sys.argv[1])["campaigns"][0]; sys.exit(0 if c["valid"]==c["total"] else 1)' "$st" && break
    sleep 2
done
t1=$(date +%s.%N)
# The tallies are reread in the background: wait for a reading that counts every valid value.
for _ in $(seq 30); do
    st=$(curl -s http://127.0.0.1:$port/api/v1/status)
    python3 -c 'import sys,json; s=json.loads(sys.argv[1]); c=s["campaigns"][0]; t=s.get("tallies") or [{}]
sys.exit(0 if sum(n for _, n in t[0].get("values_by_agreeing", [])) >= c["total"] else 1)' "$st" && break
    sleep 2
done
python3 - "$st" "$t0" "$t1" <<'PY'
import sys, json
s = json.loads(sys.argv[1]); i = s["integrity"]; c = s["campaigns"][0]; t = (s.get("tallies") or [{}])[0]
print(f"valid {c['valid']} of {c['total']} in {float(sys.argv[3]) - float(sys.argv[2]):.1f} s")
print(f"campaign's coordinator share {100 * t.get('coordinator_node_share', float('nan')):.2f} %"
      f" (all campaigns {100 * i['coordinator_node_share']:.2f} %)")
print(f"results per valid workunit {i['replicas_per_valid_workunit']:.3f}"
      f" (spare re-verifications {i['spare_replicas']})")
print(f"checks {i['checks_run']}, audits by the coordinator {i['audits_run']}, audit replicas {i['audit_replicas']}")
print(f"values by agreeing workers {t.get('values_by_agreeing')}")
PY
echo "WARN lines in serve's log: $(grep -c 'WARN' "$d/serve.log" || true)"

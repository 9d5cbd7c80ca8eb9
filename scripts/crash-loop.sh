#!/usr/bin/env bash
# Crash loop: a perft campaign served by `c960-coordinator serve` with several `c960-worker work`
# processes; the coordinator is killed with SIGKILL at random moments KILLS times (default 20)
# and restarted on the same port and database each time. Afterwards the store must be
# consistent (SQLite integrity, every valid workunit backed by a quorum of agreeing results from
# distinct workers, vote counts matching the results) and the table exact against
# common/tests/data/chess960_startpos_perft.csv.
#
#   scripts/crash-loop.sh                       # depth 5, positions 0-479, 3 workers, 20 kills
#   KILLS=5 DEPTH=4 POSITIONS=0-959 scripts/crash-loop.sh
#
# Exit status 0 only if every check passes. Needs bash, curl and python3.
set -euo pipefail
KILLS=${KILLS:-20}
DEPTH=${DEPTH:-5}
POSITIONS=${POSITIONS:-0-479}
WORKERS=${WORKERS:-3}
PROFILE=${PROFILE:-debug}
MIN_GAP_MS=${MIN_GAP_MS:-300}
MAX_GAP_MS=${MAX_GAP_MS:-3000}

cd "$(dirname "$0")/.."
ROOT=$PWD
if [ "$PROFILE" = release ]; then
  cargo build -q --release -p c960-coordinator -p c960-worker --bins
else
  cargo build -q -p c960-coordinator -p c960-worker --bins
fi
BIN=$ROOT/target/$PROFILE
DIR=$(mktemp -d)
DB=$DIR/c960.db
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
URL=http://127.0.0.1:$PORT
export C960_ENROL_SECRET
C960_ENROL_SECRET=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
COORD=
WPIDS=()

cleanup() {
  for p in "${WPIDS[@]}"; do kill -INT "$p" 2>/dev/null || true; done
  if [ -n "$COORD" ]; then kill -TERM "$COORD" 2>/dev/null || true; fi
  wait 2>/dev/null || true
}
trap cleanup EXIT

start_coordinator() {
  "$BIN/c960-coordinator" serve --listen "127.0.0.1:$PORT" --db "$DB" --lease-secs 30 \
    --rate-per-address 0 --shared-address-blocks >>"$DIR/coordinator.log" 2>&1 &
  COORD=$!
  for _ in $(seq 1 200); do
    curl -sf "$URL/api/v1/status" >/dev/null 2>&1 && return 0
    sleep 0.05
  done
  echo "coordinator did not come up; see $DIR/coordinator.log" >&2
  exit 1
}

progress() { # prints "valid failed total"
  curl -sf "$URL/api/v1/status" 2>/dev/null |
    python3 -c 'import json,sys; c=json.load(sys.stdin)["campaigns"][0]; print(c["valid"], c["failed"], c["total"])' ||
    echo "? ? ?"
}

"$BIN/c960-coordinator" campaign add --db "$DB" --depth "$DEPTH" --positions "$POSITIONS" >/dev/null 2>&1
start_coordinator
for i in $(seq 1 "$WORKERS"); do
  "$BIN/c960-worker" work --server "$URL" --name "w$i" --state-file "$DIR/w$i.json" \
    --max-backoff-secs 1 >>"$DIR/worker$i.log" 2>&1 &
  WPIDS+=("$!")
done

began=$(date +%s)
kills=0
while [ "$kills" -lt "$KILLS" ]; do
  gap=$(( MIN_GAP_MS + RANDOM % (MAX_GAP_MS - MIN_GAP_MS + 1) ))
  sleep "$(printf '%d.%03d' $((gap / 1000)) $((gap % 1000)))"
  read -r valid failed total < <(progress)
  if [ "$valid" != "?" ] && [ $((valid + failed)) -ge "$total" ]; then
    echo "campaign finished after $kills kills; stopping the loop early"
    break
  fi
  kill -KILL "$COORD"
  wait "$COORD" 2>/dev/null || true
  kills=$((kills + 1))
  echo "kill $kills at $valid/$total valid, after ${gap} ms"
  start_coordinator
done

deadline=$(( $(date +%s) + ${FINISH_TIMEOUT:-1800} ))
while :; do
  read -r valid failed total < <(progress)
  if [ "$valid" != "?" ] && [ $((valid + failed)) -ge "$total" ]; then break; fi
  if [ "$(date +%s)" -gt "$deadline" ]; then echo "FAIL: campaign not finished" >&2; exit 1; fi
  sleep 1
done
elapsed=$(( $(date +%s) - began ))
for p in "${WPIDS[@]}"; do kill -INT "$p" 2>/dev/null || true; done
for p in "${WPIDS[@]}"; do wait "$p" 2>/dev/null || true; done
WPIDS=()
kill -TERM "$COORD"; wait "$COORD" 2>/dev/null || true; COORD=
"$BIN/c960-coordinator" export --db "$DB" --campaign 1 --format csv --out "$DIR/table.csv"

python3 - "$DB" "$DIR/table.csv" "$ROOT/common/tests/data/chess960_startpos_perft.csv" "$DEPTH" "$kills" "$elapsed" <<'PY'
import csv, sqlite3, sys
db, table, ref_path, depth, kills, elapsed = sys.argv[1:]
depth = int(depth)
con = sqlite3.connect(db)
problems = []
if con.execute("PRAGMA integrity_check").fetchone()[0] != "ok":
    problems.append("sqlite integrity_check failed")
ref = {int(r["sp"]): int(r[f"d{depth}"]) for r in csv.DictReader(open(ref_path))}
rows = list(csv.DictReader(open(table)))
wrong = [r["sp"] for r in rows if r["status"] != "valid" or int(r["nodes"] or -1) != ref[int(r["sp"])]]
if wrong:
    problems.append(f"{len(wrong)} rows not valid or not equal to the reference, e.g. {wrong[:5]}")
quorum = con.execute("SELECT quorum FROM campaigns WHERE id = 1").fetchone()[0]
for wu, digest in con.execute("SELECT id, canonical_digest FROM workunits WHERE state = 1"):
    agreeing = con.execute(
        "SELECT COUNT(DISTINCT worker_id) FROM results WHERE workunit_id = ? AND outcome = 1 AND digest = ?",
        (wu, digest)).fetchone()[0]
    if agreeing < quorum:
        problems.append(f"workunit {wu}: {agreeing} agreeing workers < quorum {quorum}")
bad = con.execute("SELECT COUNT(*) FROM results r JOIN workunits w ON w.id = r.workunit_id "
                  "WHERE r.outcome = 1 AND r.digest != w.canonical_digest").fetchone()[0]
if bad:
    problems.append(f"{bad} results graded valid but differing from the canonical digest")
for col, outcome in (("valid", 1), ("lost_votes", 2)):
    a = con.execute(f"SELECT COALESCE(SUM({col}), 0) FROM workers").fetchone()[0]
    b = con.execute("SELECT COUNT(*) FROM results WHERE outcome = ?", (outcome,)).fetchone()[0]
    if a != b:
        problems.append(f"workers.{col} sums to {a} but {b} results have outcome {outcome}")
returned = con.execute("SELECT COUNT(*) FROM results WHERE state = 1").fetchone()[0]
states = dict(con.execute("SELECT state, COUNT(*) FROM results GROUP BY state").fetchall())
print(f"crash loop: {kills} SIGKILLs of the coordinator, {elapsed} s, {len(rows)} workunits at depth {depth}")
print(f"results by state (0 open, 1 returned, 2 expired, 3 abandoned, 4 error): {states}")
print(f"returned results {returned}, workunits valid {sum(r['status'] == 'valid' for r in rows)}, "
      f"total nodes {sum(int(r['nodes'] or 0) for r in rows)}")
if problems:
    print("FAIL:", *problems, sep="\n  ")
    sys.exit(1)
print("OK: store consistent, table exact against the reference")
PY
